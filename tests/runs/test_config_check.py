"""check-config: key mapping, what is known without a stiffness, the interval verdict, CLI edges.

Independent references: window sizes counted by hand from the trainers' definitions, and
stability decided by iterating the heavy-ball recursion with a refresh window directly
(written out here, not taken from the package's monodromy or Jury thresholds).
"""

import glob
import json
import math
import os
from pathlib import Path

import numpy as np
import pytest

from grpo_theory.cli.main import main
from grpo_theory.data import example_log
from grpo_theory.runs import check_config as cc
from grpo_theory.runs.check_config import ConfigCheck, check_config
from grpo_theory.runs.config_map import map_config, read_config
from grpo_theory.theory.reuse import window_sampling
from grpo_theory.validate import ParameterError

VERL = example_log()
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = "/work/shared/data/real_runs"


def _grows(eta_K, mu, k, phi, windows=4000):
    """Iterate v <- mu v - a_f x - a_s x_s, x <- x + v with x_s refreshed to x every k steps;
    True when the deviation grows (unstable), False when it decays."""
    af, as_ = phi * eta_K, (1 - phi) * eta_K
    x, v, xs = 1.0, 0.0, 1.0
    for _ in range(windows):
        xs = x
        for _ in range(k):
            v = mu * v - af * x - as_ * xs
            x = x + v
        if abs(x) + abs(v) > 1e12:
            return True
        if abs(x) + abs(v) < 1e-12:
            return False
    return abs(x) + abs(v) > 1.0


def _write(tmp_path, name, obj):
    p = tmp_path / name
    p.write_text(json.dumps(obj) if name.endswith(".json") else obj)
    return p


# --- mapping ------------------------------------------------------------------------------

def test_verl_launch_script_mapping():
    cfg, kind = read_config(VERL)
    mp = map_config(cfg, kind)
    assert kind == "verl"
    assert mp.value("group_size") == 5 and mp.value("learning_rate") == 1e-6
    # one pass over train_batch_size / ppo_mini_batch_size = 1024 / 256 distinct batches
    assert mp.value("refresh_interval") == 4 and mp.value("reuse") == "fresh"
    assert mp.value("kl") == "k3" and mp.value("kl_coef") == 0.001
    assert mp.value("normalization") == "std" and mp["normalization"]["assumed"]
    assert mp.value("surrogate") == "ratio"


