"""Sphinx configuration of the lecture book (built as QuantEcon builds its lectures).

    python -m sphinx -W -b html book build/book

Sphinx + myst-nb: every lecture is a MyST text notebook, executed through jupyter-cache
(``build/.jupyter_cache``): a lecture whose code cells have not changed is not executed
again.  Equations are numbered per lecture (3.2 is the second numbered equation of
lecture 3) and referred to across the book with ``{eq}``; derived formulas are shown with
the ``{derived}`` directive (``_ext/grpo_book.py``), which renders the package's record.
MathJax is served from the built book (the copy sphinx-mathjax-offline ships), so pages work
offline.  Lectures that need executing are executed two at a time, in forks of one warm
interpreter, before Sphinx reads them (``_ext/lecture_executor.py``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

BOOK = Path(__file__).resolve().parent
ROOT = BOOK.parent
sys.path.insert(0, str(BOOK / "_ext"))
sys.path.insert(0, str(ROOT))   # the directive imports this checkout of grpo_theory

# the lectures' kernels import this checkout (not an installed copy), draw figures with
# matplotlib's inline backend (a test session's MPLBACKEND=Agg would hide every figure),
# and stay quiet (no progress bars on the page).  Two lectures run at a time, each on one
# thread: the networks of lecture 8 are tiny, and torch's second thread only spins while the
# other core is busy (measured on a loaded 2-core machine: the refresh sweep took 2.9 s of CPU
# on one thread, 47 s on two)
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
os.environ.pop("MPLBACKEND", None)
os.environ["GRPO_THEORY_PROGRESS"] = "0"
os.environ.setdefault("OMP_NUM_THREADS", "1")
# the GRPO lab's committed TRL runs (trainer_state.json and config.json per run), which
# lectures 11 to 13 read; their results come from the package (grpo_theory.report.lab)
os.environ["GRPO_BOOK_LAB_RUNS"] = str(ROOT / "benchmarks" / "lab_runs")
# the benchmark of public runs, whose logs lecture 10 reads directly
os.environ["GRPO_BOOK_REAL_RUNS"] = str(ROOT / "benchmarks" / "real_runs")

project = "GRPO training dynamics"
author = "grpo-theory developers"
copyright = "2026, grpo-theory developers"

extensions = [
    "myst_nb",
    "sphinx_proof",
    "sphinx_exercise",
    "sphinx_togglebutton",
    "sphinx-mathjax-offline",   # MathJax 3 served from the built book (_static/mathjax)
    "grpo_book",
]

root_doc = "index"
exclude_patterns = ["README.md", "_build", "**.ipynb_checkpoints", "_ext"]

# -- MyST and execution ---------------------------------------------------------------
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 2
nb_execution_mode = "cache"
nb_execution_timeout = 300
nb_execution_raise_on_error = True   # a cell that raises fails the build
nb_execution_in_temp = True          # files a lecture writes never land in the checkout
nb_execution_show_tb = True         # a failing cell prints its traceback in the build log
nb_output_stderr = "warn"            # a warning printed by a cell is a build warning (-W: an error)
nb_merge_streams = True
nb_render_markdown_format = "myst"   # Markdown outputs (tables) may contain $math$

# -- numbering ------------------------------------------------------------------------
math_number_all = False
math_numfig = False          # equation numbers per lecture, (3.2), from grpo_book
math_eqref_format = "({number})"

# -- HTML -----------------------------------------------------------------------------
html_theme = "sphinx_book_theme"
html_title = "GRPO training dynamics"
html_theme_options = {
    "show_toc_level": 2,
    "use_download_button": True,
    "home_page_in_toc": True,
}
html_last_updated_fmt = None
