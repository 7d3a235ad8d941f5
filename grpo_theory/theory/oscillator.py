r"""Level L3: the reduced-order continuous model  :math:`m\ddot x + \gamma\dot x + \kappa_s x = \xi(t)`.

Derivation (each step verified by sympy, see :func:`continuum_limit`):

The linearized GRPO update with heavy-ball momentum :math:`\mu`, learning rate
:math:`\eta` and stiffness :math:`K = K_f + K_s` — :math:`K_f` acting on the
current iterate, :math:`K_s` through the sampling policy of :math:`\ell` steps
ago — is

.. math::  x_{t+1} - (1+\mu)x_t + \mu x_{t-1} = -\eta (K_f x_t + K_s x_{t-\ell}).

With :math:`x_t = e^{st}` its characteristic function is
:math:`\chi(s) = e^{s} - (1+\mu) + \mu e^{-s} + \eta K_f + \eta K_s e^{-s\ell}`.
Expanding to second order in :math:`s` and keeping the lag to first order gives
:math:`m s^2 + \gamma s + \kappa_s` with :math:`m = (1+\mu)/2`,
:math:`\gamma = 1-\mu-\eta K_s\ell`, :math:`\kappa_s = \eta K` (the spring constant;
:math:`k` is the refresh interval).  Momentum supplies
inertia, lag erodes damping.  Time is in optimizer steps, :math:`x = z - z^*`
in logits.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import mpmath
import numpy as np
import sympy as sp

from grpo_theory.theory import symbols as S
from grpo_theory.theory.derived import (Derived, _rational_zero, derivation, get, prove_equal, prove_zero,
                                        record_numeric, taylor)
from grpo_theory.theory.printing import latex, root
from grpo_theory.results import Result
from grpo_theory.validate import ParameterError, check_real

__all__ = [
    "Oscillator",
    "coefficients",
    "trajectory",
    "velocity",
    "single_exponential",
    "damping_ratio",
    "regime",
    "discrete_characteristic_function",
    "TrajectoryResult",
    "trajectory_report",
]

_PAPER = ("predictable_grpo",)


def _tex(expr) -> str:
    """LaTeX of a sympy expression with the project's notation (for the texts of checks)."""
    return latex(expr)


# ----------------------------------------------------------------------------------
# Symbolic derivations
# ----------------------------------------------------------------------------------

def discrete_characteristic_function():
    r""":math:`\chi(s)` of the linearized heavy-ball update with constant lag :math:`\ell`."""
    s, mu, eta, Kf, Ks, ell = S.s, S.mu, S.eta, S.K_fresh, S.K_stale, S.ell
    return sp.exp(s) - (1 + mu) + mu * sp.exp(-s) + eta * Kf + eta * Ks * sp.exp(-s * ell)


@functools.cache
def _continuum():
    """Second-order expansion of chi(s); returns (m, gamma, k, second_order_lag_term, series)
    (computed once per process: the mass, damping and spring records each take their part)."""
    s = S.s
    chi = discrete_characteristic_function()
    series = taylor(chi, s, 3)
    poly = sp.Poly(sp.expand(series), s)
    c0, c1, c2 = (poly.coeff_monomial(s**i) for i in range(3))
    # The s^2 coefficient is (1+mu)/2 + eta K_s ell^2/2: the second term is second order
    # in the lag and is dropped by the first-order-in-lag continuous model.
    lag2 = sp.expand(c2).coeff(S.ell, 2) * S.ell**2
    mass = sp.simplify(c2 - lag2)
    return mass, sp.simplify(c1), sp.simplify(c0), lag2, series


@derivation("oscillator.mass")
def _mass() -> Derived:
    mass, damping, spring, lag2, series = _continuum()
    out = Derived(
        "oscillator.mass", mass, (S.mu,), "m",
        r"Inertia of the reduced model: the $s^{2}$ coefficient of the discrete characteristic "
        r"function $\chi(s)$ at first order in the lag.",
        units=r"steps$^{2}$ (dimensionless per step$^{2}$)",
        assumptions=r"linearization at a fixed point; heavy-ball momentum $\mu \in [0, 1)$; "
                    "lag to first order",
        level="L3", references=_PAPER, title="Mass of the continuous model")
    mass = out.expr
    out.show(sp.Mul(1 + S.mu, sp.Rational(1, 2), evaluate=False))
    out.check(r"$m$ is the $s^{2}$ coefficient of $\chi(s)$ up to a term second order in the lag",
              "sympy", prove_zero(sp.expand(series).coeff(S.s, 2) - mass - lag2),
              f"dropped term ${_tex(lag2)}$")
    out.check(r"$m > 0$ for $\mu \ge 0$", "sympy", prove_equal(mass, (1 + S.mu) / 2))
    return out


@derivation("oscillator.damping")
def _damping() -> Derived:
    mass, damping, spring, lag2, series = _continuum()
    out = Derived(
        "oscillator.damping", damping, (S.mu, S.eta, S.K_stale, S.ell), r"\gamma",
        r"Damping of the reduced model: the $s$ coefficient of the discrete characteristic "
        r"function $\chi(s)$. Off-policy lag $\ell$ acting on the stale stiffness $K_{s}$ erodes it.",
        units="per step", assumptions=r"first order in the lag $\ell$ (steps)",
        level="L3", references=_PAPER, title="Damping of the continuous model")
    damping = out.expr
    out.check(r"$\gamma$ is the $s^{1}$ coefficient of $\chi(s)$", "sympy",
              prove_zero(sp.expand(series).coeff(S.s, 1) - damping))
    out.check(r"$\partial\gamma/\partial\ell = -\eta K_{s}$ (lag erodes damping)", "sympy",
              prove_equal(sp.diff(damping, S.ell), -S.eta * S.K_stale))
    return out


@derivation("oscillator.spring")
def _spring() -> Derived:
    mass, damping, spring, lag2, series = _continuum()
    expr = spring.subs(S.K_fresh, S.K - S.K_stale)
    out = Derived(
        "oscillator.spring", sp.simplify(expr), (S.eta, S.K), r"\kappa_{s}",
        r"Spring constant $\kappa_{s}$ of the reduced model: learning rate times total stiffness.",
        units=r"per step$^{2}$", assumptions=r"$K = K_{f} + K_{s}$", level="L3", references=_PAPER,
        title="Spring constant of the continuous model")
    expr = out.expr
    out.check(r"$\kappa_{s} = \chi(0) = \eta (K_{f} + K_{s})$", "sympy",
              prove_zero(series.subs(S.s, 0) - expr.subs(S.K, S.K_fresh + S.K_stale)))
    return out


def mass_expr():
    return get("oscillator.mass").expr


def damping_expr():
    return get("oscillator.damping").expr


def spring_expr():
    return get("oscillator.spring").expr


