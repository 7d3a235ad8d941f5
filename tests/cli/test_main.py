"""The CLI core: one-line errors with exit 2, quiet closed pipes, --help with defaults."""

import json
import os
import subprocess
import sys
import time

import pytest

from grpo_theory.cli import main
from grpo_theory.cli.main import COMMAND_MODULES, build_parser



def _run(*args, stdin=None):
    return subprocess.run([sys.executable, "-m", "grpo_theory", *args], capture_output=True,
                          text=True, timeout=300)


def test_closed_pipe_ends_quietly():
    # `grpo-theory derive --only oscillator --json | head -1`
    # block-buffered stdout (no PYTHONUNBUFFERED), where the pipe error comes at the last flush
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    proc = subprocess.Popen([sys.executable, "-m", "grpo_theory", "derive", "--only",
                             "oscillator", "--json"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env)
    first = proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=300) == 0
    assert first.strip() == b"{"
    assert "Traceback" not in err and "BrokenPipe" not in err


@pytest.mark.parametrize("target", ["file", "unwritable"])
def test_output_directory_errors_are_one_line(tmp_path, target):
    path = tmp_path / "afile"
    path.write_text("keep me")
    out = str(path) if target == "file" else "/proc/no/such/dir"
    proc = _run("derive", "--only", "oscillator", "--out", out)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("grpo-theory derive: error: --out must be")
    assert path.read_text() == "keep me"


