r"""Adam near a fixed point: heavy ball with a step set by the second-moment estimate.

Adam on the logit gradient :math:`g` (PyTorch conventions):
:math:`m \leftarrow \beta_1 m + (1-\beta_1)g`, :math:`v \leftarrow \beta_2 v + (1-\beta_2)g^2`,
:math:`\Delta\theta = -\eta\,\hat m/(\sqrt{\hat v}+\epsilon)` with bias corrections
:math:`\hat m = m/(1-\beta_1^t)`, :math:`\hat v = v/(1-\beta_2^t)`.
With :math:`b = m/(1-\beta_1)` the first moment is exactly the heavy-ball buffer
:math:`b \leftarrow \beta_1 b + g` (``adam.momentum_form``), so while :math:`\hat v` is
slow Adam is heavy ball with momentum :math:`\mu = \beta_1` and learning rate

.. math::  \eta_{\mathrm{eff}} = \frac{\eta\,(1-\beta_1)}{(1-\beta_1^t)(\sqrt{\hat v} + \epsilon)}

on the per-unit-lr update of z (two actions: the logit gradient is :math:`-1/\kappa`
times the update of z and z moves by :math:`\kappa` times the logit step, so
:math:`\kappa = 2` cancels in the step and stays in :math:`v`).  The second moment is not a constant: at stationarity
:math:`E[g^2] = (\sigma^2 + K^2\operatorname{Var}z)/\kappa^2` — the gradient noise plus the
restoring force's own fluctuation — and :math:`\operatorname{Var}z` depends on
:math:`\eta_{\mathrm{eff}}`, so the stationary state is the self-consistent solution of
:math:`v = (\sigma^2 + K^2 V(\eta_{\mathrm{eff}}(v)))/\kappa^2` with V the exact L2
variance (``noise``/``reuse``).  Near the L2 threshold V grows, v grows and
:math:`\eta_{\mathrm{eff}}` shrinks: Adam stabilises itself, so the threshold in
:math:`\eta` is where the self-consistent solution ceases to exist.

What is left out (quantified by the cross-check ``adam``): the fluctuation of
:math:`\hat v` (relative size :math:`\sqrt{(1-\beta_2)/(1+\beta_2)}` times the coefficient
of variation of :math:`g^2`), its correlation with the current gradient (weight
:math:`1-\beta_2`), and the memory of the transient: :math:`\hat v` averages
:math:`g^2` over about :math:`1/(1-\beta_2)` steps, so a window measured within that
time of a large-gradient transient sees a larger :math:`\hat v` than the stationary one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import sympy as sp

from grpo_theory.model import GRPOModel
from grpo_theory.results import Result
from grpo_theory.theory import symbols as S
from grpo_theory.theory.derived import Derived, derivation, get, prove_zero
from grpo_theory.theory.drift import geometric_factor
from grpo_theory.theory.fixed_points import stable_fixed_point
from grpo_theory.theory.noise import noise_at_fixed_point, stationary_variance
from grpo_theory.validate import ParameterError, check_real

__all__ = ["AdamReduction", "adam_reduction", "heavy_ball_reduction", "critical_learning_rate",
           "A_SIGMA"]


@derivation("adam.momentum_form")
def _momentum_form() -> Derived:
    # Adam's first-moment decay rate is written mu: it is the heavy-ball momentum
    b1, eta, g, m, t = S.mu, S.eta, sp.Symbol("g", positive=True), sp.Symbol("m_adam", positive=True), \
        sp.Symbol("t", positive=True)
    vhat = S.v_hat
    b = sp.Symbol("v", real=True)
    m_next = b1 * m + (1 - b1) * g
    b_next = b1 * b + g
    step_adam = -eta * (m_next / (1 - b1**t)) / sp.sqrt(vhat)
    expr = eta * (1 - b1) / ((1 - b1**t) * sp.sqrt(vhat))
    out = Derived("adam.momentum_form", expr, (eta, b1, t, vhat), r"\eta_{\theta}",
                  r"Adam's first moment $\bar{g}$, the running mean of the gradients with decay rate "
                  r"$\mu$, is $(1 - \mu)$ times the heavy-ball buffer $v$: the Adam step is a heavy-ball "
                  r"step with momentum $\mu$ and the per-parameter learning rate $\eta_{\theta}$ "
                  r"below ($\epsilon_{\mathrm{Adam}}$ neglected).",
                  units="logits per unit gradient", assumptions=r"$\overline{g^{2}}$ treated as given at each "
                  r"step; $\epsilon_{\mathrm{Adam}} \ll \sqrt{\overline{g^{2}}}$", level="L2",
                  references=("kingma2015adam", "polyak1964"), title="Adam as a heavy-ball step")
    expr = out.expr
    out.check(r"$\bar{g}_{t+1} = (1 - \mu) v_{t+1}$ when $\bar{g}_{t} = (1 - \mu) v_{t}$", "sympy",
              prove_zero(m_next.subs(m, (1 - b1) * b) - (1 - b1) * b_next))
    out.check(r"the Adam step equals $-\eta_{\theta} v_{t+1}$", "sympy",
              prove_zero(step_adam.subs(m, (1 - b1) * b) + expr * b_next))
    out.check(r"bias correction of $\bar{g}$: the factor tends to $\eta (1 - \mu)/\sqrt{\overline{g^{2}}}$ "
              r"as $t \to \infty$", "sympy",
              prove_zero(sp.limit(expr.subs(b1, sp.Rational(9, 10)), t, sp.oo)
                         - (eta / 10) / sp.sqrt(vhat)), cases=r"$\mu = 9/10$")
    return out


@derivation("adam.critical_step")
def _critical_step() -> Derived:
    mu, a, lam = sp.symbols("mu a lambda", positive=True)
    char = lam**2 - (1 + mu - a) * lam + mu          # heavy ball, on-policy
    disc = sp.discriminant(char, lam)
    expr = (1 - sp.sqrt(mu)) ** 2
    out = Derived("adam.critical_step", expr, (mu,), r"a_{c}",
                  r"Critical damping of the heavy-ball map at momentum $\mu$ (on-policy): the step "
                  r"stiffness $a$ at which its two eigenvalues meet on the real axis; under Adam $\mu$ "
                  r"is its first-moment decay rate and $a = \eta_{\theta} K$ with the self-consistent "
                  r"$\eta_{\theta}$.",
                  units="dimensionless", assumptions=r"refresh interval $1$; the smaller root "
                  r"(at the larger, $(1 + \sqrt{\mu})^{2}$, the pair returns to the negative real "
                  r"axis, below the flip threshold $2(1 + \mu)$ by $(1 - \sqrt{\mu})^{2}$)",
                  level="L2", references=("kingma2015adam", "polyak1964"),
                  title="Critical damping of the on-policy heavy-ball step")
    expr = out.expr
    out.check(r"the discriminant of $\lambda^{2} - (1 + \mu - a) \lambda + \mu$ vanishes at "
              r"$a = (1 - \sqrt{\mu})^{2}$",
              "sympy", prove_zero(disc.subs(a, expr)))
    out.check(r"the discriminant's derivative in $a$ is $-4 \sqrt{\mu} < 0$ there: a complex pair "
              r"(oscillatory) just above $a_{c}$", "sympy",
              prove_zero(sp.diff(disc, a).subs(a, expr) + 4 * sp.sqrt(mu)))
    return out


#: the step stiffness that Adam would take if its second moment held the gradient noise alone,
#: :math:`a_{\sigma} = \eta (1 - \mu) \kappa K / \sigma` (the first-order reading)
A_SIGMA = sp.Symbol(r"a_{\sigma}", positive=True)


@derivation("adam.self_consistent_step")
def _self_consistent_step() -> Derived:
    mu, a, eta, K, kap = S.mu, S.a, S.eta, S.K, S.kappa
    ar2 = get("noise.ar2_variance")
    # the self-consistent step a = eta_theta K against the noise-only step a_sigma
    expr = a * sp.sqrt(2 * ((1 - mu**2) + mu * a) / ((1 - mu) * (2 * (1 + mu) - a)))
    out = Derived("adam.self_consistent_step", expr, (a, mu), r"a_{\sigma}",
                  r"Self-consistent heavy-ball reduction of Adam on-policy: at stationarity the "
                  r"second moment is $\overline{g^{2}} = (\sigma^{2} + K^{2} \operatorname{Var} z)/\kappa^{2}$, "
                  r"the gradient noise plus the restoring force's own fluctuation, and "
                  r"$\operatorname{Var} z$ is the stationary variance of the heavy ball at the step "
                  r"$\eta_{\theta}$ that $\overline{g^{2}}$ sets. The step $a = \eta_{\theta} K$ that solves "
                  r"this is given implicitly by the step $a_{\sigma} = \eta (1 - \mu) \kappa K/\sigma$ "
                  r"that the noise alone would set: $a_{\sigma}$ increases from $a_{\sigma} \approx a$ "
                  r"at small steps to infinity as $a$ approaches the flip threshold $2 (1 + \mu)$, "
                  r"so that the self-consistent step stays below it at every learning rate.",
                  units="dimensionless",
                  assumptions=r"refresh interval $1$; $\overline{g^{2}}$ at its stationary value "
                  r"(its fluctuation neglected); bias correction complete ($t \to \infty$); "
                  r"$\epsilon_{\mathrm{Adam}} \ll \sqrt{\overline{g^{2}}}$", level="L2",
                  references=("kingma2015adam",), title="Adam's self-consistent step")
    expr = out.expr
    # the derivation: eta_theta from adam.momentum_form at t -> infinity, Var x from
    # noise.ar2_variance at that step, and the self-consistency of the second moment
    t = sp.Symbol("t", positive=True)
    m_form = get("adam.momentum_form")
    vhat = S.v_hat
    eta_theta_inf = sp.limit(m_form.expr.subs(mu, sp.Rational(1, 2)), t, sp.oo)
    out.check(r"$\eta_{\theta} \to \eta (1 - \mu)/\sqrt{\overline{g^{2}}}$ as $t \to \infty$ "
              r"(Adam as a heavy-ball step)", "sympy",
              prove_zero(eta_theta_inf - eta * sp.Rational(1, 2) / sp.sqrt(vhat)),
              cases=r"$\mu = 1/2$")
    sqrt_v = eta * (1 - mu) * K / a                  # a = eta_theta K with eta_theta = eta(1-mu)/sqrt(v)
    sigma2 = (eta * (1 - mu) * kap * K / expr) ** 2  # a_sigma = eta (1 - mu) kappa K / sigma
    var_x = ar2.expr.subs({S.eta: a / K, S.sigma2: sigma2})
    residual = sqrt_v**2 - (sigma2 + K**2 * var_x) / kap**2
    out.check(r"with $\sqrt{\overline{g^{2}}} = \eta (1 - \mu) K/a$, $\sigma = \eta (1 - \mu) \kappa K/a_{\sigma}$ "
              r"and the stationary variance $\operatorname{Var} z$ of the on-policy process at $\eta_{\theta} = a/K$, "
              r"the condition $\kappa^{2} \overline{g^{2}} = \sigma^{2} + K^{2} \operatorname{Var} z$ holds exactly "
              r"at the $a_{\sigma}$ shown", "sympy", prove_zero(sp.together(residual)))
    out.check(r"$a_{\sigma}/a \to 1$ as $a \to 0$: a small step is the noise-only step", "sympy",
              prove_zero(sp.cancel(expr / a).subs(a, 0) - 1))
    out.check(r"$a_{\sigma} \to \infty$ as $a \to 2 (1 + \mu)$ from below: no learning rate "
              r"takes the step past the flip threshold", "sympy",
              sp.limit(expr.subs(mu, sp.Rational(1, 2)), a, 3, dir="-") == sp.oo,
              cases=r"$\mu = 1/2$")
    # independent: the bisection of heavy_ball_reduction (no closed form used) at a few points
    worst = 0.0
    for eta_v, mu_v, K_v, s2_v in ((0.5, 0.5, 0.13, 0.02), (3.0, 0.9, 0.4, 0.01), (0.05, 0.0, 1.0, 0.3)):
        r = heavy_ball_reduction(eta_v, K_v, s2_v, beta1=mu_v, beta2=0.999, eps=0.0)
        a_v = r.effective_learning_rate * K_v
        a_sig = eta_v * (1 - mu_v) * 2.0 * K_v / math.sqrt(s2_v)
        worst = max(worst, abs(float(expr.subs({a: a_v, mu: mu_v})) / a_sig - 1))
    out.check("cross-check: the self-consistent step found by bisection of the second-moment "
              "condition satisfies the relation (3 settings, relative error below $10^{-9}$)",
              "numeric", worst < 1e-9,
              "largest relative error " + (f"below $10^{{{math.ceil(math.log10(worst))}}}$"
                                           if worst > 0 else "zero"))
    return out


@dataclass(frozen=True)
class AdamReduction(Result):
    """The heavy-ball reduction of Adam at a fixed point (stationary, self-consistent).

    ``momentum`` = beta1, ``effective_learning_rate`` on z (per unit update),
    ``second_moment`` the stationary E[g^2] (per logit), ``stationary_variance_z``
    (logits²; ``None`` with ``reason`` where no stationary state exists),
    ``first_order_*`` the values with v = sigma²/kappa² (no force fluctuation).
    """

    momentum: float
    effective_learning_rate: float | None
    second_moment: float | None
    stationary_variance_z: float | None
    first_order_learning_rate: float
    first_order_variance_z: float | None
    reason: str = ""

    def __str__(self) -> str:
        if self.stationary_variance_z is None:
            return f"Adam reduction: n/a ({self.reason})"
        return (f"Adam -> heavy ball: mu = {self.momentum:g}, eta_eff = "
                f"{self.effective_learning_rate:.4g} (first order {self.first_order_learning_rate:.4g}), "
                f"E[g^2] = {self.second_moment:.4g}, stationary Var z = "
                f"{self.stationary_variance_z:.4g}")


def heavy_ball_reduction(learning_rate, stiffness, noise_variance, *, beta1, beta2, eps,
                         refresh_interval=1, fresh_fraction=0.0, reuse="fresh", window_batches=1,
                         geometric_factor=2.0, iterations=200) -> AdamReduction:
    r"""Stationary heavy-ball reduction of Adam at a given stiffness and noise (see the module
    docstring); the low-level form of :func:`adam_reduction`.

    ``stiffness`` K and ``noise_variance`` :math:`\sigma^2` are per unit learning rate on z
    (as in :mod:`grpo_theory.theory.noise`); ``geometric_factor`` :math:`\kappa` converts the
    update of z into the logit gradient (two actions: 2).  Solves
    :math:`v = (\sigma^2 + K^2 V(\eta_{\mathrm{eff}}(v)))/\kappa^2` by bisection (the map is
    monotone: V decreases as v grows).  The optimizer and lag arguments are those of a
    validated :class:`~grpo_theory.model.GRPOModel` (``beta2`` sets no step in the reduction).
    """
    eta, b1, e = float(learning_rate), float(beta1), float(eps)
    Kv = check_real("stiffness", stiffness, low=0, low_open=True)
    s2 = check_real("noise_variance", noise_variance, low=0, low_open=True)
    kap = float(geometric_factor)

    def eta_eff(v):
        return eta * (1 - b1) / (math.sqrt(v) + e)

    def var(v):
        return stationary_variance(eta_eff(v), b1, Kv, s2, refresh_interval=refresh_interval,
                                   fresh_fraction=fresh_fraction, reuse=reuse,
                                   window_batches=window_batches)

    v0 = s2 / kap**2
    first = var(v0)

    # V(eta_eff(v)) decreases in v: bisection on h(v) = v - (s2 + K^2 V)/kap^2 (h increasing)
    def h(v):
        V = var(v)
        return -math.inf if not math.isfinite(V) else v - (s2 + Kv**2 * V) / kap**2

    lo, hi = v0, v0
    while h(hi) < 0:
        hi *= 2
        if hi > v0 * 1e12:
            return AdamReduction(b1, None, None, None, eta_eff(v0), None,
                                 reason="no self-consistent stationary state")
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        if h(mid) < 0:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-14 * hi:
            break
    v = hi
    return AdamReduction(b1, eta_eff(v), v, var(v), eta_eff(v0),
                         first if math.isfinite(first) else None)


def adam_reduction(model: GRPOModel) -> AdamReduction:
    r"""Adam (the model's ``learning_rate``, ``adam_beta1``/``adam_beta2``, ``adam_eps``) at its
    stable fixed point as a self-consistent heavy ball (``momentum`` is not used): the
    stiffness and split of the fixed point, the noise :func:`~grpo_theory.theory.noise.noise_at_fixed_point`
    and the model's refresh window and reuse mode."""
    if model.group_size is None:
        raise ParameterError("group_size", "inf", "a finite group size (Adam's step is set by "
                             "the gradient noise)")
    fp = stable_fixed_point(model)
    return heavy_ball_reduction(model.learning_rate, fp.stiffness, noise_at_fixed_point(model, fp),
                                beta1=model.adam_beta1, beta2=model.adam_beta2, eps=model.adam_eps,
                                refresh_interval=model.window, fresh_fraction=fp.fresh_fraction,
                                reuse=model.reuse, window_batches=model.window_batches,
                                geometric_factor=geometric_factor(model.actions, model.correct))


def critical_learning_rate(model: GRPOModel) -> float:
    r"""Adam learning rate :math:`\eta` at which the model's self-consistent heavy ball is
    critically damped on-policy: :math:`\eta_{\mathrm{eff}}(\eta)\,K = (1-\sqrt{\beta_1})^2`
    (``adam.critical_step``), at the model's fixed point and noise (its learning rate and lag
    are not used).  Below it the stationary fluctuation relaxes monotonically, above it it
    oscillates.  Solved by bisection in :math:`\log\eta` (:math:`\eta_{\mathrm{eff}}`
    increases with :math:`\eta`)."""
    fp = stable_fixed_point(model)
    Kv, s2 = fp.stiffness, noise_at_fixed_point(model, fp)
    kap = geometric_factor(model.actions, model.correct)
    target = float(get("adam.critical_step").numeric(model.adam_beta1))

    def excess(log_eta):
        r = heavy_ball_reduction(math.exp(log_eta), Kv, s2, beta1=model.adam_beta1,
                                 beta2=model.adam_beta2, eps=model.adam_eps, geometric_factor=kap)
        return r.effective_learning_rate * Kv - target

    lo, hi = math.log(1e-12), math.log(1e3)
    if excess(hi) < 0:
        raise ParameterError("learning_rate", "critical", "a model whose critical damping is "
                             "reached below eta = 1e3")
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if excess(mid) < 0:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12:
            break
    return math.exp(hi)
