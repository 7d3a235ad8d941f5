r"""Questions about families of runs: group-size invariance and the time-scale laws.

A *family* is a set of training logs that differ in one knob (``by``):

``group_size``
    The paper's first claim: the deterministic reward trajectory is G-invariant while the
    stationary fluctuation scales as 1/G.  Three parts:

    * **invariance** — the runs are aligned on a common step grid (the overlap of their
      steps, on the sparsest run's steps) and cut into blocks of :math:`L` points; with
      :math:`m_{ib}` the block means, :math:`\bar m_b` their precision-weighted mean and
      :math:`s_{ib}^2 = v_i f_i / L` the variance of a block mean from run *i*'s own
      fluctuation :math:`v_i` (residual variance about its fitted law) and autocorrelation
      inflation :math:`f_i = (1+\rho_i)/(1-\rho_i)`,
      :math:`\chi^2 = \sum_{b,i}(m_{ib}-\bar m_b)^2/s_{ib}^2` has under "same mean trajectory"
      the :math:`\chi^2_{B(R-1)}` distribution;
    * **fluctuation exponent** — each run's variance about its fitted law on the plateau
      (:math:`t \ge 3\tau`), with a :math:`\chi^2` interval on :math:`n_\text{eff} =
      n(1-\rho)/(1+\rho)` degrees of freedom, regressed as :math:`\log v = c + e\log G`
      (weighted by the per-run uncertainties);
    * **theory** — the exact finite-G prediction :math:`v \propto (p(1-p))^2\,
      \sigma^2(p, G)` (``noise.reward_fluctuation`` of ``drift.update_variance``) at each
      run's observed plateau: its local exponent in G names the regime (1/G; steeper,
      towards 1/G² near p = ½ where the leading 1/G term vanishes; flatter, towards
      G-independence when G·min(p, 1-p) is not large), and the same regression on the
      predicted variances gives the family exponent the fit should find.  Declined for
      rewards outside [0, 1] (the prediction is for a 0/1 verifier reward).

``model_size``, ``learning_rate``, ``refresh_interval``
    Each run's single exponential :math:`R(t) = R_\infty - (R_\infty - R_0)e^{-t/\tau}`
    (``oscillator.single_exponential``) is fitted; :math:`\log\tau` gets a Wald interval
    from the least-squares Jacobian, inflated by :math:`f` for the residuals' lag-1
    autocorrelation.  The law :math:`\tau \propto x^{d}` is fitted twice: by weighted
    regression of :math:`\log\tau_i` on :math:`\log x_i` (per-run uncertainties; the
    interval widened by the Birge ratio :math:`\sqrt{\chi^2/\nu}` with a Student-t quantile
    when the runs scatter more than their intervals), and jointly (hierarchically) with
    :math:`\tau_i = e^{a}x_i^{d}` shared across the runs and the plateau shared or per run,
    whichever has the lower AIC.  Readings (``oscillator.scaling_exponent``,
    ``oscillator.coefficients``): model size :math:`\alpha` with :math:`K \propto N^\alpha`;
    learning rate: exponent −1 without lag; refresh interval: :math:`\tau` falls linearly in
    the effective lag :math:`(k-1)/2` with slope :math:`-K_s/K \in [-1, 0]` (lag erodes the
    damping :math:`\gamma = 1-\mu-\eta K_s\ell`), fitted as :math:`\tau_k` against the lag.

Units: steps are the logs' optimizer steps, rewards the logs' own units.
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass, field

import numpy as np
import scipy.optimize
import scipy.stats

from grpo_theory.model import NORMALIZATIONS, GRPOModel
from grpo_theory.progress import progress
from grpo_theory.results import Result
from grpo_theory.runs.curves import applicability, finite_sorted, fit_curve
from grpo_theory.runs.logs import TrainingLog, read_log
from grpo_theory.runs.logs.base import flatten
from grpo_theory.runs.logs.base import step_number as _step
from grpo_theory.theory import oscillator
from grpo_theory.theory.derived import get
from grpo_theory.theory.drift import update_variance
from grpo_theory.theory.noise import reward_fluctuation, stationary_variance
from grpo_theory.validate import (ParameterError, check_choice, check_output_file, check_real,
                                   figure_formats)

__all__ = ["BY", "CONFIG_KEYS", "MIN_POINTS", "Comparison", "GroupSizeAnalysis", "Regression",
           "RunFit", "ScalingAnalysis", "compare", "fit_run", "fluctuation_regime", "run_labels"]

#: The knobs a family may vary.
BY = ("group_size", "model_size", "learning_rate", "refresh_interval")
#: Config keys (flattened TRL/verl/simulation names) read for each knob when no values are given.
CONFIG_KEYS = {
    "group_size": ("group_size", "num_generations", "actor_rollout_ref.rollout.n"),
    "model_size": ("model_params_billion", "model_size", "n_params"),
    "learning_rate": ("learning_rate", "actor_rollout_ref.actor.optim.lr", "lr"),
    "refresh_interval": ("refresh_interval",),
}
#: Fewest finite reward points a run must have.
MIN_POINTS = 10
#: Fewest plateau points for a fluctuation estimate, and fewest blocks for the invariance test.
MIN_PLATEAU_POINTS = 20
MIN_BLOCKS = 4
#: Local exponent band called "1/G".
ONE_OVER_G_BAND = 0.2
LEVEL = 0.95


# ----------------------------------------------------------------------------------
# Per-run fit
# ----------------------------------------------------------------------------------

def _law(t, plateau, initial, tau):
    return get("oscillator.single_exponential").numeric(t, plateau, initial, tau)


def _inflation(residuals) -> float:
    """f = (1 + rho)/(1 - rho), rho the lag-1 autocorrelation clipped to [0, 0.98]."""
    r = residuals - residuals.mean()
    denom = float(np.dot(r, r))
    rho = float(np.dot(r[1:], r[:-1]) / denom) if denom > 0 else 0.0
    rho = min(max(rho, 0.0), 0.98)
    return (1 + rho) / (1 - rho)


@dataclass(frozen=True)
class RunFit:
    """One run of the family: its single-exponential fit and its plateau fluctuation.

    ``tau`` (steps) with ``tau_interval``; ``log_tau_se`` is the autocorrelation-inflated
    standard error of log tau.  ``identified`` is False (with ``reason``) when the run
    has not saturated (tau beyond the run) or relaxes within one logging interval: then
    tau and the plateau are not reported.  ``fluctuation`` is the variance (reward²)
    about the fitted law for t >= 3 tau, ``fluctuation_interval`` its chi² interval on
    ``fluctuation_dof`` = n_eff degrees of freedom.
    """

    source: str
    value: float
    n_points: int
    first_step: float
    last_step: float
    identified: bool
    reason: str = ""
    plateau: float = math.nan
    initial: float = math.nan
    tau: float = math.nan
    tau_interval: tuple = (math.nan, math.nan)
    log_tau_se: float = math.nan
    residual_variance: float = math.nan
    inflation: float = 1.0
    fluctuation: float = math.nan
    fluctuation_interval: tuple = (math.nan, math.nan)
    fluctuation_dof: float = math.nan
    fluctuation_reason: str = ""
    label: str = ""      # the run's name in the family's table: see :func:`run_labels`


def fit_run(steps, values, *, source="<run>", value=math.nan) -> RunFit:
    """Fit R(t) = R_inf - (R_inf - R_0) e^{-t/tau} to one run (t = steps - first step)."""
    steps, values = finite_sorted(steps, values)
    t = steps - steps[0]
    span = float(t[-1])
    dt = float(np.median(np.diff(t)))
    base = dict(source=source, value=value, n_points=int(t.size), first_step=_step(steps[0]),
                last_step=float(steps[-1]))
    fit = fit_curve(steps, values, "exponential")     # the one curve fitter
    if not fit.success:
        return RunFit(**base, identified=False, reason="the single exponential did not converge")
    plateau, initial, tau = (fit.params[k] for k in ("plateau", "initial", "tau"))
    resid = values - _law(t, plateau, initial, tau)
    f = _inflation(resid)
    var = fit.rss / max(t.size - 3, 1)
    # fit's own applicability (runs.curves.applicability, the rule of runs.fitting.summarize_curve):
    # a run `fit` declines gives no time scale and no plateau here either
    reasons = applicability(steps, values)
    if reasons:
        return RunFit(**base, identified=False, residual_variance=var, inflation=f,
                      reason="the model does not apply (as `fit` says): " + "; ".join(reasons))
    if tau > span:
        return RunFit(**base, identified=False, residual_variance=var, inflation=f,
                      reason=f"not saturated: the fitted time scale exceeds the run ({span:g} steps), "
                             "so plateau and tau are not separately identified")
    if tau < dt:
        return RunFit(**base, identified=False, residual_variance=var, inflation=f,
                      reason=f"relaxes within one logging interval ({dt:g} steps)")
    se = fit.stderr["tau"] / tau * math.sqrt(f)      # of log tau (delta method)
    if not math.isfinite(se):
        return RunFit(**base, identified=False, residual_variance=var, inflation=f,
                      reason="tau not constrained by the data (singular least-squares Jacobian)")
    z = scipy.stats.norm.ppf(0.5 + LEVEL / 2)
    fit = dict(plateau=float(plateau), initial=float(initial), tau=tau,
               tau_interval=(tau * math.exp(-z * se), tau * math.exp(z * se)),
               log_tau_se=se, residual_variance=var, inflation=f)
    on_plateau = t >= 3 * tau
    if on_plateau.sum() < MIN_PLATEAU_POINTS:
        return RunFit(**base, identified=True, **fit,
                      fluctuation_reason=f"{int(on_plateau.sum())} points after 3 tau "
                                         f"(need {MIN_PLATEAU_POINTS})")
    r = resid[on_plateau]
    f_p = _inflation(r)
    v = float(np.mean((r - r.mean()) ** 2))
    dof = max(r.size / f_p, 2.0)
    interval = (dof * v / scipy.stats.chi2.ppf(0.5 + LEVEL / 2, dof),
                dof * v / scipy.stats.chi2.ppf(0.5 - LEVEL / 2, dof))
    return RunFit(**base, identified=True, **fit, fluctuation=v, fluctuation_interval=interval,
                  fluctuation_dof=dof)


# ----------------------------------------------------------------------------------
# Weighted regression with per-run uncertainties
# ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Regression:
    r"""Weighted fit :math:`y = c + d\,x` with per-point standard errors.

    ``interval`` is the 95 % interval of the slope: normal quantile on the per-point
    errors, or — when the points scatter more than their errors (:math:`\chi^2/\nu > 1`) —
    widened by the Birge ratio with a Student-t quantile on :math:`\nu = n - 2`.
    """

    slope: float
    intercept: float
    slope_se: float
    interval: tuple
    chi2: float
    dof: int
    birge: float
    n: int


def _regress(x, y, se) -> Regression:
    x, y, se = (np.asarray(a, float) for a in (x, y, se))
    w = 1 / np.maximum(se, 1e-12) ** 2
    xm = np.sum(w * x) / np.sum(w)
    ym = np.sum(w * y) / np.sum(w)
    sxx = np.sum(w * (x - xm) ** 2)
    slope = float(np.sum(w * (x - xm) * (y - ym)) / sxx)
    intercept = float(ym - slope * xm)
    chi2 = float(np.sum(w * (y - intercept - slope * x) ** 2))
    dof = x.size - 2
    birge = math.sqrt(chi2 / dof) if dof > 0 else 1.0
    s = 1 / math.sqrt(sxx)
    if birge > 1:
        s *= birge
        q = scipy.stats.t.ppf(0.5 + LEVEL / 2, dof)
    else:
        q = scipy.stats.norm.ppf(0.5 + LEVEL / 2)
    return Regression(slope, intercept, s, (slope - q * s, slope + q * s), chi2, dof, birge, x.size)


# ----------------------------------------------------------------------------------
# Group size
# ----------------------------------------------------------------------------------

def _noise_model(normalization, group_size) -> GRPOModel:
    """The runs' variant for the per-step noise: no KL, no advantage epsilon, two actions."""
    return GRPOModel(normalization=normalization, kl="none", kl_coef=0.0, adv_eps=0.0,
                     group_size=int(group_size))


