r"""Reuse collapse: k passes over one finite batch, and the trust region of the clip.

A refresh window of :math:`k` optimizer steps that *reuses one batch* (TRL
``num_iterations``, verl ``ppo_epochs``, CS336 ``epochs_per_rollout_batch``) moves the policy
:math:`k` times along that batch's own gradient.  Chapter 7 (``reuse``) gives the linear
stationary variance; this chapter follows the window itself, on the batch, exactly where
it can:

1. **The log-prob surrogate moves linearly, for ever** (``reuse_collapse.logprob_step``).
   With group-normalised advantages the advantages of a batch sum to zero
   (:math:`\sum_b n_b A_b = 0`, mean or std normalisation), so the softmax's normaliser drops
   out of the gradient: each pass adds exactly :math:`\eta\,n_b A_b/G` to the logit of a
   sampled action :math:`b`, whatever the policy.  :math:`k` passes add :math:`k` times that:
   no saturation, any number of actions, no linearisation.
2. **The batch's noise is not averaged** (``reuse_collapse.advantage_mass_variance_mean``,
   ``reuse_collapse.window_noise_variance``).  On the success logit the per-pass push is
   :math:`\eta\kappa A_{+}(n)` with :math:`n \sim \mathrm{Bin}(G, p_{\mathrm{old}})` drawn
   once: the window's displacement has variance :math:`(k\eta\kappa)^{2} V_{A}/B`, against
   :math:`k(\eta\kappa)^{2} V_{A}/B` when every step draws a fresh batch from
   :math:`\pi_{\mathrm{old}}` — the noise displacement grows like :math:`k`, not
   :math:`\sqrt{k}` (exactly, for this surrogate).
3. **The ratio and the clip** (``reuse_collapse.ratio_window_passes``,
   ``reuse_collapse.clip_saturation``, ``reuse_collapse.saturated_batch_kl``).  With the
   importance ratio the push is rescaled by :math:`R = pq/(p_{\mathrm{old}}q_{\mathrm{old}})`
   (``drift.ratio_factor``); the correct samples carry the fraction :math:`q_{\mathrm{old}}`
   of it and stop once their ratio exceeds :math:`1+\epsilon_{h}`, the wrong ones carry
   :math:`p_{\mathrm{old}}` and stop once theirs falls below :math:`1-\epsilon_{l}`.  So the
   clipped window stalls at :math:`p_{\mathrm{sat}} = \max(p_{\mathrm{old}}(1+\epsilon_{h}),
   p_{\mathrm{old}} + \epsilon_{l} q_{\mathrm{old}})` whatever :math:`k`: the KL between the
   window's last and first policy is bounded by :math:`\approx \epsilon^{2}\max(p,q)^{2}/(2pq)`.
   Without the clip nothing stops it: the ratio surrogate keeps moving (logarithmically) and
   the log-prob surrogate linearly, and the batch's KL grows without bound.
4. **The trust-region number** (``reuse_collapse.passes_to_clip``).  A sample's log-ratio
   grows by :math:`\delta = \eta\kappa A_{+} q_{\mathrm{old}}` per pass; the window stays
   inside the clip region on its own batch while :math:`(P-1)\,\delta < \log(1+\epsilon_{h})`,
   :math:`P` the passes over each sample.  In a network every sample's log-probability is a
   shared function of the parameters, so :math:`\delta` is the sample's own (self) push per
   pass, :math:`\eta` times the diagonal of the per-sample tangent kernel: it must be
   measured (the ratio statistics of a run that revisits its samples); the clip stops a
   sample's own push but not the push its neighbours give it.

Level L1/L2 (exact map of one window on one batch); the one-logit picture (two actions, or
symmetric rewards) for items 2-4, any number of actions for item 1; SGD, no KL term.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import sympy as sp

from grpo_theory.theory import symbols as S
from grpo_theory.theory.derived import (Derived, derivation, get, prove_equal, prove_zero,
                                        record_numeric)
from grpo_theory.validate import ParameterError, check_int, check_real

__all__ = ["passes_to_clip", "saturation_probability", "trust_region_number",
           "window_noise_variance", "advantage_mass_variance_mean"]

_PO, _QO, _P, _Q = S.p_old, S.q_old, S.p, S.q_fail
eps_h = sp.Symbol("epsilon_h", positive=True)    #: upper clip width (ratio <= 1 + eps_h)
eps_l = sp.Symbol("epsilon_l", positive=True)    #: lower clip width (ratio >= 1 - eps_l)
eps_c = sp.Symbol("epsilon_c", positive=True)    #: a symmetric clip width
A_plus = sp.Symbol("A_+", positive=True)         #: advantage mass on the correct samples
V_A = sp.Symbol("V_A", positive=True)            #: its variance over batches
B = sp.Symbol("B", integer=True, positive=True)  #: prompts per batch
j = sp.Symbol("j", positive=True)                #: passes over the batch
n_b = sp.Symbol("n_b", integer=True, positive=True)
A_b = sp.Symbol("A_b", real=True)
_LATEX = {**S.LATEX_NAMES, eps_h: r"\epsilon_{h}", eps_l: r"\epsilon_{l}", eps_c: r"\epsilon",
          A_plus: r"A_{+}", V_A: r"V_{A}", n_b: r"n_{b}", A_b: r"A_{b}"}


def _latex(e) -> str:
    return sp.latex(e, symbol_names=_LATEX)


# ----------------------------------------------------------------------------------
# 1. the log-prob surrogate: a constant push per pass, for any number of actions
# ----------------------------------------------------------------------------------

def _batch_gradient(K, normalization):
    """(theta, n, r, G, d/dtheta of the log-prob loss) for a K-action batch, symbolic."""
    th = sp.symbols(f"theta0:{K}", real=True)
    n = sp.symbols(f"n0:{K}", positive=True)
    r = sp.symbols(f"r0:{K}", real=True)
    G = sum(n)
    rbar = sum(ni * ri for ni, ri in zip(n, r)) / G
    if normalization == "std":
        scale = sp.sqrt(sum(ni * (ri - rbar) ** 2 for ni, ri in zip(n, r)) / (G - 1)) + S.eps
    else:
        scale = sp.Integer(1)
    A = [(ri - rbar) / scale for ri in r]
    logZ = sp.log(sum(sp.exp(t) for t in th))
    loss = -sum(ni * Ai * (ti - logZ) for ni, Ai, ti in zip(n, A, th)) / G
    return th, n, A, G, [sp.diff(loss, t) for t in th]


@derivation("reuse_collapse.logprob_step")
def _logprob_step() -> Derived:
    expr = S.eta * n_b * A_b / S.G
    out = Derived("reuse_collapse.logprob_step", expr, (S.eta, n_b, A_b, S.G),
                  r"\Delta\theta_{b}",
                  r"Change of the logit of a sampled action $b$ in one SGD pass over a batch with the "
                  r"log-prob surrogate $-\frac{1}{G}\sum_{i} A_{i} \log \pi_{\theta}(a_{i})$ "
                  r"($n_{b}$ samples of $b$ with advantage $A_{b}$; unsampled actions do not move). "
                  r"It does not depend on the policy, so $k$ passes over the same batch move the "
                  r"logits by exactly $k\,\Delta\theta_{b}$.",
                  units="logits per pass", level="L1",
                  assumptions=r"softmax policy over any number of actions; group-normalised "
                  r"advantages (mean or std, any rewards); SGD; no KL term in the loss")
    expr = out.expr
    ok_sum, ok_grad, ok_const = True, True, True
    for norm in ("mean", "std"):
        th, n, A, G, grad = _batch_gradient(3, norm)
        ok_sum &= prove_zero(sp.simplify(sum(ni * Ai for ni, Ai in zip(n, A))))
        for b in range(3):
            step = -S.eta * grad[b]
            target = expr.subs({n_b: n[b], A_b: A[b], S.G: G})
            ok_grad &= prove_equal(step, target)
            ok_const &= all(prove_zero(sp.diff(step, t)) for t in th)
    out.check(r"the advantages of a batch sum to zero, $\sum_{b} n_{b} A_{b} = 0$ (mean and std "
              r"normalisation, any rewards $r_{b}$; three actions, symbolic counts)", "sympy", ok_sum)
    out.check(r"$-\eta\,\partial L / \partial \theta_{b} = \eta\, n_{b} A_{b} / G$ for every action: "
              r"the softmax normaliser's term $\pi_{b}\sum_{c} n_{c} A_{c}$ vanishes", "sympy", ok_grad)
    out.check(r"the step does not depend on $\theta$ (every $\partial/\partial\theta_{c}$ of it is "
              r"$0$): the same push at every pass, so the window moves linearly in the passes",
              "sympy", ok_const)
    return out


# ----------------------------------------------------------------------------------
# 2. the batch's noise over a window: k, not sqrt(k)
# ----------------------------------------------------------------------------------

def _binomial_moment(k):
    """E[n^k] for n ~ Bin(G, p_old), from the moment generating function (symbolic G)."""
    t = sp.Symbol("t")
    M = (_QO + _PO * sp.exp(t)) ** S.G
    return sp.simplify(sp.diff(M, t, k).subs(t, 0).subs(_QO, 1 - _PO))


@derivation("reuse_collapse.advantage_mass_variance_mean")
def _va_mean() -> Derived:
    G, n = S.G, S.n
    a_plus = n * (G - n) / G**2                                  # drift.advantage_sum_mean
    poly = sp.Poly(sp.expand(a_plus**2 * G**4), n)
    e_a2 = sum(c * _binomial_moment(m[0]) for m, c in zip(poly.monoms(), poly.coeffs())) / G**4
    e_a = (G * _binomial_moment(1) - _binomial_moment(2)) / G**2
    var = sp.factor(sp.simplify(e_a2 - e_a**2))
    expr = (G - 1) * _PO * _QO * ((G - 1) * (1 - 4 * _PO * _QO) + 2 * _PO * _QO) / G**3
    out = Derived("reuse_collapse.advantage_mass_variance_mean", expr, (_PO, _QO, S.G), r"V_{A}",
                  r"Variance over batches of the advantage mass on the correct samples, "
                  r"$A_{+}(n) = n (G - n)/G^{2}$ (mean normalisation), for "
                  r"$n \sim \mathrm{Bin}(G, p_{\mathrm{old}})$: the noise of one group's push.",
                  units="reward$^2$", level="L1",
                  assumptions=r"binary rewards; mean normalisation (Dr. GRPO); one group")
    expr = out.expr
    out.check(r"$V_{A} = \mathrm{E}[A_{+}^{2}] - \mathrm{E}[A_{+}]^{2}$ from the binomial moments "
              r"(moment generating function $(q + p e^{t})^{G}$, symbolic $G$)", "sympy",
              prove_zero(sp.expand(var - expr.subs(_QO, 1 - _PO))))
    mean_ok = prove_equal(e_a, ((G - 1) * _PO * (1 - _PO) / G))
    out.check(r"its mean is $\mathrm{E}[A_{+}] = \frac{G - 1}{G} p_{\mathrm{old}} q_{\mathrm{old}}$, "
              r"the drift chapter's $\mathcal{A}_{G}$", "sympy",
              mean_ok and prove_zero(sp.expand(
                  get("drift.expected_advantage_mean").expr.subs(_QO, 1 - _PO).subs(G, 6)
                  - (5 * _PO * (1 - _PO) / 6))))
    ok = True
    for g in range(2, 9):
        terms = [sp.binomial(g, k) * _PO**k * (1 - _PO) ** (g - k) for k in range(g + 1)]
        m1 = sum(w * sp.Rational(k * (g - k), g**2) for k, w in enumerate(terms))
        m2 = sum(w * sp.Rational(k * (g - k), g**2) ** 2 for k, w in enumerate(terms))
        ok &= prove_zero(sp.expand(m2 - m1**2 - expr.subs({_QO: 1 - _PO, G: g})))
    out.check(r"equals the exact finite binomial sum for $G = 2, \dots, 8$", "sympy", ok)
    return out


def advantage_mass_variance_mean(p_old, group_size) -> float:
    """:math:`V_A` of ``reuse_collapse.advantage_mass_variance_mean`` (mean normalisation)."""
    p = check_real("p_old", p_old, low=0, high=1)
    G = check_int("group_size", group_size, low=2)
    return float(get("reuse_collapse.advantage_mass_variance_mean").numeric(p, 1.0 - p, G))


@derivation("reuse_collapse.window_noise_variance")
def _window_noise() -> Derived:
    k, eta, kap = S.k_ref, S.eta, S.kappa
    expr = k**2 * eta**2 * kap**2 * V_A / B
    out = Derived("reuse_collapse.window_noise_variance", expr, (k, S.eta, S.kappa, V_A, B),
                  r"\operatorname{Var}\,\Delta z_{\mathrm{batch}}",
                  r"Variance over batches of the success logit's displacement over a window of $k$ "
                  r"passes over one batch of $B$ groups (log-prob surrogate): one draw of the "
                  r"batch pushes $k$ times, $\Delta z = k\eta\kappa\,\bar A_{+}$. With a fresh batch "
                  r"from $\pi_{\mathrm{old}}$ at every step it is $k\,\eta^{2}\kappa^{2} V_{A}/B$: "
                  r"reuse multiplies the noise variance of the window by exactly $k$ (its standard "
                  r"deviation grows like $k$, not $\sqrt{k}$).",
                  units="logits$^2$", level="L2",
                  assumptions=r"log-prob surrogate (its push does not depend on the policy: "
                  r"$\texttt{reuse\_collapse.logprob\_step}$), binary rewards, symmetric actions "
                  r"(metric factor $\kappa$), $B$ independent groups per batch, SGD, no KL")
    expr = out.expr
    xs = sp.symbols("xi0:6", real=True)
    var = sp.Symbol("v", positive=True)

    def variance(lin):            # variance of a linear form of independent draws, each of variance v/B
        return sum(sp.diff(lin, x) ** 2 for x in xs) * var / B

    kk = 6
    batch = kk * eta * kap * xs[0]
    fresh = eta * kap * sum(xs[:kk])
    out.check(r"one draw pushed $k$ times has variance $k^{2}\eta^{2}\kappa^{2}V_{A}/B$ (at $k = 6$)",
              "sympy", prove_equal(variance(batch).subs(var, V_A), expr.subs(k, kk)))
    out.check(r"$k$ independent draws from $\pi_{\mathrm{old}}$ give $k\,\eta^{2}\kappa^{2}V_{A}/B$: the "
              r"ratio batch/fresh is $k$ (at $k = 6$)", "sympy",
              prove_equal(variance(batch) / variance(fresh), kk)
              and prove_equal(variance(fresh).subs(var, V_A) * kk, expr.subs(k, kk)))
    ok = True
    for g, p, kv, e, b in ((8, 0.3, 4, 0.05, 16), (5, 0.6, 16, 0.01, 64)):
        va = float(get("reuse_collapse.advantage_mass_variance_mean").numeric(p, 1 - p, g))
        from grpo_theory.model import GRPOModel
        from grpo_theory.theory.drift import update_variance
        per_step = float(update_variance(GRPOModel(normalization="mean", kl="none", group_size=g,
                                                   prompts=b), p))
        ours = float(expr.subs({k: kv, S.eta: e, S.kappa: 2, V_A: va, B: b}))
        ok &= abs(ours - kv**2 * e**2 * per_step) <= 1e-12 * ours
    out.check(r"with $V_{A}$ from its closed form, $k^{2}\eta^{2}$ times the drift chapter's exact "
              r"per-step update variance (binomial sum, two actions) at 2 settings", "numeric", ok,
              "relative agreement 1e-12")
    return out


def window_noise_variance(learning_rate, passes, p_old, group_size, prompts, *, reuse="batch",
                          actions=2, correct=1) -> float:
    """Variance of the success logit's window displacement (log-prob surrogate, mean norm.).

    ``reuse="batch"``: one batch pushed ``passes`` times; ``"fresh"``: ``passes`` independent
    batches from :math:`\\pi_{old}`.  Logits².
    """
    from grpo_theory.theory.drift import geometric_factor

    eta = check_real("learning_rate", learning_rate, low=0, low_open=True)
    k = check_int("passes", passes, low=1)
    Bv = check_int("prompts", prompts, low=1)
    if reuse not in ("batch", "fresh"):
        raise ParameterError("reuse", reuse, "'batch' or 'fresh'")
    va = advantage_mass_variance_mean(p_old, group_size)
    kap = geometric_factor(actions, correct)
    v = float(get("reuse_collapse.window_noise_variance").numeric(k, eta, kap, va, Bv))
    return v if reuse == "batch" else v / k


# ----------------------------------------------------------------------------------
# 3. the ratio and the clip over a reused batch (one-logit picture)
# ----------------------------------------------------------------------------------

def _clipped_term(rho, adv, lo, hi):
    """d/d rho of min(rho A, clip(rho, 1 - lo, 1 + hi) A) as a sympy Piecewise, from the definition."""
    r = sp.Symbol("r", positive=True)
    clipped = sp.Min(sp.Max(r, 1 - lo), 1 + hi)
    term = sp.Min(r * adv, clipped * adv)
    return sp.diff(term, r).subs(r, rho)


@derivation("reuse_collapse.clip_saturation")
def _clip_saturation() -> Derived:
    thr_h = sp.solve(sp.Eq(_P / _PO, 1 + eps_h), _P)[0]
    thr_l = 1 - sp.solve(sp.Eq(_Q / _QO, 1 - eps_l), _Q)[0]          # p = 1 - q at the threshold
    expr = sp.Max(_PO * (1 + eps_h), _PO + eps_l * _QO)
    out = Derived("reuse_collapse.clip_saturation", expr, (_PO, _QO, eps_h, eps_l),
                  r"p_{\mathrm{sat}}",
                  r"Success probability at which a window of passes over one batch stops moving, with "
                  r"the clipped ratio surrogate: the correct samples stop pushing once "
                  r"$p/p_{\mathrm{old}} > 1 + \epsilon_{h}$, the wrong ones once "
                  r"$q/q_{\mathrm{old}} < 1 - \epsilon_{l}$; beyond both, whatever the number of "
                  r"passes, the batch gives no gradient.",
                  units="reward", level="L1",
                  assumptions=r"one-logit picture (two actions, or symmetric rewards); a "
                  r"non-degenerate batch ($A_{+} > 0$); $p_{\mathrm{sat}} < 1$ (else the correct "
                  r"samples are never clipped); the last pass may overshoot by one step")
    expr = out.expr
    out.check(r"the correct samples' threshold solves $p/p_{\mathrm{old}} = 1 + \epsilon_{h}$ and "
              r"the wrong samples' solves $q/q_{\mathrm{old}} = 1 - \epsilon_{l}$ "
              r"($p = p_{\mathrm{old}} + \epsilon_{l} q_{\mathrm{old}}$)", "sympy",
              prove_equal(thr_h, _PO * (1 + eps_h))
              and prove_zero(sp.expand((thr_l - (_PO + eps_l * _QO)).subs(_QO, 1 - _PO))))
    thr_l = _PO + eps_l * _QO
    out.check(r"$p_{\mathrm{sat}}$ is the larger threshold: above it both terms are off", "sympy",
              prove_equal(expr, sp.Max(thr_h, thr_l)))
    # the masks of the clipped surrogate, from min(rho A, clip(rho) A): A > 0 pushes while
    # rho <= 1 + eps_h, A < 0 while rho >= 1 - eps_l (checked on each side of the thresholds)
    r = sp.Symbol("r", positive=True)
    e_ = sp.Rational(1, 5)
    d_pos = _clipped_term(r, 1, e_, e_)
    d_neg = _clipped_term(r, -1, e_, e_)
    masks = all([d_pos.subs(r, sp.Rational(11, 10)) == 1, d_pos.subs(r, sp.Rational(13, 10)) == 0,
                 d_neg.subs(r, sp.Rational(9, 10)) == -1, d_neg.subs(r, sp.Rational(7, 10)) == 0,
                 d_neg.subs(r, sp.Rational(3, 2)) == -1])
    out.check(r"from $\min(\rho A, \mathrm{clip}(\rho, 1 - \epsilon, 1 + \epsilon) A)$: a positive "
              r"advantage pushes only while $\rho \le 1 + \epsilon$, a negative one only while "
              r"$\rho \ge 1 - \epsilon$ (and without bound above)", "sympy", masks)
    # the per-pass force in z splits into the correct samples' share q_old and the wrong ones' p_old
    R = get("drift.ratio_factor").expr
    G, n = S.G, S.n
    a_c, a_w = (1 - n / G), -n / G
    g_c, g_w = _Q, -_P
    corr = n * a_c * (_P / _PO) * g_c / G
    wrong = (G - n) * a_w * (_Q / _QO) * g_w / G
    A_mass = n * (G - n) / G**2
    out.check(r"the correct samples carry $q_{\mathrm{old}}$ of the ratio force $R A_{+}$ and the wrong "
              r"ones $p_{\mathrm{old}}$: switching off one side leaves the other", "sympy",
              prove_zero(corr - _QO * R * A_mass) and prove_zero(wrong - _PO * R * A_mass))
    return out


def saturation_probability(p_old, clip_high, clip_low=None) -> float:
    """:math:`p_{sat}` (``reuse_collapse.clip_saturation``), capped at 1."""
    p = check_real("p_old", p_old, low=0, high=1, low_open=True, high_open=True)
    eh = check_real("clip_high", clip_high, low=0, low_open=True)
    el = eh if clip_low is None else check_real("clip_low", clip_low, low=0, high=1, low_open=True)
    return min(1.0, float(get("reuse_collapse.clip_saturation").numeric(p, 1 - p, eh, el)))


@derivation("reuse_collapse.saturated_batch_kl")
def _sat_kl() -> Derived:
    x = sp.Symbol("x", positive=True)

    def kl(p_new):            # KL(Bern(p_old) || Bern(p_new))
        return _PO * sp.log(_PO / p_new) + (1 - _PO) * sp.log((1 - _PO) / (1 - p_new))

    hi = kl(_PO * (1 + x))                 # the upper clip binds last (p_old >= 1/2)
    lo = kl(_PO + x * (1 - _PO))           # the lower clip binds last (p_old <= 1/2)
    lead_hi = sp.simplify(sp.series(hi, x, 0, 3).removeO())
    lead_lo = sp.simplify(sp.series(lo, x, 0, 3).removeO())
    expr = eps_c**2 * sp.Max(_PO, _QO) ** 2 / (2 * _PO * _QO)
    out = Derived("reuse_collapse.saturated_batch_kl", expr, (eps_c, _PO, _QO),
                  r"D_{\mathrm{sat}}",
                  r"Leading order in the clip width $\epsilon$ of the KL between the policy where a "
                  r"clipped window stalls ($p_{\mathrm{sat}}$) and the window's first policy: a bound "
                  r"on how far any number of passes over one batch can move it. Without the clip "
                  r"there is no such bound.",
                  units="nats", level="L1",
                  assumptions=r"symmetric clip $\epsilon_{h} = \epsilon_{l} = \epsilon$; one-logit "
                  r"picture; $\mathrm{KL}(\pi_{\mathrm{old}} \,\|\, \pi)$ (the estimator's target with "
                  r"samples from $\pi_{\mathrm{old}}$); one step's overshoot neglected")
    expr = out.expr
    ok = (prove_zero(sp.expand(lead_hi - x**2 * _PO**2 / (2 * _PO * (1 - _PO))))
          and prove_zero(sp.expand(lead_lo - x**2 * (1 - _PO) ** 2 / (2 * _PO * (1 - _PO)))))
    out.check(r"series of $\mathrm{KL}(p_{\mathrm{old}} \,\|\, p_{\mathrm{sat}})$ in $\epsilon$: "
              r"$\epsilon^{2} p^{2}/(2pq)$ when the upper clip binds last, "
              r"$\epsilon^{2} q^{2}/(2pq)$ when the lower one does", "sympy", ok)
    ok2 = (prove_zero(sp.expand(expr.subs({eps_c: x, _QO: 1 - _PO}).subs(sp.Max(_PO, 1 - _PO), _PO)
                                - lead_hi))
           and prove_zero(sp.expand(expr.subs({eps_c: x, _QO: 1 - _PO}).subs(sp.Max(_PO, 1 - _PO),
                                                                            1 - _PO) - lead_lo)))
    out.check(r"the displayed form is the larger of the two (the threshold that binds last)",
              "sympy", ok2)
    mpmath.mp.dps = 80
    errs = []
    for pv in ("0.3", "0.7", "0.55"):
        pv, ev = mpmath.mpf(pv), mpmath.mpf("1e-27")
        ps = max(pv * (1 + ev), pv + ev * (1 - pv))
        exact = pv * mpmath.log(pv / ps) + (1 - pv) * mpmath.log((1 - pv) / (1 - ps))
        ours = mpmath.mpf(str(sp.N(expr.subs({eps_c: sp.Float("1e-27", 80),
                                               _PO: sp.Float(str(pv), 80),
                                               _QO: 1 - sp.Float(str(pv), 80)}), 80)))
        errs.append(abs(exact - ours) / exact)
    record_numeric(out, r"the exact KL at $p_{\mathrm{sat}}$ for $\epsilon = 10^{-27}$ (mpmath, 80 "
                   r"digits) equals the leading order (the neglected terms are $O(\epsilon)$ "
                   r"relative) at $p_{\mathrm{old}} = 0.3, 0.55, 0.7$", errs, digits=25)
    return out


@derivation("reuse_collapse.ratio_window_passes")
def _ratio_passes() -> Derived:
    z, z0 = S.z, S.z_old
    u = S.eta * S.kappa * A_plus / (_PO * _QO)
    psi = lambda y: 2 * y + sp.exp(y) - sp.exp(-y)          # noqa: E731 - integral of 1/(pq)
    expr = (psi(z) - psi(z0)) / u
    out = Derived("reuse_collapse.ratio_window_passes", expr, (z, z0, S.eta, S.kappa, A_plus, _PO, _QO),
                  r"j(z)",
                  r"Passes over one batch needed to move the success logit from $z_{\mathrm{old}}$ to "
                  r"$z$ with the unclipped ratio surrogate (small steps): the push "
                  r"$\eta\kappa A_{+}\,pq/(p_{\mathrm{old}}q_{\mathrm{old}})$ slows as $p \to 1$, so "
                  r"$z$ keeps growing like $\log j$ and the correct samples' ratio tends to "
                  r"$1/p_{\mathrm{old}}$; with the log-prob surrogate it is "
                  r"$(z - z_{\mathrm{old}})/(\eta\kappa A_{+})$, linear.",
                  units="passes", level="L1",
                  assumptions=r"continuum in the passes (per-pass step small); one-logit picture; no "
                  r"clip; SGD; no KL")
    expr = out.expr
    p_of = 1 / (1 + sp.exp(-z))
    force = S.eta * S.kappa * A_plus * p_of * (1 - p_of) / (_PO * _QO)
    out.check(r"$\frac{dz}{dj} = \eta\kappa A_{+}\,\frac{pq}{p_{\mathrm{old}}q_{\mathrm{old}}}$ "
              r"(the ratio force of $\texttt{drift.ratio\_factor}$ per pass) and $j(z_{\mathrm{old}}) = 0$",
              "sympy", prove_zero(sp.simplify(sp.diff(expr, z) * force - 1))
              and prove_zero(expr.subs(z, z0)))
    # mpmath: integrate dz/dj = u pq/(p_old q_old) from z_old and put z(j) into the solution
    mpmath.mp.dps = 30
    fn = sp.lambdify((z, z0, S.eta, S.kappa, A_plus, _PO, _QO), expr, "mpmath")
    errs = []
    for z0v, uv, jv in (("-1", "0.05", 20), ("0.5", "0.2", 7)):
        z0v, uv = mpmath.mpf(z0v), mpmath.mpf(uv)
        po = 1 / (1 + mpmath.exp(-z0v))
        sol = mpmath.odefun(lambda jj, zz: uv * (1 / (1 + mpmath.exp(-zz)))
                            * (1 - 1 / (1 + mpmath.exp(-zz))) / (po * (1 - po)), 0, z0v)
        zj = sol(jv)
        errs.append(abs(fn(zj, z0v, 1, 1, uv, po, 1 - po) - jv) / jv)
    record_numeric(out, r"the solution matches an mpmath ODE integration of the pass-by-pass push "
                   r"(30 digits) at two settings", errs, digits=25)
    return out


@derivation("reuse_collapse.passes_to_clip")
def _passes_to_clip() -> Derived:
    delta = sp.log(_PO * (1 + eps_h) / (1 - _PO * (1 + eps_h))) - sp.log(_PO / (1 - _PO))
    expr = delta / (S.eta * S.kappa * A_plus)
    out = Derived("reuse_collapse.passes_to_clip", expr, (eps_h, _PO, S.eta, S.kappa, A_plus),
                  r"j_{\mathrm{clip}}",
                  r"Passes over one batch after which the correct samples' ratio leaves the clip "
                  r"region $[1 - \epsilon, 1 + \epsilon_{h}]$ (log-prob surrogate, exact: the logit moves "
                  r"$\eta\kappa A_{+}$ per pass). To first order in $\epsilon_{h}$ it is "
                  r"$\epsilon_{h}/\delta$ with $\delta = \eta\kappa A_{+} q_{\mathrm{old}}$ the per-pass "
                  r"growth of a sample's log-ratio: a window of $P$ passes stays inside the trust "
                  r"region on its own batch while $(P - 1)\,\delta < \log(1 + \epsilon_{h})$.",
                  units="passes", level="L1",
                  assumptions=r"one-logit picture; $p_{\mathrm{old}}(1 + \epsilon_{h}) < 1$; SGD; no KL")
    expr = out.expr
    zl = sp.log(_PO / (1 - _PO))
    moved = zl + S.eta * S.kappa * A_plus * expr
    p_moved = 1 / (1 + sp.exp(-moved))
    out.check(r"after $j_{\mathrm{clip}}$ passes of $\eta\kappa A_{+}$ (the log-prob push, in "
              r"the one-logit picture) the ratio $p/p_{\mathrm{old}}$ is exactly $1 + \epsilon_{h}$",
              "sympy", prove_zero(sp.simplify(p_moved / _PO - (1 + eps_h))))
    lead = sp.series(expr, eps_h, 0, 2).removeO()
    out.check(r"to first order $j_{\mathrm{clip}} = \epsilon_{h}/(\eta\kappa A_{+} q_{\mathrm{old}})$",
              "sympy", prove_zero(sp.simplify(lead - eps_h / (S.eta * S.kappa * A_plus * (1 - _PO)))))
    return out


def passes_to_clip(self_push_per_pass, clip_high=0.2) -> float:
    r"""Passes before a sample's log-ratio leaves :math:`[.., \log(1 + \epsilon_h)]`: ``inf`` for no push."""
    d = check_real("self_push_per_pass", self_push_per_pass, low=0)
    eh = check_real("clip_high", clip_high, low=0, low_open=True)
    return math.inf if d == 0 else math.log1p(eh) / d


def trust_region_number(passes, self_push_per_pass, clip_high=0.2) -> float:
    r""":math:`T = (P - 1)\,\delta / \log(1 + \epsilon_h)`: below 1 a window of ``passes`` passes
    stays inside the clip region on its own batch (``reuse_collapse.passes_to_clip``)."""
    P = check_int("passes", passes, low=1)
    d = check_real("self_push_per_pass", self_push_per_pass, low=0)
    eh = check_real("clip_high", clip_high, low=0, low_open=True)
    return (P - 1) * d / math.log1p(eh)
