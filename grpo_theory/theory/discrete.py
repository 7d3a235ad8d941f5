r"""Level L2: the exact discrete linearisation at a fixed point and its stability.

Deviation :math:`x = z - z^*` (logits), heavy-ball momentum :math:`\mu\in[0,1)`,
learning rate :math:`\eta`, stiffness :math:`K = K_f + K_s` (:math:`K_f` acts on
the current iterate, :math:`K_s` through the sampling policy).  The update is

.. math::

    v_{t+1} = \mu v_t - \eta\,(K_f x_t + K_s x_{s(t)}),\qquad x_{t+1} = x_t + v_{t+1},

with :math:`s(t) = k\lfloor t/k\rfloor` (lag model ``refresh``, refresh interval
:math:`k`, the lag cycles :math:`0,\dots,k-1`) or :math:`s(t) = t-d` (lag model
``delay``).  Time is in optimizer steps.

Results (each a registered, verified derivation ``discrete.<name>``):

* ``refresh_monodromy`` — the one-window map of :math:`(x, v)` for the stale
  surrogate (:math:`K_f=0`, :math:`a=\eta K`),
  :math:`M=\begin{pmatrix}1-aS_2 & S_1\\ -a(1-\mu^k)/(1-\mu) & \mu^k\end{pmatrix}`,
  :math:`S_1=\mu(1-\mu^k)/(1-\mu)`, :math:`S_2=(k-S_1)/(1-\mu)`; derived by summing
  the geometric series with sympy and proven by induction on :math:`k`.
  ``refresh_trace`` :math:`=1+\mu^k-aS_2`, ``refresh_determinant``
  :math:`=\mu^k+a(S_1-k\mu^k)/(1-\mu)`.
* Jury (Schur–Cohn) conditions of :math:`\lambda^2-\operatorname{tr}M\,\lambda+\det M`:
  :math:`1-\operatorname{tr}+\det = ak(1-\mu^k)/(1-\mu) > 0` always; the ``flip``
  boundary (eigenvalue :math:`-1`) and the ``complex`` boundary (a pair on the
  unit circle, :math:`\det M = 1`) are affine in :math:`a` and give the exact
  learning-rate thresholds; the smaller one binds.
* ``refresh_critical_damping`` — the exact real-to-complex transition,
  :math:`(1-\mu)(1-\mu^k)/(\sqrt{k}+\sqrt{S_1})^2` (the heavy-ball
  :math:`(1-\sqrt{\mu})^2` at :math:`k=1`).
* The published first-order threshold :math:`\eta K k < 1-\mu` is off by a
  factor 2 at :math:`\mu=0` (exact: :math:`\eta K k < 2`), and by a factor 2 for
  every :math:`\mu` as :math:`k\to\infty` where the flip boundary binds; the
  first-order model with the *mean* lag :math:`(k-1)/2` is asymptotically exact.
* ``delay_characteristic_polynomial`` and its Schur–Cohn boundaries for
  :math:`d\in\{0,1,2\}`.
* ``refresh_slow_eigenvalue`` — the continuous limit: the slow eigenvalue is
  :math:`1 - ak/(1-\mu) + O(a^2)` per window, the L3 root :math:`-\kappa_s/\gamma` per step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import sympy as sp
from scipy.optimize import brentq

from grpo_theory.theory import symbols as S
from grpo_theory.theory.derived import Derived, derivation, get, prove_equal, prove_zero, record_numeric
from grpo_theory.results import Result
from grpo_theory.validate import ParameterError, check_choice, check_finite_array, check_int, check_real

__all__ = [
    "StabilityResult",
    "PhaseDiagram",
    "monodromy",
    "spectral_radius",
    "stability",
    "phase_diagram",
    "refresh_thresholds",
    "max_stable_refresh_interval",
    "max_stable_learning_rate",
    "delay_spectral_radius",
    "threshold_error_table",
    "refresh_interval_error_table",
    "step_matrix",
]

_PAPER = ("predictable_grpo",)
_STALE = r"stale surrogate ($K_{f} = 0$, all stiffness acts through the sampling policy)"
_ETA_K = r"dimensionless (in $\eta K$)"


def _tex(expr) -> str:
    """LaTeX of a sympy expression with the project's notation (for the texts of checks)."""
    return sp.latex(expr, symbol_names=S.LATEX_NAMES)


def _sci(x) -> str:
    """A small number for a detail, in math: ``3.2 \\times 10^{-5}``."""
    x = float(x)
    if x == 0 or not math.isfinite(x):
        return f"${x:g}$".replace("inf", "\\infty")
    m, e = f"{x:.2e}".split("e")
    return f"${m} \\times 10^{{{int(e)}}}$" if abs(int(e)) > 2 else f"${x:.3g}$"


_i = sp.Symbol("i", integer=True, nonnegative=True)
_j = sp.Symbol("j", integer=True, positive=True)


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


_S1_SYM = sp.Symbol("S_1", positive=True)


def _in_s1(form):
    """A form written with the geometric sum S_1 = mu (1 - mu^k)/(1 - mu): its LaTeX (with the
    definition of S_1) for a description, and the form with S_1 substituted, to be proven equal
    to the record's expression."""
    _, S1, _ = _geometric_sums()
    return (rf"With $S_1 = {_tex(S1)}$ it is ${_tex(form)}$", form.subs(_S1_SYM, S1))


def _check_s1_form(out, expanded):
    out.check(r"the form with $S_1$ in the description equals the displayed one", "sympy",
              prove_equal(expanded, out.expr))


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
        r"One-refresh-window monodromy matrix of the deviation $(x, v)$, stale surrogate: "
        r"$(x, v)$ at the next window start is $M (x, v)$ at this one. With the geometric sums "
        r"$S_1 = \mu (1 - \mu^{k})/(1 - \mu)$ and $S_2 = (k - S_1)/(1 - \mu)$ its first row is "
        r"$1 - a S_2$, $S_1$ and its second row $-a (1 - \mu^{k})/(1 - \mu)$, $\mu^{k}$.",
        units="dimensionless",
        assumptions=_STALE + r"; $a = \eta K$; $\mu \in [0, 1)$; $k \ge 1$ steps per window",
        level="L2", references=_PAPER)
    expr = out.expr
    closed = sp.Matrix(expr)
    out.check(r"the summed geometric series equal the displayed closed form (entry by entry)",
              "sympy", all(prove_zero(sp.simplify(derived[r, c] - closed[r, c])) for r in range(2)
                           for c in range(2)))
    out.check(r"the displayed form equals the closed form with $S_1$, $S_2$ and $\mu^{k}$", "sympy",
              all(prove_zero(e) for e in (closed - _closed_form_window())))
    # Independent proof by induction on k: C(0) = I and step * C(j) = C(j+1).
    C = _step_power_closed_form
    out.check(r"induction base: the closed-form $j$-th power $C(j)$ of the step on "
              r"$(x, v, x_{s})$ is the identity at $j = 0$", "sympy",
              C(sp.Integer(0)) == sp.eye(3))
    diff = (_stale_step() * C(_j) - C(_j + 1)).applyfunc(
        lambda e: sp.simplify(sp.expand_power_exp(sp.expand(e))))
    out.check(r"induction step: one more step applied to $C(j)$ gives $C(j+1)$, for symbolic $j$",
              "sympy", all(prove_zero(e) for e in diff))
    out.check(r"$M(k) = P\,C(k)\,E$ with $E$ setting $x_{s} \leftarrow x$ at the window start",
              "sympy", prove_zero(sp.simplify(_PROJECT * C(k) * _EMBED - closed).norm()))
    ok = True
    for kk in range(1, 7):
        explicit = _PROJECT * _stale_step()**kk * _EMBED
        ok &= all(prove_zero(sp.cancel(e)) for e in (explicit - closed.subs(k, kk)))
    out.check(r"equals the explicit $k$-fold matrix product for $k = 1, \dots, 6$", "sympy", ok)
    hb = sp.Matrix([[1 - a, mu], [-a, mu]])
    out.check(r"$k = 1$ is the on-policy heavy-ball map", "sympy",
              all(prove_zero(sp.cancel(e)) for e in (closed.subs(k, 1) - hb)))
    return out


