r"""The refresh-window monodromy of the stale surrogate, its Jury thresholds and critical damping,
the per-step map with a fresh/stale split, and their numerics (L2, lag model ``refresh``)."""

from __future__ import annotations

import math

import numpy as np
from grpo_theory.theory.lazy_scipy import brentq
import sympy as sp

from grpo_theory.theory import symbols as S
from grpo_theory.theory.derived import Derived, derivation, get, prove_equal, prove_zero, record_numeric
from grpo_theory.theory.discrete._shared import _ETA_K, _PAPER, _STALE, _i, _j, _num, _stiffness, _tex
from grpo_theory.theory.printing import sci as _sci
from grpo_theory.validate import ParameterError, check_finite_array, check_real


# ----------------------------------------------------------------------------------
# Symbolic derivations: refresh, stale surrogate
# ----------------------------------------------------------------------------------

def _drop_mu_one(expr):
    """Replace sympy's Piecewise of a geometric sum by its mu != 1 branch (mu < 1 here)."""
    def pick(pw):
        for val, cond in pw.args:
            if cond == sp.true:
                return val
        return pw.args[-1][0]
    return expr.replace(lambda e: isinstance(e, sp.Piecewise), pick)


def _geometric_sums(k=S.k_ref):
    mu = S.mu
    q = mu**k
    S1 = mu * (1 - q) / (1 - mu)
    S2 = (k - S1) / (1 - mu)
    return q, S1, S2


_S1_SYM = S.S_1


def _sums_where(with_s2=False, defined_in="discrete.refresh_monodromy"):
    """The geometric sums of a window as named sub-expressions of a displayed form, defined
    under the monodromy (``defined_in=""`` there) and referred to elsewhere."""
    _, S1, _ = _geometric_sums()
    where = [(S.S_1, S1, defined_in)]
    if with_s2:
        where.append((S.S_2, (S.k_ref - S.S_1) / (1 - S.mu), defined_in))
    return where


def _closed_form_window(k=S.k_ref, a=S.a):
    """The closed form of the brief: M(k) on (x, v), stale surrogate."""
    mu = S.mu
    q, S1, S2 = _geometric_sums(k)
    return sp.Matrix([[1 - a * S2, S1], [-a * (1 - q) / (1 - mu), q]])


def _step_power_closed_form(j):
    """Closed form of the j-th power of the frozen-force step on (x, v, x_s)."""
    mu, a = S.mu, S.a
    q, S1, S2 = _geometric_sums(j)
    return sp.Matrix([[1, S1, -a * S2], [0, q, -a * (1 - q) / (1 - mu)], [0, 0, 1]])


def _stale_step():
    """One step on (x, v, x_s) with the force frozen at the window start x_s."""
    mu, a = S.mu, S.a
    return sp.Matrix([[1, mu, -a], [0, mu, -a], [0, 0, 1]])


_EMBED = sp.Matrix([[1, 0], [0, 1], [1, 0]])      # window start: x_s <- x
_PROJECT = sp.Matrix([[1, 0, 0], [0, 1, 0]])


def _stiffness_sum(k=S.k_ref):
    """(1 - mu)^2 S2 = k(1 - mu) - mu(1 - mu^k): the a-coefficient of the window map, one fraction."""
    mu = S.mu
    return k * (1 - mu) - mu * (1 - mu**k)


def _readable_window():
    """The displayed monodromy: the closed form with S1 and S2 written out, each entry one fraction."""
    mu, a, k = S.mu, S.a, S.k_ref
    q = mu**k
    return sp.ImmutableMatrix([[1 - a * _stiffness_sum() / (1 - mu)**2, mu * (1 - q) / (1 - mu)],
                               [-a * (1 - q) / (1 - mu), q]])