def fluctuation_regime(p, group_size, *, normalization="std") -> tuple[float, str]:
    r"""Local exponent :math:`d\log\sigma^2/d\log G` of the exact finite-G per-step noise
    (``drift.update_variance``, between G and 2G) at reward level ``p``, and its regime."""
    G = int(group_size)
    v1, v2 = (update_variance(_noise_model(normalization, g), p) for g in (G, 2 * G))
    e = math.log(v2 / v1) / math.log(2)
    rare = G * min(p, 1 - p)
    if abs(e + 1) <= ONE_OVER_G_BAND:
        return e, "1/G"
    if e > -1:
        return e, f"flatter than 1/G: rare outcomes, G min(p, 1-p) = {rare:.2g} not >> 1"
    if abs(p - 0.5) < 0.15:
        return e, "steeper than 1/G: near p = 1/2 the 1/G term vanishes (towards 1/G^2)"
    return e, f"steeper than 1/G: crossover, 1/G^2 terms still large (G min(p, 1-p) = {rare:.2g})"


@dataclass(frozen=True)
class GroupSizeAnalysis:
    """The group-size questions: invariance of the mean trajectory, fluctuation exponent,
    and the exact finite-G prediction (``predicted_relative``: the predicted plateau variances
    of the runs with a fluctuation, divided by their geometric mean, since eta^2 is unknown).
    A part that does not apply is ``None`` with its reason in ``declined``."""

    chi2: float | None = None
    chi2_dof: int | None = None
    p_value: float | None = None
    block_points: int | None = None
    n_blocks: int | None = None
    invariant: bool | None = None
    exponent: Regression | None = None
    predicted_exponent: float | None = None
    predicted_relative: list = field(default_factory=list)
    local_exponents: list = field(default_factory=list)
    regimes: list = field(default_factory=list)
    agrees: bool | None = None
    declined: dict = field(default_factory=dict)


