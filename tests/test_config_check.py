"""check-config: TRL / verl mapping, stiffness from a log, CLI."""

import json
from pathlib import Path

import pytest

from grpo_theory.cli import main
from grpo_theory.config_check import check_config, map_config, read_config

VERL = Path(__file__).parent / "data" / "verl_grpo_deepseek7b_gsm8k_trimmed.log"


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
    res = check_config(p)
    par = res["parameters"]
    assert res["kind"] == "trl"
    assert par["group_size"]["value"] == 16 and par["learning_rate"]["value"] == 3e-6
    assert par["refresh_interval"]["value"] == 8 * 2 / 4
    assert par["normalization"]["value"] == "mean" and par["momentum"]["value"] == 0.8
    assert par["kl_estimator"]["value"] == "k3" and res["prediction"] is None
    y = tmp_path / "verl.yaml"
    y.write_text("actor_rollout_ref:\n  rollout:\n    n: 8\n  actor:\n    ppo_epochs: 2\n"
                 "    ppo_mini_batch_size: 64\n    optim:\n      lr: 2.0e-6\n"
                 "algorithm:\n  norm_adv_by_std_in_grpo: false\ndata:\n  train_batch_size: 512\n")
    par = check_config(y)["parameters"]
    assert par["group_size"]["value"] == 8 and par["refresh_interval"]["value"] == 2 * 512 / 64
    assert par["normalization"]["value"] == "mean" and par["kl_coef"]["value"] == 0.0


def test_stiffness_prediction_l3():
    # given K: eta K k_ref vs 1 - mu decides stability at L3 (published first-order threshold)
    res = check_config(VERL, stiffness=1e4)  # eta K = 0.01, k = 4: 0.04 < 0.1 -> stable
    l3 = res["prediction"]["l3"]
    assert l3["stable"] is True
    assert l3["max_stable_refresh_interval"] == pytest.approx((1 - 0.9) / (1e-6 * 1e4), rel=1e-9)
    assert l3["max_stable_learning_rate"] == pytest.approx((1 - 0.9) / (1e4 * 4), rel=1e-9)
    assert check_config(VERL, stiffness=1e5)["prediction"]["l3"]["stable"] is False


def test_cli_check_config_from_log(capsys):
    assert main(["check-config", str(VERL), "--from-log", str(VERL), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    K = out["stiffness"]
    # the earlier run's own configuration must come out stable (it was, in the log)
    assert out["prediction"]["l3"]["stable"] is True
    assert K["naive"] == pytest.approx(1 / (K["tau_steps"] * 1e-6), rel=1e-9)
    assert any("stiffness" in a for a in out["assumptions"])
    assert main(["check-config", str(VERL), "--stiffness", "-1"]) == 2


def test_bad_config_names_file_and_line(tmp_path, capsys):
    p = tmp_path / "bad.json"
    p.write_text('{\n "num_generations": 8,\n "beta" 0.1\n}')
    assert main(["check-config", str(p)]) == 2
    err = capsys.readouterr().err
    assert "bad.json line 3" in err and len(err.strip().splitlines()) == 1