@derivation("oscillator.damping_ratio")
def _damping_ratio() -> Derived:
    expr = S.gamma / (2 * sp.sqrt(S.m * S.spring))
    out = Derived(
        "oscillator.damping_ratio", expr, (S.m, S.gamma, S.spring), r"\zeta",
        r"Damping ratio: $\zeta < 1$ oscillatory, $\zeta = 1$ critical, $\zeta > 1$ overdamped.",
        units="dimensionless", level="L3", references=_PAPER, title="Damping ratio")
    expr = out.expr
    out.show(S.gamma / (2 * root(S.m * S.spring)))
    # zeta = 1 exactly where the characteristic roots of m s^2 + gamma s + k coincide
    s_plus, s_minus = sp.solve(S.m * S.s**2 + S.gamma * S.s + S.spring, S.s)
    disc = sp.discriminant(S.m * S.s**2 + S.gamma * S.s + S.spring, S.s)
    out.check(r"the discriminant $\gamma^{2} - 4 m \kappa_{s}$ equals "
              r"$4 m \kappa_{s} (\zeta^{2} - 1)$", "sympy",
              prove_zero(disc - 4 * S.m * S.spring * (expr**2 - 1)))
    out.check(r"the squared gap of the characteristic roots is $4 \kappa_{s} (\zeta^{2} - 1)/m$: "
              r"they coincide exactly at $\zeta = 1$ (real for $\zeta > 1$, complex for $\zeta < 1$)",
              "sympy",
              prove_zero(sp.expand((s_plus - s_minus)**2) - 4 * S.spring * (expr**2 - 1) / S.m))
    return out


def _rationalized(root):
    """(A + c sqrt(B))/D -> (A^2 - c^2 B)/(D (A - c sqrt(B))): the same root without the
    cancellation of A against c sqrt(B) (0/0 at zero lag for eta_c and K_c)."""
    num, den = sp.fraction(sp.together(root))
    num = sp.expand(num)
    surd = sp.Add(*[t for t in sp.Add.make_args(num)
                   if any(pw.exp == sp.Rational(1, 2) for pw in t.atoms(sp.Pow))])
    if surd == 0:
        return root
    rest = num - surd
    return sp.factor(sp.expand(rest**2 - surd**2)) / (den * (rest - surd))


def _critical(name, var, args, lhs, description, units, sample, upper=None,
              rationalize=True, display=None, title="", shown=None) -> Derived:
    """Critical damping gamma^2 = 4 m kappa_s of the continuous model (all stiffness stale) solved for
    ``var``; the physical root is the one in range with gamma > 0 at the ``sample`` point,
    written in the rationalised form that is exact and finite at zero lag.  ``display``, when
    given, is the form shown (factored by hand); it is proven equal to the derived one."""
    g, mm, kk = damping_expr().subs(S.K_stale, S.K), mass_expr(), spring_expr()
    disc = g**2 - 4 * mm * kk
    chosen = None
    for sol in sp.solve(sp.Eq(disc, 0), var):
        val = sol.subs(sample)
        in_range = val.is_real and val >= 0 and (upper is None or val < upper)
        if in_range and g.subs({**sample, var: val}) > 0:
            chosen = sp.simplify(sol)
    form = sp.factor_terms(sp.cancel(_rationalized(chosen))) if rationalize else chosen
    out = Derived(name, form if display is None else display, args, lhs, description,
                  units=units, assumptions=r"$K_{s} = K$; root with $\gamma > 0$", level="L3",
                  references=_PAPER, title=title)
    expr = out.expr
    if shown is not None:
        out.show(*shown)
    if display is not None:
        out.check(r"it is the root found by solving $\gamma^{2} = 4 m \kappa_{s}$", "sympy",
                  prove_equal(expr, form), f"derived form ${_tex(form)}$")
    out.check(r"$\zeta = 1$ at the root for $" + _tex(var) + "$", "sympy",
              prove_zero(sp.expand(disc.subs(var, expr))))
    out.check(r"equals the quadratic-formula root of $\gamma^{2} = 4 m \kappa_{s}$", "sympy",
              prove_zero(expr - chosen))
    if rationalize:
        den0 = sp.factor(sp.simplify(sp.fraction(sp.together(expr))[1].subs(S.ell, 0)
                                     .subs(S.mu, sp.Symbol("mu", positive=True))))
        out.check(r"finite at zero lag: the rationalised root equals the quadratic-formula root "
                  r"for $\ell \ne 0$ and its denominator at $\ell = 0$ has no root for $\mu \ge 0$, "
                  r"so its value there is the limit $\ell \to 0$ (the quadratic-formula root is "
                  r"$0/0$)", "sympy",
                  den0.is_nonzero is True and not (den0.free_symbols & {S.ell}),
                  rf"denominator at $\ell = 0$: ${_tex(den0)}$; value ${_tex(sp.factor(expr.subs(S.ell, 0)))}$")
    return out


def _critical_product(sqrt=sp.sqrt):
    r"""The critical :math:`\eta K` at momentum :math:`\mu` and lag :math:`\ell`, factored by hand
    (the damping, mass and spring depend on :math:`\eta` and :math:`K` only through their product)."""
    mu, ell = S.mu, S.ell
    return (1 - mu)**2 / (1 + mu + ell * (1 - mu) + sqrt((1 + mu) * (1 + mu + 2 * ell * (1 - mu))))


@derivation("oscillator.critical_momentum")
def _critical_momentum() -> Derived:
    return _critical("oscillator.critical_momentum", S.mu, (S.eta, S.K, S.ell), r"\mu_{c}",
                     r"Momentum at critical damping ($\zeta = 1$) of the continuous model, all "
                     r"stiffness stale; $\mu > \mu_{c}$ is oscillatory.", "dimensionless",
                     {S.eta: sp.Rational(1, 10), S.K: 1, S.ell: 1}, upper=1, rationalize=False,
                     display=1 + S.eta * S.K * (1 - S.ell)
                     - sp.sqrt(S.eta * S.K * (4 + S.eta * S.K * (1 - 2 * S.ell))),
                     title="Critical momentum of the continuous model",
                     shown=(1 + S.a * (1 - S.ell) - root(S.a * (4 + S.a * (1 - 2 * S.ell))),
                            [(S.a, S.eta * S.K, "notation")]))


@derivation("oscillator.critical_learning_rate")
def _critical_learning_rate() -> Derived:
    return _critical("oscillator.critical_learning_rate", S.eta, (S.mu, S.K, S.ell), r"\eta_{c}",
                     r"Learning rate at critical damping of the continuous model (all stiffness "
                     r"stale); $\eta > \eta_{c}$ is oscillatory.", "per step",
                     {S.mu: sp.Rational(1, 2), S.K: 1, S.ell: 1}, display=_critical_product() / S.K,
                     title="Critical learning rate of the continuous model",
                     shown=(_critical_product(root) / S.K, []))


@derivation("oscillator.critical_stiffness")
def _critical_stiffness() -> Derived:
    return _critical("oscillator.critical_stiffness", S.K, (S.mu, S.eta, S.ell), r"K_{c}",
                     "Stiffness at critical damping of the continuous model (all stiffness stale).",
                     "per unit learning rate", {S.mu: sp.Rational(1, 2), S.eta: 1, S.ell: 1},
                     display=_critical_product() / S.eta,
                     title="Critical stiffness of the continuous model",
                     shown=(_critical_product(root) / S.eta, []))


@derivation("oscillator.published_threshold")
def _published_threshold() -> Derived:
    # gamma = 0 solved for the lag: the first-order-in-lag stability boundary.
    g = damping_expr().subs(S.K_stale, S.K)
    (ell_max,) = sp.solve(sp.Eq(g, 0), S.ell)
    out = Derived(
        "oscillator.published_threshold", ell_max, (S.mu, S.eta, S.K), r"\ell_{\max}",
        r"Largest lag with positive damping in the first-order continuous model. With the lag "
        r"identified with the refresh interval $k$ this is the published threshold "
        r"$\eta K k < 1 - \mu$.", units="steps",
        assumptions=r"$K_{s} = K$; first order in the lag",
        level="L3", references=_PAPER, title="Largest stable lag of the first-order model")
    ell_max = out.expr
    out.check(r"$\gamma(\ell_{\max}) = 0$", "sympy", prove_zero(g.subs(S.ell, ell_max)))
    out.check(r"$\ell < \ell_{\max} \iff \eta K \ell < 1 - \mu$ (the published form)", "sympy",
              prove_equal(ell_max * S.eta * S.K, 1 - S.mu))
    return out


