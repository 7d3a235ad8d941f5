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


# ----------------------------------------------------------------------------------------
# issue 29 items 4 and 5: outputs are atomic; Ctrl-C and pdflatex failures are one line
# ----------------------------------------------------------------------------------------

FAKE_PDFLATEX = """#!/bin/sh
echo 'This is a fake pdflatex' > equations.log
echo '! Missing $ inserted.' >> equations.log
echo 'aux' > equations.aux
echo '! Missing $ inserted.'
exit 1
"""


@pytest.fixture
def failing_pdflatex(tmp_path_factory, monkeypatch):
    """A pdflatex on PATH that fails as the real one does on bad LaTeX (and leaves its log)."""
    import os

    bindir = tmp_path_factory.mktemp("bin")
    exe = bindir / "pdflatex"
    exe.write_text(FAKE_PDFLATEX)
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")


def _interrupted(capsys, command):
    out, err = capsys.readouterr()
    assert err == f"grpo-theory {command}: interrupted\n", err
    assert "Traceback" not in out


def _fake_report(interrupt=False, pdflatex=False):
    """A report builder that writes a few files (and is interrupted half-way, or runs the real
    equations writer on one cached derivation): no full report is built in these tests."""
    from pathlib import Path

    import grpo_theory.report.build as build
    from grpo_theory.theory.derived import all_names, get

    def fake(out_dir, **kwargs):
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        (out / "phase_diagram_k.png").write_text("figure")
        if interrupt:
            raise KeyboardInterrupt
        files, nums = {}, {}
        if pdflatex:
            name = next(n for n in all_names() if n.startswith("oscillator."))
            files = build._write_equations(out, {name: get(name)}, [], errors=nums)
        (out / "report.md").write_text("new report")
        files["report.md"] = out / "report.md"
        return build.ReportResult(out_dir=out, files=files, numbers=nums)

    return fake


