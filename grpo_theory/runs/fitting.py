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
from grpo_theory.runs.curves import (BINARY_FAMILIES, MODEL_NAMES, applicability, curve_gain, gain_basis,
                                     finite_sorted, fit_curve, is_binary_range, signal_share,
                                     r2_text, relaxation_time_profile)
from grpo_theory.runs.forecast import forecast
from grpo_theory.validate import ParameterError, check_choice, check_real
from grpo_theory.runs.logs.base import step_number as _step

__all__ = ["CurveSummary", "FitReport", "fit_log", "plot_fit", "summarize_curve", "REWARD_KINDS",
           "CORE_FAMILIES"]

#: the relaxation families every command fits and reads the same way (regime, time scale)
CORE_FAMILIES = ("exponential", "oscillator")


@dataclass(frozen=True)
class CurveSummary:
    """What ``fit``, ``diagnose`` and ``check-config --from-log`` all read off one reward curve,
    computed once (:func:`summarize_curve`): the gain (:func:`~grpo_theory.runs.curves.curve_gain`),
    whether the reduced-order model applies and why not, the fits, and -- only where it applies
    -- the regime and damping ratio of the L3 fit and the relaxation time of the exponential
    with its standard error (inflated for the residuals' lag-1 autocorrelation)."""

    metric: str
    steps: np.ndarray
    values: np.ndarray
    binary: bool
    fits: dict
    reasons: list
    signal_share: float
    gain: dict

    @property
    def applicable(self) -> bool:
        return not self.reasons

    def misses_range(self, name) -> bool:
        """Family ``name``'s plateau lies outside the reward's range [0, 1] (a binary reward):
        that family misses the curve, it is neither the best model nor read for a regime."""
        fr = self.fits.get(name)
        return bool(self.binary and fr is not None and math.isfinite(fr.plateau)
                    and not 0.0 <= fr.plateau <= 1.0)

    @property
    def oscillator(self):
        """The L3 fit, ``None`` where the model does not apply or its plateau misses the
        reward's range (:meth:`misses_range`)."""
        if not self.applicable or self.misses_range("oscillator"):
            return None
        return self.fits.get("oscillator")

    @property
    def regime(self):
        """The L3 fit's regime, ``None`` where the model does not apply."""
        o = self.oscillator
        return o.reading.get("regime") if o is not None else None

    @property
    def damping_ratio(self):
        o = self.oscillator
        return float(o.params["zeta"]) if o is not None else None

    def _residual_rho(self) -> float:
        r"""Lag-1 autocorrelation of the exponential's residuals, corrected for its small-sample
        bias and clipped to [0, 0.95].  The sample autocorrelation of residuals is biased low:
        by :math:`(1 + 3\rho)/n` about an estimated mean (Kendall, *Biometrika* 41, 1954) and by
        about :math:`1/n` more for each further fitted parameter, so with the exponential's
        :math:`p = 3` parameters the estimate is :math:`\hat\rho + (p + 3\hat\rho)/n`."""
        fr = self.fits["exponential"]
        r = self.values - fr.predict(self.steps - fr.t0)
        d = r - r.mean()
        rho = float(np.sum(d[1:] * d[:-1]) / np.sum(d * d)) if np.sum(d * d) > 0 else 0.0
        p = len(fr.param_names)
        rho += (p + 3.0 * rho) / r.size
        return min(max(rho, 0.0), 0.95)

    def relaxation_time(self):
        """``(tau, stderr)`` of the exponential, the stderr inflated by ``sqrt((1 + rho)/(1 - rho))``
        for the residuals' lag-1 autocorrelation rho (the iid error understates it); ``None``
        where the model does not apply."""
        if not self.applicable or "exponential" not in self.fits:
            return None
        fr = self.fits["exponential"]
        rho = self._residual_rho()
        se = fr.stderr["tau"] * math.sqrt((1 + rho) / (1 - rho))
        return fr.params["tau"], se

    def relaxation_time_interval(self, level: float = 0.95):
        """The exponential's relaxation time with its profile-likelihood interval
        (:func:`~grpo_theory.runs.curves.relaxation_time_profile`, inflated by
        ``(1 + rho)/(1 - rho)`` for the residuals' lag-1 autocorrelation): a dict with ``tau``,
        ``interval`` (``[lower, upper]``, ``0``/``inf`` where the data bound no end) and ``rho``;
        ``None`` where the model does not apply."""
        if not self.applicable or "exponential" not in self.fits:
            return None
        rho = self._residual_rho()
        out = relaxation_time_profile(self.steps, self.values, level=level,
                                      inflation=(1 + rho) / (1 - rho))
        out["rho"] = rho
        return out

    def describe(self) -> str:
        g = self.gain
        head = (f"{self.metric}: {g['start']:.4g} -> {g['end']:.4g} (gain {g['gain']:+.4g} ± "
                f"{g['gain_sd']:.2g}, {gain_basis(g)})")
        if not self.applicable:
            return head + "; the model does not apply, no regime is named: " + "; ".join(self.reasons)
        z = self.damping_ratio
        if z is None and self.misses_range("oscillator"):
            return head + (f"; the L3 fit's plateau {self.fits['oscillator'].plateau:.4g} lies "
                           "outside the reward's range [0, 1]: no regime is named")
        return head + (f"; L3 fit: zeta = {z:.3g} ({self.regime})" if z is not None else "")


