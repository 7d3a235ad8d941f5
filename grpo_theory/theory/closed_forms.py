r"""Nonlinear closed forms of the mean-field dynamics (no KL), which a linearization cannot give.

Without a KL penalty the on-policy mean-field flow (continuous time, SGD) is
:math:`\dot z = r\, g(z)` with :math:`g = \mathcal A_\infty` the advantage mass,
:math:`r = \eta\kappa` (std; large G, :math:`\epsilon = 0`) or
:math:`r = \eta\kappa(1-1/G)` (mean; exact at every finite G).  In logit space it
separates:

* ``std``:  :math:`g = \sqrt{pq} = 1/(2\cosh(z/2))`, so
  :math:`4\sinh(z/2) = 4\sinh(z_0/2) + r t` and
  :math:`z(t) = 2\,\mathrm{asinh}(\sinh(z_0/2) + r t/4)` — explicit;
* ``mean``: :math:`g = pq = 1/(2 + 2\cosh z)`, so
  :math:`2\sinh z + 2z = 2\sinh z_0 + 2 z_0 + r t` — implicit, inverted numerically
  (the left side is strictly increasing).

The reward is :math:`p(t) = \sigma(z(t))`; it never saturates to a plateau below 1
(no fixed point without KL), and the std flow reaches high reward faster.
"""

from __future__ import annotations

import functools
import mpmath
import numpy as np
import sympy as sp
from grpo_theory.theory.lazy_scipy import expit

from grpo_theory.model import NORMALIZATIONS
from grpo_theory.theory import symbols as S
from grpo_theory.theory.derived import Derived, derivation, get, prove_zero, record_numeric
from grpo_theory.validate import check_choice, check_finite_array, check_real

__all__ = ["no_kl_logit", "no_kl_reward", "no_kl_time_to_logit"]

_r = S.r    # rate eta*kappa (times 1 - 1/G for mean)
_z0 = S.z_0


def _force_in_z(normalization):
    """g(z) from the derived advantage mass with p = sigma(z), q = 1 - p (epsilon = 0)."""
    if normalization == "std":
        A = get("drift.expected_advantage_std_limit").expr.subs(S.eps, 0)
    else:
        A = sp.cancel(get("drift.expected_advantage_mean").expr / (1 - 1 / S.G))
    return A.subs({S.p_old: 1 / (1 + sp.exp(-S.z)), S.q_old: 1 / (1 + sp.exp(S.z))})


def _rational_in_w(expr):
    """Substitute z = 2 log w (w > 0): every identity between the forces becomes rational in w."""
    w = sp.Symbol("w", positive=True)
    return sp.cancel(sp.powsimp(sp.expand_power_base(
        sp.sympify(expr).rewrite(sp.exp).subs(S.z, 2 * sp.log(w)), force=True), force=True))


@functools.cache
def _time_integral(normalization):
    """T(z) with dT/dz = 1/g(z) (so T(z) - T(z0) = r t), derived by sympy integration (once per
    process: the std trajectory and its inverse both use it)."""
    g = _force_in_z(normalization)
    if normalization == "std":
        g_simple = 1 / (2 * sp.cosh(S.z / 2))
    else:
        g_simple = 1 / (2 + 2 * sp.cosh(S.z))
    return g, g_simple, sp.integrate(1 / g_simple, S.z)


@derivation("closed_forms.no_kl_std")
def _no_kl_std() -> Derived:
    g, g_simple, T = _time_integral("std")
    expr = 2 * sp.asinh(sp.sinh(_z0 / 2) + _r * S.t / 4)
    out = Derived("closed_forms.no_kl_std", expr, (S.t, _z0, _r), "z(t)",
                  r"Mean-field logit trajectory without KL, std normalization (large $G$, "
                  r"$\epsilon = 0$): explicit closed form.", units="logits",
                  assumptions=r"continuous time; $r = \eta \kappa$ (per step)", level="L1 (nonlinear)",
                  title="Logit trajectory without KL, std normalization")
    expr = out.expr
    out.check(r"$\sqrt{p q} = 1/(2 \cosh(z/2))$ for $p = 1/(1 + e^{-z})$", "sympy",
              _rational_in_w(g - g_simple) == 0)
    out.check(r"separation of variables: $\int 2 \cosh(z/2) \, \mathrm{d}z = 4 \sinh(z/2)$", "sympy",
              prove_zero(T - 4 * sp.sinh(S.z / 2)))
    out.check(r"$z(t)$ solves the separated equation $4 \sinh(z/2) - 4 \sinh(z_{0}/2) = r t$", "sympy",
              prove_zero(T.subs(S.z, expr) - T.subs(S.z, _z0) - _r * S.t))
    ode = sp.diff(expr, S.t) - _r * g_simple.subs(S.z, expr)
    out.check(r"satisfies $\mathrm{d}z/\mathrm{d}t = r \sqrt{p q}$", "sympy", prove_zero(ode))
    out.check(r"$z(0) = z_{0}$ (since $\sinh(z(0)/2) = \sinh(z_{0}/2)$ and $\sinh$ is injective)", "sympy",
              prove_zero(sp.sinh(expr.subs(S.t, 0) / 2) - sp.sinh(_z0 / 2)))
    _mpmath_check(out, expr, g_simple)
    return out


