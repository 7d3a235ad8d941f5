r"""Level L1: the exact mean-field drift of the logit under GRPO on a softmax bandit.

Setting (``docs/theory.md``, "Setting"): success probability :math:`p = \sigma(z)`, a group of
:math:`G` actions from :math:`\pi_{\mathrm{old}}` with :math:`n` correct
(:math:`n \sim \mathrm{Bin}(G, p_{\mathrm{old}})`), advantages normalized by
the group mean (``mean``) or mean and Bessel-corrected std plus
:math:`\epsilon` (``std``), a surrogate that ignores the importance ratio
(``stale``) or keeps it (``ratio``), and a KL penalty ``none``, ``exact``
(analytic :math:`\mathrm{KL}(\pi_\theta\|\pi_{\mathrm{ref}})`) or ``k3`` (the
per-sample estimator of TRL and verl).

The expected update of the logit per unit learning rate is

.. math::  F(z, z_{\mathrm{old}}) = \kappa\,\big[R\,\mathcal{A}_G(p_{\mathrm{old}}) - \beta\,\Phi(z, z_{\mathrm{old}})\big]

with :math:`\kappa = |\nabla_\theta z|^2 = K/(c(K-c))` the softmax metric factor
(2 for two actions), :math:`\mathcal{A}_G` the expected advantage mass on the
correct actions (an exact binomial sum), :math:`R` the importance-ratio factor
(1 for ``stale``) and :math:`\Phi` the KL force.  Everything is derived below
from the definitions, not typed in; probabilities are carried as independent
symbols :math:`p` and :math:`q = 1-p` so that :math:`d/dz = pq(\partial_p - \partial_q)`
is exact and the numerics stay accurate as :math:`p \to 1`.
"""

from __future__ import annotations

import functools
import itertools
import math

import mpmath
import numpy as np
import sympy as sp
from grpo_theory.theory.lazy_scipy import expit

from grpo_theory.model import KL_KINDS, NORMALIZATIONS, SURROGATES, GRPOModel
from grpo_theory.theory import symbols as S
from grpo_theory.theory.derived import Derived, derivation, get, prove_equal, prove_zero, taylor
from grpo_theory.theory.printing import latex, root
from grpo_theory.theory.printing import sci as _sci
from grpo_theory.validate import ParameterError, check_int

__all__ = [
    "drift_name",
    "d_dz",
    "d_dz_old",
    "on_simplex",
    "drift",
    "drift_components",
    "force_parts",
    "expected_advantage",
    "degenerate_probability",
    "update_variance",
    "geometric_factor",
]

_P, _Q, _PO, _QO = S.p, S.q_fail, S.p_old, S.q_old
_PR, _QR = S.p_ref, S.q_ref
_MROUEH = ("mroueh2025",)
_G_REAL = sp.Symbol("G", positive=True)    # real stand-ins for the numerically safe log weight
_N_REAL = sp.Symbol("n", positive=True)


# ----------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------

def d_dz(expr):
    r"""Exact :math:`d/dz` of an expression in (p, q, z): :math:`pq(\partial_p - \partial_q) + \partial_z`."""
    return _P * _Q * (sp.diff(expr, _P) - sp.diff(expr, _Q)) + sp.diff(expr, S.z)


def d_dz_old(expr):
    r"""Exact :math:`d/dz_{\mathrm{old}}` of an expression in (p_old, q_old)."""
    return _PO * _QO * (sp.diff(expr, _PO) - sp.diff(expr, _QO)) + sp.diff(expr, S.z_old)


def on_simplex(expr):
    """Substitute q = 1 - p (and likewise for the old and reference policies).  The symbols are
    replaced where they occur (``xreplace``: the same expression as ``subs`` here, none of
    them is a bound variable, at a quarter of the time)."""
    return sp.sympify(expr).xreplace({_Q: 1 - _P, _QO: 1 - _PO, _QR: 1 - _PR})


def on_policy(expr):
    """Set the sampling policy equal to the current one (p_old = p, q_old = q); ``xreplace``
    as in :func:`on_simplex`."""
    return sp.sympify(expr).xreplace({_PO: _P, _QO: _Q, S.z_old: S.z})


#: where-definitions of the notation symbols a displayed form may use
#: ("notation": defined in the notation table, not restated under the equation)
_Z_DEF = (S.z, sp.log(_P / _Q), "notation")
_ZOLD_DEF = (S.z_old, sp.log(_PO / _QO), "notation")
_ZREF_DEF = (S.z_ref, sp.log(_PR / _QR), "notation")
#: the large-G group standard deviation of the sampling policy, sqrt(p_old q_old)
SD_INF = S.sd_inf


# ----------------------------------------------------------------------------------
# advantages of one group (definitions -> per-group advantage mass on correct actions)
# ----------------------------------------------------------------------------------

def _group_advantages(normalization):
    """(A_correct, A_wrong, s^2) for a group with n correct of G, derived from the definition."""
    G, n, eps = S.G, S.n, S.eps
    rbar = n / G
    s2 = sp.factor((n * (1 - rbar) ** 2 + (G - n) * rbar**2) / (G - 1))  # Bessel-corrected
    if normalization == "std":
        scale = sp.sqrt(s2) + eps
    else:
        scale = sp.Integer(1)
    return (1 - rbar) / scale, -rbar / scale, s2


def _advantage_sum(normalization):
    """(1/G) * sum of the advantages of the correct samples, in its simplest proven form."""
    G, n = S.G, S.n
    if normalization == "std":  # s^2 replaced by its proven closed form (see drift.advantage_sum_std)
        return n * (G - n) / G**2 / (sp.sqrt(n * (G - n) / (G * (G - 1))) + S.eps)
    return n * (G - n) / G**2


@derivation("drift.advantage_sum_std")
def _adv_std() -> Derived:
    a_c, a_w, s2 = _group_advantages("std")
    expr = _advantage_sum("std")
    out = Derived("drift.advantage_sum_std", expr, (S.n, S.G, S.eps), r"A_{+}(n)",
                  r"Advantage mass on the correct actions of a group with $n$ correct samples, "
                  r"$A_{+} = \frac{1}{G} \sum_{i\,\mathrm{correct}} A_{i}$, with GRPO's std "
                  r"normalization: each reward minus the group mean, divided by the Bessel-corrected "
                  r"group standard deviation $\hat{\sigma}_{n}$ plus $\epsilon$.",
                  units="reward per group standard deviation",
                  assumptions=r"binary rewards; $n$ correct out of $G$",
                  level="L1", references=("shao2024deepseekmath",),
                  title="Advantage mass of a group, std normalization")
    expr = out.expr
    out.show(S.n * (S.G - S.n) / (S.G**2 * (S.eps + S.sd_n)),
             [(S.sd_n, root(S.n * (S.G - S.n) / (S.G * (S.G - 1))), "")])
    out.check(r"Bessel-corrected variance: $\hat{\sigma}_{n}^{2} = n (G - n)/(G (G - 1))$", "sympy",
              prove_equal(s2, S.n * (S.G - S.n) / (S.G * (S.G - 1))))
    out.check("advantages sum to zero over the group", "sympy",
              prove_zero(S.n * a_c + (S.G - S.n) * a_w))
    out.check(r"$A_{+}(n)$ is $1/G$ times the sum of the advantages of the $n$ correct samples",
              "sympy",
              prove_zero((S.n * a_c / S.G - expr).subs(s2, S.n * (S.G - S.n) / (S.G * (S.G - 1))))
              and prove_equal(s2, S.n * (S.G - S.n) / (S.G * (S.G - 1))))
    out.check(r"degenerate groups ($n = 0$ or $n = G$) carry no advantage for $\epsilon > 0$", "sympy",
              expr.subs(S.n, 0) == 0 and sp.simplify(expr.subs(S.n, S.G)) == 0)
    return out


@derivation("drift.advantage_sum_mean")
def _adv_mean() -> Derived:
    a_c, a_w, _ = _group_advantages("mean")
    expr = sp.factor(_advantage_sum("mean"))
    out = Derived("drift.advantage_sum_mean", expr, (S.n, S.G), r"A_{+}(n)",
                  "Advantage mass on the correct actions of a group with $n$ correct samples with "
                  "mean-only normalization (each reward minus the group mean, as in Dr. GRPO).",
                  units="reward", assumptions=r"binary rewards; $n$ correct out of $G$", level="L1",
                  references=("liu2025drgrpo",),
                  title="Advantage mass of a group, mean normalization")
    expr = out.expr
    out.check("advantages sum to zero over the group", "sympy",
              prove_zero(S.n * a_c + (S.G - S.n) * a_w))
    out.check(r"$A_{+}(n)$ is $1/G$ times the sum of the advantages of the $n$ correct samples",
              "sympy", prove_zero(S.n * a_c / S.G - expr))
    return out


