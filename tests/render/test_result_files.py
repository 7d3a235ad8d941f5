"""One .tex file per result and one notation-macros file, so that a researcher's own article can
``\\input`` any result: a minimal article that inputs three results compiles with pdflatex."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from grpo_theory.render import latex as L
from grpo_theory.render.notation import NOTATION
from grpo_theory.theory.derived import get

THREE = ("discrete.refresh_flip_threshold", "drift.F_std_k3_ratio_G", "fixed_points.mroueh_agreement")


def test_macros_are_one_per_symbol_and_letters_only():
    text = L.notation_macros()
    macros = re.findall(r"\\providecommand\{\\(grpo\w*)\}", text)
    assert len(macros) == len(set(macros)) == len(NOTATION) + 3
    assert all(re.fullmatch(r"grpo[A-Za-z]+", m) for m in macros)


def test_a_minimal_article_inputs_three_results(tmp_path):
    if not shutil.which("pdflatex"):
        pytest.skip("no pdflatex on this machine")
    folder = L.write_result_files(tmp_path, names=THREE)
    assert {p.name for p in folder.iterdir()} == {L.NOTATION_FILE, "references.bib",
                                                  *(L.result_file_name(n) for n in THREE)}
    body = "\n".join(f"\\input{{{L.RESULTS_DIR}/{L.result_file_name(n)}}}" for n in THREE)
    (tmp_path / "paper.tex").write_text(
        "\\documentclass{article}\n\\usepackage{amsmath,amssymb}\n"
        f"\\input{{{L.RESULTS_DIR}/{L.NOTATION_FILE}}}\n"
        "\\begin{document}\nOur own text, with $\\grpopref$ and $\\grpoKf$.\n" + body
        + "\nBy \\eqref{" + get(THREE[0]).label + "} the threshold is exact.\n"
        "\\bibliographystyle{plain}\\bibliography{" + L.RESULTS_DIR + "/references}\n"
        "\\end{document}\n")
    for _ in range(2):
        proc = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "paper.tex"],
                              cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stdout[-3000:]
    aux = (tmp_path / "paper.aux").read_text()
    for n in THREE:                                   # each equation is labelled and numbered
        assert f"\\newlabel{{{get(n).label}}}" in aux
    assert "(1)" in subprocess.run(["pdftotext", "paper.pdf", "-"], cwd=tmp_path, capture_output=True,
                                   text=True).stdout if shutil.which("pdftotext") else True


def test_the_parts_prepared_ahead_write_the_same_files(tmp_path):
    """The report computes the records' parts of equations.tex and the result files while its
    figures are drawn (prepare_equations) and passes them to write_equations: the same files as
    write_equations computing them itself, a chapter's extra text after its introduction and
    before its results."""
    names = [n for n in L.all_names() if n.split(".")[0] in ("discrete", "fixed_points")][:12]
    extras = {"fixed_points": "EXTRA TEXT OF THE CHAPTER"}
    L.write_equations(tmp_path / "a", compile_pdf=False, names=names, chapter_extras=extras)
    prepared = L.prepare_equations(tmp_path / "b", names)
    L.write_equations(tmp_path / "b", compile_pdf=False, names=names, chapter_extras=extras,
                      prepared=prepared)
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(tmp_path / "b") for p in (tmp_path / "b").rglob("*") if p.is_file())
    assert all((tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes() for f in files)
    doc = (tmp_path / "b" / "equations.tex").read_text()
    first = next(n for n in L.document_order(names) if n.startswith("fixed_points."))
    assert doc.index("EXTRA TEXT OF THE CHAPTER") < doc.index("\\label{" + L.tex_label(get(first).label))
