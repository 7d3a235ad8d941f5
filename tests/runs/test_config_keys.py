"""check-config reads only GRPO configs, and every key a file sets is either read or named.

Issue 21 items 1 and 2: a near miss of a trainer key is an error naming the key meant (exit 2);
keys the trainer does not know either are listed in one warning line; a file with no GRPO key
(a PEFT adapter config, an SFT config, a verl PPO launch) is refused in one line; a README or a
launch script with verl overrides is read as a verl config.
"""

import json

import pytest

from grpo_theory.cli.main import main
from grpo_theory.runs.config_map import _edits, check_keys, map_config, read_config
from grpo_theory.validate import ParameterError


def _cli(capsys, *argv):
    rc = main(["check-config", *map(str, argv)])
    out, err = capsys.readouterr()
    return rc, out, err


def _one_line_error(rc, out, err):
    assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1, (rc, out, err)
    return err


# --- item 1: typos ------------------------------------------------------------------------

def test_yaml_typos_are_errors_naming_the_key_meant(tmp_path, capsys):
    p = tmp_path / "grpo.yaml"
    p.write_text("per_device_train_batch_size: 8\nlearnig_rate: 1.0e-5\nnum_generation: 16\n"
                 "num_iteratons: 4\n")
    err = _one_line_error(*_cli(capsys, p))
    assert "line 2" in err
    for typo, meant in (("learnig_rate", "learning_rate"), ("num_generation", "num_generations"),
                        ("num_iteratons", "num_iterations")):
        assert f"'{typo}'" in err and f"'{meant}'" in err


def test_json_typo_is_an_error(tmp_path, capsys):
    p = tmp_path / "grpo.json"
    p.write_text(json.dumps({"num_generations": 8, "bta": 0.04, "learning_rate": 1e-6,
                             "scale_reward": "group"}, indent=1))
    err = _one_line_error(*_cli(capsys, p))
    assert "'scale_reward'" in err and "'scale_rewards'" in err and "line 5" in err


def test_verl_override_and_yaml_typos_are_errors(tmp_path, capsys):
    sh = tmp_path / "run.sh"
    sh.write_text("python3 -m verl.trainer.main_ppo \\\n  algorithm.adv_estimator=grpo \\\n"
                  "  actor_rollout_ref.rollout.n=8 \\\n  data.train_batch_size=1024 \\\n"
                  "  actor_rollout_ref.actor.ppo_mini_batch_sze=256 \\\n"
                  "  +actor_rollout_ref.actor.my_new_knob=1\n")
    err = _one_line_error(*_cli(capsys, sh))
    assert "'actor_rollout_ref.actor.ppo_mini_batch_sze'" in err and "line 5" in err
    assert "'actor_rollout_ref.actor.ppo_mini_batch_size'" in err and "my_new_knob" not in err
    y = tmp_path / "verl.yaml"
    y.write_text("actor_rollout_ref:\n  rollout:\n    n: 8\n  actor:\n    ppo_epoch: 2\n")
    err = _one_line_error(*_cli(capsys, y))
    assert "'actor_rollout_ref.actor.ppo_epoch'" in err and "'actor_rollout_ref.actor.ppo_epochs'" in err


def test_foreign_keys_are_listed_in_one_warning_and_read_keys_are_not(tmp_path, capsys):
    p = tmp_path / "grpo.yaml"
    p.write_text("num_generations: 8\nlearning_rate: 3.0e-6\nmy_wandb_tags: [a, b]\n"
                 "curriculum_schedule: linear\n")
    rc, out, err = _cli(capsys, p)
    assert rc == 0 and err == ""
    lines = [ln for ln in out.splitlines() if "not read" in ln]
    assert len(lines) == 1 and "my_wandb_tags" in lines[0] and "curriculum_schedule" in lines[0]
    assert "learning_rate" not in lines[0] and "num_generations" not in lines[0]
    mp = map_config(*read_config(p))
    assert mp["learning_rate"]["value"] == 3e-6 and not mp["learning_rate"]["assumed"]


