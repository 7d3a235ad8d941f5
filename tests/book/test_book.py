"""The lecture book: it builds with Sphinx and warnings as errors (a cell that raises or writes
to stderr, a dangling ``{eq}``, a label defined twice all fail it), serves MathJax itself,
numbers equations and exercises per lecture, hides solutions, and a second build takes an
unchanged lecture from the execution cache.

The whole book is built once per session (cold: fresh jupyter cache) into a temporary
directory; the checks read the pages it wrote.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BOOK = ROOT / "book"
LECTURES = sorted((BOOK / "lectures").glob("[0-9][0-9]_*.md"))
FRONT_MATTER = """---
jupytext:
  text_representation:
    format_name: myst
kernelspec:
  name: python3
  display_name: Python 3
---
"""


def sphinx(source: Path, out: Path, *, conf: Path = BOOK) -> subprocess.CompletedProcess:
    """``python -m sphinx -W -b html`` as the README documents it, in a fresh process."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html", "-c", str(conf),
                           str(source), str(out)], capture_output=True, text=True, env=env, cwd=ROOT)


@pytest.fixture(scope="session")
def built(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("book") / "html"
    done = sphinx(BOOK, out)
    assert done.returncode == 0, f"the book does not build:\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}"
    return out


def page(built: Path, lecture: Path) -> str:
    return (built / "lectures" / f"{lecture.stem}.html").read_text(encoding="utf-8")


# -- the sources ------------------------------------------------------------------------------

def test_lectures_are_numbered_from_0_without_gaps_and_titled_with_their_number():
    numbers = [int(p.name[:2]) for p in LECTURES]
    assert numbers == list(range(len(numbers)))
    for path in LECTURES:
        title = re.search(r"^# (.+)$", path.read_text(encoding="utf-8"), re.MULTILINE).group(1)
        assert title.startswith(f"{int(path.name[:2])}. "), f"{path.name}: title {title!r}"


def test_the_table_of_contents_lists_every_lecture_in_order():
    index = (BOOK / "index.md").read_text(encoding="utf-8")
    listed = re.findall(r"^lectures/(\S+)$", index, re.MULTILINE)
    assert listed == [p.stem for p in LECTURES]


@pytest.mark.parametrize("path", LECTURES, ids=[p.stem for p in LECTURES])
def test_lecture_format(path):
    """The documented front matter; exercises with separate solutions; no asserts on the page
    (the package checks itself in its tests); no backend forced; no warnings silenced; no
    private imports."""
    text = path.read_text(encoding="utf-8")
    assert text.startswith(FRONT_MATTER), f"{path.name}: use the front matter of book/README.md"
    exercises = re.findall(r"^```\{exercise\}\n:label: (\S+)$", text, re.MULTILINE)
    solutions = re.findall(r"^```\{solution-start\} (\S+)\n:class: dropdown$", text, re.MULTILINE)
    assert exercises and solutions == exercises, f"{path.name}: each exercise needs its hidden solution"
    cells = re.findall(r"^```\{code-cell\} ipython3\n(.*?)^```$", text, re.MULTILINE | re.DOTALL)
    for cell in cells:
        assert not re.search(r"^\s*assert\b", cell, re.MULTILINE), f"{path.name}: an assert on the page"
        assert not re.search(r"matplotlib\.use|warnings\.(simplefilter|filterwarnings)", cell), path.name
        assert not re.search(r"import _\w|import .*\b_[a-z]\w*", cell), f"{path.name}: a private import"


# -- the built book ---------------------------------------------------------------------------

def test_every_lecture_has_a_page_with_figures(built):
    for lecture in LECTURES:
        html = page(built, lecture)
        assert "<img" in html, f"{lecture.stem}: no figure"


def test_mathjax_is_served_locally(built):
    assert (built / "_static" / "mathjax" / "tex-chtml.js").is_file()
    for lecture in LECTURES:
        html = page(built, lecture)
        scripts = [src.split("?")[0] for src in re.findall(r'<script[^>]*src="([^"]+)"', html)]
        assert any(s.endswith("_static/mathjax/tex-chtml.js") for s in scripts)
        assert not [s for s in scripts if re.match(r"(https?:)?//", s)], f"{lecture.stem}: a script from the network"
        styles = re.findall(r'<link[^>]*rel="stylesheet"[^>]*href="([^"]+)"', html)
        assert not [s for s in styles if re.match(r"(https?:)?//", s)], f"{lecture.stem}: a stylesheet from the network"


def test_equations_are_numbered_per_lecture_and_referenced_across_lectures(built):
    stability = page(built, next(p for p in LECTURES if "stability" in p.stem))
    assert 'id="equation-eq-discrete-refresh-monodromy"' in stability
    assert re.search(r'class="eqno">\(4\.\d+\)', stability)
    # a reference to an equation of lecture 0 from lecture 1 links to lecture 0's page
    drift = page(built, next(p for p in LECTURES if "drift" in p.stem))
    assert re.search(r'href="00_grpo_and_ppo\.html#equation-[^"]+">\(0\.\d+\)</a>', drift)


def test_solutions_are_hidden_until_opened(built):
    html = page(built, LECTURES[1])
    assert '<div class="solution dropdown admonition"' in html
    assert "Exercise 1.1" in html


def test_the_appendix_has_the_proof_log_of_every_record_shown(built):
    appendix = (built / "appendix" / "proof_logs.html").read_text(encoding="utf-8")
    for lecture in LECTURES:
        for name in re.findall(r"^```\{derived\} (\S+)$", lecture.read_text(encoding="utf-8"), re.MULTILINE):
            assert f"<code class=\"docutils literal notranslate\"><span class=\"pre\">{name}</span></code>" in appendix


# -- the toolchain on a two-page book (cheap) --------------------------------------------------

def _tiny_book(root: Path, cell: str) -> Path:
    source = root / "src"
    (source / "lectures").mkdir(parents=True, exist_ok=True)
    (source / "index.md").write_text("# Tiny\n\n```{toctree}\nlectures/01_tiny\n```\n", encoding="utf-8")
    (source / "lectures" / "01_tiny.md").write_text(
        FRONT_MATTER + f"\n# 1. Tiny\n\n```{{code-cell}} ipython3\n{cell}\n```\n", encoding="utf-8")
    return source


def _executions(cache_dir: Path) -> list[tuple[int, float]]:
    """(record id, creation time) of every executed notebook in a jupyter cache."""
    from jupyter_cache import get_cache

    return sorted((r.pk, r.created.timestamp()) for r in get_cache(str(cache_dir)).list_cache_records())


def test_an_unchanged_lecture_is_not_executed_again(tmp_path):
    source = _tiny_book(tmp_path, "print(1 + 1)")
    first = sphinx(source, tmp_path / "out" / "a")
    assert first.returncode == 0, first.stderr
    executed = _executions(tmp_path / "out" / ".jupyter_cache")
    assert len(executed) == 1
    second = sphinx(source, tmp_path / "out" / "b")          # same execution cache (out/.jupyter_cache)
    assert second.returncode == 0, second.stderr
    assert "Using cached notebook" in second.stdout and "Executed notebook" not in second.stdout
    assert _executions(tmp_path / "out" / ".jupyter_cache") == executed


@pytest.mark.parametrize("cell, message", [
    ("import warnings\nwarnings.warn('drift is approximate')", "01_tiny.md:14: WARNING: stderr was found in the cell outputs"),
    ("raise ValueError('group_size must be an integer >= 2, got 1')", "group_size must be an integer"),
])
def test_a_warning_or_an_exception_in_a_cell_fails_the_build(tmp_path, cell, message):
    failed = sphinx(_tiny_book(tmp_path, cell), tmp_path / "out" / "html")
    assert failed.returncode != 0
    assert message in failed.stderr
