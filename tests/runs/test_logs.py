"""Readers: real verl log (values read off the file by eye) and synthetic TRL/W&B/JSONL/CSV fixtures."""

import json
import math

import numpy as np
import pytest

from grpo_theory.data import example_log
from grpo_theory.cli.main import main
from grpo_theory.runs.logs import LogFormatError, detect_format, from_simulation, read_log
from grpo_theory.validate import ParameterError

DATA = example_log().parent
VERL = example_log()


def test_verl_console_real_log():
    log = read_log(VERL)
    assert log.format == "verl" and log.warnings == []
    steps, reward = log.series("critic/score/mean")
    # read off the file: step:1 ... critic/score/mean:0.255, step:3 0.354, step:1119 0.981
    assert steps.size == 1119 and steps[0] == 1 and steps[-1] == 1119
    assert reward[0] == 0.255 and reward[2] == 0.354 and reward[-1] == 0.981
    assert log.reward_metric() == "critic/score/mean"
    vs, vv = log.series(log.role("val_reward"))
    assert log.role("val_reward") == "val/test_score/openai/gsm8k"
    assert vs[0] == 10 and vv[0] == 0.648 and vs[-1] == 1120 and vv[-1] == 0.697
    assert vs.size == 112
    assert log.role("entropy") == "actor/entropy_loss"
    assert log.series("actor/entropy_loss")[1][0] == 0.389
    assert log.role("kl") == "actor/kl_loss"
    # launch script parsed into the config
    assert log.config["actor_rollout_ref.rollout.n"] == 5
    assert log.config["actor_rollout_ref.actor.optim.lr"] == 1e-6
    assert log.config["data.train_batch_size"] == 1024
    assert log.config["actor_rollout_ref.actor.kl_loss_type"] == "low_var_kl"
    assert log.config["actor_rollout_ref.rollout.tensor_model_parallel_size"] == 2  # $TP_VALUE


def test_verl_console_tolerates_and_refuses(tmp_path):
    p = tmp_path / "v.log"
    p.write_text("noise line\n(main_task pid=7) step:1 - critic/score/mean:np.float64(0.5) - a:1\n"
                 "step:2 - critic/score/mean:nan - a:2\n"
                 "step:2 - critic/score/mean:0.7 - a:3\n"
                 "step:3 - critic/score/mean:0.8 - a:4 - b:0.12")  # cut off, no newline
    log = read_log(p)
    s, v = log.series("critic/score/mean")
    assert list(s) == [1, 2, 3] and list(v) == [0.5, 0.7, 0.8]
    assert list(log.series("a")[1]) == [1, 3, 4]  # duplicated step 2: last kept
    assert "b" not in log.metrics  # incomplete last entry dropped
    assert any("duplicated" in w for w in log.warnings)
    assert any("cut off" in w for w in log.warnings)
    bad = tmp_path / "bad.log"
    bad.write_text("step:1 - critic/score/mean:0.5\nstep:2 - critic/score/mean:oops\nstep:3 - x:1\n")
    with pytest.raises(LogFormatError, match=r"bad.log line 2: .*oops"):
        read_log(bad)


def _trl_state():
    hist = []
    for s in range(1, 21):
        hist.append({"step": s, "reward": 0.2 + 0.03 * s, "reward_std": 0.4,
                     "frac_reward_zero_std": 0.1, "entropy": 1.0 - 0.02 * s, "kl": 0.001 * s,
                     "clip_ratio/region_mean": 0.0, "completions/mean_length": 100 + s})
        if s % 5 == 0:
            hist.append({"step": s, "eval_reward": 0.3 + 0.01 * s, "eval_loss": 1.0})
    hist.append({"train_runtime": 12.0})  # summary entry, no step
    hist[3]["reward"] = float("nan")
    return {"global_step": 20, "max_steps": 20, "log_history": hist}


def test_trl_trainer_state(tmp_path):
    p = tmp_path / "trainer_state.json"
    p.write_text(json.dumps(_trl_state()))
    assert detect_format(p) == "trl"
    log = read_log(tmp_path)  # a checkpoint folder works too
    assert log.format == "trl" and log.reward_metric() == "reward"
    s, v = log.series("reward")
    assert s.size == 19 and 4 not in s  # the NaN at step 4 is dropped
    assert v[0] == pytest.approx(0.23)
    assert log.role("val_reward") == "eval_reward"
    assert list(log.series("eval_reward")[0]) == [5, 10, 15, 20]
    assert log.role("zero_var_frac") == "frac_reward_zero_std"
    assert any("without a numeric 'step'" in w for w in log.warnings)


