r"""Constant staleness d (lag model ``delay``): the characteristic polynomial, its Schur-Cohn
thresholds for d = 0, 1, 2 and the companion-matrix numerics."""

from __future__ import annotations


import numpy as np
import sympy as sp

from grpo_theory.theory import symbols as S
from grpo_theory.theory.derived import Derived, derivation, get, prove_equal, prove_zero
from grpo_theory.theory.discrete._shared import _ETA_K, _PAPER, _STALE, _stiffness, _tex
from grpo_theory.theory.printing import sci as _sci


def _delay_poly_expr(d):
    lam, mu, eta, Kf, Ks = S.lam, S.mu, S.eta, S.K_fresh, S.K_stale
    return lam**(d + 1) - (1 + mu - eta * Kf) * lam**d + mu * lam**(d - 1) + eta * Ks


def _delay_companion(dv: int) -> sp.Matrix:
    """Companion matrix of x_{t+1} = (1+mu-eta K_f) x_t - mu x_{t-1} - eta K_s x_{t-d}."""
    mu, eta, Kf, Ks = S.mu, S.eta, S.K_fresh, S.K_stale
    n = max(dv + 1, 2)                     # state (x_t, x_{t-1}, ..., x_{t-n+1})
    row = [0] * n
    row[0] += 1 + mu - eta * Kf
    row[1] += -mu
    row[dv] += -eta * Ks
    A = sp.zeros(n, n)
    A[0, :] = sp.Matrix([row])
    for r in range(1, n):
        A[r, r - 1] = 1
    return A


@derivation("discrete.delay_characteristic_polynomial")
def _delay_charpoly() -> Derived:
    expr = _delay_poly_expr(S.d)
    out = Derived("discrete.delay_characteristic_polynomial", expr,
                  (S.lam, S.mu, S.eta, S.K_fresh, S.K_stale, S.d), r"P_{d}(\lambda)",
                  r"Characteristic polynomial of the heavy-ball update with constant staleness "
                  r"$d$ (delay lag model). For $d = 0$ it is $\lambda^{-1}$ times the quadratic "
                  r"$\lambda^{2} - (1 + \mu - \eta K) \lambda + \mu$; for $d = 1$ the "
                  r"$\lambda^{d-1}$ term merges with the constant.", units="dimensionless",
                  assumptions=r"$x_{t} = \lambda^{t}$ in the linear recurrence", level="L2",
                  references=("polyak1964",), title="Characteristic polynomial with a constant delay")
    expr = out.expr
    lam, mu, eta, Kf, Ks = S.lam, S.mu, S.eta, S.K_fresh, S.K_stale
    # hand derivation from the recurrence: substitute x_t = lambda^t
    tt = sp.Symbol("t_", integer=True)
    rec = (lam**(tt + 1) - (1 + mu) * lam**tt + mu * lam**(tt - 1)
           + eta * (Kf * lam**tt + Ks * lam**(tt - S.d)))
    out.check(r"$\lambda^{d-t}$ times the recurrence with $x_{t} = \lambda^{t}$ is $P_{d}(\lambda)$",
              "sympy",
              prove_zero(sp.expand(sp.powsimp(sp.expand(rec * lam**(S.d - tt)))) - sp.expand(expr)))
    q0 = sp.expand(lam * expr.subs(S.d, 0))
    out.check(r"$d = 0$: $\lambda P_{d} = \lambda^{2} - (1 + \mu - \eta K) \lambda + \mu$ "
              r"($K = K_{f} + K_{s}$)", "sympy",
              prove_zero(q0 - (lam**2 - (1 + mu - eta * (Kf + Ks)) * lam + mu)))
    out.check(r"$d = 1$: $P_{d} = \lambda^{2} - (1 + \mu - \eta K_{f}) \lambda + (\mu + \eta K_{s})$",
              "sympy",
              prove_zero(sp.expand(expr.subs(S.d, 1))
                         - (lam**2 - (1 + mu - eta * Kf) * lam + mu + eta * Ks)))
    ok = True
    for dv in range(0, 6):
        cp = _delay_companion(dv).charpoly(lam).as_expr()
        target = q0 if dv == 0 else sp.expand(expr.subs(S.d, dv))
        ok &= prove_zero(sp.expand(cp - target))
    out.check(r"equals the characteristic polynomial of the recurrence's companion matrix", "sympy",
              ok, cases=r"$d = 0, \dots, 5$")
    return out


