"""The derivation chain as chapters: narrative, the results derived in each, and a printer.

Used by ``grpo-theory derive`` and by the runnable documents in ``derivations/``
(``python -m derivations``).  Every step prints the result rendered from its
sympy expression and the checks that verified it.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass

from .derived import all_names, get, timings

__all__ = ["Chapter", "CHAPTERS", "run_chapter", "run_chain"]


@dataclass(frozen=True)
class Chapter:
    key: str
    title: str
    narrative: str

    def names(self) -> list[str]:
        return [n for n in all_names() if n.split(".")[0] == self.key]


CHAPTERS = [
    Chapter("drift", "1. From the GRPO update to the mean-field drift (L1)",
            "A group of G actions is drawn from pi_old; n of them are correct. From the definition "
            "of the group-normalised advantages we derive the advantage mass on the correct "
            "actions, take its exact binomial expectation, its large-G limit and 1/G correction, "
            "and derive the KL forces (exact and k3) from their definitions. The importance ratio "
            "rescales the force by pq/(p_old q_old)."),
    Chapter("fixed_points", "2. Fixed points, stiffness and success amplification",
            "Interior fixed points balance the advantage force against the KL force. We solve "
            "them where a closed form exists, compare with Mroueh's recurrence, and show the "
            "stiffness is the same in logit and reward coordinates."),
    Chapter("closed_forms", "3. Nonlinear closed forms without KL",
            "Without KL the logit flow separates; the std flow has an explicit asinh solution, the "
            "mean flow an implicit one."),
    Chapter("discrete", "4. Exact discrete linearization (L2) and its stability",
            "With heavy-ball momentum and a refresh interval k the linearised update over one "
            "window is a 2x2 monodromy matrix; Jury's conditions on its characteristic polynomial "
            "give the exact stability boundary and which eigenvalue crosses the unit circle."),
    Chapter("oscillator", "5. The reduced-order oscillator (L3)",
            "Expanding the discrete characteristic function to second order gives m, gamma and k; "
            "we solve the oscillator in all regimes, take the massless limit (the single "
            "exponential) and recover the published threshold as the first-order-in-lag model."),
    Chapter("noise", "6. Noise: group size as temperature",
            "Stationary variances from the Lyapunov equations, continuous and exact discrete, and "
            "the reward fluctuation they imply; the per-step noise scales as 1/G."),
]


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
