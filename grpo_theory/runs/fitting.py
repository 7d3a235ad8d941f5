r"""Fit a training log's reward curve with the theory's model families and forecast it.

:func:`fit_log` reads the reward series of a log, checks that the reduced-order model
applies, fits every applicable family (:mod:`.curves`, the one curve fitter) and, with a
training fraction, forecasts the held-out steps (:mod:`.forecast`); :class:`FitReport`
is what ``grpo-theory fit`` prints.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from grpo_theory.results import Result
from grpo_theory.runs.curves import (BINARY_FAMILIES, MODEL_NAMES, applicability, finite_sorted,
                                     fit_models, is_binary_range, noise_ceiling)
from grpo_theory.runs.forecast import forecast
from grpo_theory.validate import ParameterError, check_choice

__all__ = ["FitReport", "fit_log", "plot_fit", "REWARD_KINDS"]


@dataclass(frozen=True)
class FitReport(Result):
    """Fits of one log's reward curve, with applicability and an optional forecast.

    ``applicable``: ``{"fit": bool, "reasons": [...], "noise_ceiling": float,
    "binary_families": bool}``; when the model does not apply, ``best`` is ``None`` and no
    regime is named.  ``forecast``: the :class:`~grpo_theory.runs.forecast.ForecastResult`
    as a dict (with its own ``applicable``), or ``None``.
    """

    source: str
    format: str
    run: str | None
    metric: str
    n: int
    first_step: float | None
    last_step: float | None
    models: dict
    best: str | None
    best_bic: str | None
    applicable: dict
    warnings: list
    forecast: dict | None = None
    steps: np.ndarray = field(repr=False, default=None)
    values: np.ndarray = field(repr=False, default=None)
    fits: dict = field(repr=False, default=None)
    forecast_result: object = field(repr=False, default=None)

    _json_exclude = ("steps", "values", "fits", "forecast_result")

    def __str__(self) -> str:
        f = _fmt
        lines = [f"{self.source} ({self.format}), metric {self.metric}: {self.n} points, steps "
                 f"{f(self.first_step, 'g')}..{f(self.last_step, 'g')}"]
        lines += [f"  warning: {w}" for w in self.warnings]
        if not self.applicable["fit"]:
            lines.append("the model does not apply; no regime is named:")
            lines += [f"  - {r}" for r in self.applicable["reasons"]]
        lines.append(f"  noise ceiling R^2 = {f(self.applicable['noise_ceiling'], '.3f')}")
        lines.append(f"    {'model':<16} {'R^2':>8} {'AIC':>11} {'plateau':>9} {'t90 (steps)':>12}")
        for name, m in self.models.items():
            mark = "*" if name == self.best else " "
            lines.append(f"  {mark} {name:<16} {f(m['r2'], '.4f'):>8} {f(m['aic'], '.1f'):>11} "
                         f"{f(m['plateau'], '.4f'):>9} {f(m['time_to_90_steps'], '.1f'):>12}")
        if self.applicable["fit"] and self.best is not None:
            b = self.models[self.best]
            lines.append(f"best model (AIC, in-sample): {self.best}   {b['formula']}")
            for k, v in b["params"].items():
                lines.append(f"    {k} = {f(v)} ± {f(b['stderr'].get(k))}")
            for k, v in b["reading"].items():
                if k != "note":
                    lines.append(f"    {k:<32} {v if isinstance(v, str) else f(v)}")
        fc = self.forecast
        if fc is not None:
            head = (f"forecast: fitted on {fc['n_train']} points (to step "
                    f"{f(fc['split_step'], 'g')}), {fc['n_holdout']} held out")
            if fc["applicable"]["forecast"]:
                iv = fc["interval"]
                lines.append(f"{head}; family by rolling origin: {fc['best']}, holdout RMSE "
                             f"{f(fc['holdout_rmse'])}, plateau {f(fc['plateau'])}"
                             + (" (cut to the reward's range)" if fc["plateau_clipped"] else ""))
                lines.append(f"  90 % interval ± {f(iv['halfwidth_first'])} (first held-out step) "
                             f"to ± {f(iv['halfwidth_last'])} (last); covers "
                             f"{f(100 * iv['holdout_coverage'], '.0f')} % of the held-out points")
            else:
                lines.append(f"{head}; the model does not apply to the prefix, no forecast:")
                lines += [f"  - {r}" for r in fc["applicable"]["reasons"]]
            for name, m in fc["models"].items():
                mark = "*" if name == fc["best"] else " "
                lines.append(f"  {mark} {name:<16} holdout RMSE {f(m['holdout_rmse'])}  "
                             f"rolling-origin RMSE {f(m['rolling_origin_rmse'])}")
            for name, m in fc["baselines"].items():
                lines.append(f"    baseline {name:<16} holdout RMSE {f(m['holdout_rmse'])}")
        return "\n".join(lines)


def _fmt(x, spec=".4g"):
    return "n/a" if x is None or (isinstance(x, float) and not math.isfinite(x)) else format(x, spec)


REWARD_KINDS = ("auto", "binary", "dense")


def fit_log(log, metric: str | None = None, *, train_fraction: float | None = None,
            models=None, reward: str = "auto") -> FitReport:
    """Fit (and optionally forecast) the reward curve of a :class:`~grpo_theory.runs.logs.TrainingLog`.

    ``reward``: ``"binary"`` (a success rate in [0, 1]), ``"dense"`` (any other score) or
    ``"auto"`` (binary when every value lies in [0, 1]).  The families that assume a binary
    reward (mean field, mixture) are switched off for a dense reward, and the report says so.
    ``applicable`` says whether the model applies and why not (too few points, below the
    noise ceiling, flat or decreasing reward, families far below the noise ceiling).
    """
    check_choice("reward", reward, REWARD_KINDS)
    name = log.reward_metric(metric)
    steps, values = finite_sorted(*log.series(name))
    if steps.size < 8:
        raise ParameterError("log", str(log.source),
                             f"a reward curve with >= 8 finite points ({name} has {steps.size})")
    warnings = list(log.warnings)
    in_unit = is_binary_range(values)
    if reward == "binary" and not in_unit:
        raise ParameterError("reward", reward, f"'dense' or 'auto': {name} leaves [0, 1] "
                             f"(min {values.min():.4g}, max {values.max():.4g})")
    binary = in_unit if reward == "auto" else reward == "binary"
    chosen = [m for m in (MODEL_NAMES if models is None else models)]
    for m in chosen:
        check_choice("model", m, MODEL_NAMES)
    if not binary:
        dropped = [m for m in chosen if m in BINARY_FAMILIES]
        chosen = [m for m in chosen if m not in BINARY_FAMILIES]
        why = "leaves [0, 1]" if not in_unit else "is declared dense"
        warnings.append(f"{name} {why} (a dense reward): the mean-field families "
                        f"{', '.join(dropped) or '(none requested)'} assume binary rewards and are off")
    if not chosen:
        raise ParameterError("models", models, "at least one family that applies to a dense reward "
                             "(exponential, oscillator)")
    res = fit_models(steps, values, chosen)
    reasons = applicability(steps, values)
    ceiling = noise_ceiling(values)
    best_r2 = max((fr.r2 for fr in res["models"].values() if math.isfinite(fr.r2)), default=0.0)
    if best_r2 < 0.5 * ceiling:
        reasons.append(f"best R^2 {best_r2:.2f} is below half the noise ceiling {ceiling:.2f}: "
                       "the families miss the curve's shape")
    fc = None
    if train_fraction is not None:
        ent = log.role("entropy")
        fc = forecast(steps, values, train_fraction, chosen,
                      entropy=log.series(ent) if ent is not None else None,
                      reward_range=(0.0, 1.0) if binary or in_unit else None)
    ok = not reasons
    return FitReport(source=str(log.source), format=log.format, run=log.run, metric=name,
                     n=int(steps.size), first_step=float(steps[0]), last_step=float(steps[-1]),
                     models={m: fr.to_dict() for m, fr in res["models"].items()},
                     best=res["best"] if ok else None, best_bic=res["best_bic"] if ok else None,
                     applicable={"fit": ok, "reasons": reasons, "noise_ceiling": ceiling,
                                 "binary_families": binary},
                     warnings=warnings, forecast=fc.to_dict() if fc is not None else None,
                     steps=steps, values=values, fits=res["models"], forecast_result=fc)


def plot_fit(report: FitReport, path, *, title: str = "") -> None:
    """Write a figure: the data and the fits; with a forecast, the fits made on the training
    prefix only, the forecast and its 90 % interval.  Uses the Agg backend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps, values = report.steps, report.values
    fig, ax = plt.subplots(figsize=(8, 4.8))
    ax.plot(steps, values, ".", ms=2, color="0.5", label="log")
    fc = report.forecast_result
    fits = report.fits if fc is None else fc.fits
    for name, fr in fits.items():
        ax.plot(steps, fr.predict(steps - fr.t0), lw=1.2,
                label=f"{name} (R²={fr.r2:.3f}" + (", prefix fit)" if fc is not None else ")"))
    if fc is not None:
        ax.axvline(fc.split_step, color="k", lw=0.8, ls=":")
        if fc.prediction is not None:
            th = fc.t_holdout
            low, high = fc.band
            ax.plot(th, fc.prediction, "k--", lw=1.2,
                    label=f"forecast {fc.best} (RMSE {fc.holdout_rmse[fc.best]:.3g})")
            ax.fill_between(th, low, high, color="k", alpha=0.12, label="90 % interval")
        else:
            ax.text(0.02, 0.95, "forecast declined: " + "; ".join(fc.reasons)[:120],
                    transform=ax.transAxes, fontsize=7, va="top")
    ax.set_xlabel("step")
    ax.set_ylabel("reward")
    if title:
        ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