def test_nested_keys_are_read_by_their_last_part_and_the_rest_is_listed(tmp_path):
    p = tmp_path / "meta.json"
    p.write_text(json.dumps({"model_name": "m", "training_args": {
        "learning_rate": 1e-5, "batch_size": 2, "max_completion_length": 512}}))
    warnings = []
    read_config(p, warnings=warnings)
    assert len(warnings) == 1
    assert "training_args.batch_size" in warnings[0] and "model_name" in warnings[0]
    assert "learning_rate" not in warnings[0]


def test_real_configs_have_no_typo():
    """The corpus' real configs (open-r1's recipe, the verl examples, the CS336 YAMLs) use
    keys the trainers know: none is mistaken for a typo."""
    import glob
    import os

    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    paths = [p for p in glob.glob(os.path.join(repo, "benchmarks/real_runs/*/*"))
             if p.endswith((".yaml", ".sh")) and "_ppo" not in p]
    paths.append(os.path.join(repo, "grpo_theory/data/verl_grpo_deepseek7b_gsm8k_trimmed.log"))
    assert len(paths) >= 20
    for p in paths:
        cfg, kind = read_config(p)
        assert check_keys(cfg, kind)["typos"] == [], p


def test_edit_distance_by_hand():
    assert _edits("learnig_rate", "learning_rate") == 1       # deletion
    assert _edits("num_iteratons", "num_iterations") == 1
    assert _edits("btea", "beta") == 1                        # transposition
    assert _edits("use_qalora", "use_rslora") == 2
    assert _edits("modules_to_save", "lora_modules_to_save") == 5
    assert _edits("", "abc") == 3 and _edits("abc", "abc") == 0


def test_another_tools_near_miss_is_not_a_typo(tmp_path):
    """PEFT's use_qalora is two edits from TRL's use_rslora: not a slip, another tool's key."""
    p = tmp_path / "grpo.yaml"
    p.write_text("num_generations: 8\nuse_qalora: false\n")
    warnings = []
    read_config(p, warnings=warnings)
    assert len(warnings) == 1 and "use_qalora" in warnings[0]


def test_a_section_of_the_files_own_is_not_checked_for_typos(tmp_path, capsys):
    """A section that sets no trainer key exactly (``sweep:``, ``gating:``) holds the file's own
    keys: ``sweep.seeds`` is not a typo of ``seed`` (a warning lists it); inside the trainer's
    section (it sets ``num_generations``) a near miss still is one."""
    p = tmp_path / "grpo.yaml"
    p.write_text("training:\n  num_generations: 4\n  learning_rate: 1.0e-5\n"
                 "sweep:\n  seeds: [1, 2]\ngating:\n  benchmark: gsm8k\n")
    warnings = []
    read_config(p, warnings=warnings)
    assert any("sweep.seeds" in w and "gating.benchmark" in w for w in warnings), warnings
    p.write_text("training:\n  num_generations: 4\n  learnig_rate: 1.0e-5\n")
    err = _one_line_error(*_cli(capsys, p))
    assert "'training.learnig_rate'" in err and "'training.learning_rate'" in err and "line 3" in err


# --- item 2: files that are not GRPO configs ------------------------------------------------

@pytest.mark.parametrize("name,text,why", [
    ("adapter_config.json", json.dumps({"r": 16, "lora_alpha": 32, "peft_type": "LORA",
                                        "task_type": "CAUSAL_LM", "use_qalora": False,
                                        "target_modules": ["q_proj"]}), "no GRPO key"),
    ("sft.yaml", "learning_rate: 2.0e-5\nper_device_train_batch_size: 4\nnum_train_epochs: 3\n",
     "no GRPO key"),
    ("generation_config.json", json.dumps({"temperature": 0.7, "top_p": 0.8, "top_k": 20}),
     "no GRPO key"),
    ("ppo.sh", "python3 -m verl.trainer.main_ppo data.train_batch_size=1024 "
               "actor_rollout_ref.actor.optim.lr=1e-6 critic.optim.lr=1e-5\n", "gae"),
    ("gae.yaml", "algorithm:\n  adv_estimator: gae\nactor_rollout_ref:\n  rollout:\n    n: 4\n",
     "critic"),
])
def test_files_that_are_not_grpo_configs_are_refused(tmp_path, capsys, name, text, why):
    p = tmp_path / name
    p.write_text(text)
    err = _one_line_error(*_cli(capsys, p))
    assert "not a GRPO config" in err and why in err and name in err