def test_trl_reads_the_grpo_config_saved_next_to_the_state(tmp_path, capsys):
    """TRL's trainer state has no num_generations; a GRPOConfig saved next to it as
    config.json (the lab's runs) gives diagnose its G and check-config --from-log its
    optimizer; a checkpoint's model config.json is left alone; an unreadable one is named.
    TRL's train-end entry repeats the epoch of the last step: no duplicate warning."""
    from grpo_theory.runs.check_config import stiffness_from_log
    from grpo_theory.runs.diagnostics import diagnose

    state = _trl_state()
    state["log_history"].append({"step": 20, "epoch": 1.0, "train_loss": 0.1})
    next(e for e in state["log_history"] if e.get("step") == 20 and "reward" in e)["epoch"] = 1.0
    (tmp_path / "trainer_state.json").write_text(json.dumps(state))
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "gpt2", "n_embd": 32}))
    log = read_log(tmp_path)
    assert "num_generations" not in log.config and log.config["global_step"] == 20
    assert not any("duplicated" in w for w in log.warnings)
    assert diagnose(log).group_size is None
    (tmp_path / "config.json").write_text(json.dumps(
        {"num_generations": 4, "learning_rate": 0.01, "optim": "sgd",
         "optim_args": "momentum=0.5", "steps_per_generation": 3, "max_steps": 99}))
    log = read_log(tmp_path)
    assert log.config["num_generations"] == 4 and log.config["max_steps"] == 20   # the state's
    assert diagnose(log).group_size == 4
    k = stiffness_from_log(tmp_path / "trainer_state.json", learning_rate=0.01)
    assert (k["momentum"], k["refresh_interval"]) == (0.5, 3)      # not Adam's 0.9, k = 1
    (tmp_path / "config.json").write_text("{not json")
    log = read_log(tmp_path)
    assert "num_generations" not in log.config
    assert any("config.json: not read as the run's GRPOConfig" in w for w in log.warnings)


def test_trl_malformed(tmp_path):
    p = tmp_path / "trainer_state.json"
    p.write_text('{"log_history": [\n {"step": 1, "reward": 0.1},\n {"step": 2 "reward": 0.2}\n]}')
    with pytest.raises(LogFormatError, match=r"trainer_state.json line 3"):
        read_log(p)


def test_wandb_csv_multi_run(tmp_path):
    p = tmp_path / "export.csv"
    p.write_text(
        '"Step","runA - train/reward","runA - train/reward__MIN","runA - train/reward__MAX",'
        '"runB - train/reward","runB - train/entropy"\n'
        "0,0.1,0.05,0.15,0.2,\n"
        "1,,,,0.25,1.5\n"
        "2,0.3,0.2,0.4,,1.4\n"
        "2,0.35,0.2,0.4,,1.3\n"
        "3,0.4,0.3")  # cut-off last row
    log = read_log(p)
    assert log.format == "wandb" and log.runs == ["runA", "runB"] and log.run == "runA"
    assert any("--run" in w for w in log.warnings)
    assert list(log.series("train/reward")[1]) == [0.1, 0.35]
    assert log.reward_metric() == "train/reward"
    assert list(log.series("train/reward__MIN")[1]) == [0.05, 0.2]
    b = read_log(p, run="runB")
    assert list(b.series("train/reward")[0]) == [0, 1]
    assert list(b.series("train/entropy")[1]) == [1.5, 1.3]
    with pytest.raises(ParameterError, match="run must be one of 'runA', 'runB'"):
        read_log(p, run="runC")


