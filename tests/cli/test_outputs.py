"""Every output path and format is checked before any work, and an existing output is never
overwritten without --force (issue 21 items 4 and 5): one line, exit 2, nothing written."""

import pytest

from grpo_theory.cli.main import main
from grpo_theory.data import example_log
from grpo_theory.validate import ParameterError, check_output_dir, check_output_file

LOG = str(example_log())


def _no_work(*args, **kwargs):
    raise AssertionError("the work started before the output was checked")


def _argv(command, plot):
    if command == "fit":
        return ["fit", LOG, "--plot", plot]
    return ["compare", LOG, LOG, "--by", "learning_rate", "--values", "1e-6,2e-6", "--plot", plot]


@pytest.fixture
def no_work(monkeypatch):
    import grpo_theory.runs.compare as cmp
    import grpo_theory.runs.fitting as fitting

    monkeypatch.setattr(fitting, "fit_log", _no_work)
    monkeypatch.setattr(cmp, "compare", _no_work)


@pytest.mark.parametrize("command", ["fit", "compare"])
@pytest.mark.parametrize("case,allowed", [("existing.txt", "ending in one of"),
                                          ("noext", "ending in one of"),
                                          ("nodir/x.png", "existing directory"),
                                          ("existing.png", "--force"),
                                          ("adir.png", "directory")])
def test_bad_plot_paths_are_refused_before_any_work(tmp_path, monkeypatch, capsys, no_work,
                                                     command, case, allowed):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "existing.txt").write_text("keep")
    (tmp_path / "existing.png").write_text("keep")
    (tmp_path / "adir.png").mkdir()
    before = sorted(p.name for p in tmp_path.iterdir())
    rc = main(_argv(command, case))
    out, err = capsys.readouterr()
    assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1, (rc, out, err)
    assert err.startswith(f"grpo-theory {command}: error: --plot must be") and allowed in err
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert (tmp_path / "existing.png").read_text() == "keep"


def test_force_overwrites_the_figure(tmp_path, capsys):
    fig = tmp_path / "fit.png"
    fig.write_text("old")
    assert main(["fit", LOG, "--models", "exponential", "--plot", str(fig), "--force"]) == 0
    assert fig.read_bytes().startswith(b"\x89PNG")


def test_helpers(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(ParameterError, match="is a file"):
        check_output_file("out", tmp_path / "f" / "x.csv")
    assert check_output_file("out", tmp_path / "new.csv") == tmp_path / "new.csv"
    assert check_output_file("out", tmp_path / "f", force=True) == tmp_path / "f"
    d = tmp_path / "d"
    d.mkdir()
    (d / "report.md").write_text("earlier")
    with pytest.raises(ParameterError, match="has report.md"):
        check_output_dir("--out", d, writes=("report.md",))
    assert check_output_dir("--out", d, writes=("report.md",), force=True) == d
    assert check_output_dir("--out", d, writes=("other.md",)) == d


def test_example_uses_the_bundled_log_and_prints_its_path(capsys):
    """Issue 21 item 11: the README gives a command that shows where a sample LOG is."""
    assert main(["fit", "--example", "--models", "exponential"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith(LOG + " (verl)")
    assert main(["fit"]) == 2 and "--example" in capsys.readouterr().err
    assert main(["fit", LOG, "--example"]) == 2


def test_derive_and_report_refuse_an_earlier_output_unless_forced(tmp_path, capsys, monkeypatch):
    """Issue 21 item 5: one rule for every command that writes."""
    import grpo_theory.report.build as build

    d = tmp_path / "eq"
    d.mkdir()
    (d / "equations.tex").write_text("earlier")
    assert main(["derive", "--only", "oscillator", "--no-pdf", "--out", str(d)]) == 2
    err = capsys.readouterr().err
    assert "--force" in err and "equations.tex" in err and len(err.strip().splitlines()) == 1
    assert (d / "equations.tex").read_text() == "earlier"
    assert main(["derive", "--only", "oscillator", "--no-pdf", "--out", str(d), "--force"]) == 0
    assert "\\begin{document}" in (d / "equations.tex").read_text()
    capsys.readouterr()

    r = tmp_path / "rep"
    r.mkdir()
    (r / "report.md").write_text("earlier")
    monkeypatch.setattr(build, "build_report", _no_work)
    assert main(["report", "--out", str(r)]) == 2
    assert "report.md" in capsys.readouterr().err and (r / "report.md").read_text() == "earlier"
    with pytest.raises(AssertionError, match="work started"):   # forced: the work starts
        main(["report", "--out", str(r), "--force"])


def test_every_command_that_writes_takes_force():
    """One rule for every command that writes (issue 21 item 5): an option naming an output
    (--out, --plot) comes with --force; `simulate --out` and `deepnet --out` had none."""
    import argparse

    from grpo_theory.cli.main import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    writers = {}
    for name, parser in sub.choices.items():
        flags = {s for a in parser._actions for s in a.option_strings}
        if flags & {"--out", "--plot"}:
            writers[name] = "--force" in flags
    assert set(writers) == {"report", "derive", "simulate", "fit", "compare", "deepnet", "lab"}
    assert all(writers.values()), writers


def test_simulate_refuses_an_existing_out_file_unless_forced(tmp_path, capsys, monkeypatch):
    """Issue 21 item 5: `simulate --out existing.txt` overwrote it silently."""
    import grpo_theory.cli.simulate as sim

    out = tmp_path / "existing.txt"
    out.write_text("keep")
    argv = ["simulate", "--steps", "3", "--runs", "4", "--out", str(out)]
    with monkeypatch.context() as m:
        m.setattr(sim, "simulate", _no_work)
        assert main(argv) == 2
        assert main(["simulate", "--out", str(tmp_path / "nodir" / "s.csv")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and err[0].startswith("grpo-theory simulate: error: --out must be")
    assert "--force" in err[0] and "existing directory" in err[1]
    assert out.read_text() == "keep"
    assert main(argv + ["--force"]) == 0
    assert out.read_text().startswith("step,")


def test_deepnet_refuses_an_earlier_result_before_any_work(tmp_path, capsys, monkeypatch):
    """Issue 21 item 5: `deepnet --out DIR` overwrote result.json/result.txt silently."""
    import grpo_theory.deepnet as deepnet

    monkeypatch.setattr(deepnet, "require_torch", lambda: None)   # the check needs no torch
    monkeypatch.setattr(deepnet, "_run", _no_work)
    (tmp_path / "result.json").write_text("{}")
    assert main(["deepnet", "--quick", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("grpo-theory deepnet: error: --out must be") and "--force" in err
    assert len(err.strip().splitlines()) == 1 and (tmp_path / "result.json").read_text() == "{}"
    (tmp_path / "afile").write_text("x")
    assert main(["deepnet", "--quick", "--out", str(tmp_path / "afile")]) == 2
    assert "existing file" in capsys.readouterr().err
    with pytest.raises(AssertionError, match="work started"):   # forced: the work starts
        main(["deepnet", "--quick", "--out", str(tmp_path), "--force"])