def _enumerate_outcomes(normalization, g):
    """Expected advantage mass by brute force over all 2^g reward vectors, from the definitions."""
    total = 0
    for rewards in itertools.product((0, 1), repeat=g):
        nc = sum(rewards)
        rbar = sp.Rational(nc, g)
        if normalization == "std":
            std = sp.sqrt(sum((r - rbar) ** 2 for r in rewards) / (g - 1))
            adv = [(r - rbar) / (std + S.eps) for r in rewards]
        else:
            adv = [r - rbar for r in rewards]
        weight = _PO**nc * _QO ** (g - nc)
        total += weight * sum(a_ for a_, r in zip(adv, rewards) if r == 1) / g
    return total


def advantage_sum_expr(normalization):
    return get(f"drift.advantage_sum_{normalization}").expr


# ----------------------------------------------------------------------------------
# softmax geometry and the per-group policy-gradient force
# ----------------------------------------------------------------------------------

@derivation("drift.geometric_factor")
def _kappa() -> Derived:
    expr = S.n_actions / (S.n_correct * (S.n_actions - S.n_correct))
    out = Derived("drift.geometric_factor", expr, (S.n_actions, S.n_correct), r"\kappa",
                  r"Softmax metric factor $\kappa = \lVert\nabla_{\theta} z\rVert^{2}$: an update of all "
                  r"$N_{\mathrm{act}}$ logits moves the success logit $z$ by $\kappa$ times the force computed in "
                  r"the one-logit picture ($N_{\mathrm{act}}$ actions, $c$ of them correct).",
                  units="dimensionless", assumptions=r"symmetric rewards: the $c$ correct actions share "
                  r"one logit, the $N_{\mathrm{act}} - c$ wrong ones another", level="L1",
                  title="Softmax metric factor")
    expr = out.expr
    ok = True
    for K_ in range(2, 7):
        for c_ in range(1, K_):
            th = sp.symbols(f"theta0:{K_}", real=True)
            zc = sp.log(sum(sp.exp(th[i]) for i in range(c_))) - sp.log(
                sum(sp.exp(th[i]) for i in range(c_, K_)))
            grad2 = sum(sp.diff(zc, v) ** 2 for v in th)
            sym = {th[i]: (S.z if i < c_ else 0) for i in range(K_)}
            ok &= prove_zero(grad2.subs(sym) - expr.subs({S.n_actions: K_, S.n_correct: c_}))
    out.check(r"$\lVert\nabla_{\theta} z\rVert^{2} = N_{\mathrm{act}}/(c (N_{\mathrm{act}} - c))$ at the symmetric point",
              "sympy", ok, cases=r"$N_{\mathrm{act}} \le 6$, $1 \le c < N_{\mathrm{act}}$")
    return out


def geometric_factor(actions, correct) -> float:
    """kappa = K/(c(K-c)) for K ``actions`` with ``correct`` of them correct, lambdified from
    ``drift.geometric_factor`` (the model's ``actions``/``correct``: 2 for two actions)."""
    return float(get("drift.geometric_factor").numeric(actions, correct))


def _grad_log_pi():
    """d/dz log pi(a) in the one-logit picture: (correct, wrong) = (q, -p), derived."""
    return d_dz(sp.log(_P)), d_dz(sp.log(_Q))


@derivation("drift.ratio_factor")
def _ratio_factor() -> Derived:
    # per-group force with the importance ratio rho = pi/pi_old (clip inactive):
    G, n = S.G, S.n
    a_c, a_w, _ = _group_advantages("std")
    g_c, g_w = _grad_log_pi()
    stale = (n * a_c * g_c + (G - n) * a_w * g_w) / G
    ratio = (n * a_c * (_P / _PO) * g_c + (G - n) * a_w * (_Q / _QO) * g_w) / G
    A_plus = _advantage_sum("std")
    R = _P * _Q / (_PO * _QO)
    out = Derived("drift.ratio_factor", R, (_P, _Q, _PO, _QO), r"\Psi",
                  r"Factor $\Psi$ by which the importance ratio $\pi_{\theta}/\pi_{\mathrm{old}}$ "
                  r"rescales the policy-gradient force inside the clip range (symmetric in GRPO, "
                  r"asymmetric in DAPO); $\Psi = 1$ on-policy and for the stale surrogate, which "
                  r"drops the ratio.",
                  units="dimensionless", assumptions="clip inactive (small steps)", level="L1",
                  references=("shao2024deepseekmath", "yu2025dapo"), title="Ratio factor")
    R = out.expr
    out.check(r"stale surrogate: the per-group force in $z$ equals $A_{+}(n)$ exactly "
              "(the advantages sum to zero)", "sympy", prove_zero(on_simplex(stale - A_plus)))
    out.check(r"ratio surrogate: the per-group force equals $\Psi\,A_{+}(n)$ for every $n$", "sympy",
              prove_zero(on_simplex(ratio - R * A_plus)))
    out.check(r"$\Psi = 1$ on-policy", "sympy", on_policy(R) == 1)
    return out


# ----------------------------------------------------------------------------------
# KL forces
# ----------------------------------------------------------------------------------

@derivation("drift.kl_force_exact")
def _kl_exact() -> Derived:
    kl = _P * sp.log(_P / _PR) + _Q * sp.log(_Q / _QR)
    force = sp.expand(d_dz(kl))
    force = sp.factor(sp.expand_log(force, force=True).subs(
        {sp.log(_P) - sp.log(_Q): sp.log(_P) - sp.log(_Q)}))
    expr = _P * _Q * (sp.log(_P / _Q) - sp.log(_PR / _QR))
    out = Derived("drift.kl_force_exact", expr, (_P, _Q, _PR, _QR), r"\Phi_{\mathrm{exact}}",
                  r"Gradient in $z$ of the analytic $\mathrm{KL}(\pi_{\theta} \,\|\, \pi_{\mathrm{ref}})$. "
                  r"It acts on the current iterate only.",
                  units=r"logits per unit $\beta$",
                  assumptions="two-class symmetric policy", level="L1",
                  title="KL force of the analytic KL penalty")
    expr = out.expr
    out.show(_P * _Q * (S.z - S.z_ref), [_Z_DEF, _ZREF_DEF])
    out.check(r"$\Phi_{\mathrm{exact}} = \frac{\mathrm{d}}{\mathrm{d}z} \mathrm{KL}(p \,\|\, p_{\mathrm{ref}})$, with "
              r"$\frac{\mathrm{d}}{\mathrm{d}z} = p q\,(\partial_{p} - \partial_{q})$", "sympy",
              prove_zero(on_simplex(sp.expand_log(d_dz(kl) - expr, force=True))))
    return out


@derivation("drift.kl_force_k3")
def _kl_k3() -> Derived:
    ell, ell_r = sp.symbols("ell ell_r", real=True)
    k3 = sp.exp(ell_r - ell) - (ell_r - ell) - 1
    dk3 = sp.diff(k3, ell)  # chain rule: grad k3 = dk3/dell * grad log pi
    g_c, g_w = _grad_log_pi()
    per_c = dk3.subs({ell: sp.log(_P), ell_r: sp.log(_PR)}) * g_c
    per_w = dk3.subs({ell: sp.log(_Q), ell_r: sp.log(_QR)}) * g_w
    expr = sp.simplify(_PO * per_c + _QO * per_w)  # expectation over a ~ pi_old
    out = Derived("drift.kl_force_k3", expr, (_P, _Q, _PO, _QO, _PR, _QR), r"\Phi_{\mathrm{k3}}",
                  r"Expected gradient in $z$ of the k3 estimator of the KL divergence, "
                  r"$\pi_{\mathrm{ref}}/\pi_{\theta} - \log(\pi_{\mathrm{ref}}/\pi_{\theta}) - 1$ at "
                  r"each sampled action, the samples drawn from $\pi_{\mathrm{old}}$: the KL penalty of "
                  r"TRL and verl's low-variance KL.", units=r"logits per unit $\beta$",
                  assumptions="two-class symmetric policy", level="L1",
                  references=("schulman2020kl", "vonwerra2020trl", "sheng2025hybridflow"),
                  title="KL force of the k3 estimator")
    expr = out.expr
    on = on_simplex(on_policy(expr))
    out.check(r"on-policy the k3 force is $p - p_{\mathrm{ref}}$ (not $p q\,(z - z_{\mathrm{ref}})$)", "sympy",
              prove_zero(on - (_P - _PR)))
    rev_kl = -(_PR * sp.log(_P) + _QR * sp.log(_Q))
    out.check(r"on-policy it is the gradient of the reverse "
              r"$\mathrm{KL}(\pi_{\mathrm{ref}} \,\|\, \pi_{\theta})$", "sympy",
              prove_zero(on_simplex(d_dz(rev_kl)) - on))
    exact = get("drift.kl_force_exact").expr
    # (S.h is only a small displacement here); the difference is analytic at h = 0 (logarithms
    # of p_ref, q_ref > 0): its Taylor polynomials (sympy's series of it took 1 s)
    diff = on_simplex(exact).subs(_P, _PR + S.h) - on.subs(_P, _PR + S.h)
    out.check(r"the k3 and exact forces agree to first order at $p_{\mathrm{ref}}$ and differ at "
              "second order", "sympy",
              prove_zero(taylor(diff, S.h, 2)) and not prove_zero(taylor(diff, S.h, 3)))
    return out


