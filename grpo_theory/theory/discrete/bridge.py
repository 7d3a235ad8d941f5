r"""From the exact map to the continuous model: the published and mean-lag thresholds, the slow
eigenvalue, the effective lag (k - 1)/2 of the L3 model and its thresholds."""

from __future__ import annotations

import math

import sympy as sp

from grpo_theory.theory import symbols as S
from grpo_theory.theory.derived import Derived, derivation, get, prove_equal, prove_zero, taylor
from grpo_theory.theory.discrete._shared import _ETA_K, _PAPER, _STALE, _tex
from grpo_theory.theory.discrete.delay import _delay_poly_expr

# --- comparison with the continuous (first-order-in-lag) thresholds ---------------

@derivation("discrete.published_threshold_learning_rate")
def _published_lr() -> Derived:
    ell_max = get("oscillator.published_threshold").expr    # (1 - mu)/(eta K)
    (eta_max,) = sp.solve(sp.Eq(ell_max, S.k_ref), S.eta)
    expr = sp.simplify(eta_max * S.K)
    out = Derived("discrete.published_threshold_learning_rate", expr, (S.mu, S.k_ref),
                  r"a_{\mathrm{pub}}",
                  r"The published first-order threshold $\eta K k < 1 - \mu$ written as a "
                  r"threshold of the step stiffness $a = \eta K$ (continuous model with the lag "
                  r"identified with $k$).",
                  units=_ETA_K, assumptions=r"first order in the lag; lag $\ell = k$",
                  level="L3", references=_PAPER, title="The published threshold")
    expr = out.expr
    out.check(r"$\eta K k = 1 - \mu$ at the threshold (the published form, quoted)", "sympy",
              prove_zero(expr * S.k_ref - (1 - S.mu)))
    exact = get("discrete.refresh_flip_threshold").expr
    ratio = sp.simplify(exact.subs(S.mu, 0) / expr.subs(S.mu, 0))
    out.check(r"a disagreement, recorded: at $\mu = 0$ the exact threshold ($2/k$) is twice the "
              r"published one ($1/k$)", "sympy", prove_equal(ratio, 2),
              f"exact over published: ${_tex(ratio)}$")
    return out


@derivation("discrete.mean_lag_threshold_learning_rate")
def _mean_lag_lr() -> Derived:
    g = get("oscillator.damping").expr.subs({S.K_stale: S.K, S.ell: (S.k_ref - 1) / 2})
    (eta_max,) = sp.solve(sp.Eq(g, 0), S.eta)
    expr = sp.simplify(eta_max * S.K)
    out = Derived("discrete.mean_lag_threshold_learning_rate", expr, (S.mu, S.k_ref),
                  r"a_{\bar{\ell}}",
                  r"First-order continuous threshold ($\gamma = 0$) with the mean lag "
                  r"$\bar{\ell} = (k - 1)/2$ of a refresh window instead of $k$. Infinite at $k = 1$.",
                  units=_ETA_K, assumptions=r"first order in the lag; lag $\ell = \bar{\ell}$",
                  level="L3", title="The first-order threshold with the mean lag")
    expr = out.expr
    out.check(r"$\gamma = 0$ at the threshold, with the mean lag", "sympy",
              prove_zero(g.subs(S.eta, expr / S.K)))
    exact = get("discrete.refresh_flip_threshold").expr
    kk = sp.Symbol("kappa_k", positive=True)
    r = sp.limit((exact / expr).subs(S.mu**S.k_ref, 0).subs(S.k_ref, kk), kk, sp.oo)
    out.check(r"$k \to \infty$: the exact flip threshold over the mean-lag threshold tends to $1$ "
              r"(asymptotically exact)", "sympy", prove_equal(r, 1))
    return out


# --- continuous limit --------------------------------------------------------------

