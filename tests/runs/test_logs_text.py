"""Text where a number belongs is never dropped without a word (issue 21 item 3).

A column with numbers and some text keeps its numbers and says how many rows were dropped and
where the first one is (file and line); a reward column of text only is an error naming the
column and its first value, for `fit`, `fit --metric` and `diagnose` alike (not "an SFT log?").
"""

import json

import pytest

from grpo_theory.cli.main import main
from grpo_theory.runs.logs import read_log
from grpo_theory.validate import ParameterError

BAD_STEPS = (4, 9, 17, 23, 30, 41, 48)


def _csv(tmp_path, reward=lambda s: f"{0.2 + 0.6 * (1 - 0.9 ** s):.5f}", extra=""):
    rows = ["step,reward,entropy,run" + extra]
    for s in range(1, 51):
        rows.append(f"{s},{reward(s)},{0.5 - 0.004 * s:.4f},demo")
    p = tmp_path / "log.csv"
    p.write_text("\n".join(rows) + "\n")
    return p


def test_some_text_cells_are_dropped_with_a_count_and_the_first_line(tmp_path, capsys):
    p = _csv(tmp_path, reward=lambda s: "oops" if s in BAD_STEPS else f"{0.2 + 0.01 * s:.3f}")
    log = read_log(p)
    steps, _ = log.series("reward")
    assert len(steps) == 50 - len(BAD_STEPS)
    (w,) = [w for w in log.warnings if "reward" in w]
    # step s sits on line s + 1 (line 1 is the header)
    assert "7 of 50" in w and f"line {BAD_STEPS[0] + 1}" in w and "'oops'" in w
    assert not any("run" in x for x in log.warnings)       # a text-only column is not a metric
    assert main(["fit", str(p), "--models", "exponential"]) == 0
    out = capsys.readouterr().out
    assert "43 points" in out and "7 of 50" in out


@pytest.mark.parametrize("argv", [["fit"], ["fit", "--metric", "reward"], ["diagnose"]])
def test_an_all_text_reward_column_is_named_with_its_first_value(tmp_path, capsys, argv):
    p = _csv(tmp_path, reward=lambda s: "pending" if s < 3 else "bad")
    rc = main([argv[0], str(p), *argv[1:]])
    out, err = capsys.readouterr()
    assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "'reward'" in err and "'pending'" in err and "line 2" in err and "SFT" not in err


def test_jsonl_and_trl_text_values_are_counted(tmp_path):
    p = tmp_path / "log.jsonl"
    p.write_text("\n".join(json.dumps({"step": s, "reward": "n.a." if s in BAD_STEPS else 0.1 * s})
                           for s in range(1, 21)) + "\n")
    (w,) = read_log(p).warnings
    assert "3 of 20" in w and "line 4" in w
    state = {"log_history": [{"step": s, "reward": "x" if s == 2 else 0.1 * s, "loss": 1.0}
                             for s in range(1, 6)]}
    t = tmp_path / "trainer_state.json"
    t.write_text(json.dumps(state))
    (w,) = read_log(t).warnings
    assert "1 of 5" in w and "log_history entry 1" in w
    state = {"log_history": [{"step": s, "reward": "x", "loss": 1.0} for s in range(1, 6)]}
    t.write_text(json.dumps(state))
    with pytest.raises(ParameterError, match="'reward' holds text"):
        read_log(t).reward_metric()


def test_the_signal_share_prints_the_same_everywhere_in_one_output(tmp_path, capsys):
    """Issue 21 item 12: the number was 0.04 in one line and 0.045 in the next; issue 29 item 10
    and issue 32: it was called a 'noise ceiling' and printed below the R^2 achieved -- it is the
    signal share now, an estimate, and a declined log is declined for its trend, not for it."""
    import re

    import numpy as np

    rng = np.random.default_rng(1)
    y = 0.5 + 0.002 * np.arange(60) + 0.02 * rng.standard_normal(60)
    p = tmp_path / "rising.csv"
    p.write_text("step,reward\n" + "".join(f"{s},{v:.5f}\n" for s, v in enumerate(y, 1)))
    main(["fit", str(p)])
    out = capsys.readouterr().out
    shown = re.findall(r"signal share [^=]*= ([0-9.]+)", out)
    assert len(shown) == 1 and len(shown[0].split(".")[1]) == 3, out
    assert "noise ceiling" not in out
    flat = 0.5 + 0.1 * rng.standard_normal(60)
    p.write_text("step,reward\n" + "".join(f"{s},{v:.5f}\n" for s, v in enumerate(flat, 1)))
    main(["fit", str(p)])
    out = capsys.readouterr().out
    # declined for its trend, and the table of fits is marked as not a reading of the run
    assert "flat reward" in out and "for reference only" in out and "noise ceiling" not in out