@derivation("drift.kl_force_k1_reward")
def _kl_k1_reward() -> Derived:
    # verl use_kl_in_reward (k1): r'(a) = r(a) - beta (log pi_old(a) - log pi_ref(a)),
    # advantages r' - mean(r') (mean normalization), gradients at the current iterate.
    G, n = S.G, S.n
    r_c = 1 - S.beta * (sp.log(_PO) - sp.log(_PR))
    r_w = -S.beta * (sp.log(_QO) - sp.log(_QR))
    rbar = (n * r_c + (G - n) * r_w) / G
    g_c, g_w = _grad_log_pi()
    per_group = (n * (r_c - rbar) * g_c + (G - n) * (r_w - rbar) * g_w) / G
    A_plus = _advantage_sum("mean")
    gap = 1 - S.beta * (sp.log(_PO / _QO) - sp.log(_PR / _QR))     # r'_c - r'_w
    expr = get("drift.expected_advantage_mean").expr * (sp.log(_PO / _QO) - sp.log(_PR / _QR))
    out = Derived("drift.kl_force_k1_reward", expr, (_PO, _QO, _PR, _QR, S.G), r"\Phi_{\mathrm{k1}}",
                  r"KL in the reward (verl's option to subtract the k1 estimate "
                  r"$\beta \log(\pi_{\mathrm{old}}/\pi_{\mathrm{ref}})$ of the KL from each sampled "
                  r"reward, with mean normalization): the shifted rewards make the expected force "
                  r"$\mathcal{A}_{G}\,[1 - \beta (z_{\mathrm{old}} - z_{\mathrm{ref}})]$. "
                  r"It acts only through $\pi_{\mathrm{old}}$: the fresh stiffness $K_{f}$ is exactly $0$ "
                  r"and the fixed point is $z^{*} = z_{\mathrm{ref}} + 1/\beta$.",
                  units=r"logits per unit $\beta$", assumptions="two-class symmetric policy; mean "
                  r"normalization; times the ratio factor $\Psi$ for the ratio surrogate", level="L1",
                  references=("sheng2025hybridflow", "schulman2020kl"),
                  title="KL force of the k1 estimator in the reward")
    expr = out.expr
    out.show(S.A_G * (S.z_old - S.z_ref),
             [(S.A_G, get("drift.expected_advantage_mean").expr, "drift.expected_advantage_mean"),
              _ZOLD_DEF, _ZREF_DEF])
    out.check(r"per group, the stale force is "
              r"$A_{+}(n)\,[1 - \beta (z_{\mathrm{old}} - z_{\mathrm{ref}})]$ for every $n$", "sympy",
              prove_zero(sp.expand_log(on_simplex(per_group - A_plus * gap), force=True)))
    out.check(r"per group, the force does not depend on the current iterate: its derivative in "
              r"$z$ is $0$ ($K_{f} = 0$)", "sympy", prove_zero(on_simplex(d_dz(per_group))))
    A_G = get("drift.expected_advantage_mean").expr
    out.check(r"the expectation over $n \sim \mathrm{Bin}(G, p_{\mathrm{old}})$ of the per-group force "
              r"is $\mathcal{A}_{G} - \beta\,\Phi_{\mathrm{k1}}$", "sympy",
              all(prove_zero(sp.expand_log(on_simplex(
                  sp.Sum(sp.binomial(g, n) * _PO**n * _QO**(g - n) * (A_plus * gap).subs(G, g),
                         (n, 0, g)).doit() - (A_G - S.beta * expr).subs(G, g)), force=True))
                  for g in range(2, 9)), cases=r"$G = 2, \dots, 8$")
    return out


def kl_force_expr(kl):
    if kl == "none":
        return sp.Integer(0)
    return get(f"drift.kl_force_{kl}").expr


# ----------------------------------------------------------------------------------
# the expected advantage mass: finite G (binomial sum), its limit and 1/G correction
# ----------------------------------------------------------------------------------

#: A_+(n) as a function of n, for the displayed sums
_APLUS = sp.Function("A_{+}")


def _summand(normalization, p=_PO, q=_QO):
    return sp.binomial(S.G, S.n) * p**S.n * q ** (S.G - S.n) * advantage_sum_expr(normalization)


@derivation("drift.expected_advantage_std")
def _ea_std() -> Derived:
    expr = sp.Sum(_summand("std"), (S.n, 1, S.G - 1))
    out = Derived("drift.expected_advantage_std", expr, (_PO, _QO, S.G, S.eps),
                  r"\mathcal{A}_{G}",
                  r"Exact expected advantage mass on the correct actions at finite $G$, std "
                  r"normalization: the mean of $A_{+}(n)$ over the binomial number $n$ of correct "
                  r"samples (the degenerate groups $n = 0$ and $n = G$ contribute nothing).",
                  units="reward per group standard deviation",
                  assumptions=r"$n \sim \mathrm{Bin}(G, p_{\mathrm{old}})$", level="L1",
                  title="Expected advantage mass, std normalization, finite $G$")
    expr = out.expr
    out.show(sp.Sum(S.w_n * _APLUS(S.n), (S.n, 1, S.G - 1)),
             [(S.w_n, sp.binomial(S.G, S.n) * _PO**S.n * _QO ** (S.G - S.n), ""),
              (_APLUS(S.n), advantage_sum_expr("std"), "drift.advantage_sum_std")])
    ok = all(prove_zero(expr.subs(S.G, g).doit() - _enumerate_outcomes("std", g)) for g in range(2, 7))
    out.check(r"equals the brute-force expectation over all $2^{G}$ reward vectors", "sympy", ok,
              cases=r"$G = 2, \dots, 6$")
    return out


@derivation("drift.expected_advantage_mean")
def _ea_mean() -> Derived:
    summand = _summand("mean")
    expr = (1 - 1 / S.G) * _PO * _QO
    out = Derived("drift.expected_advantage_mean", expr, (_PO, _QO, S.G),
                  r"\mathcal{A}_{G}",
                  r"Exact expected advantage mass for mean-only normalization, in closed form at "
                  r"every finite $G$.", units="reward",
                  assumptions=r"$n \sim \mathrm{Bin}(G, p_{\mathrm{old}})$", level="L1",
                  references=("liu2025drgrpo",),
                  title="Expected advantage mass, mean normalization")
    expr = out.expr
    # factorial-moment identity n (G-n) C(G,n) = G (G-1) C(G-2, n-1) ...
    ident = sp.gammasimp(S.n * (S.G - S.n) * sp.binomial(S.G, S.n)
                         - S.G * (S.G - 1) * sp.binomial(S.G - 2, S.n - 1))
    out.check(r"$n (G - n) \binom{G}{n} = G (G - 1) \binom{G - 2}{n - 1}$", "sympy", ident == 0)
    # ... and the binomial theorem sum_j C(M,j) p^j q^(M-j) = (p+q)^M = 1
    M, j = sp.Symbol("M", integer=True, nonnegative=True), sp.Symbol("j", integer=True, nonnegative=True)
    bt = sp.Sum(sp.binomial(M, j) * _PO**j * _QO ** (M - j), (j, 0, M)).doit()
    bt_val = [a for a in sp.Mul.make_args(bt) if not isinstance(a, sp.Piecewise)]
    pw = [a for a in sp.Mul.make_args(bt) if isinstance(a, sp.Piecewise)]
    closed = sp.Mul(*bt_val) * (pw[0].args[0][0] if pw else 1)
    out.check(r"the binomial theorem, in the form used: the sum over $n$ of "
              r"$\binom{G - 2}{n - 1} p^{n - 1} q^{G - n - 1}$ is $(p + q)^{G - 2}$", "sympy",
              prove_zero(sp.powsimp(sp.simplify(closed - (_PO + _QO) ** M), force=True)))
    # so the sum is G(G-1) p q (p+q)^(G-2) / G^2 = (1 - 1/G) p q on the simplex.
    # (each finite sum written out term by term: what Sum.doit gives, in 1/10 of its time)
    explicit = all(prove_zero(on_simplex(sp.Add(*[summand.subs({S.G: g, S.n: k}) for k in range(g + 1)])
                                         - expr.subs(S.G, g)))
                   for g in range(2, 13))
    out.check(r"the explicit binomial sums equal $(1 - 1/G)\, p q$", "sympy", explicit,
              cases=r"$G = 2, \dots, 12$")
    out.check(r"equals the brute-force expectation over all $2^{G}$ reward vectors", "sympy",
              all(prove_zero(on_simplex(expr.subs(S.G, g) - _enumerate_outcomes("mean", g)))
                  for g in range(2, 7)), cases=r"$G = 2, \dots, 6$")
    return out


