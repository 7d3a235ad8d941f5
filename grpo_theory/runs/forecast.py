r"""Forecast a reward curve from a prefix of the log, next to the baselines, and say when not to.

The forecast
    Every applicable family of :mod:`grpo_theory.runs.fitting` (curve formulas from the
    theory) is fitted to the first ``train_fraction`` of the points.  The family is
    chosen by **rolling-origin** error inside that prefix (fit on the first 50 / 65 /
    80 % of the prefix, score on the rest of it), never by in-sample AIC and never by
    looking at the held-out part.  Predictions are clipped to the reward's range
    (``[0, 1]`` for a success rate) and so is the forecast plateau.

When it declines
    The model is a relaxation towards a fixed point.  The forecast says it does not apply
    (``applicable = False``, no family named, no prediction) when the prefix is too short,
    when its own step-to-step noise leaves no curve to fit (noise ceiling), when the
    prefix does not rise, when no family reaches half the noise ceiling, or when the
    rolling-origin check has too few points.  The baselines are still reported.

The 90 % prediction interval
    The step-to-step noise plus the error of the trend at horizon :math:`h` steps past
    the prefix,

    .. math:: s^2(h) = \sigma^2 + \max\big(\delta^2 h^2,\; s_\theta^2(h)\big),

    :math:`\sigma` the step-to-step noise of the prefix (lag-1 differences,
    :math:`\mathrm{Var}(\Delta y)/2`); :math:`\delta` the drift of the chosen family's
    trend error per step of horizon, from its rolling-origin errors
    (:math:`\delta^2 = \max(\overline{e^2} - \sigma^2, 0)/\overline{h^2}`: a wrong slope
    grows linearly with the horizon); :math:`s_\theta` the delta-method parameter
    uncertainty of the fit.  The last two both estimate the trend's error (empirically,
    misspecification included, and under the model), so the larger is taken rather than
    their sum, which would count it twice.  The half-width is :math:`1.645\,s(h)`, and the interval is
    cut to the reward's range.  Its calibration is tested on synthetic curves with a known
    answer (``tests/runs/test_forecast.py``) and measured on the benchmark
    (``benchmarks/scorecard.py``).

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

from grpo_theory.progress import progress
from grpo_theory.results import jsonable
from grpo_theory.runs.curves import (
    BINARY_FAMILIES,
    MODEL_NAMES,
    SPECS,
    FitResult,
    applicability,
    finite_sorted,
    fit_curve,
    is_binary_range,
    noise_ceiling,
)
from grpo_theory.validate import ParameterError, check_choice, check_real

__all__ = [
    "BASELINES",
    "ORIGINS",
    "Z90",
    "ForecastResult",
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
#: Fewest rolling-origin errors of the chosen family for a forecast (below: declined).
MIN_ORIGIN_ERRORS = 3


# ----------------------------------------------------------------------------------
# Baselines (empirical laws; sources in the module docstring)
# ----------------------------------------------------------------------------------

def last_value(y_train) -> float:
    """The naive forecast: the mean of the last ``max(1, min(5, n // 10))`` prefix points."""
    y_train = np.asarray(y_train, dtype=float)
    k = max(1, min(5, y_train.size // 10))
    return float(np.mean(y_train[-k:]))


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
# Rolling origin
# ----------------------------------------------------------------------------------

def rolling_origin(t, y, models, bounds=(-np.inf, np.inf), origins=ORIGINS) -> dict:
    """Per family: errors and horizons on the rest of the prefix from each origin.

    Returns ``{model: (errors, horizons)}`` (arrays; horizon in steps past the origin's
    last point).  Only origins at which *every* family can be fitted (``p + 2`` points for
    ``p`` parameters) are used, so the families are compared on the same errors: a
    flexible family is not judged on fewer, later origins than a simple one.
    """
    need = max(len(SPECS[m].params) + 2 for m in models)
    out = {m: ([], []) for m in models}
    done = set()
    for frac in origins:
        n0 = int(round(frac * t.size))
        if n0 in done or n0 < need or t.size - n0 < 2:
            continue
        done.add(n0)
        for m in models:
            try:
                fr = fit_curve(t[:n0], y[:n0], m)
            except ParameterError:  # pragma: no cover - n0 >= need
                continue
            pred = np.clip(fr.predict(t[n0:] - fr.t0), *bounds)
            out[m][0].extend((pred - y[n0:]).tolist())
            out[m][1].extend((t[n0:] - t[n0 - 1]).tolist())
    return {m: (np.array(e, dtype=float), np.array(h, dtype=float)) for m, (e, h) in out.items()}


def _rmse(a, b=0.0) -> float:
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    return float(np.sqrt(np.mean(d ** 2))) if d.size else math.nan


# ----------------------------------------------------------------------------------
# The result
# ----------------------------------------------------------------------------------

@dataclass
class ForecastResult:
    """A forecast from the first ``train_fraction`` of a log (see the module docstring).

    ``applicable``/``reasons``: whether the model applies to the prefix; when it does not,
    ``best``, ``prediction`` and ``interval_halfwidth`` are ``None`` and only the baselines
    are given.  ``holdout_rmse``/``origin_rmse``: per family on the held-out part / by
    rolling origin inside the prefix.  ``interval_halfwidth``: per held-out point (90 %).
    ``reward_range``: the range predictions and plateau are clipped to (``None``: not known,
    a dense reward).
    """

    train_fraction: float
    split_step: float
    n_train: int
    n_holdout: int
    applicable: bool
    reasons: list
    fits: dict
    holdout_rmse: dict
    origin_rmse: dict
    best: str | None
    baselines: dict
    interval_coverage: float | None
    reward_range: tuple | None
    noise_sd: float
    drift_per_step: float | None = None
    t_holdout: np.ndarray = field(repr=False, default=None)
    y_holdout: np.ndarray = field(repr=False, default=None)
    prediction: np.ndarray = field(repr=False, default=None)
    interval_halfwidth: np.ndarray = field(repr=False, default=None)

    @property
    def band(self):
        """The 90 % interval on the held-out steps, ``(low, high)`` cut to the reward's range;
        ``None`` when the forecast declined."""
        if self.prediction is None:
            return None
        lo, hi = self.reward_range or (-np.inf, np.inf)
        return (np.maximum(self.prediction - self.interval_halfwidth, lo),
                np.minimum(self.prediction + self.interval_halfwidth, hi))

    @property
    def plateau(self):
        """The chosen family's plateau, cut to the reward's range (``None`` if declined)."""
        if self.best is None:
            return None
        p = self.fits[self.best].plateau
        if self.reward_range is not None and math.isfinite(p):
            p = min(max(p, self.reward_range[0]), self.reward_range[1])
        return p

    def to_dict(self) -> dict:
        b = self.fits.get(self.best) if self.best is not None else None
        raw = b.plateau if b is not None else None
        out = {"train_fraction": self.train_fraction, "split_step": self.split_step,
               "n_train": self.n_train, "n_holdout": self.n_holdout,
               "applicable": {"forecast": self.applicable, "reasons": list(self.reasons)},
               "best": self.best,
               "selection": "rolling-origin RMSE inside the training prefix "
                            f"(origins at {', '.join(f'{o:.0%}' for o in ORIGINS)} of it)",
               "holdout_rmse": self.holdout_rmse.get(self.best) if b is not None else None,
               "plateau": self.plateau,
               "plateau_clipped": bool(raw is not None and self.plateau != raw),
               "plateau_stderr": _plateau_se(b) if b is not None else None,
               "time_to_90_steps": b.time_to_90 if b is not None else None,
               "step_90": (b.t0 + b.time_to_90 if b is not None and math.isfinite(b.time_to_90)
                           else None),
               "reward_range": list(self.reward_range) if self.reward_range else None,
               "interval": {"level": 0.9,
                            "halfwidth_first": (float(self.interval_halfwidth[0])
                                                if self.interval_halfwidth is not None else None),
                            "halfwidth_last": (float(self.interval_halfwidth[-1])
                                               if self.interval_halfwidth is not None else None),
                            "noise_sd": self.noise_sd, "drift_per_step": self.drift_per_step,
                            "holdout_coverage": self.interval_coverage,
                            "method": "1.645 sqrt(noise^2 + max((drift x horizon)^2, "
                                      "parameter variance)), cut to the reward's range"},
               "baselines": self.baselines,
               "models": {m: {"holdout_rmse": self.holdout_rmse[m],
                              "rolling_origin_rmse": self.origin_rmse.get(m),
                              "plateau": f.plateau, "time_to_90_steps": f.time_to_90,
                              "r2_train": f.r2}
                          for m, f in self.fits.items()}}
        return jsonable(out)


def _plateau_se(fit: FitResult):
    key = {"exponential": "plateau", "oscillator": "plateau"}.get(fit.model, "ceiling")
    return fit.stderr.get(key)


# ----------------------------------------------------------------------------------
# The forecast
# ----------------------------------------------------------------------------------

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


def forecast(t, y, train_fraction: float, models=None, *, entropy=None,
             reward_range="auto") -> ForecastResult:
    """Fit on the first ``train_fraction`` of the points (by step) and forecast the rest.

    ``entropy``: optional ``(steps, values)`` for the entropy-law baseline.
    ``reward_range``: ``(low, high)``, ``None`` (unknown), or ``"auto"``: ``(0, 1)`` when
    every reward lies in [0, 1] (a success rate), else unknown.  The families that assume
    a binary reward are used only when the range is [0, 1].
    Raises :class:`ParameterError` when the fraction leaves fewer than 8 training points or
    no held-out point.
    """
    f = check_real("train_fraction", train_fraction, low=0, high=1, low_open=True, high_open=True)
    t, y = finite_sorted(t, y)
    n_train = int(math.ceil(f * t.size))
    if n_train < 8 or t.size - n_train < 1:
        raise ParameterError("train_fraction", train_fraction,
                             f"a fraction leaving >= 8 training and >= 1 held-out points "
                             f"(the log has {t.size})")
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
    models = [m for m in requested if binary or m not in BINARY_FAMILIES]
    if not models:
        raise ParameterError("models", requested, "at least one family that applies to a "
                             "dense reward (exponential, oscillator)")
    bounds = reward_range or (-np.inf, np.inf)
    tt, yt, th, yh = t[:n_train], y[:n_train], t[n_train:], y[n_train:]
    fits = {m: fit_curve(tt, yt, m) for m in progress(models, total=len(models), desc="forecast")}
    preds = {m: np.clip(fr.predict(th - fr.t0), *bounds) for m, fr in fits.items()}
    rmse = {m: _rmse(p, yh) for m, p in preds.items()}
    baselines = _baselines(tt, yt, th, yh, bounds, entropy, fits.get("exponential"))
    sigma = noise_sd(yt)

    reasons = list(applicability(tt, yt))
    ceiling = noise_ceiling(yt)
    best_r2 = max((fr.r2 for fr in fits.values() if math.isfinite(fr.r2)), default=0.0)
    if not reasons and best_r2 < 0.5 * ceiling:
        reasons.append(f"best R^2 on the prefix {best_r2:.2f} is below half its noise ceiling "
                       f"{ceiling:.2f}: the families miss the curve's shape")
    origin, best = {}, None
    if not reasons:  # the rolling origin is the costly part: only where the model applies
        ro = rolling_origin(tt, yt, models, bounds)
        origin = {m: (_rmse(e) if e.size else math.inf) for m, (e, _) in ro.items()}
        best = min(models, key=lambda m: (origin[m], fits[m].aic))
        errors, horizons = ro[best]
        if errors.size < MIN_ORIGIN_ERRORS:
            reasons.append(f"too few points for a rolling-origin check ({n_train} in the "
                           f"prefix; the chosen family needs >= {MIN_ORIGIN_ERRORS} "
                           "out-of-sample errors)")
    if reasons:
        return ForecastResult(train_fraction=f, split_step=float(tt[-1]), n_train=n_train,
                              n_holdout=int(th.size), applicable=False, reasons=reasons,
                              fits=fits, holdout_rmse=rmse, origin_rmse=origin, best=None,
                              baselines=baselines, interval_coverage=None,
                              reward_range=reward_range, noise_sd=sigma, t_holdout=th,
                              y_holdout=yh)
    drift2 = max(float(np.mean(errors ** 2)) - sigma ** 2, 0.0) / float(np.mean(horizons ** 2))
    h = th - tt[-1]
    param_sd = np.nan_to_num(fits[best].prediction_sd(th - fits[best].t0), nan=0.0)
    half = Z90 * np.sqrt(sigma ** 2 + np.maximum(drift2 * h ** 2, param_sd ** 2))
    coverage = float(np.mean(np.abs(preds[best] - yh) <= half))
    return ForecastResult(train_fraction=f, split_step=float(tt[-1]), n_train=n_train,
                          n_holdout=int(th.size), applicable=True, reasons=[], fits=fits,
                          holdout_rmse=rmse, origin_rmse=origin, best=best, baselines=baselines,
                          interval_coverage=coverage, reward_range=reward_range, noise_sd=sigma,
                          drift_per_step=math.sqrt(drift2), t_holdout=th, y_holdout=yh,
                          prediction=preds[best], interval_halfwidth=half)