# --- closed-form trajectory -----------------------------------------------------------

def _ode():
    t, xf = S.t, S.x
    return sp.Eq(S.m * xf(t).diff(t, 2) + S.gamma * xf(t).diff(t) + S.spring * xf(t), 0)


def _unified_parts():
    r"""x(t) = e^{-gamma t/2m} [x0 C + (v0 + gamma x0/2m) Sh] with C = cosh(w t), Sh = sinh(w t)/w."""
    t, m, g, x0, v0 = S.t, S.m, S.gamma, S.x0, S.v0
    return sp.exp(-g * t / (2 * m)), x0, v0 + g * x0 / (2 * m)


def _overdamped_expr():
    t, m, g, k = S.t, S.m, S.gamma, S.spring
    w = sp.sqrt(g**2 - 4 * m * k) / (2 * m)
    env, c1, c2 = _unified_parts()
    return env * (c1 * sp.cosh(w * t) + c2 * sp.sinh(w * t) / w)


def _underdamped_expr():
    t, m, g, k = S.t, S.m, S.gamma, S.spring
    W = sp.sqrt(4 * m * k - g**2) / (2 * m)
    env, c1, c2 = _unified_parts()
    return env * (c1 * sp.cos(W * t) + c2 * sp.sin(W * t) / W)


def _shown_trajectory(even, odd, radicand, w=S.omega):
    """The trajectory as displayed: e^{-gamma t/2m} (x0 even(w t) + (v0 + gamma x0/2m) odd(w t)/w)
    with w the angular frequency omega (or the half-gap nu of the real exponents) named."""
    t, m, g, x0, v0 = S.t, S.m, S.gamma, S.x0, S.v0
    form = sp.exp(-g * t / (2 * m)) * (x0 * even(w * t) + (v0 + g * x0 / (2 * m)) * odd(w * t) / w)
    return form, [(w, sp.sqrt(radicand) / (2 * m), "")]


def _verify_solution(out: Derived, expr, regime_name: str, spring=S.spring) -> None:
    t = S.t
    ode = S.m * sp.diff(expr, t, 2) + S.gamma * sp.diff(expr, t) + spring * expr
    out.check(regime_name + r": satisfies $m \ddot{x} + \gamma \dot{x} + \kappa_{s} x = 0$", "sympy",
              prove_zero(ode))
    out.check(regime_name + r": $x(0) = x_{0}$", "sympy", prove_zero(expr.subs(t, 0) - S.x0))
    out.check(regime_name + r": $\dot{x}(0) = v_{0}$", "sympy",
              prove_zero(sp.diff(expr, t).subs(t, 0) - S.v0))


def _mpmath_check(out: Derived, expr, params: dict, times, digits=25) -> None:
    """Compare the closed form with the exact flow of the first-order system
    :math:`(x, \\dot x)' = A (x, \\dot x)`, :math:`A = ((0, 1), (-\\kappa_s/m, -\\gamma/m))`:
    mpmath's matrix exponential :math:`e^{A t}` applied to :math:`(x_0, v_0)` at 40 digits (an
    independent route: numerical linear algebra on the equation itself, not on its solution;
    the same values as a Taylor-series integration of the equation, 50x faster)."""
    m, g, k, x0, v0 = (params[s] for s in (S.m, S.gamma, S.spring, S.x0, S.v0))
    with mpmath.workdps(40):
        m, g, k, x0, v0 = (mpmath.mpf(v) for v in (m, g, k, x0, v0))
        flow = mpmath.matrix([[0, 1], [-k / m, -g / m]])
        start = mpmath.matrix([x0, v0])
        closed = sp.lambdify(S.t, expr.subs(params), modules="mpmath")
        errors = []
        for tt in times:
            ref = (mpmath.expm(flow * mpmath.mpf(tt)) * start)[0]
            errors.append(abs(closed(mpmath.mpf(tt)) - ref) / max(abs(ref), mpmath.mpf(10) ** -30))
    at = ", ".join(_tex(sp.sympify(tt)) for tt in times)
    record_numeric(out, r"closed form against the exact flow of "
                   r"$m \ddot{x} + \gamma \dot{x} + \kappa_{s} x = 0$, the matrix exponential of the "
                   f"first-order system, at $t = {at}$", errors, digits=digits, precision=40)


_ARGS_TRAJ = (S.t, S.m, S.gamma, S.spring, S.x0, S.v0)


@derivation("oscillator.trajectory_overdamped")
def _traj_over() -> Derived:
    expr = _overdamped_expr()
    out = Derived("oscillator.trajectory_overdamped", expr, _ARGS_TRAJ, "x(t)",
                  r"Closed-form deviation, overdamped regime ($\gamma^{2} > 4 m \kappa_{s}$).",
                  units="logits", assumptions=r"$\gamma^{2} > 4 m \kappa_{s}$", level="L3",
                  title="Trajectory of the continuous model, overdamped")
    expr = out.expr
    out.show(*_shown_trajectory(sp.cosh, sp.sinh, S.gamma**2 - 4 * S.m * S.spring, S.nu))
    # Independent route: sympy's dsolve with the initial conditions.
    sol = sp.dsolve(_ode(), S.x(S.t), ics={S.x(0): S.x0, S.x(S.t).diff(S.t).subs(S.t, 0): S.v0})
    out.check("equals the solution of the differential equation with these initial conditions, "
              "found symbolically", "sympy",
              prove_zero((sol.rhs - expr).rewrite(sp.exp)))
    _verify_solution(out, expr, "overdamped")
    _mpmath_check(out, expr, {S.m: 1, S.gamma: 3, S.spring: 1, S.x0: 1, S.v0: -sp.Rational(1, 2)},
                  (sp.Rational(1, 2), 2, 7))
    return out


@derivation("oscillator.trajectory_overdamped_modes")
def _traj_over_modes() -> Derived:
    t, m, g, k, x0, v0 = S.t, S.m, S.gamma, S.spring, S.x0, S.v0
    w = sp.sqrt(g**2 - 4 * m * k) / (2 * m)
    r1, r2 = -g / (2 * m) + w, -g / (2 * m) - w
    derived = (v0 - r2 * x0) / (r1 - r2) * sp.exp(r1 * t) + (r1 * x0 - v0) / (r1 - r2) * sp.exp(r2 * t)
    # displayed with D = 2 m w: the modes e^{-(gamma -+ D) t/2m} with weights (2 m v0 + (gamma +- D) x0)/2D
    D = 2 * m * w
    display = ((2 * m * v0 + (g + D) * x0) * sp.exp(-(g - D) * t / (2 * m))
               - (2 * m * v0 + (g - D) * x0) * sp.exp(-(g + D) * t / (2 * m))) / (2 * D)
    out = Derived("oscillator.trajectory_overdamped_modes", display, _ARGS_TRAJ, "x(t)",
                  r"Overdamped trajectory as a sum of its two decaying modes (the form used for "
                  r"numerics at large $t$: no overflow of $\cosh$).", units="logits",
                  assumptions=r"$\gamma^{2} > 4 m \kappa_{s}$", level="L3",
                  title="Trajectory of the continuous model, overdamped, as two modes")
    expr = out.expr
    sl, fa = S.s_slow, S.s_fast
    out.show(((v0 - fa * x0) * sp.exp(sl * t) - (v0 - sl * x0) * sp.exp(fa * t)) / (sl - fa),
             [(sl, (sp.sqrt(g**2 - 4 * m * k) - g) / (2 * m), "oscillator.slow_root"),
              (fa, -(g + sp.sqrt(g**2 - 4 * m * k)) / (2 * m), "")])
    out.check(r"it is the sum of the two modes $e^{s_{\mathrm{slow}} t}$ and $e^{s_{\mathrm{fast}} t}$ "
              r"that starts at $x_{0}$ with velocity $v_{0}$", "sympy", prove_equal(expr, derived))
    out.check(r"identical to the $\cosh$/$\sinh$ form", "sympy",
              prove_zero((expr - _overdamped_expr()).rewrite(sp.exp)))
    return out