@derivation("discrete.refresh_slow_eigenvalue")
def _slow_eigenvalue() -> Derived:
    P = get("discrete.refresh_characteristic_polynomial").expr
    c1, c2 = sp.symbols("c1 c2")
    lam = 1 + c1 * S.a + c2 * S.a**2
    ser = sp.expand(taylor(P.subs(S.lam, lam), S.a, 3))
    (c1v,) = sp.solve(ser.coeff(S.a, 1), c1)

    out = Derived("discrete.refresh_slow_eigenvalue", 1 - S.a * S.k_ref / (1 - S.mu),
                  (S.a, S.mu, S.k_ref), r"\lambda_{\mathrm{slow}}",
                  r"Slow eigenvalue of the refresh monodromy to first order in $a = \eta K$: one "
                  r"window of $k$ steps, each contracting by $a/(1 - \mu)$ (the L3 root "
                  r"$-\kappa_{s}/\gamma$ per step).",
                  units="per window", assumptions=_STALE + r"; $O(a^{2})$ dropped", level="L2",
                  references=_PAPER, title="Slow eigenvalue of the monodromy")
    expr = out.expr
    out.check(r"$P(\lambda) = O(a^{2})$ at $\lambda = 1 - a k/(1 - \mu)$: the coefficient of $a$ "
              r"in the slow eigenvalue is $-k/(1 - \mu)$", "sympy",
              prove_equal(c1v, -S.k_ref / (1 - S.mu)) and prove_zero(ser.coeff(S.a, 0))
              and prove_equal(expr, 1 + c1v * S.a))
    # L3 at zero lag: slow root of m s^2 + gamma s + k to first order in a = eta K
    m = get("oscillator.mass").expr
    g = get("oscillator.damping").expr.subs(S.ell, 0)
    kspring = get("oscillator.spring").expr.subs(S.eta, S.a / S.K)
    slow = (-g + sp.sqrt(g**2 - 4 * m * kspring)) / (2 * m)
    r = sp.Symbol("r", positive=True)            # r = 1 - mu > 0
    s1 = sp.simplify(taylor(slow.subs(S.mu, 1 - r), S.a, 2))
    per_window = taylor(sp.exp(S.k_ref * s1), S.a, 2).subs(r, 1 - S.mu)
    s1 = s1.subs(r, 1 - S.mu)
    out.check(r"agrees with the L3 model to first order: $e^{k s_{\mathrm{slow}}} = 1 - a k/(1 - \mu) "
              r"+ O(a^{2})$ with $s_{\mathrm{slow}} = -\kappa_{s}/\gamma$", "sympy",
              prove_zero(sp.expand(per_window - expr)), f"L3 slow root ${_tex(s1)}$")
    # same for the delay model: slow root per step is independent of d at first order
    Pd = _delay_poly_expr(S.d).subs({S.K_fresh: 0, S.K_stale: S.K, S.eta: S.a / S.K})
    for dv in (1, 2, 5):
        serd = sp.expand(taylor(Pd.subs(S.d, dv).subs(S.lam, 1 + c1 * S.a), S.a, 2))
        (cd,) = sp.solve(serd.coeff(S.a, 1), c1)
        out.check(rf"delay $d = {dv}$: slow root per step $1 - a/(1 - \mu) + O(a^{{2}})$, as in L3",
                  "sympy", prove_equal(cd, -1 / (1 - S.mu)))
    return out


def _slow_eigenvalue_series(order=3):
    """(c1, c2) of the slow monodromy eigenvalue 1 + c1 a + c2 a^2 + O(a^3), from P(lambda)."""
    P = get("discrete.refresh_characteristic_polynomial").expr
    c1, c2 = sp.symbols("c1 c2")
    ser = sp.expand(taylor(P.subs(S.lam, 1 + c1 * S.a + c2 * S.a**2), S.a, order))
    (c1v,) = sp.solve(ser.coeff(S.a, 1), c1)
    (c2v,) = sp.solve(ser.coeff(S.a, 2).subs(c1, c1v), c2)
    return sp.simplify(c1v), sp.simplify(c2v)


def _l3_window_factor_series(ell):
    """exp(k s_slow) to O(a^2) for the L3 model (all stiffness stale, eta K = a, lag ell)."""
    d1, d2 = sp.symbols("d1 d2")
    m = get("oscillator.mass").expr
    g = get("oscillator.damping").expr.subs({S.K_stale: S.a / S.eta, S.ell: ell})
    kspring = get("oscillator.spring").expr.subs(S.K, S.a / S.eta)
    root = d1 * S.a + d2 * S.a**2
    e = sp.expand(taylor(m * root**2 + g * root + kspring, S.a, 3))
    (d1v,) = sp.solve(e.coeff(S.a, 1), d1)
    (d2v,) = sp.solve(e.coeff(S.a, 2).subs(d1, d1v), d2)
    w = sp.expand(taylor(sp.exp(S.k_ref * (d1v * S.a + d2v * S.a**2)), S.a, 3))
    return sp.simplify(w.coeff(S.a, 1)), sp.simplify(w.coeff(S.a, 2))