@derivation("closed_forms.no_kl_std_time")
def _no_kl_std_time() -> Derived:
    g, g_simple, T = _time_integral("std")
    expr = (T - T.subs(S.z, _z0)) / _r
    out = Derived("closed_forms.no_kl_std_time", expr, (S.z, _z0, _r), "t(z)",
                  r"Mean-field time to reach logit $z$ without KL, std normalization (large $G$, "
                  r"$\epsilon = 0$): the inverse of the explicit trajectory.", units="steps",
                  assumptions=r"continuous time; $r = \eta \kappa$ (per step)", level="L1 (nonlinear)",
                  title="Time to reach a logit without KL, std normalization")
    expr = out.expr
    out.show(sp.Mul(4, sp.sinh(S.z / 2) - sp.sinh(_z0 / 2), 1 / _r, evaluate=False))
    z_of_t = get("closed_forms.no_kl_std").expr
    out.check(r"$t(z(t)) = t$ for the explicit trajectory $z(t)$", "sympy",
              prove_zero(expr.subs(S.z, z_of_t) - S.t))
    out.check(r"$\mathrm{d}t/\mathrm{d}z = 2 \cosh(z/2)/r$, the inverse of the velocity "
              r"$r \sqrt{p q}$", "sympy",
              prove_zero(sp.diff(expr, S.z) - 1 / (_r * g_simple)))
    return out


@derivation("closed_forms.no_kl_mean")
def _no_kl_mean() -> Derived:
    g, g_simple, T = _time_integral("mean")
    expr = (2 * sp.sinh(S.z) + 2 * S.z - 2 * sp.sinh(_z0) - 2 * _z0) / _r
    out = Derived("closed_forms.no_kl_mean", expr, (S.z, _z0, _r), "t(z)",
                  r"Mean-field time to reach logit $z$ without KL, mean normalization (exact at finite "
                  r"$G$, where the rate is $r = \eta \kappa (1 - 1/G)$ per step): the implicit closed form, "
                  r"inverted numerically.",
                  units="steps", assumptions="continuous time", level="L1 (nonlinear)",
                  title="Time to reach a logit without KL, mean normalization")
    expr = out.expr
    out.show(sp.Mul(2, S.z - _z0 + sp.sinh(S.z) - sp.sinh(_z0), 1 / _r, evaluate=False))
    out.check(r"$p q = 1/(2 + 2 \cosh z)$ for $p = 1/(1 + e^{-z})$", "sympy",
              _rational_in_w(g - g_simple) == 0)
    out.check(r"separation of variables: $\int (2 + 2 \cosh z) \, \mathrm{d}z = 2 z + 2 \sinh z$", "sympy",
              prove_zero(T - (2 * S.z + 2 * sp.sinh(S.z))))
    out.check(r"$\mathrm{d}t/\mathrm{d}z = (2 + 2 \cosh z)/r$, the inverse of the velocity $r p q$, "
              r"and $t(z_{0}) = 0$", "sympy",
              prove_zero(sp.diff(expr, S.z) - 1 / (_r * g_simple)) and expr.subs(S.z, _z0) == 0)
    # high precision: invert t(z) at 40 digits and compare with mpmath's ODE solver
    with mpmath.workdps(32):
        r0, zz0 = mpmath.mpf("0.3"), mpmath.mpf("-1.5")
        sol = _odefun_with_cosh(lambda c: r0 / (2 + 2 * c), zz0, 1)
        tf = sp.lambdify((S.z, _z0, _r), expr, "mpmath")
        errs = []
        for tt in (mpmath.mpf("0.5"), mpmath.mpf(2), mpmath.mpf(5)):
            zt = mpmath.findroot(lambda zz: tf(zz, zz0, r0) - tt, zz0 + r0 * tt / 4)
            errs.append(abs(zt - sol(tt)) / abs(sol(tt)))
    record_numeric(out, r"the closed form, inverted by root finding, against an independent "
                   r"high-precision integration of $\mathrm{d}z/\mathrm{d}t = r p q$ at $t = 0.5, 2, 5$",
                   errs, digits=25, precision=32)
    return out