def _invariance(series, fits):
    """Block chi² of the runs' mean trajectories on the common grid."""
    start = max(s[0] for s, _ in series)
    end = min(s[-1] for s, _ in series)
    inside = [s[(s >= start) & (s <= end)] for s, _ in series]
    grid = min(inside, key=len)
    if grid.size < MIN_BLOCKS * 2:
        return None, f"the runs overlap on {grid.size} logged steps (need {2 * MIN_BLOCKS})"
    L = int(max(2, math.ceil(max(f.inflation for f in fits))))
    n_blocks = grid.size // L
    if n_blocks < MIN_BLOCKS:
        return None, (f"{n_blocks} independent blocks of {L} points on the common grid "
                      f"(need {MIN_BLOCKS}): the runs are too short for their autocorrelation")
    means = np.empty((len(series), n_blocks))
    var = np.empty(len(series))
    for i, ((s, v), f) in enumerate(zip(series, fits)):
        y = np.interp(grid[: n_blocks * L], s, v)
        means[i] = y.reshape(n_blocks, L).mean(axis=1)
        var[i] = f.residual_variance * f.inflation / L
    w = 1 / var[:, None]
    pooled = np.sum(w * means, axis=0) / np.sum(w, axis=0)
    chi2 = float(np.sum(w * (means - pooled) ** 2))
    dof = n_blocks * (len(series) - 1)
    return (chi2, dof, float(scipy.stats.chi2.sf(chi2, dof)), L, n_blocks), ""