def test_a_log_without_a_reward_says_so_in_words(tmp_path, capsys):
    """Newcomer pass: an SFT trainer_state.json gave `metric must be given with --metric: ...,
    got None`."""
    t = tmp_path / "trainer_state.json"
    t.write_text(json.dumps({"log_history": [{"step": s, "loss": 1.0 / s, "learning_rate": 1e-5}
                                             for s in range(1, 20)]}))
    assert main(["fit", str(t)]) == 2
    err = capsys.readouterr().err
    assert "no reward metric among its metrics (learning_rate, loss)" in err and "--metric" in err
    assert "got None" not in err and len(err.strip().splitlines()) == 1
    assert main(["diagnose", str(t)]) == 0          # diagnose still runs the other checks
    assert "SFT" in capsys.readouterr().out


def test_a_trl_console_log_is_read_with_counted_steps(tmp_path, capsys):
    """Newcomer pass: a TRL run's console output (printed dicts, as in JuncyLu/trl_DAPO's
    training logs) was 'format not recognized'; it was then refused by name; it is now read
    (tests/runs/test_logs_console.py), its steps counted where nothing says them."""
    p = tmp_path / "train.log"
    p.write_text("Loading checkpoint shards: 100%\n  2%|2   | 1/43 [01:40<1:10:29]\n"
                 "{'loss': -0.0447, 'grad_norm': 0.30, 'reward': 1.875, 'epoch': 0.23}\n"
                 "{'loss': -0.0078, 'grad_norm': 0.0, 'reward': 0.49, 'epoch': 0.47}\n")
    log = read_log(p)
    assert log.format == "trl-console" and log.series("reward")[0].tolist() == [1, 2]
    assert any("log calls" in w for w in log.warnings)
    assert main(["fit", str(p)]) == 2                   # two points: too few to fit, one line
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "reward has 2" in err