@derivation("drift.expected_advantage_std_limit")
def _ea_std_limit() -> Derived:
    u = S.u
    per_group = advantage_sum_expr("std").subs(S.n, u * S.G)
    lim = sp.limit(per_group, S.G, sp.oo)
    expr = _PO * _QO / (sp.sqrt(_PO * _QO) + S.eps)
    out = Derived("drift.expected_advantage_std_limit", expr, (_PO, _QO, S.eps),
                  r"\mathcal{A}_{\infty}",
                  r"Large-$G$ limit of the std-normalized advantage mass (the law of large "
                  r"numbers applied to $A_{+}(n)$ at $n/G \to p_{\mathrm{old}}$); the group standard "
                  r"deviation tends to $\hat{\sigma}_{\infty}$.",
                  units="reward per group standard deviation",
                  assumptions=r"$G \to \infty$ ($n/G \to p_{\mathrm{old}}$ by the law of large numbers)",
                  level="L1", title="Expected advantage mass, std normalization, large $G$")
    expr = out.expr
    out.show(_PO * _QO / (S.eps + SD_INF), [(SD_INF, root(_PO * _QO), "")])
    out.check(r"$\lim_{G \to \infty} A_{+}(n)$ at a fixed fraction $n/G = p$ of correct samples "
              r"equals $p q/(\sqrt{p q} + \epsilon)$", "sympy",
              prove_zero(lim - expr.subs({_PO: u, _QO: 1 - u})))
    return out


@functools.cache
def _std_correction_expansion():
    """The expansion of the delta-method mean in h = 1/G to O(h) and its O(h) coefficient
    (the costly part of the derivation; cached so that a mutation test's second rebuild of the
    record re-runs the checks, not the series).

    The series is taken of A_+(u G) at a fixed fraction u (to O(h)), before the delta method
    E[phi(n/G)] = phi(p) + phi''(p) p q/(2 G) + O(1/G^2) (binomial central moments): applied to
    that truncation T0(u) + h T1(u) it gives T0(p) + h (T1(p) + T0''(p) p q/2) + O(h^2) (the
    second derivative enters at O(h) only through the O(1) part T0, so T1'' is not computed).
    The same coefficients as the series of the whole mean."""
    u, h = S.u, S.h
    phi = advantage_sum_expr("std").subs(S.n, u * S.G)
    trunc = sp.series(phi.subs(S.G, 1 / h), h, 0, 2).removeO()      # A_+(u/h) to O(h)
    T0, T1 = trunc.coeff(h, 0), trunc.coeff(h, 1)
    ser = T0.subs(u, _PO) + h * (T1.subs(u, _PO) + sp.diff(T0, u, 2).subs(u, _PO) * _PO * (1 - _PO) / 2)
    # the truncation with its h coefficient factored (for the derivations appendix)
    shown = (phi, trunc.coeff(h, 0) + h * sp.factor(trunc.coeff(h, 1)))
    # the O(h) coefficient over one denominator and factored (sympy.polys: an equivalent form,
    # which the record proves equal to the form it shows); two simplify calls took 10x longer
    return ser, sp.factor(sp.together(ser.coeff(h, 1).subs(1 - _PO, _QO))), shown


@derivation("drift.expected_advantage_std_correction")
def _ea_std_corr() -> Derived:
    h = S.h
    ser, c1, (phi, trunc) = _std_correction_expansion()
    # shown in the readable form written with the large-G group std s = sqrt(p q), proven
    # equal to the derived coefficient c1 below (on the simplex q = 1 - p)
    sd = sp.sqrt(_PO * _QO)
    expr = -sd * (sd * (1 + 4 * _PO * _QO) + S.eps * (3 + 4 * _PO * _QO + 8 * S.eps * sd)) \
        / (8 * (sd + S.eps) ** 3)
    out = Derived("drift.expected_advantage_std_correction", expr, (_PO, _QO, S.eps),
                  r"\mathcal{A}^{(1)}",
                  r"Leading $1/G$ correction: "
                  r"$\mathcal{A}_{G} = \mathcal{A}_{\infty} + \mathcal{A}^{(1)}/G + O(1/G^{2})$ "
                  r"(std normalization), from the second-order Taylor expansion of $A_{+}(n)$ about "
                  r"$n = G p_{\mathrm{old}}$ with the binomial variance "
                  r"$p_{\mathrm{old}} q_{\mathrm{old}}/G$ of $n/G$.",
                  units="reward per group standard deviation",
                  assumptions=r"$p_{\mathrm{old}}$ fixed in $(0, 1)$, $G \to \infty$ (not uniform in "
                  r"$p_{\mathrm{old}}$)",
                  level="L1", title="The $1/G$ correction to the expected advantage mass")
    expr = out.expr
    out.step(r"the advantage mass of a group with $n = \hat{p} G$ correct samples", phi, r"A_{+}(\hat{p} G)")
    out.step(r"to first order in $h = 1/G$ at a fixed fraction $\hat{p}$, the coefficient of $h$ factored",
             trunc, order=h**2)
    out.step(r"$\mathcal{A}^{(1)}$ is the coefficient of $h$ in the mean of this over the binomial "
             r"$n/G$ (mean $p_{\mathrm{old}}$, variance $p_{\mathrm{old}} q_{\mathrm{old}} h$) to "
             r"second order, $A(p_{\mathrm{old}}) + \tfrac{1}{2} p_{\mathrm{old}} q_{\mathrm{old}} h\, "
             r"\partial_{\hat{p}}^{2} A(p_{\mathrm{old}})$ with $A$ the expansion above; "
             r"its $O(1)$ term, simplified, is the large-$G$ limit", sp.simplify(ser.coeff(h, 0)),
             r"\mathcal{A}_{\infty}")
    out.show(-SD_INF * (SD_INF * (1 + 4 * _PO * _QO) + S.eps * (3 + 4 * _PO * _QO + 8 * S.eps * SD_INF))
             / (8 * (SD_INF + S.eps) ** 3), [(SD_INF, root(_PO * _QO), "")])
    out.check(r"the form shown equals the coefficient of $1/G$ in the expansion (on the "
              r"simplex $q = 1 - p$)", "sympy", prove_equal(on_simplex(expr), on_simplex(c1)),
              rf"the coefficient as derived: ${latex(c1)}$")
    ser0 = sp.simplify(on_simplex(ser.coeff(h, 0)) - on_simplex(get("drift.expected_advantage_std_limit").expr))
    out.check(r"the $O(1)$ term of the expansion is the large-$G$ limit", "sympy", prove_zero(ser0))
    # high precision: the residual of the exact binomial sum is O(1/G^2)
    _verify_correction(out, "std", expr)
    return out


def _verify_correction(out, normalization, c1_expr):
    lim = get(f"drift.expected_advantage_{normalization}_limit").expr
    summand = sp.lambdify((S.n, S.G, _PO, _QO, S.eps), _summand(normalization), "mpmath")
    c1 = sp.lambdify((_PO, _QO, S.eps), c1_expr, "mpmath")
    limf = sp.lambdify((_PO, _QO, S.eps), lim, "mpmath")
    ratios = []
    with mpmath.workdps(40):
        for pv, ev in ((mpmath.mpf("0.3"), 0), (mpmath.mpf("0.55"), mpmath.mpf("1e-2"))):
            res = []
            for g in (100, 200, 400):
                exact = mpmath.fsum(summand(k_, g, pv, 1 - pv, ev) for k_ in range(1, g))
                res.append((exact - limf(pv, 1 - pv, ev) - c1(pv, 1 - pv, ev) / g) * g**2)
            ratios.append((res[2] / res[1], res[1] / res[0]))
    ok = all(abs(r - 1) < 0.1 for pair in ratios for r in pair)
    out.check(r"the exact binomial sum minus $(\mathcal{A}_{\infty} + \mathcal{A}^{(1)}/G)$ is "
              r"$O(1/G^{2})$: $G^{2}$ times the residual converges ($G = 100, 200, 400$; "
              "40 digits)", "mpmath", ok,
              r"successive ratios of the $G^{2}$ residuals ($p = 0.3$ with $\epsilon = 0$, then "
              r"$p = 0.55$ with $\epsilon = 10^{-2}$): "
              + "; ".join(f"${float(a):.3f}$ and ${float(b):.3f}$" for a, b in ratios))