@derivation("discrete.refresh_monodromy")
def _refresh_monodromy() -> Derived:
    mu, a, k = S.mu, S.a, S.k_ref
    x0, v0 = S.x0, S.v0
    # Derivation by summation: v_j = mu^j v_0 - a x_0 sum_{i<j} mu^i, x_k = x_0 + sum_{j<=k} v_j.
    vj = mu**_j * v0 - a * x0 * _drop_mu_one(sp.summation(mu**_i, (_i, 0, _j - 1)))
    xk = x0 + _drop_mu_one(sp.summation(sp.expand(vj), (_j, 1, k)))
    vk = vj.subs(_j, k)
    derived = sp.Matrix([[sp.diff(xk, x0), sp.diff(xk, v0)], [sp.diff(vk, x0), sp.diff(vk, v0)]])
    out = Derived(
        "discrete.refresh_monodromy", _readable_window(), (S.a, S.mu, S.k_ref), "M",
        r"The linear map of the deviation and velocity $(x, v)$ over one refresh window of the "
        r"heavy-ball update, stale surrogate: $(x, v)$ at the next window start is $M (x, v)$ at "
        r"this one.",
        units="dimensionless",
        assumptions=_STALE + r"; $a = \eta K$; $\mu \in [0, 1)$; $k \ge 1$ steps per window",
        level="L2", references=_PAPER + ("polyak1964",), title="Monodromy of a refresh window")
    expr = out.expr
    out.step(r"the velocity after $j$ steps of the window, the force frozen at $x_{0}$ "
             r"(a geometric sum)", vj, "v_{j}")
    out.step(r"the sum of the window's velocities", xk, "x_{k}")
    out.step(r"the derivatives of $(x_{k}, v_{k})$ in $(x_{0}, v_{0})$", sp.ImmutableMatrix(derived), "M")
    out.show(sp.ImmutableMatrix([[1 - S.a * S.S_2, S.S_1],
                                 [-S.a * (1 - S.mu**S.k_ref) / (1 - S.mu), S.mu**S.k_ref]]),
             _sums_where(with_s2=True, defined_in=""))
    closed = sp.Matrix(expr)
    out.check(r"the summed geometric series equal the displayed closed form (entry by entry)",
              "sympy", all(prove_zero(derived[r, c] - closed[r, c]) for r in range(2)
                           for c in range(2)))
    # Independent proof by induction on k: C(0) = I and step * C(j) = C(j+1).
    C = _step_power_closed_form
    out.check(r"induction base: the closed-form $j$-th power of the step on "
              r"$(x, v, x_{s})$ is the identity at $j = 0$", "sympy",
              C(sp.Integer(0)) == sp.eye(3))
    diff = (_stale_step() * C(_j) - C(_j + 1)).applyfunc(
        lambda e: sp.simplify(sp.expand_power_exp(sp.expand(e))))
    out.check(r"induction step: one more step applied to the closed-form $j$-th power gives the "
              r"$(j+1)$-th, for symbolic $j$", "sympy", all(prove_zero(e) for e in diff))
    out.check(r"the $k$-th power, started with $x_{s} = x$ and read off at $(x, v)$, is $M$",
              "sympy", prove_zero(sp.simplify(_PROJECT * C(k) * _EMBED - closed).norm()))
    ok = True
    for kk in range(1, 7):
        explicit = _PROJECT * _stale_step()**kk * _EMBED
        ok &= all(prove_zero(sp.cancel(e)) for e in (explicit - closed.subs(k, kk)))
    out.check(r"equals the explicit $k$-fold matrix product", "sympy", ok, cases=r"$k = 1, \dots, 6$")
    hb = sp.Matrix([[1 - a, mu], [-a, mu]])
    out.check(r"$k = 1$ is the on-policy heavy-ball map", "sympy",
              all(prove_zero(sp.cancel(e)) for e in (closed.subs(k, 1) - hb)))
    return out


def _simplified_trace():
    return sp.simplify(get("discrete.refresh_monodromy").expr.trace())


def _simplified_det():
    return sp.simplify(get("discrete.refresh_monodromy").expr.det())


@derivation("discrete.refresh_trace")
def _refresh_trace() -> Derived:
    derived = _simplified_trace()
    mu, q = S.mu, S.mu**S.k_ref
    display = 1 + q - S.a * _stiffness_sum() / (1 - mu)**2
    out = Derived("discrete.refresh_trace", display, (S.a, S.mu, S.k_ref), r"\operatorname{tr} M",
                  r"Trace of the refresh monodromy (stale surrogate).",
                  units="dimensionless", assumptions=_STALE, level="L2", title="Trace of the monodromy")
    tr = out.expr
    q, S1, S2 = _geometric_sums()
    out.step(r"the trace of $M$, simplified", derived, r"\operatorname{tr} M")
    out.show(1 + S.mu**S.k_ref - S.a * S.S_2, _sums_where(with_s2=True))
    out.check(r"it is the trace of the monodromy matrix", "sympy",
              prove_equal(tr, derived), f"derived form ${_tex(derived)}$")
    out.check(r"$\operatorname{tr} M$ is affine in $a$", "sympy",
              prove_equal(tr, 1 + q - S.a * S2) and sp.diff(tr, S.a, 2) == 0)
    return out


@derivation("discrete.refresh_determinant")
def _refresh_det() -> Derived:
    derived = _simplified_det()
    mu, k, q = S.mu, S.k_ref, S.mu**S.k_ref
    display = q + S.a * (mu * (1 - q) - k * q * (1 - mu)) / (1 - mu)**2
    out = Derived("discrete.refresh_determinant", display, (S.a, S.mu, S.k_ref), r"\det M",
                  r"Determinant of the refresh monodromy (stale surrogate).",
                  units="dimensionless", assumptions=_STALE, level="L2",
                  title="Determinant of the monodromy")
    det = out.expr
    q, S1, S2 = _geometric_sums()
    out.step(r"the determinant of $M$, simplified", derived, r"\det M")
    out.show(S.mu**S.k_ref + S.a * (S.S_1 - S.k_ref * S.mu**S.k_ref) / (1 - S.mu), _sums_where())
    out.check(r"it is the determinant of the monodromy matrix", "sympy",
              prove_equal(det, derived), f"derived form ${_tex(derived)}$")
    out.check(r"$\det M$ is affine in $a$", "sympy",
              prove_equal(det, q + S.a * (S1 - S.k_ref * q) / (1 - S.mu))
              and prove_zero(sp.diff(det, S.a, 2)))
    # S1 - k q = sum_{j=1}^{k} (mu^j - mu^k) >= 0: det grows with a, det >= q > -1
    diff = _drop_mu_one(sp.summation(S.mu**_j - S.mu**S.k_ref, (_j, 1, S.k_ref)))
    out.check(r"$S_1 - k \mu^{k} = \sum_{j=1}^{k} (\mu^{j} - \mu^{k}) \ge 0$, so "
              r"$\det M \ge \mu^{k} \ge 0 > -1$", "sympy",
              prove_equal(diff, S1 - S.k_ref * q))
    return out


