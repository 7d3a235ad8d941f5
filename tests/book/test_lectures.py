"""The lecture book: every lecture executes cleanly (an exception, any stderr output such as
a warning, an ``\\eqref`` without its equation or a label defined twice fails it), and the
build writes an executed notebook and a web page with embedded figures per lecture."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import jupytext
import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("book_build", ROOT / "book" / "build.py")
build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(build)

LECTURES = build.lectures()
FRONT_MATTER = """---
jupytext:
  text_representation:
    format_name: myst
kernelspec:
  name: python3
  display_name: Python 3
---
"""


def quiet(*args, **kwargs):
    pass


def test_the_book_has_the_six_core_lectures_in_order():
    stems = [p.stem for p in LECTURES]
    assert stems[:6] == ["01_update_to_drift", "02_fixed_points", "03_oscillator",
                         "04_stability", "05_group_temperature", "06_real_run"]


@pytest.mark.parametrize("path", LECTURES, ids=[p.stem for p in LECTURES])
def test_lecture_format(path):
    """The documented front matter, a title, and exercises whose answers are asserted."""
    text = path.read_text(encoding="utf-8")
    assert text.startswith(FRONT_MATTER), f"{path.name}: use the front matter of book/README.md"
    nb = jupytext.read(path, fmt="md:myst")
    assert build.title(nb) != "untitled"
    kinds = [(c.cell_type, c.source) for c in nb.cells]
    exercises = [i for i, (kind, src) in enumerate(kinds)
                 if kind == "markdown" and re.search(r"^## Exercises", src, re.MULTILINE)]
    assert exercises, f"{path.name}: a lecture ends with a '## Exercises' section"
    assert any(kind == "code" and "assert " in src for kind, src in kinds[exercises[0]:]), \
        f"{path.name}: every exercise checks the reader's answer with an assert"
    assert not any(kind == "code" and re.search(r"matplotlib\.use|Agg", src) for kind, src in kinds), \
        "lectures show figures inline; do not force a backend"


@pytest.mark.parametrize("path", LECTURES, ids=[p.stem for p in LECTURES])
def test_lecture_executes_cleanly(path):
    nb = build.execute(path)
    assert any(o.get("output_type") in ("execute_result", "display_data")
               for c in nb.cells if c.cell_type == "code" for o in c.outputs)


def test_a_warning_fails_the_lecture(tmp_path):
    lecture = tmp_path / "99_warns.md"
    lecture.write_text(FRONT_MATTER + "\n# Warns\n\n```{code-cell} ipython3\nimport warnings\n"
                       "warnings.warn('drift is approximate')\n```\n", encoding="utf-8")
    with pytest.raises(build.LectureError, match=r"99_warns\.md:13, cell 1 .*stderr(.|\n)*drift is approximate"):
        build.execute(lecture)


def test_an_exception_names_the_lecture_and_cell(tmp_path):
    lecture = tmp_path / "98_fails.md"
    lecture.write_text(FRONT_MATTER + "\n# Fails\n\n```{code-cell} ipython3\nx = 1\n```\n\n"
                       "```{code-cell} ipython3\nassert x == 2, 'wrong answer'\n```\n", encoding="utf-8")
    with pytest.raises(build.LectureError, match=r"98_fails\.md:17, cell 2 \(.assert x == 2(.|\n)*AssertionError: wrong answer"):
        build.execute(lecture)


def test_dangling_references_and_duplicate_labels_are_problems():
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell(r"As \eqref{eq:a} and \eqref{eq:missing} show."),
        nbformat.v4.new_code_cell("x", outputs=[nbformat.v4.new_output(
            "display_data", data={"text/latex": r"\begin{equation}x\label{eq:a}\end{equation}"})]),
        nbformat.v4.new_code_cell("x", outputs=[nbformat.v4.new_output(
            "display_data", data={"text/latex": r"\begin{equation}x\label{eq:a}\end{equation}"})]),
    ])
    found = build.problems(Path("x.md"), nb)
    assert len(found) == 2
    assert "'eq:a' is defined twice" in found[0] and r"\eqref{eq:missing}" in found[1]
    nb.cells.pop()
    assert build.problems(Path("x.md"), nb) == [f for f in found if "missing" in f]


def test_build_writes_notebook_page_and_index(tmp_path):
    """One short lecture (the stability one) keeps this test cheap."""
    pages = build.build(tmp_path, ["04_stability"], log=quiet)
    assert pages == [tmp_path / "04_stability.html"]
    page = pages[0].read_text(encoding="utf-8")
    assert "data:image/png;base64," in page and "MathJax" in page
    assert r"\label{eq:discrete:refresh-monodromy}" in page
    executed = nbformat.read(tmp_path / "04_stability.ipynb", as_version=4)
    assert any(c.get("outputs") for c in executed.cells)
    index = (tmp_path / "index.html").read_text(encoding="utf-8")
    assert 'href="04_stability.html"' in index and 'href="04_stability.ipynb"' in index
    assert "4. Stability" in index


def test_unknown_lecture_is_an_error(tmp_path, capsys):
    assert build.main(["--out", str(tmp_path), "07_no_such_lecture"]) == 1
    assert "no lecture named '07_no_such_lecture'" in capsys.readouterr().err