@derivation("drift.binomial_log_weight")
def _log_weight() -> Derived:
    pmf = sp.binomial(S.G, S.n) * _PO**S.n * _QO ** (S.G - S.n)
    # real-positive stand-ins keep loggamma unevaluated (it lambdifies to scipy's gammaln;
    # with integer symbols sympy turns it into log(gamma(.)), which overflows at large G)
    Gr, nr = _G_REAL, _N_REAL
    expr = (sp.loggamma(Gr + 1) - sp.loggamma(nr + 1) - sp.loggamma(Gr - nr + 1)
            + nr * sp.log(_PO) + (Gr - nr) * sp.log(_QO))
    out = Derived("drift.binomial_log_weight", expr, (nr, Gr, _PO, _QO), r"\log w_n",
                  r"Logarithm of the binomial weight of $n$ correct samples (the numerically safe form "
                  r"of the weights in the finite-$G$ sums: no overflow of $\binom{G}{n}$ at large $G$).",
                  units="dimensionless", level="L1", title="Binomial weight of a group, in logarithms")
    expr = out.expr
    as_log_gamma = expr.replace(sp.loggamma, lambda arg: sp.log(sp.gamma(arg))).subs({Gr: S.G, nr: S.n})
    out.check(r"$\log w_{n} = \log\left(\binom{G}{n} p_{\mathrm{old}}^{n} q_{\mathrm{old}}^{G - n}\right)$ "
              r"(with $\log \Gamma$ at arguments of at least 1)",
              "sympy",
              prove_zero(sp.expand_log(sp.log(pmf.rewrite(sp.gamma)), force=True)
                         - sp.expand_log(as_log_gamma, force=True)))
    score = sp.simplify(d_dz_old(sp.exp(expr)) / sp.exp(expr)).subs({Gr: S.G, nr: S.n})
    out.check(r"the derivative of $\log w_{n}$ in $z_{\mathrm{old}}$ is "
              r"$n q_{\mathrm{old}} - (G - n) p_{\mathrm{old}}$, which is $n - G p_{\mathrm{old}}$ on the "
              "simplex", "sympy", prove_zero(on_simplex(score) - (S.n - S.G * _PO)),
              "the derivative before the substitution $q_{\\mathrm{old}} = 1 - p_{\\mathrm{old}}$: "
              f"${latex(score)}$")
    return out


@derivation("drift.degenerate_probability")
def _degenerate() -> Derived:
    pmf = sp.binomial(S.G, S.n) * _P**S.n * _Q ** (S.G - S.n)
    expr = pmf.subs(S.n, 0) + pmf.subs(S.n, S.G)
    expr = sp.simplify(expr)
    out = Derived("drift.degenerate_probability", expr, (_P, _Q, S.G), r"P_{\mathrm{deg}}",
                  r"Probability that a group is degenerate (all rewards equal: zero variance, "
                  r"zero advantage): $p^{G} + (1 - p)^{G}$.", units="probability",
                  assumptions="binary rewards, homogeneous prompt difficulty", level="L1",
                  title="Probability of a degenerate group")
    expr = out.expr
    out.check(r"$\Pr(n = 0) + \Pr(n = G) = p^{G} + q^{G}$", "sympy", prove_equal(expr, _P**S.G + _Q**S.G))
    return out


# ----------------------------------------------------------------------------------
# the full drift, its derivatives and noise
# ----------------------------------------------------------------------------------

def _advantage_expr(normalization, finite: bool):
    if normalization == "mean":
        e = get("drift.expected_advantage_mean").expr
        return e if finite else sp.limit(e, S.G, sp.oo)
    if finite:
        return get("drift.expected_advantage_std").expr
    return get("drift.expected_advantage_std_limit").expr


def drift_expr(normalization, kl, surrogate, finite=True):
    r"""The sympy expression of :math:`F(z, z_{\mathrm{old}})` for one variant (finite G as a Sum);
    the variant as the model's option names (:data:`grpo_theory.model.NORMALIZATIONS`, ...)."""
    R = get("drift.ratio_factor").expr if surrogate == "ratio" else sp.Integer(1)
    A = _advantage_expr(normalization, finite)
    Phi = kl_force_expr(kl)
    if kl == "k1_reward":   # a reward shift: the ratio rescales it with the advantage
        Phi = R * (Phi if finite else sp.limit(Phi, S.G, sp.oo))
    return S.kappa * (R * A - S.beta * Phi)


def _objective_gradient(normalization, kl, surrogate, g):
    """kappa d/dz of the expected GRPO objective of one group of g samples, built from the
    definitions: every reward vector r in {0,1}^g drawn from pi_old, advantages from the
    group mean (and Bessel std + epsilon), the surrogate (1/g) sum_i A_i log pi(a_i)
    (``stale``) or (1/g) sum_i A_i pi(a_i)/pi_old(a_i) (``ratio``, clip inactive), minus
    beta KL(pi || pi_ref) (``exact``) or beta (1/g) sum_i k3(a_i) (``k3``).  With
    ``k1_reward`` (verl use_kl_in_reward) each sample's reward is shifted before the
    advantage: r'_i = r_i - beta (log pi_old(a_i) - log pi_ref(a_i)), A_i = r'_i - mean(r')
    (mean normalization only), and the objective has no separate KL term.

    d/dz is linear: the surrogate's part and the KL penalty's part are differentiated apart
    (:func:`_surrogate_gradient`, :func:`_kl_penalty_gradient`), each once per process for the
    variants that share it (the same derivative of the same objective, in a third of the time)."""
    if kl == "k1_reward":
        if normalization != "mean":
            raise ValueError("k1_reward is defined with mean normalization only")
        return S.kappa * _surrogate_gradient("k1_reward", surrogate, g)
    return S.kappa * (_surrogate_gradient(normalization, surrogate, g) + _kl_penalty_gradient(kl, g))


@functools.cache
def _surrogate_gradient(advantages, surrogate, g):
    """d/dz of the expected surrogate of one group of g samples (see :func:`_objective_gradient`),
    with the advantages of ``advantages``: ``"std"``, ``"mean"`` or ``"k1_reward"`` (mean
    normalization of the KL-shifted rewards)."""
    total = 0
    for rewards in itertools.product((0, 1), repeat=g):
        nc = sum(rewards)
        pi = [_P if r else _Q for r in rewards]
        pi_old = [_PO if r else _QO for r in rewards]
        pi_ref = [_PR if r else _QR for r in rewards]
        if advantages == "k1_reward":
            shifted = [r - S.beta * (sp.log(xo) - sp.log(xr))
                       for r, xo, xr in zip(rewards, pi_old, pi_ref)]
            rbar = sum(shifted) / g
            adv = [r - rbar for r in shifted]
        elif advantages == "std":
            rbar = sp.Rational(nc, g)
            std = sp.sqrt(sum((r - rbar) ** 2 for r in rewards) / (g - 1))
            adv = [(r - rbar) / (std + S.eps) for r in rewards]
        else:
            rbar = sp.Rational(nc, g)
            adv = [r - rbar for r in rewards]
        if surrogate == "stale":
            J = sum(A * sp.log(x) for A, x in zip(adv, pi)) / g
        else:
            J = sum(A * x / xo for A, x, xo in zip(adv, pi, pi_old)) / g
        total += _PO**nc * _QO ** (g - nc) * J
    return d_dz(total)


@functools.cache
def _kl_penalty_gradient(kl, g):
    """d/dz of minus beta times the expected KL penalty of one group of g samples: ``exact``
    KL(pi || pi_ref), ``k3`` the mean of the k3 estimator over the samples (drawn from
    pi_old), ``none`` nothing."""
    total = 0
    if kl == "k3":
        for rewards in itertools.product((0, 1), repeat=g):
            nc = sum(rewards)
            pi = [_P if r else _Q for r in rewards]
            pi_ref = [_PR if r else _QR for r in rewards]
            J = -S.beta * sum(xr / x - sp.log(xr / x) - 1 for x, xr in zip(pi, pi_ref)) / g
            total += _PO**nc * _QO ** (g - nc) * J
    elif kl == "exact":
        total = -S.beta * (_P * sp.log(_P / _PR) + _Q * sp.log(_Q / _QR))
    return d_dz(total)