def _group_size(series, fits, binary, normalization) -> GroupSizeAnalysis:
    declined = {}
    inv, why = _invariance(series, fits)
    out = {}
    if inv is None:
        declined["invariance"] = why
    else:
        chi2, dof, p, L, nb = inv
        out.update(chi2=chi2, chi2_dof=dof, p_value=p, block_points=L, n_blocks=nb,
                   invariant=p >= 1 - LEVEL)
        sizes = {f.value for f in fits}
        if len(sizes) < 2:   # replicates: their chi2 says nothing about G
            out["invariant"] = None
            declined["invariance"] = (f"every run at group size {_g(next(iter(sizes)), 'g')}: "
                                      "G-invariance needs runs at 2 or more group sizes (the "
                                      "chi2 above compares replicates)")
    usable = [f for f in fits if np.isfinite(f.fluctuation) and f.fluctuation > 0]
    skipped = [f"{f.label or _short(f.source)}: {f.reason or f.fluctuation_reason}"
               for f in fits if f not in usable]
    if skipped:
        declined["runs without a plateau fluctuation"] = "; ".join(skipped)
    if len({f.value for f in usable}) < 2:
        declined["exponent"] = (f"{len(usable)} run(s) with a plateau fluctuation at "
                                f"{len({f.value for f in usable})} group size(s) (need 2)")
        return GroupSizeAnalysis(**out, declined=declined)
    x = np.log([f.value for f in usable])
    se = np.array([math.sqrt(2 / f.fluctuation_dof) for f in usable])
    reg = _regress(x, np.log([f.fluctuation for f in usable]), se)
    out["exponent"] = reg
    if not binary:
        declined["theory"] = ("rewards outside [0, 1]: the 1/G prediction is for a 0/1 verifier "
                              "reward")
        return GroupSizeAnalysis(**out, declined=declined)
    ps = [min(max(f.plateau, 1e-6), 1 - 1e-6) for f in usable]
    local = [fluctuation_regime(p, f.value, normalization=normalization) for p, f in zip(ps, usable)]
    # Var p = (p(1-p))^2 Var z, Var z the exact L2 stationary variance with the per-step noise at
    # (p, G) and the relaxation rate eta K = 1/tau measured on the run (eta common to the family)
    pred = np.log([reward_fluctuation(p, stationary_variance(
        1.0, 0.0, 1 / f.tau, update_variance(_noise_model(normalization, f.value), p)))
        for p, f in zip(ps, usable)])
    predicted = _regress(x, pred, se).slope
    lo, hi = reg.interval
    return GroupSizeAnalysis(**out, predicted_exponent=predicted,
                             predicted_relative=list(np.exp(pred - pred.mean())),
                             local_exponents=[e for e, _ in local], regimes=[r for _, r in local],
                             agrees=bool(lo <= predicted <= hi), declined=declined)


# ----------------------------------------------------------------------------------
# Time-scale laws (model size, learning rate, refresh interval)
# ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class ScalingAnalysis:
    r"""The time-scale law of a family.

    ``regression``: :math:`\log\tau` on :math:`\log x` (model size, learning rate) or
    :math:`\tau` on the effective lag (refresh interval).  ``joint_exponent`` with
    ``joint_interval``: the hierarchical fit, plateau ``joint_plateau`` ("shared" or
    "per run").  ``reading``: what the exponent means; ``expected`` the theory's value
    (``None`` for model size, whose exponent is what is measured).
    """

    regression: Regression | None = None
    joint_exponent: float | None = None
    joint_interval: tuple | None = None
    joint_plateau: str | None = None
    expected: float | None = None
    expected_range: tuple | None = None
    agrees: bool | None = None
    reading: str = ""
    declined: dict = field(default_factory=dict)