@derivation("discrete.refresh_effective_lag")
def _effective_lag() -> Derived:
    c1v, c2v = _slow_eigenvalue_series()
    w1, w2 = _l3_window_factor_series(S.ell)
    (ell_eff,) = sp.solve(sp.Eq(w2, c2v), S.ell)
    expr = sp.factor(sp.simplify(ell_eff))
    out = Derived("discrete.refresh_effective_lag", expr, (S.k_ref,), r"\bar{\ell}",
                  r"Effective lag of the L3 model for a refresh interval $k$: the lag whose L3 "
                  r"slow root reproduces the exact slow eigenvalue of the monodromy to second order "
                  r"in $\eta K$. It is the mean lag of a window, whatever $\mu$.",
                  units="steps", assumptions=_STALE + r"; matching to $O((\eta K)^{2})$",
                  level="L2", references=_PAPER, title="Effective lag of a refresh window")
    expr = out.expr
    out.step(r"the root of $P(\lambda)$ [[eq:discrete.refresh_characteristic_polynomial]] near $1$, "
             r"as a series in $a$", 1 + c1v * S.a + c2v * S.a**2, r"\lambda_{\mathrm{slow}}",
             order=S.a**3)
    out.step(r"the window factor of the reduced oscillator with lag $\ell$, as a series in $a$",
             1 + w1 * S.a + w2 * S.a**2, r"e^{k s_{\mathrm{slow}}}", order=S.a**3)
    out.step(r"the lag that makes the coefficients of $a^{2}$ equal", ell_eff, r"\bar{\ell}")
    # (the series' coefficients at this lag and at lag 0: the lag enters them polynomially and
    # not through a, so substituting it is the series recomputed at that lag, in 1/6 the time)
    w1e, w2e = w1.subs(S.ell, expr), w2.subs(S.ell, expr)
    out.check(r"first order: $e^{k s_{\mathrm{slow}}}$ and the exact slow eigenvalue agree for "
              r"every lag (coefficient $-k/(1 - \mu)$)", "sympy", prove_zero(w1e - c1v),
              rf"exact $\lambda_{{\mathrm{{slow}}}} = 1 + \left({_tex(c1v)}\right) a "
              rf"+ \left({_tex(sp.factor(c2v))}\right) a^{{2}} + O(a^{{3}})$")
    out.check(r"second order: with this lag the L3 window factor equals the exact slow "
              r"eigenvalue up to $O(a^{3})$", "sympy", prove_zero(w2e - c2v))
    w1z, w2z = w1.subs(S.ell, 0), w2.subs(S.ell, 0)
    out.check(r"with lag $0$ the $a^{2}$ term is off by "
              r"$+k (k - 1)/(2 (1 - \mu)^{2})$, unless $k = 1$", "sympy",
              prove_zero(sp.factor(w2z - c2v) - S.k_ref * (S.k_ref - 1) / (2 * (1 - S.mu)**2)))
    out.check(r"$k = 1$ (on-policy): effective lag $0$", "sympy", prove_zero(expr.subs(S.k_ref, 1)))
    return out


@derivation("discrete.continuous_threshold_learning_rate")
def _continuous_threshold() -> Derived:
    g = get("oscillator.damping").expr
    (eta_max,) = sp.solve(sp.Eq(g, 0), S.eta)
    out = Derived("discrete.continuous_threshold_learning_rate", sp.simplify(eta_max),
                  (S.mu, S.K_stale, S.ell), r"\eta_{\max}",
                  r"Largest learning rate with positive L3 damping $\gamma = 1 - \mu - \eta K_{s} "
                  r"\ell$: the continuous (second-order modified equation) stability threshold, "
                  r"with the effective lag $\ell$ and the stale stiffness $K_{s}$.", units="per step",
                  assumptions=r"$K_{s} > 0$, $\ell > 0$; L3 approximation", level="L3",
                  references=_PAPER, title="Continuous-model threshold of the learning rate")
    expr = out.expr
    out.check(r"$\gamma$ vanishes at $\eta_{\max}$", "sympy", prove_zero(g.subs(S.eta, expr)))
    out.check(r"$\gamma$ decreases in $\eta$ (so $\eta < \eta_{\max} \iff \gamma > 0$ for "
              r"$K_{s} \ell > 0$)", "sympy",
              prove_equal(sp.diff(g, S.eta), -S.K_stale * S.ell))
    return out