def summarize_curve(steps, values, *, metric="reward", models=None, binary=None) -> CurveSummary:
    """Fit ``models`` (default the core families) to one reward curve and read it once (see
    :class:`CurveSummary`).  Applicability: :func:`~grpo_theory.runs.curves.applicability` (a
    rise significant at 4 sd of its noise; the same whichever families are fitted)."""
    steps, values = finite_sorted(steps, values)
    chosen = list(CORE_FAMILIES if models is None else models)
    fits = {}
    for m in chosen:
        try:
            fits[m] = fit_curve(steps, values, m)
        except ParameterError:
            continue
    reasons = applicability(steps, values)
    share = signal_share(values)
    return CurveSummary(metric=metric, steps=steps, values=values,
                        binary=is_binary_range(values) if binary is None else bool(binary),
                        fits=fits, reasons=reasons, signal_share=share,
                        gain=curve_gain(values))


@dataclass(frozen=True)
class FitReport(Result):
    """Fits of one log's reward curve, with applicability and an optional forecast.

    ``applicable``: ``{"fit": bool, "reasons": [...], "signal_share": float,
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
    gain: dict | None = None
    regime: str | None = None
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
        if self.gain:
            g = self.gain
            lines.append(f"  {g['start']:.4g} -> {g['end']:.4g}: gain {g['gain']:+.4g} ± "
                         f"{g['gain_sd']:.2g} ({gain_basis(g)})")
        if self.applicable.get("reward_kind"):
            lines.append(f"  reward read as {self.applicable['reward_kind']}")
        if not self.applicable["fit"]:
            lines.append("the model does not apply; no regime is named:")
            lines += [f"  - {r}" for r in self.applicable["reasons"]]
            lines.append("  the fits below are for reference only: their parameters are not a "
                         "reading of this run")
        else:
            lines.append(f"  signal share 1 - (step-to-step noise)^2 / variance = "
                         f"{r2_text(self.applicable['signal_share'])} (an estimate of what the true "
                         "curve explains, not a ceiling: a fit can exceed it)")
        span = (self.last_step - self.first_step) if self.n else None
        rng = (0.0, 1.0) if self.applicable.get("binary_families") else None

        def plateau(v):
            txt = f(v, ".4f")
            return txt + ("!" if rng and v is not None and not rng[0] <= v <= rng[1] else "")

        def t90(v):
            # a time to 90 % far beyond the log is an extrapolation, not a measurement
            if v is not None and span and math.isfinite(v) and v > 100 * span:
                return "> 100x log"
            return f(v, ".1f")

        lines.append(f"    {'model':<16} {'R^2':>8} {'AIC':>11} {'plateau':>9} {'t90 (steps)':>12}")
        for name, m in self.models.items():
            mark = "*" if name == self.best else " "
            lines.append(f"  {mark} {name:<16} {f(m['r2'], '.4f'):>8} {f(m['aic'], '.1f'):>11} "
                         f"{plateau(m['plateau']):>9} {t90(m['time_to_90_steps']):>12}")
        if any(rng and m["plateau"] is not None and not rng[0] <= m["plateau"] <= rng[1]
               for m in self.models.values()):
            lines.append("    ! a plateau outside the reward's range [0, 1]: that family misses "
                         "this curve")
            lines.append("      (it is never the best model, and no regime is read from it)")
        if self.applicable["fit"] and self.best is None and self.models:
            lines.append("no best model: every family's plateau lies outside the reward's range "
                         "[0, 1]; no regime is named")
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

                def span(d, key="interval"):
                    return ("" if not d or not d.get(key) else
                            f" [{f(d[key][0])}, {f(d[key][1])}]")

                short = iv["kappa"] is None
                lines.append(f"{head}; " + ("the level of the prefix (too short for a rolling-"
                                            "origin choice)" if short else
                                            f"family by rolling origin: {fc['best']}")
                             + f", holdout RMSE {f(fc['holdout_rmse'])}"
                             + (f" ({fc['plateau']['note']})" if not short
                                and fc["best"] == "constant" else ""))
                if fc["fallback"]:
                    lines.append("  the relaxation families do not apply, the level is carried "
                                 "forward: " + "; ".join(fc["fallback"]))
                end, pl, t90 = fc["end_level"], fc["plateau"], fc["time_to_90"]
                lines.append(f"  end level {f(end['value'])}{span(end)} at step {f(end['step'], 'g')}"
                             f"; plateau {f(pl['value'])}{span(pl)}"
                             + (" (cut to the reward's range)" if pl.get("clipped") else "")
                             + ("" if not t90 else f"; time to 90 % {f(t90['steps'])}"
                                f"{span(t90, 'interval_steps')} steps"))
                others = [m for m in iv.get("families") or [] if m != fc["best"]]
                lines.append(("  90 % band: Student-t from the prefix's spread" if short else
                              f"  90 % band: the family's predictive sd x max(1, kappa = "
                              f"{f(iv['kappa'])})"
                              + ("" if iv.get("calibration") == 1.0 else
                                 f" x the calibration {f(iv.get('calibration'))}")
                              + (
                                  " with the spread of " + ", ".join(others) + " (within one "
                                  "standard error of the best rolling-origin error)"
                                  if others else "")) + "; covers "
                             f"{f(100 * iv['holdout_coverage'], '.0f')} % of the held-out points "
                             "(the curve: --json, forecast.curve)")
            else:
                lines.append(f"{head}; no forecast:")
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
    no rise significant at 4 sd: :func:`~grpo_theory.runs.curves.applicability`); where it
    applies the fits are read whatever their R^2, and their intervals say how little is known.
    """
    check_choice("reward", reward, REWARD_KINDS)
    if train_fraction is not None:   # before the fits (forecast checks it again, with the data)
        check_real("train_fraction", train_fraction, low=0, high=1, low_open=True,
                   high_open=True)
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
        if dropped:      # nothing to say when none of them was asked for
            warnings.append(f"{name} {why} (a dense reward): the mean-field families "
                            f"{', '.join(dropped)} assume binary rewards and are off")
    if not chosen:
        raise ParameterError("models", models, "at least one family that applies to a dense reward "
                             "(exponential, oscillator)")
    from grpo_theory.progress import progress

    summary = summarize_curve(steps, values, metric=name, binary=binary,
                              models=list(progress(chosen, total=len(chosen), desc="fitting")))
    fits = summary.fits
    reasons, share = list(summary.reasons), summary.signal_share
    core = [fits[m].r2 for m in CORE_FAMILIES if m in fits and math.isfinite(fits[m].r2)]
    if not reasons and core and max(core) < 0.5 * share:
        warnings.append(f"the relaxation families explain R^2 {r2_text(max(core))} of the variance, "
                        f"under half the signal share {r2_text(share)}: they miss part of the "
                        "curve's shape (the plateau and time scale are its rise read coarsely)")
    # a family whose plateau misses the reward's range is never the best model
    inside = [m for m in fits if not summary.misses_range(m)]
    res = {"models": fits,
           "best": min(inside, key=lambda k: fits[k].aic) if inside else None,
           "best_bic": min(inside, key=lambda k: fits[k].bic) if inside else None}
    fc = None
    if train_fraction is not None:
        ent = log.role("entropy")
        fc = forecast(steps, values, train_fraction, chosen,
                      entropy=log.series(ent) if ent is not None else None,
                      reward_range=(0.0, 1.0) if binary or in_unit else None)
    ok = not reasons
    return FitReport(source=str(log.source), format=log.format, run=log.run, metric=name,
                     n=int(steps.size), first_step=_step(steps[0]), last_step=_step(steps[-1]),
                     models={m: fr.to_dict() for m, fr in res["models"].items()},
                     best=res["best"] if ok else None, best_bic=res["best_bic"] if ok else None,
                     applicable={"fit": ok, "reasons": reasons, "signal_share": share,
                                 "binary_families": binary,
                                 "reward_kind": ("a success rate in [0, 1]" if binary else
                                                 "a dense score") + (
                                     f" (given: --reward {reward})" if reward != "auto" else
                                     f" ({name}: every value lies in [0, 1]; --reward dense if "
                                     "it is another score)" if binary else
                                     f" ({name} leaves [0, 1])")},
                     gain=summary.gain, regime=summary.regime,
                     warnings=warnings, forecast=fc.to_dict() if fc is not None else None,
                     steps=steps, values=values, fits=res["models"], forecast_result=fc)


def plot_fit(report: FitReport, path, *, title: str = "") -> None:
    """Write a figure: the data and the fits; with a forecast, the fits made on the training
    prefix only, the forecast and its 90 % interval.  Uses the Agg backend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from grpo_theory.outputs import atomic_output

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
    with atomic_output(path) as tmp:    # written beside path, moved into place at the end
        fig.savefig(tmp, dpi=120)
    plt.close(fig)