@pytest.mark.parametrize("text", [
    "Launch with `actor_rollout_ref.rollout.n=8` and `data.train_batch_size=512`.\n",
    "Set actor_rollout_ref.rollout.n=8, data.train_batch_size=512; then run.\n",
    "```bash\npython3 -m verl.trainer.main_ppo \\\n  actor_rollout_ref.rollout.n=8 \\\n"
    "  data.train_batch_size=512\n```\n",
])
def test_readme_with_verl_overrides_is_a_verl_config(tmp_path, text):
    p = tmp_path / "README.md"
    p.write_text("# How we trained\n\n" + text)
    cfg, kind = read_config(p)
    mp = map_config(cfg, kind)
    assert kind == "verl"
    assert mp["group_size"] == {**mp["group_size"], "value": 8, "assumed": False}
    assert mp["refresh_interval"]["value"] == 2     # 512 / 256 (default mini-batch)


def test_readme_with_an_sft_launch_and_log_before_the_grpo_launch(tmp_path):
    """The real case: a README pastes an SFT launch and its console log, then the GRPO launch
    and its log; the GRPO launch is read (shell variables from above it resolve)."""
    p = tmp_path / "README.md"
    p.write_text("N=6\n+ torchrun -m verl.trainer.fsdp_sft_trainer data.train_batch_size=64 "
                 "optim.lr=1e-4\n"
                 "step:1 - train/loss:1.1\nstep:2 - train/loss:0.9\n"
                 "then GRPO:\n+ python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo "
                 "actor_rollout_ref.rollout.n=$N data.train_batch_size=128 "
                 "actor_rollout_ref.actor.ppo_mini_batch_size=32\n"
                 "step:1 - critic/score/mean:0.1\n")
    mp = map_config(*read_config(p))
    assert mp["group_size"]["value"] == 6
    assert mp["refresh_interval"]["value"] == 128 // 32


def test_refusal_is_a_parameter_error_from_the_library(tmp_path):
    p = tmp_path / "adapter_config.json"
    p.write_text(json.dumps({"r": 8, "lora_alpha": 16}))
    with pytest.raises(ParameterError, match="not a GRPO config"):
        read_config(p)


def test_trl_generation_batch_size_sets_the_window(tmp_path):
    """TRL's generation_batch_size = per-device batch x processes x steps_per_generation: a
    config that sets it instead of steps_per_generation has that window, not the default."""
    p = tmp_path / "g.yaml"
    p.write_text("num_generations: 8\nper_device_train_batch_size: 4\nnum_processes: 2\n"
                 "gradient_accumulation_steps: 2\ngeneration_batch_size: 32\n")
    mp = map_config(*read_config(p))
    # by hand: 32 completions per generation / (4 x 2 per micro-step) = 4 micro-steps = 2 optimizer steps
    assert mp["refresh_interval"]["value"] == 2 and mp["reuse"]["value"] == "fresh"
    p.write_text("num_generations: 8\nper_device_train_batch_size: 4\ngeneration_batch_size: 6\n")
    with pytest.raises(ParameterError, match="generation_batch_size"):
        map_config(*read_config(p))


def test_a_range_whose_ends_print_alike_is_one_number(tmp_path):
    """Issue 21 item 12: `unstable above eta K = 3.8 .. 3.8`."""
    import re

    from grpo_theory.runs.check_config import check_config

    p = tmp_path / "grpo.yaml"
    p.write_text("num_generations: 8\nlearning_rate: 1.0e-6\n")
    text = str(check_config(p))
    assert "exact L2: unstable above eta K = " in text
    assert not re.search(r"(?<![\d.])(\d[\d.e+-]*) \.\. \1(?![\d.])", text), text