@derivation("discrete.refresh_characteristic_polynomial")
def _refresh_charpoly() -> Derived:
    tr = get("discrete.refresh_trace").expr
    det = get("discrete.refresh_determinant").expr
    lam, mu, k, q = S.lam, S.mu, S.k_ref, S.mu**S.k_ref
    # grouped in a: its value (lam - 1)(lam - mu^k) at a = 0 plus the term linear in a
    display = ((lam - 1) * (lam - q)
               + S.a * (k * (1 - mu) * (lam - q) - mu * (1 - q) * (lam - 1)) / (1 - mu)**2)
    out = Derived("discrete.refresh_characteristic_polynomial", display,
                  (S.lam, S.a, S.mu, S.k_ref), r"P(\lambda)",
                  r"Characteristic polynomial $\lambda^{2} - \operatorname{tr} M\,\lambda + \det M$ "
                  r"of the refresh monodromy (stale surrogate), grouped in $a$: its value "
                  r"$(\lambda - 1)(\lambda - \mu^{k})$ at $a = 0$ plus the term linear in $a$.",
                  units="dimensionless", assumptions=_STALE, level="L2",
                  references=("jury1964",), title="Characteristic polynomial of the monodromy")
    expr = out.expr
    out.show((lam - 1) * (lam - q) + S.a * (k * (lam - q) - S.S_1 * (lam - 1)) / (1 - mu),
             _sums_where())
    M = get("discrete.refresh_monodromy").expr
    out.step(r"the trace and the determinant of $M$ inserted", lam**2 - tr * lam + det, r"P(\lambda)")
    out.check(r"it equals $\lambda^{2} - \operatorname{tr} M\,\lambda + \det M$",
              "sympy", prove_equal(expr, lam**2 - tr * lam + det))
    out.check(r"$P(\lambda) = \det(\lambda I - M)$", "sympy",
              prove_zero((S.lam * sp.eye(2) - M).det() - expr))
    jury1 = sp.simplify(expr.subs(S.lam, 1))
    out.check(r"Jury: $P(1) = 1 - \operatorname{tr} M + \det M = a k (1 - \mu^{k})/(1 - \mu) > 0$, "
              r"so no eigenvalue at $+1$", "sympy",
              prove_equal(jury1, S.a * S.k_ref * (1 - q) / (1 - S.mu)),
              f"$P(1) = {_tex(sp.factor(jury1))}$")
    return out


@derivation("discrete.refresh_flip_threshold")
def _refresh_flip() -> Derived:
    P = get("discrete.refresh_characteristic_polynomial").expr
    jury = sp.expand(P.subs(S.lam, -1))            # 1 + tr + det, affine in a
    (solved,) = sp.solve(jury, S.a)
    solved = sp.factor_terms(sp.simplify(solved))
    mu, k, q = S.mu, S.k_ref, S.mu**S.k_ref
    display = 2 * (1 - mu)**2 * (1 + q) / (k * (1 - mu) * (1 + q) - 2 * mu * (1 - q))
    out = Derived("discrete.refresh_flip_threshold", display, (S.mu, S.k_ref),
                  r"a_{\mathrm{flip}}",
                  r"Exact threshold of the step stiffness $a = \eta K$ where a real eigenvalue of the "
                  r"refresh monodromy crosses $-1$ (period doubling, the flip boundary; the first "
                  r"of Jury's conditions that fails).",
                  units=_ETA_K, assumptions=_STALE, level="L2", references=_PAPER + ("jury1964",),
                  title="Flip threshold of a refresh window")
    a_flip = out.expr
    out.step(r"$P(\lambda)$ at $\lambda = -1$, expanded: affine in $a$", jury, "P(-1)")
    out.step(r"the root in $a$ of $P(-1) = 0$", solved, r"a_{\mathrm{flip}}")
    out.show(2 * (1 - mu) * (1 + q) / (k * (1 + q) - 2 * _S1_SYM), _sums_where())
    out.check(r"it is the root in $a$ of $P(-1) = 0$", "sympy",
              prove_equal(a_flip, solved), f"solved form ${_tex(solved)}$")
    out.check(r"$P(-1) = 1 + \operatorname{tr} M + \det M$ vanishes at $a_{\mathrm{flip}}$", "sympy",
              prove_zero(jury.subs(S.a, a_flip)))
    q, S1, _ = _geometric_sums()
    slope = sp.diff(jury, S.a)
    pairs = _drop_mu_one(sp.summation((1 - S.mu**_i) * (1 - S.mu**(S.k_ref - _i)), (_i, 0, S.k_ref)))
    out.check(r"$1 + \operatorname{tr} M + \det M$ is affine and decreasing in $a$: its slope is "
              r"$-(k (1 + \mu^{k}) - 2 S_1)/(1 - \mu)$ with $k (1 + \mu^{k}) - 2 S_1 = "
              r"\sum_{j=0}^{k} (1 - \mu^{j})(1 - \mu^{k-j}) + (1 - \mu^{k}) > 0$ (each term "
              r"$\ge 0$, and $1 - \mu^{k} > 0$ for $\mu \in [0, 1)$)", "sympy",
              sp.diff(jury, S.a, 2) == 0
              and prove_zero(slope + (S.k_ref * (1 + q) - 2 * S1) / (1 - S.mu))
              and prove_zero(pairs + 1 - q - (S.k_ref * (1 + q) - 2 * S1)))
    out.check(r"$\mu = 0$: $a_{\mathrm{flip}} = 2/k$, i.e. stable iff $\eta K k < 2$", "sympy",
              prove_equal(a_flip.subs(S.mu, 0), 2 / S.k_ref))
    out.check(r"$k = 1$: $a_{\mathrm{flip}} = 2 (1 + \mu)$ (on-policy heavy ball)", "sympy",
              prove_equal(a_flip.subs(S.k_ref, 1), 2 * (1 + S.mu)))
    kk = sp.Symbol("kappa_k", positive=True)
    q0 = sp.limit(sp.simplify(a_flip * S.k_ref).subs(S.mu**S.k_ref, 0).subs(S.k_ref, kk), kk, sp.oo)
    out.check(r"$k \to \infty$: $k a_{\mathrm{flip}} \to 2 (1 - \mu)$ (a factor 2 above the "
              r"published $1 - \mu$)", "sympy",
              prove_equal(q0, 2 * (1 - S.mu)), rf"limit ${_tex(q0)}$ (with $\mu^{{k}} \to 0$)")
    return out