@derivation("oscillator.trajectory_underdamped")
def _traj_under() -> Derived:
    expr = _underdamped_expr()
    out = Derived("oscillator.trajectory_underdamped", expr, _ARGS_TRAJ, "x(t)",
                  r"Closed-form deviation, underdamped (oscillatory) regime "
                  r"($\gamma^{2} < 4 m \kappa_{s}$).",
                  units="logits", assumptions=r"$\gamma^{2} < 4 m \kappa_{s}$", level="L3",
                  title="Trajectory of the continuous model, underdamped")
    expr = out.expr
    out.show(*_shown_trajectory(sp.cos, sp.sin, 4 * S.m * S.spring - S.gamma**2))
    over = _overdamped_expr()
    W = sp.Symbol("W", positive=True)
    # the underdamped form is the overdamped one continued to imaginary w = i W
    cont = over.subs(sp.sqrt(S.gamma**2 - 4 * S.m * S.spring), sp.I * 2 * S.m * W)
    target = expr.subs(sp.sqrt(4 * S.m * S.spring - S.gamma**2), 2 * S.m * W)
    out.check(r"it is the overdamped form continued to an imaginary half-gap, $\nu = \mathrm{i}\,\omega$", "sympy",
              prove_zero((cont - target).rewrite(sp.exp)))
    _verify_solution(out, expr, "underdamped")
    _mpmath_check(out, expr, {S.m: 1, S.gamma: sp.Rational(1, 5), S.spring: 2, S.x0: 1, S.v0: 1},
                  (sp.Rational(1, 2), 3, 11))
    return out


@derivation("oscillator.trajectory_critical")
def _traj_critical() -> Derived:
    m, g, k = S.m, S.gamma, S.spring
    over = _overdamped_expr()
    # exact limit gamma^2 - 4 m kappa_s -> 0+: put kappa_s = (gamma^2 - (2 m w)^2)/(4 m), w -> 0
    w = sp.Symbol("w", positive=True)
    # (the limit is taken of the substituted form directly: simplifying it first took 1.5 s and
    # gave the same limit)
    in_w = over.subs(k, (g**2 - 4 * m**2 * w**2) / (4 * m))
    expr = sp.simplify(sp.limit(in_w, w, 0, "+"))
    out = Derived("oscillator.trajectory_critical", expr, _ARGS_TRAJ[:2] + (S.gamma, S.x0, S.v0),
                  "x(t)", r"Closed-form deviation at critical damping, obtained as the exact limit "
                  r"of the overdamped solution ($\kappa_{s} = \gamma^{2}/(4 m)$).", units="logits",
                  assumptions=r"$\gamma^{2} = 4 m \kappa_{s}$", level="L3",
                  title="Trajectory of the continuous model, critically damped")
    expr = out.expr
    out.show((S.x0 + (S.v0 + S.gamma * S.x0 / (2 * S.m)) * S.t) * sp.exp(-S.gamma * S.t / (2 * S.m)))
    w_u = sp.Symbol("w", positive=True)
    under = _underdamped_expr().subs(k, (g**2 + 4 * m**2 * w_u**2) / (4 * m))
    out.check(r"the underdamped form in the limit $\omega \to 0^{+}$ gives the same function", "sympy",
              prove_zero(sp.limit(under, w_u, 0, "+") - expr))
    _verify_solution(out, expr, r"critical ($\kappa_{s} = \gamma^{2}/(4 m)$)", spring=g**2 / (4 * m))
    _mpmath_check(out, expr, {S.m: 1, S.gamma: 2, S.spring: 1, S.x0: 1, S.v0: 2},
                  (sp.Rational(1, 2), 2, 9))
    return out


@derivation("oscillator.overdamped_limit")
def _overdamped_limit() -> Derived:
    t, m, g, k = S.t, S.m, S.gamma, S.spring
    over = _overdamped_expr()
    gp = sp.Symbol("gamma", positive=True)
    tp = sp.Symbol("t", positive=True)
    # the limit of each exponential mode, slow (e^{+w t}) and fast (e^{-w t}), whose sum the
    # trajectory is (proven below): sympy's limit of the sum directly takes 2.5x longer
    env, c1, c2 = _unified_parts()
    w = sp.sqrt(g**2 - 4 * m * k) / (2 * m)
    modes = (env * sp.exp(w * t) * (c1 + c2 / w) / 2, env * sp.exp(-w * t) * (c1 - c2 / w) / 2)
    limits = [sp.limit(mode.subs({g: gp, t: tp}), m, 0, "+") for mode in modes]
    lim = sum(limits).subs(tp, t)
    expr = S.x0 * sp.exp(-t * S.spring / S.gamma)
    out = Derived("oscillator.overdamped_limit", expr, (S.t, S.gamma, S.spring, S.x0), "x(t)",
                  r"Massless limit $m \to 0$ of the overdamped trajectory: a single exponential "
                  r"with $\tau = \gamma/\kappa_{s}$, whatever the initial velocity (the empirical "
                  r"saturation law). A trainer's mass is $m = (1 + \mu)/2 \ge 1/2$, so it reaches "
                  r"this limit as strong overdamping, $4 m \kappa_{s} \ll \gamma^{2}$ "
                  r"($\zeta \gg 1$), where the fast mode dies within a few steps.",
                  units="logits", assumptions=r"$\gamma > 0$, $t > 0$, $m \to 0^{+}$", level="L3",
                  references=_PAPER, title="Massless limit of the overdamped trajectory")
    expr = out.expr
    out.check(r"$\lim_{m \to 0^{+}} x(t) = x_{0} e^{-\kappa_{s} t/\gamma}$ for $t > 0$, any $v_{0}$ "
              r"(the sum of the limits of its slow and fast exponential modes, each finite)",
              "sympy", prove_zero((over - sum(modes)).rewrite(sp.exp))
              and all(part.is_finite for part in limits)
              and prove_zero(lim - expr.subs(g, gp)), f"limit ${_tex(lim)}$")
    slow_root = (-gp + sp.sqrt(gp**2 - 4 * m * k)) / (2 * m)
    out.check(r"the slow characteristic root tends to $-\kappa_{s}/\gamma = -1/\tau$", "sympy",
              prove_zero(sp.limit(slow_root, m, 0, "+") + k / gp))
    return out


