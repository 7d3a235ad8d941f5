"""Helpers shared by the modules of the L2 chapter: citation keys, unit texts, LaTeX and
number formatting, lambdified records."""

from __future__ import annotations

import sympy as sp

from grpo_theory.theory.derived import get
from grpo_theory.theory.printing import latex
from grpo_theory.validate import check_real

_PAPER = ("predictable_grpo",)
_STALE = r"stale surrogate ($K_{f} = 0$, all stiffness acts through the sampling policy)"
_ETA_K = r"dimensionless (in $\eta K$)"


def _tex(expr) -> str:
    """LaTeX of a sympy expression with the project's notation (for the texts of checks)."""
    return latex(expr)


_i = sp.Symbol("i", integer=True, nonnegative=True)
_j = sp.Symbol("j", integer=True, positive=True)


def _stiffness(stiffness, fresh_fraction=0.0) -> tuple[float, float]:
    """The two inputs of the L2 analysis that are not fields of the model, validated (the
    model's fields are validated at its construction): ``stiffness`` K > 0 per unit learning
    rate and ``fresh_fraction`` K_f/K, any real number."""
    return (check_real("stiffness", stiffness, low=0, low_open=True),
            check_real("fresh_fraction", fresh_fraction))


def _num(name):
    """The lambdified numerics of the derived record ``name``."""
    return get(name).numeric
