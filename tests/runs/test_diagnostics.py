"""Detectors on the real log and validated on simulated runs: failure injected vs clean (hit / false-alarm rates)."""

import json

import numpy as np
import pytest

from grpo_theory.data import example_log
from grpo_theory.runs import diagnostics as D
from grpo_theory.cli.main import main
from grpo_theory.runs.logs import TrainingLog, from_simulation
from grpo_theory.model import GRPOModel
from support import simulate



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
    # at its fixed point (std, k3 beta 2 in the loss, p_ref 0.1, the ratio surrogate: fresh
    # fraction 0.31) at eta K = 0.45 the exact largest stable refresh interval is 6
    # (discrete.max_stable_refresh_interval): k = 4 is stable, k = 12 has a window eigenvalue
    # below -1 and the deviation flips sign every window (the alternation, at lag 12)
    from grpo_theory.theory.discrete import max_stable_refresh_interval
    from grpo_theory.theory.fixed_points import stable_fixed_point

    kw = dict(group_size=8, prompts=32, kl="k3", kl_coef=2.0, p_ref=0.1, surrogate="ratio",
              clip_low=0.99, clip_high=10.0, adv_eps=1e-4)
    fp = stable_fixed_point(GRPOModel(**kw))
    assert max_stable_refresh_interval(0.45, 0.0, 1.0, fresh_fraction=fp.fresh_fraction) == 6
    lr = 0.45 / fp.stiffness
    clean = _rate(D.dynamical_instability, simulate(steps=400, runs=RUNS, learning_rate=lr,
                                                    refresh_interval=4, seed=1, **kw))
    res = simulate(steps=400, runs=RUNS, learning_rate=lr, refresh_interval=12, seed=1, **kw)
    hit = _rate(D.dynamical_instability, res)
    assert clean == 0.0 and hit >= 0.9
    d = D.dynamical_instability(from_simulation(res, 0))
    assert d["alternation"]["reward"]["lag"] == 12


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
    assert "not in log" in d["divergence"]["evidence"]


def test_divergence_says_too_short_not_absent():
    # KL and gradient norm logged at 10 steps: present, too few for the growth scan -- the
    # evidence names them and their count instead of calling them absent
    steps = np.arange(1.0, 11.0)
    log = TrainingLog(metrics={"reward": (steps, np.linspace(0.2, 0.3, 10)),
                               "kl": (steps, np.linspace(0.01, 0.02, 10)),
                               "grad_norm": (steps, np.full(10, 0.5))})
    d = D.divergence(log)
    assert d["flag"] is None and "not in log" not in d["evidence"]
    assert "kl: 10 finite values" in d["evidence"] and "grad_norm: 10 finite values" in d["evidence"]
    assert f">= {D.GROWTH_MIN_POINTS}" in d["evidence"]


