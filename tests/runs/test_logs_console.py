"""TRL console logs: the dicts `Trainer.log` prints (`{'loss': ..., 'reward': ..., 'epoch': ...}`),
read when no checkpoint was saved (tester report C14; its three Sunshine logs and the xling log
were a traceback or 'format not recognized'). The files here are synthetic, written in the
shapes those logs have: tqdm bars redrawn with `\\r`, warnings, eval dicts, the train-end summary,
values printed as numbers (older transformers) or as strings (newer)."""

import json

import pytest

from grpo_theory.cli.main import main
from grpo_theory.runs.logs import detect_format, read_log

LOGGING_STEPS, MAX_STEPS = 5, 50


def _entry(step):
    return {"loss": 0.001 * step, "grad_norm": 0.5 / step, "learning_rate": 1e-06,
            "rewards/correctness": 0.2 + 0.01 * step, "reward": 0.3 + 0.01 * step,
            "reward_std": 0.31, "completion_length": 300.0 - step, "kl": 0.0004 * step,
            "epoch": round(step / 400, 4)}


def _eval(step):
    return {"eval_loss": 0.9 - 0.01 * step, "eval_reward": 0.25 + 0.005 * step,
            "eval_runtime": 3.2, "epoch": round(step / 400, 4)}


def _bar(n, total=MAX_STEPS):
    return f"{100 * n // total:3d}%|#         | {n}/{total} [00:{n:02d}<01:00,  3.1s/it]"


def _run(tmp_path, *, bars=True, as_strings=False):
    """A TRL run logged every 5 steps with an evaluation every 25: its trainer_state.json and
    its console output (what `python train.py > train.log 2>&1` keeps)."""
    history, out = [], ["Loading checkpoint shards: 100%|##########| 2/2 [00:01<00:00]",
                        "UserWarning: The requested device cuda:0 is also used for training.",
                        "Tokenizer: {'eos_token_id': 2, 'pad_token_id': 0}."]
    shown = (lambda d: {k: f"{v:.4g}" for k, v in d.items()}) if as_strings else dict
    progress = "\r" + _bar(0) if bars else ""
    for step in range(1, MAX_STEPS + 1):
        progress += "\r" + _bar(step) if bars else ""
        if step % LOGGING_STEPS:
            continue
        history.append({**_entry(step), "step": step})
        out.append(progress + "\r" + " " * 40 + "\r" + str(shown(_entry(step))))
        progress = ""
        if step % 25 == 0:
            history.append({**_eval(step), "step": step})
            out.append("\r 50%|#####     | 2/4 [00:01<00:01]\r" + str(shown(_eval(step))))
    summary = {"train_runtime": 960.5, "train_samples_per_second": 1.2,
               "train_steps_per_second": 0.05, "train_loss": 0.0123, "epoch": 0.125}
    out.append(progress + "\r" + str(summary))
    out.append("Saving model checkpoint to out/checkpoint-50")
    console = tmp_path / "train.log"
    console.write_bytes(("\n".join(out) + "\n").encode())
    state = tmp_path / "trainer_state.json"
    state.write_text(json.dumps({"global_step": MAX_STEPS, "logging_steps": LOGGING_STEPS,
                                 "log_history": history}))
    return console, state


def _same_metrics(a, b):
    assert a.names == b.names
    for name in a.names:
        assert a.series(name)[0].tolist() == b.series(name)[0].tolist(), name
        assert a.series(name)[1].tolist() == pytest.approx(b.series(name)[1].tolist(), rel=1e-3), name


def test_a_console_log_reads_as_its_trainer_state(tmp_path):
    """The console log of a run and its trainer_state.json give the same metrics at the same
    steps: the bars say which step each dict was printed at; eval dicts go to the step of the
    training log before them (where TRL's log_history puts them); the summary is skipped."""
    console, state = _run(tmp_path)
    assert detect_format(console) == "trl-console"
    log, ref = read_log(console), read_log(state)
    assert log.format == "trl-console" and log.reward_metric() == "reward"
    _same_metrics(log, ref)
    assert log.config == {"logging_steps": 5, "max_steps": 50}
    assert log.series("reward")[0].tolist() == list(range(5, 51, 5))
    assert log.series("eval_reward")[0].tolist() == [25, 50]
    assert "train_runtime" not in log.metrics and "train_loss" not in log.metrics
    assert any("progress bar" in w and "every 5 steps" in w for w in log.warnings)
    assert any("summary" in w and "train_runtime" in w for w in log.warnings)
    # newer transformers print every value as a string ('0.125'): the same numbers
    strings, _ = _run(tmp_path, as_strings=True)
    _same_metrics(read_log(strings), ref)


