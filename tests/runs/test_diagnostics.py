"""Detectors on the real log and validated on simulated runs: failure injected vs clean (hit / false-alarm rates)."""

import json

import numpy as np
import pytest

from grpo_theory.data import example_log
from grpo_theory.runs import diagnostics as D
from grpo_theory.cli.main import main
from grpo_theory.runs.logs import TrainingLog, from_simulation
from grpo_theory.simulation.engine import simulate

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
    clean = _rate(D.advantage_degeneracy, simulate(**base))
    hit = _rate(D.advantage_degeneracy, simulate(**base, difficulty_spread=2.0))
    assert clean == 0.0 and hit == 1.0


def test_policy_concentration_on_simulation():
    base = dict(steps=600, runs=RUNS, group_size=8, prompts=32, learning_rate=0.2, kl="k3",
                kl_coef=0.1, seed=1)
    clean = _rate(D.policy_concentration, simulate(**base))
    hit = _rate(D.policy_concentration, simulate(**{**base, "kl": "none", "kl_coef": 0.0}))
    assert clean == 0.0 and hit == 1.0


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
    assert np.mean(flags["clean"]) == 0.0 and np.mean(flags["hacked"]) == 1.0


def test_missing_metrics_never_crash_or_nan():
    log = TrainingLog(metrics={"reward": (np.arange(30.0), np.linspace(0.1, 0.9, 30))})
    out = D.diagnose(log)
    assert json.loads(json.dumps(out, allow_nan=False))
    d = out["diagnostics"]
    assert d["advantage_degeneracy"]["flag"] is False
    assert "not in log" in d["advantage_degeneracy"]["evidence"]
    assert "not in log" in d["policy_concentration"]["evidence"]
    assert "not in log" in d["reward_hacking"]["evidence"]


def test_diagnose_cli_real_log(capsys):
    assert main(["diagnose", str(VERL), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    d = out["diagnostics"]
    assert set(d) == {"advantage_degeneracy", "policy_concentration", "reward_hacking",
                      "dynamical_instability"}
    for v in d.values():
        assert set(v) >= {"flag", "score", "evidence"}
    assert out["group_size"] == 5  # from the launch script's rollout.n
    assert d["advantage_degeneracy"]["score"] is None  # no zero-std fraction in this verl log
    # training reward +0.16 vs held-out +0.03 between steps 10 and 1120: decoupled
    assert d["reward_hacking"]["flag"] is True
    assert d["dynamical_instability"]["flag"] is False
    assert main(["diagnose", str(VERL), "--group-size", "1"]) == 2
