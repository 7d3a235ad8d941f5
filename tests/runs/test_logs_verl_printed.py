"""verl console logs as the engine writes them (issue 29): the config dict verl prints at
start-up (``pprint`` of its resolved config, behind ray's ``(TaskRunner pid=N)`` prefix), ray's
colour codes, and a log that has no step line yet.

The log is a real one, in the repository: benchmarks/real_runs/rldecisionagent_char_count_smol135m
(johnson7788/RLDecisionAgent, backend/char_count/README.md; see its run.json).  Its launch line
(line 2) is dropped, so that the printed dict is the only place the configuration is written;
its printed ``'n': 8`` under ``rollout`` (line 135, read with grep) is the group size."""

import os
import re

import pytest

from grpo_theory.cli.main import main
from grpo_theory.runs.config_map import read_config
from grpo_theory.runs.logs import detect_format, read_log
from grpo_theory.runs.logs.verl import printed_config

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REAL = os.path.join(REPO, "benchmarks", "real_runs", "rldecisionagent_char_count_smol135m",
                    "char_count_grpo_console.log")


def _lines():
    with open(REAL, encoding="utf-8") as fh:
        return fh.read().split("\n")


@pytest.fixture
def printed_only(tmp_path):
    """The real log without its launch command: the printed dict is the only config."""
    lines = _lines()
    assert lines[1].startswith("+ python3 -m verl.trainer.main_ppo")
    path = tmp_path / "printed_only.log"
    path.write_text("\n".join(lines[:1] + lines[2:]), encoding="utf-8")
    return path


def test_the_printed_dict_is_read_whole():
    cfg, at = printed_config(_lines())
    assert at == 5                                   # its first line in the file
    assert sorted(cfg) == ["actor_rollout_ref", "algorithm", "critic", "custom_reward_function",
                           "data", "ray_init", "reward_model", "trainer"]
    # values as printed (grep of the file): 'n': 8 under rollout, 'train_batch_size': 128,
    # 'ppo_mini_batch_size': 16, 'adv_estimator': 'grpo'
    assert cfg["actor_rollout_ref"]["rollout"]["n"] == 8
    assert cfg["actor_rollout_ref"]["rollout"]["val_kwargs"]["n"] == 1
    assert cfg["data"]["train_batch_size"] == 128
    assert cfg["actor_rollout_ref"]["actor"]["ppo_mini_batch_size"] == 16
    assert cfg["algorithm"]["adv_estimator"] == "grpo"


def test_diagnose_takes_its_group_size_from_the_printed_config(printed_only, capsys):
    """Before: "group size unknown" (only launch key=value lines were read)."""
    log = read_log(printed_only)
    assert log.config["actor_rollout_ref.rollout.n"] == 8
    assert main(["diagnose", str(printed_only)]) == 0
    assert "group size 8" in capsys.readouterr().out.splitlines()[0]


def test_check_config_reads_the_printed_config(printed_only, capsys):
    """Before: "not a GRPO config: no GRPO key" (the dict was not read)."""
    warnings = []
    cfg, kind = read_config(printed_only, warnings=warnings)
    assert kind == "verl" and cfg["actor_rollout_ref.rollout.n"] == 8
    assert any("printed config (line 4)" in w for w in warnings)
    assert main(["check-config", str(printed_only), "--json"]) == 0
    import json

    mapping = json.loads(capsys.readouterr().out)["parameters"]
    assert mapping["group_size"]["value"] == 8
    assert mapping["group_size"]["source"] == "actor_rollout_ref.rollout.n"
    # 128 / 16 optimizer batches per generation, as printed
    assert mapping["refresh_interval"]["value"] == 8


def test_a_coloured_log_reads_as_a_plain_one_and_no_message_carries_a_colour(tmp_path, capsys):
    """ray colours its worker prefixes (\\x1b[36m(TaskRunner pid=N)\\x1b[0m)."""
    lines = [re.sub(r"^\((\w+ pid=\d+)\)", "\x1b[36m(\\1)\x1b[0m", ln) for ln in _lines()]
    assert sum("\x1b[36m" in ln for ln in lines) > 400
    path = tmp_path / "coloured.log"
    path.write_text("\n".join(lines), encoding="utf-8")
    assert read_log(path).config["actor_rollout_ref.rollout.n"] == 8
    assert read_config(path)[0]["actor_rollout_ref.rollout.n"] == 8
    # a bad value in a coloured step line: the one-line error quotes no escape sequence
    bad = [ln.replace("critic/score/mean:", "critic/score/mean:\x1b[31mN/A\x1b[0m x", 1)
           if "step:1 " in ln else ln for ln in lines]
    path.write_text("\n".join(bad), encoding="utf-8")
    assert main(["diagnose", str(path)]) == 2
    err = capsys.readouterr().err
    assert "critic/score/mean" in err and "\x1b" not in err and "x1b" not in err


def test_a_verl_log_without_step_lines_is_not_read_as_csv(tmp_path, capsys):
    """The start of the run (ray's INFO line, whose timestamp has a comma, first): it was read
    as a CSV ("no step column among 2025-08-02 00:35:19, 831 INFO ...")."""
    lines = [ln for ln in _lines()[2:] if "step:" not in ln]
    assert lines[0].startswith("2025-08-02 00:35:19,831 INFO")
    path = tmp_path / "starting.log"
    path.write_text("\n".join(lines), encoding="utf-8")
    assert detect_format(path) == "verl"
    assert main(["diagnose", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "step:N" in err and "column" not in err


def test_lines_printed_into_the_dict_by_the_same_process_are_skipped():
    """Public verl CI logs show warnings of the same process (vllm's "Failed to read commit
    hash", a traceback line indented by two spaces) and of other processes between the
    lines of the printed dict; they are not part of it."""
    lines = _lines()
    at = next(i for i, ln in enumerate(lines) if "'critic': {" in ln) + 2
    noise = ["(TaskRunner pid=247607) /usr/lib/python3/vllm/connections.py:8: RuntimeWarning: "
             "Failed to read commit hash:",
             "(TaskRunner pid=247607) No module named 'vllm._version'",
             "(TaskRunner pid=247607)   from vllm.version import __version__ as VLLM_VERSION",
             "(pid=1611494)   from vllm.version import __version__ as VLLM_VERSION"]
    cfg, _ = printed_config(lines[:at] + noise + lines[at:])
    assert cfg is not None and cfg == printed_config(lines)[0]