def test_without_bars_the_steps_are_counted_and_the_unit_said(tmp_path, capsys):
    console, _ = _run(tmp_path, bars=False)
    log = read_log(console)
    assert log.series("reward")[0].tolist() == list(range(1, 11))
    assert log.series("eval_reward")[0].tolist() == [5, 10]
    (note,) = [w for w in log.warnings if "counted" in w]
    assert "log calls" in note
    assert main(["fit", str(console), "--format", "trl-console"]) == 0
    out = capsys.readouterr().out
    assert "(trl-console)" in out and "10 points" in out and "log calls" in out
    assert main(["diagnose", str(console)]) == 0
    assert "(trl-console)" in capsys.readouterr().out


def test_bars_that_do_not_fit_the_dicts_are_not_trusted(tmp_path):
    """stdout is block-buffered when redirected: every dict may come after the last bar (the
    tester's Sunshine logs print all 200 dicts after 200/200). Then the steps are counted."""
    console, _ = _run(tmp_path, bars=False)
    text = console.read_text()
    console.write_text("\r".join(_bar(n) for n in range(MAX_STEPS + 1)) + "\n" + text)
    log = read_log(console)
    assert log.series("reward")[0].tolist() == list(range(1, 11))
    assert any("log calls" in w for w in log.warnings)


def test_a_printed_step_is_used_and_nan_is_read(tmp_path):
    p = tmp_path / "out.log"
    p.write_text("".join(f"{{'step': {s}, 'reward': {0.1 * s}, 'grad_norm': "
                         f"{'nan' if s == 30 else 0.2}, 'epoch': {s / 10}}}\n"
                         for s in (10, 20, 30, 40)))
    log = read_log(p)
    assert log.format == "trl-console" and log.series("reward")[0].tolist() == [10, 20, 30, 40]
    steps, g = log.series("grad_norm", dropna=False)
    assert steps.tolist() == [10, 20, 30, 40] and g[2] != g[2] and not any("counted" in w for w in log.warnings)


def test_a_cut_off_last_dict_and_eval_before_training(tmp_path):
    """A log being written (watch): the incomplete last dict is skipped with a note; an eval
    before the first training log is step 0."""
    p = tmp_path / "live.log"
    p.write_text("{'eval_loss': 1.0, 'eval_reward': 0.1, 'epoch': 0.0}\n"
                 + "".join(f"{{'loss': 0.1, 'reward': {0.1 * s}, 'epoch': {s / 10}}}\n"
                           for s in range(1, 4))
                 + "{'loss': 0.1, 'rew")
    log = read_log(p)
    assert log.series("reward")[0].tolist() == [1, 2, 3]
    assert log.series("eval_reward")[0].tolist() == [0]
    assert any("line 5" in w and "cut off" in w for w in log.warnings)


def test_the_train_end_summary_alone_is_no_training_log(tmp_path, capsys):
    p = tmp_path / "done.log"
    p.write_text("{'train_runtime': 12.0, 'train_loss': 0.5, 'epoch': 1.0}\n")
    assert main(["fit", str(p)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "summary" in err.split("done.log", 1)[1]


def test_logging_steps_from_a_saved_grpo_config(tmp_path):
    """No bar, but the run's GRPOConfig saved as config.json next to the log (as the lab saves
    it) says logging_steps: the k-th dict is step 5k, and diagnose knows G."""
    console, _ = _run(tmp_path, bars=False)
    (tmp_path / "config.json").write_text(json.dumps({"num_generations": 4, "logging_steps": 5}))
    log = read_log(console)
    assert log.series("reward")[0].tolist() == list(range(5, 51, 5))
    assert log.config["num_generations"] == 4
    assert any("logging_steps = 5" in w for w in log.warnings)