def _joint_fit(series, fits):
    """tau_i = exp(a) x_i^d for every run at once; plateau shared or per run (lower AIC)."""
    xs = np.log([f.value for f in fits])
    ts = [s - s[0] for s, _ in series]
    ys = [v for _, v in series]
    sig = [max(math.sqrt(f.residual_variance), 1e-12) for f in fits]
    R = len(fits)
    def residuals(theta, shared):
        a, d = theta[0], theta[1]
        n_plateau = 1 if shared else R
        plat, init = theta[2:2 + n_plateau], theta[2 + n_plateau:]
        out = []
        for i in range(R):
            tau = math.exp(min(a + d * xs[i], 50.0))
            out.append((ys[i] - _law(ts[i], plat[0 if shared else i], init[i], tau)) / sig[i])
        return np.concatenate(out)

    best = None
    for shared in (True, False):

        d0 = _regress(xs, np.log([f.tau for f in fits]), [f.log_tau_se for f in fits])
        theta0 = np.concatenate([[d0.intercept, d0.slope],
                                 [np.mean([f.plateau for f in fits])] if shared
                                 else [f.plateau for f in fits], [f.initial for f in fits]])
        sol = scipy.optimize.least_squares(residuals, theta0, method="trf", args=(shared,))
        chi2 = float(np.sum(sol.fun**2))
        aic = chi2 + 2 * theta0.size
        if best is None or aic < best[0]:
            best = (aic, sol, shared)
    _, sol, shared = best
    J = sol.jac
    try:
        cov = np.linalg.inv(J.T @ J)
    except np.linalg.LinAlgError:
        return None
    f = float(np.mean([fit.inflation for fit in fits]))
    se = math.sqrt(max(cov[1, 1], 0.0) * f)
    z = scipy.stats.norm.ppf(0.5 + LEVEL / 2)
    d = float(sol.x[1])
    return d, (d - z * se, d + z * se), "shared" if shared else "per run"


def _scaling(by, series, fits, fresh_fraction) -> ScalingAnalysis:
    ok = [i for i, f in enumerate(fits) if f.identified]
    declined = {}
    skipped = [f"{f.label or _short(f.source)}: {f.reason}" for f in fits if not f.identified]
    if skipped:
        declined["runs without a time scale"] = "; ".join(skipped)
    fits_ok = [fits[i] for i in ok]
    if len({f.value for f in fits_ok}) < 2:
        declined["law"] = (f"{len(fits_ok)} run(s) with an identified time scale at "
                           f"{len({f.value for f in fits_ok})} value(s) of {by} (need 2)")
        return ScalingAnalysis(declined=declined)
    if by == "refresh_interval":
        lag = np.array([(f.value - 1) / 2 for f in fits_ok])
        reg = _regress(lag, [f.tau for f in fits_ok],
                       [f.tau * f.log_tau_se for f in fits_ok])
        # d tau / d lag of tau = gamma/k (oscillator.coefficients); linear in the lag
        phis = (0.0, 1.0) if fresh_fraction is None else (fresh_fraction,)
        slope = [oscillator.coefficients(1.0, 0.0, 1.0, 1.0, fresh_fraction=phi).time_scale
                 - oscillator.coefficients(1.0, 0.0, 0.0, 1.0, fresh_fraction=phi).time_scale
                 for phi in phis]
        rng = (min(slope), max(slope))
        lo, hi = reg.interval
        agrees = bool(lo <= rng[1] and hi >= rng[0])
        unresolved = "" if (hi < 0 or lo > 0) else " (the interval also contains 0: not resolved)"
        theory = (f"in [{rng[0]:g}, {rng[1]:g}]" if fresh_fraction is None
                  else f"= {rng[0]:.3g} at K_f/K = {fresh_fraction:g}")
        reading = (f"tau changes by {reg.slope:+.3g} {_iv(reg.interval)} steps per step of effective "
                   f"lag (k-1)/2{unresolved}; theory: dtau/dlag = -K_s/K {theory} (lag erodes the damping "
                   "gamma = 1 - mu - eta K_s lag, so tau = gamma/k shortens; a first-order effect "
                   "near the plateau, where tau is fitted on the linear relaxation)")
        return ScalingAnalysis(regression=reg, expected=None if fresh_fraction is None else rng[0],
                               expected_range=rng, agrees=agrees, reading=reading, declined=declined)
    x = np.log([f.value for f in fits_ok])
    reg = _regress(x, np.log([f.tau for f in fits_ok]), [f.log_tau_se for f in fits_ok])
    joint = _joint_fit([series[i] for i in ok], fits_ok)
    out = dict(regression=reg, declined=declined)
    if joint is not None:
        out.update(joint_exponent=joint[0], joint_interval=joint[1], joint_plateau=joint[2])
    lo, hi = reg.interval
    if by == "model_size":
        # tau ~ N^(d) with d = alpha * scaling_exponent(alpha = 1), zero lag
        per_alpha = float(get("oscillator.scaling_exponent").numeric(1.0, 0.0, 1.0, 1.0, 0.0))
        alpha = reg.slope / per_alpha
        a_lo, a_hi = sorted((lo / per_alpha, hi / per_alpha))
        out["reading"] = (f"alpha = {alpha:.3g} [{a_lo:.3g}, {a_hi:.3g}]: stiffness K ~ N^alpha "
                          f"(tau ~ N^-alpha, no lag); "
                          + ("larger models relax faster (stiffer)" if a_lo > 0 else
                             "larger models relax slower" if a_hi < 0 else
                             "no size dependence resolved at this precision"))
        return ScalingAnalysis(**out)
    # learning rate: tau = gamma/(eta K); exponent in eta at zero lag from the coefficients
    taus = [oscillator.coefficients(eta, 0.0, 0.0, 1.0).time_scale for eta in (1.0, 2.0)]
    expected = math.log(taus[1] / taus[0]) / math.log(2)
    resolved = "" if (hi < 0 or lo > 0) else "; the interval also contains 0 (no dependence resolved)"
    out.update(expected=expected, agrees=bool(lo <= expected <= hi),
               reading=f"tau ~ eta^{reg.slope:.3g} {_iv(reg.interval)}; theory (no lag): "
                       f"eta^{expected:g}, steeper with lag (gamma = 1 - mu - eta K_s lag){resolved}")
    return ScalingAnalysis(**out)


