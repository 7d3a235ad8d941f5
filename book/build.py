"""Build the lecture book: execute every ``book/lectures/*.md`` and write it as a notebook and a web page.

    python book/build.py --out build/book                  # every lecture, in filename order
    python book/build.py --out build/book 03_oscillator    # only some lectures

For each lecture (a MyST text notebook, read with jupytext) the build executes every
cell in a fresh ``python3`` kernel that imports this checkout of ``grpo_theory``
(nbclient), then writes ``<name>.ipynb`` (executed, for Jupyter) and ``<name>.html``
(nbconvert, figures embedded as PNG, math by MathJax), and finally ``index.html``
(the table of contents).  A lecture fails the build, naming the lecture and the line of
the cell in its source, when a cell raises, when a cell writes to stderr (every warning
does), when an ``\\eqref`` in its text has no equation labelled so on the page, or when a
label is defined twice.
"""

from __future__ import annotations

import argparse
import html
import os
import tempfile
import re
import sys
import time
from pathlib import Path

import jupytext
import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError
from nbconvert import HTMLExporter

BOOK = Path(__file__).resolve().parent
LECTURES = BOOK / "lectures"
ROOT = BOOK.parent

_EQREF = re.compile(r"\\eqref\{([^}]*)\}")
_LABEL = re.compile(r"\\label\{([^}]*)\}")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # terminal colours in tracebacks


class LectureError(RuntimeError):
    """A lecture that does not execute cleanly (the message names the lecture and cell)."""


def lectures() -> list[Path]:
    """Every lecture of the book, in filename order."""
    return sorted(LECTURES.glob("*.md"))


def title(nb) -> str:
    """The lecture's title: its first level-1 heading."""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            found = re.search(r"^# (.+)$", cell.source, re.MULTILINE)
            if found:
                return found.group(1).strip()
    return "untitled"


def kernel_env() -> dict:
    """The kernel's environment: this checkout first on the path, matplotlib's inline
    backend (a test session's ``MPLBACKEND=Agg`` would hide every figure)."""
    env = dict(os.environ)
    env.pop("MPLBACKEND", None)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def _where(path: Path, index: int, cell) -> str:
    """``name.md:line, cell index ('first line')``: where to look in the source."""
    text = path.read_text(encoding="utf-8")
    at = text.find(cell.source) if cell.source.strip() else -1
    line = f":{text.count(chr(10), 0, at) + 1}" if at >= 0 else ""
    first = cell.source.strip().splitlines()[0] if cell.source.strip() else ""
    return f"{path.name}{line}, cell {index} ({first[:60]!r})"


def problems(path: Path, nb) -> list[str]:
    """What is wrong with an executed lecture: stderr output (warnings), math references
    without a target, labels defined twice.  Empty when the lecture is clean."""
    found, labels, refs = [], [], set()
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            labels += _LABEL.findall(cell.source)
            refs.update(_EQREF.findall(cell.source))
            continue
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream" and out.get("name") == "stderr":
                found.append(f"{_where(path, index, cell)} wrote to stderr:\n{out.get('text', '')[:800]}")
            labels += _LABEL.findall(out.get("data", {}).get("text/latex", ""))
    found += [f"{path.name}: equation label {lab!r} is defined twice"
              for lab in sorted({lab for lab in labels if labels.count(lab) > 1})]
    found += [f"{path.name}: \\eqref{{{ref}}} has no equation labelled so in the lecture"
              for ref in sorted(refs - set(labels))]
    return found