def test_trl_launch_script_flags_are_read(tmp_path, capsys):
    """Newcomer pass (a public TRL repository's launch scripts): `accelerate launch train.py
    --num_generations 8 ...` was 'no configuration found'."""
    sh = tmp_path / "train.sh"
    sh.write_text("LR=3e-6\naccelerate launch --num_processes 4 --config_file zero2.yaml \\\n"
                  "  train_grpo.py \\\n  --num_generations 8 \\\n  --learning-rate $LR \\\n"
                  "  --num_iterations=2 \\\n  --gradient_checkpointing \\\n"
                  "  --reward_weights 1.0 0.5 \\\n  --my_custom_flag 3 >> train.log 2>&1\n")
    warnings = []
    cfg, kind = read_config(sh, warnings=warnings)
    assert kind == "trl" and cfg["gradient_checkpointing"] is True
    assert cfg["reward_weights"] == [1.0, 0.5]
    mp = map_config(cfg, kind)
    assert mp["group_size"]["value"] == 8 and mp["learning_rate"]["value"] == 3e-6
    assert mp["refresh_interval"]["value"] == 2 and mp["reuse"]["value"] == "batch"
    assert mp["prompts"]["value"] == 8 * 4 // 8 * 1 // 1          # pdb 8 (default) x 4 processes / G
    assert "my_custom_flag" in warnings[0]
    assert "config_file" not in " ".join(warnings)        # the launcher's flag, not TRL's
    # `trl grpo` parses its flags as a GRPOConfig: a near miss is an error at its own line
    sh.write_text("trl grpo \\\n  --beta 0.04 \\\n  --num_generatons 8\n")
    err = _one_line_error(*_cli(capsys, sh))
    assert "'num_generatons'" in err and "'num_generations'" in err and "line 3" in err


def test_a_launch_of_ones_own_script_warns_of_near_misses(tmp_path, capsys):
    """Newcomer pass (Carlos-Mero/proofrl scripts/rlvr_baseline.sh, gardan4/AgenticRAG
    AGENT/TRL_TRAINING.sh): `main.py --dataset X` is the script's own argument, not a typo
    of GRPOConfig's `datasets`; it was an error ('line 1'), now a warning at its line."""
    sh = tmp_path / "run.sh"
    sh.write_text("ACCELERATE_LOG_LEVEL=info accelerate launch \\\n  --config_file ds.yaml \\\n"
                  "  main.py train \\\n  --dataset HuggingFaceH4/MATH-500 \\\n"
                  "  --num_generations 4 \\\n  --lr 5e-6\n")
    warnings = []
    cfg, kind = read_config(sh, warnings=warnings)
    assert kind == "trl" and cfg["num_generations"] == 4 and "config_file" not in cfg
    (near,) = [w for w in warnings if w.startswith("near misses")]
    assert "--dataset (line 4; GRPOConfig has --datasets)" in near
    assert any("lr" in w for w in warnings if w.startswith("not read"))


def test_a_launch_with_a_config_file_reads_it_under_its_flags(tmp_path, capsys):
    """open-r1's launch: `accelerate launch src/open_r1/grpo.py --config recipe.yaml
    --num_generations 8` (TRL's parser reads the file, the flags override it)."""
    (tmp_path / "recipes").mkdir()
    (tmp_path / "recipes" / "grpo.yaml").write_text("num_generations: 4\nlearning_rate: 2e-5\n")
    sh = tmp_path / "launch.sh"
    sh.write_text("accelerate launch --num_processes=7 src/grpo.py \\\n"
                  "  --config recipes/grpo.yaml --num_generations 8\n")
    mp = map_config(*read_config(sh))
    assert mp["group_size"]["value"] == 8 and mp["learning_rate"]["value"] == 2e-5
    sh.write_text("accelerate launch src/grpo.py --config recipes/missing.yaml\n")
    err = _one_line_error(*_cli(capsys, sh))
    assert "recipes/missing.yaml" in err and "give that file" in err