def _cubic_schur_cohn(poly):
    """Schur–Cohn / Jury conditions of a monic cubic; returns (P(1), -P(-1), 1 - c0^2 - (c1 - c0 c2))."""
    lam = S.lam
    p = sp.Poly(poly, lam)
    _, c2, c1, c0 = p.all_coeffs()
    return (sp.expand(poly.subs(lam, 1)), sp.expand(-poly.subs(lam, -1)),
            sp.expand(1 - c0**2 - (c1 - c0 * c2)), sp.expand(1 - c0**2 + (c1 - c0 * c2)))


def _delay_displayed_boundaries():
    """Boundaries shown in a readable form, ``{d: {"flip" or "complex": expr}}``; each is
    proven equal to sympy's root (and its LaTeX printed from it).  d = 2, complex: the root
    (sqrt((1-mu)^2 + 4) - 1 - mu)/2 with its numerator rationalised (no cancellation as mu -> 1)."""
    mu = S.mu
    return {2: {"complex": 2 * ((1 - mu) / (1 + mu + sp.sqrt((1 - mu)**2 + 4)))}}


def _boundary_words(what, e, other):
    """One boundary in words: its formula when it is short; a fraction (nested, when set inline)
    is named as the minimum's other argument, which the displayed equation shows."""
    if e == sp.oo:
        return f"{what}: none"
    if other != sp.oo and r"\frac" in _tex(e) and r"\frac" not in _tex(other):
        return f"{what}: the other argument of the minimum"
    return f"{what}: ${_tex(e)}$"


