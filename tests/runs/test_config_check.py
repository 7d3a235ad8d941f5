"""check-config: TRL / verl mapping, stiffness from a log, CLI."""

import json
import math

import numpy as np

import pytest

from grpo_theory.data import example_log
from grpo_theory.cli.main import main
from grpo_theory.runs.check_config import check_config, map_config, read_config

VERL = example_log()


def cc(*args, **kw):
    return check_config(*args, **kw).to_dict()


def _next_run(tmp_path):
    """A new run's config (same task and settings as the logged verl run, a different file)."""
    y = tmp_path / "next_run.yaml"
    y.write_text("actor_rollout_ref:\n  rollout:\n    n: 5\n  actor:\n    ppo_mini_batch_size: 256\n"
                 "    use_kl_loss: true\n    kl_loss_coef: 0.001\n    kl_loss_type: low_var_kl\n"
                 "    optim:\n      lr: 1.0e-6\ndata:\n  train_batch_size: 1024\n")
    return y


def test_verl_launch_script_mapping():
    cfg, kind = read_config(VERL)
    mp = map_config(cfg, kind)
    assert kind == "verl"
    assert mp.value("group_size") == 5
    assert mp.value("learning_rate") == 1e-6
    assert mp.value("refresh_interval") == 1024 / 256
    assert mp.value("kl_coef") == 0.001 and mp.value("kl_estimator") == "k3"
    assert mp.value("normalization") == "std" and mp["normalization"]["assumed"]
    assert mp.value("momentum") == 0.9 and mp["momentum"]["assumed"]


def test_trl_json_and_yaml(tmp_path):
    p = tmp_path / "grpo.json"
    p.write_text(json.dumps({"num_generations": 16, "learning_rate": 3e-6, "beta": 0.04,
                             "scale_rewards": False, "steps_per_generation": 8,
                             "num_iterations": 2, "gradient_accumulation_steps": 4,
                             "adam_beta1": 0.8}))
    res = cc(p)
    par = res["parameters"]
    assert res["kind"] == "trl"
    assert par["group_size"]["value"] == 16 and par["learning_rate"]["value"] == 3e-6
    assert par["refresh_interval"]["value"] == 8 * 2 / 4
    assert par["normalization"]["value"] == "mean" and par["momentum"]["value"] == 0.8
    assert par["kl_estimator"]["value"] == "k3" and res["prediction"]["stable"] is None
    assert par["reuse"]["value"] == "batch"
    assert {u["name"] for u in res["prediction"]["unknown"]} >= {"stable", "regime", "collapse_risk"}
    y = tmp_path / "verl.yaml"
    y.write_text("actor_rollout_ref:\n  rollout:\n    n: 8\n  actor:\n    ppo_epochs: 2\n"
                 "    ppo_mini_batch_size: 64\n    optim:\n      lr: 2.0e-6\n"
                 "algorithm:\n  norm_adv_by_std_in_grpo: false\ndata:\n  train_batch_size: 512\n")
    par = cc(y)["parameters"]
    assert par["group_size"]["value"] == 8 and par["refresh_interval"]["value"] == 2 * 512 / 64
    assert par["normalization"]["value"] == "mean" and par["kl_coef"]["value"] == 0.0


def test_stiffness_prediction_l3():
    # given K: eta K k_ref vs 1 - mu decides stability at L3 (published first-order threshold)
    res = cc(VERL, stiffness=1e4)  # eta K = 0.01, k = 4: 0.04 < 0.1 -> stable
    l3 = res["prediction"]["l3"]
    assert l3["stable"] is True
    assert l3["max_stable_refresh_interval"] == pytest.approx((1 - 0.9) / (1e-6 * 1e4), rel=1e-9)
    assert l3["max_stable_learning_rate"] == pytest.approx((1 - 0.9) / (1e4 * 4), rel=1e-9)
    assert cc(VERL, stiffness=1e5)["prediction"]["l3"]["stable"] is False