#: the variants in words, for the descriptions and titles of the drift records
_NORM_WORDS = {"std": "std normalization", "mean": "mean-only normalization"}
_KL_WORDS = {"none": "no KL penalty", "exact": "analytic KL penalty", "k3": "k3 KL estimator",
             "k1_reward": "KL in the reward (k1 estimator)"}
_KL_TITLE = {"none": "no KL", "exact": "analytic KL", "k3": "k3 KL", "k1_reward": "k1 KL in the reward"}
_KL_SYMBOL = {"exact": (S.Phi_exact, "drift.kl_force_exact"), "k3": (S.Phi_k3, "drift.kl_force_k3"),
              "k1_reward": (S.Phi_k1, "drift.kl_force_k1_reward")}
_NORM_REFS = {"std": ("shao2024deepseekmath",), "mean": ("liu2025drgrpo",)}
_KL_REFS = {"none": (), "exact": (), "k3": ("schulman2020kl",), "k1_reward": ("sheng2025hybridflow",)}


def _drift_display(norm, kl, sur, finite):
    """The drift of one variant as the document shows it, kappa (Psi A - beta Phi), with the
    pieces that are records of their own named (and the definitions to substitute)."""
    where = []
    R = sp.Integer(1)
    if sur == "ratio":
        R = S.Psi
        where.append((S.Psi, get("drift.ratio_factor").expr, "drift.ratio_factor"))
    if norm == "mean" and not finite:
        A = _PO * _QO
    else:
        name = (f"drift.expected_advantage_{norm}" if finite
                else "drift.expected_advantage_std_limit")
        A = S.A_G if finite else S.A_inf
        where.append((A, get(name).expr, name))
    if kl == "none":
        Phi = sp.Integer(0)
    elif kl == "k1_reward" and not finite:
        Phi = R * _PO * _QO * (S.z_old - S.z_ref)
        where += [_ZOLD_DEF, _ZREF_DEF]
    else:
        sym, name = _KL_SYMBOL[kl]
        Phi = sym * (R if kl == "k1_reward" else 1)
        where.append((sym, get(name).expr, name))
    if kl == "k1_reward":
        form = S.kappa * R * (A - S.beta * Phi / R)
    else:
        form = S.kappa * (R * A - S.beta * Phi)
    return form, where


def drift_name(normalization, kl, surrogate, finite: bool) -> str:
    """The record name of the drift of one variant (finite G or the G -> infinity limit)."""
    return f"drift.F_{normalization}_{kl}_{surrogate}_{'G' if finite else 'inf'}"


def _register_drift_variants():
    for norm in NORMALIZATIONS:
        for kl in KL_KINDS:
            for sur in SURROGATES:
                for finite in (True, False):
                    if kl == "k1_reward" and norm != "mean":
                        continue
                    name = drift_name(norm, kl, sur, finite)

                    def build(norm=norm, kl=kl, sur=sur, finite=finite, name=name) -> Derived:
                        expr = drift_expr(norm, kl, sur, finite)
                        args = (_P, _Q, _PO, _QO, _PR, _QR, S.kappa, S.beta, S.G, S.eps)
                        out = Derived(
                            name, expr, args, r"F(z, z_{\mathrm{old}})",
                            f"Expected logit update per unit learning rate: {_NORM_WORDS[norm]}, "
                            f"{_KL_WORDS[kl]}, {sur} surrogate, "
                            f"{'exact at finite $G$' if finite else 'large-$G$ limit'}.",
                            units="logits per step per unit learning rate",
                            assumptions="mean field (expectation over the group); clip inactive; "
                                        "$q = 1 - p$", level="L1",
                            references=_NORM_REFS[norm] + _KL_REFS[kl],
                            title=(f"Drift: {norm} normalization, {_KL_TITLE[kl]}, {sur} surrogate, "
                                   + ("finite $G$" if finite else "$G \\to \\infty$")))
                        expr = out.expr
                        out.show(*_drift_display(norm, kl, sur, finite))
                        if finite:
                            ok = all(prove_zero(on_simplex(
                                sp.expand_log(expr.subs(S.G, g).doit()
                                              - _objective_gradient(norm, kl, sur, g), force=True)))
                                for g in (2, 3, 4))
                            out.check(r"equals $\kappa\, \mathrm{d}/\mathrm{d}z$ of the expected "
                                      r"GRPO objective built from its definition (all $2^{G}$ reward "
                                      r"vectors, advantages, surrogate, KL)", "sympy", ok,
                                      cases="$G = 2, 3, 4$")
                        elif kl == "k1_reward":
                            # the KL term is a reward shift inside the advantage: the limit is
                            # taken of the finite-G drift, proven from the objective's definition
                            F_G = get(name[:-len("inf")] + "G").expr
                            out.check(r"equals the $G \to \infty$ limit of the finite-$G$ drift "
                                      r"(checked under that result against $\kappa\, \mathrm{d}/\mathrm{d}z$ "
                                      r"of the expected objective with the KL-shifted rewards)", "sympy",
                                      prove_zero(sp.expand_log(
                                          expr - sp.limit(F_G, S.G, sp.oo), force=True)))
                        # (otherwise the displayed form, proven above, is the G -> infinity limit
                        # of the expected advantage with the same ratio factor and KL force)
                        on = on_policy(expr)
                        out.check("on-policy, the ratio and stale surrogates give the same drift",
                                  "sympy",
                                  prove_zero(on - on_policy(drift_expr(norm, kl, "stale", finite))))
                        return out

                    derivation(name)(build)


_register_drift_variants()


# ----------------------------------------------------------------------------------
# numerics
# ----------------------------------------------------------------------------------

@functools.cache
def _pieces(normalization, kl, surrogate, finite):
    """Lambdified pieces: value and z / z_old derivatives of R, A and Phi."""
    R = get("drift.ratio_factor").expr if surrogate == "ratio" else sp.Integer(1)
    Phi = kl_force_expr(kl)
    if kl == "k1_reward":   # a reward shift: the ratio rescales it with the advantage
        Phi = R * (Phi if finite else sp.limit(Phi, S.G, sp.oo))
    if finite and normalization == "std":
        # sum_n w_n A_+(n) with w_n = exp(log w_n); d/dz_old w_n = w_n * score_n, the score
        # d/dz_old log w_n (expanded: n p_old + n q_old - G p_old, the form simplify gave the
        # quotient d/dz_old(w_n)/w_n, in 1/100 of its time)
        logw_d = get("drift.binomial_log_weight")
        weight = logw_d.numeric
        score = sp.lambdify(logw_d.args, sp.expand(d_dz_old(logw_d.expr)), "numpy")
        adv = sp.lambdify((S.n, S.G, S.eps), advantage_sum_expr("std"), "numpy")
        A_sum = lambda n, G, p, q, eps: np.exp(weight(n, G, p, q)) * adv(n, G, eps)  # noqa: E731
        dA_sum = lambda n, G, p, q, eps: (np.exp(weight(n, G, p, q)) * score(n, G, p, q)  # noqa: E731
                                          * adv(n, G, eps))
        A = dA = None
    else:
        A_expr = _advantage_expr(normalization, finite)
        A = sp.lambdify((_PO, _QO, S.G, S.eps), A_expr, "numpy")
        dA = sp.lambdify((_PO, _QO, S.G, S.eps), d_dz_old(A_expr), "numpy")
        A_sum = dA_sum = None
    args = (_P, _Q, _PO, _QO, _PR, _QR, S.z, S.z_old, S.G)
    lam = lambda e: sp.lambdify(args, e, "numpy")  # noqa: E731
    return dict(R=lam(R), dR_dz=lam(d_dz(R)), dR_dzo=lam(d_dz_old(R)),
                Phi=lam(Phi), dPhi_dz=lam(d_dz(Phi)), dPhi_dzo=lam(d_dz_old(Phi)),
                A=A, dA=dA, A_sum=A_sum, dA_sum=dA_sum)


#: above this group size the binomial sums run over the bulk of the weights only
_FULL_SUM_MAX_G = 4096
#: half-width of that window in binomial standard deviations: weights beyond are < e^{-84}
_WINDOW_SD = 13.0