# ----------------------------------------------------------------------------------
# The entry point
# ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Comparison(Result):
    """Result of :func:`compare`: the family's runs and the analysis for ``by``."""

    by: str
    metric: str
    runs: list
    analysis: GroupSizeAnalysis | ScalingAnalysis
    binary: bool
    plot: str | None = None

    def __str__(self) -> str:
        return _format(self)


def _config_value(log, by):
    cfg = flatten(log.config, ".")
    for key in CONFIG_KEYS[by]:
        for k, v in cfg.items():
            if (k == key or k.endswith("." + key)) and isinstance(v, (int, float)) and not isinstance(v, bool):
                return float(v)
    return None


def compare(logs, *, by: str, values=None, metric: str | None = None, normalization: str = "std",
            fresh_fraction: float | None = None, plot: str | None = None) -> Comparison:
    """Compare a family of runs that differ in ``by`` (see the module docstring).

    Parameters
    ----------
    logs : paths or :class:`~grpo_theory.runs.logs.TrainingLog` objects (at least 2).
    by : one of :data:`BY`.
    values : the knob's value per log; default: read from each log's config
        (:data:`CONFIG_KEYS`).  Model size in any unit (parameters, billions).
    metric : reward metric (default: each log's reward metric; they must agree).
    normalization : advantage normalization of the runs, ``"std"`` (GRPO, TRL default) or
        ``"mean"`` (Dr. GRPO), for the finite-G noise prediction.
    fresh_fraction : K_f/K of the runs (``grpo-theory check-config`` or ``fixed-points`` give it),
        for the refresh-interval prediction dtau/dlag = -(1 - K_f/K); default: the range over
        K_f/K in [0, 1].
    plot : write a figure of the family with the fitted law to this file.
    """
    by = check_choice("by", by, BY)
    normalization = check_choice("normalization", normalization, NORMALIZATIONS)
    if fresh_fraction is not None:
        fresh_fraction = check_real("fresh_fraction", fresh_fraction)
    if plot is not None:      # before any work (overwriting is the caller's decision)
        check_output_file("plot", plot, formats=figure_formats(), force=True)
    logs = list(logs)
    if len(logs) < 2:
        raise ParameterError("LOG", len(logs), "at least 2 logs (a family of runs)")
    logs = [lg if isinstance(lg, TrainingLog) else read_log(lg) for lg in logs]
    if values is not None:
        values = list(values)
        if len(values) != len(logs):
            raise ParameterError("values", values, f"one value per log ({len(logs)})")
    else:
        values = [_config_value(lg, by) for lg in logs]
        missing = [lg.source for lg, v in zip(logs, values) if v is None]
        if missing:
            raise ParameterError("values", None, f"given with --values: no {by} in the config of "
                                                 f"{', '.join(missing)}")
    if by == "refresh_interval":
        values = [check_real(by, v, low=1) for v in values]
    else:
        values = [check_real(by, v, low=0, low_open=True) for v in values]
    metrics = [lg.reward_metric(metric) for lg in logs]
    if len(set(metrics)) > 1:
        raise ParameterError("metric", None, "the same reward metric in every log; the logs record "
                             + ", ".join(sorted(set(metrics))) + " (give --metric)")
    series, fits = [], []
    for lg, v in progress(list(zip(logs, values)), desc="fitting runs"):
        s, y = lg.series(metrics[0])
        if s.size < MIN_POINTS:
            raise ParameterError("log", lg.source, f"a run with at least {MIN_POINTS} logged "
                                                   f"{metrics[0]} values (it has {s.size})")
        for (s0, y0), f0 in zip(series, fits):
            if np.array_equal(s0, s) and np.array_equal(y0, y, equal_nan=True):
                raise ParameterError("LOG", lg.source, f"a run other than {f0.source} (the "
                                     f"two logs hold the same {metrics[0]} at every step: one "
                                     "run given twice is no family)")
        series.append((s, y))
        fits.append(fit_run(s, y, source=lg.source, value=v))
    fits = [dataclasses.replace(f, label=lab)
            for f, lab in zip(fits, run_labels([str(f.source) for f in fits]))]
    binary = all(np.all((y >= 0) & (y <= 1)) for _, y in series)
    if by == "group_size":
        analysis = _group_size(series, fits, binary, normalization)
    else:
        analysis = _scaling(by, series, fits, fresh_fraction)
    result = Comparison(by=by, metric=metrics[0], runs=fits, analysis=analysis, binary=binary,
                        plot=plot)
    if plot:
        _plot(result, series, plot)
    return result