def test_generic_csv_and_jsonl(tmp_path):
    c = tmp_path / "log.csv"
    c.write_text("iter,acc,note\n0,0.1,a\n1,0.2,b\n2,,c\n3,0.4,d\n")
    log = read_log(c, rename={"acc": "reward"})
    assert log.format == "csv" and list(log.series("reward")[1]) == [0.1, 0.2, 0.4]
    j = tmp_path / "log.jsonl"
    j.write_text('{"step": 0, "reward": 0.1}\n{"step": 1, "reward": 0.2, "nested": {"x": 1}}\n'
                 '{"step": 2, "rew')
    log = read_log(j)
    assert log.format == "jsonl" and list(log.series("reward")[1]) == [0.1, 0.2]
    assert log.series("nested/x")[1][0] == 1
    assert any("line 3" in w for w in log.warnings)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"step": 0, "reward": 0.1}\n{oops}\n{"step": 2, "reward": 0.3}\n')
    with pytest.raises(LogFormatError, match=r"bad.jsonl line 2"):
        read_log(bad)
    nostep = tmp_path / "nostep.csv"
    nostep.write_text("a,b\n1,2\n")
    with pytest.raises(LogFormatError, match=r"nostep.csv line 1: no step column"):
        read_log(nostep)


def test_verl_jsonl(tmp_path):
    p = tmp_path / "metrics.jsonl"
    p.write_text("\n".join(json.dumps({"step": s, "data": {"critic/score/mean": 0.1 * s,
                                                           "actor/entropy": 1.0 / s}})
                           for s in range(1, 6)) + "\n")
    log = read_log(p)
    assert log.format == "verl-jsonl" and log.reward_metric() == "critic/score/mean"
    assert log.series("critic/score/mean")[1][-1] == pytest.approx(0.5)
    assert log.role("entropy") == "actor/entropy"


def test_from_simulation():
    class Result:
        reward = np.array([[0.1, 0.2, 0.3], [0.5, 0.6, 0.7]])
        zero_var_frac = np.array([[0.5, 0.4, math.nan], [0.1, 0.1, math.nan]])
        config = {"group_size": 4, "learning_rate": 0.1}

    log = from_simulation(Result(), run=1)
    assert list(log.series("reward")[1]) == [0.5, 0.6, 0.7]
    assert log.series("frac_reward_zero_std")[1].size == 2
    assert log.config["group_size"] == 4
    with pytest.raises(ParameterError):
        from_simulation(Result(), run=2)


