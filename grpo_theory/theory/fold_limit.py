r"""Where the fold curves of the atlas go as the reference reward vanishes.

With the exact KL penalty the KL force is :math:`\Phi = p q\,(z - z_{\mathrm{ref}})` (record
``drift.kl_force_exact``), so the fixed points are the level set

.. math:: \beta = B(z) = \frac{\mathcal A_G(p)}{p q\,(z - z_{\mathrm{ref}})}
          = \frac{h(z)}{z - z_{\mathrm{ref}}}, \qquad h(z) = \frac{\mathcal A_G(p)}{p q},

and a fold is a critical point of :math:`B`:
:math:`(\log h)'(z) = 1/(z - z_{\mathrm{ref}})`.  For std normalization
:math:`\mathcal A_G(p) = \mathcal A_G(1 - p)`, so :math:`h` is even in :math:`z`; it has its
minimum at :math:`z = 0` and rises to :math:`h_\infty = \lim_{z\to\infty} h
= G\,A_{+}(G - 1)` (only groups with one failure are left, and their advantage mass stays
finite).  As :math:`p_{\mathrm{ref}} \to 0`, :math:`L = z - z_{\mathrm{ref}} \approx
\ln(1/p_{\mathrm{ref}}) \to \infty` and the right-hand side of the fold condition vanishes:

- the **lower fold** tends to the minimum of :math:`h`, at :math:`p = 1/2`, with
  :math:`\beta_{\mathrm{fold}} L = h(0) + O(L^{-2})`;
- the **upper fold** runs to :math:`p \to 1` (slowly: :math:`h_\infty - h(z)` decays like
  :math:`e^{-z}`, so :math:`z_{\mathrm{fold}} \approx \ln L`), with
  :math:`\beta_{\mathrm{fold}} L = h_\infty\,(1 - O(L^{-1}))`.

So the fold curves do not end: both fold values of :math:`\beta` go to zero like
:math:`1/\ln(1/p_{\mathrm{ref}})`, their ratio tends to :math:`h_\infty/h(0)` (the bistable
window keeps a fixed width on a logarithmic :math:`\beta` axis).  A drawing that stops at some
:math:`p_{\mathrm{ref}}` stops at a plotting limit, not at a property of the model.
:func:`fold_limit` computes :math:`h(0)`, :math:`h_\infty` and the folds at decreasing
:math:`p_{\mathrm{ref}}` (by the atlas's own fold finder) to show the approach.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from grpo_theory.model import GRPOModel
from grpo_theory.results import Result
from grpo_theory.theory.atlas import ATLAS_MODEL, folds_at
from grpo_theory.theory.drift import drift_components, geometric_factor
from grpo_theory.validate import ParameterError, check_int

__all__ = ["FoldLimit", "limit_folds", "fold_limit"]


def _h(z, model: GRPOModel):
    """h = A_G(p)/(p q) from the drift of ``model`` at beta = 0 (F = kappa A_G)."""
    m = model.replace(kl_coef=0.0)
    F = drift_components(m, z)["F"] / geometric_factor(m.actions, m.correct)
    return F / (1 / (1 + np.exp(-z)) / (1 + np.exp(z)))


#: where h(z) is evaluated for its limit: h_inf - h(z) decays like e^{-z}, below 1e-20 here
_Z_FAR = 50.0


def limit_folds(group_size=64, model: GRPOModel = ATLAS_MODEL) -> list[dict]:
    """The p_ref -> 0 limits of the two folds of ``model`` (the atlas's by default) at
    ``group_size``: the minimum of h at z = 0 (lower fold) and h_inf = lim h as z -> oo
    (upper fold, which runs to p -> 1)."""
    G = check_int("group_size", group_size, low=2)
    if model.kl != "exact":
        raise ParameterError("kl", model.kl, "exact (the limit uses Phi = p q (z - z_ref))")
    if model.normalization != "std":
        raise ParameterError("normalization", model.normalization,
                             "std (the limit uses the symmetry of A_G)")
    m = model.replace(group_size=G)
    return [{"fold": "lower", "z": 0.0, "p": 0.5, "h": float(_h(np.array(0.0), m))},
            {"fold": "upper", "z": math.inf, "p": 1.0, "h": float(_h(np.array(_Z_FAR), m))}]


@dataclass(frozen=True)
class FoldLimit(Result):
    """The folds at decreasing p_ref next to their p_ref -> 0 limits (module docstring)."""

    group_size: int
    limits: list
    rows: list

    @property
    def passed(self) -> bool:
        """The scaled fold values approach their limits at the predicted rates: the lower
        gap times L^2 and the upper gap times L stay bounded (the last row's no larger than
        1.5 times the previous row's), and the gaps shrink."""
        if len(self.rows) < 2:
            return False
        ok = True
        for j, power in ((0, 2), (1, 1)):
            g = [r["folds"][j]["gap"] for r in self.rows[-2:]]
            s = [r["folds"][j]["gap"] * r["folds"][j]["L"] ** power for r in self.rows[-2:]]
            ok = ok and g[1] < g[0] and s[1] <= 1.5 * s[0]
        return ok

    def __str__(self) -> str:
        lo, up = self.limits
        lines = [f"G = {self.group_size}: as p_ref -> 0, beta_fold (z - z_ref) tends to "
                 f"h(0) = {lo['h']:.6f} (lower fold, p -> 1/2) and h_inf = {up['h']:.6f} "
                 f"(upper fold, p -> 1)"]
        for r in self.rows:
            lines.append(f"  p_ref = {r['p_ref']:.0e}: beta_fold = "
                         + ", ".join(f"{f['kl_coef']:.6f}" for f in r["folds"])
                         + "; beta (z - z_ref) = "
                         + ", ".join(f"{f['scaled']:.6f}" for f in r["folds"]))
        return "\n".join(lines)


def fold_limit(group_size=64, p_refs=(1e-2, 1e-4, 1e-8, 1e-16, 1e-32),
               model: GRPOModel = ATLAS_MODEL) -> FoldLimit:
    """Folds at each ``p_ref`` (the atlas's fold finder over a span wide enough for the
    upper fold's z - z_ref) with beta_fold (z_fold - z_ref) against its limit h(z_c)."""
    limits = limit_folds(group_size, model)
    rows = []
    for pr in p_refs:
        zr = math.log(pr) - math.log1p(-pr)
        span = max(25.0, 2.0 * (math.log(-zr) + 5.0 - zr))
        folds = folds_at(pr, group_size, model, span=span, points=int(200 * span))
        if len(folds) != len(limits):
            raise ParameterError("p_ref", pr, f"a reference reward with {len(limits)} folds "
                                 f"(found {len(folds)})")
        fr = []
        for f, lim in zip(folds, limits):
            L = f["z"] - zr
            fr.append({"kl_coef": f["kl_coef"], "z": f["z"], "p": f["p"], "L": L,
                       "scaled": f["kl_coef"] * L, "gap": abs(f["kl_coef"] * L - lim["h"])})
        rows.append({"p_ref": pr, "folds": fr})
    return FoldLimit(group_size, limits, rows)