def test_a_dumped_grpo_config_with_both_batch_keys_gives_the_processes(tmp_path):
    """A GRPOConfig dumped by TRL (to_json_string) holds steps_per_generation and the
    generation_batch_size TRL computed from it: per-device 8 x 4 processes x 2 = 64."""
    p = tmp_path / "args.json"
    p.write_text(json.dumps({"num_generations": 8, "per_device_train_batch_size": 8,
                             "gradient_accumulation_steps": 2, "steps_per_generation": 2,
                             "generation_batch_size": 64, "num_iterations": 1}))
    mp = map_config(*read_config(p))
    assert mp["refresh_interval"]["value"] == 1
    assert mp["prompts"]["value"] == 8 * 4 * 2 // 8            # per-device x processes x GAS / G
    p.write_text(json.dumps({"num_generations": 8, "per_device_train_batch_size": 8,
                             "steps_per_generation": 2, "generation_batch_size": 64,
                             "num_processes": 2}))
    with pytest.raises(ParameterError, match="generation_batch_size"):
        map_config(*read_config(p))


def test_a_launch_of_a_trainer_of_its_own_is_named_as_such(tmp_path, capsys):
    """Newcomer pass (RobbenRibery/curious scripts/grpo.sh: `python -m curious.training.train_rl
    --grpo_config.group_size 16 ...`): 'no configuration found' although the launch is there."""
    sh = tmp_path / "grpo.sh"
    sh.write_text("export A=1;\n\npython -m mytrainer \\\n    --base_config.seed 42 \\\n"
                  "    --grpo_config.group_size 16 \\\n    --grpo_config.lr 1e-06\n")
    err = _one_line_error(*_cli(capsys, sh))
    assert "line 4" in err and "a trainer of its own" in err and "base_config.seed" in err


# --- issue 29 item 7, newcomer pass: configs read as the engines read them ------------------

# modelled on k8s/verl/configmap.yaml of harishvs/rl_grpo_qwen_math: a Kubernetes ConfigMap whose
# `run_grpo.sh: |` block holds the verl launch, its values `${VERL_*}` with `: "${VERL_*:=d}"`
# defaults, next to Python sidecars (before: "not a GRPO config: no GRPO key")
_CONFIGMAP = """apiVersion: v1
kind: ConfigMap
metadata:
  name: verl-scripts
data:
  reward.py: |
    def compute_score(solution_str, ground_truth):
        score = 1.0 if solution_str == ground_truth else 0.0
        return score
  run_grpo.sh: |
    #!/bin/bash
    set -ex
    : "${VERL_LR:=5e-6}"
    : "${VERL_ROLLOUT_N:=8}"
    python3 -m verl.trainer.main_ppo \\
      algorithm.adv_estimator=grpo \\
      data.train_batch_size=256 \\
      actor_rollout_ref.actor.optim.lr=${VERL_LR} \\
      actor_rollout_ref.actor.ppo_mini_batch_size=64 \\
      actor_rollout_ref.rollout.n=${VERL_ROLLOUT_N}
"""


def test_a_yaml_with_a_launch_in_a_string_value_is_read_from_it(tmp_path, capsys):
    p = tmp_path / "configmap.yaml"
    p.write_text(_CONFIGMAP)
    warnings = []
    cfg, kind = read_config(p, warnings=warnings)
    mp = map_config(cfg, kind)
    assert kind == "verl"
    assert mp["group_size"]["value"] == 8 and not mp["group_size"]["assumed"]
    assert mp["learning_rate"]["value"] == 5e-6
    assert mp["refresh_interval"]["value"] == 256 // 64
    assert any("data.run_grpo.sh" in w and "line 10" in w for w in warnings), warnings
    # a typo inside the block is named at its line of the YAML file (line 19)
    p.write_text(_CONFIGMAP.replace("ppo_mini_batch_size", "ppo_mini_batch_sze"))
    err = _one_line_error(*_cli(capsys, p))
    assert "'actor_rollout_ref.actor.ppo_mini_batch_sze'" in err and "line 19" in err
    # a ConfigMap whose strings hold no GRPO launch is still refused
    p.write_text(_CONFIGMAP.split("  run_grpo.sh")[0])
    err = _one_line_error(*_cli(capsys, p))
    assert "not a GRPO config" in err


