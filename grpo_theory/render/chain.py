"""The derivation chain: every result of every chapter with the checks that verified it.

:func:`derive_chain` derives (or loads from the cache) the records of every chapter (or
of one) and returns a :class:`ChainResult`; ``str(result)`` is what ``grpo-theory
derive`` and ``python -m grpo_theory.theory [CHAPTER]`` print: per chapter its
narrative, then each result rendered from its sympy expression, its assumptions and its
proof log.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from grpo_theory.progress import progress
from grpo_theory.results import Result
from grpo_theory.theory.cache import (chapter_names, side_cache_path, store_chapter_names,
                                      write_cache_file)
from grpo_theory.theory.chapters import CHAPTERS, chapter
from grpo_theory.prose import math_to_plain, to_plain

# sympy and the registry (theory.derived, render.latex) are imported where records are derived
# or LaTeX is written: a cached run prints from the summaries without loading sympy

__all__ = ["ChainResult", "derive_chain", "record_summary"]


def record_summary(d, seconds: float = 0.0) -> dict:
    """The JSON-ready summary of one derived record (a :class:`~grpo_theory.theory.derived.
    Derived`: name, LaTeX, proof log, ...)."""
    return {"name": d.name, "latex": d.latex(), "description": d.description,
            "assumptions": d.assumptions, "units": d.units, "level": d.level,
            "verified": d.verified, "seconds": round(seconds, 3),
            "verifications": [vars(v) for v in d.verifications]}


def record_lines(r: dict) -> list[str]:
    """The printed form of one record's summary, below its ``---`` header line."""
    lines = [f"    {to_plain(r['description'])}", f"      {math_to_plain(r['latex'])}"]
    if r["units"]:
        lines.append(f"    units: {to_plain(r['units'])}")
    if r["assumptions"]:
        lines.append(f"    assumptions: {to_plain(r['assumptions'])}")
    for v in r["verifications"]:
        mark = "ok  " if v["passed"] else "FAIL"
        detail = f" -- {to_plain(v['detail'])}" if v["detail"] else ""
        lines.append(f"    [{mark}] ({v['method']}) {to_plain(v['claim'])}{detail}")
    if not r["verifications"]:
        lines.append("    (quoted from the literature)" if r["level"] == "literature"
                     else "    (definition; checked where it is used)")
    return lines


@functools.cache
def _summary_tag() -> str:
    """The cached summaries' file suffix: it changes with the code that renders them (this
    module and the prose helpers; the LaTeX printer is in the record's own cache key)."""
    from grpo_theory import prose

    h = hashlib.sha256()
    for file in (__file__, prose.__file__):
        h.update(Path(file).read_bytes())
    return f"summary-{h.hexdigest()[:12]}.json"


def _cached_summary(name: str):
    """``(summary, lines)`` of ``name`` from the disk cache, or None: a cached ``derive`` reads
    these instead of unpickling and printing every record (a third of its time)."""
    path = side_cache_path(name, _summary_tag())
    if path is None or not path.exists():
        return None
    try:
        blob = json.loads(path.read_text(encoding="utf-8"))
        return blob["summary"], blob["lines"]
    except (OSError, ValueError, KeyError):
        return None


def _store_summary(name: str, summary: dict, lines: list[str]) -> None:
    path = side_cache_path(name, _summary_tag())
    if path is not None:
        write_cache_file(path, json.dumps({"summary": summary, "lines": lines}).encode("utf-8"))


def _summarize(name: str, d):
    """Keep the summary of the record ``d`` (seconds 0) and its printed lines, and return both:
    a warm-up worker calls it with each record it derives, so that the process printing the
    chain reads the summary instead of unpickling the record."""
    summary = record_summary(d)
    lines = record_lines(summary)
    _store_summary(name, summary, lines)
    return summary, lines


def _is_ok(rec: dict) -> bool:
    return rec["verified"] or rec["level"] == "literature" or not rec["verifications"]