def _odefun_with_cosh(velocity, z0, a):
    r"""mpmath's Taylor-series solution of :math:`\dot z = v(\cosh(a z))` from :math:`z(0) = z_{0}`,
    integrated as the system :math:`\dot z = v(c)`, :math:`\dot c = a s \dot z`,
    :math:`\dot s = a c \dot z` with :math:`c = \cosh(a z)`, :math:`s = \sinh(a z)` carried along
    (the same solution :math:`z(t)`; the solver evaluates its right-hand side at several times the
    working precision, where a polynomial one costs a fraction of a hyperbolic cosine): returns
    :math:`t \mapsto z(t)`."""
    def rhs(tt, y):
        zdot = velocity(y[1])
        return [zdot, a * y[2] * zdot, a * y[1] * zdot]
    sol = mpmath.odefun(rhs, 0, [z0, mpmath.cosh(a * z0), mpmath.sinh(a * z0)])
    return lambda tt: sol(tt)[0]


def _mpmath_check(out, expr, g_simple):
    f = sp.lambdify((S.t, _z0, _r), expr, "mpmath")
    # g_simple = 1/(2 cosh(z/2)) as a function of c = cosh(z/2)
    c = sp.Symbol("c", positive=True)
    g_of_c = g_simple.subs(sp.cosh(S.z / 2), c)
    if g_of_c.has(S.z):
        raise ValueError(f"{g_simple} is not a function of cosh(z/2)")
    gc = sp.lambdify(c, g_of_c, "mpmath")
    with mpmath.workdps(32):
        r0, zz0 = mpmath.mpf("0.7"), mpmath.mpf("-2")
        sol = _odefun_with_cosh(lambda cc: r0 * gc(cc), zz0, mpmath.mpf(1) / 2)
        errs = [abs(f(tt, zz0, r0) - sol(tt)) / abs(sol(tt))
                for tt in (mpmath.mpf("0.5"), mpmath.mpf(2), mpmath.mpf(5))]
    record_numeric(out, r"closed form against an independent high-precision integration of "
                   r"$\mathrm{d}z/\mathrm{d}t = r \sqrt{p q}$ at $t = 0.5, 2, 5$", errs, digits=25,
                   precision=32)


# ----------------------------------------------------------------------------------
# numerics
# ----------------------------------------------------------------------------------

def _rate_args(z0, rate, normalization):
    norm = check_choice("normalization", normalization, NORMALIZATIONS)
    return norm, check_finite_array("z0", z0), check_real("rate", rate, low=0, low_open=True)


@functools.cache
def _mean_time_slope():
    """dt/dz of ``closed_forms.no_kl_mean`` (sympy derivative, lambdified): the Newton slope."""
    d = get("closed_forms.no_kl_mean")
    return sp.lambdify(d.args, sp.diff(d.expr, S.z), "numpy")


def no_kl_logit(t, z0, rate, normalization="std"):
    r"""Mean-field logit :math:`z(t)` without KL (continuous time, steps), vectorised over ``t``.

    ``rate`` r > 0 per step (:math:`\eta\kappa` for std, :math:`\eta\kappa(1-1/G)`
    for mean); ``z0`` initial logit, or an array broadcastable against ``t``
    (e.g. per-prompt initial logits of shape ``(nodes, 1)``).  ``std`` uses the
    explicit closed form, ``mean`` inverts the implicit one by Newton iteration
    (monotone convergence, see below).
    """
    norm, z0, r = _rate_args(z0, rate, normalization)
    t = np.asarray(t, dtype=float)
    if norm == "std":
        return get("closed_forms.no_kl_std").numeric(t, z0, r)
    tfun, slope = get("closed_forms.no_kl_mean").numeric, _mean_time_slope()
    t, z0 = np.broadcast_arrays(t, z0)
    target = np.array(t, dtype=float)
    # t(z) = target  <=>  h(z) = 2 sinh z + 2 z - C = 0 with C = r (target - t(0)) (t(0) from
    # the derived time function).  h is increasing, convex for z > 0 and concave for z < 0,
    # and the root lies between 0 and asinh(C/2): Newton from asinh(C/2) converges monotonically.
    z = np.arcsinh(r * (target - tfun(np.zeros_like(target), z0, r)) / 2)
    for _ in range(100):
        step = (tfun(z, z0, r) - target) / slope(z, z0, r)
        z = z - step
        if np.all(np.abs(step) <= 1e-10 * (1 + np.abs(z))):
            break
    # quadratic convergence: one more step takes the remaining 1e-10 error below rounding
    return z - (tfun(z, z0, r) - target) / slope(z, z0, r)


def no_kl_reward(t, p0, rate, normalization="std"):
    """Reward p(t) = sigma(z(t)) of :func:`no_kl_logit` starting from reward ``p0`` in (0, 1)."""
    p0 = check_real("p0", p0, low=0, high=1, low_open=True, high_open=True)
    return expit(no_kl_logit(t, np.log(p0 / (1 - p0)), rate, normalization))


def no_kl_time_to_logit(z, z0, rate, normalization="mean"):
    """Steps needed to go from logit z0 to z without KL, from the derived time functions."""
    norm, z0, r = _rate_args(z0, rate, normalization)
    return get(f"closed_forms.no_kl_{norm}" + ("_time" if norm == "std" else "")).numeric(
        np.asarray(z, dtype=float), z0, r)