# modelled on the run_grpo.sh of the same ConfigMap (DERIVED_run_grpo.sh of the newcomer pass:
# before, exit 2 "actor_rollout_ref.rollout.n must be an integer >= 1, got '${VERL_ROLLOUT_N}'")
def test_shell_variables_resolve_and_an_unset_one_makes_its_key_unknown(tmp_path, capsys):
    sh = tmp_path / "run_grpo.sh"
    sh.write_text('#!/bin/bash\n: "${VERL_ROLLOUT_N:=8}"\nexport LR=2e-6\nMB=${MB:-32}\n'
                  "python3 -m verl.trainer.main_ppo \\\n  algorithm.adv_estimator=grpo \\\n"
                  "  actor_rollout_ref.rollout.n=${VERL_ROLLOUT_N} \\\n"
                  "  actor_rollout_ref.actor.optim.lr=$LR \\\n"
                  "  actor_rollout_ref.actor.ppo_epochs=${EPOCHS:-2} \\\n"
                  "  actor_rollout_ref.actor.ppo_mini_batch_size=${MB} \\\n"
                  "  data.train_batch_size=${VERL_TRAIN_BATCH_SIZE}\n")
    rc, out, err = _cli(capsys, sh)
    assert rc == 0 and err == ""
    assert any(ln.startswith("  unknown: data.train_batch_size = ${VERL_TRAIN_BATCH_SIZE}")
               for ln in out.splitlines()), out
    unknown, warnings = [], []
    cfg, kind = read_config(sh, unknown=unknown, warnings=warnings)
    mp = map_config(cfg, kind)
    assert mp["group_size"]["value"] == 8 and mp["learning_rate"]["value"] == 2e-6
    # the values read at the script's own defaults are named (the environment may set them)
    said = [w for w in warnings if "defaults of shell variables" in w]
    assert len(said) == 1 and all(f"{v}," in said[0] + "," for v in
                                  ("EPOCHS=2", "MB=32", "VERL_ROLLOUT_N=8")), said
    assert "LR=" not in said[0]
    assert cfg["actor_rollout_ref.actor.ppo_epochs"] == 2
    assert cfg["actor_rollout_ref.actor.ppo_mini_batch_size"] == 32
    # the unset variable: the key is unknown, read as not set (verl's default 1024), named
    assert "data.train_batch_size" not in cfg
    assert mp["refresh_interval"]["assumed"] and mp["refresh_interval"]["value"] == 2 * 1024 // 32
    assert len(unknown) == 1 and "data.train_batch_size" in unknown[0] \
        and "VERL_TRAIN_BATCH_SIZE" in unknown[0], unknown
    # TRL flags resolve the same way
    sh.write_text('G=${G:-4}\naccelerate launch train.py --num_generations ${G} '
                  '--learning_rate ${LR:-3e-6}\n')
    mp = map_config(*read_config(sh))
    assert mp["group_size"]["value"] == 4 and mp["learning_rate"]["value"] == 3e-6


# modelled on config/verl/qwen-1.5b.yaml (the author's own layout a launcher turns into VERL_*
# variables) and config/monarch/qwen-1.5b.yaml of harishvs/rl_grpo_qwen_math: before, the
# refusal spoke of verl keys only ("verl default gae: PPO with a critic")
@pytest.mark.parametrize("name,text,alike", [
    ("verl_own.yaml", "model: Qwen/Qwen2.5-1.5B\ndata:\n  train_batch_size: 256\nactor:\n"
                      "  ppo_mini_batch_size: 128\n  lr: 5e-6\nrollout:\n  n: 8\ntrainer:\n"
                      "  nnodes: 2\n", "rollout.n (verl reads actor_rollout_ref.rollout.n)"),
    ("monarch.yaml", "data:\n  train_batch_size: 2048\nlearner:\n  lr: 5e-6\n  kl_coef: 0.1\n"
                     "generator:\n  group_size: 8\ntrainer:\n  weight_sync_interval: 3\n",
     "another trainer's"),
])
def test_a_file_of_another_trainer_is_refused_naming_the_trainers_looked_for(
        tmp_path, capsys, name, text, alike):
    p = tmp_path / name
    p.write_text(text)
    err = _one_line_error(*_cli(capsys, p))
    assert "not a GRPO config" in err and "no GRPO key" in err and "found none" in err
    for trainer in ("verl's (actor_rollout_ref.rollout.n", "TRL GRPOConfig's (num_generations",
                    "CS336 trainer's (epochs_per_rollout_batch"):
        assert trainer in err, err
    assert "gae" not in err and alike in err