def execute(path: Path, *, timeout: int = 600):
    """Execute one lecture; return the executed notebook or raise :class:`LectureError`."""
    nb = jupytext.read(path, fmt="md:myst")
    # a lecture runs in a scratch directory: files it writes (figures, logs) never land in
    # the checkout; the package is found through the kernel's PYTHONPATH
    scratch = tempfile.TemporaryDirectory(prefix=f"lecture-{path.stem}-")
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": scratch.name}},
                            # the kernel process's own log (not cell output) to errors only
                            extra_arguments=["--IPKernelApp.log_level=ERROR"])
    try:
        with scratch:
            client.execute(env=kernel_env())
    except CellExecutionError as err:
        failed = next((i for i, c in enumerate(nb.cells)
                       if any(o.get("output_type") == "error" for o in c.get("outputs", []))), None)
        where = _where(path, failed, nb.cells[failed]) if failed is not None else path.name
        raise LectureError(f"{where} raised:\n{_ANSI.sub('', str(err))}") from None
    found = problems(path, nb)
    if found:
        raise LectureError("\n\n".join(found))
    return nb


def _page(nb, name: str, previous: str | None, following: str | None) -> str:
    """The lecture as HTML, with links to the contents and the neighbouring lectures."""
    links = ["[contents](index.html)", f"[notebook]({name}.ipynb)"]
    links += [f"[← previous]({previous}.html)"] if previous else []
    links += [f"[next →]({following}.html)"] if following else []
    page = nbformat.from_dict(nb)
    page.cells.insert(0, nbformat.v4.new_markdown_cell(" · ".join(links)))
    body, _ = HTMLExporter(template_name="lab").from_notebook_node(page)
    return body


def _index(entries: list[tuple[str, str, float]]) -> str:
    items = "\n".join(
        f'<li><a href="{name}.html">{html.escape(heading)}</a> '
        f'(<a href="{name}.ipynb">notebook</a>, executed in {seconds:.0f} s)</li>'
        for name, heading, seconds in entries)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>grpo-theory lectures</title>
<style>body {{ font-family: sans-serif; max-width: 44em; margin: 3em auto; line-height: 1.5 }}</style>
</head><body>
<h1>GRPO training dynamics: the lectures</h1>
<p>Executed lectures of <code>grpo_theory</code>. Every formula is rendered from the package's
derived records; every number a reader is asked for is checked by an <code>assert</code>.</p>
<ol>
{items}
</ol>
</body></html>
"""


def build(out: Path, names: list[str] | None = None, *, log=print) -> list[Path]:
    """Execute the lectures (all, or those whose file stem is in ``names``) and write
    ``<name>.ipynb``, ``<name>.html`` and ``index.html`` to ``out``; return the HTML pages."""
    paths = lectures()
    if names:
        unknown = sorted(set(names) - {p.stem for p in paths})
        if unknown:
            raise LectureError(f"no lecture named {unknown[0]!r}; known: "
                               + ", ".join(p.stem for p in paths))
        paths = [p for p in paths if p.stem in names]
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    executed = []
    for number, path in enumerate(paths, 1):
        log(f"[{number}/{len(paths)}] {path.name} ...", end=" ", flush=True)
        start = time.perf_counter()
        nb = execute(path)
        seconds = time.perf_counter() - start
        log(f"{seconds:.1f} s")
        nbformat.write(nb, out / f"{path.stem}.ipynb")
        executed.append((path.stem, nb, seconds))
    pages = []
    for i, (name, nb, _) in enumerate(executed):
        previous = executed[i - 1][0] if i > 0 else None
        following = executed[i + 1][0] if i + 1 < len(executed) else None
        page = out / f"{name}.html"
        page.write_text(_page(nb, name, previous, following), encoding="utf-8")
        pages.append(page)
    (out / "index.html").write_text(
        _index([(name, title(nb), seconds) for name, nb, seconds in executed]), encoding="utf-8")
    return pages


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "book",
                        help="output directory (default: build/book)")
    parser.add_argument("lectures", nargs="*", help="lecture file stems (default: all)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    try:
        build(args.out, args.lectures)
    except LectureError as err:
        print(f"\nbuild failed: {err}", file=sys.stderr)
        return 1
    print(f"book written to {args.out / 'index.html'} in {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