def test_a_dpo_log_is_named_a_preference_log(tmp_path, capsys):
    """Tester report C14: a TRL DPO trainer_state (rewards/chosen, rewards/rejected,
    rewards/margins) was asked whether it is 'an SFT or evaluation-only log'."""
    t = tmp_path / "trainer_state.json"
    t.write_text(json.dumps({"log_history": [
        {"step": s, "loss": 0.69 - 0.01 * s, "rewards/chosen": 0.01 * s, "rewards/rejected": -0.01 * s,
         "rewards/margins": 0.02 * s, "rewards/accuracies": 0.5, "logps/chosen": -50.0}
        for s in range(1, 20)]}))
    assert main(["fit", str(t)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "preference (DPO)" in err and "SFT" not in err
    assert "rewards/margins" in err and "--metric" in err
    assert main(["diagnose", str(t)]) == 0                    # diagnose says the same in its warning
    out = capsys.readouterr().out
    assert "(a preference (DPO) training log?)" in out and "SFT" not in out


def test_what_detection_saw_is_named(tmp_path, capsys):
    """Where the format is not recognized, or a JSON array holds no per-step objects, the one
    line says what the file holds."""
    p = tmp_path / "printed.log"
    p.write_text("starting\n{'model': 'gpt2', 'lr': 0.001}\n{'model': 'gpt2', 'lr': 0.002}\ndone\n")
    assert main(["fit", str(p)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "printed.log line 2" in err
    assert "printed Python dicts" in err and "model, lr" in err
    for text, said in (("[0.1, 0.2, 0.3]\n", "numbers"), ("[]\n", "empty JSON array"),
                       ('[{"eval_step": 1, "acc": 0.3}]\n', "eval_step, acc")):
        a = tmp_path / "values.json"
        a.write_text(text)
        assert main(["diagnose", str(a)]) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and said in err, err


def _monarch_like(tmp_path, n=40, cut=False):
    # the layout of a custom Monarch logger (issue 29 item 11, seen on a public log): start-up text,
    # progress bars, then `step:N | key=value | ...` lines; values synthesized here
    lines = ["Spawning actors...",
             "Generating train split: 100%|##########| 7473/7473 [00:00<00:00, 2127.70 examples/s]",
             "Training: 7473 problems, 32 prompts/step, 233 steps/epoch, 233 total steps"]
    for s in range(n):
        lines.append(f"step:{s} | policy_loss={0.001 * (-1) ** s:.4f} | kl_divergence="
                     f"{0.001 * (s + 1):.4f} | mean_reward={0.7 - 0.55 * 0.93 ** s:.4f} | "
                     f"grad_norm={1.0 + 0.01 * s:.4f} | epoch=0")
    text = "\n".join(lines) + "\n"
    if cut:
        text = text[:-12]                   # the last line cut off inside its last entry
    p = tmp_path / "training.log"
    p.write_text(text)
    return p


def test_step_key_value_lines_are_read(tmp_path, capsys):
    log = read_log(_monarch_like(tmp_path))
    assert log.format == "step-kv"
    s, v = log.series("mean_reward")
    assert list(s) == list(range(40)) and v[3] == pytest.approx(round(0.7 - 0.55 * 0.93 ** 3, 4))
    assert log.reward_metric() == "mean_reward"
    assert log.role("kl") == "kl_divergence"            # issue 29 item 13: the KL channel's alias
    assert main(["fit", str(_monarch_like(tmp_path)), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["n"] == 40
    cut = read_log(_monarch_like(tmp_path, cut=True))
    assert cut.series("mean_reward")[0].size == 40 and cut.series("epoch")[0].size == 39
    assert any("cut off" in w for w in cut.warnings)
    bad = tmp_path / "bad.log"
    bad.write_text("step:0 | reward=0.1 | loss=0.2\nstep:1 | reward=0.2 | status=ok\n")
    with pytest.raises(ParameterError, match=r"line 2.*'status=ok' is not of the form key=number"):
        read_log(bad)


def test_a_console_log_before_its_first_record_is_named_not_misread_as_csv(tmp_path, capsys):
    # issue 29 item 12: Python logging lines (a comma in the time stamp) were read as a CSV header
    # ("no step column among 2026-04-19 08:31:23, 419 [INFO] ...")
    p = tmp_path / "run.log"
    p.write_text("2026-04-19 08:31:23,419 [INFO] pilot: model=Qwen, max_steps=200\n"
                 "2026-04-19 08:31:23,426 [INFO] pilot: === Run: rho=1.00, seed=42 ===\n"
                 "Loading checkpoint shards: 100%|##########| 4/4 [00:03<00:00,  1.10it/s]\n")
    for argv in (["diagnose", str(p)], ["fit", str(p)]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1
        assert "TRL console output with no training record yet" in err and "step column" not in err
    # once the first record is printed, it is read
    p.write_text(p.read_text() + "{'loss': '0', 'reward': '0.125', 'kl': '0', 'epoch': '0.01'}\n")
    assert read_log(p).format == "trl-console"
    v = tmp_path / "verl.log"              # a verl run's logging lines before its first step line
    v.write_text("2026-04-19 08:31:23,419 [INFO] verl.trainer.main_ppo: start, 8 GPUs\n")
    with pytest.raises(ParameterError, match="verl console output with no training record yet"):
        read_log(v)


def test_an_unrecognized_text_names_what_it_found(tmp_path, capsys):
    # issue 29 item 11: the error blamed "line 1" of a file whose first line is not the problem
    p = tmp_path / "notes.txt"
    p.write_text("a note about the run\nnothing here is a record\n")
    assert main(["fit", str(p)]) == 2
    err = capsys.readouterr().err
    assert "no reader accepts it" in err and "'a note about the run'" in err
    assert "line 1" not in err
