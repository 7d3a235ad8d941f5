"""The derivation chain printer: every result of every chapter with the checks that verified it.

Used by ``grpo-theory derive`` and ``python -m grpo_theory.theory [CHAPTER]``.  Every step prints the result rendered from its
sympy expression and the checks that verified it.
"""

from __future__ import annotations

import sys
import time

from grpo_theory.theory.chapters import CHAPTERS, Chapter
from grpo_theory.theory.derived import get, timings

__all__ = ["Chapter", "CHAPTERS", "run_chapter", "run_chain"]


def _print(stream, text=""):
    print(text, file=stream)


def run_chapter(chapter: Chapter, *, stream=None, show_latex=True) -> list[dict]:
    """Derive (or load) every result of ``chapter``, print it with its verification, return records."""
    stream = sys.stdout if stream is None else stream
    _print(stream, "=" * 78)
    _print(stream, chapter.title)
    _print(stream, "=" * 78)
    _print(stream, chapter.narrative)
    records = []
    for name in chapter.names():
        start = time.perf_counter()
        d = get(name)
        elapsed = time.perf_counter() - start
        _print(stream)
        _print(stream, f"--- {name}  [{d.level or '-'}]  ({elapsed:.2f} s)")
        _print(stream, f"    {d.description}")
        if show_latex:
            _print(stream, f"    $$ {d.latex()} $$")
        if d.assumptions:
            _print(stream, f"    assumptions: {d.assumptions}")
        for v in d.verifications:
            mark = "ok  " if v.passed else "FAIL"
            detail = f" -- {v.detail}" if v.detail else ""
            _print(stream, f"    [{mark}] ({v.method}) {v.claim}{detail}")
        if not d.verifications:
            _print(stream, "    (quoted from the literature)" if d.level == "literature"
                   else "    (definition; checked where it is used)")
        records.append({"name": name, "latex": d.latex(), "description": d.description,
                        "assumptions": d.assumptions, "units": d.units, "level": d.level,
                        "verified": d.verified,
                        "verifications": [vars(v) for v in d.verifications]})
    return records


def run_chain(*, only=None, stream=None, show_latex=True) -> list[dict]:
    """Run every chapter (or those whose key starts with ``only``)."""
    out = []
    for ch in CHAPTERS:
        if only and not ch.key.startswith(only):
            continue
        out.extend(run_chapter(ch, stream=stream, show_latex=show_latex))
    return out


def chain_timings() -> dict:
    return timings()