@derivation("discrete.refresh_complex_threshold")
def _refresh_complex() -> Derived:
    det = get("discrete.refresh_determinant").expr
    (solved,) = sp.solve(sp.Eq(det, 1), S.a)
    solved = sp.factor_terms(sp.simplify(solved))
    mu, k, q = S.mu, S.k_ref, S.mu**S.k_ref
    display = (1 - mu)**2 * (1 - q) / (mu * (1 - q) - k * q * (1 - mu))
    out = Derived("discrete.refresh_complex_threshold", display, (S.mu, S.k_ref),
                  r"a_{\mathrm{complex}}",
                  r"Exact threshold of the step stiffness $a = \eta K$ where a complex pair of "
                  r"eigenvalues of the refresh monodromy reaches the unit circle ($\det M = 1$; a "
                  r"Neimark--Sacker boundary of the linear map). "
                  r"Infinite for $\mu = 0$ or $k = 1$ ($\det M = \mu^{k} < 1$ there).", units=_ETA_K,
                  assumptions=_STALE + r"; $k \ge 2$ and $\mu > 0$", level="L2",
                  references=_PAPER + ("jury1964",),
                  title="Complex-pair threshold of a refresh window")
    a_cx = out.expr
    out.step(r"the determinant of $M$", det, r"\det M")
    out.step(r"the root in $a$ of $\det M = 1$", solved, r"a_{\mathrm{complex}}")
    out.show((1 - mu) * (1 - q) / (_S1_SYM - k * q), _sums_where())
    out.check(r"it is the root in $a$ of $\det M = 1$", "sympy",
              prove_equal(a_cx, solved), f"solved form ${_tex(solved)}$")
    out.check(r"$\det M = 1$ at $a_{\mathrm{complex}}$", "sympy",
              prove_zero(sp.simplify(det.subs(S.a, a_cx) - 1)))
    out.check(r"$\mu = 0$ or $k = 1$: $\det M$ does not depend on $a$ (no complex boundary)", "sympy",
              prove_zero(sp.diff(det, S.a).subs(S.mu, 0))
              and prove_zero(sp.diff(det, S.a).subs(S.k_ref, 1)))
    kk = sp.Symbol("kappa_k", positive=True)
    lim = sp.limit(a_cx.subs(S.mu**S.k_ref, 0).subs(S.k_ref, kk), kk, sp.oo)
    out.check(r"$k \to \infty$: $a_{\mathrm{complex}} \to (1 - \mu)^{2}/\mu$ (a constant: the flip "
              r"boundary, about $2 (1 - \mu)/k$, binds for large $k$)", "sympy",
              prove_equal(lim, (1 - S.mu)**2 / S.mu))
    # at the boundary the pair is complex: tr^2 < 4 det = 4 -> |tr| < 2 (numeric spot grid)
    tr = get("discrete.refresh_trace").expr
    f_tr = sp.lambdify((S.a, S.mu, S.k_ref), tr)
    f_a = sp.lambdify((S.mu, S.k_ref), a_cx)
    f_flip = sp.lambdify((S.mu, S.k_ref), get("discrete.refresh_flip_threshold").expr)
    pts = [(m, kv) for m in (0.3, 0.5, 0.9, 0.99) for kv in (2, 3, 5, 10, 40)]
    worst = -math.inf
    for m, kv in pts:
        ac = f_a(m, kv)
        if ac < f_flip(m, kv):  # where it binds, the boundary pair is genuinely complex
            worst = max(worst, abs(f_tr(ac, m, kv)) - 2)
    out.check(r"where it binds ($a_{\mathrm{complex}} < a_{\mathrm{flip}}$) the boundary eigenvalues "
              r"are a complex pair ($|\operatorname{tr} M| < 2$)", "numeric", worst < 0,
              rf"{len(pts)} points $(\mu, k)$; largest $|\operatorname{{tr}} M| - 2$: {_sci(worst)}")
    return out