@dataclass(frozen=True)
class ChainResult(Result):
    """The derived records of the chapters ``chapters`` (in chapter order), and the path of
    ``equations.tex`` when one was written.  ``exit_code`` is 1 when a check failed or pdflatex
    failed (``pdflatex_error``: its first error line; ``pdflatex_log``: its log, kept)."""

    chapters: tuple
    records: tuple
    equations_tex: Path | None = None
    pdflatex_error: str | None = None
    pdflatex_log: Path | None = None
    #: each record's printed lines (:func:`record_lines`), when they were read from the cache
    texts: tuple = field(default=(), repr=False, compare=False)

    @property
    def all_verified(self) -> bool:
        return all(_is_ok(r) for r in self.records)

    @property
    def exit_code(self) -> int:
        return 0 if self.all_verified and self.pdflatex_error is None else 1

    def pdflatex_failure(self) -> str | None:
        """One line naming the log when pdflatex failed, else None."""
        if self.pdflatex_error is None:
            return None
        return f"pdflatex failed on equations.tex: {self.pdflatex_error} (see {self.pdflatex_log})"

    def to_dict(self) -> dict:
        return {"chapters": list(self.chapters), "results": list(self.records),
                "all_verified": self.all_verified,
                "equations_tex": str(self.equations_tex) if self.equations_tex else None,
                "pdflatex_failure": self.pdflatex_failure()}

    def __str__(self) -> str:
        lines = []
        texts = self.texts or (None,) * len(self.records)
        for key in self.chapters:
            ch = chapter(key)
            lines += ["=" * 78, ch.title, "=" * 78, to_plain(ch.narrative)]
            for r, text in zip(self.records, texts):
                if r["name"].split(".")[0] == key:
                    lines += ["", f"--- {r['name']}  [{r['level'] or '-'}]  ({r['seconds']:.2f} s)",
                              *(text or record_lines(r))]
        n_checks = sum(len(r["verifications"]) for r in self.records)
        lines += ["", f"{len(self.records)} results, {n_checks} checks, "
                  + ("all verified" if self.all_verified else "SOME CHECKS FAILED")
                  + (f"; LaTeX written to {self.equations_tex}" if self.equations_tex else "")]
        if self.pdflatex_error is not None:
            lines.append(self.pdflatex_failure())
        return "\n".join(lines)


def _from_cache(keys):
    """``(names, summaries, lines)`` of the chapters ``keys`` when every one of their records
    has its summary in the disk cache (each chapter's names kept beside its records), else
    None: then the chain is derived (or its records unpickled)."""
    names, summaries, texts = [], [], []
    for key in keys:
        kept = chapter_names(key)
        if not kept:
            return None
        for name in kept:
            start = time.perf_counter()
            cached = _cached_summary(name)
            if cached is None:
                return None
            summary, lines = cached
            names.append(name)
            summaries.append(dict(summary, seconds=round(time.perf_counter() - start, 3)))
            texts.append(tuple(lines))
    return names, summaries, texts


def derive_chain(only: str | None = None, *, out_dir=None, compile_pdf: bool = True) -> ChainResult:
    """Derive every chapter (or the chapter ``only``); with ``out_dir`` also write
    ``equations.tex`` (and the PDF when ``pdflatex`` exists) for the derived records.  When
    every record's printed summary is in the disk cache, they are read and nothing is derived
    (sympy is loaded only to write ``equations.tex``)."""
    keys = [c.key for c in CHAPTERS] if only is None else [chapter(only).key]
    hit = _from_cache(keys)
    if hit is not None:
        names, records, texts = hit
    else:
        names, records, texts = _derive(keys)
    tex = error = log = None
    if out_dir is not None:
        from grpo_theory.render.latex import PdflatexError, write_equations

        try:
            tex = write_equations(out_dir, compile_pdf=compile_pdf, names=names)
        except PdflatexError as exc:    # equations.tex and the log are delivered; exit 1
            tex, error, log = exc.tex, exc.error, exc.log
    return ChainResult(tuple(keys), tuple(records), tex, error, log, texts=tuple(texts))


def _derive(keys):
    """``(names, summaries, lines)`` of the chapters ``keys``, each record derived (the missing
    ones in one process per core first) or loaded from the disk cache."""
    from grpo_theory.theory.derived import all_names, get, timings, warm_cache

    by_chapter = {key: all_names(key) for key in keys}
    names = [n for key in keys for n in by_chapter[key]]
    records = []
    bar = progress(total=len(names), desc="derive")
    counted = set()

    def tick(name):
        if name in names and name not in counted:
            counted.add(name)
            bar.update(1)

    # the records missing from the disk cache, derived in one process per core first (each
    # once; the times are the workers' own); at most 8: each worker holds its own sympy caches
    warm_cache(workers=min(os.cpu_count() or 1, 8), names=names, on_done=tick, after=_summarize)
    texts = []
    for name in names:
        start = time.perf_counter()
        # kept by a warm-up worker or an earlier run, as printed; else loaded (or derived) here
        summary, lines = _cached_summary(name) or _summarize(name, get(name))
        seconds = timings().get(name) or time.perf_counter() - start
        records.append(dict(summary, seconds=round(seconds, 3)))
        texts.append(tuple(lines))
        tick(name)
    bar.close()
    for key, kept in by_chapter.items():     # read by the next run's _from_cache
        if chapter_names(key) != kept:
            store_chapter_names(key, kept)
    return names, records, texts
