r"""Estimators (numpy only): per-window multipliers from AR(1)/AR(2) fits with jackknife SEs.

Near the fixed point the top-mode coordinate at window starts obeys the window map
:math:`M` of the exact theory, so it is an AR(1) (:math:`\mu = 0`: :math:`M` has
eigenvalues :math:`1 - \eta K k` and 0) or an AR(2) process
(:math:`x_{w+2} = \operatorname{tr}M\,x_{w+1} - \det M\,x_w`).  Coefficients are fitted
by least squares pooled over runs (no intercept); standard errors are leave-one-run-out
jackknife estimates (robust to correlation within a run).  The multiplier is the
spectral radius of the fitted map.
"""

from __future__ import annotations


import numpy as np

__all__ = ["ar1", "ar2", "ar_multiplier", "jackknife", "observed_k_max_range", "observed_k_max_words",
           "overshoot"]


def _finite_rows(series):
    s = np.asarray(series, dtype=float)
    if s.ndim == 1:
        s = s[:, None]
    return s


def _ar_fit(s, order):
    """Pooled no-intercept AR(order) coefficients of s (T, R); None if degenerate."""
    T = s.shape[0]
    if T <= order:
        return None
    y = s[order:].ravel(order="F") if False else s[order:]
    cols = [s[order - j - 1:T - j - 1] for j in range(order)]
    X = np.stack([c.ravel() for c in cols], axis=1)
    yv = y.ravel()
    ok = np.isfinite(yv) & np.all(np.isfinite(X), axis=1)
    if ok.sum() < order + 1:
        return None
    coef, *_ = np.linalg.lstsq(X[ok], yv[ok], rcond=None)
    return coef


def jackknife(fn, s):
    """Leave-one-run-out jackknife of fn(s (T, R)) -> (estimate, se)."""
    s = _finite_rows(s)
    est = np.asarray(fn(s), dtype=float)
    R = s.shape[1]
    if R < 2:
        return est, np.full_like(est, np.nan)
    reps = np.array([np.asarray(fn(np.delete(s, i, axis=1)), dtype=float) for i in range(R)])
    se = np.sqrt((R - 1) / R * np.sum((reps - reps.mean(0)) ** 2, axis=0))
    return est, se


def ar1(s):
    """AR(1) coefficient c (x_{w+1} = c x_w) and its jackknife SE."""
    f = lambda a: _ar_fit(a, 1)[0]  # noqa: E731
    c, se = jackknife(f, s)
    return float(c), float(se)


def ar2(s):
    """AR(2) coefficients (c1, c2) (x_{w+2} = c1 x_{w+1} + c2 x_w) and their jackknife SEs."""
    c, se = jackknife(lambda a: _ar_fit(a, 2), s)
    return (float(c[0]), float(c[1])), (float(se[0]), float(se[1]))


def _radius(c1, c2):
    roots = np.roots([1.0, -c1, -c2])
    return float(np.max(np.abs(roots)))


def ar_multiplier(s, order):
    """Per-window multiplier (spectral radius of the fitted map) and its jackknife SE.

    order 1: |c|; order 2: max |root| of lambda^2 - c1 lambda - c2.  Also returns the
    fitted coefficients and the discriminant c1^2 + 4 c2 (< 0: complex pair) with SE.
    """
    if order == 1:
        f = lambda a: abs(_ar_fit(a, 1)[0])  # noqa: E731
        m, se = jackknife(f, s)
        c, cse = ar1(s)
        return {"multiplier": float(m), "se": float(se), "coef": [c], "coef_se": [cse],
                "discriminant": None, "discriminant_se": None}

    def f(a):
        c = _ar_fit(a, 2)
        return np.array([_radius(c[0], c[1]), c[0] ** 2 + 4 * c[1], c[0], c[1]])

    est, se = jackknife(f, s)
    return {"multiplier": float(est[0]), "se": float(se[0]), "coef": [float(est[2]), float(est[3])],
            "coef_se": [float(se[2]), float(se[3])], "discriminant": float(est[1]),
            "discriminant_se": float(se[1])}


def overshoot(s):
    """Overshoot of the mean response: -min_t mean x_t / mean x_0 (0 if it never crosses)."""
    def f(a):
        m = np.nanmean(a, axis=1)
        return max(0.0, -float(np.min(m)) / float(m[0]))
    est, se = jackknife(f, s)
    return float(est), float(se)


def predicted_overshoot(a, mu, steps):
    """Overshoot of the exact k=1 heavy-ball recurrence from (x0, v0) = (1, 0)."""
    x, v, lo = 1.0, 0.0, 1.0
    for _ in range(int(steps)):
        v = mu * v - a * x
        x = x + v
        lo = min(lo, x)
    return max(0.0, -lo)


def observed_k_max_range(rows):
    """The observed largest stable k with its one-SE uncertainty: ``(low, high)``.

    A k is *resolved* stable where its multiplier plus one SE is below 1, resolved unstable
    where the multiplier minus one SE is above 1, and unresolved otherwise.  ``low`` is the
    largest k of the run of resolved-stable k from the smallest (``None`` where the smallest k
    tried is not resolved stable), ``high`` the k before the first resolved-unstable one;
    ``low < high`` where the sweep cannot tell the k between apart (the point verdicts of
    :func:`grpo_theory.lab.experiments.observed_k_max` fall in between).  ``rows``: objects or
    dicts with ``k``, ``multiplier``, ``se``.  ``(None, None)`` where no k is resolved
    unstable."""
    get = (lambda r, key: r[key]) if rows and isinstance(rows[0], dict) else getattr
    low = high = None
    resolved_so_far = True
    for r in sorted(rows, key=lambda r: get(r, "k")):
        k, m, se = get(r, "k"), get(r, "multiplier"), get(r, "se")
        if not (np.isfinite(m) and np.isfinite(se)):
            break
        if m - se > 1:
            high = k - 1
            break
        if resolved_so_far and m + se < 1:
            low = k
        else:
            resolved_so_far = False
    if high is None or (low is not None and low > high):
        return None, None
    return low, high


def observed_k_max_words(k_point, k_range) -> str:
    """The observed k_max in words: the point verdict, or the range with the k the standard
    errors leave open marked *unresolved* (its multiplier within one SE of 1), e.g.
    ``"6-7 (7 unresolved)"``, ``"<= 7 (7 unresolved)"``."""
    lo, hi = k_range
    if hi is None:
        return "-" if k_point is None else str(k_point)
    if lo == hi:
        return str(lo)
    start = hi if lo is None else lo + 1
    open_ = str(hi) if start == hi else f"{start}-{hi}"
    return (f"<= {hi}" if lo is None else f"{lo}-{hi}") + f" ({open_} unresolved)"
