r"""Collapse: escape from the plateau's basin to a degenerate policy.

A policy whose success probability is 0 or 1 has only zero-variance groups: no
advantage, no gradient.  Near there the drift and the noise both vanish like
:math:`G\,\min(p, 1-p)`, so the dynamics freeze: the boundary absorbs.  We call a run
*collapsed* once its success probability leaves :math:`[\delta, 1-\delta]`, with the
degenerate level :math:`\delta` (default :math:`1/(10G)`: then fewer than one group
in ten carries any signal).

The logit performs a Markov walk :math:`z_{t+1} = z_t + \eta\,U_t` whose per-step update
has mean :math:`\eta F(z)` (``drift``, exact in finite G) and variance
:math:`\eta^2\sigma^2(z)/B` (``drift.update_variance``, the exact binomial variance).
Its diffusion limit has drift :math:`b = \eta F` and diffusion
:math:`D = \eta^2\sigma^2/(2B)` per step.  The basin of the stable fixed point is the
interval :math:`(a, b)` between the degenerate levels; the potential is
:math:`\phi(z) = \int^z b/D`, its depth the **basin depth**
:math:`\max\phi - \min(\phi(a), \phi(b))` (in units of the noise temperature), and the
mean first-passage time from :math:`z^*` is the solution of
:math:`D\tau'' + b\tau' = -1`, :math:`\tau(a) = \tau(b) = 0`
(``collapse.mean_first_passage``, proven below).  The probability of collapse within
N steps is taken as :math:`1 - e^{-N/\tau}`: exact for the slowest mode when
:math:`\tau` is much longer than the relaxation time :math:`1/(\eta K)`.

Where it stops being exact: the diffusion limit replaces the discrete binomial jumps
(accurate while one step moves z by much less than the basin width); heavy-ball
momentum enters as :math:`\eta/(1-\mu)` and the refresh lag and batch reuse only through
the exact L2 stationary variance, which rescales D (an approximation off-policy); the
exponential law ignores the transient from the start.  The cross-check
``collapse`` measures the fraction collapsed by step T in simulated ensembles.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import sympy as sp
from grpo_theory.theory.lazy_scipy import expit

from grpo_theory.model import GRPOModel
from grpo_theory.results import Result
from grpo_theory.theory import symbols as S
from grpo_theory.theory.derived import Derived, derivation, prove_zero
from grpo_theory.theory.drift import drift, update_variance
from grpo_theory.theory.fixed_points import stable_fixed_point
from grpo_theory.theory.noise import noise_at_fixed_point, stationary_variance
from grpo_theory.validate import ParameterError, check_int, check_memory, check_real

__all__ = ["CollapseRisk", "collapse_risk", "first_passage"]

_x = sp.Symbol("x", real=True)
_y, _w = S.y, S.w
_lo, _hi = sp.symbols("x_- x_+", real=True)   # the ends of the interval (a is the step stiffness)


@derivation("collapse.mean_first_passage")
def _mfpt() -> Derived:
    bf, Df = S.b, S.D
    phi = S.phi                       # phi' = b/D
    inner = sp.Integral(sp.exp(phi(_w)) / Df(_w), (_w, _lo, _y))
    T1 = sp.Integral(sp.exp(-phi(_y)) * inner, (_y, _lo, _x))
    S1 = sp.Integral(sp.exp(-phi(_y)), (_y, _lo, _x))
    C = T1.subs(_x, _hi) / S1.subs(_x, _hi)
    expr = C * S1 - T1
    out = Derived("collapse.mean_first_passage", expr, (_x,), r"\tau_{\mathrm{exit}}(x)",
                  r"Mean first-passage time out of $(x_{-}, x_{+})$ of the diffusion with drift $b(x)$ "
                  r"and diffusion coefficient $D(x)$ (generator $D\, \partial_{x}^{2} + b\, \partial_{x}$), "
                  r"started at $x$, with the potential $\phi' = b/D$.",
                  units="steps", assumptions=r"diffusion limit of the logit walk; $D > 0$ on $(x_{-}, x_{+})$",
                  level="L1", title="Mean time to escape the plateau's basin")
    tau = out.expr
    Sx, Tx = S.scale_S(_x), S.passage_T(_x)
    out.show(S.passage_T(_hi) * Sx / S.scale_S(_hi) - Tx,
             [(Sx, S1, ""), (Tx, T1, "")])
    ode = Df(_x) * sp.diff(tau, _x, 2) + bf(_x) * sp.diff(tau, _x) + 1
    ode = ode.subs(sp.Derivative(phi(_x), _x), bf(_x) / Df(_x)).doit(integrals=False)
    ode = ode.subs(sp.Derivative(phi(_x), _x), bf(_x) / Df(_x))
    out.check(r"$D \tau_{\mathrm{exit}}'' + b\, \tau_{\mathrm{exit}}' = -1$", "sympy",
              prove_zero(ode))
    # at x_- the integrals over (x_-, x_-) are 0: evaluated as such (doit would first try, for
    # 0.8 s, to integrate the undefined b and D in the other integrals, which cannot succeed)
    empty = tau.subs(_x, _lo).replace(
        lambda e: isinstance(e, sp.Integral) and any(len(lim) == 3 and lim[1] == lim[2] for lim in e.limits),
        lambda e: sp.Integer(0))
    out.check(r"$\tau_{\mathrm{exit}}(x_{-}) = 0$ and $\tau_{\mathrm{exit}}(x_{+}) = 0$", "sympy",
              prove_zero(empty) and prove_zero(tau.subs(_x, _hi)))
    # perturbation: the same construction with b -> 2b fails the equation
    bad = Df(_x) * sp.diff(tau, _x, 2) + 2 * bf(_x) * sp.diff(tau, _x) + 1
    bad = bad.subs(sp.Derivative(phi(_x), _x), bf(_x) / Df(_x)).doit(integrals=False)
    out.check("the check is sharp: with the drift doubled the equation fails", "sympy",
              not prove_zero(bad))
    return out


def first_passage(z, drift, diffusion, start):
    r"""Mean first-passage time (steps) of the diffusion out of ``(z[0], z[-1])`` from ``start``.

    ``drift`` b and ``diffusion`` D are arrays on the uniform grid ``z``; the quadratures
    of ``collapse.mean_first_passage`` are evaluated with the trapezoid rule in the log
    domain (the potential may span hundreds of units).  Returns ``(tau, phi)``; ``tau``
    is ``inf`` when it overflows a float.
    """
    h = z[1] - z[0]
    r = drift / diffusion
    phi = np.concatenate([[0.0], np.cumsum(0.5 * (r[1:] + r[:-1]) * h)])

    def log_cumtrapz(logf):
        # log of int_a^x f with the trapezoid rule: cumulative log-sum of the half-weights
        inc = np.logaddexp(logf[1:], logf[:-1]) + math.log(h / 2)
        return np.concatenate([[-np.inf], np.logaddexp.accumulate(inc)])

    log_inner = log_cumtrapz(phi - np.log(diffusion))
    log_T = log_cumtrapz(log_inner - phi)
    log_S = log_cumtrapz(-phi)
    log_C = log_T[-1] - log_S[-1]
    a, b = log_C + log_S, log_T
    with np.errstate(divide="ignore", invalid="ignore"):
        log_tau = np.where(a > b, a + np.log1p(-np.exp(np.minimum(b - a, 0.0))), -np.inf)
    lt = float(np.interp(start, z, log_tau)) if np.all(np.isfinite(log_tau[1:-1])) else \
        float(log_tau[int(np.searchsorted(z, start))])
    return (math.exp(lt) if lt < 700 else math.inf), phi


@dataclass(frozen=True)
class CollapseRisk(Result):
    """Probability that a configuration collapses to a degenerate policy within ``steps``.

    ``probability``, ``mean_first_passage_steps``, ``basin_depth`` (the potential
    barrier in units of the noise temperature), ``degenerate_level`` δ, the basin in
    reward units, and ``knobs``: the probability after each single change, best first
    (``best_knob``).  ``reason`` says why the model does not apply (then the numbers
    are ``None``).
    """

    steps: int
    probability: float | None = None
    mean_first_passage_steps: float | None = None
    basin_depth: float | None = None
    degenerate_level: float | None = None
    p_star: float | None = None
    basin: tuple | None = None
    knobs: tuple = ()
    best_knob: str | None = None
    reason: str = ""

    def __str__(self) -> str:
        if self.probability is None:
            return f"collapse risk: n/a ({self.reason})"
        lines = [f"collapse risk within {self.steps} steps: {self.probability:.3g}",
                 f"  mean first passage to a degenerate policy: "
                 f"{self.mean_first_passage_steps:.4g} steps from p* = {self.p_star:.4g}",
                 f"  basin: p in ({self.basin[0]:.4g}, {self.basin[1]:.4g}) "
                 f"(degenerate level {self.degenerate_level:.3g}); basin depth "
                 f"{self.basin_depth:.3g} (the barrier of the potential phi, phi' = b/D: drift "
                 "over diffusion)"]
        if self.knobs:
            lines.append("  one change at a time (probability after it):")
            for k in self.knobs:
                lines.append(f"    {k['knob']:<28s} {k['probability']:.3g}")
            lines.append(f"  most effective: {self.best_knob}" if self.best_knob else
                         f"  most effective: none (no single change lowers the risk below "
                         f"{self.probability:.3g})")
        if self.reason:
            lines.append(f"  note: {self.reason}")
        return "\n".join(lines)

    @property
    def exit_code(self) -> int:
        return 0 if self.probability is not None else 1


def _risk(model, steps, degenerate_level, grid):
    """(probability, tau, depth, fixed point, basin) or a reason string."""
    try:
        fp = stable_fixed_point(model)
    except ParameterError as exc:
        return f"no stable fixed point ({exc.allowed})"
    G = model.group_size
    delta = 1.0 / (10 * G) if degenerate_level is None else degenerate_level
    if not delta < fp.p < 1 - delta:
        return f"the fixed point p* = {fp.p:.6g} is itself degenerate at level {delta:g}"
    a, b = math.log(delta / (1 - delta)), math.log((1 - delta) / delta)
    z = np.linspace(a, b, grid)
    with np.errstate(over="ignore", invalid="ignore"):   # an overflowing noise is said below
        F = drift(model, z)
        s2 = np.asarray(update_variance(model, expit(z)), float)
        s2_star = noise_at_fixed_point(model, fp)
    eta_eff = model.learning_rate / (1 - model.momentum)
    # lag, reuse and momentum: the exact L2 stationary variance relative to on-policy SGD
    # at eta_eff rescales the diffusion (1 on-policy without momentum)
    if model.kl == "k1_reward":
        return ("KL in the reward: every advantage vanishes at z*, so the noise vanishes there "
                "and the diffusion model (D > 0 on the basin) does not apply")
    if not (math.isfinite(s2_star) and np.all(np.isfinite(s2)) and np.all(np.isfinite(F))):
        return ("the drift or the update noise on the basin overflows double precision "
                f"(sigma^2 = {s2_star:.3g} at the fixed point): the diffusion model has no "
                "finite answer here")
    try:
        with np.errstate(over="ignore", invalid="ignore"):
            var_model = stationary_variance(model.learning_rate, model.momentum, fp.stiffness,
                                            s2_star, refresh_interval=model.refresh_interval,
                                            fresh_fraction=fp.fresh_fraction, reuse=model.reuse,
                                            window_batches=model.window_batches)
    except (np.linalg.LinAlgError, OverflowError):   # eta K far beyond every threshold
        var_model = math.inf
    if not math.isfinite(var_model):
        return "the window map is unstable (L2): the run leaves the plateau deterministically"
    var_sgd = stationary_variance(eta_eff, 0.0, fp.stiffness, s2_star)
    scale = var_model / var_sgd if math.isfinite(var_sgd) else 1.0
    D = 0.5 * eta_eff**2 * s2 * scale
    if np.any(D <= 0):
        return "the noise vanishes inside the basin"
    tau, phi = first_passage(z, eta_eff * F, D, fp.z)
    i = int(np.searchsorted(z, fp.z))
    depth = float(phi[i] - max(phi[0], phi[-1]))
    prob = -math.expm1(-steps / tau) if tau > 0 else 1.0
    return prob, tau, depth, fp, (delta, 1 - delta)


def _infinite_group(model, T, degenerate_level) -> CollapseRisk:
    r"""The G -> infinity limit of the risk.

    The drift has a finite limit (the G = inf drift of ``drift``) while the per-step update
    variance is :math:`\sigma_1^2/(BG) + O(1/G^2)` (``drift.update_variance_coefficient``):
    the diffusion :math:`D \propto 1/G` vanishes on the whole basin, so the potential
    :math:`\phi = \int b/D` of a stable interior fixed point grows without bound, and with
    it the mean first passage.  The limit is a run that stays at its fixed point: probability
    0 within any horizon, :math:`\tau = \infty`, infinite depth.  Where the G = inf model has
    no stable interior fixed point (below the exact-KL saddle-node, or an unstable window
    map) the answer is n/a with the same reasons as at finite G; the default degenerate level
    1/(10 G) is 0, so the basin is all of (0, 1)."""
    if model.kl == "k1_reward":
        return CollapseRisk(T, reason="KL in the reward: every advantage vanishes at z*, so the "
                                      "noise vanishes there and the diffusion model (D > 0 on the "
                                      "basin) does not apply")
    try:
        fp = stable_fixed_point(model)
    except ParameterError as exc:
        return CollapseRisk(T, reason=f"no stable fixed point at G = inf ({exc.allowed})")
    delta = 0.0 if degenerate_level is None else degenerate_level
    if not delta < fp.p < 1 - delta:
        return CollapseRisk(T, reason=f"the fixed point p* = {fp.p:.6g} is itself degenerate "
                                      f"at level {delta:g}")
    if not math.isfinite(stationary_variance(model.learning_rate, model.momentum, fp.stiffness,
                                             1.0, refresh_interval=model.refresh_interval,
                                             fresh_fraction=fp.fresh_fraction, reuse=model.reuse,
                                             window_batches=model.window_batches)):
        return CollapseRisk(T, reason="the window map is unstable (L2): the run leaves the "
                                      "plateau deterministically")
    return CollapseRisk(T, 0.0, math.inf, math.inf, delta, fp.p, (delta, 1 - delta),
                        reason="G = inf is the limit of large groups: the update noise is "
                               "O(1/(B G)) (drift.update_variance; its leading coefficient "
                               "drift.update_variance_coefficient) and vanishes, "
                               "so the basin depth (the barrier of phi = the integral of drift "
                               "over diffusion) and the mean first passage "
                               "grow without bound with G; the run stays at its stable fixed "
                               "point")


#: the (G + 1) x grid float arrays alive at once in the risk's drift (measured 5.2; rounded up)
_SUM_ARRAYS = 8


def collapse_risk(model, *, steps, degenerate_level=None, knobs=True, grid=4001) -> CollapseRisk:
    r"""Probability that ``model`` collapses to a degenerate policy within ``steps`` steps.

    See the module docstring for the model and where it stops being exact.  With
    ``knobs`` the probability is recomputed after each single change — G doubled,
    B doubled, η halved, μ halved, refresh interval 1, fresh batches instead of reuse —
    and the changes are listed best first.  Heavy ball (``optimizer="sgd"``) only.
    """
    if not isinstance(model, GRPOModel):
        raise ParameterError("model", type(model).__name__, "a GRPOModel")
    T = check_int("steps", steps, low=1)
    if degenerate_level is not None:
        check_real("degenerate_level", degenerate_level, low=2.0**-52, high=0.5, high_open=True,
                   allowed="a real number in [2^-52, 0.5) (below 2^-52, 1 - delta rounds to 1 in "
                           "double precision)")
    if model.lag_model != "refresh":
        return CollapseRisk(T, reason="defined for lag_model 'refresh'")
    if model.optimizer != "sgd":
        return CollapseRisk(T, reason="defined for the heavy-ball optimizer sgd (the diffusion "
                                      "model has no Adam step)")
    if model.group_size is None:
        return _infinite_group(model, T, degenerate_level)
    # the drift's binomial sums are (G + 1) x grid arrays (2G + 1 with the "group size x2"
    # knob); measured peak 5-6 of them at G = 1000: refused before the work when they do not fit
    rows_g = 2 * model.group_size + 1 if knobs else model.group_size + 1
    check_memory("group_size", model.group_size, _SUM_ARRAYS * 8 * rows_g * grid,
                 f"{_SUM_ARRAYS} float arrays of (G + 1) x {grid} for the drift's binomial sums"
                 + (", at 2G for the group-size knob" if knobs else ""))
    out = _risk(model, T, degenerate_level, grid)
    if isinstance(out, str):
        return CollapseRisk(T, reason=out)
    prob, tau, depth, fp, basin = out
    rows = []
    if knobs:
        changes = [("group size x2", dict(group_size=2 * model.group_size)),
                   ("prompts x2", dict(prompts=2 * model.prompts)),
                   ("learning rate / 2", dict(learning_rate=model.learning_rate / 2))]
        if model.momentum > 0:
            changes.append(("momentum / 2", dict(momentum=model.momentum / 2)))
        if model.refresh_interval > 1:
            changes.append(("refresh interval 1", dict(refresh_interval=1, reuse="fresh",
                                                       window_batches=1)))
        if model.reuse == "batch" and model.refresh_interval > 1:
            changes.append(("fresh batches (no reuse)", dict(reuse="fresh", window_batches=1)))
        for label, change in changes:
            # the default level 1/(10G) follows G: larger groups are informative closer to 0 and 1
            r = _risk(model.replace(**change), T, degenerate_level, grid)
            if not isinstance(r, str):
                rows.append({"knob": label, "probability": r[0],
                             "mean_first_passage_steps": r[1]})
        rows.sort(key=lambda r: r["probability"])
    return CollapseRisk(T, prob, tau, depth, basin[0], fp.p, basin, tuple(rows),
                        _best_knob(rows, prob))


def _best_knob(rows, prob):
    """The change that lowers the risk most, or ``None`` where none lowers it (every change
    leaves it at 1, say); changes tied for the lowest probability are named together."""
    if not rows or not rows[0]["probability"] < prob:
        return None
    low = rows[0]["probability"]
    return " = ".join(r["knob"] for r in rows if r["probability"] == low)
