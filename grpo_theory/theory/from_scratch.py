"""One comparison of a formula derived from scratch (on a lecture's page, in a notebook) with
the package's record of the same formula.

A from-scratch derivation uses its own sympy symbols; the record uses the package's.  They are
matched by name: a record argument named ``"K"`` is replaced by the page's symbol of that name.
Where the page's name differs (the record's ``k_ref`` is printed ``k``; ``"sigma^2"`` is not a
Python name), ``by_name`` maps the record's name to the page's symbol or expression.

For example, the stationary variance of the AR(2) process solved from its Yule-Walker
equations, against ``noise.ar2_variance``: ``minus_record(var_x, "noise.ar2_variance",
{"sigma^2": s2})`` is 0.
"""

from __future__ import annotations

import sympy as sp

__all__ = ["minus_record"]


def minus_record(mine, name: str, by_name: dict | None = None, *, simplify: bool = True):
    """``mine`` minus the record ``name``, simplified (0 when they agree; a sympy Matrix of
    zeros for a matrix record).  The record's arguments are replaced by the symbols of
    ``mine`` with the same name, or by ``by_name[arg name]``; an argument found in neither
    is left as the record's own symbol, so a missed match shows in the difference instead of
    being hidden.  ``simplify=False``: the difference as it is, for a comparison that sympy
    cannot close (nested radicals), to be evaluated numerically instead."""
    from grpo_theory import get

    record = get(name)
    mine = sp.sympify(mine)
    page = {s.name: s for s in mine.free_symbols}
    page.update(by_name or {})
    unknown = sorted(set(by_name or {}) - {a.name for a in record.args})
    if unknown:
        raise ValueError(f"by_name: {', '.join(unknown)} not an argument of {name} "
                         f"(its arguments: {', '.join(a.name for a in record.args)})")
    theirs = record.expr.xreplace({a: page[a.name] for a in record.args if a.name in page})
    return sp.simplify(mine - theirs) if simplify else mine - theirs