def _trace_det():
    M = get("discrete.refresh_monodromy").expr
    return sp.simplify(M.trace()), sp.simplify(M.det())


@derivation("discrete.refresh_trace")
def _refresh_trace() -> Derived:
    derived, _ = _trace_det()
    mu, q = S.mu, S.mu**S.k_ref
    display = 1 + q - S.a * _stiffness_sum() / (1 - mu)**2
    out = Derived("discrete.refresh_trace", display, (S.a, S.mu, S.k_ref), r"\operatorname{tr} M",
                  r"Trace of the refresh monodromy (stale surrogate): $1 + \mu^{k} - a S_2$ with "
                  r"$S_2 = (k - S_1)/(1 - \mu)$, $S_1 = \mu (1 - \mu^{k})/(1 - \mu)$.",
                  units="dimensionless", assumptions=_STALE, level="L2")
    tr = out.expr
    q, S1, S2 = _geometric_sums()
    out.check(r"the displayed form equals the trace of the monodromy matrix", "sympy",
              prove_equal(tr, derived), f"derived form ${_tex(derived)}$")
    out.check(r"$\operatorname{tr} M = 1 + \mu^{k} - a S_2$ (affine in $a$)", "sympy",
              prove_equal(tr, 1 + q - S.a * S2) and sp.diff(tr, S.a, 2) == 0)
    return out