# ----------------------------------------------------------------------------------
# Text and figure
# ----------------------------------------------------------------------------------

def _g(x, spec=".3g"):
    return "n/a" if x is None or (isinstance(x, float) and not math.isfinite(x)) else format(x, spec)


def _iv(pair, spec=".3g"):
    return f"[{_g(pair[0], spec)}, {_g(pair[1], spec)}]"


def run_labels(sources) -> list:
    """Names that tell the runs apart: each file's name, or, where names repeat, the shortest
    path suffix (whole folders) that is unique among the runs; a label longer than 40
    characters keeps its last 37 behind "...".  Identical sources keep identical labels."""
    parts = [os.path.normpath(str(s)).replace(os.sep, "/").split("/") for s in sources]
    labels = []
    for i, p in enumerate(parts):
        k = 1
        while k < len(p) and any(q[-k:] == p[-k:] and q != p for q in parts):
            k += 1
        lab = "/".join(p[-k:])
        labels.append(lab if len(lab) <= 40 else "..." + lab[-37:])
    return labels


def _short(source: str) -> str:
    """Parent folder and file name, or the parent folder alone when that is too long (40 characters)."""
    parent = os.path.basename(os.path.dirname(source))
    name = os.path.join(parent, os.path.basename(source))
    if len(name) <= 40:
        return name
    return parent if 0 < len(parent) <= 40 else "..." + name[-37:]


def _format(res: Comparison) -> str:
    a = res.analysis
    lines = [f"family of {len(res.runs)} runs by {res.by}, metric {res.metric}"]
    lines.append(f"  {'run':<40} {res.by:>14} {'points':>6} {'plateau':>8} {'tau (steps) [95%]':>26}"
                 + ("   fluctuation [95%]" if res.by == "group_size" else ""))
    for f in res.runs:
        name = f.label or _short(f.source)
        if f.identified:
            row = (f"  {name:<40} {f.value:>14.4g} {f.n_points:>6} {_g(f.plateau, '.4f'):>8} "
                   f"{_g(f.tau):>8} {_iv(f.tau_interval):>17}")
            if res.by == "group_size":
                row += (f"   {_g(f.fluctuation)} {_iv(f.fluctuation_interval)}"
                        if np.isfinite(f.fluctuation) else f"   n/a ({f.fluctuation_reason})")
        else:
            row = f"  {name:<40} {f.value:>14.4g} {f.n_points:>6}   not fitted: {f.reason}"
        lines.append(row)
    if isinstance(a, GroupSizeAnalysis):
        if a.chi2 is not None:
            lines.append(f"invariance of the mean trajectory: chi2 = {a.chi2:.1f} on {a.chi2_dof} dof "
                         f"({a.n_blocks} blocks of {a.block_points} points), p-value "
                         + ("< 0.001" if a.p_value < 1e-3 else f"{a.p_value:.3g}") + " -> "
                         + ("consistent with G-invariance" if a.invariant else
                            "consistent with each other (replicates)" if a.invariant is None
                            and a.p_value >= 1 - LEVEL else
                            "the mean trajectories differ beyond their noise"))
        if a.exponent is not None:
            r = a.exponent
            lines.append(f"fluctuation exponent: Var ~ G^{r.slope:.3g} {_iv(r.interval)} "
                         f"(chi2/dof = {_g(r.birge ** 2)})")
        if a.predicted_exponent is not None:
            lines.append(f"exact finite-G prediction at the observed plateaus: G^{a.predicted_exponent:.3g} "
                         f"-> {'agrees' if a.agrees else 'disagrees'} with the fit")
            for f, e, reg in zip([f for f in res.runs if np.isfinite(f.fluctuation)],
                                 a.local_exponents, a.regimes):
                lines.append(f"  G = {f.value:g} at p = {f.plateau:.3f}: local exponent {e:.2f}, {reg}")
    else:
        if a.regression is not None:
            r = a.regression
            what = "tau vs lag slope" if res.by == "refresh_interval" else f"tau ~ {res.by}^d, d"
            lines.append(f"{what} = {r.slope:.3g} {_iv(r.interval)} (weighted, chi2/dof = "
                         f"{_g(r.birge ** 2)})")
        if a.joint_exponent is not None:
            lines.append(f"joint fit (tau_i = c {res.by}_i^d, plateau {a.joint_plateau}): d = "
                         f"{a.joint_exponent:.3g} {_iv(a.joint_interval)} (within-run noise only: "
                         "assumes the law holds exactly)")
        if a.reading:
            r = a.regression
            vacuous = (a.agrees and r is not None and r.interval is not None
                       and r.interval[0] <= 0 <= r.interval[1])
            lines.append(a.reading + ("" if a.agrees is None else
                                      " -> consistent, not resolved" if vacuous else
                                      f" -> {'agrees' if a.agrees else 'disagrees'}"))
    for k, v in a.declined.items():
        lines.append(f"declined ({k}): {v}")
    if res.plot:
        lines.append(f"figure: {res.plot}")
    return "\n".join(lines)