@pytest.mark.parametrize("it,spg,gas", [(1, 4, 4), (3, 8, 4), (2, 4, 1), (4, 2, 2)])
def test_trl_window_matches_window_sampling_and_hand_count(tmp_path, it, spg, gas):
    p = _write(tmp_path, "grpo.json", {"num_generations": 8, "learning_rate": 1e-6,
                                       "num_iterations": it, "steps_per_generation": spg,
                                       "gradient_accumulation_steps": gas})
    par = check_config(p).parameters
    # by hand: one generation feeds spg micro-batches = spg/gas optimizer steps, done `it` times
    assert par["refresh_interval"]["value"] == it * spg // gas
    assert par["reuse"]["value"] == ("batch" if it > 1 else "fresh")
    w = window_sampling(it, spg // gas)
    assert {k: par[k]["value"] for k in w} == w


def test_verl_epochs_reuse_and_cs336(tmp_path):
    y = _write(tmp_path, "verl.yaml",
               "actor_rollout_ref:\n  rollout:\n    n: 8\n  actor:\n    ppo_epochs: 2\n"
               "    ppo_mini_batch_size: 64\n    optim:\n      lr: 2.0e-6\n"
               "algorithm:\n  norm_adv_by_std_in_grpo: false\ndata:\n  train_batch_size: 512\n")
    par = check_config(y).parameters
    assert par["refresh_interval"]["value"] == 2 * 512 // 64 and par["reuse"]["value"] == "batch"
    assert par["window_batches"]["value"] == 512 // 64
    assert par["normalization"]["value"] == "mean" and par["kl"]["value"] == "none"
    cfg, kind = read_config(os.path.join(REPO, "benchmarks/real_runs/garg_math1p5b_offpolicy_e4_"
                                               "tb64_50step_collapse/e4_tb64_ga16.yaml"))
    mp = map_config(cfg, kind)
    # the author: "4 epochs, quarter batch -> 16 opt steps per GRPO step"
    assert kind == "cs336" and mp.value("refresh_interval") == 16 and mp.value("reuse") == "batch"
    assert mp.value("surrogate") == "ratio" and mp.value("learning_rate") == 3e-5


def test_trl_keys_loss_type_clip_and_scale_rewards(tmp_path):
    p = _write(tmp_path, "a.json", {"beta": 0.04, "scale_rewards": "batch", "loss_type": "dr_grpo",
                                    "epsilon": 0.2, "epsilon_high": 0.28})
    par = check_config(p).parameters
    assert par["normalization"]["value"] == "mean" and "batch" in par["normalization"]["note"]
    assert par["loss_type"]["value"] == "dr_grpo" and par["clip"]["value"] == [0.2, 0.28]
    assert par["kl"]["value"] == "k3" and par["kl_coef"]["value"] == 0.04
    for bad in ({"scale_rewards": "batchy"}, {"loss_type": "ppo"}):
        with pytest.raises(ParameterError):
            check_config(_write(tmp_path, "b.json", bad))


def test_verl_kl_in_reward_is_k1_reward_and_all_stale(tmp_path):
    y = _write(tmp_path, "r.yaml", "actor_rollout_ref:\n  rollout:\n    n: 8\n"
               "algorithm:\n  use_kl_in_reward: true\n  norm_adv_by_std_in_grpo: false\n"
               "  kl_ctrl:\n    kl_coef: 0.5\n")
    res = check_config(y)
    assert res.parameters["kl"]["value"] == "k1_reward"
    lo, hi = res.variant["fresh_fraction_range"]
    assert abs(lo) < 1e-9 and abs(hi) < 1e-9            # every advantage vanishes at z*
    assert res.thresholds["refresh_threshold_exists_at_small_eta_K"]
    # with std normalization the model has no KL-in-reward variant: said, not guessed
    y2 = _write(tmp_path, "r2.yaml", "actor_rollout_ref:\n  rollout:\n    n: 8\n"
                "algorithm:\n  use_kl_in_reward: true\n")
    r2 = check_config(y2)
    assert r2.thresholds is None and any("std" in u for u in r2.prediction["unknown"])


# --- without a stiffness -----------------------------------------------------------------

def test_the_optimizer_assumption_names_torch_sgd_or_adam(tmp_path):
    """TRL optim 'sgd' trains with torch SGD (heavy ball, momentum from optim_args): the
    check says so instead of reading it as Adam(W)."""
    sgd = check_config(_write(tmp_path, "s.json", {"num_generations": 8, "optim": "sgd",
                                                   "optim_args": "momentum=0.5"}), p_ref=0.3)
    adam = check_config(_write(tmp_path, "a.json", {"num_generations": 8}), p_ref=0.3)
    assert sgd.assumptions[0].startswith("optimizer torch SGD")
    assert sgd.parameters["momentum"]["value"] == 0.5
    assert adam.assumptions[0].startswith("optimizer Adam(W)")
    assert adam.parameters["momentum"]["value"] == 0.9


def test_trl_default_objective_has_no_refresh_threshold(tmp_path):
    p = _write(tmp_path, "t.json", {"beta": 0.04, "num_generations": 16,
                                    "num_iterations": 2, "steps_per_generation": 4,
                                    "gradient_accumulation_steps": 1})
    res = check_config(p)
    assert res.prediction["stable"] is None and res.variant["surrogate"] == "ratio"
    assert res.thresholds["refresh_threshold_exists_at_small_eta_K"] is False
    mu = res.parameters["momentum"]["value"]
    for fp in res.variant["fixed_points"]:
        # independent: a window of 2000 steps at eta K = 1e-3 does not grow
        assert not _grows(1e-3, mu, 2000, fp["fresh_fraction"], windows=200)
    # beta = 0 (TRL >= 0.18's default): no fixed point, the split of the approach to p = 1
    r0 = check_config(_write(tmp_path, "t0.json", {"num_generations": 16}))
    assert r0.parameters["kl"]["value"] == "none" and "approach" in r0.variant["split_source"]
    assert r0.variant["fresh_fraction_range"][0] > 0.5
    assert r0.thresholds["refresh_threshold_exists_at_small_eta_K"] is False
    # and the all-stale variant (CS336 reinforce with baseline) does have one
    y = _write(tmp_path, "c.yaml", "training:\n  loss_type: reinforce_with_baseline\n"
               "  epochs_per_rollout_batch: 2\n  learning_rate: 1e-5\n")
    r = check_config(y)
    assert r.variant["fresh_fraction_range"] == [0.0, 0.0]
    assert r.thresholds["refresh_threshold_exists_at_small_eta_K"]
    row = r.thresholds["refresh_table"][1]               # eta K = 0.01
    kmax = row["max_stable_refresh_interval"]
    assert not _grows(row["eta_K"], mu, kmax, 0.0) and _grows(row["eta_K"], mu, kmax + 1, 0.0)


def test_exact_threshold_in_eta_K_against_recursion(tmp_path):
    # four fresh mini-batches per rollout (one pass each): the lag of the L2 theory, no reuse
    y = _write(tmp_path, "c.yaml", "training:\n  loss_type: reinforce_with_baseline\n"
               "  rollout_batch_size: 256\n  train_batch_size: 64\n  learning_rate: 1e-5\n")
    res = check_config(y)
    mu, k = res.parameters["momentum"]["value"], res.parameters["refresh_interval"]["value"]
    lo, hi = res.thresholds["exact_eta_K"]
    assert lo == hi and k == 4
    assert not _grows(0.97 * lo, mu, k, 0.0) and _grows(1.03 * lo, mu, k, 0.0)
    assert res.thresholds["published_eta_K"] == pytest.approx((1 - mu) / k)
    # given a stiffness: eta K above the exact threshold is unstable, below stable
    eta = res.parameters["learning_rate"]["value"]
    above = check_config(y, stiffness=1.05 * lo / eta)
    below = check_config(y, stiffness=0.95 * lo / eta)
    assert above.prediction["stable"] is False and above.prediction["stability_margin"] < 0
    assert below.prediction["stable"] is True and 0 < below.prediction["stability_margin"] < 0.06
    assert below.prediction["max_stable_refresh_interval"] >= k
    assert above.prediction["eta_K"] == pytest.approx(1.05 * lo)


def test_interval_verdict(tmp_path, monkeypatch):
    y = _write(tmp_path, "c.yaml", "training:\n  loss_type: reinforce_with_baseline\n"
               "  rollout_batch_size: 256\n  train_batch_size: 64\n  learning_rate: 1e-5\n")
    lo = check_config(y).thresholds["exact_eta_K"][0]
    log = _write(tmp_path, "other.csv", "step,reward\n1,0.1\n")

    def fake(interval):
        def f(path, **kw):
            K = math.sqrt(interval[0] * interval[1]) if math.isfinite(interval[1]) else interval[0]
            return {"value": K, "interval": interval, "tau_steps": 10.0,
                    "tau_interval": [5.0, 20.0], "learning_rate": 1e-5,
                    "learning_rate_source": "test", "initial_reward": None, "source": str(path),
                    "method": "test"}
        return f

    for iv, want in (([0.5 * lo / 1e-5, 0.9 * lo / 1e-5], True),
                     ([1.1 * lo / 1e-5, 2 * lo / 1e-5], False),
                     ([0.5 * lo / 1e-5, 2 * lo / 1e-5], None),
                     ([0.5 * lo / 1e-5, math.inf], None)):
        monkeypatch.setattr(cc, "stiffness_from_log", fake(iv))
        res = check_config(y, from_log=log)
        assert res.prediction["stable"] is want, iv
        if want is None:
            assert any(u.startswith("verdict") for u in res.prediction["unknown"])


def test_from_log_fits_a_different_run_and_reads_its_learning_rate(tmp_path):
    rng = np.random.default_rng(0)
    t = np.arange(1, 301)
    r = 0.8 - 0.6 * np.exp(-t / 30.0) + 0.01 * rng.standard_normal(t.size)
    rows = "\n".join(f"{s},{v:.6f},3e-6" for s, v in zip(t, r))
    log = _write(tmp_path, "earlier.csv", "step,reward,learning_rate\n" + rows + "\n")
    cfg = _write(tmp_path, "c.yaml", "training:\n  loss_type: reinforce_with_baseline\n"
                 "  learning_rate: 1e-5\n")
    res = check_config(cfg, from_log=log)
    K = res.stiffness
    assert K["learning_rate"] == 3e-6 and "learning_rate" in K["learning_rate_source"]
    assert K["interval"][0] < K["value"] < K["interval"][1]
    assert K["tau_steps"] == pytest.approx(30.0, rel=0.15)
    # on-policy, mu = 0.9: eta K (per step) of the earlier run is about 1 - mu over tau
    assert 3e-6 * K["value"] * 30.0 == pytest.approx(1 - 0.9, rel=0.2)
    assert res.prediction["eta_K"] == pytest.approx(1e-5 * K["value"])
    with pytest.raises(ParameterError, match="different run"):
        check_config(log, from_log=log)


# --- real configs ------------------------------------------------------------------------

def _real_configs():
    out = []
    for rj in sorted(glob.glob(os.path.join(REPO, "benchmarks/real_runs/*/run.json"))):
        c = json.load(open(rj))["files"].get("config")
        if c:
            out.append(os.path.join(os.path.dirname(rj), c))
    for name in ("open-r1_Qwen2.5-1.5B_config_demo.yaml", "critique_rl_run_example_qwen25.sh",
                 "rldecisionagent_char_count_train_grpo.sh", "verl_examples_run_qwen2-7b_math.sh"):
        p = os.path.join(SHARED, name)
        if os.path.exists(p):
            out.append(p)
    return out


def test_real_configs_map_and_never_stable_without_stiffness():
    paths = _real_configs()
    assert len(paths) >= 20
    kinds = set()
    for p in paths:
        if "_ppo/" in p:    # verl's PPO twin (GAE + critic): not a GRPO config, refused
            with pytest.raises(ParameterError, match="not a GRPO config"):
                check_config(p)
            continue
        res = check_config(p)
        d = json.loads(res.to_json())
        kinds.add(d["kind"])
        assert d["prediction"]["stable"] is None, p
        assert d["prediction"]["unknown"], p
        for name, entry in d["parameters"].items():
            assert set(entry) >= {"value", "source"}, (p, name)
        assert {"stable", "regime", "stability_margin", "max_stable_refresh_interval", "eta_K",
                "collapse_risk", "unknown"} <= set(d["prediction"])
    assert {"trl", "verl", "cs336"} <= kinds


# --- CLI edges ---------------------------------------------------------------------------

def _cli(capsys, *argv):
    rc = main(["check-config", *map(str, argv)])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize("obj,name", [({"learning_rate": -1e-6, "num_generations": 8},
                                       "learning_rate"),
                                      ({"beta": -0.1}, "beta"),
                                      ({"num_iterations": 0}, "num_iterations"),
                                      ({"steps_per_generation": 6,
                                        "gradient_accumulation_steps": 4}, "steps_per_generation")])
def test_cli_refuses_bad_values(tmp_path, capsys, obj, name):
    rc, out, err = _cli(capsys, _write(tmp_path, "x.json", obj))
    assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1 and name in err


def test_cli_file_errors_say_config_file(tmp_path, capsys):
    rc, _, err = _cli(capsys, tmp_path / "missing.yaml")
    assert rc == 2 and "config file" in err and "log file" not in err
    bad = _write(tmp_path, "bad.yaml", "a: [1, 2\n")
    rc, _, err = _cli(capsys, bad)
    assert rc == 2 and err.count("\n") == 1 and "config file" in err and "log file" not in err
    rc, _, err = _cli(capsys, VERL, "--from-log", VERL)
    assert rc == 2 and "different run" in err
    rc, _, err = _cli(capsys, VERL, "--stiffness", -1)
    assert rc == 2 and "stiffness" in err


def test_cli_json_contract(tmp_path, capsys):
    rc, out, _ = _cli(capsys, VERL, "--json")
    d = json.loads(out)
    assert rc == 0 and d["kind"] == "verl"
    assert d["parameters"]["refresh_interval"] == {**d["parameters"]["refresh_interval"],
                                                   "value": 4}
    pr = d["prediction"]
    assert pr["stable"] is None and pr["eta_K"] is None and pr["collapse_risk"] is None
    assert any("stiffness" in u for u in pr["unknown"])
    rc, out, _ = _cli(capsys, VERL, "--stiffness", 1e5, "--p-ref", 0.3, "--json")
    pr = json.loads(out)["prediction"]
    assert pr["stable"] is True and pr["eta_K"] == pytest.approx(0.1)
    assert pr["max_stable_refresh_interval"] is None and pr["stable_for_every_refresh_interval"]
    rc, out, _ = _cli(capsys, VERL)
    assert rc == 0 and "stable unknown" in out and "exact L2" in out
    assert isinstance(check_config(VERL), ConfigCheck)


def test_collapse_risk_only_with_a_stiffness_and_at_the_same_eta_K(tmp_path):
    from grpo_theory.model import GRPOModel

    p = _write(tmp_path, "t.json", {"beta": 0.5, "num_generations": 8, "learning_rate": 1e-6,
                                    "per_device_train_batch_size": 8, "num_processes": 1,
                                    "num_iterations": 2, "max_steps": 500})
    assert check_config(p, p_ref=0.3).prediction["collapse_risk"] is None
    cr = check_config(p, stiffness=1e5, p_ref=0.3).prediction["collapse_risk"]
    assert 0 <= cr["probability"] <= 1 and cr["steps"] == 500
    from grpo_theory.theory.fixed_points import stable_fixed_point

    fp = stable_fixed_point(GRPOModel(p_ref=0.3, group_size=8, kl="k3", kl_coef=0.5,
                                      adv_eps=1e-4, surrogate="ratio"))
    assert cr["bandit_learning_rate"] * fp.stiffness == pytest.approx(1e-6 * 1e5)
    assert cr["p_star"] == pytest.approx(fp.p)


def test_reuse_criterion_in_the_verdict(tmp_path):
    # the same stable eta K: 4 fresh mini-batches (one pass each) are stable; 4 passes over one
    # batch with the log-prob surrogate (no clip) are at risk; with the clip and no measured
    # self push the reuse criterion is unknown, so the verdict is too
    fresh = _write(tmp_path, "f.yaml", "training:\n  loss_type: reinforce_with_baseline\n"
                   "  rollout_batch_size: 256\n  train_batch_size: 64\n  learning_rate: 1e-5\n")
    lo = check_config(fresh).thresholds["exact_eta_K"][0]
    K = 0.5 * lo / 1e-5
    ok = check_config(fresh, stiffness=K)
    assert ok.prediction["stable"] is True and ok.prediction["reuse"]["verdict"] == "stable"
    reuse = _write(tmp_path, "r.yaml", "training:\n  loss_type: reinforce_with_baseline\n"
                   "  epochs_per_rollout_batch: 4\n  learning_rate: 1e-5\n")
    r = check_config(reuse, stiffness=K)
    assert r.prediction["reuse"]["passes"] == 4 and r.prediction["reuse"]["verdict"] == "at risk"
    assert r.prediction["stable"] is None and r.prediction["risk"].startswith("at risk")
    assert "reuse:" in str(r) and "no clip" in str(r)
    clipped = _write(tmp_path, "c.yaml", "training:\n  loss_type: grpo_clip\n"
                     "  epochs_per_rollout_batch: 4\n  learning_rate: 1e-5\n")
    c = check_config(clipped, stiffness=K)
    assert c.prediction["reuse"]["verdict"] is None and c.prediction["stable"] is None
    assert any("reuse criterion is unknown" in u for u in c.prediction["unknown"])


def test_from_log_refuses_a_curve_fit_declines(tmp_path):
    # a run sitting at its plateau (flat, noisy): no relaxation to measure K from, so no K --
    # and no verdict built on one (item 21.7: no stiffness from a log fit declined)
    y = _write(tmp_path, "c.yaml", "training:\n  loss_type: grpo_clip\n  learning_rate: 1e-5\n")
    rng = np.random.default_rng(0)
    flat = _write(tmp_path, "flat.csv", "step,reward,learning_rate\n" + "".join(
        f"{s},{0.5 + 0.05 * rng.standard_normal():.4f},1e-5\n" for s in range(1, 120)))
    r = check_config(y, from_log=flat)
    # neither route measures K (no relaxation; no per-step policy observable, no config): K is
    # unknown with both routes' reasons, and the verdict is not built on it
    assert r.stiffness is None and r.prediction["stable"] is None
    assert r.prediction["eta_K"] is None
    why = next(u for u in r.prediction["unknown"] if u.startswith("stiffness K: not measured"))
    assert "fit accepts" in why and "the fluctuations:" in why
    assert "stiffness K: not measured" in str(r)


def test_trl_sgd_momentum_from_optim_args():
    mp = map_config({"optim": "sgd", "optim_args": "momentum=0.5", "learning_rate": 0.01}, "trl")
    assert mp.value("momentum") == 0.5 and not mp["momentum"]["assumed"]
    assert map_config({"optim": "sgd"}, "trl").value("momentum") == 0.0
    assert map_config({"learning_rate": 0.01}, "trl").value("momentum") == 0.9   # AdamW's beta1


#: an on-policy TRL SGD run at beta 0.5 (the earlier run of the --from-log tests)
SGD_BASE = {"num_generations": 8, "beta": 0.5, "optim": "sgd", "learning_rate": 0.005,
            "scale_rewards": "group", "loss_type": "dapo"}


def _earlier_sgd_run(tmp_path, steps, tau, seed):
    """An earlier run's log (a rise 0.2 -> 0.8 with time scale ``tau`` in noise 0.01, lr 0.005
    logged) and its GRPOConfig (:data:`SGD_BASE`)."""
    rng = np.random.default_rng(seed)
    t = np.arange(1, steps + 1)
    r = 0.8 - 0.6 * np.exp(-t / tau) + 0.01 * rng.standard_normal(t.size)
    log = _write(tmp_path, "earlier.csv", "step,reward,learning_rate\n" + "\n".join(
        f"{s},{v:.6f},0.005" for s, v in zip(t, r)) + "\n")
    return log, _write(tmp_path, "earlier.json", SGD_BASE)


def test_from_log_carries_the_kernel_scale_and_recomputes_the_bandit_factor(tmp_path):
    # K = (kernel scale of model and task) x (bandit stiffness at the variant's fixed point):
    # measured on an on-policy run at beta 0.5 from p_ref 0.2, carried over to beta 2 at p_ref 0.1
    log, earlier = _earlier_sgd_run(tmp_path, 300, 30.0, 0)
    base = SGD_BASE
    same = check_config(_write(tmp_path, "same.json", base), from_log=log, from_log_config=earlier)
    assert same.stiffness["bandit_factor"]["ratio"] == pytest.approx(1.0)
    other = check_config(_write(tmp_path, "other.json", {**base, "beta": 2.0}), from_log=log,
                         from_log_config=earlier, p_ref=0.1)
    from grpo_theory.model import GRPOModel
    from grpo_theory.theory.fixed_points import stable_fixed_point

    p_old = same.stiffness["initial_reward"]
    kw = dict(group_size=8, normalization="std", kl="k3",
              **{k: same.parameters[k]["value"] for k in ("prompts", "adv_eps", "surrogate")})
    want = (stable_fixed_point(GRPOModel(p_ref=0.1, kl_coef=2.0, **kw)).stiffness
            / stable_fixed_point(GRPOModel(p_ref=p_old, kl_coef=0.5, **kw)).stiffness)
    assert other.stiffness["bandit_factor"]["ratio"] == pytest.approx(want, rel=1e-9)
    assert other.stiffness["value"] == pytest.approx(same.stiffness["value"] * want, rel=1e-9)
    assert abs(want - 1) > 0.1


def test_from_log_short_prefix_bounds_K_above(tmp_path):
    # 30 steps of a slow rise (tau 80): the start of the relaxation excludes a fast one, so K has
    # a finite upper end (tau's profile-likelihood interval) and the on-policy config far below
    # its threshold is called stable; the Wald interval tau +- 1.96 se reached tau <= 0 here
    # (K unbounded, verdict unknown: issue 22's straddling prefixes)
    log, earlier = _earlier_sgd_run(tmp_path, 30, 80.0, 4)
    res = check_config(_write(tmp_path, "same.json", SGD_BASE), from_log=log,
                       from_log_config=earlier)
    K = res.stiffness
    lo, hi = K["tau_interval"]
    assert hi == math.inf and 20.0 < lo < 80.0
    assert K["tau_steps"] - 1.96 * K["tau_stderr"] <= 0          # what the Wald interval gave
    assert K["interval"][0] == 0.0 and math.isfinite(K["interval"][1])
    # on-policy SGD: eta K per step = 1 / tau (L3 time scale), the upper end from tau's lower end
    assert 0.005 * K["interval"][1] == pytest.approx(1.0 / lo, rel=0.05)
    assert res.prediction["stable"] is True


def test_a_fresh_fraction_above_one_is_explained(tmp_path):
    # phi = K_f/K > 1 (k3 KL in the loss: the stale part is negative) reads as a "fraction" above
    # one: the terminal says what it means
    res = check_config(_write(tmp_path, "c.json", SGD_BASE))
    lo, hi = res.variant["fresh_fraction_range"]
    assert hi > 1
    assert "(> 1: the stale part K_s = K - K_f is negative" in str(res)


def _lab_prefix_dir(tmp_path, run, fraction=0.2):
    """The first ``fraction`` of a lab run's TRL log with its saved GRPOConfig (what a
    practitioner has a fifth of the way into the run)."""
    from grpo_theory.runs.logs.trl import write_trl_prefix

    lab = Path(__file__).resolve().parents[2] / "benchmarks" / "lab_runs" / run
    return lab / "config.json", Path(write_trl_prefix(lab, fraction, tmp_path / run))


@pytest.mark.parametrize("run,stable", [("lab_unstable_refresh_s1", False),
                                        ("lab_stable_momentum_s0", True)])
def test_from_log_of_a_plateau_start_run_reads_the_fluctuations(tmp_path, run, stable):
    # a warm-started TRL run at its plateau: its reward (one value per generation) shows no
    # relaxation, so K comes from TRL's per-step entropy; the verdict on the run's own config
    # from its first fifth is the one it was built to have (labels from the construction)
    cfg, prefix = _lab_prefix_dir(tmp_path, run)
    r = check_config(cfg, from_log=prefix)
    assert r.stiffness["route"] == "fluctuations" and r.stiffness["observable"] == "entropy"
    assert r.stiffness["reward_curve_reasons"]            # why the reward route declined
    assert r.prediction["stable"] is stable
    assert "fluctuations of entropy" in str(r)
    d = r.to_dict()
    assert d["stiffness"]["candidates"] and "_earlier" not in d["stiffness"]


def test_from_log_declines_a_clipped_reuse_window(tmp_path):
    # 16 passes over one batch with TRL's clip 0.2, clipping in the log: the linear model does not
    # describe a clipped step, so no K; the reuse criterion still answers from the clipped fraction
    cfg, prefix = _lab_prefix_dir(tmp_path, "lab_reuse_clipped_s0")
    r = check_config(cfg, from_log=prefix)
    assert r.stiffness is None
    assert any("the clip is active" in u for u in r.prediction["unknown"])
    assert r.prediction["reuse"]["verdict"] == "at risk" and r.prediction["stable"] is None


def test_from_log_fluctuations_decline_a_log_counted_in_generations(tmp_path):
    # a verl log has one value per training iteration (a window of k optimizer steps): the per-step
    # model does not describe it, so no K from its fluctuations, and the reason says why
    cfg = _write(tmp_path, "verl.yaml",
                 "actor_rollout_ref:\n  rollout:\n    n: 8\n  actor:\n    ppo_epochs: 2\n"
                 "    ppo_mini_batch_size: 64\n    optim:\n      lr: 2.0e-6\n"
                 "data:\n  train_batch_size: 512\n")
    rng = np.random.default_rng(1)
    flat = _write(tmp_path, "flat.csv", "step,reward,entropy,learning_rate\n" + "".join(
        f"{s},{0.5 + 0.05 * rng.standard_normal():.4f},{0.6 + 0.01 * rng.standard_normal():.5f},"
        "2e-6\n" for s in range(1, 121)))
    r = check_config(cfg, from_log=flat, from_log_config=cfg)
    assert r.stiffness is None
    why = next(u for u in r.prediction["unknown"] if u.startswith("stiffness K: not measured"))
    assert "counts its steps in generations" in why


@pytest.mark.parametrize("text, key, rule", [
    # TRL 1.16 GRPOConfig.__post_init__: "GRPO requires at least 2 generations per prompt to
    # calculate the advantages" (check-config mapped G = 1 before)
    ("num_generations: 1\n", "num_generations", "at least 2 generations per prompt"),
    # ... and "generation_batch_size (6) must be divisible by num_generations (8)": 6 prompts'
    # worth of samples at G = 8 was rounded to 1 prompt per step, silently
    ("num_generations: 8\nper_device_train_batch_size: 6\nnum_processes: 1\n", "num_processes",
     "6 x 1 x 1 = 6, is divisible by num_generations = 8"),
    ("num_generations: 8\nper_device_train_batch_size: 4\ngeneration_batch_size: 12\n",
     "generation_batch_size", "divisible by num_generations = 8"),
])
def test_values_the_engine_refuses_are_refused_with_its_rule(tmp_path, capsys, text, key, rule):
    path = tmp_path / "grpo.yaml"
    path.write_text(text)
    assert main(["check-config", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.split(": error: ")[1].startswith(key + " must be")
    assert rule in err


def test_an_epsilon_of_one_or_more_is_read_as_no_lower_clip(tmp_path):
    """epsilon 1.5 was mapped to a clip [1.5, 1.5] without a word, though 1 - 1.5 < 0 bounds no
    ratio and the model's lower clip lies in [0, 1).  TRL runs it (it checks no range, and the
    lab turns the clip off with epsilon 1e3), so it is read -- and said -- as no lower clip."""
    path = tmp_path / "grpo.yaml"
    path.write_text("num_generations: 8\nper_device_train_batch_size: 8\nepsilon: 1.5\n")
    clip = map_config(*read_config(path))["clip"]
    assert clip["value"] == [1.5, 1.5]
    assert clip["note"].startswith("epsilon = 1.5 >= 1: 1 - epsilon <= 0 never clips the ratio "
                                   "from below")
    assert "[0, 1)" in clip["note"] and clip["source"] == "epsilon; epsilon >= 1: no lower clip"


def test_a_divisible_generation_batch_is_accepted(tmp_path):
    """The rule's other side: 4 prompts x G = 8 = 32 per generation (per-device batch 32)."""
    path = tmp_path / "grpo.yaml"
    path.write_text("num_generations: 8\nper_device_train_batch_size: 32\n")
    assert map_config(*read_config(path))["prompts"]["value"] == 4


def test_an_unknown_process_count_is_the_fewest_trl_accepts(tmp_path):
    """Per-device batch 6 at G = 8 with no process count in the file: one process would be
    refused by TRL; the fewest it accepts is 4 (6 x 4 = 24 = 3 groups of 8), so 3 prompts per
    step -- before, 6/8 was rounded to 1 prompt with one process assumed."""
    path = tmp_path / "grpo.yaml"
    path.write_text("num_generations: 8\nper_device_train_batch_size: 6\n")
    prompts = map_config(*read_config(path))["prompts"]
    assert prompts["value"] == 3 and prompts["assumed"]
    assert "processes (4, assumed: the fewest with which TRL accepts" in prompts["source"]


def test_keys_under_nested_sections_are_read_or_listed_as_unread(tmp_path):
    """A recipe with `smoke:` / `curriculum:` sections: a GRPOConfig key there is read by its
    last part where nothing above sets it, and was silently dropped where the top level (or an
    earlier section) sets it too (issue 29): those are now listed as not read."""
    path = tmp_path / "recipe.yaml"
    path.write_text("num_generations: 8\nlearning_rate: 1.0e-6\nper_device_train_batch_size: 8\n"
                    "smoke:\n  learning_rate: 3.0e-6\n  num_iterations: 2\n  my_flag: 3\n"
                    "curriculum:\n  beta: 0.04\n  num_iterations: 4\n  stages: 3\n")
    warnings = []
    mp = map_config(*read_config(path, warnings=warnings))
    assert mp["learning_rate"] == {"value": 1e-6, "source": "learning_rate", "assumed": False}
    assert mp["kl_coef"]["source"] == "curriculum.beta"
    assert "smoke.num_iterations" in mp["refresh_interval"]["source"]
    unread = next(w for w in warnings if w.startswith("not read (the same GRPOConfig key"))
    assert unread.endswith(": smoke.learning_rate (read: learning_rate), "
                           "curriculum.num_iterations (read: smoke.num_iterations)")
    # every nested key is accounted for: read (a mapping source) or named as not read
    sources = " ".join(str(e["source"]) for e in mp.values())
    named = " ".join(warnings)
    for key in ("smoke.num_iterations", "curriculum.beta"):
        assert key in sources and f"{key} (read:" not in named
    for key in ("smoke.learning_rate", "smoke.my_flag", "curriculum.num_iterations",
                "curriculum.stages"):
        assert key in named


# --- issue 29 item 7, newcomer pass: KL coefficients that are not read are called out -------

# modelled on scripts/train_1.5b_grpo.slurm of Limpidjunewind/tinyzero-experiments (a launch of
# TinyZero's verl fork): `algorithm.kl_ctrl.kl_coef=0.001` without use_kl_in_reward was read as
# "kl none" with no word about the key
_TINYZERO = ("export N_GPUS=1\npython3 -m verl.trainer.main_ppo \\\n"
             "data.train_batch_size=64 \\\nactor_rollout_ref.actor.optim.lr=1e-6 \\\n"
             "actor_rollout_ref.actor.ppo_mini_batch_size=16 \\\n"
             "actor_rollout_ref.rollout.n=8 \\\nalgorithm.adv_estimator=grpo \\\n"
             "algorithm.kl_ctrl.kl_coef=0.001 \\\ntrainer.n_gpus_per_node=$N_GPUS{extra}\n")


def test_verl_kl_ctrl_coef_without_its_switch_is_named_next_to_the_kl_line(tmp_path):
    res = check_config(_write(tmp_path, "grpo.slurm", _TINYZERO.format(extra="")))
    kl = res.parameters["kl"]
    assert kl["value"] == "none" and res.parameters["kl_coef"]["value"] == 0.0
    assert "algorithm.kl_ctrl.kl_coef = 0.001" in kl["warning"]
    assert "no effect without algorithm.use_kl_in_reward=True" in kl["warning"]
    assert "TinyZero" in kl["warning"]            # the older verl that applied it: said
    lines = str(res).splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.lstrip().startswith("kl "))
    assert "warning: algorithm.kl_ctrl.kl_coef = 0.001" in lines[at + 1]
    # in-reward KL on: the key is the coefficient read, nothing to warn about
    on = map_config(*read_config(_write(tmp_path, "on.slurm", _TINYZERO.format(
        extra=" \\\nalgorithm.use_kl_in_reward=True"))))
    assert on["kl"]["value"] == "k1_reward" and "warning" not in on["kl"]
    assert on["kl_coef"]["value"] == 0.001
    assert on["kl_coef"]["source"] == "algorithm.kl_ctrl.kl_coef"
    assert "in-reward KL coefficient" in on["kl_coef"]["note"]
    # KL in the loss: the in-reward coefficient has no effect, said so
    loss = map_config(*read_config(_write(tmp_path, "loss.slurm", _TINYZERO.format(
        extra=" \\\nactor_rollout_ref.actor.use_kl_loss=True"))))
    assert loss["kl"]["value"] == "k3" and "has no effect" in loss["kl"]["warning"]
    # kl_loss_coef without use_kl_loss: named too
    coef = map_config(*read_config(_write(tmp_path, "coef.slurm", _TINYZERO.format(
        extra=" \\\nactor_rollout_ref.actor.kl_loss_coef=0.05").replace(
        "algorithm.kl_ctrl.kl_coef=0.001 \\\n", ""))))
    assert "actor_rollout_ref.actor.kl_loss_coef = 0.05 has no effect" in coef["kl"]["warning"]


# modelled on configs/rho_sweep.yaml of Sunshine535/nips-grpo-dynamics: `training.kl_coef: 0.05`
# sat in a 37-key "not read" list while the variant was built with beta = 0 [default]
@pytest.mark.parametrize("key", ["kl_coef", "kl_coeff", "kl_beta", "init_kl_coef"])
def test_a_kl_coefficient_under_another_name_is_called_out(tmp_path, key):
    y = _write(tmp_path, "sweep.yaml", "sweep:\n  seeds: [42, 43]\ntraining:\n"
               f"  num_generations: 2\n  learning_rate: 1.0e-4\n  {key}: 0.05\n"
               "  clip_range: 0.2\n")
    mp = map_config(*read_config(y))
    kl = mp["kl"]
    assert kl["value"] == "none" and mp["kl_coef"]["value"] == 0.0
    assert f"training.{key} = 0.05" in kl["warning"] and "beta = 0 [default]" in kl["warning"]
    if key == "kl_coef":                    # printed under the kl line (one check is enough)
        lines = str(check_config(y)).splitlines()
        at = next(i for i, ln in enumerate(lines) if ln.lstrip().startswith("kl "))
        assert f"warning: training.{key} = 0.05" in lines[at + 1]
    # beta set, no other KL-like key: no warning
    ok = map_config(*read_config(_write(tmp_path, "ok.yaml", "training:\n  num_generations: 2\n"
                                        "  beta: 0.05\n  kl_penalty: low_var_kl\n")))
    assert ok["kl"]["value"] == "k3" and "warning" not in ok["kl"]


def _reward_log(values, entropy=None):
    from grpo_theory.runs.logs.base import TrainingLog

    s = np.arange(1.0, len(values) + 1)
    m = {"reward": (s, np.asarray(values, dtype=float))}
    if entropy is not None:
        m["entropy"] = (s, np.asarray(entropy, dtype=float))
    return TrainingLog(metrics=m, default_metric="reward")


def test_the_fluctuation_route_checks_its_plateau_on_the_window():
    # the route models fluctuations about a fixed point: a window whose reward falls (a trend
    # beyond fit's 4 sd, or a collapse below half of the high) is declined; a stationary one
    # passes.  Synthetic windows of 30 steps, batch noise sd 0.03 (the 4-sd bar of a 30-point
    # gain is then about 0.07; the falls below are 0.2 and 0.45, the stationary run has none)
    rng = np.random.default_rng(3)
    noise = 0.03 * rng.standard_normal(30)
    assert cc.off_plateau(_reward_log(0.5 + noise), "reward", 1, 30) is None
    drift = cc.off_plateau(_reward_log(np.linspace(0.8, 0.6, 30) + noise), "reward", 1, 30)
    assert drift and "reward falls by" in drift and "not at a plateau" in drift
    thrown = np.r_[[0.9, 0.92, 0.9], np.full(27, 0.45)] + noise
    why = cc.off_plateau(_reward_log(thrown), "reward", 1, 30)
    assert "collapses over steps 1-30" in why
    # only the steps read count: the fall after step 12 is outside a window of steps 1-12
    late = np.r_[np.full(12, 0.5), np.linspace(0.5, 0.2, 18)] + noise
    assert cc.off_plateau(_reward_log(late), "reward", 1, 12) is None
    assert cc.off_plateau(_reward_log(late), "reward", 1, 30)


def test_from_log_declines_a_run_thrown_off_its_plateau(tmp_path):
    # lab plateau_overshoot: a 0.898 plateau pushed to eta K ~ 7 (> 2) and thrown off it within
    # three steps; its entropy's fluctuations read eta K ~ 0.03 (a trend reads as a slow mode),
    # which would call it stable.  The window is not at a plateau: K unknown, no verdict
    cfg, prefix = _lab_prefix_dir(tmp_path, "lab_plateau_overshoot_s0")
    r = check_config(cfg, from_log=prefix)
    assert r.stiffness is None and r.prediction["stable"] is None
    why = next(u for u in r.prediction["unknown"] if u.startswith("stiffness K: not measured"))
    assert "not at a plateau" in why