def test_cli_bad_log_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"step": 0, "reward": 0.1}\n{oops}\n{"step": 2, "reward": 0.3}\n')
    assert main(["diagnose", str(bad), "--json"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "bad.jsonl line 2" in err[0]
    assert main(["fit", str(tmp_path / "missing.log")]) == 2


def test_tensorboard_event_file(tmp_path):
    # an event file written with tensorboard's own writer and protos (independent of the reader)
    pytest.importorskip("tensorboard")
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import Summary
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    from grpo_theory.runs.logs import read_log

    w = EventFileWriter(str(tmp_path))
    for step in range(12):
        summ = Summary(value=[Summary.Value(tag="train/reward", simple_value=0.1 * step / 11),
                              Summary.Value(tag="train/entropy", simple_value=1.0 - 0.05 * step)])
        w.add_event(Event(step=step, wall_time=1.0 + step, summary=summ))
    w.close()
    log = read_log(tmp_path)  # the folder: its newest event file
    assert log.format == "tensorboard"
    steps, reward = log.series("train/reward")
    assert steps.tolist() == list(range(12))
    assert reward[-1] == pytest.approx(0.1, rel=1e-6)
    assert log.role("entropy") == "train/entropy"


def test_wandb_csv_with_train_global_step(tmp_path):
    """A W&B export whose step column is TRL's `train/global_step` is read as W&B."""
    path = tmp_path / "export.csv"
    path.write_text("train/global_step,run-a - train/reward\n1,0.1\n2,0.2\n3,0.3\n")
    log = read_log(path)
    assert log.format == "wandb"
    steps, values = log.series(log.reward_metric())
    assert steps.tolist() == [1.0, 2.0, 3.0] and values.tolist() == [0.1, 0.2, 0.3]


def test_long_csv_one_row_per_metric_is_pivoted(tmp_path):
    """Newcomer pass: a W&B/pandas long export (run_name,metric,step,value) read as one metric
    called 'value'."""
    from grpo_theory.runs.logs import read_log
    from grpo_theory.validate import ParameterError

    rows = ["run_name,metric,step,value"]
    for run, scale in (("a", 1.0), ("b", 2.0)):
        for s in range(5):
            rows += [f"{run},reward,{s},{scale * 0.1 * s}", f"{run},entropy,{s},{scale}"]
    p = tmp_path / "long.csv"
    p.write_text("\n".join(rows) + "\n")
    log = read_log(p)
    assert set(log.names) == {"reward", "entropy"} and log.runs == ["a", "b"] and log.run == "a"
    assert any("2 runs" in w for w in log.warnings)
    _, r = log.series("reward")
    assert list(r) == pytest.approx([0.0, 0.1, 0.2, 0.3, 0.4])
    _, rb = read_log(p, run="b").series("reward")
    assert list(rb) == pytest.approx([0.0, 0.2, 0.4, 0.6, 0.8])
    with pytest.raises(ParameterError, match="one of 'a', 'b'"):
        read_log(p, run="c")


def test_a_bare_carriage_return_is_a_line_break_in_every_text_reader(tmp_path, capsys):
    """Tester report A1: a tqdm redraw (`\\r` inside a line) crashed the CSV reader with
    `_csv.Error: new-line character seen in unquoted field` (a traceback, exit 1). A redraw is
    its own line, numbered as the file's line it sits on: it parses, or is refused/skipped as
    the format says; a `\\r\\n` ending is one line end."""
    cr = tmp_path / "cr.csv"
    cr.write_bytes(b"step,reward\n1,0.1\n2,0.2\rprogress 3%\n3,0.3\n")
    with pytest.raises(LogFormatError, match=r"cr.csv line 3: 1 cells, the header has 2"):
        read_log(cr)
    assert main(["fit", str(cr)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1 and "cr.csv line 3" in err
    ok = tmp_path / "ok.csv"
    ok.write_bytes(b"step,reward\r\n1,0.1\r2,0.2\r\n3,0.3\r\n")
    assert list(read_log(ok).series("reward")[1]) == [0.1, 0.2, 0.3]
    j = tmp_path / "log.jsonl"
    j.write_bytes(b'{"step": 1, "reward": 0.1}\r{"step": 2, "reward": 0.2}\r\n{"step": 3, "reward": 0.3}\n')
    assert list(read_log(j).series("reward")[0]) == [1, 2, 3]
    v = tmp_path / "v.log"
    v.write_bytes(b"step:1 - critic/score/mean:0.5\r 10%|#    | 1/10 [00:01<00:09]\n"
                  b"step:2 - critic/score/mean:0.6\n")
    assert list(read_log(v).series("critic/score/mean")[1]) == [0.5, 0.6]


def test_a_csv_error_is_a_log_format_error_naming_the_line(tmp_path, capsys):
    """Whatever the csv module refuses (here a cell above its field size limit) is one line
    naming the file and line, exit 2, never a traceback."""
    p = tmp_path / "big.csv"
    p.write_text("step,reward\n1,0.1\n2," + "9" * 200_000 + "\n3,0.3\n")
    with pytest.raises(LogFormatError, match=r"big.csv line 3: .*field"):
        read_log(p)
    assert main(["diagnose", str(p)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1 and "big.csv line 3" in err


def test_duplicated_steps_mean_in_step_order_and_last_value_where_steps_go_back(tmp_path):
    """Tester report B6: a log with one row per prompt group (4 rows a step, steps in order) kept
    the last group's value, dropping 3/4 of the data. One rule: where a metric's steps never go
    back and every step is logged more than once, a step's value is the mean of its rows; where
    the steps go back (a resumed run rewrites them) the last value logged is kept."""
    rewards = {s: [0.1 * s, 0.1 * s + 0.2, 0.1 * s + 0.4, 0.1 * s + 0.6] for s in range(6)}
    grouped = tmp_path / "groups.jsonl"
    lines = []
    for s in range(6):
        lines += [json.dumps({"step": s, "mean_reward": r, "bank": 3}) for r in rewards[s]]
        if s % 3 == 2:
            lines.append(json.dumps({"step": s, "val_reward": 0.5}))
    grouped.write_text("\n".join(lines) + "\n")
    log = read_log(grouped)
    steps, r = log.series("mean_reward")
    assert list(steps) == list(range(6))
    assert list(r) == pytest.approx([0.1 * s + 0.3 for s in range(6)])
    assert list(log.series("bank")[1]) == [3] * 6 and list(log.series("val_reward")[0]) == [2, 5]
    (w,) = log.warnings
    assert "mean of its rows" in w and "4 rows" in w and "last value" not in w

    # the same rows, but the run restarted: steps 0..5 written, then 0..5 again
    resumed = tmp_path / "resumed.jsonl"
    resumed.write_text("\n".join(json.dumps({"step": s, "mean_reward": rewards[s][k]})
                                 for k in (0, 3) for s in range(6)) + "\n")
    log = read_log(resumed)
    assert list(log.series("mean_reward")[1]) == pytest.approx([rewards[s][3] for s in range(6)])
    (w,) = log.warnings
    assert "last value" in w and "go back" in w and "line 7" in w and "mean of" not in w


def test_a_json_array_of_per_step_objects_is_read_as_jsonl(tmp_path, capsys):
    """Tester report C14: `[{"step": 1, "mean_reward": 0.3, ...}, ...]` (a script's json.dump of
    its per-step records) was 'format not recognized'. It is the same data as one object per
    line, read by the same reader, with the file line of each object in the messages."""
    recs = [{"step": s, "mean_reward": 0.2 + 0.05 * s - 0.002 * s * s, "tag": "run",
             "stats": {"kl": 0.001 * s}} for s in range(1, 13)]
    recs[4]["mean_reward"] = "skipped"
    arr = tmp_path / "step_stats.json"
    arr.write_text(json.dumps(recs, indent=2))
    jl = tmp_path / "step_stats.jsonl"
    jl.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    assert detect_format(arr) == "jsonl"
    a, b = read_log(arr), read_log(jl)
    assert a.format == b.format == "jsonl" and a.names == b.names == ["mean_reward", "stats/kl"]
    for name in a.names:
        assert a.series(name)[0].tolist() == b.series(name)[0].tolist()
        assert a.series(name)[1].tolist() == b.series(name)[1].tolist()
    assert a.text_columns.keys() == {"tag"}
    (w,) = a.warnings                                 # the line the 5th object starts on
    fifth = [i for i, line in enumerate(arr.read_text().split("\n"), 1) if line == "  {"][4]
    assert "1 of 12" in w and f"line {fifth}:" in w
    assert main(["fit", str(arr), "--models", "exponential"]) == 0
    assert "11 points" in capsys.readouterr().out     # the text value is no point
    bad = tmp_path / "bad.json"
    bad.write_text('[\n {"step": 1, "reward": 0.1},\n {"step": 2 "reward": 0.2},\n {"step": 3}\n]\n')
    with pytest.raises(LogFormatError, match=r"bad.json line 3: not valid JSON"):
        read_log(bad)
    cut = tmp_path / "cut.json"                       # written while being read: a cut-off end
    cut.write_text('[\n {"step": 1, "reward": 0.1},\n {"step": 2, "reward": 0.2},\n {"step": 3, "rew')
    log = read_log(cut)
    assert log.series("reward")[0].tolist() == [1, 2] and any("line 4" in w for w in log.warnings)


def test_write_trl_prefix_keeps_the_first_fraction_and_the_config(tmp_path):
    import json as _json
    from pathlib import Path as _Path

    from grpo_theory.runs.logs import read_log
    from grpo_theory.runs.logs.trl import write_trl_prefix

    run = _Path(__file__).resolve().parents[2] / "benchmarks" / "lab_runs" / "lab_stable_refresh_s0"
    out = write_trl_prefix(run, 0.2, tmp_path / "p")
    full = _json.loads((run / "trainer_state.json").read_text())["log_history"]
    last = max(e.get("step", 0) for e in full)
    kept = _json.loads(_Path(out).read_text())["log_history"]
    assert kept == [e for e in full if e.get("step", 0) <= 0.2 * last] and len(kept) < len(full)
    assert (tmp_path / "p" / "config.json").read_text() == (run / "config.json").read_text()
    log = read_log(out)
    assert log.series("entropy")[0].max() <= 0.2 * last
    assert log.config.get("num_generations") == 8          # the saved GRPOConfig is read