def _plot(res: Comparison, series, path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from grpo_theory.outputs import atomic_output

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    cmap = plt.get_cmap("viridis")
    vals = np.log([f.value for f in res.runs])
    span = np.ptp(vals) or 1.0
    for (s, y), f in zip(series, res.runs):
        c = cmap((math.log(f.value) - vals.min()) / span * 0.9)
        ax1.plot(s, y, ".", ms=2, color=c, alpha=0.5)
        if f.identified:
            ax1.plot(s, _law(s - s[0], f.plateau, f.initial, f.tau), color=c, lw=1.5,
                     label=f"{res.by} = {f.value:g}")
    ax1.set_xlabel("step")
    ax1.set_ylabel(res.metric)
    ax1.legend(fontsize=7)
    a = res.analysis
    if res.by == "group_size":
        ok = [f for f in res.runs if np.isfinite(f.fluctuation)]
        if ok:
            G = np.array([f.value for f in ok])
            v = np.array([f.fluctuation for f in ok])
            err = np.abs(np.array([f.fluctuation_interval for f in ok]).T - v)
            ax2.errorbar(G, v, yerr=err, fmt="o", label="plateau fluctuation")
            if a.exponent is not None:
                gg = np.geomspace(G.min(), G.max())
                ax2.plot(gg, np.exp(a.exponent.intercept) * gg**a.exponent.slope,
                         label=f"fit G^{a.exponent.slope:.2f}")
            if a.predicted_relative:
                scale = math.exp(np.mean(np.log(v)))
                ax2.plot(G, scale * np.array(a.predicted_relative), "s", mfc="none",
                         label=f"exact finite-G prediction (G^{a.predicted_exponent:.2f})")
            ax2.set_xscale("log")
            ax2.set_yscale("log")
            ax2.set_xlabel("group size G")
            ax2.set_ylabel("Var reward")
    else:
        ok = [f for f in res.runs if f.identified]
        if ok:
            x = np.array([f.value for f in ok])
            tau = np.array([f.tau for f in ok])
            err = np.abs(np.array([f.tau_interval for f in ok]).T - tau)
            xs = (x - 1) / 2 if res.by == "refresh_interval" else x
            ax2.errorbar(xs, tau, yerr=err, fmt="o", label="fitted tau")
            if a.regression is not None:
                r = a.regression
                grid = np.linspace(xs.min(), xs.max()) if res.by == "refresh_interval" \
                    else np.geomspace(xs.min(), xs.max())
                law = r.intercept + r.slope * grid if res.by == "refresh_interval" \
                    else np.exp(r.intercept) * grid**r.slope
                ax2.plot(grid, law, label=f"law, slope {r.slope:.2f}")
            if res.by != "refresh_interval":
                ax2.set_xscale("log")
                ax2.set_yscale("log")
            ax2.set_xlabel("effective lag (k-1)/2" if res.by == "refresh_interval" else res.by)
            ax2.set_ylabel("tau (steps)")
    ax2.legend(fontsize=7)
    fig.tight_layout()
    with atomic_output(path) as tmp:    # written beside path, moved into place at the end
        fig.savefig(tmp, dpi=120)
    plt.close(fig)