@derivation("oscillator.single_exponential")
def _single_exponential() -> Derived:
    # reward coordinates: R(t) = R_inf + (R_0 - R_inf) * x(t)/x0 with x from the massless limit
    x_lim = get("oscillator.overdamped_limit").expr
    expr = S.R_inf + (S.R_0 - S.R_inf) * (x_lim / S.x0).subs(S.spring / S.gamma, 1 / S.tau)
    expr = expr.subs(S.spring, S.gamma / S.tau)
    out = Derived("oscillator.single_exponential", expr, (S.t, S.R_inf, S.R_0, S.tau),
                  "R(t)", r"The empirical saturation law: plateau $R_{\infty}$ (the stable fixed "
                  r"point), initial reward $R_{0}$, time scale $\tau = \gamma/\kappa_{s}$ (inverse "
                  r"stiffness).",
                  units="reward", assumptions=r"strongly overdamped ($\zeta \gg 1$: the "
                  r"massless limit $m \to 0$) and linear in reward",
                  level="L3", references=_PAPER, title="The single-exponential saturation law")
    expr = out.expr
    out.check(r"$R(0) = R_{0}$ and $R(t) \to R_{\infty}$", "sympy",
              prove_zero(out.expr.subs(S.t, 0) - S.R_0)
              and prove_zero(sp.limit(out.expr, S.t, sp.oo) - S.R_inf))
    out.check(r"$R$ satisfies $\tau \dot{R} = R_{\infty} - R$", "sympy",
              prove_zero(S.tau * sp.diff(out.expr, S.t) - (S.R_inf - out.expr)))
    return out


@derivation("oscillator.initial_curvature")
def _slow_start() -> Derived:
    over = _overdamped_expr()
    x2 = sp.simplify(sp.diff(over, S.t, 2).subs(S.t, 0))
    out = Derived("oscillator.initial_curvature", x2, (S.m, S.gamma, S.spring, S.x0, S.v0),
                  r"\ddot x(0)", r"Initial acceleration. With $v_{0} = 0$ (training starts at rest) "
                  r"the slope is zero and the curve starts slowly (inertia), unlike the single "
                  r"exponential whose initial slope is $-x_{0}/\tau$.", units=r"logits per step$^{2}$",
                  level="L3", references=_PAPER, title="Initial acceleration")
    x2 = out.expr
    out.show(-(S.gamma * S.v0 + S.spring * S.x0) / S.m)
    out.check(r"slow start from rest ($v_{0} = 0$): $x(t) = x_{0} + \ddot{x}(0) t^{2}/2 + O(t^{3})$ "
              r"in every regime, a quadratic departure (the single exponential departs linearly, "
              r"$-x_{0} t/\tau$)", "sympy",
              all(prove_zero(taylor(e.subs(S.v0, 0), S.t, 3)
                             - S.x0 - x2.subs(S.v0, 0) * S.t**2 / 2)
                  for e in (over, _underdamped_expr())))
    return out


@derivation("oscillator.slow_root")
def _slow_root() -> Derived:
    m, g, k = S.m, S.gamma, S.spring
    roots = sp.solve(m * S.s**2 + g * S.s + k, S.s)
    chosen = [r for r in roots if r.subs({m: 1, g: 3, k: 1}) > -1][0]   # the root nearer 0
    out = Derived("oscillator.slow_root", chosen, (S.m, S.gamma, S.spring), r"s_{\mathrm{slow}}",
                  r"Slow characteristic root of $m s^{2} + \gamma s + \kappa_{s}$ (overdamped: real, "
                  r"the late-time rate; underdamped: its real part is $-\gamma/(2m)$).",
                  units="per step", assumptions=r"$\gamma > 0$", level="L3", references=_PAPER,
                  title="Slow characteristic exponent")
    expr = out.expr
    out.check(r"$m s^{2} + \gamma s + \kappa_{s} = 0$ at $s = s_{\mathrm{slow}}$", "sympy",
              prove_zero(sp.expand(m * expr**2 + g * expr + k)))
    gp = sp.Symbol("gamma", positive=True)
    out.check(r"massless limit: $s_{\mathrm{slow}} \to -\kappa_{s}/\gamma = -1/\tau$", "sympy",
              prove_zero(sp.limit(expr.subs(g, gp), m, 0, "+") + k / gp))
    return out


@derivation("oscillator.decay_time")
def _decay_time() -> Derived:
    slow = get("oscillator.slow_root").expr
    # displayed rationalised: 2m/(gamma - D) = (gamma + D)/(2 k), finite as m -> 0
    display = (S.gamma + sp.sqrt(S.gamma**2 - 4 * S.m * S.spring)) / (2 * S.spring)
    out = Derived("oscillator.decay_time", display, (S.m, S.gamma, S.spring), r"\tau_{\mathrm{slow}}",
                  r"Late-time decay time of the overdamped oscillator, $-1/s_{\mathrm{slow}}$ (the "
                  r"time scale with which a fitted curve approaches its plateau).", units="steps",
                  assumptions=r"$\gamma^{2} > 4 m \kappa_{s}$", level="L3", references=_PAPER,
                  title="Late-time decay time, overdamped")
    expr = out.expr
    out.check(r"it equals $-1/s_{\mathrm{slow}}$ (multiply by "
              r"$\gamma + \sqrt{\gamma^{2} - 4 m \kappa_{s}}$ above and below)", "sympy",
              prove_equal(expr, -1 / slow))
    out.check(r"$e^{-t/\tau_{\mathrm{slow}}}$ solves $m \ddot{x} + \gamma \dot{x} + \kappa_{s} x = 0$",
              "sympy",
              prove_zero(sp.expand(S.m / expr**2 - S.gamma / expr + S.spring)))
    gp = sp.Symbol("gamma", positive=True)
    out.check(r"massless limit: $\tau_{\mathrm{slow}} \to \gamma/\kappa_{s}$ (the single "
              r"exponential's $\tau$)", "sympy",
              prove_zero(sp.limit(expr.subs(S.gamma, gp), S.m, 0, "+") - gp / S.spring))
    return out


@functools.cache
def _underdamped_rates():
    """(envelope rate gamma/2m, angular frequency W) of the underdamped closed form, read from
    the record's expression (once per process: three records use them)."""
    x = get("oscillator.trajectory_underdamped").expr
    W = [a.args[0] / S.t for a in x.atoms(sp.cos)][0]
    rate = -[e.args[0] for e in x.atoms(sp.exp)][0] / S.t
    return sp.simplify(rate), sp.simplify(W)


@derivation("oscillator.period")
def _period() -> Derived:
    rate, W = _underdamped_rates()
    out = Derived("oscillator.period", 2 * sp.pi / W, (S.m, S.gamma, S.spring), "T",
                  r"Period of the underdamped oscillation ($2\pi$ over the angular frequency).",
                  units="steps", assumptions=r"$\gamma^{2} < 4 m \kappa_{s}$", level="L3",
                  references=_PAPER, title="Period of the oscillation")
    expr = out.expr
    out.show(2 * sp.pi / S.omega, [(S.omega, sp.sqrt(4 * S.m * S.spring - S.gamma**2) / (2 * S.m), "")])
    x = get("oscillator.trajectory_underdamped").expr
    shifted = (x * sp.exp(rate * S.t)).subs(S.t, S.t + expr)
    out.check(r"$x(t) e^{\gamma t/(2m)}$ is periodic with period $T$", "sympy",
              prove_zero(sp.expand_trig(sp.expand(shifted - x * sp.exp(rate * S.t)))))
    return out