@derivation("discrete.refresh_determinant")
def _refresh_det() -> Derived:
    _, derived = _trace_det()
    mu, k, q = S.mu, S.k_ref, S.mu**S.k_ref
    display = q + S.a * (mu * (1 - q) - k * q * (1 - mu)) / (1 - mu)**2
    out = Derived("discrete.refresh_determinant", display, (S.a, S.mu, S.k_ref), r"\det M",
                  r"Determinant of the refresh monodromy (stale surrogate): "
                  r"$\mu^{k} + a (S_1 - k \mu^{k})/(1 - \mu)$ with $S_1 = \mu (1 - \mu^{k})/(1 - \mu)$.",
                  units="dimensionless", assumptions=_STALE, level="L2")
    det = out.expr
    q, S1, S2 = _geometric_sums()
    out.check(r"the displayed form equals the determinant of the monodromy matrix", "sympy",
              prove_equal(det, derived), f"derived form ${_tex(derived)}$")
    out.check(r"$\det M = \mu^{k} + a (S_1 - k \mu^{k})/(1 - \mu)$ (affine in $a$)", "sympy",
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
                  units="dimensionless", assumptions=_STALE, level="L2")
    expr = out.expr
    M = get("discrete.refresh_monodromy").expr
    out.check(r"the displayed form equals $\lambda^{2} - \operatorname{tr} M\,\lambda + \det M$",
              "sympy", prove_equal(expr, lam**2 - tr * lam + det))
    out.check(r"$P(\lambda) = \det(\lambda I - M)$", "sympy",
              prove_zero(sp.simplify((S.lam * sp.eye(2) - M).det() - expr)))
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
    s1_words, s1_form = _in_s1(2 * ((1 - mu) * (1 + q) / (k * (1 + q) - 2 * _S1_SYM)))
    out = Derived("discrete.refresh_flip_threshold", display, (S.mu, S.k_ref),
                  r"(\eta K)_{\mathrm{flip}}",
                  r"Exact learning-rate threshold (in $\eta K$) where a real eigenvalue of the "
                  r"refresh monodromy crosses $-1$ (period doubling, the flip boundary). "
                  + s1_words + ".",
                  units=_ETA_K, assumptions=_STALE, level="L2", references=_PAPER)
    a_flip = out.expr
    _check_s1_form(out, s1_form)
    out.check(r"the displayed form equals the root of $P(-1)$ solved by sympy", "sympy",
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
    s1_words, s1_form = _in_s1((1 - mu) * (1 - q) / (_S1_SYM - k * q))
    out = Derived("discrete.refresh_complex_threshold", display, (S.mu, S.k_ref),
                  r"(\eta K)_{\mathrm{complex}}",
                  r"Exact learning-rate threshold (in $\eta K$) where a complex pair of eigenvalues "
                  r"of the refresh monodromy reaches the unit circle ($\det M = 1$). "
                  + s1_words + ". "
                  r"Infinite for $\mu = 0$ or $k = 1$ ($\det M = \mu^{k} < 1$ there).", units=_ETA_K,
                  assumptions=_STALE + r"; $k \ge 2$ and $\mu > 0$", level="L2", references=_PAPER)
    a_cx = out.expr
    _check_s1_form(out, s1_form)
    out.check(r"the displayed form equals the root of $\det M = 1$ solved by sympy", "sympy",
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

    s1_words, _ = _in_s1(in_s1(_S1_SYM, k, mu, q))
    out = Derived("discrete.refresh_critical_damping", in_pq.subs(pq), (S.mu, S.k_ref),
                  r"(\eta K)_{c}",
                  r"Exact discrete critical damping: the smaller root in $a = \eta K$ of "
                  r"$\operatorname{tr}(M)^{2} - 4 \det M = 0$, where the monodromy eigenvalues turn "
                  r"from real to complex. " + s1_words + r"; at $k = 1$ it is the "
                  r"heavy-ball value $(1 - \sqrt{\mu})^{2}$.", units=_ETA_K, assumptions=_STALE,
                  level="L2", references=_PAPER)
    chosen = out.expr
    # the S_1 form of the description: with u = 1 - mu, k = P^2/u, S_1 = Q^2/u and
    # 1 - mu^k = Q^2/mu it is a rational identity in P, Q, u (P, Q, u > 0 for 0 < mu < 1)
    u = sp.Symbol("u", positive=True)
    lhs = in_s1(Q**2 / u, P**2 / u, 1 - u, 1 - Q**2 / (1 - u))
    rhs = (u**2 * (Q**2 / (1 - u)) / (P + Q)**2)
    out.check(r"the form with $S_1$ in the description equals the displayed one: with "
              r"$u = 1 - \mu$, $P = \sqrt{k u}$ and $Q = \sqrt{\mu (1 - \mu^{k})}$ both are "
              r"$u^{2} Q^{2} / ((1 - u) (P + Q)^{2})$ (a rational identity for $0 < \mu < 1$; "
              r"$\mu = 0$ is checked below)", "sympy",
              prove_equal(lhs, rhs) and prove_equal(chosen, in_pq.subs(pq))
              and prove_equal(in_pq.subs({mu: 1 - u, q: 1 - Q**2 / (1 - u)}), rhs))
    out.check(r"$\operatorname{tr}^{2} - 4 \det$ is quadratic in $a$ with leading coefficient "
              r"$S_2^{2} > 0$", "sympy",
              sp.degree(disc, S.a) == 2
              and prove_equal(c2, get("discrete.refresh_trace").expr.diff(S.a)**2))
    out.check(r"with $\operatorname{tr}^{2} - 4 \det = g_2 a^{2} + g_1 a + g_0$, the "
              r"quadratic-formula root $(-g_1 - \sqrt{g_1^{2} - 4 g_2 g_0})/(2 g_2)$ solves it for "
              r"generic coefficients (the minus sign gives the smaller root since $g_2 > 0$)", "sympy",
              prove_zero(sp.expand(g2 * generic_root**2 + g1 * generic_root + g0)))
    out.check(r"the discriminant in $a$ is a square times $P^{2} Q^{2}$: "
              r"$g_1^{2} - 4 g_2 g_0 = R^{2} P^{2} Q^{2}$ with $R = 4 (1 - \mu^{k})/(1 - \mu)^{2} \ge 0$, "
              r"$P = \sqrt{k (1 - \mu)}$ and $Q = \sqrt{\mu (1 - \mu^{k})}$, so its square root is "
              r"$R P Q$", "sympy",
              prove_zero(G1**2 - 4 * G2 * G0 - R**2 * pq[P]**2 * pq[Q]**2))

    def eliminate(e):      # k = P^2/(1 - mu), mu^k = 1 - Q^2/mu: rational in P, Q, mu
        e = sp.powsimp(sp.expand_power_exp(e)).subs(q, 1 - Q**2 / mu)
        return e.subs(k, P**2 / (1 - mu))

    identity = eliminate((-G1 - R * P * Q) / (2 * G2) - in_pq)
    out.check(r"the displayed form equals the derived quadratic-formula root: "
              r"$(-g_1 - R P Q)/(2 g_2) = (1 - \mu)^{2} (1 - \mu^{k})/(P + Q)^{2}$ is a rational "
              r"identity in $P$, $Q$, $\mu$ once $k = P^{2}/(1 - \mu)$ and "
              r"$\mu^{k} = 1 - Q^{2}/\mu$ are eliminated ($\mu > 0$; $\mu = 0$ below), and the "
              r"displayed expression is that right-hand side at $P = \sqrt{k (1 - \mu)}$, "
              r"$Q = \sqrt{\mu (1 - \mu^{k})}$", "sympy",
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
                   r"(20 points $(\mu, k)$, 50-digit mpmath)", errors, digits=30)
    record_numeric(out, r"cross-check: the displayed form and the derived quadratic-formula root "
                   r"agree at the same 20 points (50-digit mpmath)", agree, digits=30)
    return out


# --- comparison with the continuous (first-order-in-lag) thresholds ---------------

@derivation("discrete.published_threshold_learning_rate")
def _published_lr() -> Derived:
    ell_max = get("oscillator.published_threshold").expr    # (1 - mu)/(eta K)
    (eta_max,) = sp.solve(sp.Eq(ell_max, S.k_ref), S.eta)
    expr = sp.simplify(eta_max * S.K)
    out = Derived("discrete.published_threshold_learning_rate", expr, (S.mu, S.k_ref),
                  r"(\eta K)_{\mathrm{pub}}",
                  r"The published first-order threshold $\eta K k < 1 - \mu$ written as a "
                  r"threshold in $\eta K$ (continuous model with the lag identified with $k$).",
                  units=_ETA_K, assumptions=r"first order in the lag; lag $\ell = k$",
                  level="L3", references=_PAPER)
    expr = out.expr
    out.check(r"$\eta K k = 1 - \mu$ at the threshold (the published form, quoted)", "sympy",
              prove_zero(expr * S.k_ref - (1 - S.mu)))
    exact = get("discrete.refresh_flip_threshold").expr
    ratio = sp.simplify(exact.subs(S.mu, 0) / expr.subs(S.mu, 0))
    out.check(r"DISAGREEMENT recorded: at $\mu = 0$ the exact threshold ($2/k$) is twice the "
              r"published one ($1/k$)", "sympy", prove_equal(ratio, 2),
              f"exact over published: ${_tex(ratio)}$")
    return out


@derivation("discrete.mean_lag_threshold_learning_rate")
def _mean_lag_lr() -> Derived:
    g = get("oscillator.damping").expr.subs({S.K_stale: S.K, S.ell: (S.k_ref - 1) / 2})
    (eta_max,) = sp.solve(sp.Eq(g, 0), S.eta)
    expr = sp.simplify(eta_max * S.K)
    out = Derived("discrete.mean_lag_threshold_learning_rate", expr, (S.mu, S.k_ref),
                  r"(\eta K)_{\bar\ell}",
                  r"First-order continuous threshold ($\gamma = 0$) with the mean lag $(k - 1)/2$ "
                  r"of a refresh window instead of $k$. Infinite at $k = 1$.",
                  units=_ETA_K, assumptions=r"first order in the lag; lag $\ell = (k - 1)/2$",
                  level="L3")
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
    ser = sp.expand(sp.series(P.subs(S.lam, lam), S.a, 0, 3).removeO())
    (c1v,) = sp.solve(ser.coeff(S.a, 1), c1)
    out = Derived("discrete.refresh_slow_eigenvalue", 1 - S.a * S.k_ref / (1 - S.mu),
                  (S.a, S.mu, S.k_ref), r"\lambda_{\mathrm{slow}}",
                  r"Slow eigenvalue of the refresh monodromy to first order in $a = \eta K$: one "
                  r"window of $k$ steps, each contracting by $a/(1 - \mu)$ (the L3 root "
                  r"$-\kappa_{s}/\gamma$ per step).",
                  units="per window", assumptions=_STALE + r"; $O(a^{2})$ dropped", level="L2",
                  references=_PAPER)
    expr = out.expr
    out.check(r"$P(1 + c_1 a + O(a^{2})) = O(a^{2})$ gives $c_1 = -k/(1 - \mu)$, the displayed "
              r"coefficient", "sympy",
              prove_equal(c1v, -S.k_ref / (1 - S.mu)) and prove_zero(ser.coeff(S.a, 0))
              and prove_equal(expr, 1 + c1v * S.a))
    # L3 at zero lag: slow root of m s^2 + gamma s + k to first order in a = eta K
    m = get("oscillator.mass").expr
    g = get("oscillator.damping").expr.subs(S.ell, 0)
    kspring = get("oscillator.spring").expr.subs(S.eta, S.a / S.K)
    slow = (-g + sp.sqrt(g**2 - 4 * m * kspring)) / (2 * m)
    r = sp.Symbol("r", positive=True)            # r = 1 - mu > 0
    s1 = sp.simplify(sp.series(slow.subs(S.mu, 1 - r), S.a, 0, 2).removeO())
    per_window = sp.series(sp.exp(S.k_ref * s1), S.a, 0, 2).removeO().subs(r, 1 - S.mu)
    s1 = s1.subs(r, 1 - S.mu)
    out.check(r"agrees with the L3 model to first order: $e^{k s_{\mathrm{slow}}} = 1 - a k/(1 - \mu) "
              r"+ O(a^{2})$ with $s_{\mathrm{slow}} = -\kappa_{s}/\gamma$", "sympy",
              prove_zero(sp.expand(per_window - expr)), f"L3 slow root ${_tex(s1)}$")
    # same for the delay model: slow root per step is independent of d at first order
    Pd = _delay_poly_expr(S.d).subs({S.K_fresh: 0, S.K_stale: S.K, S.eta: S.a / S.K})
    for dv in (1, 2, 5):
        serd = sp.expand(sp.series(Pd.subs(S.d, dv).subs(S.lam, 1 + c1 * S.a), S.a, 0, 2).removeO())
        (cd,) = sp.solve(serd.coeff(S.a, 1), c1)
        out.check(rf"delay $d = {dv}$: slow root per step $1 - a/(1 - \mu) + O(a^{{2}})$, as in L3",
                  "sympy",
                  prove_equal(cd, -1 / (1 - S.mu)))
    return out


def _slow_eigenvalue_series(order=3):
    """(c1, c2) of the slow monodromy eigenvalue 1 + c1 a + c2 a^2 + O(a^3), from P(lambda)."""
    P = get("discrete.refresh_characteristic_polynomial").expr
    c1, c2 = sp.symbols("c1 c2")
    ser = sp.expand(sp.series(P.subs(S.lam, 1 + c1 * S.a + c2 * S.a**2), S.a, 0, order).removeO())
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
    e = sp.expand(sp.series(m * root**2 + g * root + kspring, S.a, 0, 3).removeO())
    (d1v,) = sp.solve(e.coeff(S.a, 1), d1)
    (d2v,) = sp.solve(e.coeff(S.a, 2).subs(d1, d1v), d2)
    w = sp.expand(sp.series(sp.exp(S.k_ref * (d1v * S.a + d2v * S.a**2)), S.a, 0, 3).removeO())
    return sp.simplify(w.coeff(S.a, 1)), sp.simplify(w.coeff(S.a, 2))


@derivation("discrete.refresh_effective_lag")
def _effective_lag() -> Derived:
    c1v, c2v = _slow_eigenvalue_series()
    w1, w2 = _l3_window_factor_series(S.ell)
    (ell_eff,) = sp.solve(sp.Eq(w2, c2v), S.ell)
    expr = sp.factor(sp.simplify(ell_eff))
    out = Derived("discrete.refresh_effective_lag", expr, (S.k_ref,), r"\ell_{\mathrm{eff}}",
                  r"Effective lag of the L3 model for a refresh interval $k$: the lag whose L3 "
                  r"slow root reproduces the exact slow eigenvalue of the monodromy to second order "
                  r"in $\eta K$. It is the mean lag $(k - 1)/2$ of a window, whatever $\mu$.",
                  units="steps", assumptions=_STALE + r"; matching to $O((\eta K)^{2})$",
                  level="L2", references=_PAPER)
    expr = out.expr
    w1e, w2e = _l3_window_factor_series(expr)
    out.check(r"first order: $e^{k s_{\mathrm{slow}}}$ and the exact slow eigenvalue agree for "
              r"every lag (coefficient $-k/(1 - \mu)$)", "sympy", prove_zero(w1e - c1v),
              rf"exact $\lambda_{{\mathrm{{slow}}}} = 1 + \left({_tex(c1v)}\right) a "
              rf"+ \left({_tex(sp.factor(c2v))}\right) a^{{2}} + O(a^{{3}})$")
    out.check(r"second order: with this lag the L3 window factor equals the exact slow "
              r"eigenvalue up to $O(a^{3})$", "sympy", prove_zero(w2e - c2v))
    w1z, w2z = _l3_window_factor_series(0)
    out.check(r"with lag $0$ (the cross-checks' old convention) the $a^{2}$ term is off by "
              r"$+k (k - 1)/(2 (1 - \mu)^{2})$, unless $k = 1$", "sympy",
              prove_zero(sp.factor(w2z - c2v) - S.k_ref * (S.k_ref - 1) / (2 * (1 - S.mu)**2)))
    out.check(r"$k = 1$ (on-policy): effective lag $0$", "sympy", prove_zero(expr.subs(S.k_ref, 1)))
    return out


@derivation("discrete.continuous_threshold_learning_rate")
def _continuous_threshold() -> Derived:
    g = get("oscillator.damping").expr
    (eta_max,) = sp.solve(sp.Eq(g, 0), S.eta)
    out = Derived("discrete.continuous_threshold_learning_rate", sp.simplify(eta_max),
                  (S.mu, S.K_stale, S.ell), r"\eta_{\max}^{L3}",
                  r"Largest learning rate with positive L3 damping $\gamma = 1 - \mu - \eta K_{s} "
                  r"\ell$: the continuous (second-order modified equation) stability threshold, "
                  r"with the effective lag $\ell$ and the stale stiffness $K_{s}$.", units="per step",
                  assumptions=r"$K_{s} > 0$, $\ell > 0$; L3 approximation", level="L3",
                  references=_PAPER)
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
                  (S.mu, S.eta, S.K), r"k_{\max}^{\bar\ell}",
                  r"Largest integer refresh interval with positive L3 damping at the effective lag "
                  r"$(k - 1)/2$, all stiffness stale: the largest $k$ with "
                  r"$(k - 1)/2 < (1 - \mu)/(\eta K)$.",
                  units="steps", assumptions="L3 approximation; all stiffness stale", level="L3")
    expr = out.expr
    out.check(r"the edge $k$ with $(k - 1)/2 = (1 - \mu)/(\eta K)$ is $2 (1 - \mu)/(\eta K) + 1$",
              "sympy", prove_zero(k_edge - 2 * bound - 1))
    out.check(r"the displayed form is the largest integer strictly below the edge: "
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
    out = Derived("discrete.refresh_step_matrix", expr, (S.mu, S.eta, S.K_fresh, S.K_stale), "A",
                  r"Per-step linear map of $(x, v, x_{s})$ inside a refresh window, $K_{f}$ on the "
                  r"current iterate and $K_{s}$ through the frozen sampling policy $x_{s}$; the "
                  r"window monodromy is $P A^{k} E$ with $E$ setting $x_{s} \leftarrow x$ at the "
                  r"window start.", units="dimensionless",
                  assumptions=r"$\mu \in [0, 1)$; $K = K_{f} + K_{s}$", level="L2")
    expr = out.expr
    A = sp.Matrix(expr)
    # v' = mu v - eta (K_f x + K_s x_s), x' = x + v'
    xs, vs, xss = sp.symbols("x v x_s")
    y = A * sp.Matrix([xs, vs, xss])
    vnew = S.mu * vs - S.eta * (S.K_fresh * xs + S.K_stale * xss)
    out.check(r"$A$ encodes $v' = \mu v - \eta (K_{f} x + K_{s} x_{s})$, $x' = x + v'$, "
              r"$x_{s}' = x_{s}$", "sympy",
              prove_zero(y[1] - vnew) and prove_zero(y[0] - xs - vnew) and y[2] == xss)
    stale = sp.ImmutableMatrix(get("discrete.refresh_monodromy").expr)
    ok = True
    for kk in (1, 2, 3):
        Mk = _PROJECT * A**kk * _EMBED
        ok &= all(prove_zero(sp.cancel(e)) for e in
                  (Mk.subs({S.K_fresh: 0, S.K_stale: S.a / S.eta}) - stale.subs(S.k_ref, kk)))
    out.check(r"$K_{f} = 0$: $P A^{k} E$ equals the closed-form stale monodromy ($k = 1, 2, 3$)",
              "sympy", ok)
    hb = sp.Matrix([[1 - S.eta * S.K_fresh, S.mu], [-S.eta * S.K_fresh, S.mu]])
    ok = all(prove_zero(sp.expand(e)) for e in
             ((_PROJECT * A**3 * _EMBED).subs(S.K_stale, 0) - hb**3))
    out.check(r"$K_{s} = 0$ (fully fresh): the monodromy is the heavy-ball map to the $k$-th power "
              r"($k = 3$)", "sympy", ok)
    return out


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
                  (S.lam, S.mu, S.eta, S.K_fresh, S.K_stale, S.d), r"P_d(\lambda)",
                  r"Characteristic polynomial of the heavy-ball update with constant staleness "
                  r"$d$ (delay lag model). For $d = 0$ it is $\lambda^{-1}$ times the quadratic "
                  r"$\lambda^{2} - (1 + \mu - \eta K) \lambda + \mu$; for $d = 1$ the "
                  r"$\lambda^{d-1}$ term merges with the constant.", units="dimensionless",
                  assumptions=r"$x_{t} = \lambda^{t}$ in the linear recurrence", level="L2")
    expr = out.expr
    lam, mu, eta, Kf, Ks = S.lam, S.mu, S.eta, S.K_fresh, S.K_stale
    # hand derivation from the recurrence: substitute x_t = lambda^t
    tt = sp.Symbol("t_", integer=True)
    rec = (lam**(tt + 1) - (1 + mu) * lam**tt + mu * lam**(tt - 1)
           + eta * (Kf * lam**tt + Ks * lam**(tt - S.d)))
    out.check(r"$\lambda^{d-t}$ times the recurrence with $x_{t} = \lambda^{t}$ is $P_d(\lambda)$",
              "sympy",
              prove_zero(sp.expand(sp.powsimp(sp.expand(rec * lam**(S.d - tt)))) - sp.expand(expr)))
    q0 = sp.expand(lam * expr.subs(S.d, 0))
    out.check(r"$d = 0$: $\lambda P_0 = \lambda^{2} - (1 + \mu - \eta K) \lambda + \mu$ "
              r"($K = K_{f} + K_{s}$)", "sympy",
              prove_zero(q0 - (lam**2 - (1 + mu - eta * (Kf + Ks)) * lam + mu)))
    out.check(r"$d = 1$: $P_1 = \lambda^{2} - (1 + \mu - \eta K_{f}) \lambda + (\mu + \eta K_{s})$",
              "sympy",
              prove_zero(sp.expand(expr.subs(S.d, 1))
                         - (lam**2 - (1 + mu - eta * Kf) * lam + mu + eta * Ks)))
    ok = True
    for dv in range(0, 6):
        cp = _delay_companion(dv).charpoly(lam).as_expr()
        target = q0 if dv == 0 else sp.expand(expr.subs(S.d, dv))
        ok &= prove_zero(sp.expand(cp - target))
    out.check(r"equals the characteristic polynomial of the recurrence's companion matrix, "
              r"$d = 0, \dots, 5$", "sympy", ok)
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


def _boundary_words(what, e):
    if e == sp.oo:
        return f"{what}: none"
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
        out = Derived(name, expr, (S.mu,), rf"(\eta K)_{{d={dv}}}",
                      rf"Exact stability threshold in $\eta K$ for constant delay $d = {dv}$, stale "
                      rf"surrogate (Schur–Cohn), the smaller of two boundaries. "
                      rf"{_boundary_words(r'Flip boundary (a real root at $-1$)', flip)}; "
                      rf"{_boundary_words('complex boundary (a complex pair on the unit circle)', complex_)}.",
                      units=_ETA_K,
                      assumptions=_STALE + rf"; delay $d = {dv}$", level="L2", references=_PAPER)
        expr = out.expr
        for kind, form in shown.items():
            out.check(rf"the displayed {kind} boundary equals the root of its Schur–Cohn condition "
                      r"solved by sympy", "sympy", prove_equal(form, solved[kind]),
                      f"solved form ${_tex(solved[kind])}$")
        out.check(r"$P(1) = a > 0$: no eigenvalue at $+1$", "sympy", prove_equal(p1, a))
        for label, c in conds.items():
            if label != "P(1)":
                # the other branch of |.|: positive on [0, threshold]
                ok = prove_zero(sp.diff(c, a, 3)) and all(
                    c.subs({mu: mv, a: expr.subs(mu, mv) * f}) > 0
                    for mv in (0, sp.Rational(1, 2), sp.Rational(9, 10)) for f in (0, sp.Rational(1, 2), 1))
                out.check(rf"the condition ${label} > 0$ (coefficients of "
                          r"$\lambda^{3} + c_2 \lambda^{2} + c_1 \lambda + c_0$) holds at 9 sample "
                          r"points below the threshold ($\mu = 0, 1/2, 9/10$ and "
                          r"$a/a^{*} = 0, 1/2, 1$; exact rationals) and is a polynomial of "
                          r"degree at most 2 in $a$", "numeric", ok)
        if binding is None:
            binding = "complex" if all(
                (complex_ - flip).subs(mu, mv) < 0 for mv in (0, sp.Rational(1, 2), sp.Rational(99, 100))
            ) else "mixed"
        out.check(f"binding condition: {binding} (complex below flip at "
                  r"$\mu = 0, 1/2, 99/100$ when both exist)", "numeric",
                  binding in ("flip", "complex"))
        # the boundary is where a root reaches the unit circle (numeric, numpy roots)
        worst = 0.0
        for mv in (0.0, 0.3, 0.6, 0.9):
            at = float(expr.subs(mu, mv))
            coeffs = [complex(c) for c in sp.Poly(P.subs({mu: mv, a: at}), lam).all_coeffs()]
            worst = max(worst, abs(max(abs(np.roots(coeffs))) - 1))
        out.check(r"at the threshold the spectral radius is $1$ (numpy roots at "
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


# ----------------------------------------------------------------------------------
# Numeric API (formulas lambdified from the derivations above)
# ----------------------------------------------------------------------------------

_LAG_MODELS = ("refresh", "delay")


def _validate(learning_rate, momentum, refresh_interval, stiffness):
    eta = check_real("learning_rate", learning_rate, low=0, low_open=True)
    mu = check_real("momentum", momentum, low=0, high=1, high_open=True)
    k = check_int("refresh_interval", refresh_interval, low=1)
    Kv = check_real("stiffness", stiffness, low=0, low_open=True)
    return eta, mu, k, Kv


def _num(name):
    return get(name).numeric


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


def step_matrix(learning_rate, momentum, stiffness, fresh_fraction=0.0):
    """The per-step 3x3 map on (x, v, x_s), lambdified from ``discrete.refresh_step_matrix``."""
    eta = np.asarray(learning_rate, dtype=float)
    K = np.asarray(stiffness, dtype=float)
    phi = np.asarray(fresh_fraction, dtype=float)
    A = _num("discrete.refresh_step_matrix")(momentum, eta, phi * K, (1 - phi) * K)
    return np.asarray(A, dtype=float)


def _general_monodromy(a, mu, k, phi):
    """Vectorised P A^k E by repeated squaring with a per-element k (a, k, phi arrays)."""
    a, k, phi = np.broadcast_arrays(np.asarray(a, float), np.asarray(k, np.int64),
                                    np.asarray(phi, float))
    shape = a.shape
    af, as_ = (phi * a).ravel(), ((1 - phi) * a).ravel()
    n = af.size
    A = np.zeros((n, 3, 3))
    A[:, 0, 0] = 1 - af
    A[:, 0, 1] = mu
    A[:, 0, 2] = -as_
    A[:, 1, 0] = -af
    A[:, 1, 1] = mu
    A[:, 1, 2] = -as_
    A[:, 2, 2] = 1
    R = np.broadcast_to(np.eye(3), (n, 3, 3)).copy()
    kk = k.ravel().copy()
    while np.any(kk > 0):
        odd = (kk & 1).astype(bool)
        if odd.any():
            R[odd] = R[odd] @ A[odd]
        kk >>= 1
        if np.any(kk > 0):
            A = A @ A
    E = np.array([[1, 0], [0, 1], [1, 0]], dtype=float)
    M = (R @ E)[:, :2, :]
    return M.reshape(shape + (2, 2))


def monodromy(learning_rate, momentum, refresh_interval, stiffness, fresh_fraction=0.0):
    r"""The one-window monodromy matrix :math:`M` of :math:`(x, v)` (refresh lag model).

    ``fresh_fraction`` :math:`= K_f/K`.  For ``fresh_fraction = 0`` (all stale)
    each entry is lambdified from the closed form ``discrete.refresh_monodromy``;
    otherwise the product :math:`P A^k E` of the per-step map is taken numerically.
    Returns a ``(2, 2)`` array (dimensionless).
    """
    eta, mu, k, Kv = _validate(learning_rate, momentum, refresh_interval, stiffness)
    phi = check_real("fresh_fraction", fresh_fraction)
    a = eta * Kv
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


# --- delay --------------------------------------------------------------------------

def _delay_companion_numeric(a, mu, d, phi):
    n = max(d + 1, 2)
    A = np.zeros((n, n))
    A[0, 0] += 1 + mu - phi * a
    A[0, 1] += -mu
    A[0, d] += -(1 - phi) * a
    A[np.arange(1, n), np.arange(0, n - 1)] = 1
    return A


def _delay_eigs(a, mu, d, phi):
    return np.linalg.eigvals(_delay_companion_numeric(a, mu, d, phi))


def delay_spectral_radius(learning_rate, momentum, delay, stiffness, fresh_fraction=0.0):
    """Spectral radius of the delay-d recurrence (per step), from its companion matrix."""
    eta = check_real("learning_rate", learning_rate, low=0, low_open=True)
    mu = check_real("momentum", momentum, low=0, high=1, high_open=True)
    d = check_int("delay", delay, low=0)
    Kv = check_real("stiffness", stiffness, low=0, low_open=True)
    phi = check_real("fresh_fraction", fresh_fraction)
    return float(np.max(np.abs(_delay_eigs(eta * Kv, mu, d, phi))))


# --- thresholds ------------------------------------------------------------------------

def _first_crossing(radius, a_hi=16.0):
    """Smallest a > 0 with radius(a) = 1 (radius < 1 just above 0), or inf."""
    grid = np.geomspace(1e-9, a_hi, 481)
    prev = grid[0]
    for av in grid[1:]:
        if radius(av) >= 1:
            return brentq(lambda x: radius(x) - 1, prev, av, xtol=1e-15, rtol=1e-13)
        prev = av
    return math.inf


def _classify_boundary(eigs, tol=1e-6):
    on = eigs[np.abs(np.abs(eigs) - np.max(np.abs(eigs))) < tol]
    if np.all(np.abs(on.imag) < tol):
        return "flip" if np.all(on.real < 0) else "fold"
    return "complex"


def _stale_refresh_a_star(mu, k):
    flip, cx, _ = refresh_thresholds(mu, k)
    return float(np.minimum(flip, cx)), ("flip" if flip <= cx else "complex")


def _threshold_a(mu, k, phi, lag_model, delay):
    """(a*, binding) for the configuration; a = eta K."""
    if lag_model == "refresh" and phi == 0.0:
        return _stale_refresh_a_star(mu, k)
    if lag_model == "refresh":
        def radius(av):
            return float(_radius_2x2(_general_monodromy(av, mu, k, phi)))

        def eigs(av):
            return np.linalg.eigvals(_general_monodromy(av, mu, k, phi))
    else:
        def radius(av):
            return float(np.max(np.abs(_delay_eigs(av, mu, delay, phi))))

        def eigs(av):
            return _delay_eigs(av, mu, delay, phi)
    a_star = _first_crossing(radius)
    if not math.isfinite(a_star):
        return a_star, "none"
    return a_star, _classify_boundary(eigs(a_star))


def max_stable_learning_rate(momentum, refresh_interval, stiffness, *, lag_model="refresh",
                             delay=None, fresh_fraction=0.0) -> float:
    """Exact largest stable learning rate eta* = a*/K (per step)."""
    mu = check_real("momentum", momentum, low=0, high=1, high_open=True)
    k = check_int("refresh_interval", refresh_interval, low=1)
    Kv = check_real("stiffness", stiffness, low=0, low_open=True)
    phi = check_real("fresh_fraction", fresh_fraction)
    lag_model = check_choice("lag_model", lag_model, _LAG_MODELS)
    if lag_model == "delay":
        delay = check_int("delay", delay, low=0)
    return _threshold_a(mu, k, phi, lag_model, delay)[0] / Kv


def _a_star_k(mu, k):
    flip, cx, _ = refresh_thresholds(mu, k)
    return float(np.minimum(flip, cx))


def _max_k_stale(a, mu):
    """Largest integer k with a < a*(k) (a*(k) is decreasing in k, ~ 2(1-mu)/k for large k:
    finite for every a > 0; no scan cap)."""
    if a >= _a_star_k(mu, 1):
        return 0
    hi = 2.0
    while _a_star_k(mu, hi) > a:
        hi *= 2
    root = brentq(lambda kv: _a_star_k(mu, kv) - a, hi / 2 if hi > 2 else 1.0, hi, xtol=1e-10)
    kk = max(1, int(math.floor(root)))
    while _a_star_k(mu, kk + 1) > a:
        kk += 1
    while kk >= 1 and not _a_star_k(mu, kk) > a:
        kk -= 1
    return kk


def _stable_general(a, mu, k, phi):
    return float(_radius_2x2(_general_monodromy(a, mu, k, phi))) < 1


def _stable_for_long_windows(a, mu, phi):
    """Whether the monodromy stays stable as k -> oo (fresh stiffness only).

    Inside a long window the fresh heavy-ball map (stable iff 0 < eta K_f < 2(1+mu))
    relaxes x to the balance K_f x + K_s x_s = 0, so M(k) -> diag(-K_s/K_f, 0):
    stable for long windows iff additionally |1 - 1/phi| < 1, i.e. phi > 1/2.
    """
    a_fresh = phi * a
    return 0 < a_fresh < 2 * (1 + mu) and phi > 0.5


_K_SCAN_DOUBLINGS = 62


def _max_k_general(a, mu, phi):
    """Largest stable k (numeric monodromy, by doubling then bisection; the stable k form
    {1..k_max}); ``math.inf`` when stable for every k: stable at k = 2^62 and, by the
    long-window limit (:func:`_stable_for_long_windows`), for every larger k."""
    if not _stable_general(a, mu, 1, phi):
        return 0
    lo = 1
    for _ in range(_K_SCAN_DOUBLINGS):
        hi = 2 * lo
        if not _stable_general(a, mu, hi, phi):
            break
        lo = hi
    else:
        if _stable_for_long_windows(a, mu, phi):
            return math.inf
        raise ParameterError("learning_rate", a, "an eta K whose refresh threshold lies below "
                             "k = 2^62 or in the long-window limit")
    while hi - lo > 1:                    # stable at lo, unstable at hi
        mid = (lo + hi) // 2
        if _stable_general(a, mu, mid, phi):
            lo = mid
        else:
            hi = mid
    return lo


def max_stable_refresh_interval(learning_rate, momentum, stiffness, *, fresh_fraction=0.0):
    """Exact largest stable integer refresh interval k (0 if even k = 1 is unstable).

    ``fresh_fraction`` = K_f/K is the split of the stiffness at the fixed point
    (:attr:`grpo_theory.theory.fixed_points.FixedPoint.fresh_fraction`); 0 means all
    stiffness acts through the sampling policy.  Returns ``math.inf`` when every
    refresh interval is stable (possible only with fresh stiffness, phi > 1/2),
    never a scan cap.

    Stale: brentq on the continuous-k extension of min(flip, complex) threshold,
    which decreases in k, then an integer check.  With fresh stiffness: doubling and
    bisection on the numeric monodromy.
    """
    eta = check_real("learning_rate", learning_rate, low=0, low_open=True)
    mu = check_real("momentum", momentum, low=0, high=1, high_open=True)
    Kv = check_real("stiffness", stiffness, low=0, low_open=True)
    phi = check_real("fresh_fraction", fresh_fraction)
    a = eta * Kv
    if phi == 0.0:
        return _max_k_stale(a, mu)
    return _max_k_general(a, mu, phi)


# --- the result object -------------------------------------------------------------

@dataclass(frozen=True)
class StabilityResult(Result):
    """Exact (L2) stability of one configuration, next to the continuous (L3) approximation.

    ``spectral_radius`` is per refresh window (lag model ``refresh``) or per step
    (``delay``).  ``stable`` is decided by the exact thresholds (Jury conditions),
    not by comparing a rounded radius with 1.  ``binding_condition`` is the Jury
    boundary reached first as the learning rate grows: ``"flip"`` (a real eigenvalue
    at -1) or ``"complex"`` (a complex pair on the unit circle).  ``regime`` and
    ``discrete_regime`` are the exact map's label; ``regime_continuous`` is L3's.
    ``max_stable_refresh_interval`` is ``math.inf`` (``None`` in JSON) with
    ``stable_for_every_refresh_interval`` true when no refresh interval is unstable.
    The L3 columns use the effective lag ``lag_continuous`` = (k-1)/2 (refresh) or d
    (delay) and the same split; ``rel_error_continuous`` is the relative error of the
    L3 threshold in learning rate against the exact one.  Learning rates per step,
    intervals in steps.
    """

    learning_rate: float
    momentum: float
    refresh_interval: int
    stiffness: float
    lag_model: str
    delay: int | None
    fresh_fraction: float
    spectral_radius: float
    stable: bool
    eigenvalues: tuple
    binding_condition: str
    max_stable_learning_rate: float
    max_stable_refresh_interval: int | float | None
    stable_for_every_refresh_interval: bool | None
    critical_learning_rate_discrete: float | None
    discrete_regime: str
    regime: str
    alternating: bool
    max_stable_refresh_interval_continuous: int
    published_rule_safe: bool | None
    lag_continuous: float
    mass: float
    damping: float
    spring: float
    damping_ratio: float
    regime_continuous: str
    max_stable_learning_rate_continuous: float
    rel_error_continuous: float
    notes: tuple = field(default=())

    def to_dict(self) -> dict:
        out = super().to_dict()
        out["eigenvalues"] = [[float(np.real(z)), float(np.imag(z))] for z in self.eigenvalues]
        if self.stable_for_every_refresh_interval:
            out["max_stable_refresh_interval"] = None    # no largest one: see the boolean
        return out


def _discrete_regime(eigs, radius, stable):
    dom = eigs[np.argmax(np.abs(eigs))]
    complex_pair = np.any(np.abs(eigs.imag) > 1e-12 * max(1.0, radius))
    alternating = (not complex_pair) and dom.real < 0
    if not stable:
        return "unstable", bool(alternating)
    if complex_pair:
        return "oscillatory", False
    return ("alternating" if alternating else "overdamped"), bool(alternating)


def continuous_lag(lag_model, refresh_interval=1, delay=None) -> float:
    r"""The one lag convention of the L3 model: :math:`(k-1)/2` for a refresh interval k
    (derived in ``discrete.refresh_effective_lag``), d for a constant delay d (steps)."""
    if lag_model == "refresh":
        return float(get("discrete.refresh_effective_lag").numeric(refresh_interval))
    return float(delay)


def stability(learning_rate, momentum, refresh_interval, stiffness, *, lag_model="refresh",
              delay=None, fresh_fraction=0.0) -> StabilityResult:
    r"""Exact L2 stability of the linearised heavy-ball GRPO update, with the L3 comparison.

    ``fresh_fraction`` :math:`=K_f/K` is the split of the stiffness at the fixed point
    (:class:`~grpo_theory.theory.fixed_points.FixedPoint`); 0 means all stiffness acts
    through the sampling policy.  :meth:`grpo_theory.model.GRPOModel.stability` and
    :func:`grpo_theory.theory.stability.stability_at_fixed_point` pass the split of the
    variant; a bare ``stiffness`` without it answers for the all-stale case only.

    ``lag_model="refresh"``: the refresh-window monodromy (closed form when
    ``fresh_fraction = 0``; numeric product otherwise).  ``lag_model="delay"``:
    constant staleness ``delay`` = d steps, companion matrix of :math:`P_d(\lambda)`.
    The continuous columns come from :func:`grpo_theory.theory.oscillator.coefficients`
    with the lag of :func:`continuous_lag` and the same split;
    ``max_stable_refresh_interval_continuous`` is the published
    :math:`\lceil(1-\mu)/(\eta K)\rceil - 1` (all stiffness stale, lag = k).
    """
    from grpo_theory.theory import oscillator

    eta, mu, k, Kv = _validate(learning_rate, momentum, refresh_interval, stiffness)
    lag_model = check_choice("lag_model", lag_model, _LAG_MODELS)
    phi = check_real("fresh_fraction", fresh_fraction)
    if lag_model == "delay":
        if delay is None:
            raise ParameterError("delay", delay, "an integer >= 0 when lag_model='delay'")
        delay = check_int("delay", delay, low=0)
    elif delay is not None:
        raise ParameterError("delay", delay, "None unless lag_model='delay'")
    a = eta * Kv
    notes = []
    if lag_model == "refresh":
        if phi == 0.0:
            l1, l2 = _stale_eigs(a, mu, k)
            eigs = np.array([complex(l1), complex(l2)])
            _, _, crit = refresh_thresholds(mu, k)
            crit_lr = float(crit) / Kv if np.isfinite(crit) else None
            if mu == 0:
                crit_lr = None
                notes.append("μ = 0: the monodromy eigenvalues (1 − ηKk, 0) are always real")
        else:
            eigs = np.linalg.eigvals(_general_monodromy(a, mu, k, phi))
            crit_lr = None
        k_max = max_stable_refresh_interval(eta, mu, Kv, fresh_fraction=phi)
    else:
        eigs = _delay_eigs(a, mu, delay, phi)
        crit_lr = None
        k_max = None
    radius = float(np.max(np.abs(eigs)))
    a_star, binding = _threshold_a(mu, k, phi, lag_model, delay)
    stable = bool(a < a_star)
    if stable and radius >= 1:
        notes.append(f"the computed spectral radius {radius!r} rounds to >= 1; the exact Jury "
                     f"conditions (ηK = {a:.3g} < {a_star:.6g}) say stable")
    d_regime, alternating = _discrete_regime(eigs, radius, stable)
    every_k = None
    if lag_model == "refresh":
        every_k = bool(k_max == math.inf)
        if every_k:
            notes.append("stable for every refresh interval (the long-window monodromy tends to "
                         "diag(1 − 1/φ, 0) with φ = K_f/K > 1/2)")
    lag = continuous_lag(lag_model, k, delay)
    osc = oscillator.coefficients(eta, mu, lag, Kv, fresh_fraction=phi)
    eta_l3 = _continuous_max_learning_rate(mu, lag, Kv, phi)
    pub = get("oscillator.published_threshold").numeric(mu, eta, Kv)
    k_pub = _published_k_max(float(pub))
    safe = None
    if lag_model == "refresh":
        safe = bool(every_k or k_pub <= k_max)
        if not safe:
            notes.append(f"the published rule ηKk < 1 − μ allows k ≤ {k_pub} but the exact "
                         f"map is stable only up to k = {k_max}: unsafe here (fresh fraction "
                         f"{phi:.4g})")
    return StabilityResult(
        learning_rate=eta, momentum=mu, refresh_interval=k, stiffness=Kv, lag_model=lag_model,
        delay=delay, fresh_fraction=phi, spectral_radius=radius, stable=stable,
        eigenvalues=tuple(complex(z) for z in eigs), binding_condition=binding,
        max_stable_learning_rate=a_star / Kv, max_stable_refresh_interval=k_max,
        stable_for_every_refresh_interval=every_k,
        critical_learning_rate_discrete=crit_lr, discrete_regime=d_regime, regime=d_regime,
        alternating=alternating, max_stable_refresh_interval_continuous=k_pub,
        published_rule_safe=safe, lag_continuous=lag,
        mass=osc.mass, damping=osc.damping, spring=osc.spring,
        damping_ratio=float(osc.damping_ratio) if osc.damping > 0 else float("nan"),
        regime_continuous=osc.regime, max_stable_learning_rate_continuous=eta_l3,
        rel_error_continuous=(eta_l3 - a_star / Kv) / (a_star / Kv) if math.isfinite(a_star)
        else float("nan"),
        notes=tuple(notes))


def _continuous_max_learning_rate(mu, lag, stiffness, phi):
    """Largest learning rate with positive L3 damping, gamma = 1 - mu - eta K_s lag > 0
    (solved from ``oscillator.damping``); inf when the stale stiffness does not erode it."""
    k_stale = (1 - phi) * stiffness
    if lag == 0 or k_stale <= 0:
        return math.inf
    return float(get("discrete.continuous_threshold_learning_rate").numeric(mu, k_stale, lag))


def _published_k_max(bound: float) -> int:
    """Largest integer k with k < bound (the published strict inequality eta K k < 1 - mu)."""
    return int(math.ceil(bound) - 1)


# --- phase diagram --------------------------------------------------------------------

#: regime codes of :func:`phase_diagram`
REGIME_CODES = {"overdamped": 0, "alternating": 1, "oscillatory": 2, "unstable": 3}


@dataclass(frozen=True)
class PhaseDiagram:
    """Spectral radius and regime code (:data:`REGIME_CODES`) on a grid; rows = eta K."""

    eta_K: np.ndarray
    axis: np.ndarray
    axis_name: str
    spectral_radius: np.ndarray
    regime_code: np.ndarray


def phase_diagram(eta_K_grid, k_grid=None, *, mu_grid=None, momentum=None,
                  refresh_interval=None) -> PhaseDiagram:
    """Exact stale-surrogate phase diagram, vectorised (256 x 256 in well under a second).

    Either ``k_grid`` (refresh intervals) with a scalar ``momentum``, or ``mu_grid``
    with a scalar ``refresh_interval``.  Returns spectral radius per window and a
    regime code per point.
    """
    a = check_finite_array("eta_K_grid", eta_K_grid)
    if np.any(a <= 0):
        raise ParameterError("eta_K_grid", float(a[a <= 0][0]), "positive real numbers")
    if (k_grid is None) == (mu_grid is None):
        raise ParameterError("k_grid", k_grid, "given exactly when mu_grid is not")
    if k_grid is not None:
        mu = check_real("momentum", momentum, low=0, high=1, high_open=True)
        ks = check_finite_array("k_grid", k_grid)
        if np.any(ks < 1) or np.any(ks != np.round(ks)):
            raise ParameterError("k_grid", k_grid, "integers >= 1")
        A, Kg = np.meshgrid(a, ks, indexing="ij")
        l1, l2 = _stale_eigs(A, mu, Kg)
        axis, name = ks, "refresh_interval"
    else:
        k = check_int("refresh_interval", refresh_interval, low=1)
        mus = check_finite_array("mu_grid", mu_grid)
        if np.any(mus < 0) or np.any(mus >= 1):
            raise ParameterError("mu_grid", mu_grid, "real numbers in [0, 1)")
        A, Mg = np.meshgrid(a, mus, indexing="ij")
        l1, l2 = _stale_eigs(A, Mg, k)
        axis, name = mus, "momentum"
    r1, r2 = np.abs(l1), np.abs(l2)
    radius = np.maximum(r1, r2)
    dom = np.where(r1 >= r2, l1, l2)
    cpx = np.abs(l1.imag) > 1e-12 * np.maximum(1, radius)
    code = np.where(radius >= 1, 3, np.where(cpx, 2, np.where(dom.real < 0, 1, 0)))
    return PhaseDiagram(a, axis, name, radius, code)


# --- error of the continuous thresholds -------------------------------------------------

def threshold_error_table(momenta=(0.0, 0.5, 0.9, 0.99), refresh_intervals=range(1, 65)):
    """Rows comparing the exact threshold in eta K with the two continuous ones.

    For each momentum and refresh interval k: exact ``min(flip, complex)``, the
    published ``(1-mu)/k`` and the mean-lag ``2(1-mu)/(k-1)`` thresholds, their
    relative errors ``(continuous - exact)/exact`` and the binding condition.
    """
    pub = _num("discrete.published_threshold_learning_rate")
    mean = _num("discrete.mean_lag_threshold_learning_rate")
    rows = []
    for mu in momenta:
        for k in refresh_intervals:
            flip, cx, _ = refresh_thresholds(mu, k)
            exact = float(min(flip, cx))
            p = float(pub(mu, k))
            with np.errstate(divide="ignore"):
                m = float(mean(mu, float(k))) if k > 1 else math.inf
            rows.append({"momentum": mu, "refresh_interval": k, "eta_K_exact": exact,
                         "binding": "flip" if flip <= cx else "complex",
                         "eta_K_published": p, "eta_K_mean_lag": m,
                         "rel_error_published": (p - exact) / exact,
                         "rel_error_mean_lag": (m - exact) / exact})
    return rows


def refresh_interval_error_table(momenta=(0.0, 0.5, 0.9, 0.99), eta_K=(1e-3, 1e-2, 0.1, 0.5)):
    """Rows comparing the exact max stable refresh interval with the continuous ones.

    Published: floor((1-mu)/(eta K)) (strict inequality: one less on equality);
    mean lag: the largest integer k with (k-1)/2 < (1-mu)/(eta K).
    """
    rows = []
    for mu in momenta:
        for a in eta_K:
            exact = _max_k_stale(a, mu)
            bound = float(get("oscillator.published_threshold").numeric(mu, 1.0, a))  # (1-mu)/(eta K)
            pub = _published_k_max(bound)
            mean = int(get("discrete.mean_lag_max_refresh_interval").numeric(mu, 1.0, a))
            rows.append({"momentum": mu, "eta_K": a, "k_max_exact": exact,
                         "k_max_published": pub, "k_max_mean_lag": mean,
                         "rel_error_published": (pub - exact) / exact if exact else math.nan,
                         "rel_error_mean_lag": (mean - exact) / exact if exact else math.nan})
    return rows