def _binomial_sum(fn, G, p, q, eps):
    """sum_{n=1}^{G-1} fn(n, ...) (degenerate groups n = 0, G contribute exactly zero).

    For G > 4096 each p only sums n within 13 binomial standard deviations (plus 30) of
    G p: the omitted weights are below e^{-84} of the largest (the log weight is exact), so
    the sum is unchanged in double precision and G up to 10^6 costs O(sqrt(G)) per point."""
    p = np.asarray(p, dtype=float)
    q = np.broadcast_to(np.asarray(q, dtype=float), p.shape)
    if G <= _FULL_SUM_MAX_G:
        n = np.arange(1, G, dtype=float)
        out = fn(n.reshape((-1,) + (1,) * p.ndim), float(G), p[None, ...], q[None, ...], eps)
        return np.sum(out, axis=0)
    pf, qf = p.ravel(), q.ravel()
    half = np.ceil(_WINDOW_SD * np.sqrt(G * pf * qf) + 30.0)
    lo = np.clip(np.floor(G * pf) - half, 1, G - 1)
    hi = np.clip(np.floor(G * pf) + half, 1, G - 1)
    total = np.zeros(pf.shape)
    order = np.argsort(hi - lo)              # chunks of similar window width
    for start in range(0, pf.size, 256):
        sl = order[start:start + 256]
        width = int(np.max(hi[sl] - lo[sl])) + 1
        n = lo[None, sl] + np.arange(width, dtype=float)[:, None]
        inside = n <= hi[None, sl]
        vals = fn(np.minimum(n, hi[None, sl]), float(G), pf[None, sl], qf[None, sl], eps)
        total[sl] = np.sum(np.where(inside, vals, 0.0), axis=0)
    return total.reshape(p.shape)


def _refuse_where_the_clip_binds(p, q, po, qo, z, zo, clip_range):
    """The ratio drift is derived with the clip inactive: refuse (z, z_old) where an action's
    ratio pi/pi_old leaves the clip range, instead of answering for an unclipped loss."""
    lo, hi = clip_range
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.stack(np.broadcast_arrays(p / po, q / qo))
    bad = (ratios < lo) | (ratios > hi)
    if np.any(bad):
        i = np.argwhere(np.any(bad, axis=0).reshape(-1))[0][0]
        zb = np.broadcast_to(z, np.broadcast(z, zo).shape).reshape(-1)[i]
        zob = np.broadcast_to(zo, np.broadcast(z, zo).shape).reshape(-1)[i]
        raise ParameterError(
            "z_old", float(zob),
            f"a sampling logit whose ratios pi/pi_old stay inside the clip range [{lo:g}, {hi:g}] "
            f"at z = {float(zb):.6g} (the ratio-surrogate drift is derived with the clip "
            f"inactive; here the clip binds and the model does not apply)")


def drift_components(model: GRPOModel, z, z_old=None, *, clip: bool = True):
    """Value of F and its partial derivatives in z (current) and z_old (sampling policy).

    Returns a dict of numpy arrays ``F``, ``dF_dz``, ``dF_dzold`` (per unit learning rate)
    for the variant of ``model``.  The fresh stiffness is ``-dF_dz`` and the stale one
    ``-dF_dzold`` at a fixed point.  With ``surrogate="ratio"`` and a separate ``z_old``,
    raises ``ParameterError`` where a ratio leaves the model's clip range (the clipped loss
    is not modelled); ``clip=False`` asks explicitly for the unclipped ratio loss.
    """
    kap, R, dR, dRo, A, dA, Phi, dPhi, dPhio = force_parts(model, z, z_old, clip=clip)
    beta = model.effective_kl_coef
    F = kap * (R * A - beta * Phi)
    dF = kap * (dR * A - beta * dPhi)
    dFo = kap * (dRo * A + R * dA - beta * dPhio)
    return {"F": np.asarray(F, float), "dF_dz": np.asarray(dF, float), "dF_dzold": np.asarray(dFo, float)}


def force_parts(model: GRPOModel, z, z_old=None, *, clip: bool = True):
    r"""The pieces of the drift :math:`F = \kappa\,[R\,\mathcal A - \beta\,\Phi]` at ``(z,
    z_old)``: ``(kappa, R, dR/dz, dR/dz_old, A, dA/dz_old, Phi, dPhi/dz, dPhi/dz_old)`` (the
    model's ``kl_coef`` is not used; see :func:`drift_components` for the checks)."""
    z = np.asarray(z, dtype=float)
    zo = z if z_old is None else np.asarray(z_old, dtype=float)
    if not (np.all(np.isfinite(z)) and np.all(np.isfinite(zo))):
        raise ParameterError("z", z, "finite logits")
    G, eps = model.group_size, model.adv_eps
    kap = geometric_factor(model.actions, model.correct)
    p, q = expit(z), expit(-z)
    po, qo = expit(zo), expit(-zo)
    if model.surrogate == "ratio" and z_old is not None and clip:
        _refuse_where_the_clip_binds(p, q, po, qo, z, zo, model.clip_range)
    pc = _pieces(model.normalization, model.kl, model.surrogate, G is not None)
    pr = model.p_ref
    args = (p, q, po, qo, pr, 1 - pr, z, zo, G if G is not None else 0)
    if pc["A"] is not None:
        A = pc["A"](po, qo, G if G is not None else 0, eps)
        dA = pc["dA"](po, qo, G if G is not None else 0, eps)
    else:
        A = _binomial_sum(pc["A_sum"], G, po, qo, eps)
        dA = _binomial_sum(pc["dA_sum"], G, po, qo, eps)
    R, dR, dRo = (np.broadcast_to(pc[k](*args), z.shape) for k in ("R", "dR_dz", "dR_dzo"))
    Phi, dPhi, dPhio = (np.broadcast_to(pc[k](*args), z.shape) for k in ("Phi", "dPhi_dz", "dPhi_dzo"))
    return kap, R, dR, dRo, A, dA, Phi, dPhi, dPhio


def drift(model: GRPOModel, z, z_old=None, *, clip: bool = True):
    r"""Expected logit update per unit learning rate, :math:`F(z, z_{\mathrm{old}})` (logits/step/lr),
    of the variant of ``model``; lambdified from the ``drift.*`` derivations, finite G as the
    exact binomial sum (see :func:`drift_components`)."""
    return drift_components(model, z, z_old, clip=clip)["F"]


def expected_advantage(model: GRPOModel, p):
    """Exact expected advantage mass A_G(p) of the model's normalization, group size and
    epsilon (the G -> infinity limit for ``group_size=None``)."""
    G, eps = model.group_size, model.adv_eps
    p = np.asarray(p, dtype=float)
    pc = _pieces(model.normalization, "none", "stale", G is not None)
    if pc["A"] is not None:
        return np.asarray(pc["A"](p, 1 - p, G if G is not None else 0, eps), float) + 0 * p
    return _binomial_sum(pc["A_sum"], G, p, 1 - p, eps)


def degenerate_probability(p, group_size):
    """p^G + (1-p)^G, lambdified from ``drift.degenerate_probability``."""
    G = check_int("group_size", group_size, low=2, allowed="an integer >= 2")
    p = np.asarray(p, dtype=float)
    return get("drift.degenerate_probability").numeric(p, 1 - p, G)


# --- per-group update noise --------------------------------------------------------------

def _per_group_update(normalization, kl):
    """kappa*(A_+(n) - beta * k3 group term) for an on-policy group with n correct (per unit lr)."""
    A = advantage_sum_expr(normalization)
    if kl == "k1_reward":  # the shifted reward gap multiplies the advantage mass
        return S.kappa * A * (1 - S.beta * (sp.log(_P / _Q) - sp.log(_PR / _QR)))
    if kl != "k3":
        return S.kappa * A  # the exact KL gradient is analytic: no sampling noise
    ell, ell_r = sp.symbols("ell ell_r", real=True)
    k3 = sp.exp(ell_r - ell) - (ell_r - ell) - 1
    dk3 = sp.diff(k3, ell)
    g_c, g_w = _grad_log_pi()
    c_term = dk3.subs({ell: sp.log(_P), ell_r: sp.log(_PR)}) * g_c
    w_term = dk3.subs({ell: sp.log(_Q), ell_r: sp.log(_QR)}) * g_w
    return S.kappa * (A - S.beta * (S.n * c_term + (S.G - S.n) * w_term) / S.G)


