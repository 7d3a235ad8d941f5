"""The CLI core: one-line errors with exit 2, quiet closed pipes, --help with defaults."""

import json
import os
import subprocess
import sys

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
    assert seen == {"out": str(tmp_path), "full": True, "crosscheck": False}
    assert "report written to" in capsys.readouterr().out


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
