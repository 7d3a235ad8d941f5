r"""Forecast of a reward curve from a prefix: the curve, its 90 % band, the end level, the plateau and
the time to 90 % of it, each with an interval; calibrated on the prefix's own future.

Families, simplest first
    ``constant`` (the level carried forward: the mean of the last :math:`k` prefix points, the
    window chosen below), ``exponential`` and the mean-field families (3 parameters), the
    difficulty mixture (4), the L3 oscillator (5) — the curve formulas of
    :mod:`grpo_theory.runs.curves`.  Where the relaxation families do not apply to the prefix
    (too noisy, flat or falling: :func:`grpo_theory.runs.curves.applicability`) only the level
    is left: the forecast falls back to it and says why, instead of declining.  It declines
    only when not even the level can be checked (fewer than 3 rolling-origin errors).

Choice of family
    Rolling origin inside the prefix (fit on its first 50 / 65 / 80 %, predict the rest of it):
    among the families with errors at every usable origin, the simplest whose mean squared
    error is within one standard error of the best (the one-standard-error rule: a richer
    family must earn its parameters on the prefix's own future).  The level's window is chosen the
    same way first, among the naive forecast's :math:`k = \max(1, \min(5, n/10))` points and a
    quarter or a half of the prefix (:data:`LEVEL_FRACTIONS`): the widest within one standard
    error of the best, the smoothest the prefix's future allows (a wider window averages out
    more noise and lags a trend more).

The 90 % band
    The chosen family's predictive sd at each held-out step: the residual noise of its fit plus
    the delta-method uncertainty of the fitted curve, the latter inflated by
    :math:`(1 + \rho)/(1 - \rho)` for the residuals' lag-1 autocorrelation :math:`\rho` (the
    effective number of points); for the level, the step-to-step noise and the uncertainty of
    the mean.  It is then calibrated on the prefix's own future: the rolling-origin errors in
    units of the same predictive sd have an RMS :math:`\kappa` (a straight line in the horizon
    where they grow with it).  The families within one standard error of the best
    rolling-origin error are the ones the prefix cannot tell apart; the curve is the simplest
    one's, and the band also holds their spread about it, as a mixture of them with equal
    weights would: :math:`\pm 1.645\sqrt{\max(1, \kappa)^2 s(h)^2 + d(h)^2}` with
    :math:`d(h)^2` the mean squared distance of their curves from the forecast, cut to the
    reward's range.  Where the simplest family extrapolates a plateau the others do not, the
    band says so.  Nothing is learned from other runs: the band's one calibration is the
    prefix's own rolling-origin errors (:math:`\kappa`), so its coverage on any benchmark is out
    of sample.  A split-conformal scale learned from labelled runs' held-out points
    (:func:`conformal_scale`) was measured leave-one-repository-out by the scorecard and lowered
    the pooled coverage (repositories differ more than a scale common to them can fix), so it is
    not applied; ``calibration`` multiplies the half-width by a scale a user has learned from
    their own runs.

Binary rewards
    With a reward in [0, 1] every prediction, band, end level and plateau is cut to [0, 1];
    the interval of the plateau and of the time to 90 % come from parameter draws from the
    fit's (inflated) covariance, each cut to the range.

The baselines (empirical laws from the literature, written here once)
    - ``last_value``: the naive forecast, the level carried forward (here the mean of the
      last :math:`\max(1, \min(5, n/10))` prefix points, which only lowers its noise);
      Hyndman & Athanasopoulos, *Forecasting: Principles and Practice*, 3rd ed., §5.2.
    - ``exponential``: the single exponential of the theory
      (:func:`grpo_theory.theory.oscillator.single_exponential`) fitted to the prefix.
    - ``scalerl_sigmoid``: :math:`R = R_0 + (A - R_0)/(1 + (C_{mid}/C)^B)`, the saturating
      compute-performance curve of ScaleRL (Khatri et al., *The Art of Scaling
      Reinforcement Learning Compute for LLMs*, arXiv 2510.13786), with compute :math:`C`
      in optimizer steps counted from 1.
    - ``entropy_law``: :math:`R = -a\,e^{H} + b` (Cui et al., *The Entropy Mechanism of
      Reinforcement Learning for Reasoning Language Models*, arXiv 2505.22617), where
      entropy is logged.  It maps entropy to reward, so on the held-out steps it is given
      the *logged* entropy: an oracle on entropy, as in the paper's fits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy import optimize

from grpo_theory.results import jsonable
from grpo_theory.runs.curves import (
    BINARY_FAMILIES,
    MODEL_NAMES,
    SPECS,
    applicability,
    finite_sorted,
    fit_curve,
    is_binary_range,
    time_to_fraction,
)
from grpo_theory.validate import ParameterError, check_choice, check_real

__all__ = [
    "BASELINES",
    "COMPLEXITY",
    "MIN_LEVEL_POINTS",
    "MIN_TRAIN_POINTS",
    "ORIGINS",
    "Z90",
    "ForecastResult",
    "conformal_scale",
    "LevelFit",
    "LEVEL_FRACTIONS",
    "level_points",
    "entropy_law",
    "fit_entropy_law",
    "fit_scalerl_sigmoid",
    "forecast",
    "last_value",
    "noise_sd",
    "rolling_origin",
    "scalerl_sigmoid",
]

#: Central 90 % of a normal: the half-width is this many standard deviations.
Z90 = 1.6448536269514722
#: Rolling origins, as fractions of the training prefix.
ORIGINS = (0.5, 0.65, 0.8)
#: Names of the baselines, in the order they are reported.
BASELINES = ("last_value", "exponential", "scalerl_sigmoid", "entropy_law")


# ----------------------------------------------------------------------------------
# Baselines (empirical laws; sources in the module docstring)
# ----------------------------------------------------------------------------------

def level_window(n: int) -> int:
    """Points the level carried forward averages: ``max(1, min(5, n // 10))`` of a prefix of
    ``n`` (the one definition, for the naive baseline and for the forecast's ``constant``)."""
    return max(1, min(5, int(n) // 10))


def last_value(y_train) -> float:
    """The naive forecast: the mean of the last :func:`level_window` prefix points."""
    y_train = np.asarray(y_train, dtype=float)
    return float(np.mean(y_train[-level_window(y_train.size):]))


def scalerl_sigmoid(c, r0, a, c_mid, b):
    """ScaleRL's saturating curve ``R0 + (A - R0) / (1 + (C_mid / C)^B)``, C in steps (C > 0)."""
    c = np.maximum(np.asarray(c, dtype=float), 1e-9)
    return r0 + (a - r0) / (1.0 + (c_mid / c) ** b)


def fit_scalerl_sigmoid(t, y):
    """Least-squares ScaleRL sigmoid on steps counted from 1 (``C = t - t[0] + 1``).

    Returns ``(predict, params)``: ``predict(steps)`` in the log's steps and
    ``params = (R0, A, C_mid, B)``.
    """
    t = np.asarray(t, dtype=float)
    y = np.asarray(y, dtype=float)
    c = t - t[0] + 1.0
    span = float(np.ptp(y)) or 1.0
    lo = [float(y.min()) - span, float(y.min()) - span, 1e-3, 0.1]
    hi = [float(y.max()) + span, float(y.max()) + 2 * span, 100 * float(c[-1]), 10.0]
    p0 = [float(y[0]), float(y[-1]), float(np.median(c)), 1.0]
    p0 = np.clip(p0, np.array(lo) + 1e-9, np.array(hi) - 1e-9)
    with np.errstate(all="ignore"):
        sol = optimize.least_squares(lambda q: scalerl_sigmoid(c, *q) - y, p0, bounds=(lo, hi),
                                     max_nfev=400)
    q = tuple(float(v) for v in sol.x)
    t0 = float(t[0])
    return (lambda tt: scalerl_sigmoid(np.asarray(tt, dtype=float) - t0 + 1.0, *q)), q


def entropy_law(h, a, b):
    """The entropy-performance law ``R = -a exp(H) + b`` (arXiv 2505.22617)."""
    return -a * np.exp(np.asarray(h, dtype=float)) + b


def fit_entropy_law(h, y) -> tuple:
    """``(a, b)`` of :func:`entropy_law` by linear least squares on paired ``(H, R)``."""
    h = np.asarray(h, dtype=float)
    X = np.column_stack([-np.exp(h), np.ones_like(h)])
    (a, b), *_ = np.linalg.lstsq(X, np.asarray(y, dtype=float), rcond=None)
    return float(a), float(b)


def noise_sd(y) -> float:
    """Step-to-step noise sd from lag-1 differences, ``sqrt(Var(diff y) / 2)``."""
    y = np.asarray(y, dtype=float)
    if y.size < 3:
        return math.nan
    return float(np.std(np.diff(y)) / math.sqrt(2.0))


# ----------------------------------------------------------------------------------
# The forecast
# ----------------------------------------------------------------------------------

def _rmse(a, b=0.0) -> float:
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    return float(np.sqrt(np.mean(d ** 2))) if d.size else math.nan


def _baselines(tt, yt, th, yh, bounds, entropy, exp_fit) -> dict:
    out = {"last_value": {"holdout_rmse": _rmse(np.clip(last_value(yt), *bounds), yh),
                          "level": last_value(yt)}}
    if exp_fit is None:
        try:
            exp_fit = fit_curve(tt, yt, "exponential")
        except ParameterError:
            exp_fit = None
    if exp_fit is not None:
        out["exponential"] = {"holdout_rmse": _rmse(np.clip(exp_fit.predict(th - exp_fit.t0),
                                                            *bounds), yh)}
    sig, q = fit_scalerl_sigmoid(tt, yt)
    out["scalerl_sigmoid"] = {"holdout_rmse": _rmse(np.clip(sig(th), *bounds), yh),
                              "params": dict(zip(("R0", "A", "C_mid", "B"), q))}
    if entropy is not None:
        hs, hv = (np.asarray(a, dtype=float) for a in entropy)
        ok = np.isfinite(hs) & np.isfinite(hv)
        hs, hv = hs[ok], hv[ok]
        order = np.argsort(hs)
        hs, hv = hs[order], hv[order]
        if np.sum(hs <= tt[-1]) >= 3:
            a, b = fit_entropy_law(np.interp(tt, hs, hv), yt)
            pred = np.clip(entropy_law(np.interp(th, hs, hv), a, b), *bounds)
            out["entropy_law"] = {"holdout_rmse": _rmse(pred, yh), "a": a, "b": b,
                                  "note": "uses the logged entropy on the held-out steps"}
    return out


#: fewest prefix points for a forecast (the exponential's p + 2)
MIN_TRAIN_POINTS = 5
#: fewest prefix points for any forecast: below MIN_TRAIN_POINTS only the level, with a Student-t
#: band from the points' own spread (no rolling-origin check is possible)
MIN_LEVEL_POINTS = 2
#: parameters of each family, for the one-standard-error rule
COMPLEXITY = {"constant": 1, "exponential": 3, "mean_field_std": 3, "mean_field_mean": 3,
              "mixture_std": 4, "mixture_mean": 4, "oscillator": 5}
#: parameter draws for the intervals of the plateau and the time to 90 %
PARAM_DRAWS = 200


#: The level's candidate windows, as fractions of the prefix, narrowest first: 0 is the naive
#: forecast's window (:func:`level_window`); the others never narrower than it
LEVEL_FRACTIONS = (0.0, 0.25, 0.5)


def level_points(n: int, fraction: float = 0.0) -> int:
    """Points the level averages over a prefix of ``n`` with a window of ``fraction`` of it:
    ``max(level_window(n), floor(fraction n))`` (``fraction`` 0: the naive forecast's)."""
    return max(level_window(n), int(fraction * n))


class LevelFit:
    """The level carried forward: the mean of the last ``k`` = :func:`level_points` ``(n,
    fraction)`` points (``fraction`` 0: the naive forecast, :func:`last_value`), its noise and
    uncertainty."""

    model = "constant"
    param_names = ("level",)
    formula = "R(t) = level"

    def __init__(self, t, y, fraction=0.0):
        t = np.asarray(t, dtype=float)
        y = np.asarray(y, dtype=float)
        self.n = int(y.size)
        self.k = level_points(self.n, fraction)
        self.t0 = float(t[0])
        self.level = float(np.mean(y[-self.k:]))
        self.sigma = noise_sd(y) if y.size >= 3 else 0.0
        self.params = {"level": self.level}
        self.stderr = {"level": self.sigma / math.sqrt(self.k)}
        rss = float(np.sum((y - self.level) ** 2))
        tss = float(np.sum((y - y.mean()) ** 2))
        self.r2 = 1.0 - rss / tss if tss > 0 else math.nan
        self.aic = self.n * math.log(max(rss / self.n, 1e-300)) + 2
        self.plateau = self.level
        self.time_to_90 = math.nan

    def predict(self, t):
        return np.full(np.shape(t), self.level)

    def predictive_sd(self, t):
        return np.full(np.shape(t), math.sqrt(self.sigma ** 2 * (1 + 1.0 / self.k)))


class _Curve:
    """A fitted family with its predictive sd (residual noise + autocorrelation-inflated
    parameter uncertainty)."""

    def __init__(self, fit, t, y):
        self.fit = fit
        self.model = fit.model
        r = y - fit.predict(t - fit.t0)
        self.s = float(np.sqrt(np.sum(r ** 2) / max(r.size - len(fit.param_names), 1)))
        rho = 0.0
        if r.size > 3 and np.std(r) > 0:
            d = r - r.mean()
            rho = float(np.sum(d[1:] * d[:-1]) / np.sum(d * d))
        self.rho = min(max(rho, 0.0), 0.95)
        self.inflation = (1 + self.rho) / (1 - self.rho)

    def predict(self, t):
        return self.fit.predict(np.asarray(t, dtype=float) - self.fit.t0)

    def predictive_sd(self, t):
        ps = self.fit.prediction_sd(np.asarray(t, dtype=float) - self.fit.t0)
        return np.sqrt(self.s ** 2 + self.inflation * ps ** 2)


def _build(model, t, y, level_fraction=0.0):
    """The fitted family, or ``None`` where it cannot be fitted or its parameter uncertainty is
    unknown (a singular covariance, e.g. a parameter at its bound: no band can be given);
    ``level_fraction``: the level's window (:class:`LevelFit`)."""
    if model == "constant":
        return LevelFit(t, y, level_fraction) if y.size >= 3 else None
    if y.size < COMPLEXITY[model] + 2:
        return None
    try:
        c = _Curve(fit_curve(t, y, model), t, y)
    except ParameterError:
        return None
    probe = c.fit.prediction_sd(np.array([0.0, float(t[-1] - t[0]) * 2 + 1.0]))
    return c if np.all(np.isfinite(probe)) else None


def rolling_origin(t, y, models, bounds=(-np.inf, np.inf), origins=ORIGINS,
                   level_fraction=0.0) -> dict:
    """Per family: ``(errors, horizons, standardized errors)`` on the rest of the prefix from
    each origin at which it can be fitted (standardized by its own predictive sd); the level
    with the window ``level_fraction`` (:class:`LevelFit`)."""
    out = {m: ([], [], []) for m in models}
    done = set()
    for frac in origins:
        n0 = int(round(frac * t.size))
        if n0 in done or n0 < 3 or t.size - n0 < 1:
            continue
        done.add(n0)
        for m in models:
            c = _build(m, t[:n0], y[:n0], level_fraction)
            if c is None:
                continue
            pred = np.clip(c.predict(t[n0:]), *bounds)
            e = pred - y[n0:]
            out[m][0].extend(e.tolist())
            out[m][1].extend((t[n0:] - t[n0 - 1]).tolist())
            out[m][2].extend((e / np.maximum(c.predictive_sd(t[n0:]), 1e-12)).tolist())
    return {m: tuple(np.array(a, dtype=float) for a in v) for m, v in out.items()}


def _select(ro):
    """The simplest family within one standard error of the best rolling-origin MSE, among
    those with errors at every usable origin (>= 3 errors); returns ``(best, mse, tied)`` with
    ``tied`` the families within that standard error (the ones the prefix cannot tell apart)."""
    counts = {m: v[0].size for m, v in ro.items()}
    top = max(counts.values(), default=0)
    elig = ([m for m, c in counts.items() if c >= 3 and c == top]
            or [m for m, c in counts.items() if c >= 3])
    if not elig:
        return None, {}, []
    mse, tied = _within_one_se({m: ro[m][0] for m in elig})
    best = min(tied, key=lambda m: (COMPLEXITY[m], mse[m]))
    return best, mse, tied


def _within_one_se(errors: dict):
    """The one-standard-error rule's candidates: ``(mse, tied)``, each candidate's mean squared
    rolling-origin error and, in ``errors``' order, those within one standard error (of the
    squared errors' mean) of the best; the caller picks among ``tied``."""
    mse = {k: float(np.mean(e ** 2)) for k, e in errors.items()}
    b = min(errors, key=lambda k: mse[k])
    se = float(np.std(errors[b] ** 2) / math.sqrt(errors[b].size))
    return mse, [k for k in errors if mse[k] <= mse[b] + se]


def _level_fraction(t, y, bounds):
    r"""The level's window (:data:`LEVEL_FRACTIONS`) by rolling origin inside the prefix: the
    widest whose mean squared error is within one standard error of the best (the
    one-standard-error rule's choice of the smoothest: a wider window averages out more noise
    and lags a trend more, and the prefix's own future says which costs more).  0 (the naive
    window) where the prefix leaves fewer than 3 rolling-origin errors (every window is checked
    at the same origins)."""
    ro = {fr: rolling_origin(t, y, ["constant"], bounds, level_fraction=fr)["constant"][0]
          for fr in LEVEL_FRACTIONS}
    if ro[LEVEL_FRACTIONS[0]].size < 3:
        return 0.0
    return max(_within_one_se(ro)[1])


def _kappa2(u, horizons, h):
    r"""Squared calibration factor at horizons ``h``: the standardized rolling-origin errors'
    mean square as a straight line in the horizon, :math:`u^2 \approx c_0 + c_1 h` with
    :math:`c_1 \ge 0` (least squares), extrapolated to the held-out horizons, never below 1
    (the family's own predictive sd).  A trend the family misses grows the error with the
    horizon; a correct family keeps :math:`u^2 \approx 1`."""
    h = np.asarray(h, dtype=float)
    if u.size < 3 or np.ptp(horizons) == 0:
        return np.full(h.shape, max(1.0, float(np.mean(u ** 2)) if u.size else 1.0))
    A = np.column_stack([np.ones_like(horizons), horizons])
    (c0, c1), *_ = np.linalg.lstsq(A, u ** 2, rcond=None)
    res = u ** 2 - A @ np.array([c0, c1])
    dof = max(u.size - 2, 1)
    cov = float(np.sum(res ** 2)) / dof * np.linalg.pinv(A.T @ A)
    se1 = math.sqrt(max(cov[1, 1], 0.0))
    if not c1 > 2 * se1:            # no significant growth: do not extrapolate the noise of u^2
        c0, c1 = float(np.mean(u ** 2)), 0.0
    return np.maximum(1.0, c0 + c1 * h)


def _draws(curve, bounds, rng):
    """Plateau and time to 90 % of parameter draws from the fit's inflated covariance."""
    fit = curve.fit
    p = np.array([fit.params[k] for k in fit.param_names])
    cov = fit.covariance
    if cov is None or not np.all(np.isfinite(cov)):
        return None
    spec = SPECS[fit.model]
    try:
        draws = rng.multivariate_normal(p, curve.inflation * cov, size=PARAM_DRAWS,
                                        check_valid="ignore")
    except (ValueError, np.linalg.LinAlgError):
        return None
    plateaus, t90 = [], []
    for q in draws:
        params = dict(zip(fit.param_names, q))
        pl = float(spec.plateau(params))
        plateaus.append(min(max(pl, bounds[0]), bounds[1]))
        if fit.model == "exponential":
            t90.append(q[2] * math.log(10.0) if q[2] > 0 else math.nan)
            continue
        f = lambda tt, q=q: spec.curve(tt, *q)  # noqa: E731
        try:
            with np.errstate(all="ignore"):
                init = float(np.asarray(f(np.array([0.0])))[0])
            t90.append(time_to_fraction(f, init, pl, 0.9, horizon=1e5))
        except ParameterError:            # a draw outside the family's domain (e.g. rate < 0)
            t90.append(math.nan)
    return np.array(plateaus), np.array(t90)


def _interval(x):
    x = np.asarray(x, dtype=float)
    x = x[np.isfinite(x)]
    if x.size < PARAM_DRAWS // 2:
        return None
    return [float(np.quantile(x, 0.05)), float(np.quantile(x, 0.95))]


@dataclass
class ForecastResult:
    """A forecast from the first ``train_fraction`` of a log (see the module docstring).

    ``prediction``/``lower``/``upper``: the curve and its 90 % band on the held-out steps
    ``t_holdout`` (``None`` when the forecast declined, with ``reasons``); ``fallback``: why
    the relaxation families were left out (the level was used); ``fits``: every candidate
    family fitted to the whole prefix (:class:`~grpo_theory.runs.curves.FitResult`, or
    :class:`LevelFit`).  ``end_level``, ``plateau``,
    ``time_to_90``: ``{"value", "interval"}`` dicts (``None`` where the family has none).
    """

    train_fraction: float
    split_step: float
    n_train: int
    n_holdout: int
    applicable: bool
    reasons: list
    fallback: list
    best: str | None
    fits: dict
    holdout_rmse: dict
    origin_rmse: dict
    kappa: float | None
    baselines: dict
    reward_range: tuple | None
    noise_sd: float
    end_level: dict | None = None
    plateau: dict | None = None
    time_to_90: dict | None = None
    band_families: list = field(default_factory=list)
    t_holdout: np.ndarray = field(repr=False, default=None)
    y_holdout: np.ndarray = field(repr=False, default=None)
    prediction: np.ndarray = field(repr=False, default=None)
    lower: np.ndarray = field(repr=False, default=None)
    upper: np.ndarray = field(repr=False, default=None)
    #: the band's half-width on each held-out step before it is cut to the reward's range
    half: np.ndarray = field(repr=False, default=None)
    calibration: float = 1.0

    @property
    def band(self):
        return None if self.prediction is None else (self.lower, self.upper)

    @property
    def interval_coverage(self):
        if self.prediction is None or self.y_holdout is None or not self.y_holdout.size:
            return None
        return float(np.mean((self.y_holdout >= self.lower) & (self.y_holdout <= self.upper)))

    def to_dict(self) -> dict:
        curve = None
        if self.prediction is not None:
            curve = [{"step": float(s), "mean": float(m), "lower": float(lo), "upper": float(hi)}
                     for s, m, lo, hi in zip(self.t_holdout, self.prediction, self.lower,
                                             self.upper)]
        return jsonable({
            "train_fraction": self.train_fraction, "split_step": self.split_step,
            "n_train": self.n_train, "n_holdout": self.n_holdout,
            "applicable": {"forecast": self.applicable, "reasons": list(self.reasons)},
            "fallback": list(self.fallback), "best": self.best,
            "selection": "rolling origin inside the prefix (origins at "
                         + ", ".join(f"{o:.0%}" for o in ORIGINS)
                         + " of it): the simplest family within one standard error of the best",
            "holdout_rmse": self.holdout_rmse.get(self.best) if self.best else None,
            "curve": curve, "end_level": self.end_level, "plateau": self.plateau,
            "time_to_90": self.time_to_90,
            "interval": {"level": 0.9, "kappa": self.kappa, "noise_sd": self.noise_sd,
                         "holdout_coverage": self.interval_coverage,
                         "families": list(self.band_families),
                         "calibration": self.calibration,
                         "method": "c 1.645 sqrt(kappa^2 s^2 + spread^2): c the calibration "
                                   "factor (1 unless one is given: nothing is learned from other "
                                   "runs), s the family's predictive "
                                   "sd (residual noise + autocorrelation-inflated parameter "
                                   "uncertainty), kappa >= 1 the RMS of its standardized "
                                   "rolling-origin errors, spread^2 the mean squared distance of "
                                   "the families within one standard error of the best rolling-"
                                   "origin error (interval.families) from the forecast curve; cut "
                                   "to the reward's range"},
            "reward_range": list(self.reward_range) if self.reward_range else None,
            "baselines": self.baselines,
            "models": {m: {"holdout_rmse": self.holdout_rmse.get(m),
                           "rolling_origin_rmse": self.origin_rmse.get(m)}
                       for m in self.holdout_rmse}})


def conformal_scale(records, level=0.9, *, weight="points"):
    r"""The split-conformal scale of a band: the quantile of the scores ``|y - forecast| /
    half-width`` of ``records`` (dicts with ``"scores"``, one per run) at level
    :math:`\min(1, \lceil (m + 1)\,\text{level} \rceil / m)`, the finite-sample correction of
    split conformal prediction for :math:`m` units.  ``weight="points"``: every held-out point
    is a unit (the band is then calibrated for the coverage pooled over points, the scorecard's
    figure); ``"runs"``: every run is one unit, its points sharing its weight (calibrated for
    the mean of the runs' coverages, a long log no heavier than a short one).  ``None`` without
    scores.  Points of one run are not independent, so the finite-sample guarantee is nominal;
    the scorecard measures the coverage out of sample, leave-one-repository-out."""
    check_choice("weight", weight, ("points", "runs"))
    vals, wts = [], []
    runs = [r for r in records if len(r["scores"])]
    for r in runs:
        vals += list(r["scores"])
        wts += [1.0 / len(r["scores"]) if weight == "runs" else 1.0] * len(r["scores"])
    if not vals:
        return None
    m = len(runs) if weight == "runs" else len(vals)
    lev = min(1.0, math.ceil((m + 1) * level) / m)
    order = np.argsort(vals, kind="stable")
    v, w = np.asarray(vals, dtype=float)[order], np.cumsum(np.asarray(wts)[order])
    i = int(np.searchsorted(w, lev * w[-1] - 1e-12))
    return float(v[min(i, v.size - 1)])


def _short_prefix(f, tt, yt, th, yh, reward_range, entropy, calibration) -> ForecastResult:
    r"""A prefix of 2-4 points: the level carried forward (:func:`last_value`, the mean of the
    last :math:`k` = :func:`level_window` points: the last point) with the Student-t
    prediction interval of one new point about it, :math:`\hat y \pm t_{0.95,\,n-1}\,s
    \sqrt{1 + 1/k}` (``s`` the points' sample sd, which also holds any trend inside the prefix;
    on i.i.d. noise it covers 0.91-0.93, a little above 0.9, because the last point is one of
    those ``s`` is taken from), cut to the reward's range.  Nothing can be checked out of
    sample, so no calibration; declined where the points do not spread (no width for the
    band)."""
    from scipy.stats import t as student_t

    n = int(yt.size)
    bounds = reward_range or (-np.inf, np.inf)
    base = dict(train_fraction=f, split_step=float(tt[-1]), n_train=n, n_holdout=int(th.size),
                baselines=_baselines(tt, yt, th, yh, bounds, entropy, None),
                reward_range=reward_range, noise_sd=noise_sd(yt), t_holdout=th, y_holdout=yh,
                origin_rmse={})
    why = (f"a prefix of {n} points (< {MIN_TRAIN_POINTS}): the level, its 90 % band the Student-t "
           "interval of a new point from the points' own spread, not checked out of sample")
    s = float(np.std(yt, ddof=1))
    if not s > 0:
        return ForecastResult(applicable=False, best=None, fits={}, holdout_rmse={}, kappa=None,
                              reasons=[f"a prefix of {n} equal points: no spread to size a band "
                                       "from"], fallback=[why], **base)
    level, k = last_value(yt), level_window(n)
    half = calibration * float(student_t.ppf(0.95, n - 1)) * s * math.sqrt(1.0 + 1.0 / k)
    pred = np.full(th.shape, min(max(level, bounds[0]), bounds[1]))
    lower = np.maximum(pred - half, bounds[0])
    upper = np.minimum(pred + half, bounds[1])
    se = s / math.sqrt(k)
    hw = float(student_t.ppf(0.95, n - 1)) * se
    return ForecastResult(
        applicable=True, reasons=[], fallback=[why], best="constant", fits={},
        holdout_rmse={"constant": _rmse(pred, yh)}, kappa=None,
        end_level={"step": float(th[-1]), "value": float(pred[-1]),
                   "interval": [float(lower[-1]), float(upper[-1])]},
        plateau={"value": level, "interval": [max(level - hw, bounds[0]), min(level + hw, bounds[1])],
                 "note": "the level carried forward (the last value)"},
        time_to_90=None, prediction=pred, lower=lower, upper=upper,
        half=np.full(th.shape, half), calibration=calibration, **base)


def forecast(t, y, train_fraction: float, models=None, *, entropy=None,
            reward_range="auto", calibration=1.0) -> ForecastResult:
    """Fit the first ``train_fraction`` of the points (by step) and forecast the rest.

    ``models``: the relaxation families to consider (default all that apply to the reward);
    the level (``constant``) is always a candidate.  ``reward_range``: ``(low, high)``,
    ``None`` or ``"auto"`` ((0, 1) when every reward lies in [0, 1]).  Raises
    :class:`ParameterError` when the fraction leaves fewer than :data:`MIN_LEVEL_POINTS`
    training points or no held-out point; with fewer than :data:`MIN_TRAIN_POINTS` the forecast is
    the level with a Student-t band (:func:`_short_prefix`).  ``calibration``: a factor on the
    band's half-width (default 1, the band from the prefix alone; e.g. a split-conformal scale
    from :func:`conformal_scale` over a user's own runs).
    """
    f = check_real("train_fraction", train_fraction, low=0, high=1, low_open=True, high_open=True)
    calibration = check_real("calibration", calibration, low=0, low_open=True)
    t, y = finite_sorted(t, y)
    n_train = int(math.ceil(f * t.size))
    if n_train < MIN_LEVEL_POINTS or t.size - n_train < 1:
        raise ParameterError("train_fraction", train_fraction,
                             f"a fraction leaving >= {MIN_LEVEL_POINTS} training and >= 1 "
                             f"held-out points (the log has {t.size})")
    if isinstance(reward_range, str) and reward_range == "auto":
        reward_range = (0.0, 1.0) if is_binary_range(y) else None
    elif reward_range is not None:
        lo_, hi_ = (float(v) for v in reward_range)
        if not lo_ < hi_:
            raise ParameterError("reward_range", reward_range, "(low, high) with low < high")
        reward_range = (lo_, hi_)
    binary = reward_range is not None and reward_range[0] >= 0.0 and reward_range[1] <= 1.0
    requested = list(MODEL_NAMES if models is None else models)
    for m in requested:
        check_choice("model", m, MODEL_NAMES)
    families = [m for m in requested if binary or m not in BINARY_FAMILIES]
    bounds = reward_range or (-np.inf, np.inf)
    tt, yt, th, yh = t[:n_train], y[:n_train], t[n_train:], y[n_train:]
    if n_train < MIN_TRAIN_POINTS:
        return _short_prefix(f, tt, yt, th, yh, reward_range, entropy, calibration)
    fallback = list(applicability(tt, yt, min_points=MIN_TRAIN_POINTS))
    candidates = (families if not fallback else []) + ["constant"]
    baselines = _baselines(tt, yt, th, yh, bounds, entropy, None)
    sigma = noise_sd(yt)
    level_fraction = _level_fraction(tt, yt, bounds)
    ro = rolling_origin(tt, yt, candidates, bounds, level_fraction=level_fraction)
    best, mse, tied = _select(ro)
    base = dict(train_fraction=f, split_step=float(tt[-1]), n_train=n_train,
                n_holdout=int(th.size), fallback=fallback, baselines=baselines,
                reward_range=reward_range, noise_sd=sigma, t_holdout=th, y_holdout=yh,
                origin_rmse={m: math.sqrt(v) for m, v in mse.items()})
    curve = _build(best, tt, yt, level_fraction) if best is not None else None
    if curve is None:
        return ForecastResult(applicable=False, best=None, fits={}, holdout_rmse={}, kappa=None,
                          reasons=[f"too few points for a rolling-origin check ({n_train} in the "
                                   "prefix; not even the level has >= 3 out-of-sample errors)"],
                          **base)
    fits, holdout, preds = {}, {}, {}
    for m in candidates:
        c = curve if m == best else _build(m, tt, yt, level_fraction)
        if c is not None:
            preds[m] = np.clip(c.predict(th), *bounds)
            holdout[m] = _rmse(preds[m], yh)
            fits[m] = c if m == "constant" else c.fit
    u, hor = ro[best][2], ro[best][1]
    kappa = max(1.0, float(np.sqrt(np.mean(u ** 2)))) if u.size else 1.0
    k2 = _kappa2(u, hor, th - tt[-1])
    pred = preds[best]
    # the families the one-standard-error rule cannot tell apart, with equal weight: the curve is
    # the simplest one's, the band also holds their spread about it (a mixture's variance)
    band_families = [m for m in tied if m in preds and np.all(np.isfinite(preds[m]))]
    spread2 = (np.mean([(preds[m] - pred) ** 2 for m in band_families], axis=0)
               if band_families else np.zeros_like(pred))
    half = calibration * Z90 * np.sqrt(k2 * curve.predictive_sd(th) ** 2 + spread2)
    lower = np.maximum(pred - half, bounds[0])
    upper = np.minimum(pred + half, bounds[1])
    end = {"step": float(th[-1]), "value": float(pred[-1]),
           "interval": [float(lower[-1]), float(upper[-1])]}
    if best == "constant":
        hw = Z90 * math.sqrt(float(k2[-1])) * curve.stderr["level"]
        plateau = {"value": curve.level, "interval": [max(curve.level - hw, bounds[0]),
                                                      min(curve.level + hw, bounds[1])],
                   "note": f"the level carried forward: the mean of the last {curve.k} prefix "
                           "points, a window chosen by rolling origin"}
        t90 = None
    else:
        fit = curve.fit
        pl = min(max(float(fit.plateau), bounds[0]), bounds[1]) if math.isfinite(fit.plateau) \
            else None
        dr = _draws(curve, bounds, np.random.default_rng(0))
        plateau = {"value": pl, "interval": _interval(dr[0]) if dr else None,
                   "clipped": bool(pl is not None and pl != fit.plateau)}
        t90 = {"steps": fit.time_to_90 if math.isfinite(fit.time_to_90) else None,
               "step": (fit.t0 + fit.time_to_90) if math.isfinite(fit.time_to_90) else None,
               "interval_steps": _interval(dr[1]) if dr else None}
    return ForecastResult(applicable=True, reasons=[], best=best, fits=fits,
                      holdout_rmse=holdout, kappa=kappa, end_level=end, plateau=plateau,
                      time_to_90=t90, prediction=pred, lower=lower, upper=upper,
                      band_families=band_families, half=half, calibration=calibration, **base)
