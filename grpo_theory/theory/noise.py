r"""Gradient noise: stationary fluctuations around a stable fixed point (L3 and exact L2).

* ``noise.langevin_variance`` (L3): :math:`m\ddot x + \gamma\dot x + \kappa_s x = \eta\,\xi(t)`,
  :math:`\langle\xi(t)\xi(t')\rangle = \sigma^2\delta(t-t')`, gives
  :math:`\operatorname{Var}x = \eta^2\sigma^2/(2\gamma\kappa_s)`, from the continuous
  Lyapunov equation :math:`AP + PA^\top + Q = 0` solved by sympy.
* ``noise.ar2_variance`` (L2, on-policy): the heavy-ball AR(2) process
  :math:`x_{t+1} = (1+\mu-a)x_t - \mu x_{t-1} + \eta\xi_t`, :math:`a=\eta K`,
  :math:`\operatorname{Var}\xi=\sigma^2`, exactly from the discrete Lyapunov
  equation :math:`P = APA^\top + Q`; it agrees with the L3 value to leading order in
  :math:`a`.  With refresh interval :math:`k` the exact phase-averaged variance is
  computed numerically from the window map with accumulated noise covariance.
* ``noise.reward_fluctuation``: delta method,
  :math:`\operatorname{Var}p \approx (p^*(1-p^*))^2\operatorname{Var}z`; since
  :math:`\sigma^2\propto 1/G`, the reward fluctuation is :math:`\propto 1/G`.

Units: x and z in logits, p in reward, :math:`\sigma^2` the per-step variance of the
gradient noise of the logit (logits² per unit learning rate², from :mod:`grpo_theory.theory.drift`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import sympy as sp

from grpo_theory.model import GRPOModel
from grpo_theory.results import Result
from grpo_theory.theory import oscillator
from grpo_theory.theory import symbols as S
from grpo_theory.theory.lazy_scipy import solve_continuous_lyapunov, solve_discrete_lyapunov
from grpo_theory.theory.derived import Derived, derivation, get, prove_equal, prove_zero, taylor
from grpo_theory.theory.printing import latex
from grpo_theory.theory.printing import sci as _sci
from grpo_theory.theory.discrete import continuous_lag, max_stable_refresh_interval
from grpo_theory.theory.drift import update_variance
from grpo_theory.theory.fixed_points import stable_fixed_point
from grpo_theory.theory.reuse import window_phase_variances
from grpo_theory.validate import ParameterError, check_choice, check_probability, check_real

__all__ = ["stationary_variance", "reward_fluctuation", "noise_at_fixed_point", "Fluctuation",
           "fluctuation"]

_PAPER = ("predictable_grpo",)

#: Var z, the stationary variance of the logit (local: used only by the delta method here)
var_z = S.var_z


def _sym_cov(name):
    p11, p12, p22 = sp.symbols(f"{name}11 {name}12 {name}22")
    return sp.Matrix([[p11, p12], [p12, p22]]), (p11, p12, p22)


# ----------------------------------------------------------------------------------
# Derivations
# ----------------------------------------------------------------------------------

@derivation("noise.langevin_variance")
def _langevin() -> Derived:
    m, g, k, eta, s2 = S.m, S.gamma, S.spring, S.eta, S.sigma2
    A = sp.Matrix([[0, 1], [-k / m, -g / m]])
    Q = sp.Matrix([[0, 0], [0, eta**2 * s2 / m**2]])
    P, unknowns = _sym_cov("P")
    eqs = list(A * P + P * A.T + Q)
    (sol,) = sp.linsolve(eqs, unknowns)
    sol = dict(zip(unknowns, (sp.simplify(e) for e in sol)))
    expr = sol[unknowns[0]]
    out = Derived("noise.langevin_variance", expr, (S.eta, S.sigma2, S.gamma, S.spring),
                  r"\operatorname{Var} z",
                  r"Stationary variance of the deviation in the continuous (Langevin) model "
                  r"$m \ddot{x} + \gamma \dot{x} + \kappa_{s} x = \eta \xi(t)$, white noise of "
                  r"intensity $\sigma^{2}$.",
                  units="logits$^2$", assumptions=r"$\gamma > 0$, $\kappa_{s} > 0$ (stable); white noise",
                  level="L3", references=_PAPER, title="Stationary variance of the continuous model")
    expr = out.expr
    Ps = P.subs(sol)
    out.check(r"the covariance of $(x, \dot{x})$ solves the continuous Lyapunov equation of the model",
              "sympy", all(prove_zero(e) for e in (A * Ps + Ps * A.T + Q)))
    out.check(r"it does not depend on the mass $m$", "sympy",
              prove_equal(expr, eta**2 * s2 / (2 * g * k)) and sp.diff(expr, m) == 0)
    out.check(r"$\operatorname{Var} \dot{x} = \eta^{2} \sigma^{2}/(2 \gamma m)$ and "
              r"$\operatorname{Cov}(x, \dot{x}) = 0$", "sympy",
              prove_equal(sol[unknowns[2]], eta**2 * s2 / (2 * g * m))
              and prove_zero(sol[unknowns[1]]))
    vals = {m: 0.75, g: 0.3, k: 0.1, eta: 0.1, s2: 2.0}
    An = np.array(A.subs(vals), dtype=float)
    Qn = np.array(Q.subs(vals), dtype=float)
    ref = solve_continuous_lyapunov(An, -Qn)[0, 0]
    got = float(expr.subs(vals))
    out.check("matches a numerical solution of the continuous Lyapunov equation (one point)",
              "numeric", abs(got - ref) <= 1e-12 * abs(ref),
              f"relative difference {_sci(abs(got - ref) / abs(ref))} (tolerance $10^{{-12}}$)")
    return out


def _ar2_matrices():
    a = S.eta * S.K
    A = sp.Matrix([[1 + S.mu - a, -S.mu], [1, 0]])
    Q = sp.Matrix([[S.eta**2 * S.sigma2, 0], [0, 0]])
    return A, Q


@derivation("noise.ar2_stability_bound")
def _ar2_bound() -> Derived:
    flip = get("discrete.refresh_flip_threshold").expr.subs(S.k_ref, 1)
    out = Derived("noise.ar2_stability_bound", sp.factor(sp.simplify(flip)), (S.mu,),
                  r"a_{\max}",
                  r"Largest step stiffness $a = \eta K$ for which the on-policy heavy-ball process "
                  r"(second-order autoregressive) has a stationary state: the $k = 1$ flip threshold "
                  r"of the exact map.",
                  units=r"dimensionless ($\eta K$)", assumptions=r"on-policy ($k = 1$); $\mu \in [0, 1)$",
                  level="L2", references=_PAPER,
                  title="Largest stable step stiffness of the on-policy process")
    expr = out.expr
    out.check("equals the exact flip threshold of the refresh monodromy at $k = 1$", "sympy",
              prove_zero(expr - flip))
    A, _ = _ar2_matrices()
    lam = sp.Symbol("lambda")
    cp = A.charpoly(lam).as_expr().subs(S.eta, S.a / S.K)
    out.check(r"at the bound the process's matrix has the eigenvalue $-1$", "sympy",
              prove_zero(cp.subs({lam: -1, S.a: expr})))
    return out


@derivation("noise.ar2_variance")
def _ar2() -> Derived:
    A, Q = _ar2_matrices()
    P, unknowns = _sym_cov("P")
    (sol,) = sp.linsolve(list(A * P * A.T + Q - P), unknowns)
    sol = dict(zip(unknowns, sol))
    derived = sp.factor(sp.simplify(sol[unknowns[0]]))
    # displayed with every factor positive on the stable range 0 < eta K < 2 (1 + mu), mu < 1
    display = (1 + S.mu) * S.eta * S.sigma2 / ((1 - S.mu) * S.K * (2 * (1 + S.mu) - S.eta * S.K))
    out = Derived("noise.ar2_variance", display, (S.eta, S.mu, S.K, S.sigma2), r"\operatorname{Var} z",
                  r"Exact stationary variance of the on-policy heavy-ball process "
                  r"$x_{t+1} = (1 + \mu - \eta K) x_{t} - \mu x_{t-1} + \eta \xi_{t}$, "
                  r"$\operatorname{Var} \xi = \sigma^{2}$.",
                  units="logits$^2$",
                  assumptions=r"on-policy ($k = 1$); $0 < \eta K < 2 (1 + \mu)$, $\mu < 1$",
                  level="L2", references=_PAPER, title="Stationary variance of the on-policy process")
    expr = out.expr
    out.check("it is the solution of the discrete Lyapunov equation, written with every factor "
              "positive where the process is stable", "sympy", prove_equal(expr, derived),
              f"Lyapunov solution as factored: ${latex(derived)}$")
    Ps = P.subs(sol)
    out.check(r"the covariance of $(x_{t}, x_{t-1})$ solves the discrete Lyapunov equation", "sympy",
              all(prove_zero(e) for e in (A * Ps * A.T + Q - Ps)))
    a = S.a
    closed = (1 + S.mu) * S.eta**2 * S.sigma2 / ((1 - S.mu) * a * (2 * (1 + S.mu) - a))
    out.check(r"in $a = \eta K$ it diverges exactly at the flip threshold $a = 2(1 + \mu)$", "sympy",
              prove_equal(expr, closed.subs(a, S.eta * S.K)))
    # leading order in a: the L3 Langevin value with m, gamma, k of the oscillator at zero lag
    lang = get("noise.langevin_variance").expr
    osc = {S.gamma: get("oscillator.damping").expr.subs(S.ell, 0),
           S.spring: get("oscillator.spring").expr}
    lang_h = lang.subs(osc)
    ratio = sp.simplify((expr / lang_h).subs(S.K, a / S.eta))
    lead = sp.limit(ratio, a, 0)
    corr = sp.simplify(sp.diff(ratio, a).subs(a, 0))
    out.check(r"agrees with the variance $\eta^{2} \sigma^{2}/(2 \gamma \kappa_{s})$ of the continuous "
              r"model to leading order in $a$ (their ratio tends to $1$ as $a \to 0$)", "sympy",
              prove_equal(lead, 1),
              rf"exact over L3 $= 1 + {latex(corr)} \, a + O(a^{{2}})$")
    out.check(r"proportional to $\sigma^{2}$; $\sigma^{2}$ itself is proportional to $1/G$ only "
              r"where $G \min(p^{*}, q^{*}) \gg 1$ (the noise of the update when failures are rare "
              r"does not fall with $G$)", "sympy",
              prove_zero(sp.diff(expr, S.sigma2, 2)) and prove_zero(expr.subs(S.sigma2, 0)))
    f = sp.lambdify((S.eta, S.mu, S.K, S.sigma2), expr)
    worst = 0.0
    for eta_v, mu_v, K_v in ((0.1, 0.0, 1.0), (0.05, 0.5, 2.0), (0.01, 0.9, 3.0), (0.3, 0.99, 1.0)):
        An = np.array(A.subs({S.eta: eta_v, S.mu: mu_v, S.K: K_v}), dtype=float)
        Qn = np.array(Q.subs({S.eta: eta_v, S.sigma2: 1.5}), dtype=float)
        ref = solve_discrete_lyapunov(An, Qn)[0, 0]
        worst = max(worst, abs(f(eta_v, mu_v, K_v, 1.5) - ref) / ref)
    out.check("matches a numerical solution of the discrete Lyapunov equation at 4 points", "numeric",
              worst < 1e-10, f"worst relative error {_sci(worst)} (tolerance $10^{{-10}}$)")
    return out


@derivation("noise.reward_fluctuation")
def _reward() -> Derived:
    z, ps = S.z, S.p_star
    zstar = S.logit(ps)
    slope = sp.simplify(sp.diff(S.sigmoid(z), z).subs(z, zstar))
    expr = slope**2 * var_z
    out = Derived("noise.reward_fluctuation", expr, (S.p_star, var_z), r"\operatorname{Var} p",
                  r"Stationary reward fluctuation from the stationary fluctuation of the logit by "
                  r"linear error propagation. It falls like $1/G$ where the noise does, for "
                  r"$G \min(p^{*}, q^{*}) \gg 1$; when failures are rare it does not.",
                  units="reward$^2$",
                  assumptions=r"$\operatorname{Var} z$ small (linear error propagation, "
                              r"$O\big((\operatorname{Var} z)^{2}\big)$ dropped)",
                  level="L3", references=_PAPER, title="Stationary fluctuation of the reward")
    expr = out.expr
    out.show((ps * S.q_star) ** 2 * var_z, [(S.q_star, 1 - ps, "notation")])
    out.check(r"$\mathrm{d}p/\mathrm{d}z$ at $z^{*}$ equals $p^{*} q^{*}$", "sympy",
              prove_equal(slope, ps * (1 - ps)))
    # second-order delta method for Gaussian eps: Var sigma(z*+eps) = p'^2 v + O(v^2)
    eps_, v = sp.symbols("epsilon_ v", positive=True)
    ser = taylor(S.sigmoid(zstar + eps_), eps_, 3)
    c1, c2 = ser.coeff(eps_, 1), ser.coeff(eps_, 2)
    # moments of N(0, v): E eps = 0, E eps^2 = v, E eps^3 = 0, E eps^4 = 3 v^2
    var = c1**2 * v + 2 * c1 * c2 * 0 + c2**2 * (3 * v**2 - v**2)
    out.check(r"second-order error propagation: $\operatorname{Var} p = (p^{*} q^{*})^{2} "
              r"\operatorname{Var} z + O\big((\operatorname{Var} z)^{2}\big)$", "sympy",
              prove_zero(sp.simplify(var.coeff(v, 1) * var_z - expr)))
    import mpmath

    errs = []
    with mpmath.workdps(30):
        for pv, vz in (("0.3", "1e-6"), ("0.8", "1e-6"), ("0.5", "1e-7")):
            pv, vz = mpmath.mpf(pv), mpmath.mpf(vz)
            zs = mpmath.log(pv / (1 - pv))
            sd = mpmath.sqrt(vz)
            gauss = lambda e: mpmath.exp(-e**2 / (2 * vz)) / mpmath.sqrt(2 * mpmath.pi * vz)  # noqa: E731
            m1 = mpmath.quad(lambda e: gauss(e) / (1 + mpmath.exp(-(zs + e))), [-12 * sd, 0, 12 * sd])
            m2 = mpmath.quad(lambda e: gauss(e) / (1 + mpmath.exp(-(zs + e)))**2, [-12 * sd, 0, 12 * sd])
            exact = m2 - m1**2
            errs.append(abs(exact / (pv * (1 - pv))**2 / vz - 1))
    worst = max(errs)
    out.check(r"Gaussian quadrature at 30 digits of the variance of $p$ for a Gaussian logit "
              r"around $z^{*}$: relative error $O(\operatorname{Var} z)$ at "
              r"$\operatorname{Var} z \le 10^{-6}$", "mpmath",
              worst < 1e-5, f"worst relative error {_sci(worst)}")
    return out


# ----------------------------------------------------------------------------------
# Numeric API
# ----------------------------------------------------------------------------------

def stationary_variance(learning_rate, momentum, stiffness, noise_variance, refresh_interval=1, *,
                        fresh_fraction=0.0, reuse="fresh", window_batches=1,
                        level="discrete") -> float:
    r"""Stationary variance of the logit deviation x = z - z* (logits²): the one function for it.

    ``level="discrete"`` (exact L2): on-policy (``refresh_interval = 1``: the split and the
    reuse mode do not matter) the closed form ``noise.ar2_variance``; otherwise the phase average of
    the exact window map (:func:`grpo_theory.theory.reuse.window_phase_variances`: fresh
    batches from the stale policy, or ``reuse="batch"`` with ``window_batches``).
    ``level="continuous"`` (L3): :math:`\eta^2\sigma^2/(2\gamma\kappa_s)`
    (``noise.langevin_variance``) with :math:`\gamma, \kappa_s` from
    :func:`grpo_theory.theory.oscillator.coefficients` at the effective lag
    :math:`(k-1)/2` of a refresh window (fresh batches only).  ``noise_variance``
    :math:`\sigma^2` is the per-step gradient-noise variance (:math:`\propto 1/(BG)`,
    :func:`noise_at_fixed_point`).  The optimizer and lag arguments are those of a validated
    :class:`~grpo_theory.model.GRPOModel`.  Returns ``inf`` where the model is unstable (no
    stationary state).
    """
    eta, mu, k = float(learning_rate), float(momentum), int(refresh_interval)
    Kv = check_real("stiffness", stiffness, low=0, low_open=True)
    s2 = check_real("noise_variance", noise_variance, low=0)
    phi = check_real("fresh_fraction", fresh_fraction)
    level = check_choice("level", level, ("discrete", "continuous"))
    if level == "continuous":
        osc = oscillator.coefficients(eta, mu, continuous_lag("refresh", k), Kv, fresh_fraction=phi)
        if osc.damping <= 0:
            return math.inf
        return float(get("noise.langevin_variance").numeric(eta, s2, osc.damping, osc.spring))
    if k == 1:
        if eta * Kv >= get("noise.ar2_stability_bound").numeric(mu):
            return math.inf
        return float(get("noise.ar2_variance").numeric(eta, mu, Kv, s2))
    return float(np.mean(window_phase_variances(eta, mu, Kv, s2, k, fresh_fraction=phi,
                                                reuse=reuse, window_batches=window_batches)))


def reward_fluctuation(p_star, var_z):
    r"""Var p ≈ (p*(1-p*))² Var z (reward², delta method), from ``noise.reward_fluctuation``."""
    ps = check_probability("p_star", p_star)
    vz = check_real("var_z", var_z, low=0)
    return float(get("noise.reward_fluctuation").numeric(ps, vz))


# ----------------------------------------------------------------------------------
# A model at its fixed point
# ----------------------------------------------------------------------------------

def noise_at_fixed_point(model: GRPOModel, fixed_point=None) -> float:
    r"""Per-step gradient-noise variance :math:`\sigma^2` at the model's stable fixed point
    (logits² per unit learning rate²): the exact binomial variance of the on-policy update
    (:func:`grpo_theory.theory.drift.update_variance`) over the model's B prompts.  The one
    function for the noise at the fixed point; ``fixed_point`` (default: the model's
    :func:`~grpo_theory.theory.fixed_points.stable_fixed_point`) avoids recomputing it."""
    fp = stable_fixed_point(model) if fixed_point is None else fixed_point
    return float(update_variance(model, fp.p))


@dataclass(frozen=True)
class Fluctuation(Result):
    """Stationary fluctuation of one configuration around its fixed point (exact L2).

    ``stationary_variance_z`` (logits²) and ``reward_fluctuation_sd`` (reward) are
    ``None`` with a ``reason`` where the model does not apply (no finite group, no
    stable fixed point, an unstable window map).
    """

    reuse: str
    prompts: int
    p_star: float | None = None
    noise_variance: float | None = None
    stationary_variance_z: float | None = None
    reward_fluctuation_sd: float | None = None
    reason: str = ""

    def __str__(self) -> str:
        if self.stationary_variance_z is None:
            return f"stationary fluctuation: n/a ({self.reason})"
        return (f"stationary fluctuation (exact L2, reuse {self.reuse}, B = {self.prompts}): "
                f"Var z = {self.stationary_variance_z:.4g} logits², reward sd = "
                f"{self.reward_fluctuation_sd:.4g} at p* = {self.p_star:.4g}"
                + (f" ({self.reason})" if self.reason else ""))


def fluctuation(model: GRPOModel) -> Fluctuation:
    r"""Stationary Var z and reward sd of a heavy-ball (``optimizer="sgd"``) model at its
    stable fixed point.

    The per-step noise is :func:`noise_at_fixed_point`; the variance is the exact L2 window
    map with the fixed point's fresh/stale split, for the model's reuse mode
    (:func:`stationary_variance`); the reward sd is the delta method
    :func:`reward_fluctuation`.  Adam is analysed through its heavy-ball reduction
    (:func:`grpo_theory.theory.adam.adam_reduction`), which reports its own variance.
    """
    mode, B = model.reuse, model.prompts
    if model.optimizer != "sgd":
        return Fluctuation(mode, B, reason="defined for the heavy-ball optimizer sgd (Adam: see "
                                           "its heavy-ball reduction)")
    if model.group_size is None:
        return Fluctuation(mode, B, reason="needs a finite group size")
    if model.lag_model != "refresh":
        return Fluctuation(mode, B, reason="defined for lag_model 'refresh'")
    try:
        fp = stable_fixed_point(model)
    except ParameterError as exc:
        return Fluctuation(mode, B, reason=f"no stable fixed point ({exc.allowed})")
    s2 = noise_at_fixed_point(model, fp)
    var = stationary_variance(model.learning_rate, model.momentum, fp.stiffness, s2,
                              refresh_interval=model.refresh_interval,
                              fresh_fraction=fp.fresh_fraction, reuse=mode,
                              window_batches=model.window_batches)
    if not math.isfinite(var):
        # infinite where the float radius reaches 1; whether the map is unstable is decided
        # exactly (the refresh scan resolves 1 - O(eta K k) in mpmath where floats cannot)
        k_max = max_stable_refresh_interval(model.learning_rate, model.momentum, fp.stiffness,
                                            fresh_fraction=fp.fresh_fraction)
        if k_max >= model.refresh_interval:
            return Fluctuation(mode, B, fp.p, s2,
                               reason=f"ηK = {model.learning_rate * fp.stiffness:.3g} is too "
                                      "small for the window map's variance to be resolved in "
                                      "double precision; the map is stable")
        return Fluctuation(mode, B, fp.p, s2,
                           reason="the window map is unstable: no stationary state")
    if model.kl == "k1_reward":  # the shifted rewards are equal at z*: every advantage is 0
        return Fluctuation(mode, B, fp.p, 0.0, 0.0, 0.0,
                           "KL in the reward: every advantage vanishes at z*, so the noise is "
                           "multiplicative and the linear (L2) variance is exactly 0")
    return Fluctuation(mode, B, fp.p, s2, var, math.sqrt(reward_fluctuation(fp.p, var)))
