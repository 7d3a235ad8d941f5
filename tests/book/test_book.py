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

# the book is built once, on one xdist worker (see tests/conftest.py); the tiny book's test has
# its own group, so that it can run on the other worker meanwhile
pytestmark = pytest.mark.xdist_group("book")

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


def sphinx(source: Path, out: Path, *options: str, conf: Path = BOOK) -> subprocess.CompletedProcess:
    """``python -m sphinx -W -b html`` as the README documents it, in a fresh process (with the
    test session's environment: its derivation cache, warmed before the tests started)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html", "-c", str(conf),
                           *options, str(source), str(out)], capture_output=True, text=True, env=env, cwd=ROOT)


@pytest.fixture(scope="session")
def build(tmp_path_factory) -> tuple[Path, str]:
    """The whole book, built cold (a fresh execution cache): the output directory and the log."""
    out = tmp_path_factory.mktemp("book") / "html"
    done = sphinx(BOOK, out)
    assert done.returncode == 0, f"the book does not build:\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}"
    return out, done.stdout


@pytest.fixture(scope="session")
def built(build) -> Path:
    return build[0]


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

def test_every_lecture_ran_in_the_fast_executor_not_in_a_kernel(build):
    """Each lecture is executed ahead, in a fork of one warm interpreter; a lecture that fell back
    on myst-nb's kernel would still build, but slowly (the CI time of the book rests on this)."""
    _, log = build
    assert f"executed {len(LECTURES)} lecture(s) ahead" in log
    assert "Executed notebook" not in log and "Executing notebook" not in log


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


# -- the toolchain on a two-lecture book (cheap) ---------------------------------------------

RICH_CELL = """import sys, warnings
import matplotlib.pyplot as plt
from IPython.display import Markdown, display
print("to stdout")
warnings.warn("drift is approximate")
display(Markdown("**bold** $x^2$"))
plt.plot([0, 1], [1, 0]); plt.show()
1 + 1"""


def _tiny_book(root: Path, cells: dict[str, str]) -> Path:
    """A book with one lecture per entry of ``cells`` (name -> the code of its one cell)."""
    source = root / "src"
    (source / "lectures").mkdir(parents=True, exist_ok=True)
    toc = "\n".join(f"lectures/{name}" for name in cells)
    (source / "index.md").write_text(f"# Tiny\n\n```{{toctree}}\n{toc}\n```\n", encoding="utf-8")
    for name, cell in cells.items():
        (source / "lectures" / f"{name}.md").write_text(
            FRONT_MATTER + f"\n# {int(name[:2])}. Tiny\n\n```{{code-cell}} ipython3\n{cell}\n```\n", encoding="utf-8")
    return source


def _cached(cache_dir: Path) -> dict[str, tuple[int, float]]:
    """lecture file name -> (record id, creation time) of every executed notebook in a jupyter cache."""
    from jupyter_cache import get_cache

    return {Path(r.uri).name: (r.pk, r.created.timestamp()) for r in get_cache(str(cache_dir)).list_cache_records()}


def _outputs(nb) -> list:
    """The outputs of a notebook's code cells, without what varies between two runs of one kernel
    (the process id in the cells' file names, ``/tmp/ipykernel_<pid>/<hash>.py``)."""
    def same(o):
        o = {k: v for k, v in o.items() if k != "transient"}
        if o["output_type"] == "stream":
            o["text"] = re.sub(r"ipykernel_\d+", "ipykernel_<pid>", o["text"])
        return o

    return [[same(o) for o in cell.outputs] for cell in nb.cells if cell.cell_type == "code"]


@pytest.mark.xdist_group("book-toolchain")
def test_the_build_fails_on_a_warning_or_an_exception_caches_what_ran_and_does_not_run_it_again(tmp_path):
    """One tiny book, two builds.  First: a lecture that writes to stderr and one that raises both
    fail the build (-W --keep-going reports both), the first is cached, the raising one not (the
    fast executor leaves it to a kernel, whose traceback is reported).  The cached outputs are
    those a Jupyter kernel produces.  Second build into a new output directory with the same
    execution cache: the lecture is read from the cache, not executed again."""
    import nbformat
    from jupyter_cache import get_cache
    from nbclient import NotebookClient

    source = _tiny_book(tmp_path, {"01_rich": RICH_CELL,
                                   "02_raise": "raise ValueError('group_size must be an integer >= 2, got 1')"})
    cache_dir = tmp_path / "out" / ".jupyter_cache"
    first = sphinx(source, tmp_path / "out" / "a")
    assert first.returncode != 0
    assert "01_rich.md:14: WARNING: stderr was found in the cell outputs" in first.stderr
    assert "group_size must be an integer" in first.stderr
    cached = _cached(cache_dir)
    assert set(cached) == {"01_rich.md"}

    # the fast executor's outputs are a kernel's
    cache = get_cache(str(cache_dir))
    ours = cache.get_cache_bundle(cached["01_rich.md"][0]).nb
    project = cache.get_project_notebook(str(source / "lectures" / "01_rich.md")).nb
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("MPLBACKEND", None)                 # the kernel's inline backend, as in the build
    kernel = NotebookClient(nbformat.from_dict(project), timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute(env=env)
    assert [[o["output_type"] for o in cell] for cell in _outputs(ours)] == \
        [["stream", "stream", "display_data", "display_data", "execute_result"]]
    assert _outputs(ours) == _outputs(kernel)
    assert ours.metadata["language_info"]["pygments_lexer"] == kernel.metadata["language_info"]["pygments_lexer"]

    (source / "lectures" / "02_raise.md").unlink()
    (source / "index.md").write_text("# Tiny\n\n```{toctree}\nlectures/01_rich\n```\n", encoding="utf-8")
    second = sphinx(source, tmp_path / "out" / "b", "-D", "nb_output_stderr=show")
    assert second.returncode == 0, second.stderr
    assert "Using cached notebook" in second.stdout and "Executed notebook" not in second.stdout
    assert _cached(cache_dir) == cached