def test_derive_one_chapter_json(capsys):
    assert main(["derive", "--only", "oscillator", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["chapters"] == ["oscillator"] and out["all_verified"] is True
    assert all(r["name"].startswith("oscillator.") for r in out["results"])


def test_unknown_chapter(capsys):
    assert main(["derive", "--only", "nope"]) == 2
    assert "chapter must be one of" in capsys.readouterr().err


def test_help_shows_defaults():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    texts = [p.format_help() for p in sub.choices.values()]
    assert len(texts) == len(COMMAND_MODULES)
    assert any("(default:" in t for t in texts)
    assert not any("THEORY.md" in t for t in texts)


def test_every_command_is_one_library_call():
    import importlib

    for name in COMMAND_MODULES:
        mod = importlib.import_module(f"grpo_theory.cli.{name}")
        assert callable(getattr(mod, "call", None)), f"{name} has no call(args) -> Result"


def test_no_command_prints_help_and_exits_2(capsys):
    """Issue 21 item 12: `grpo-theory` alone exited 0."""
    assert main([]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("usage: grpo-theory") and "COMMAND" in err


def test_trajectory_times_by_spaces_or_commas(capsys):
    """Issue 21 item 11: `--times` read like a list but took only a comma-separated string."""
    base = ["trajectory", "--mass", "1", "--damping", "0.5", "--spring", "0.1", "--x0", "1"]
    assert main(base + ["--times", "0,1,2.5"]) == 0
    commas = capsys.readouterr().out
    assert main(base + ["--times", "0", "1", "2.5"]) == 0
    assert capsys.readouterr().out == commas and "2.5" in commas
    assert main(base + ["--times", "0", "-1"]) == 2
    assert "times must be" in capsys.readouterr().err


def test_report_command_is_one_call_of_build_report(monkeypatch, tmp_path, capsys):
    """The command's wiring (the report itself is built and checked in tests/report)."""
    import grpo_theory.report.build as B

    seen = {}

    def fake(out_dir, **kw):
        seen.update(out=out_dir, **kw)
        return B.ReportResult(out_dir=tmp_path)

    monkeypatch.setattr(B, "build_report", fake)
    assert main(["report", "--out", str(tmp_path), "--full", "--no-crosscheck"]) == 0
    # built in a temporary sibling of DIR, moved into place at the end (issue 29 item 4)
    out = seen.pop("out")
    assert out.parent == tmp_path.parent and out.name.startswith(f".{tmp_path.name}.")
    assert seen.pop("started") <= time.perf_counter()      # the derivations' start, counted in
    assert seen == {"full": True, "crosscheck": False} and not out.exists()
    assert f"report written to {tmp_path} " in capsys.readouterr().out


@pytest.mark.parametrize("name", COMMAND_MODULES)
def test_ctrl_c_in_any_command_is_one_line_and_exit_130(name, monkeypatch, capsys):
    """Issue 29 item 5: Ctrl-C printed a KeyboardInterrupt traceback (except in `watch`)."""
    import importlib

    mod = importlib.import_module(f"grpo_theory.cli.{name}")

    def interrupted(args):
        print("partial output", flush=True)
        raise KeyboardInterrupt

    monkeypatch.setattr(mod, "call", interrupted)
    argv = {"report": ["--out", "x"], "compare": ["a", "b", "--by", "group_size"],
            "trajectory": ["--mass", "1", "--damping", "1", "--spring", "1", "--x0", "1",
                           "--times", "1"], "fit": ["log"], "diagnose": ["log"],
            "watch": ["log"], "check_config": ["config"]}.get(name, [])
    assert main([mod.NAME, *argv]) == 130
    out, err = capsys.readouterr()
    assert err == f"grpo-theory {mod.NAME}: interrupted\n", err


TRAJ = ["trajectory", "--spring", "1", "--x0", "1", "--v0", "0"]


@pytest.mark.parametrize("argv,code,named", [
    (["stability", "--learning-rate", "1e308"], 2, "learning_rate must be"),   # LinAlgError
    (["stability", "--learning-rate", "1e-308"], 2, "learning_rate must be"),  # OverflowError
    (["stability", "--kl-coef", "1e308"], 2, "learning_rate must be"),         # LinAlgError
    (["stability", "--stiffness", "1e200"], 2, "learning_rate must be"),       # printed inf
    (["stability", "--stiffness", "1", "--fresh-fraction", "1e18"], 2, "learning_rate must be"),
    (["stability", "--optimizer", "adam", "--learning-rate", "1e308"], 2, "learning_rate must be"),
    (["stability", "--group-size", "1e18"], 2, "group_size must be an integer in [2, 1000000]"),
    (["stability", "--refresh-interval", "1e18"], 2, "refresh_interval must be an integer in"),
    (["stability", "--lag-model", "delay", "--delay", "1e4"], 2, "delay must be an integer in"),
    (["fixed-points", "--group-size", "1e9"], 2, "group_size must be"),        # ran for minutes
    (["collapse-risk", "--prompts", "1e308"], 2, "prompts must be an integer in [1, 2^53]"),
    (["collapse-risk", "--degenerate-level", "1e-308"], 2, "degenerate_level must be"),
    (["collapse-risk", "--kl-coef", "1e308"], 1, "collapse risk: n/a (the drift or the update"),
    (["collapse-risk", "--group-size", "1e6"], 2, "group_size must be small enough to fit in "
                                                  "memory"),
    (TRAJ + ["--mass", "1e308", "--damping", "1", "--times", "10"], 2, "mass must be"),   # nan
    (TRAJ + ["--mass", "1", "--damping", "1e308", "--times", "10"], 2, "damping must be"),
    (TRAJ + ["--mass", "1", "--damping", "-1", "--times", "1e6"], 2, "times must be"),  # -inf
])
def test_huge_and_tiny_values_are_one_line_or_a_finite_answer(argv, code, named, capsys):
    """Issue 29 item 5: numeric overflow was a traceback (LinAlgError, OverflowError), a
    timeout, or nan/inf in the output; now one line naming the parameter, or the model's
    reason for declining, with no RuntimeWarning."""
    assert main(argv) == code
    out, err = capsys.readouterr()
    text = err if code == 2 else out
    assert named in text and "Traceback" not in err and "Warning" not in err, (out, err)
    if code == 2:
        assert out == "" and len(err.strip().splitlines()) == 1
    else:
        assert err == ""


def test_sizes_are_checked_before_work(capsys, monkeypatch):
    """Issue 29 item 6: `simulate --steps 1e9 --runs 1e9` was killed for memory after 30 s."""
    import grpo_theory.simulation.kernels as kernels
    import grpo_theory.validate as validate

    def no_work(*args, **kwargs):
        raise AssertionError("the simulation started before its size was checked")

    monkeypatch.setattr(kernels, "run", no_work)
    monkeypatch.setattr(validate, "memory_limit", lambda: (8 << 30, "a test's 8 GiB"))
    for argv, name in [(["--steps", "1e9", "--runs", "1e9"], "steps"),
                       (["--steps", "10", "--runs", "1e12"], "runs"),
                       (["--prompts", "1e9"], "prompts"),
                       (["--steps", "1e7", "--runs", "1", "--json"], "steps")]:
        assert main(["simulate", *argv]) == 2
        out, err = capsys.readouterr()
        assert out == "" and len(err.strip().splitlines()) == 1, err
        assert err.startswith(f"grpo-theory simulate: error: {name} must be small enough to fit "
                              "in memory: this needs about ") and "over the limit of 8 GiB" in err
    # the lab's refresh intervals: the model's bound, before TRL is even imported
    assert main(["lab", "--quick", "--refresh-intervals", "4", "1e9"]) == 2
    assert "refresh_interval must be an integer in [1, 10000]" in capsys.readouterr().err
    # the same steps without the JSON text (about 1.3 GB) fit: the work starts
    with pytest.raises(AssertionError, match="size was checked"):
        main(["simulate", "--steps", "1e7", "--runs", "1"])


def test_a_missing_optional_extra_exits_1_naming_the_extra(monkeypatch, capsys, tmp_path):
    """Issue 29 item 23: `deepnet --quick` and `lab --quick` without their extras exited 2, the
    bad-input code; a missing optional dependency is exit 1 with one line naming the extra
    (bad input stays 2)."""
    import builtins
    import importlib

    import grpo_theory.lab._deps as deps

    real_import, real_module = builtins.__import__, importlib.import_module

    def no_torch(name, *a, **k):
        if name == "torch" or name.startswith("torch."):
            raise ImportError("No module named 'torch'")
        return real_import(name, *a, **k)

    def no_trl(name, *a, **k):
        if name == "trl":
            raise ImportError("No module named 'trl'")
        return real_module(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_torch)
    assert main(["deepnet", "--quick"]) == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "pip install 'grpo-theory[deepnet]'" in err
    monkeypatch.setattr(builtins, "__import__", real_import)
    monkeypatch.setattr(deps.importlib, "import_module", no_trl)
    assert main(["lab", "--quick"]) == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "pip install 'grpo-theory[lab]'" in err
    assert "trl is missing" in err
    assert main(["lab", "--quick", "--seed", "-1"]) == 2      # bad input: still 2
    assert "seed" in capsys.readouterr().err
    # TensorBoard event files without the tensorboard extra: the same rule
    ev = tmp_path / "events.out.tfevents.1.host"
    ev.write_bytes(b"\0")

    def no_tb(name, *a, **k):
        if name.startswith("tensorboard"):
            raise ImportError("No module named 'tensorboard'")
        return real_import(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_tb)
    assert main(["fit", str(ev)]) == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "pip install 'grpo-theory[tensorboard]'" in err


@pytest.mark.parametrize("command", ["fit", "diagnose"])
def test_a_missing_log_is_named_as_missing_not_as_none(command, capsys):
    """Newcomer pass: `fit` and `diagnose` with no LOG said `LOG must be a log file ...,
    got None`, as if None had been typed."""
    assert main([command]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("LOG is required: a log file, or --example for the bundled real log"), err
    assert "None" not in err and len(err.splitlines()) == 1


def test_ctrl_c_during_the_first_imports_is_one_line(monkeypatch, capsys):
    """The console script imports the command line inside its Ctrl-C handling: an interrupt
    while numpy is being imported (before cli.main can catch it) is one line and exit 130."""
    import sys

    from grpo_theory import _console

    class Interrupting:
        def find_spec(self, name, path=None, target=None):
            if name == "grpo_theory.cli.main":
                raise KeyboardInterrupt
            return None

    monkeypatch.delitem(sys.modules, "grpo_theory.cli.main")
    monkeypatch.setattr(sys, "meta_path", [Interrupting(), *sys.meta_path])
    assert _console.main() == 130
    assert capsys.readouterr().err == "grpo-theory: interrupted\n"