@derivation("discrete.refresh_critical_damping")
def _refresh_critical() -> Derived:
    tr = get("discrete.refresh_trace").expr
    det = get("discrete.refresh_determinant").expr
    disc = sp.expand(tr**2 - 4 * det)
    c2, c1, c0 = (disc.coeff(S.a, n) for n in (2, 1, 0))
    # generic quadratic c2 a^2 + c1 a + c0 (c2 = S2^2 > 0): the smaller root has the minus sign
    g2, g1, g0 = sp.symbols("g2 g1 g0")
    generic_root = (-g1 - sp.sqrt(g1**2 - 4 * g2 * g0)) / (2 * g2)
    G2, G1, G0 = sp.factor(c2), sp.factor(c1), sp.factor(c0)
    derived = generic_root.subs({g2: G2, g1: G1, g0: G0})
    # Displayed: the discriminant G1^2 - 4 G2 G0 is R^2 P^2 Q^2 with R = 4(1 - mu^k)/(1 - mu)^2,
    # P = sqrt(k(1 - mu)), Q = sqrt(mu(1 - mu^k)), and the root collapses to
    # (1 - mu)^2 (1 - mu^k)/(P + Q)^2 = (1 - mu)(1 - mu^k)/(sqrt(k) + sqrt(S1))^2.
    mu, k, q = S.mu, S.k_ref, S.mu**S.k_ref
    P, Q = sp.symbols("P Q", positive=True)
    R = 4 * (1 - q) / (1 - mu)**2
    in_pq = (1 - mu)**2 * (1 - q) / (P + Q)**2
    pq = {P: sp.sqrt(k * (1 - mu)), Q: sp.sqrt(mu * (1 - q))}
    def in_s1(s1, k_, mu_, q_):
        return (1 - mu_) * (1 - q_) / (sp.sqrt(k_) + sp.sqrt(s1))**2

    out = Derived("discrete.refresh_critical_damping", in_pq.subs(pq), (S.mu, S.k_ref),
                  r"a_{c}",
                  r"Exact discrete critical damping: the smaller root in $a = \eta K$ of "
                  r"$\operatorname{tr}(M)^{2} - 4 \det M = 0$, where the monodromy eigenvalues turn "
                  r"from real to complex; at $k = 1$ it is the heavy-ball value "
                  r"$(1 - \sqrt{\mu})^{2}$.", units=_ETA_K, assumptions=_STALE,
                  level="L2", references=_PAPER + ("polyak1964",),
                  title="Critical damping of a refresh window")
    chosen = out.expr
    out.step(r"with the trace and the determinant of $M$: a quadratic in $a$",
             G2 * S.a**2 + G1 * S.a + G0, r"\operatorname{tr}(M)^{2} - 4 \det M")
    out.step(r"its smaller root, the quadratic being $g_{2} a^{2} + g_{1} a + g_{0}$ with $g_{2} > 0$",
             generic_root, r"a_{c}")
    out.step(r"the discriminant of the quadratic, the square of a product of positive square roots",
             R**2 * pq[P]**2 * pq[Q]**2, r"g_{1}^{2} - 4 g_{2} g_{0}")
    out.step(r"the root with this square root, simplified as a rational function of $\mu$ and the "
             r"two square roots", in_pq.subs(pq), r"a_{c}")
    # the S_1 form: with u = 1 - mu, k = P^2/u, S_1 = Q^2/u and 1 - mu^k = Q^2/mu it is a
    # rational identity in P, Q, u (P, Q, u > 0 for 0 < mu < 1)
    u = sp.Symbol("u", positive=True)
    lhs = in_s1(Q**2 / u, P**2 / u, 1 - u, 1 - Q**2 / (1 - u))
    rhs = (u**2 * (Q**2 / (1 - u)) / (P + Q)**2)
    out.show(in_s1(_S1_SYM, k, mu, q), _sums_where(),
             proven=(prove_equal(lhs, rhs) and prove_equal(chosen, in_pq.subs(pq))
                     and prove_equal(in_pq.subs({mu: 1 - u, q: 1 - Q**2 / (1 - u)}), rhs)),
             how=r"a rational identity once $\sqrt{k (1 - \mu)}$ and $\sqrt{\mu (1 - \mu^{k})}$ "
                 r"are taken as independent positive quantities, for $0 < \mu < 1$; $\mu = 0$ "
                 r"is checked below")
    out.check(r"$\operatorname{tr}^{2} - 4 \det$ is quadratic in $a$ with leading coefficient "
              r"$S_{2}^{2} > 0$", "sympy",
              sp.degree(disc, S.a) == 2
              and prove_equal(c2, get("discrete.refresh_trace").expr.diff(S.a)**2))
    out.check(r"its smaller root is the quadratic formula with the minus sign (the leading "
              r"coefficient is positive)", "sympy",
              prove_zero(sp.expand(g2 * generic_root**2 + g1 * generic_root + g0)))
    out.check(r"the discriminant of that quadratic in $a$ is "
              r"$16 k \mu (1 - \mu^{k})^{3}/(1 - \mu)^{3}$, the square of a product of positive "
              r"square roots, so the root has no nested square root", "sympy",
              prove_zero(G1**2 - 4 * G2 * G0 - R**2 * pq[P]**2 * pq[Q]**2)
              and prove_equal(R**2 * pq[P]**2 * pq[Q]**2,
                              16 * k * mu * (1 - q)**3 / (1 - mu)**3))

    def eliminate(e):      # k = P^2/(1 - mu), mu^k = 1 - Q^2/mu: rational in P, Q, mu
        e = sp.powsimp(sp.expand_power_exp(e)).subs(q, 1 - Q**2 / mu)
        return e.subs(k, P**2 / (1 - mu))

    identity = eliminate((-G1 - R * P * Q) / (2 * G2) - in_pq)
    out.check(r"it equals that root: a rational identity in $\mu$ and the two square roots "
              r"$\sqrt{k (1 - \mu)}$ and $\sqrt{\mu (1 - \mu^{k})}$ once $k$ and $\mu^{k}$ are "
              r"written with them ($\mu > 0$; $\mu = 0$ below)", "sympy",
              identity.free_symbols <= {P, Q, mu} and prove_zero(sp.cancel(sp.together(identity)))
              and prove_zero(chosen - in_pq.subs(pq)),
              f"derived form ${_tex(derived)}$")
    out.check(r"$\mu = 0$: double root $a_{c} = 1/k$ (the eigenvalues $1 - a k$ and $0$ stay real)",
              "sympy", prove_equal(chosen.subs(S.mu, 0), 1 / S.k_ref))
    out.check(r"$k = 1$: $a_{c} = (1 - \sqrt{\mu})^{2}$, the critical damping of on-policy heavy "
              r"ball", "sympy", prove_equal(chosen.subs(S.k_ref, 1), (1 - sp.sqrt(S.mu))**2))
    import mpmath

    f_c = sp.lambdify((S.mu, S.k_ref), chosen, modules="mpmath")
    f_derived = sp.lambdify((S.mu, S.k_ref), derived, modules="mpmath")
    f_terms = sp.lambdify((S.a, S.mu, S.k_ref), [disc, c2 * S.a**2, c1 * S.a, c0], modules="mpmath")
    errors, agree = [], []
    with mpmath.workdps(50):
        for m in ("0.3", "0.5", "0.9", "0.99"):
            for kv in (1, 2, 3, 7, 40):
                ac = f_c(mpmath.mpf(m), kv)
                total, *terms = f_terms(ac, mpmath.mpf(m), kv)
                errors.append(abs(total) / max(abs(t_) for t_ in terms))
                ad = f_derived(mpmath.mpf(m), kv)
                agree.append(abs(ac - ad) / abs(ad))
    record_numeric(out, r"$\operatorname{tr}^{2} - 4 \det = 0$ at $a_{c}$, relative to its terms "
                   r"(20 points $(\mu, k)$)", errors, digits=30, precision=50)
    record_numeric(out, r"cross-check: the displayed form and the quadratic-formula root "
                   r"agree at the same 20 points", agree, digits=30, precision=50)
    return out