def test_cli_check_config_from_log(capsys, tmp_path):
    assert main(["check-config", str(VERL), "--from-log", str(VERL)]) == 2  # same run: refused
    assert "different run" in capsys.readouterr().err
    assert main(["check-config", str(_next_run(tmp_path)), "--from-log", str(VERL), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    K = out["stiffness"]
    # a new run with the earlier run's settings: stable at every K within 2 stderr
    assert out["prediction"]["stable"] is True and out["prediction"]["stable_range"] == [True, True]
    assert out["stiffness"]["stderr"] > 0
    assert K["naive"] == pytest.approx(1 / (K["tau_steps"] * 1e-6), rel=1e-9)
    assert any("stiffness" in a for a in out["assumptions"])
    assert main(["check-config", str(VERL), "--stiffness", "-1"]) == 2


def test_bad_config_names_file_and_line(tmp_path, capsys):
    p = tmp_path / "bad.json"
    p.write_text('{\n "num_generations": 8,\n "beta" 0.1\n}')
    assert main(["check-config", str(p)]) == 2
    err = capsys.readouterr().err
    assert "bad.json line 3" in err and len(err.strip().splitlines()) == 1


# --- expected fluctuation -------------------------------------------------------------------

def _trl(tmp_path, name="grpo.json", **over):
    cfg = {"num_generations": 8, "learning_rate": 1e-2, "beta": 0.0, "adam_beta1": 0.5,
           "per_device_train_batch_size": 32, "gradient_accumulation_steps": 2, "world_size": 2,
           "steps_per_generation": 2}
    cfg.update(over)
    p = tmp_path / name
    p.write_text(json.dumps(cfg))
    return p


def test_fluctuation_equals_core_chain(tmp_path):
    # hand-built TRL config: B = 32 x 2 x 2 / 8 = 16 prompts, refresh 2*1/2 = 1
    from grpo_theory.theory.drift import update_variance
    from grpo_theory.theory.noise import reward_fluctuation, stationary_variance

    res = cc(_trl(tmp_path), stiffness=3.0, reward_level=0.6)
    fl = res["expected_fluctuation"]
    assert res["parameters"]["prompts_per_step"]["value"] == 16
    s2 = update_variance(0.6, normalization="std", kl="none", group_size=8, adv_eps=1e-4, prompts=16)
    vz = stationary_variance(1e-2, 0.5, 3.0, s2, refresh_interval=1)
    assert fl["noise_variance"] == pytest.approx(s2, rel=1e-12)
    assert fl["var_z"] == pytest.approx(vz, rel=1e-12)
    assert fl["reward_std"] == pytest.approx(math.sqrt(reward_fluctuation(0.6, vz)), rel=1e-12)
    # independent of the core's closed form: on-policy heavy-ball AR(2) variance by iteration
    a, mu, eta = 1e-2 * 3.0, 0.5, 1e-2
    A = np.array([[1 + mu - a, -mu], [1, 0]])
    P = np.zeros((2, 2))
    for _ in range(20000):
        P = A @ P @ A.T + np.diag([eta ** 2 * s2, 0])
    assert fl["var_z"] == pytest.approx(P[0, 0], rel=1e-6)
    assert any("bandit" in a for a in res["assumptions"])
    assert any("Adam beta1" in a for a in res["assumptions"])


def test_fluctuation_scales_with_prompts_and_group_size(tmp_path):
    base = cc(_trl(tmp_path), stiffness=3.0, reward_level=0.3)["expected_fluctuation"]
    # 4x the prompts per step (per-device batch x4 at the same G): Var z / 4 exactly
    b4 = cc(_trl(tmp_path, "b.json", per_device_train_batch_size=128), stiffness=3.0,
                      reward_level=0.3)["expected_fluctuation"]
    assert b4["prompts_per_step"] == 4 * base["prompts_per_step"]
    assert b4["var_z"] == pytest.approx(base["var_z"] / 4, rel=1e-10)
    # larger G at the same number of prompts: Var z follows sigma^2 exactly (linear in it), and
    # sigma^2 ~ 1/G once G min(p, 1-p) >> 1 (G = 32 -> 128 at p = 0.3); faster at small G
    from grpo_theory.theory.drift import update_variance

    g = {}
    for G in (8, 32, 128):
        r = cc(_trl(tmp_path, f"g{G}.json", num_generations=G,
                              per_device_train_batch_size=16 * G), stiffness=3.0, reward_level=0.3)
        g[G] = r["expected_fluctuation"]
        assert g[G]["prompts_per_step"] == 64
        assert g[G]["noise_variance"] == pytest.approx(
            update_variance(0.3, group_size=G, kl="none", adv_eps=1e-4, prompts=64), rel=1e-12)
    assert 3.6 < g[32]["var_z"] / g[128]["var_z"] < 4.8
    assert g[8]["var_z"] / g[32]["var_z"] > g[32]["var_z"] / g[128]["var_z"]
    # reward sd ~ 1/sqrt(G) at large G
    assert g[32]["reward_std"] / g[128]["reward_std"] == pytest.approx(
        (g[32]["var_z"] / g[128]["var_z"]) ** 0.5, rel=1e-9)


def test_fluctuation_needs_and_fixed_point(tmp_path, capsys):
    # no stiffness, no level, no KL: nothing computed, the needs are listed, JSON has no NaN
    res = cc(_trl(tmp_path))
    fl = res["expected_fluctuation"]
    assert fl["reward_std"] is None and fl["needed"]
    assert any("reward level" in n for n in fl["needed"]) and any("stiffness" in n for n in fl["needed"])
    json.dumps(res, allow_nan=False)
    # with a KL and p_ref the model's own fixed point (and its stiffness) supply the level
    from grpo_theory.theory.fixed_points import stable_fixed_point

    res = cc(_trl(tmp_path, "kl.json", beta=0.5), p_ref=0.3)
    fl = res["expected_fluctuation"]
    fp = stable_fixed_point(p_ref=0.3, kl_coef=0.5, normalization="std", kl="k3", group_size=8,
                            adv_eps=1e-4)
    assert fl["reward_level"] == pytest.approx(fp.p) and fl["stiffness"] == pytest.approx(fp.stiffness)
    assert fl["reward_std"] > 0
    json.dumps(res, allow_nan=False)
    assert main(["check-config", str(_trl(tmp_path)), "--reward-level", "1.5"]) == 2


def test_fluctuation_real_log_predicted_vs_observed(capsys, tmp_path):
    nxt = str(_next_run(tmp_path))
    assert main(["check-config", nxt, "--from-log", str(VERL), "--json"]) == 0
    text = capsys.readouterr().out
    assert "NaN" not in text and "Infinity" not in text
    out = json.loads(text)
    fl = out["expected_fluctuation"]
    assert fl["prompts_per_step"] == 256 and fl["group_size"] == 5 and fl["kl"] == "k3"
    obs = fl["observed"]
    assert 0.001 < obs["std"] < 0.05 and obs["plateau_start_step"] >= 500
    # predicted and observed side by side, the ratio is what it is (not tuned)
    assert fl["ratio_observed_over_predicted"] == pytest.approx(obs["std"] / fl["reward_std"])
    assert fl["measurement_floor_std"] == pytest.approx(
        math.sqrt(fl["reward_level"] * (1 - fl["reward_level"]) / (1024 * 5)))
    assert main(["check-config", nxt, "--from-log", str(VERL)]) == 0
    assert "expected reward fluctuation" in capsys.readouterr().out


def test_refuses_negative_lr_and_beta_and_maps_batch_scaling(tmp_path, capsys):
    for bad in ({"learning_rate": -1e-6}, {"beta": -0.1}, {"scale_rewards": "weird"}):
        p = tmp_path / "bad.json"
        p.write_text(json.dumps(bad))
        assert main(["check-config", str(p)]) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "log file" not in err
    p = tmp_path / "batch.json"
    p.write_text(json.dumps({"scale_rewards": "batch"}))
    par = cc(p)["parameters"]
    assert par["normalization"]["value"] == "mean" and "batch" in par["normalization"]["source"]