def test_an_interrupted_report_leaves_nothing_and_the_rerun_needs_no_force(tmp_path, capsys,
                                                                           monkeypatch):
    import grpo_theory.report.build as build

    out = tmp_path / "rep"
    monkeypatch.setattr(build, "build_report", _fake_report(interrupt=True))
    assert main(["report", "--out", str(out)]) == 130
    _interrupted(capsys, "report")
    assert list(tmp_path.iterdir()) == []          # no half-written report/, no temporary
    monkeypatch.setattr(build, "build_report", _fake_report())
    assert main(["report", "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["phase_diagram_k.png", "report.md"]
    assert f"open {out / 'report.md'}" in capsys.readouterr().out   # the final path, not the temporary


def test_force_replaces_an_earlier_report_whole_and_keeps_the_users_files(tmp_path, capsys,
                                                                          monkeypatch):
    import grpo_theory.report.build as build

    out = tmp_path / "rep"
    out.mkdir()
    for name, text in [("report.md", "earlier"), ("equations.pdf", "earlier pdf"),
                       ("notes.txt", "mine")]:
        (out / name).write_text(text)
    monkeypatch.setattr(build, "build_report", _fake_report(interrupt=True))
    assert main(["report", "--out", str(out), "--force"]) == 130
    assert (out / "report.md").read_text() == "earlier"          # interrupted: untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rep"]
    monkeypatch.setattr(build, "build_report", _fake_report())
    assert main(["report", "--out", str(out), "--force"]) == 0
    assert (out / "report.md").read_text() == "new report"
    # the earlier PDF would now describe another equations.tex: gone; the user's file stays
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt", "phase_diagram_k.png",
                                                     "report.md"]


def test_a_pdflatex_failure_is_one_line_naming_the_log_and_the_report_is_delivered(
        tmp_path, capsys, monkeypatch, failing_pdflatex):
    """Issue 29 item 5: a RuntimeError traceback with 20 lines of pdflatex's output, and a
    half-written report/ (no report.md) that a rerun refused without --force."""
    import grpo_theory.report.build as build

    out = tmp_path / "rep"
    monkeypatch.setattr(build, "build_report", _fake_report(pdflatex=True))
    assert main(["report", "--out", str(out)]) == 1
    stdout, err = capsys.readouterr()
    assert err == ""
    failed = [ln for ln in stdout.splitlines() if "FAILED" in ln]
    assert failed == [f"  FAILED: pdflatex failed on equations.tex: ! Missing $ inserted. "
                      f"(see {out / 'equations.log'})"]
    assert sorted(p.name for p in out.iterdir()) == [
        "equations.log", "equations.tex", "phase_diagram_k.png", "references.bib", "report.md",
        "results"]                       # one .tex per result (write_equations), delivered too
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rep"]


def test_derive_pdflatex_failure_delivers_the_tex_and_names_the_log(tmp_path, capsys,
                                                                    failing_pdflatex):
    out = tmp_path / "eq"
    assert main(["derive", "--only", "oscillator", "--out", str(out)]) == 1
    stdout, err = capsys.readouterr()
    assert err == "" and stdout.splitlines()[-1] == (
        f"pdflatex failed on equations.tex: ! Missing $ inserted. (see {out / 'equations.log'})")
    assert sorted(p.name for p in out.iterdir()) == ["equations.log", "equations.tex",
                                                     "references.bib", "results"]
    assert main(["derive", "--only", "oscillator", "--out", str(out), "--json"]) == 2  # earlier
    capsys.readouterr()


def test_an_interrupted_derive_leaves_nothing(tmp_path, capsys, monkeypatch):
    import grpo_theory.render.latex as latex

    def half_written(out_dir, **kwargs):
        (out_dir / "equations.tex").write_text("\\documentclass")
        raise KeyboardInterrupt

    monkeypatch.setattr(latex, "write_equations", half_written)
    assert main(["derive", "--only", "oscillator", "--no-pdf", "--out",
                 str(tmp_path / "a" / "eq")]) == 130
    _interrupted(capsys, "derive")
    assert list(tmp_path.iterdir()) == []           # not even the parent it created


def test_an_interrupted_simulate_leaves_no_csv(tmp_path, capsys, monkeypatch):
    from grpo_theory.simulation.result import SimulationResult

    real = SimulationResult.per_step

    def rows_then_ctrl_c(self):
        table = real(self)

        def steps():
            yield from table["step"][:2]
            raise KeyboardInterrupt
        return {**table, "step": steps()}

    monkeypatch.setattr(SimulationResult, "per_step", rows_then_ctrl_c)
    out = tmp_path / "sim.csv"
    argv = ["simulate", "--steps", "3", "--runs", "4", "--out", str(out)]
    assert main(argv) == 130
    _interrupted(capsys, "simulate")
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setattr(SimulationResult, "per_step", real)
    assert main(argv) == 0 and out.read_text().startswith("step,")


@pytest.mark.parametrize("command", ["fit", "compare"])
def test_an_interrupted_figure_leaves_no_file(tmp_path, capsys, monkeypatch, command):
    from matplotlib.figure import Figure

    def half_a_png(self, fname, **kwargs):
        with open(fname, "wb") as fh:
            fh.write(b"\x89PNG half")
        raise KeyboardInterrupt

    monkeypatch.setattr(Figure, "savefig", half_a_png)
    fig = tmp_path / "fig.png"
    if command == "fit":
        argv = ["fit", LOG, "--models", "exponential", "--plot", str(fig)]
    else:   # two runs of a family (the example log and its first 80 % of lines)
        lines = open(LOG).read().splitlines(keepends=True)
        short = tmp_path / "short.log"
        short.write_text("".join(lines[: len(lines) * 4 // 5]))
        argv = ["compare", LOG, str(short), "--by", "learning_rate", "--values", "1e-6,2e-6",
                "--plot", str(fig)]
    assert main(argv) == 130
    _interrupted(capsys, command)
    assert sorted(p.name for p in tmp_path.iterdir()) == ([] if command == "fit" else ["short.log"])


def test_an_interrupted_lab_leaves_nothing(tmp_path, capsys, monkeypatch):
    import grpo_theory.lab.run as lab_run

    def half_a_family(root, **kwargs):
        import os

        os.makedirs(os.path.join(root, "group_size", "lab_family_G4_s0"))
        raise KeyboardInterrupt

    monkeypatch.setattr(lab_run, "require_lab", lambda: None)   # no TRL needed
    monkeypatch.setattr(lab_run, "_run_in", half_a_family)
    assert main(["lab", "--quick", "--out", str(tmp_path / "lab")]) == 130
    _interrupted(capsys, "lab")
    assert list(tmp_path.iterdir()) == []


def test_an_interrupted_deepnet_result_leaves_nothing(tmp_path, capsys, monkeypatch):
    import grpo_theory.deepnet as deepnet

    class Half:
        def to_json(self):
            return "{}"

        def __str__(self):          # result.json is written, result.txt is not
            raise KeyboardInterrupt

    monkeypatch.setattr(deepnet, "require_torch", lambda: None)
    monkeypatch.setattr(deepnet, "_run", lambda **kw: Half())
    assert main(["deepnet", "--quick", "--out", str(tmp_path / "dn")]) == 130
    _interrupted(capsys, "deepnet")
    assert list(tmp_path.iterdir()) == []