def _register_delay_threshold(dv: int):
    name = f"discrete.delay_threshold_d{dv}"

    @derivation(name)
    def _build() -> Derived:
        a, mu, lam = S.a, S.mu, S.lam
        P = get("discrete.delay_characteristic_polynomial").expr.subs(S.d, dv)
        P = sp.expand(P.subs({S.K_fresh: 0, S.K_stale: S.K, S.eta: a / S.K}))
        if dv == 0:
            P = sp.expand(lam * P)
        flip = complex_ = None
        if sp.degree(P, lam) == 2:
            c1 = P.coeff(lam, 1)
            c0 = P.coeff(lam, 0)
            flip_cond = sp.expand(1 - c1 + c0)           # P(-1) > 0
            cx_cond = sp.expand(1 - c0)                  # det < 1
            p1 = sp.expand(1 + c1 + c0)
            conds = {"P(1)": p1}
        else:
            p1, m1, sc_minus, sc_plus = _cubic_schur_cohn(P)
            flip_cond, cx_cond = m1, sc_minus
            conds = {"P(1)": p1, r"1 - c_0^{2} + (c_1 - c_0 c_2)": sc_plus}
        sols = [r for r in sp.solve(flip_cond, a) if r.subs(mu, sp.Rational(1, 2)).is_positive]
        flip = sp.simplify(sols[0]) if sols else sp.oo
        sols = [r for r in sp.solve(cx_cond, a) if r.subs(mu, sp.Rational(1, 2)).is_positive]
        complex_ = sp.simplify(sols[0]) if sols else sp.oo
        solved = {"flip": flip, "complex": complex_}
        shown = _delay_displayed_boundaries().get(dv, {})
        flip = shown.get("flip", flip)
        complex_ = shown.get("complex", complex_)
        expr = sp.Min(flip, complex_) if (flip != sp.oo and complex_ != sp.oo) else (
            flip if complex_ == sp.oo else complex_)
        binding = "flip" if complex_ == sp.oo else ("complex" if flip == sp.oo else None)
        out = Derived(name, expr, (S.mu,), r"a_{\max}",
                      rf"Exact stability threshold of the step stiffness $a = \eta K$ for a constant "
                      rf"delay $d = {dv}$, stale surrogate, from the Schur–Cohn conditions: the smaller "
                      rf"of two boundaries. "
                      rf"{_boundary_words(r'Flip boundary (a real root at $-1$)', flip, complex_)}; "
                      rf"{_boundary_words('complex boundary (a complex pair on the unit circle)', complex_, flip)}.",
                      units=_ETA_K,
                      assumptions=_STALE + rf"; delay $d = {dv}$", level="L2",
                      references=_PAPER + ("schur1917", "cohn1922"),
                      title=f"Largest stable step stiffness with a constant delay $d = {dv}$")
        expr = out.expr
        cubic = sp.degree(P, lam) == 3
        out.step(rf"[[eq:discrete.delay_characteristic_polynomial]] at $d = {dv}$, all of "
                 r"the stiffness through the sampling policy" + (
                     r", written $\lambda^{3} + c_{2} \lambda^{2} + c_{1} \lambda + c_{0}$" if cubic
                     else r", written $\lambda^{2} + c_{1} \lambda + c_{0}$"),
                 P, r"\lambda P_{0}(\lambda)" if dv == 0 else rf"P_{{{dv}}}(\lambda)")
        for kind, cond in (("flip", flip_cond), ("complex", cx_cond)):
            if solved[kind] == sp.oo:
                continue
            lhs = {("flip", False): "1 - c_{1} + c_{0}", ("flip", True): rf"-P_{{{dv}}}(-1)",
                   ("complex", False): "1 - c_{0}",
                   ("complex", True): "1 - c_{0}^{2} - (c_{1} - c_{0} c_{2})"}[kind, cubic]
            out.step(f"the Schur--Cohn condition of the {kind} boundary", cond, lhs)
            out.step("its positive root in $a$", solved[kind], rf"a_{{\mathrm{{{kind}}}}}")
            if kind in shown:
                out.step("the numerator rationalised", shown[kind])
        for kind, form in shown.items():
            out.check(rf"the {kind} boundary shown is the root in $a$ of its Schur–Cohn condition",
                      "sympy", prove_equal(form, solved[kind]),
                      f"solved form ${_tex(solved[kind])}$")
        out.check(r"$P(1) = a > 0$: no eigenvalue at $+1$", "sympy", prove_equal(p1, a))
        for label, c in conds.items():
            if label != "P(1)":
                # the other branch of |.|: positive on [0, threshold]
                ok = prove_zero(sp.diff(c, a, 3)) and all(
                    c.subs({mu: mv, a: expr.subs(mu, mv) * f}) > 0
                    for mv in (0, sp.Rational(1, 2), sp.Rational(9, 10)) for f in (0, sp.Rational(1, 2), 1))
                out.check(r"the remaining Schur–Cohn condition of the cubic is positive at 9 sample "
                          r"points up to the threshold ($\mu = 0, 1/2, 9/10$, at $a = 0$, half the "
                          r"threshold and the threshold; exact rationals) and is at most quadratic "
                          r"in $a$", "numeric", ok)
        if binding is None:
            binding = "complex" if all(
                (complex_ - flip).subs(mu, mv) < 0 for mv in (0, sp.Rational(1, 2), sp.Rational(99, 100))
            ) else "mixed"
        if flip == sp.oo or complex_ == sp.oo:
            which = f"only the {binding} boundary exists"
        else:
            which = (r"the complex boundary lies below the flip boundary at $\mu = 0, 1/2, 99/100$"
                     if binding == "complex" else "the two boundaries cross")
        out.check(which, "numeric", binding in ("flip", "complex"))
        # the boundary is where a root reaches the unit circle (numeric, numpy roots)
        worst = 0.0
        for mv in (0.0, 0.3, 0.6, 0.9):
            at = float(expr.subs(mu, mv))
            coeffs = [complex(c) for c in sp.Poly(P.subs({mu: mv, a: at}), lam).all_coeffs()]
            worst = max(worst, abs(max(abs(np.roots(coeffs))) - 1))
        out.check(r"at the threshold the spectral radius is $1$ (roots computed numerically at "
                  r"$\mu = 0, 0.3, 0.6, 0.9$)", "numeric", worst < 1e-9,
                  rf"largest $|\rho - 1|$: {_sci(worst)}")
        if dv == 1:
            pub = get("discrete.published_threshold_learning_rate").expr.subs(S.k_ref, 1)
            out.check(r"$d = 1$: the exact threshold $a < 1 - \mu$ coincides with the published "
                      r"form at lag $1$", "sympy", prove_equal(expr, pub))
        return out

    return _build


for _dv in (0, 1, 2):
    _register_delay_threshold(_dv)



# --- delay --------------------------------------------------------------------------

def _delay_companion_numeric(a, mu, d, phi):
    """The delay-d companion matrix at eta K = ``a``, one per element of an array ``a`` (shape
    ``a.shape + (n, n)``)."""
    a = np.asarray(a, dtype=float)
    n = max(d + 1, 2)
    A = np.zeros(a.shape + (n, n))
    A[..., 0, 0] += 1 + mu - phi * a
    A[..., 0, 1] += -mu
    A[..., 0, d] += -(1 - phi) * a
    A[..., np.arange(1, n), np.arange(0, n - 1)] = 1
    return A


def _delay_eigs(a, mu, d, phi):
    return np.linalg.eigvals(_delay_companion_numeric(a, mu, d, phi))


def delay_spectral_radius(learning_rate, momentum, delay, stiffness, fresh_fraction=0.0):
    """Spectral radius of the delay-d recurrence (per step), from its companion matrix."""
    Kv, phi = _stiffness(stiffness, fresh_fraction)
    return float(np.max(np.abs(_delay_eigs(float(learning_rate) * Kv, float(momentum), int(delay),
                                            phi))))
