"""watch: warnings fire as a log grows, once per detector, at the poll after the data arrives."""

import json

import numpy as np

from grpo_theory.cli.main import main
from grpo_theory.runs.watch import watch


def _write(path, steps, reward):
    path.write_text("step,reward\n" + "".join(f"{s:g},{r:.6f}\n" for s, r in zip(steps, reward)))


def _collapse_curve():
    # rise to 0.6 over 40 steps, then a fall to 0.05 over the next 40
    rng = np.random.default_rng(0)
    r = np.concatenate([np.linspace(0.1, 0.6, 40), np.linspace(0.6, 0.05, 40)])
    return np.arange(80.0), np.clip(r + 0.01 * rng.standard_normal(80), 0, 1)


def test_watch_fires_once_when_the_collapse_arrives(tmp_path):
    steps, r = _collapse_curve()
    log = tmp_path / "run.csv"
    _write(log, steps[:40], r[:40])  # healthy so far
    polls = []

    def grow(_seconds):  # between polls the trainer writes 10 more steps
        n = 40 + 10 * len(polls) + 10
        polls.append(n)
        _write(log, steps[:n], r[:n])

    fired = list(watch(str(log), format="csv", interval=0, max_polls=6, sleep=grow))
    names = [w.detector for w in fired]
    # the collapse detector names the same event as the instability one it is built from
    assert names == ["dynamical_instability", "collapse"]
    w = fired[0]
    # it fired only once the fall was in the log, and names when it first would have fired
    assert w.last_step >= 49 and w.first_step <= w.last_step
    assert "knob" in str(w)


def test_watch_cli_and_no_warning_on_a_healthy_run(tmp_path, capsys):
    log = tmp_path / "ok.csv"
    t = np.arange(80.0)
    _write(log, t, 0.8 - 0.6 * np.exp(-t / 15) + 0.01 * np.random.default_rng(1).standard_normal(80))
    assert main(["watch", str(log), "--format", "csv", "--interval", "0", "--max-polls", "2",
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["warnings"] == []
    assert main(["watch", str(log), "--interval", "-1", "--max-polls", "1"]) == 2


def test_a_missing_log_is_an_error_unless_told_to_wait(tmp_path, capsys):
    """Issue 21 item 5: `watch nosuch.log` printed "0 warning(s)" and exited 0."""
    missing = str(tmp_path / "nosuch.log")
    assert main(["watch", missing, "--max-polls", "1"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1 and "--wait" in err
    # told to wait: it polls; if the log never comes, it says no check ran (exit 1, not "0 warnings")
    assert main(["watch", missing, "--wait", "--interval", "0", "--max-polls", "2"]) == 1
    out = capsys.readouterr().out
    assert "no check ran" in out and "0 warning" not in out


def test_wait_picks_up_a_log_that_appears(tmp_path):
    log = tmp_path / "late.csv"
    steps, r = _collapse_curve()
    state = {}

    def appear(_seconds):
        _write(log, steps, r)

    fired = list(watch(str(log), format="csv", interval=0, max_polls=2, sleep=appear, wait=True,
                       state=state))
    assert state == {"polls": 2, "reads": 1}
    assert [w.detector for w in fired] == ["dynamical_instability", "collapse"]


def test_watch_renames_a_column_as_diagnose_does(tmp_path, capsys):
    # issue 29 item 13: `watch` had no --rename (a log whose reward is `acc` could not be watched)
    steps, r = _collapse_curve()
    log = tmp_path / "acc.csv"
    log.write_text("step,acc\n" + "".join(f"{s:g},{v:.6f}\n" for s, v in zip(steps, r)))
    assert main(["watch", str(log), "--rename", "acc=reward", "--interval", "0",
                 "--max-polls", "1", "--json"]) == 0
    names = [w["detector"] for w in json.loads(capsys.readouterr().out)["warnings"]]
    assert "dynamical_instability" in names
    assert main(["watch", str(log), "--rename", "acc", "--max-polls", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--rename" in err and "OLD=NEW" in err


def test_a_binary_file_is_refused_as_diagnose_refuses_it(tmp_path, capsys):
    """watch waited on a binary file and ended "did not appear" (exit 1) where diagnose says
    "format not recognized" (exit 2); issue 29.  A binary file never becomes a text log."""
    path = tmp_path / "model.bin"
    path.write_bytes(bytes(range(256)) * 16)
    assert main(["diagnose", str(path)]) == 2
    said = capsys.readouterr().err.strip()
    assert main(["watch", str(path), "--max-polls", "3", "--interval", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "format not recognized" in err
    assert err.split(": error: ")[1] == said.split(": error: ")[1]
