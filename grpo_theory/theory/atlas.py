r"""Two-parameter bifurcation atlas: fold curves, the cusp, and the L2 boundaries as curves.

**Folds of the fixed points (L1).**  The drift is affine in the KL coefficient,
:math:`F = \kappa[\mathcal A(z) - \beta\Phi(z)]`, so the fixed points are the level set
:math:`\beta = B(z) := \mathcal A/\Phi` and a saddle-node (fold) is a critical point of
:math:`B`: the fold test function is :math:`g = \partial_z B`.

- In the :math:`(\beta, p_{\mathrm{ref}})` plane (fixed :math:`G`) the fold set
  :math:`g(z, p_{\mathrm{ref}}) = 0` is one curve, continued by pseudo-arclength
  (secant predictor, Newton corrector on :math:`g = 0` plus the arclength condition) and
  mapped to :math:`\beta = B`.  Its two fold branches meet at the **cusp**, where
  :math:`p_{\mathrm{ref}}` is extremal along the curve (:math:`\partial_z^2 B = 0` as well); the
  cusp is located by bisection on the :math:`p_{\mathrm{ref}}` component of the tangent.
- In the :math:`(\beta, G)` plane the group size is an integer, so the folds are computed
  for every :math:`G` (bisection, ``brentq``, on the fold test function); the cusp lies
  between the last :math:`G` without and the first with a bistable range.

Between the two folds three fixed points coexist (stable, unstable, stable): the plateau is
bistable.  :func:`check_atlas` checks every fold and the cusp against computations that
never use :math:`\partial_z B`: root counts of :math:`F` on dense grids on either side of
each fold, and the cusp as the solution of :math:`\partial_z B = \partial_z^2 B = 0` from
finite differences of :math:`B` alone.

The fold curves are continued down to ``p_ref_min`` only; they do not end there (as
:math:`p_{\mathrm{ref}} \to 0` both fold values of :math:`\beta` go to zero like
:math:`1/\ln(1/p_{\mathrm{ref}})`: :mod:`~grpo_theory.theory.fold_limit`).

**Boundaries of the exact discrete map (L2).**  The flip (period-doubling, eigenvalue
:math:`-1`) and complex-pair (Neimark-Sacker) thresholds of the refresh-window monodromy
(:func:`~grpo_theory.theory.discrete.refresh_thresholds`) as curves in
:math:`(\eta K, k)` and :math:`(\eta K, \mu)`: stability boundaries of the *linear* L2 map.
They meet at codimension-two points where the binding boundary switches from flip to complex
pair: there the monodromy has a double eigenvalue :math:`-1` with one eigenvector, the 1:2
resonance (:func:`~grpo_theory.theory.criticality.one_to_two_resonance`).  Whether the
nonlinear L1 map loses stability softly or hard on each boundary is decided by its normal-form
coefficient (:mod:`~grpo_theory.theory.criticality`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import brentq, fsolve, minimize_scalar

from grpo_theory.model import GRPOModel
from grpo_theory.results import Result, jsonable
from grpo_theory.theory.discrete import refresh_thresholds
from grpo_theory.theory.drift import drift
from grpo_theory.theory.fixed_points import bifurcations, level_set

__all__ = ["ATLAS_MODEL", "FoldCurve", "Atlas", "fold_test", "folds_at", "continue_folds",
           "folds_in_group_size", "discrete_boundaries", "check_atlas", "atlas"]

#: The model of the atlas: GRPO's std normalization with the exact KL and no advantage
#: epsilon, the model whose plateau is bistable at large G (its p_ref and G are scanned).
ATLAS_MODEL = GRPOModel(normalization="std", kl="exact", surrogate="stale", adv_eps=0.0)


def _at(model, p_ref, G) -> GRPOModel:
    return model.replace(p_ref=float(p_ref), group_size=G)


def _B(z, p_ref, G, model):
    """(B, dB/dz) on the on-policy diagonal at (p_ref, G): :func:`fixed_points.level_set`."""
    return level_set(_at(model, p_ref, G), z)


def fold_test(z, p_ref, group_size, model=ATLAS_MODEL):
    """The fold test function g = dB/dz at (p_ref, G) (zero exactly at a saddle-node of the
    fixed points): the derivative part of :func:`fixed_points.level_set`."""
    return _B(z, p_ref, group_size, model)[1]


def folds_at(p_ref, group_size, model=ATLAS_MODEL, *, span=25.0, points=2501) -> list[dict]:
    """Saddle-nodes at one (p_ref, G): :func:`fixed_points.bifurcations` on the grid
    ``z_ref + (1e-3 .. span)`` of ``points`` points, with p_ref and G attached."""
    return [dict(b, p_ref=p_ref, group_size=group_size)
            for b in bifurcations(_at(model, p_ref, group_size), span=span, points=points)]


@dataclass(frozen=True)
class FoldCurve:
    """A continued fold curve in the (beta, p_ref) plane at fixed ``group_size``:
    arrays ``p_ref``, ``kl_coef``, ``z``, ``p`` along the curve (arclength order), and the
    ``cusp`` (dict: p_ref, kl_coef, z, p) where its two fold branches meet."""

    group_size: int
    p_ref: np.ndarray
    kl_coef: np.ndarray
    z: np.ndarray
    p: np.ndarray
    cusp: dict

    def to_dict(self) -> dict:
        return {"group_size": self.group_size, "cusp": self.cusp, "points": int(self.p_ref.size)}


def _grad(z, r, G, model, h=1e-6):
    # central differences; the two z-neighbours share (p_ref, G): one evaluation of both
    gzp, gzm = fold_test(np.array([z + h, z - h]), r, G, model)
    gr = (fold_test(z, r + h, G, model) - fold_test(z, r - h, G, model)) / (2 * h)
    return np.array([float((gzp - gzm) / (2 * h)), float(gr)])


def _tangent(y, G, model, prev=None):
    gz, gr = _grad(y[0], y[1], G, model)
    t = np.array([-gr, gz]) / math.hypot(gz, gr)
    if prev is not None and t @ prev < 0:
        t = -t
    return t


def _correct(y_pred, y0, t0, ds, G, model):
    """Newton on (g = 0, t0.(y - y0) = ds)."""
    y = y_pred.copy()
    for _ in range(30):
        r = np.array([float(fold_test(y[0], y[1], G, model)), t0 @ (y - y0) - ds])
        J = np.vstack([_grad(y[0], y[1], G, model), t0])
        dy = np.linalg.solve(J, -r)
        y = y + dy
        if np.max(np.abs(dy)) < 1e-13:
            break
    return y


def continue_folds(group_size=64, *, p_ref_start=0.3, ds=0.04, max_steps=400, model=ATLAS_MODEL,
                   p_ref_min=0.02) -> FoldCurve:
    """Continue the fold set g(z, p_ref) = 0 by pseudo-arclength from the lower fold at
    ``p_ref_start`` round the cusp to the upper fold, down to ``p_ref_min`` on both ends."""
    start = folds_at(p_ref_start, group_size, model)
    if len(start) < 2:
        raise ValueError(f"no bistable range at p_ref={p_ref_start}, G={group_size}")
    pts = []
    for first, sign in ((start[0], +1), (start[0], -1)):  # towards the cusp, then away from it
        y = np.array([first["z"], p_ref_start])
        t = _tangent(y, group_size, model)
        t = t if np.sign(t[1]) == sign else -t
        branch = [y]
        for _ in range(max_steps):
            y_new = _correct(y + ds * t, y, t, ds, group_size, model)
            t_new = _tangent(y_new, group_size, model, prev=t)
            if not (p_ref_min <= y_new[1] < 1 - 1e-6) or y_new[0] - math.log(y_new[1] / (1 - y_new[1])) > 38:
                break
            branch.append(y_new)
            y, t = y_new, t_new
        pts.append(branch)
    path = np.array(pts[1][::-1] + pts[0][1:])
    cusp = _cusp(path, group_size, model)
    z, r = path[:, 0], path[:, 1]
    beta = np.array([float(_B(zz, rr, group_size, model)[0]) for zz, rr in zip(z, r)])
    return FoldCurve(group_size, r, beta, z, 1 / (1 + np.exp(-z)), cusp)


def _cusp(path, G, model) -> dict:
    """Bisection on the p_ref component of the tangent between the two path points where it
    changes sign (p_ref is extremal along the fold curve at the cusp)."""
    tr = np.array([t[1] * np.sign(t[0] or 1) for t in (_tangent(y, G, model) for y in path)])
    idx = np.nonzero(np.sign(tr[:-1]) * np.sign(tr[1:]) < 0)[0]
    if idx.size == 0:
        raise ValueError("the continued fold curve has no cusp")
    y0, y1 = path[idx[0]], path[idx[0] + 1]
    t0 = (y1 - y0) / np.linalg.norm(y1 - y0)
    L = float(np.linalg.norm(y1 - y0))

    def tan_r(s):
        y = _correct(y0 + s * t0, y0, t0, s, G, model)
        t = _tangent(y, G, model)
        return float(t[1] * np.sign(t[0] or 1)), y

    s_c = brentq(lambda s: tan_r(s)[0], 0.0, L, xtol=1e-14)
    y = tan_r(s_c)[1]
    return {"p_ref": float(y[1]), "z": float(y[0]), "p": float(1 / (1 + math.exp(-y[0]))),
            "kl_coef": float(_B(y[0], y[1], G, model)[0]), "group_size": G}


def folds_in_group_size(group_sizes, *, p_ref=0.3, model=ATLAS_MODEL) -> list[dict]:
    """Per integer G: its folds (``lower``/``upper``, or none) in the (beta, G) plane."""
    rows = []
    for G in group_sizes:
        f = folds_at(p_ref, int(G), model)
        rows.append({"group_size": int(G), "folds": f})
    return rows


def discrete_boundaries(*, momentum=0.8, refresh_interval=4, k_max=64.0, mu_max=0.99,
                        points=400) -> dict:
    """Flip and complex-pair thresholds in eta K as curves over k (at ``momentum``) and over
    mu (at ``refresh_interval``), with the codimension-two points where they meet."""
    ks = np.linspace(1.0, k_max, points)
    fk, ck, _ = refresh_thresholds(momentum, ks)
    mus = np.linspace(0.0, mu_max, points)
    fm, cm, _ = refresh_thresholds(mus, float(refresh_interval))

    def meet(fn, xs):
        d = np.array([fn(x) for x in xs])
        out = []
        for i in np.nonzero(np.isfinite(d[:-1]) & np.isfinite(d[1:])
                            & (np.sign(d[:-1]) * np.sign(d[1:]) < 0))[0]:
            out.append(brentq(fn, xs[i], xs[i + 1], xtol=1e-14))
        return out

    def gap_k(k):
        f, c, _ = refresh_thresholds(momentum, k)
        return float(f - c)

    def gap_mu(m):
        f, c, _ = refresh_thresholds(m, float(refresh_interval))
        return float(f - c)

    cod_k = [{"refresh_interval": k, "eta_K": float(refresh_thresholds(momentum, k)[0])}
             for k in meet(gap_k, ks)]
    cod_mu = [{"momentum": m, "eta_K": float(refresh_thresholds(m, float(refresh_interval))[0])}
              for m in meet(gap_mu, mus)]
    return {"momentum": momentum, "refresh_interval": refresh_interval,
            "k": ks, "flip_k": fk, "complex_k": ck, "codim2_k": cod_k,
            "mu": mus, "flip_mu": fm, "complex_mu": cm, "codim2_mu": cod_mu}


# ----------------------------------------------------------------------------------
# independent checks
# ----------------------------------------------------------------------------------

def _root_count(beta, p_ref, G, z_lo, z_hi, model, points=2001):
    zg = np.linspace(z_lo, z_hi, points)
    F = drift(_at(model, p_ref, G).replace(kl_coef=beta), zg)
    s = np.sign(F)
    return int(np.sum(s[:-1] * s[1:] < 0))


def check_fold(fold: dict, model=ATLAS_MODEL, *, rel=1e-8) -> dict:
    """Independent check of one fold (never uses dB/dz):

    - root count of F on a dense grid around the fold z: two roots on one side of
      beta_fold within ``rel`` and none on the other;
    - the extremum of B by derivative-free bounded Brent minimization.
    """
    G, r, zc, bc = fold["group_size"], fold["p_ref"], fold["z"], fold["kl_coef"]
    d = rel * max(1.0, abs(bc))
    # the two roots beside a fold sit about sqrt(2 d / |B''|) from it (B'' by finite differences)
    hh = 1e-3
    b2 = abs(float(_B(zc + hh, r, G, model)[0]) - 2 * bc + float(_B(zc - hh, r, G, model)[0])) / hh**2
    w = 4 * math.sqrt(2 * d / max(b2, 1e-12))
    counts = [_root_count(bc + s * d, r, G, zc - w, zc + w, model) for s in (-1, +1)]
    sgn = 1.0 if float(_B(zc + 1e-3, r, G, model)[0]) > bc else -1.0  # minimum or maximum?
    res = minimize_scalar(lambda zz: sgn * float(_B(zz, r, G, model)[0]), bounds=(zc - 0.05, zc + 0.05),
                          method="bounded", options={"xatol": 1e-10})
    b_ind = sgn * float(res.fun)
    ok_counts = sorted(counts) == [0, 2]
    return {"kl_coef": bc, "kl_coef_independent": b_ind, "abs_diff": abs(b_ind - bc),
            "root_counts_minus_plus": counts, "passed": ok_counts and abs(b_ind - bc) <= d}


def check_cusp(cusp: dict, model=ATLAS_MODEL, *, tol=1e-8, h=2e-3) -> dict:
    """Independent cusp: solve dB/dz = d2B/dz2 = 0 with derivatives from finite differences
    of B alone (fourth-order stencils), starting from a perturbed guess."""
    G = cusp["group_size"]

    def Bv(zz, rr):
        return float(_B(zz, rr, G, model)[0])

    def eqs(y):
        zz, rr = y
        b = [Bv(zz + j * h, rr) for j in (-2, -1, 0, 1, 2)]
        d1 = (b[0] - 8 * b[1] + 8 * b[3] - b[4]) / (12 * h)
        d2 = (-b[0] + 16 * b[1] - 30 * b[2] + 16 * b[3] - b[4]) / (12 * h * h)
        return [d1, d2]

    y0 = np.array([cusp["z"] + 0.05, cusp["p_ref"] - 0.01])
    sol = fsolve(eqs, y0, xtol=1e-12, full_output=True)[0]
    # the stencil error is O(h^4); refine with a smaller step from the first solution
    h = h / 4
    sol = fsolve(eqs, sol, xtol=1e-12, full_output=True)[0]
    ind = {"p_ref": float(sol[1]), "z": float(sol[0]), "kl_coef": Bv(sol[0], sol[1])}
    diffs = {k: abs(ind[k] - cusp[k]) for k in ("p_ref", "z", "kl_coef")}
    return {"independent": ind, "abs_diff": diffs, "tolerance": tol,
            "passed": max(diffs["p_ref"], diffs["kl_coef"]) <= tol}


@dataclass(frozen=True)
class Atlas(Result):
    """The two-parameter atlas (see the module docstring)."""

    p_ref_plane: FoldCurve
    group_size_plane: list
    group_size_cusp: dict
    discrete: dict
    checks: dict = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return all(c["passed"] for c in self.checks.get("folds", [])) and \
            self.checks.get("cusp", {}).get("passed", False)

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1

    def to_dict(self) -> dict:
        d = {"p_ref_plane": self.p_ref_plane.to_dict(), "group_size_plane": self.group_size_plane,
             "group_size_cusp": self.group_size_cusp,
             "codim2": {"k": self.discrete["codim2_k"], "mu": self.discrete["codim2_mu"]},
             "checks": self.checks, "passed": self.passed}
        return jsonable(d)

    def __str__(self) -> str:
        c = self.p_ref_plane.cusp
        return (f"cusp (G={c['group_size']}): p_ref={c['p_ref']:.10f}, beta={c['kl_coef']:.10f}; "
                f"bistability in G begins at G={self.group_size_cusp['first_bistable']}; "
                f"checks {'passed' if self.passed else 'FAILED'}")


def check_atlas(curve: FoldCurve, g_rows, model=ATLAS_MODEL, *, n_folds=4) -> dict:
    """Independent checks of a sample of folds (both planes) and of the cusp."""
    folds = []
    idx = np.linspace(0, curve.p_ref.size - 1, n_folds).astype(int)
    for i in idx:
        f = {"group_size": curve.group_size, "p_ref": float(curve.p_ref[i]), "z": float(curve.z[i]),
             "kl_coef": float(curve.kl_coef[i])}
        folds.append({"plane": "p_ref", "p_ref": f["p_ref"], **check_fold(f, model)})
    for row in g_rows[-2:]:
        for f in row["folds"]:
            folds.append({"plane": "G", "group_size": row["group_size"], **check_fold(f, model)})
    return {"folds": folds, "cusp": check_cusp(curve.cusp, model)}


def atlas(*, group_size=64, p_ref=0.3, group_sizes=None, momentum=0.8, refresh_interval=4,
          model=ATLAS_MODEL) -> Atlas:
    """Fold curve and cusp in (beta, p_ref) at ``group_size``; folds per G in (beta, G) at
    ``p_ref``; the L2 boundaries; the independent checks."""
    curve = continue_folds(group_size, p_ref_start=p_ref, model=model)
    Gs = list(range(2, 41)) + [48, 56, 64, 80, 96, 112, 128] if group_sizes is None else list(group_sizes)
    rows = folds_in_group_size(Gs, p_ref=p_ref, model=model)
    bist = [r["group_size"] for r in rows if len(r["folds"]) >= 2]
    first = min(bist) if bist else None
    last_mono = max((r["group_size"] for r in rows if len(r["folds"]) < 2
                     and (first is None or r["group_size"] < first)), default=None)
    gcusp = {"p_ref": p_ref, "first_bistable": first, "last_monostable": last_mono}
    disc = discrete_boundaries(momentum=momentum, refresh_interval=refresh_interval)
    checks = check_atlas(curve, [r for r in rows if len(r["folds"]) >= 2], model)
    return Atlas(curve, rows, gcusp, disc, checks)