@derivation("drift.update_variance_coefficient")
def _noise_coeff() -> Derived:
    # Var over n of the per-group update = (coefficient)/G + O(1/G^2), std normalization, exact KL
    u = S.u
    phi = _per_group_update("std", "exact").subs(S.n, u * S.G)
    phi_inf = sp.limit(phi, S.G, sp.oo)
    expr = sp.simplify(sp.diff(phi_inf, u).subs(u, _P) ** 2 * _P * (1 - _P))
    out = Derived("drift.update_variance_coefficient", expr, (_P, S.kappa, S.eps),
                  r"\sigma_{1}^{2}", r"Leading coefficient of the gradient-noise variance of "
                  r"the logit update: $\sigma^{2} = \sigma_{1}^{2}/(B G) + O(1/G^{2})$ per unit "
                  r"learning rate (std normalization, analytic KL; $B$ prompts per step, on-policy).",
                  units="logits$^2$ per unit learning rate$^2$",
                  assumptions=r"first-order Taylor expansion of the per-group update in $n/G$ about "
                              r"$p$, whose binomial variance is $p q/G$",
                  level="L1", title="Noise of the update at large $G$")
    expr = out.expr
    out.step(r"the update of a group with a fraction $\hat{p}$ of correct samples, as $G \to \infty$",
             phi_inf, r"\lim_{G \to \infty} \kappa A_{+}(\hat{p} G)")
    out.step(r"its slope at $u = p$, squared, times $G$ times the binomial variance $p q/G$ of $n/G$",
             sp.Subs(sp.Derivative(phi_inf, u) ** 2 * u * (1 - u), u, _P), r"\sigma_{1}^{2}")
    out.step("differentiated and simplified", expr)
    out.show(S.kappa**2 * _P * _Q * (2 * _P - 1) ** 2 * (2 * S.eps + SD_INF) ** 2
             / (4 * (S.eps + SD_INF) ** 4), [(SD_INF, root(_P * _Q), ""), (_Q, 1 - _P, "notation")])
    f = sp.lambdify((S.n, S.G, _P, _PR, S.kappa, S.beta, S.eps), _per_group_update("std", "exact"), "mpmath")
    cf = sp.lambdify((_P, S.kappa, S.eps), expr, "mpmath")
    extrapolated = []
    with mpmath.workdps(30):
        for pv in (mpmath.mpf("0.3"), mpmath.mpf("0.6")):
            vals = []
            for g in (400, 800, 1600):
                # the binomial coefficients as exact integers (mpmath.binomial goes through
                # gamma functions: 2.5 ms each here, for a less exact value)
                pmf = [math.comb(g, k_) * pv**k_ * (1 - pv) ** (g - k_) for k_ in range(g + 1)]
                xs = [f(k_, g, pv, pv, 2, 0, 0) if 0 < k_ < g else 0 for k_ in range(g + 1)]
                m1 = mpmath.fsum(w * x for w, x in zip(pmf, xs))
                var = mpmath.fsum(w * (x - m1) ** 2 for w, x in zip(pmf, xs))
                vals.append(var * g / cf(pv, 2, 0))
            # G Var / sigma_1^2 = 1 + c/G + O(1/G^2): Richardson removes the c/G term
            extrapolated += [2 * vals[1] - vals[0], 2 * vals[2] - vals[1]]
    errs = [abs(e - 1) for e in extrapolated]
    out.check(r"$G$ times the exact binomial variance over $\sigma_1^{2}$ is $1 + O(1/G)$: its "
              r"Richardson extrapolation ($G = 400, 800, 1600$; $p = 0.3, 0.6$; 30 digits) is 1 "
              r"within $2 \times 10^{-4}$", "numeric",
              max(errs) < 2e-4, "distance of the extrapolated values from 1: "
              + ", ".join(_sci(e) for e in errs))
    return out


@derivation("drift.update_variance_rare_failure")
def _noise_rare() -> Derived:
    # q = 1 - p -> 0 at fixed G: only the groups with exactly one failure (n = G - 1) contribute
    # at O(q); every other non-degenerate group has weight O(q^2), and the mean update is O(q).
    G, qq = S.G, _Q
    w_one_failure = G * (1 - qq) ** (G - 1) * qq                  # C(G, G-1) p^(G-1) q
    # its per-group logit update, at n = G - 1 written through m = G - 1 > 0 (a group with one
    # failure and a success has G >= 2): sqrt(m) sqrt(1/m) is then 1 whatever order sympy meets
    # the factors in (through G - 1 itself the printed form depended on the hash seed)
    m = sp.Symbol("m", positive=True)
    u = (S.kappa * advantage_sum_expr("std").subs({S.n: m, G: m + 1})).subs(m, G - 1)
    lead = taylor(w_one_failure, qq, 2)
    expr = sp.simplify(lead.coeff(qq, 1) * u**2)
    out = Derived("drift.update_variance_rare_failure", expr, (S.G, S.kappa, S.eps),
                  r"\lim_{q \to 0} \frac{\operatorname{Var}}{q}",
                  r"Rare-failure limit of the per-group update variance (std normalization, analytic or no "
                  r"KL): the variance is this coefficient times $1 - p$, plus $O((1 - p)^{2})$. At "
                  r"$\epsilon = 0$ it is $\kappa^{2} (1 - 1/G)^{2}$, independent of $G$: the single failing "
                  r"sample carries an advantage of order $\sqrt{G}$ and occurs with probability $G q$, so "
                  r"the $1/G$ law needs $G (1 - p) \gg 1$.",
                  units="logits$^2$ per unit learning rate$^2$ per unit failure probability",
                  assumptions=r"fixed $G$, $p \to 1$", level="L1",
                  title="Noise of the update when failures are rare")
    expr = out.expr
    out.step(r"the weight of a group with one failure", w_one_failure, r"\binom{G}{G - 1} p^{G - 1} q")
    out.step(r"to first order in $q$", lead, order=qq**2)
    out.step(r"the update of that group", u, r"\kappa A_{+}(G - 1)")
    out.step(r"the weight's coefficient of $q$ times the squared update, simplified", expr,
             r"\lim_{q \to 0} \frac{\operatorname{Var}}{q}")
    out.check(r"the one-failure weight is $G q + O(q^{2})$", "sympy", prove_zero(lead - G * qq))
    out.check(r"at $\epsilon = 0$ the coefficient is $\kappa^{2} (1 - 1/G)^{2}$", "sympy",
              prove_zero(expr.subs(S.eps, 0) - S.kappa**2 * (1 - 1 / G) ** 2))
    f = sp.lambdify((S.n, S.G, S.kappa, S.eps), S.kappa * advantage_sum_expr("std"), "mpmath")
    cf = sp.lambdify((S.G, S.kappa, S.eps), expr, "mpmath")
    ratios = []
    with mpmath.workdps(40):
        for g in (8, 64):
            for qv in (mpmath.mpf("1e-8"), mpmath.mpf("1e-10")):
                pv = 1 - qv
                w = [mpmath.binomial(g, k_) * pv**k_ * qv ** (g - k_) for k_ in range(g + 1)]
                x = [f(k_, g, 2, 0) if 0 < k_ < g else 0 for k_ in range(g + 1)]
                m1 = mpmath.fsum(a_ * b_ for a_, b_ in zip(w, x))
                var = mpmath.fsum(a_ * (b_ - m1) ** 2 for a_, b_ in zip(w, x))
                ratios.append(var / (cf(g, 2, 0) * qv))
    errs = [abs(r - 1) for r in ratios]
    out.check(r"the exact binomial variance divided by the coefficient times $q$ tends to 1 with "
              r"error $O(q)$ ($G = 8, 64$; $q = 10^{-8}, 10^{-10}$; 40 digits)", "mpmath",
              all(e < 1e-5 for e in errs), "distance of the ratios from 1: "
              + ", ".join(_sci(e) for e in errs))
    return out


def update_variance(model: GRPOModel, p):
    """Exact variance of the on-policy per-step logit update per unit learning rate squared.

    Binomial sum over the number of correct samples of the per-group update
    (advantage term and, for ``kl="k3"``, the sampled k3 gradient; for ``kl="k1_reward"``
    the advantage term times the shifted reward gap, zero at the fixed point), divided by
    the model's ``prompts`` B.  Scales as 1/(B G) at large G.  Needs a finite group size.
    """
    G = model.group_size
    if G is None:
        raise ParameterError("group_size", "inf", "a finite integer >= 2 for a variance")
    kl, beta = model.kl, model.effective_kl_coef
    kap = geometric_factor(model.actions, model.correct)
    fn = _noise_fn(model.normalization, kl)
    p = np.atleast_1d(np.asarray(p, dtype=float))
    from scipy.stats import binom   # here, not at the top: scipy.stats takes a second to import

    n = np.arange(G + 1, dtype=float)[:, None]
    pmf = binom.pmf(n, G, p[None, :])
    with np.errstate(invalid="ignore", divide="ignore"):
        vals = fn(n, float(G), p[None, :], model.p_ref, kap, beta, model.adv_eps)
    degenerate = (n == 0) | (n == G)
    if kl != "k3":
        vals = np.where(degenerate, 0.0, vals)
    else:
        vals = np.where(degenerate & ~np.isfinite(vals), 0.0, vals)
    mean = np.sum(pmf * vals, axis=0)
    var = np.sum(pmf * (vals - mean) ** 2, axis=0) / model.prompts
    return var if var.size > 1 else var[0]


@functools.cache
def _noise_fn(normalization, kl):
    e = on_simplex(_per_group_update(normalization, kl))
    return sp.lambdify((S.n, S.G, _P, _PR, S.kappa, S.beta, S.eps), e, "numpy")