@derivation("discrete.mean_lag_max_refresh_interval")
def _mean_lag_k_max() -> Derived:
    bound = get("oscillator.published_threshold").expr        # (1 - mu)/(eta K): lag at gamma = 0
    lag = get("discrete.refresh_effective_lag").expr           # (k - 1)/2
    kk = sp.Symbol("kappa_k", positive=True)
    (k_edge,) = sp.solve(sp.Eq(lag.subs(S.k_ref, kk), bound), kk)
    display = sp.ceiling(2 * ((1 - S.mu) / (S.eta * S.K)))
    out = Derived("discrete.mean_lag_max_refresh_interval", display,
                  (S.mu, S.eta, S.K), r"k_{\max}",
                  r"Largest integer refresh interval with positive L3 damping at the effective lag "
                  r"$\bar{\ell} = (k - 1)/2$, all stiffness stale: the largest $k$ with "
                  r"$(k - 1)/2 < (1 - \mu)/(\eta K)$.",
                  units="steps", assumptions="L3 approximation; all stiffness stale", level="L3",
                  title="Largest refresh interval of the continuous model with the mean lag")
    expr = out.expr
    out.check(r"the edge $k$ with $(k - 1)/2 = (1 - \mu)/(\eta K)$ is $2 (1 - \mu)/(\eta K) + 1$",
              "sympy", prove_zero(k_edge - 2 * bound - 1))
    out.check(r"it is the largest integer strictly below the edge: "
              r"$\lceil 2 (1 - \mu)/(\eta K) + 1 \rceil - 1 = \lceil 2 (1 - \mu)/(\eta K) \rceil$",
              "sympy", prove_zero(sp.ceiling(k_edge) - 1 - expr))
    ok = True
    for mv, av in ((0, sp.Rational(1, 100)), (sp.Rational(1, 2), sp.Rational(3, 100)),
                   (sp.Rational(9, 10), sp.Rational(7, 1000)), (sp.Rational(1, 2), sp.Rational(1, 7))):
        kv = expr.subs({S.mu: mv, S.eta: av, S.K: 1})
        g = get("oscillator.damping").expr.subs({S.mu: mv, S.eta: av, S.K_stale: 1})
        ok &= (kv.is_integer and g.subs(S.ell, lag.subs(S.k_ref, kv)) > 0
               and g.subs(S.ell, lag.subs(S.k_ref, kv + 1)) <= 0)
    out.check(r"$k_{\max}$ is an integer with damping $> 0$ at $k_{\max}$ and $\le 0$ at "
              r"$k_{\max} + 1$ (4 exact rational points, including the equality case where "
              r"$(1 - \mu)/(\eta K)$ is an integer)", "numeric", ok)
    return out


def continuous_lag(lag_model, refresh_interval=1, delay=None) -> float:
    r"""The one lag convention of the L3 model: :math:`(k-1)/2` for a refresh interval k
    (derived in ``discrete.refresh_effective_lag``), d for a constant delay d (steps)."""
    if lag_model == "refresh":
        return float(get("discrete.refresh_effective_lag").numeric(refresh_interval))
    return float(delay)





def _continuous_max_learning_rate(mu, lag, stiffness, phi):
    """Largest learning rate with positive L3 damping, gamma = 1 - mu - eta K_s lag > 0
    (solved from ``oscillator.damping``); inf when the stale stiffness does not erode it."""
    k_stale = (1 - phi) * stiffness
    if lag == 0 or k_stale <= 0:
        return math.inf
    return float(get("discrete.continuous_threshold_learning_rate").numeric(mu, k_stale, lag))


def published_k_max(momentum, learning_rate, stiffness) -> int:
    """The published rule's largest refresh interval: the largest integer k with
    eta K k < 1 - mu (strict), from ``oscillator.published_threshold`` (1 - mu)/(eta K)."""
    bound = float(get("oscillator.published_threshold").numeric(momentum, learning_rate, stiffness))
    return int(math.ceil(bound) - 1)