@derivation("oscillator.envelope_decay_time")
def _envelope() -> Derived:
    rate, W = _underdamped_rates()
    out = Derived("oscillator.envelope_decay_time", 1 / rate, (S.m, S.gamma), r"\tau_{\mathrm{env}}",
                  r"Decay time of the underdamped envelope, $2m/\gamma$.", units="steps",
                  assumptions=r"$\gamma^{2} < 4 m \kappa_{s}$, $\gamma > 0$", level="L3",
                  references=_PAPER, title="Decay time of the envelope")
    expr = out.expr
    x = get("oscillator.trajectory_underdamped").expr
    # sympy combines the exponentials of a product itself; simplify is the fallback
    scaled = x * sp.exp(S.t / expr)
    out.check(r"$x(t) e^{t/\tau_{\mathrm{env}}}$ is a pure oscillation (no exponential left)", "sympy",
              not scaled.has(sp.exp) or not sp.simplify(scaled).has(sp.exp))
    out.check(r"$\tau_{\mathrm{env}} = -1/\operatorname{Re}(s)$ for both complex roots of "
              r"$m s^{2} + \gamma s + \kappa_{s}$", "sympy",
              prove_zero(-S.gamma / (2 * S.m) + 1 / expr))
    return out


def _overshoot_readable():
    r"""The overshoot as displayed: at the first extremum :math:`x(t_1) e^{\gamma t_1/2m}` has
    modulus :math:`\sqrt{x_0^2 + v_0(m v_0 + \gamma x_0)/\kappa_s}` and the sign of :math:`v_0`
    (of :math:`-x_0` from rest), and :math:`W t_1 = \pi/2 - \arctan\frac{\gamma v_0 +
    2\kappa_s x_0}{v_0 D}` with :math:`D = \sqrt{4 m\kappa_s - \gamma^2}` (:math:`\pi` from rest)."""
    m, g, k, x0, v0 = S.m, S.gamma, S.spring, S.x0, S.v0
    D = sp.sqrt(4 * m * k - g**2)
    theta = sp.pi / 2 - sp.atan((g * v0 + 2 * k * x0) / (v0 * D))
    moving = -sp.sign(v0) * sp.sqrt(x0**2 + v0 * (m * v0 + g * x0) / k) * sp.exp(-g * theta / D) / x0
    return sp.Piecewise((sp.exp(-sp.pi * g / D), sp.Eq(v0, 0)), (moving, True))


def _denest(e):
    """simplify, then factor inside the square roots: sqrt((V^2 + b^2)^2) -> V^2 + b^2.  The
    factored form is tried first as a rational function (:func:`~.derived._rational_zero`, a
    proof where it succeeds: 0 is returned only then); simplify only when that fails."""
    if _rational_zero(sp.factor(e, deep=True)):
        return sp.Integer(0)
    return sp.simplify(sp.factor(sp.simplify(e), deep=True))


def _check_overshoot_form(out: Derived, expr, derived) -> None:
    """Prove the displayed overshoot equal to the derived one, -x(t_1)/x0 with
    t_1 = (pi - (atan2(A, B) mod pi))/W, case by case: the spring written through
    D = sqrt(4 m kappa_s - gamma^2) > 0, x0 through B (so that the signs of A = v0 and B are
    those of positive symbols and sympy evaluates atan2), the remaining ``mod pi`` evaluated
    from the range of its argument (sympy's function_range), and
    atan(b/V) = pi/2 - atan(V/b) for V, b > 0 (proven here from its derivative)."""
    m, g, k, x0, v0 = S.m, S.gamma, S.spring, S.x0, S.v0
    Dp, V, b, c, X = (sp.Symbol(n, positive=True) for n in ("D", "V", "b", "c", "X"))
    k_of_D = (Dp**2 + g**2) / (4 * m)
    lemma = prove_zero(sp.diff(sp.atan(c) + sp.atan(1 / c), c)) and 2 * sp.atan(1) == sp.pi / 2
    out.check(r"the arctangent of a positive number plus that of its reciprocal is $\pi/2$ (zero "
              r"derivative, value at $1$)", "sympy", lemma)

    def mod_pi(e):
        def value(u, q):
            rng = sp.calculus.util.function_range(u.subs(V, c * b), c, sp.Interval.open(0, sp.oo))
            for n in (0, 1, -1):
                if rng.is_subset(sp.Interval.Ropen(-n * sp.pi, (1 - n) * sp.pi)):
                    return u + n * sp.pi
            raise ValueError(f"range {rng} of {u} is not within one period")
        return e.replace(lambda a: isinstance(a, sp.Mod) and a.args[1] == sp.pi,
                         lambda a: value(*a.args))

    reciprocal = {sp.atan(b / V): sp.pi / 2 - sp.atan(V / b)}   # the lemma, for V, b > 0
    same = []
    for sv in (V, -V):
        for sb in (b, -b):
            sub = {x0: -(sb * Dp + g * sv) / (2 * k_of_D), v0: sv}
            lhs = expr.subs(k, k_of_D).subs(sub).subs(reciprocal)
            rhs = mod_pi(derived.subs(k, k_of_D).subs(sub)).subs(reciprocal)
            same.append(not rhs.has(sp.Mod) and prove_equal(lhs, rhs, simplifier=_denest))
    for sx in (X, -X):
        sub = {x0: sx, v0: 0}
        same.append(prove_equal(expr.subs(k, k_of_D).subs(sub), derived.subs(k, k_of_D).subs(sub)))
    out.check(r"it equals $-x(t_{1})/x_{0}$ at the first zero $t_{1} > 0$ of $\dot{x}$, whose phase "
              r"is the argument of a complex number taken modulo $\pi$: proven in each of the four "
              r"sign cases of $v_{0} \ne 0$ and of the sine coefficient of $\dot{x}$, and from rest "
              r"for $x_{0}$ of either sign (with $\kappa_{s}$ written through $\omega > 0$; the "
              r"remainder modulo $\pi$ from the range of its argument)", "sympy", all(same),
              f"derived form ${_tex(derived)}$")


