"""Detectors on the real log and validated on simulated runs: failure injected vs clean (hit / false-alarm rates)."""

import json

import numpy as np
import pytest

from grpo_theory.data import example_log
from grpo_theory.runs import diagnostics as D
from grpo_theory.cli.main import main
from grpo_theory.runs.logs import TrainingLog, from_simulation
from grpo_theory.model import DEFAULTS, GRPOModel
from grpo_theory.simulation import simulate as simulate_model


def simulate(**kw):
    """The simulator with the model's fields and the simulation's arguments as keywords, from
    on-policy SGD at learning rate 0.1, TRL's advantage epsilon 1e-4 and no KL."""
    base = dict(learning_rate=0.1, optimizer="sgd", momentum=0.0, adv_eps=1e-4, kl="none",
                kl_coef=0.0, refresh_interval=1)
    fields = {k: kw.pop(k) for k in list(kw) if k in DEFAULTS}
    if fields.get("optimizer") == "momentum":
        fields["optimizer"] = "sgd"
    return simulate_model(GRPOModel(**{**base, **fields}), **kw)

VERL = example_log()
RUNS = 10


def _rate(detector, result, **kw):
    flags = [detector(from_simulation(result, i), **kw)["flag"] for i in range(result.runs)]
    return float(np.mean(flags))


def test_degenerate_probability_definition():
    # P(all G equal) for Bernoulli(p), counted directly from the 2^G outcomes
    import itertools
    p, G = 0.3, 4
    direct = sum(np.prod([p if o else 1 - p for o in out])
                 for out in itertools.product([0, 1], repeat=G) if len(set(out)) == 1)
    assert D.degenerate_group_probability(p, G) == pytest.approx(direct, rel=1e-12)


def test_advantage_degeneracy_on_simulation():
    base = dict(steps=300, runs=RUNS, group_size=8, prompts=32, learning_rate=0.2, kl="k3",
                kl_coef=0.05, seed=1)
    # the excess over p^G + (1-p)^G alone (dead-group criterion switched off)
    clean = _rate(D.advantage_degeneracy, simulate(**base), dead_fraction=1.0)
    hit = _rate(D.advantage_degeneracy, simulate(**base, difficulty_spread=2.0), dead_fraction=1.0)
    assert clean == 0.0 and hit == 1.0


def _entropy_log(h):
    steps = np.arange(float(h.size))
    return TrainingLog(metrics={"reward": (steps, np.linspace(0.2, 0.8, h.size)),
                                "entropy": (steps, h)})


def test_policy_concentration_counts_loss_from_the_start():
    # 94 % of the entropy lost, mostly before the plateau: flagged; 20 % lost: not
    lost = D.policy_concentration(_entropy_log(np.geomspace(1.0, 0.06, 60)))
    kept = D.policy_concentration(_entropy_log(np.linspace(1.0, 0.8, 60)))
    assert lost["flag"] is True and lost["score"] == pytest.approx(1 - 0.06, abs=0.02)
    assert lost["first_step"] == pytest.approx(np.log(np.e) / np.log(1 / 0.06) * 59, abs=2)
    assert kept["flag"] is False
    up = D.entropy_explosion(_entropy_log(np.geomspace(1.0, 10.0, 60)))
    assert up["flag"] is True and D.entropy_explosion(_entropy_log(np.ones(60)))["flag"] is False


def test_collapse_after_early_peak_is_found():
    # rise to 0.44 in the first third, then a fall to 0: the run ends below its start
    steps = np.arange(90.0)
    r = np.concatenate([np.linspace(0.05, 0.44, 20), np.linspace(0.44, 0.0, 70)])
    r = r + 0.01 * np.random.default_rng(0).standard_normal(90)
    d = D.dynamical_instability(TrainingLog(metrics={"reward": (steps, r)}))
    assert d["flag"] is True and d["collapsed"] is True
    assert 20 <= d["first_step"] <= 60


def test_na_on_sft_and_one_point_logs():
    sft = TrainingLog(metrics={"loss": (np.arange(50.0), np.linspace(2, 1, 50))})
    one = TrainingLog(metrics={"reward": (np.array([1.0]), np.array([0.3]))})
    for log in (sft, one):
        out = D.diagnose(log).to_dict()
        for name, v in out["diagnostics"].items():
            assert v["flag"] is None and v["missing"], name
            assert v["evidence"].startswith("n/a")


def test_dynamical_instability_on_simulation():
    base = dict(steps=400, runs=RUNS, group_size=8, prompts=32, optimizer="momentum",
                momentum=0.9, kl="k3", kl_coef=0.5, p_ref=0.5, seed=1)
    clean = _rate(D.dynamical_instability, simulate(**base, learning_rate=0.05))
    hit = _rate(D.dynamical_instability, simulate(**base, learning_rate=1.5))
    assert clean == 0.0 and hit >= 0.9


def test_reward_hacking_injected_heldout():
    # held-out reward: binomial accuracy on 500 held-out prompts every 10 steps.  Clean: the
    # held-out success probability is the simulated one; hacked: it stays at the initial value
    # while the (proxy) training reward rises.
    r = simulate(steps=300, runs=RUNS, group_size=8, prompts=32, learning_rate=0.2, kl="k3",
                 kl_coef=0.05, seed=2)
    rng = np.random.default_rng(0)
    flags = {"clean": [], "hacked": []}
    for i in range(RUNS):
        p = r.reward[i]
        for kind in flags:
            q = p if kind == "clean" else np.full_like(p, p[0])
            held = rng.binomial(500, q) / 500.0
            log = from_simulation(r, i)
            steps = np.arange(0, p.size, 10, dtype=float)
            log.metrics["eval_reward"] = (steps, held[::10])
            flags[kind].append(D.reward_hacking(log)["flag"])
    assert np.mean(flags["clean"]) == 0.0 and np.mean(flags["hacked"]) >= 0.8


def test_missing_metrics_never_crash_or_nan():
    log = TrainingLog(metrics={"reward": (np.arange(30.0), np.linspace(0.1, 0.9, 30))})
    out = D.diagnose(log).to_dict()
    assert json.loads(json.dumps(out, allow_nan=False))
    d = out["diagnostics"]
    assert d["advantage_degeneracy"]["flag"] is None
    assert "not in log" in d["advantage_degeneracy"]["evidence"]
    assert "not in log" in d["policy_concentration"]["evidence"]
    assert "not in log" in d["reward_hacking"]["evidence"]


def test_diagnose_cli_real_log(capsys):
    assert main(["diagnose", str(VERL), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    d = out["diagnostics"]
    assert set(d) == {"advantage_degeneracy", "policy_concentration", "reward_hacking",
                      "dynamical_instability", "entropy_explosion"}
    for v in d.values():
        assert set(v) >= {"flag", "score", "missing", "evidence", "first_step", "knob"}
    assert out["group_size"] == 5  # from the launch script's rollout.n
    assert d["advantage_degeneracy"]["score"] is None  # no zero-std fraction in this verl log
    # training and held-out reward rise together (correlation 0.68): not hacking
    assert d["reward_hacking"]["flag"] is False
    assert d["dynamical_instability"]["flag"] is False
    assert main(["diagnose", str(VERL), "--group-size", "1"]) == 2
