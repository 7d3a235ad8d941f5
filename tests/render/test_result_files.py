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