@derivation("oscillator.overshoot")
def _overshoot() -> Derived:
    rate, W = _underdamped_rates()
    x = get("oscillator.trajectory_underdamped").expr
    xdot = sp.expand(sp.diff(x, S.t) * sp.exp(rate * S.t))   # (the exponentials cancel in the product)
    A = sp.simplify(xdot.coeff(sp.cos(W * S.t)))
    B = sp.simplify(xdot.coeff(sp.sin(W * S.t)))
    phase = sp.atan2(A, B)                   # A cos + B sin = R sin(W t + phase)
    t1 = (sp.pi - sp.Mod(phase, sp.pi)) / W  # first t > 0 with x'(t) = 0
    # (one fraction with the common factors out: simplify's form, in 1/40 of its time)
    derived = sp.factor_terms(sp.together(-x.subs(S.t, t1) / S.x0))
    out = Derived("oscillator.overshoot", _overshoot_readable(), (S.m, S.gamma, S.spring, S.x0, S.v0),
                  r"\mathrm{OS}",
                  r"Overshoot of the underdamped oscillator: $-x(t_{1})/x_{0}$ at the first "
                  r"extremum $t_{1} > 0$, with a free initial slope $v_{0}$ (the fitted "
                  r"oscillator's); positive when the deviation crosses the fixed point.",
                  units="fraction of the initial deviation",
                  assumptions=r"$\gamma^{2} < 4 m \kappa_{s}$, $x_{0} \ne 0$", level="L3",
                  references=_PAPER, title="Overshoot of the underdamped oscillation")
    expr = out.expr
    m_, g_, k_, x0_, v0_, w_, t1 = S.m, S.gamma, S.spring, S.x0, S.v0, S.omega, S.t_1
    moving = (-sp.sign(v0_) * sp.sqrt(x0_**2 + v0_ * (m_ * v0_ + g_ * x0_) / k_)
              * sp.exp(-g_ * t1 / (2 * m_)) / x0_)
    out.show(sp.Piecewise((sp.exp(-sp.pi * g_ / (2 * m_ * w_)), sp.Eq(v0_, 0)), (moving, True)),
             [(t1, (sp.pi / 2 - sp.atan((g_ * v0_ + 2 * k_ * x0_) / (2 * m_ * w_ * v0_))) / w_, ""),
              (w_, sp.sqrt(4 * m_ * k_ - g_**2) / (2 * m_), "")])
    out.check(r"$\dot{x}(t) e^{\gamma t/(2m)}$ is a combination of $\cos(\omega t)$ and "
              r"$\sin(\omega t)$ only", "sympy",
              prove_zero(xdot - A * sp.cos(W * S.t) - B * sp.sin(W * S.t)))
    _check_overshoot_form(out, expr, derived)
    at_rest = sp.exp(-rate * sp.pi / W)
    rest = x.subs(S.v0, 0)
    out.check(r"from rest ($v_{0} = 0$) the first extremum is at $t = \pi/\omega$ and the overshoot "
              r"is $e^{-\gamma\pi/(2 m \omega)}$, the at-rest formula", "sympy",
              prove_zero(sp.diff(rest, S.t).subs(S.t, sp.pi / W))
              and prove_zero(-rest.subs(S.t, sp.pi / W) / S.x0 - at_rest))
    import mpmath

    f = sp.lambdify(_ARGS_TRAJ[1:], expr, "mpmath")
    traj = sp.lambdify((S.t,) + _ARGS_TRAJ[1:], x, "mpmath")
    errors = []
    with mpmath.workdps(40):
        for (mv, gv, kv, v0) in ((1, "0.2", 2, "0.5"), (1, "0.2", 2, "-3"), ("0.75", "0.3", "0.1", "0.05"),
                                 (1, "0.2", 2, 0)):
            mv, gv, kv, v0 = (mpmath.mpf(v) for v in (mv, gv, kv, v0))
            d = lambda tt: mpmath.diff(lambda u: traj(u, mv, gv, kv, 1, v0), tt)  # noqa: E731
            Wv = mpmath.sqrt(4 * mv * kv - gv**2) / (2 * mv)
            grid = [mpmath.mpf(i) / 400 * 2 * mpmath.pi / Wv for i in range(1, 401)]
            t_first = next(g for g0, g in zip(grid, grid[1:]) if d(g0) * d(g) <= 0)
            t_root = mpmath.findroot(d, t_first)
            ref = -traj(t_root, mv, gv, kv, 1, v0)
            errors.append(abs(f(mv, gv, kv, 1, v0) - ref) / abs(ref))
    record_numeric(out, r"equals $-x(t_{1})/x_{0}$ at the first root $t_{1} > 0$ of $\dot{x}(t)$ "
                   r"found numerically (4 cases: $v_{0}$ of both signs and $v_{0} = 0$)", errors,
                   digits=25, precision=40)
    return out


@derivation("oscillator.scaling_exponent")
def _scaling() -> Derived:
    tau_expr = (damping_expr() / spring_expr()).subs(S.K_stale, S.K)
    tau_N = tau_expr.subs(S.K, S.c_K * S.N**S.alpha)
    exponent = sp.simplify(sp.diff(sp.log(tau_N), S.N) * S.N)
    exponent = sp.simplify(exponent.subs(S.c_K * S.N**S.alpha, S.K))
    out = Derived("oscillator.scaling_exponent", exponent, (S.alpha, S.mu, S.eta, S.K, S.ell),
                  r"\frac{\mathrm{d}\log\tau}{\mathrm{d}\log N}", r"Model-size exponent of the saturation time "
                  r"$\tau = \gamma/\kappa_{s}$ when the stiffness scales as $K = c_{K} N^{\alpha}$.",
                  units="dimensionless",
                  assumptions=r"$K = c_{K} N^{\alpha}$; first-order lag model", level="L3",
                  references=_PAPER, title="Model-size exponent of the saturation time")
    exponent = out.expr
    out.show(-S.alpha * (1 - S.mu) / S.gamma, [(S.gamma, damping_expr().subs(S.K_stale, S.K), "")])
    out.check(r"with no lag the exponent is exactly $-\alpha$ ($\tau \propto N^{-\alpha}$)", "sympy",
              prove_zero(exponent.subs(S.ell, 0) + S.alpha))
    out.check(r"with lag the exponent is $-\alpha (1 - \mu)/\gamma$, steeper than $-\alpha$",
              "sympy",
              prove_zero(exponent + S.alpha * (1 - S.mu) / damping_expr().subs(S.K_stale, S.K)))
    return out


# ----------------------------------------------------------------------------------
# Numeric API (all formulas lambdified from the derivations above)
# ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Oscillator:
    r"""Coefficients of :math:`m\ddot x + \gamma\dot x + \kappa_s x = 0` (time in steps, x in logits)."""

    mass: float
    damping: float
    spring: float

    @property
    def damping_ratio(self) -> float:
        return damping_ratio(self.mass, self.damping, self.spring)

    @property
    def regime(self) -> str:
        return regime(self.mass, self.damping, self.spring)

    @property
    def time_scale(self) -> float:
        """tau = gamma/kappa_s of the massless limit (steps): the late-time decay time only
        where the oscillator is strongly overdamped (zeta >> 1; a trainer's mass m = (1 + mu)/2
        is at least 1/2, so m -> 0 is reached only in that sense)."""
        return self.damping / self.spring

    def trajectory(self, t, x0, v0=0.0):
        return trajectory(t, self.mass, self.damping, self.spring, x0, v0)


def coefficients(learning_rate, momentum, lag, stiffness, *, fresh_fraction=0.0) -> Oscillator:
    """Mass, damping and spring of the continuous model from the hyper-parameters.

    Parameters: ``learning_rate`` eta > 0 (per step); ``momentum`` mu in [0, 1);
    ``lag`` ell >= 0 (steps; for refresh interval k the first-order model of the
    paper uses ell = k); ``stiffness`` K > 0 (per unit learning rate);
    ``fresh_fraction`` K_f/K, the part of K acting on the current iterate (the rest,
    K_s = (1 - fresh_fraction) K, acts through the lagged sampling policy; 0 for the
    stale surrogate without KL; any real number in general).
    """
    eta, mu = float(learning_rate), float(momentum)   # a model's, validated there
    ell = check_real("lag", lag, low=0)
    Kv = check_real("stiffness", stiffness, low=0, low_open=True)
    # K_f/K may lie outside [0, 1]: near p -> 1 the exact-KL force acting on the current
    # iterate is destabilizing (K_f < 0), so the stale part exceeds K.
    phi = 1 - check_real("fresh_fraction", fresh_fraction)
    return Oscillator(float(get("oscillator.mass").numeric(mu)),
                      float(get("oscillator.damping").numeric(mu, eta, phi * Kv, ell)),
                      float(get("oscillator.spring").numeric(eta, Kv)))


def damping_ratio(mass, damping, spring):
    """zeta = gamma / (2 sqrt(m kappa_s)), lambdified from ``oscillator.damping_ratio``."""
    return get("oscillator.damping_ratio").numeric(mass, damping, spring)