# ----------------------------------------------------------------------------------
# Symbolic derivations: refresh with fresh stiffness, delay
# ----------------------------------------------------------------------------------

def _general_step():
    """Per-step linear map on (x, v, x_s) with K_f on the current iterate, K_s frozen."""
    mu, eta, Kf, Ks = S.mu, S.eta, S.K_fresh, S.K_stale
    return sp.Matrix([[1 - eta * Kf, mu, -eta * Ks], [-eta * Kf, mu, -eta * Ks], [0, 0, 1]])


@derivation("discrete.refresh_step_matrix")
def _refresh_step() -> Derived:
    expr = sp.ImmutableMatrix(_general_step())
    out = Derived("discrete.refresh_step_matrix", expr, (S.mu, S.eta, S.K_fresh, S.K_stale), "J",
                  r"Linear map of $(x, v, x_{s})$ over one heavy-ball step inside a refresh window, "
                  r"$K_{f}$ acting on the current iterate and $K_{s}$ through the frozen sampling "
                  r"policy $x_{s}$; the window's monodromy is the $k$-th power of $J$, started with "
                  r"$x_{s} = x$ and read off at $(x, v)$.", units="dimensionless",
                  assumptions=r"$\mu \in [0, 1)$; $K = K_{f} + K_{s}$", level="L2",
                  references=("polyak1964",), title="The map of one step inside a refresh window")
    expr = out.expr
    A = sp.Matrix(expr)
    # v' = mu v - eta (K_f x + K_s x_s), x' = x + v'
    xs, vs, xss = sp.symbols("x v x_s")
    y = A * sp.Matrix([xs, vs, xss])
    vnew = S.mu * vs - S.eta * (S.K_fresh * xs + S.K_stale * xss)
    out.check(r"$J$ encodes $v' = \mu v - \eta (K_{f} x + K_{s} x_{s})$, $x' = x + v'$, "
              r"$x_{s}' = x_{s}$", "sympy",
              prove_zero(y[1] - vnew) and prove_zero(y[0] - xs - vnew) and y[2] == xss)
    stale = sp.ImmutableMatrix(get("discrete.refresh_monodromy").expr)
    ok = True
    for kk in (1, 2, 3):
        Mk = _PROJECT * A**kk * _EMBED
        ok &= all(prove_zero(sp.cancel(e)) for e in
                  (Mk.subs({S.K_fresh: 0, S.K_stale: S.a / S.eta}) - stale.subs(S.k_ref, kk)))
    out.check(r"$K_{f} = 0$: the window map built from $J$ equals the closed-form stale "
              r"monodromy $M$", "sympy", ok, cases=r"$k = 1, 2, 3$")
    hb = sp.Matrix([[1 - S.eta * S.K_fresh, S.mu], [-S.eta * S.K_fresh, S.mu]])
    ok = all(prove_zero(sp.expand(e)) for e in
             ((_PROJECT * A**3 * _EMBED).subs(S.K_stale, 0) - hb**3))
    out.check(r"$K_{s} = 0$ (fully fresh): the window map is the heavy-ball map to the $k$-th "
              r"power", "sympy", ok, cases=r"$k = 3$")
    return out