def test_diagnose_cli_real_log(capsys):
    assert main(["diagnose", str(VERL), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    d = out["diagnostics"]
    assert set(d) == {"advantage_degeneracy", "policy_concentration", "reward_hacking",
                      "dynamical_instability", "entropy_explosion", "divergence", "collapse"}
    for v in d.values():
        assert set(v) >= {"flag", "score", "missing", "evidence", "first_step", "knob"}
    assert out["group_size"] == 5  # from the launch script's rollout.n
    assert d["advantage_degeneracy"]["score"] is None  # no zero-std fraction in this verl log
    # training and held-out reward rise together (correlation 0.68): not hacking
    assert d["reward_hacking"]["flag"] is False
    assert d["dynamical_instability"]["flag"] is False
    # KL saturates at ~0.1 and entropy only falls over 1,119 steps: drift, not divergence
    assert d["divergence"]["flag"] is False
    assert main(["diagnose", str(VERL), "--group-size", "1"]) == 2


# ----------------------------------------------------------------------------------
# divergence: runaway growth of KL / entropy / length before the reward falls
# ----------------------------------------------------------------------------------

def _channels_log(n, seed, *, kl, entropy, length, reward=None, extra=None):
    rng = np.random.default_rng(seed)
    steps = np.arange(1.0, n + 1)
    noisy = lambda x, rel: x * (1 + rel * rng.standard_normal(n))  # noqa: E731
    m = {"reward": (steps, reward if reward is not None else
                    np.clip(0.3 + 0.4 * (1 - np.exp(-steps / 20)) + 0.03 * rng.standard_normal(n), 0, 1)),
         "kl": (steps, noisy(kl, 0.1)), "entropy": (steps, noisy(entropy, 0.05)),
         "response_length/mean": (steps, noisy(length, 0.05))}
    m.update(extra or {})
    return TrainingLog(metrics=m)


@pytest.mark.parametrize("n", [40, 150, 600])
def test_divergence_no_false_alarm_on_drift(n):
    # healthy shapes: KL relaxing to a plateau, KL growing linearly or quadratically (drift),
    # entropy falling, length creeping up 30 %: none gains an e-fold above its earlier range
    t = np.arange(1.0, n + 1) / n
    shapes = {"saturating": 0.1 * (1 - np.exp(-5 * t)), "linear": 0.5 * t, "quadratic": 0.5 * t * t}
    for seed in range(10):
        for kl in shapes.values():
            log = _channels_log(n, seed, kl=kl + 1e-4, entropy=0.8 * np.exp(-2 * t) + 0.05,
                                length=400 * (1 + 0.3 * t))
            d = D.divergence(log)
            assert d["flag"] is False, (seed, d["evidence"])
            assert D.dynamical_instability(log)["flag"] is False


def test_divergence_before_the_reward_falls():
    # KL, entropy and length run away from 70 % of the run while the reward is still flat
    n = 100
    t = np.arange(1.0, n + 1)
    blow = np.exp(np.clip(t - 70, 0, None) / 5.0)          # an e-fold every 5 steps after 70
    log = _channels_log(n, 0, kl=0.05 * (1 - np.exp(-t / 20)) * blow, entropy=0.3 * blow ** 0.5,
                        length=500 * blow ** 0.3, reward=np.full(n, 0.6))
    d = D.divergence(log)
    assert d["flag"] is True
    assert 70 <= d["first_step"] <= 85
    assert "learning rate" in d["knob"]
    di = D.dynamical_instability(log)
    assert di["flag"] is True and di["diverging"] is True and di["collapsed"] is False


def test_divergence_length_cap_and_blow_up():
    n = 80
    t = np.arange(1.0, n + 1)
    trunc = np.clip(0.05 + 0.9 / (1 + np.exp(-(t - 50) / 3)), 0, 1)
    flat = dict(kl=np.full(n, 0.05), entropy=np.full(n, 0.4), length=np.full(n, 900.0))
    d = D.divergence(_channels_log(n, 1, **flat, extra={
        "response_length/clip_ratio": (t, trunc)}))
    assert d["flag"] is True and 45 <= d["truncation_step"] <= 60
    # the same fraction staying low: no flag
    low = D.divergence(_channels_log(n, 1, **flat, extra={
        "response_length/clip_ratio": (t, np.full(n, 0.1))}))
    assert low["flag"] is False
    # gradient norm growing to overflow, then NaN: blow-up; a lone NaN after stable values: not
    g = np.concatenate([np.geomspace(0.3, 1e12, n - 1), [np.nan]])
    assert D.divergence(_channels_log(n, 2, **flat, extra={"grad_norm": (t, g)}))["flag"] is True
    g = np.concatenate([np.full(n - 1, 0.3), [np.nan]])
    assert D.divergence(_channels_log(n, 2, **flat, extra={"grad_norm": (t, g)}))["flag"] is False


def test_growth_scan_thresholds_from_the_mechanism():
    # t^d since 3 windows gains at most 1.5^d: cubic is flagged by an e-fold factor, quadratic not
    n = 200
    t = np.arange(1.0, n + 1)
    quad = D.growth_scan(t, t ** 2)
    cubic = D.growth_scan(t, t ** 3)
    assert quad["ratio"] == pytest.approx(1.5 ** 2, rel=0.05) and quad["step"] is None
    assert cubic["ratio"] == pytest.approx(1.5 ** 3, rel=0.05) and cubic["step"] is not None
    assert D.growth_scan(t[:5], t[:5]) is None


# ----------------------------------------------------------------------------------
# reward hacking against the binomial error of a finite evaluation set
# ----------------------------------------------------------------------------------

def test_eval_set_size_from_the_lattice():
    rng = np.random.default_rng(3)
    assert D.eval_set_size(rng.binomial(1319, 0.7, 20) / 1319) == 1319
    assert D.eval_set_size(rng.binomial(500 * 4, 0.4, 12) / 2000) in (2000, 1000, 500)
    # values printed with three decimals: the grid of the printout, not the set
    assert D.eval_set_size(np.round(rng.binomial(1319, 0.7, 20) / 1319, 3)) is None
    assert D.eval_set_size([0.5, 0.5, 0.5]) is None


@pytest.mark.parametrize("n_eval", [64, 1319, 1000])
def test_reward_hacking_against_the_binomial_error(n_eval):
    # training reward rises 0.3 -> 0.8 (400 steps, batch noise 0.03); held-out accuracy on n_eval
    # problems every 20 steps either follows (at 0.8x the gain: a harder held-out set) or stays
    # flat.  Flat is flagged at both set sizes, following never is.
    steps = np.arange(1.0, 401)
    p = 0.3 + 0.5 * (1 - np.exp(-steps / 80))
    ev = np.arange(20.0, 401, 20)
    p_ev = 0.3 + 0.5 * (1 - np.exp(-ev / 80))
    flags = {"follow": [], "flat": []}
    for seed in range(20):
        rng = np.random.default_rng(seed)
        train = p + 0.03 * rng.standard_normal(steps.size)
        for kind, q in (("follow", 0.25 + 0.8 * (p_ev - 0.3)), ("flat", np.full(ev.size, 0.25))):
            held = rng.binomial(n_eval, q) / n_eval
            log = TrainingLog(metrics={"reward": (steps, train), "eval_reward": (ev, held)})
            d = D.reward_hacking(log)
            if n_eval == 1000:   # k/1000 cannot be told from a printout rounded to 3 decimals
                assert d["eval_set_size"] is None and "lag-1" in d["evidence"]
            else:
                assert n_eval % d["eval_set_size"] == 0
            flags[kind].append(d["flag"])
    assert np.mean(flags["follow"]) == 0.0
    assert np.mean(flags["flat"]) >= 0.9


def test_reward_hacking_na_when_the_reward_is_itself_held_out():
    steps = np.arange(0.0, 50, 5)
    log = TrainingLog(metrics={"eval/reward_total": (steps, np.linspace(0.2, 0.5, 10)),
                               "eval/reward_answer": (steps, np.linspace(0.2, 0.5, 10))})
    d = D.reward_hacking(log, "eval/reward_total")
    assert d["flag"] is None and "itself a held-out" in d["evidence"]


def test_alternation_marks_a_window_eigenvalue_at_minus_one():
    # one reward per refresh window: a deviation that flips sign every window and grows
    # (eigenvalue -1.15), against white noise and a stable flip-flop (eigenvalue -0.3)
    rng = np.random.default_rng(4)
    n = 20
    steps = np.arange(1.0, n + 1)
    dev = 0.01 * (-1.15) ** np.arange(n)
    flip = 0.3 + np.clip(dev, -0.2, 0.2) + 0.01 * rng.standard_normal(n)
    a = D.alternation(steps, flip)
    assert a["alternating"] is True and a["lag"] == 1 and a["eigenvalue"] > 0.9
    for seed in range(30):
        noise = 0.3 + 0.05 * np.random.default_rng(seed).standard_normal(60)
        assert D.alternation(np.arange(60.0), noise)["alternating"] is False
    x = np.zeros(200)
    e = 0.05 * np.random.default_rng(9).standard_normal(200)
    for t in range(1, 200):
        x[t] = -0.3 * x[t - 1] + e[t]
    stable = D.alternation(np.arange(200.0), 0.3 + x)
    assert stable["p_value"] < 1e-3 and stable["alternating"] is False   # significant, |lambda| < 1/2
    assert stable["eigenvalue"] < 0.5
    # a trend (V < 1): no flip carried over, |lambda| = 0 (1 - 1/V would be negative)
    trend = D.alternation(np.arange(60.0), np.linspace(0.2, 0.8, 60)
                          + 0.01 * np.random.default_rng(2).standard_normal(60))
    assert trend["ratio"] < 1 and trend["eigenvalue"] == 0.0
    log = TrainingLog(metrics={"reward": (steps, flip)})
    d = D.dynamical_instability(log)
    assert d["flag"] is True and d["alternating"] is True


def test_entropy_falling_from_its_first_value_is_not_an_explosion():
    # an entropy that drops from ln 2 within the first steps (start median far below the first
    # value) then keeps falling: no explosion, no divergence
    h = np.concatenate([[0.693, 0.142, 0.085], np.geomspace(0.056, 0.003, 117)])
    log = _entropy_log(h)
    assert D.entropy_explosion(log)["flag"] is False
    assert D.divergence(log)["flag"] is False


def test_collapse_seen_in_the_divergence_before_the_reward_has_finished_falling():
    n = 100
    t = np.arange(1.0, n + 1)
    blow = np.exp(np.clip(t - 70, 0, None) / 5.0)
    falling = np.where(t < 80, 0.6, 0.6 - 0.01 * (t - 80))          # a late, slow fall of 0.2
    log = _channels_log(n, 0, kl=0.05 * (1 - np.exp(-t / 20)) * blow, entropy=0.3 * blow ** 0.5,
                        length=500 * blow ** 0.3, reward=falling)
    c = D.collapse(log)
    assert c["flag"] is True and c["early"] is True and c["collapsed"] is False
    flat = _channels_log(n, 0, kl=0.05 * (1 - np.exp(-t / 20)) * blow, entropy=0.3 * blow ** 0.5,
                         length=500 * blow ** 0.3, reward=np.full(n, 0.6))
    assert D.collapse(flat)["flag"] is False and D.divergence(flat)["flag"] is True


def test_entropy_re_expanding_after_concentrating():
    # falls 3x, then climbs 4x above its minimum and ends above its start: an explosion; the
    # same bump coming back down below the start is bounded: not one
    down = np.geomspace(0.2, 0.066, 60)
    up = np.geomspace(0.066, 0.26, 12)
    assert D.entropy_explosion(_entropy_log(np.concatenate([down, up])))["flag"] is True
    back = np.concatenate([down, up, np.geomspace(0.26, 0.07, 30)])
    assert D.entropy_explosion(_entropy_log(back))["flag"] is False


def test_instability_from_a_divergence_when_the_reward_is_too_short():
    # a few rewards (one per generation) but a per-step gradient norm that overflows: unstable
    t = np.arange(1.0, 41)
    log = TrainingLog(metrics={"reward": (t[:4], np.array([0.3, 0.2, 0.35, 0.1])),
                               "grad_norm": (t, np.concatenate([np.full(30, 0.3),
                                                                np.geomspace(1, 1e12, 9),
                                                                [np.nan]]))})
    d = D.dynamical_instability(log)
    assert d["flag"] is True and d["diverging"] is True
    assert D.dynamical_instability(TrainingLog(metrics={"reward": (t[:4], np.ones(4) * 0.3)}))["flag"] is None
    # whether the reward collapsed is not seen in 4 rewards: collapse abstains, never "no"
    c = D.collapse(log)
    assert c["flag"] is None and "too few logged rewards" in c["evidence"]


def test_diagnose_takes_one_fitted_family_as_fit():
    # the book passes fit_curve's oscillator: it stands in for the summary's own oscillator fit
    from grpo_theory.runs.curves import fit_curve
    from grpo_theory.runs.logs import read_log

    log = read_log(VERL)
    s, v = log.series(log.reward_metric())
    osc = fit_curve(s, v, "oscillator")
    d = D.diagnose(log, fit=osc)
    assert d.curve is not None and d.curve["gain"]["gain"] > 0
    assert d.curve["damping_ratio"] == pytest.approx(osc.params["zeta"])


def test_diagnose_reports_the_summary_it_is_given():
    from grpo_theory.runs.fitting import summarize_curve
    from grpo_theory.runs.logs import read_log

    log = read_log(example_log())
    s, v = log.series(log.reward_metric(None))
    summary = summarize_curve(s, v, metric=log.reward_metric(None))
    assert D.diagnose(log, fit=summary).to_dict()["curve"]["gain"] == summary.gain


def test_instability_knob_names_the_runs_own_refresh_window():
    """The knob against an instability names the window the run's config sets (the exact
    threshold falls with k), not only num_iterations (a steps_per_generation run was told to
    set num_iterations = 1, which it already had)."""
    from grpo_theory.runs.logs import TrainingLog

    stale = TrainingLog(metrics={}, config={"num_generations": 8, "steps_per_generation": 12,
                                            "gradient_accumulation_steps": 1})
    assert "k = 12" in D._instability_knob(stale)
    on_policy = TrainingLog(metrics={}, config={"num_generations": 8, "steps_per_generation": 1,
                                                "num_iterations": 1})
    assert "momentum" in D._instability_knob(on_policy)
    assert "steps_per_generation" in D._instability_knob(TrainingLog(metrics={}))


@pytest.mark.parametrize("n", [3, 4, 9])
def test_advantage_degeneracy_abstains_below_ten_values_like_the_other_detectors(n):
    # issue 29 item 14: on a public trainer_state.json with 4 records it flagged "last 10 % of
    # steps 0.600" (and `watch` fired at the third record) while every other detector abstained
    t = np.arange(1.0, n + 1) * 5
    log = TrainingLog(metrics={"frac_reward_zero_std": (t, np.full(n, 0.6)),
                               "reward": (t, np.linspace(0.2, 0.3, n))}, default_metric="reward")
    d = D.advantage_degeneracy(log)
    assert d["flag"] is None and d["score"] is None
    assert f"fewer than 10 logged values of frac_reward_zero_std ({n})" in d["evidence"]
    t10 = np.arange(1.0, 11) * 5                         # from 10 values on, the check runs
    log10 = TrainingLog(metrics={"frac_reward_zero_std": (t10, np.full(10, 0.6))})
    assert D.advantage_degeneracy(log10)["flag"] is True


def test_steps_are_integers_in_json_and_scores_say_what_they_measure():
    """Issue 29: JSON said "first_step": 7.0, and an unflagged reward-hacking check printed
    "[ok] reward_hacking (score 30)" -- a bare 30 reads as an alarm."""
    lost = D.policy_concentration(_entropy_log(np.geomspace(1.0, 0.06, 60)))
    assert type(lost["first_step"]) is int
    assert f'"first_step": {lost["first_step"]},' in json.dumps(lost)
    # training and held-out reward both rise (held-out by half as much): not hacking, but the
    # training gain is many of its standard deviations above the held-out one
    rng = np.random.default_rng(3)
    steps = np.arange(300.0)
    train = np.linspace(0.1, 0.9, 300) + 0.01 * rng.standard_normal(300)
    ev_steps = steps[::10]
    held = np.linspace(0.1, 0.5, 30) + 0.01 * rng.standard_normal(30)
    log = TrainingLog(metrics={"reward": (steps, train), "eval_reward": (ev_steps, held)})
    diag = D.diagnose(log, group_size=8)
    rh = diag.diagnostics["reward_hacking"]
    assert rh["flag"] is False and rh["score"] > 10
    line = next(ln for ln in str(diag).splitlines() if "reward_hacking" in ln)
    assert line.startswith(f"  [ok  ] reward_hacking (training z - held-out z = {rh['score']:.3g})")


# ----------------------------------------------------------------------------------
# issue 32: collapses that start high, and collapses the divergence announces
# ----------------------------------------------------------------------------------

def _reward_log(y):
    return TrainingLog(metrics={"reward": (np.arange(1.0, len(y) + 1), np.asarray(y, float))})


def test_a_collapse_from_a_high_start_that_partly_recovers_is_a_collapse():
    """A warm-started run at 0.9 that falls to 0.1 within 20 steps and recovers to 0.45: no
    rise in the log, and the end (0.45) is not below half the start, so neither the
    rise-then-fall nor the floor test saw it; the fall from the highest level to the trough
    does."""
    rng = np.random.default_rng(32)
    t = np.arange(120.0)
    base = np.where(t < 20, 0.9, np.where(t < 40, 0.9 - 0.04 * (t - 20),
                                          0.1 + 0.35 * (1 - np.exp(-(t - 40) / 15))))
    y = np.clip(base + 0.05 * rng.standard_normal(t.size), 0, 1)
    c = D.collapse(_reward_log(y))
    assert c["flag"] is True and c["collapsed"] is True, c["evidence"]
    assert "high start" in c["evidence"]
    assert 25 <= c["first_step"] <= 40


def test_no_collapse_from_a_high_start_on_dips_and_plateaus():
    """No false alarm from the new test: warm-started runs that hold their level (200 seeded
    noisy plateaus at 0.6-0.95), that relax down by a quarter of their level, or that dip to
    0.55 and win it back (the lab's warm_dip shape)."""
    rng = np.random.default_rng(33)
    t = np.arange(100.0)
    for i in range(200):                # the test itself (the full detector fits curves: slow)
        level = rng.uniform(0.6, 0.95)
        y = np.clip(level + 0.05 * rng.standard_normal(t.size), 0, 1)
        noise = float(np.std(np.diff(y)) / np.sqrt(2))
        assert D._fall_from_high(t, y, noise, 0.0)["flag"] is False, i
    down = 0.9 - 0.22 * (1 - np.exp(-t / 20)) + 0.03 * rng.standard_normal(t.size)
    assert D.collapse(_reward_log(down))["flag"] is False
    dip = 0.86 - 0.31 * np.exp(-t / 6) * (t > 0) + 0.12 * (1 - np.exp(-t / 15))
    dip = np.clip(dip + 0.03 * rng.standard_normal(t.size), 0, 1)
    assert D.collapse(_reward_log(dip))["flag"] is False
    # a dense reward has no known floor: the high-start test is not made
    di = D.dynamical_instability(_reward_log(3 * down - 5.0))
    assert di["collapsed_from_high"] is False and "fall from the highest level" not in di["evidence"]


def test_a_small_fall_the_divergence_announces_is_a_collapse():
    """The public run of issue 32 (exploration-in-grpo's GRPO arm): its reward rises 0.09 and
    falls 0.11 with noise sd 0.032 (3 and 3.6 sd of one point) while KL and response length
    run away.  The fall across the divergence's onset, mean against mean, is 4 standard errors
    or more: flagged.  Seven seeded runs of that shape: at least 5 flagged, some of them below
    the one-point bar.  The same rewards without the runaway are not flagged (the bar there
    stays 4 sd of one point); nor is a diverging run whose reward holds."""
    n = 72
    t = np.arange(1.0, n + 1)
    blow = np.exp(np.clip(t - 60, 0, None) / 2.0)
    div = dict(kl=0.05 * (1 - np.exp(-t / 20)) * blow, entropy=0.3 + 0 * t, length=500 * blow ** 0.5)
    flagged, below_bar = 0, 0
    for seed in range(5, 12):
        rng = np.random.default_rng(seed)
        reward = np.clip(0.72 + 0.09 * (1 - np.exp(-t / 20)) - np.where(t > 63, 0.012 * (t - 63), 0)
                         + 0.032 * rng.standard_normal(n), 0, 1)
        log = _channels_log(n, 0, reward=reward, **div)
        di = D.dynamical_instability(log)
        c = D.collapse(log, instability=di)
        flagged += c["flag"]
        below_bar += c["flag"] and di["drop_from_peak"] < 4 * di["noise_sd"] and c["announced"]
        if di["drop_from_peak"] < 4 * di["noise_sd"]:
            quiet = _channels_log(n, 0, reward=reward, kl=0.05 * (1 - np.exp(-t / 20)),
                                  entropy=0.3 + 0 * t, length=500 + 0 * t)
            assert D.divergence(quiet)["flag"] is False and D.collapse(quiet)["flag"] is False
    assert flagged >= 5 and below_bar >= 2, (flagged, below_bar)
    held = _channels_log(n, 0, reward=np.clip(0.8 + 0.032 * np.random.default_rng(1).standard_normal(n),
                                              0, 1), **div)
    assert D.divergence(held)["flag"] is True and D.collapse(held)["flag"] is False


def test_the_issue_32_public_run_is_flagged():
    """The real log (benchmarks/real_runs, verl's metrics.jsonl): flagged as announced, from the
    divergence's onset at step 64."""
    from pathlib import Path

    from grpo_theory.runs.logs import read_log

    p = (Path(__file__).resolve().parents[2] / "benchmarks" / "real_runs"
         / "exploration_in_grpo_qwen3_1p7b_math_grpo_h200")
    info = json.loads((p / "run.json").read_text())
    log = read_log(p / info["files"]["log"], "verl-jsonl")
    c = D.collapse(log, info["reward"]["key"])
    assert c["flag"] is True and c["announced"] is True