def regime(mass, damping, spring, *, rtol=1e-12) -> str:
    """``"unstable"`` (gamma < 0: the amplitude grows), ``"undamped"`` (gamma = 0: it neither
    grows nor decays, the marginal case), ``"oscillatory"``, ``"critical"`` or
    ``"overdamped"``."""
    if damping < 0:
        return "unstable"
    if damping == 0:
        return "undamped"
    zeta = float(damping_ratio(mass, damping, spring))
    if abs(zeta - 1) <= rtol:
        return "critical"
    return "oscillatory" if zeta < 1 else "overdamped"


def _check_traj_args(mass, damping, spring):
    m = check_real("mass", mass, low=0, low_open=True)
    g = check_real("damping", damping)
    k = check_real("spring", spring, low=0, low_open=True)
    return m, g, k


def trajectory(t, mass, damping, spring, x0, v0=0.0):
    r"""Closed-form :math:`x(t)` of :math:`m\ddot x+\gamma\dot x+\kappa_s x=0`, :math:`x(0)=x_0`, :math:`\dot x(0)=v_0`.

    Vectorised over ``t`` (steps).  Each regime is lambdified from its sympy
    derivation; at :math:`\gamma^2 = 4m\kappa_s` (within rounding) the critical branch (derived
    as the exact limit) is used, so the function is valid there too.
    """
    m, g, k = _check_traj_args(mass, damping, spring)
    x0 = check_real("x0", x0)
    v0 = check_real("v0", v0)
    return _trajectory(t, m, g, k, x0, v0)


def _trajectory(t, m, g, k, x0, v0):
    """:func:`trajectory` for parameters already checked (floats, m > 0, k > 0): a curve fit
    evaluates it thousands of times with parameters its bounds keep valid."""
    t = np.asarray(t, dtype=float)
    if t.ndim == 0:
        return _trajectory(np.atleast_1d(t), m, g, k, x0, v0)[0]
    disc = g * g - 4 * m * k
    # within rounding of gamma^2 = 4 m k the regimes' own radicands (gamma**2 - 4*k*m, computed
    # in another order) can come out 0 or of the other sign: the critical branch, their limit
    tie = 8 * np.finfo(float).eps * (g * g + 4 * m * k)
    if disc > tie:
        # cosh/sinh form while w t is moderate (accurate near critical damping), the
        # proven-equal two-mode form beyond (no overflow of cosh at large t).
        w = np.sqrt(disc) / (2 * m)
        big = np.abs(w * t) > 20.0
        out = np.empty_like(t)
        if np.any(~big):
            out[~big] = get("oscillator.trajectory_overdamped").numeric(t[~big], m, g, k, x0, v0)
        if np.any(big):
            out[big] = get("oscillator.trajectory_overdamped_modes").numeric(t[big], m, g, k, x0, v0)
        return out
    if disc < -tie:
        return get("oscillator.trajectory_underdamped").numeric(t, m, g, k, x0, v0)
    return get("oscillator.trajectory_critical").numeric(t, m, g, x0, v0) + 0 * t


@dataclass(frozen=True)
class TrajectoryResult(Result):
    """x(t) of the L3 oscillator at given times (``grpo-theory trajectory``)."""

    inputs: dict
    times: tuple
    x: tuple
    regime: str
    damping_ratio: float

    def __str__(self) -> str:
        lines = [f"regime: {self.regime}  damping ratio: {self.damping_ratio:.6g}",
                 f"{'t':>12}  {'x(t)':>16}"]
        lines += [f"{tt:>12.6g}  {xv:>16.10g}" for tt, xv in zip(self.times, self.x)]
        return "\n".join(lines)


def trajectory_report(times, mass, damping, spring, x0, v0=0.0) -> TrajectoryResult:
    """The closed-form trajectory at ``times`` (steps, each >= 0) with its regime."""
    ts = []
    for tt in times:
        try:
            ts.append(check_real("times", tt, low=0))
        except ParameterError:
            raise ParameterError("times", list(times), "finite real numbers >= 0") from None
    if not ts:
        raise ParameterError("times", list(times), "at least one time >= 0")
    m, g, k = _check_traj_args(mass, damping, spring)
    x0 = check_real("x0", x0)
    v0 = check_real("v0", v0)
    inputs = {"mass": m, "damping": g, "spring": k, "x0": x0, "v0": v0}
    x = None
    try:    # an input whose closed form overflows double precision is refused, not printed as nan
        with np.errstate(all="ignore"):
            x = np.atleast_1d(trajectory(np.array(ts), m, g, k, x0, v0))
            kind, zeta = regime(m, g, k), float(damping_ratio(m, g, k))
        finite = bool(np.all(np.isfinite(x))) and not math.isnan(zeta)
    except OverflowError:
        finite = False
    if not finite:
        # the input farthest from 1 in orders of magnitude, or the time when none is extreme
        size = {n: abs(math.log10(abs(v))) if v else 0.0 for n, v in inputs.items()}
        name = max(size, key=size.get)
        if size[name] < 6 and x is not None and not math.isnan(zeta):
            bad = [t for t, v in zip(ts, x) if not np.isfinite(v)]
            t_max = _last_finite(bad[0], m, g, k, x0, v0)
            raise ParameterError("times", _shown(bad[0]), f"at most {t_max:.6g} (this "
                                 f"{kind} oscillator's x(t) grows past the largest "
                                 "double, 1.8e308, after that)")
        name, value = (name, inputs[name]) if size[name] >= 6 else ("times", max(ts))
        given = ", ".join(f"{n} = {v:g}" for n, v in inputs.items())
        raise ParameterError(name, value, "a value at which the closed form is finite in "
                             f"double precision ({given}: x(t) overflows by t = {max(ts):g})")
    return TrajectoryResult(inputs=inputs, times=tuple(ts), x=tuple(float(v) for v in x),
                            regime=kind, damping_ratio=zeta)


def _shown(t: float):
    """A time as the user typed it (``1000000.0`` as ``1000000``)."""
    return int(t) if float(t).is_integer() else t


def _last_finite(t_bad, m, g, k, x0, v0) -> float:
    """The largest time (to 1e-9 relative) below ``t_bad`` where x(t) is still a finite
    double (bisection on finiteness: the growing envelope crosses 1.8e308 once)."""
    lo, hi = 0.0, float(t_bad)
    with np.errstate(over="ignore", invalid="ignore"):
        for _ in range(200):
            if hi - lo <= 1e-9 * hi:
                break
            mid = 0.5 * (lo + hi)
            if np.isfinite(trajectory(np.array([mid]), m, g, k, x0, v0)[0]):
                lo = mid
            else:
                hi = mid
    return lo


def velocity(t, mass, damping, spring, x0, v0=0.0, *, h=None):
    """dx/dt of :func:`trajectory` (central difference of the closed form, steps^-1)."""
    t = np.asarray(t, dtype=float)
    h = 1e-6 * max(1.0, float(np.max(np.abs(t))) if t.size else 1.0) if h is None else h
    return (trajectory(t + h, mass, damping, spring, x0, v0)
            - trajectory(t - h, mass, damping, spring, x0, v0)) / (2 * h)


def single_exponential(t, plateau, initial, tau):
    """The empirical law R(t) = R_inf - (R_inf - R_0) exp(-t/tau), from ``oscillator.single_exponential``."""
    tau = check_real("tau", tau, low=0, low_open=True)
    return get("oscillator.single_exponential").numeric(np.asarray(t, dtype=float),
                                                        plateau, initial, tau)