# ----------------------------------------------------------------------------------
# Numeric API (formulas lambdified from the derivations above)
# ----------------------------------------------------------------------------------

def refresh_thresholds(momentum, refresh_interval):
    """Exact stale-surrogate thresholds in eta K: ``(flip, complex, critical_damping)``.

    Vectorised over numpy arrays; ``refresh_interval`` may be a real number (the
    continuous-k extension used for root finding).  The complex threshold is
    ``inf`` where it does not exist (mu = 0 or k = 1).
    """
    mu = np.asarray(momentum, dtype=float)
    k = np.asarray(refresh_interval, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        flip = np.asarray(_num("discrete.refresh_flip_threshold")(mu, k), dtype=float)
        # numerical guard: the complex boundary exists only where sum_j (mu^j - mu^k) = S1 - k q
        # is positive (proven in discrete.refresh_determinant); near mu = 0 or k = 1 the
        # lambdified threshold is cancellation noise, so it is compared with S1 itself
        q = mu**k
        s1 = np.where(mu > 0, mu * (1 - q) / (1 - mu), 0.0)
        spread = s1 - k * q
        cx = np.asarray(_num("discrete.refresh_complex_threshold")(mu, k), dtype=float)
        cx = np.where(spread > 1e-12 * np.maximum(s1, 1e-300), cx, np.inf)
        crit = np.asarray(_num("discrete.refresh_critical_damping")(mu + 0j, k + 0j))
        crit = np.where(np.abs(crit.imag) < 1e-9 * np.maximum(1, np.abs(crit.real)), crit.real, np.nan)
    return flip, cx, crit


def _stale_eigs(a, mu, k):
    tr = _num("discrete.refresh_trace")(a, mu, k)
    det = _num("discrete.refresh_determinant")(a, mu, k)
    root = np.sqrt(np.asarray(tr * tr - 4 * det, dtype=complex))
    return (tr + root) / 2, (tr - root) / 2


def critical_momentum(eta_K, refresh_interval=1) -> float:
    r"""The exact critical momentum: the :math:`\mu` at which the stale window map's eigenvalues
    turn from real to complex at this :math:`\eta K` (root in :math:`\mu` of
    ``discrete.refresh_critical_damping`` :math:`= \eta K`; at :math:`k = 1` the heavy ball's
    :math:`(1-\sqrt{\mu})^2 = \eta K`)."""
    k = float(refresh_interval)
    f = lambda m: float(refresh_thresholds(m, k)[2]) - float(eta_K)  # noqa: E731
    lo, hi = 1e-9, 0.999999
    if not (f(lo) > 0 > f(hi)):
        raise ParameterError("eta_K", eta_K, f"between {refresh_thresholds(hi, k)[2]:.3g} and "
                             f"{refresh_thresholds(lo, k)[2]:.3g} (the critical damping's range "
                             f"over 0 < mu < 1 at k = {refresh_interval}): no critical momentum "
                             "outside it")
    return float(brentq(f, lo, hi, xtol=1e-14))


def window_discriminant(eta_K, momentum, refresh_interval=1) -> float:
    r""":math:`\operatorname{tr}^2 - 4\det` of the exact stale window map
    (``discrete.refresh_monodromy``): negative where the deviation oscillates."""
    M = monodromy(eta_K, momentum, refresh_interval, 1.0)
    return float((M[0, 0] + M[1, 1]) ** 2 - 4 * (M[0, 0] * M[1, 1] - M[0, 1] * M[1, 0]))


def step_matrix(learning_rate, momentum, stiffness, fresh_fraction=0.0):
    """The per-step 3x3 map on (x, v, x_s), lambdified from ``discrete.refresh_step_matrix``."""
    eta = np.asarray(learning_rate, dtype=float)
    K = np.asarray(stiffness, dtype=float)
    phi = np.asarray(fresh_fraction, dtype=float)
    A = _num("discrete.refresh_step_matrix")(momentum, eta, phi * K, (1 - phi) * K)
    return np.asarray(A, dtype=float)


def _per_step_maps(a, mu, phi):
    """The per-step maps on (x, v, x_s), one per element of the broadcast (a, phi): shape (n, 3, 3)."""
    af, as_ = (phi * a).ravel(), ((1 - phi) * a).ravel()
    A = np.zeros((af.size, 3, 3))
    A[:, 0, 0] = 1 - af
    A[:, 0, 1] = mu
    A[:, 0, 2] = -as_
    A[:, 1, 0] = -af
    A[:, 1, 1] = mu
    A[:, 1, 2] = -as_
    A[:, 2, 2] = 1
    return A


#: E embeds (x, v) as (x, v, x_s = x) at a refresh; P keeps (x, v): the window's M = P A^k E
_EMBED_NP = np.array([[1, 0], [0, 1], [1, 0]], dtype=float)


def _window_map(power):
    """P A^k E from A^k (any leading batch shape)."""
    return (power @ _EMBED_NP)[..., :2, :]


def _general_monodromy(a, mu, k, phi):
    """Vectorised P A^k E by repeated squaring with a per-element k (a, k, phi arrays)."""
    a, k, phi = np.broadcast_arrays(np.asarray(a, float), np.asarray(k, np.int64),
                                    np.asarray(phi, float))
    shape = a.shape
    A = _per_step_maps(a, mu, phi)
    R = np.broadcast_to(np.eye(3), A.shape).copy()
    kk = k.ravel().copy()
    while np.any(kk > 0):
        odd = (kk & 1).astype(bool)
        if odd.any():
            R[odd] = R[odd] @ A[odd]
        kk >>= 1
        if np.any(kk > 0):
            A = A @ A
    return _window_map(R).reshape(shape + (2, 2))


def monodromy(learning_rate, momentum, refresh_interval, stiffness, fresh_fraction=0.0):
    r"""The one-window monodromy matrix :math:`M` of :math:`(x, v)` (refresh lag model).

    ``fresh_fraction`` :math:`= K_f/K`.  For ``fresh_fraction = 0`` (all stale)
    each entry is lambdified from the closed form ``discrete.refresh_monodromy``;
    otherwise the product :math:`P A^k E` of the per-step map is taken numerically.
    Returns a ``(2, 2)`` array (dimensionless).
    """
    Kv, phi = _stiffness(stiffness, fresh_fraction)
    mu, k = float(momentum), int(refresh_interval)
    a = float(learning_rate) * Kv
    if phi == 0.0:
        return np.asarray(_num("discrete.refresh_monodromy")(a, mu, k), dtype=float)
    return _general_monodromy(a, mu, k, phi)


def _radius_2x2(M):
    tr = M[..., 0, 0] + M[..., 1, 1]
    det = M[..., 0, 0] * M[..., 1, 1] - M[..., 0, 1] * M[..., 1, 0]
    root = np.sqrt(np.asarray(tr * tr - 4 * det, dtype=complex))
    return np.maximum(np.abs((tr + root) / 2), np.abs((tr - root) / 2))


def spectral_radius(learning_rate, momentum, refresh_interval, stiffness, fresh_fraction=0.0):
    r"""Spectral radius of the refresh monodromy (per window); stable iff < 1.

    Vectorised: ``learning_rate``, ``refresh_interval`` and ``stiffness`` broadcast
    as numpy arrays (``refresh_interval`` integer >= 1); ``momentum`` a scalar.
    Stale surrogate: closed-form trace and determinant (lambdified); otherwise the
    numeric product of the per-step map.  Per-step growth factor = radius^(1/k).
    """
    eta = check_finite_array("learning_rate", learning_rate)
    Kv = check_finite_array("stiffness", stiffness)
    k = np.asarray(refresh_interval)
    mu = check_real("momentum", momentum, low=0, high=1, high_open=True)
    phi = check_real("fresh_fraction", fresh_fraction)
    if np.any(eta <= 0):
        raise ParameterError("learning_rate", float(eta[eta <= 0].ravel()[0]), "a real number > 0")
    if np.any(Kv <= 0):
        raise ParameterError("stiffness", float(Kv[Kv <= 0].ravel()[0]), "a real number > 0")
    kf = check_finite_array("refresh_interval", k)
    if np.any(kf < 1) or np.any(kf != np.round(kf)):
        bad = kf[(kf < 1) | (kf != np.round(kf))].ravel()[0]
        raise ParameterError("refresh_interval", bad, "an integer >= 1")
    a = eta * Kv
    if phi == 0.0:
        l1, l2 = _stale_eigs(a, mu, kf)
        return np.maximum(np.abs(l1), np.abs(l2))
    return _radius_2x2(_general_monodromy(a, mu, kf.astype(np.int64), phi))
