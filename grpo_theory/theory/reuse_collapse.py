r"""Reuse collapse: k passes over one finite batch, and the trust region of the clip.

A refresh window of :math:`k` optimizer steps that *reuses one batch* (TRL
``num_iterations``, verl ``ppo_epochs``, CS336 ``epochs_per_rollout_batch``) moves the policy
:math:`k` times along that batch's own gradient.  Chapter 7 (``reuse``) gives the linear
stationary variance; this chapter follows the window itself, on the batch, exactly where
it can:

1. **The log-prob surrogate moves linearly, for ever** (``reuse_collapse.logprob_step``).
   With group-normalized advantages the advantages of a batch sum to zero
   (:math:`\sum_o n_o A_o = 0`, mean or std normalization), so the softmax's normalizer drops
   out of the gradient: each pass adds exactly :math:`\eta\,n_o A_o/G` to the logit of a
   sampled action :math:`b`, whatever the policy.  :math:`k` passes add :math:`k` times that:
   no saturation, any number of actions, no linearization.
2. **The batch's noise is not averaged** (``reuse_collapse.advantage_mass_variance_mean``,
   ``reuse_collapse.window_noise_variance``).  On the success logit the per-pass push is
   :math:`\eta\kappa A_{+}(n)` with :math:`n \sim \mathrm{Bin}(G, p_{\mathrm{old}})` drawn
   once: the window's displacement has variance :math:`(k\eta\kappa)^{2} V_{A}/B`, against
   :math:`k(\eta\kappa)^{2} V_{A}/B` when every step draws a fresh batch from
   :math:`\pi_{\mathrm{old}}` — the noise displacement grows like :math:`k`, not
   :math:`\sqrt{k}` (exactly, for this surrogate).
3. **The ratio and the clip** (``reuse_collapse.ratio_window_passes``,
   ``reuse_collapse.clip_saturation``, ``reuse_collapse.saturated_batch_kl``).  With the
   importance ratio the push is rescaled by :math:`\Psi = pq/(p_{\mathrm{old}}q_{\mathrm{old}})`
   (``drift.ratio_factor``); the correct samples carry the fraction :math:`q_{\mathrm{old}}`
   of it and stop once their ratio exceeds :math:`1+\epsilon_{\mathrm{high}}`, the wrong ones carry
   :math:`p_{\mathrm{old}}` and stop once theirs falls below :math:`1-\epsilon_{\mathrm{low}}`.  So the
   clipped window stalls at :math:`p_{\mathrm{sat}} = \max(p_{\mathrm{old}}(1+\epsilon_{\mathrm{high}}),
   p_{\mathrm{old}} + \epsilon_{\mathrm{low}} q_{\mathrm{old}})` whatever :math:`k`: the KL between the
   window's last and first policy is bounded by
   :math:`\approx \epsilon_{\mathrm{clip}}^{2}\max(p,q)^{2}/(2pq)`.
   Without the clip nothing stops it: the ratio surrogate keeps moving (logarithmically) and
   the log-prob surrogate linearly, and the batch's KL grows without bound.
4. **The trust-region number** (``reuse_collapse.passes_to_clip``).  A sample's log-ratio
   grows by :math:`\delta = \eta\kappa A_{+} q_{\mathrm{old}}` per pass; the window stays
   inside the clip region on its own batch while
   :math:`(k-1)\,\delta < \log(1+\epsilon_{\mathrm{high}})`, :math:`k` the passes over each sample.  In a network every sample's log-probability is a
   shared function of the parameters, so :math:`\delta` is the sample's own (self) push per
   pass, :math:`\eta` times the diagonal of the per-sample tangent kernel: it must be
   measured (the ratio statistics of a run that revisits its samples); the clip stops a
   sample's own push but not the push its neighbours give it.

Level L1/L2 (exact map of one window on one batch); the one-logit picture (two actions, or
symmetric rewards) for items 2-4, any number of actions for item 1; SGD, no KL term.
"""

from __future__ import annotations

import functools
import math

import mpmath
import sympy as sp

from grpo_theory.theory import symbols as S
from grpo_theory.theory.derived import (Derived, derivation, get, prove_equal, prove_zero,
                                        record_numeric, taylor)
from grpo_theory.validate import ParameterError, check_int, check_real

__all__ = ["passes_to_clip", "saturation_probability", "trust_region_number",
           "window_noise_variance", "advantage_mass_variance_mean"]

_PO, _QO, _P, _Q = S.p_old, S.q_old, S.p, S.q_fail
eps_h, eps_l, eps_c = S.eps_high, S.eps_low, S.eps_clip   #: the clip's widths (upper, lower, symmetric)
A_plus = sp.Symbol("A_+", positive=True)         #: advantage mass on the correct samples
V_A = S.V_A                                      #: its variance over groups
B = S.B                                          #: prompts (groups) per batch
n_b, A_b = S.n_b, S.A_b                          #: samples of action b and their advantage
_LATEX = {**S.LATEX_NAMES, A_plus: r"A_{+}"}


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
                  r"\Delta\theta_{o}",
                  r"Change of the logit of a sampled action $o$ in one SGD pass over a group with the "
                  r"log-probability surrogate $-\frac{1}{G}\sum_{o} n_{o} A_{o} \log \pi_{\theta}(o)$ "
                  r"($n_{o}$ samples of action $o$, each with advantage $A_{o}$; an action that was not "
                  r"sampled does not move). It does not depend on the policy, so $k$ passes over the "
                  r"same batch move the logits by exactly $k\,\Delta\theta_{o}$.",
                  units="logits per pass", level="L1",
                  assumptions=r"softmax policy over any number of actions; group-normalized "
                  r"advantages (mean or std, any rewards); SGD; no KL term in the loss",
                  title="Logit step of one pass with the log-probability surrogate")
    expr = out.expr
    ok_sum, ok_grad, ok_const = True, True, True
    for norm in ("mean", "std"):
        th, n, A, G, grad = _batch_gradient(3, norm)
        ok_sum &= prove_zero(sum(ni * Ai for ni, Ai in zip(n, A)))
        for b in range(3):
            step = -S.eta * grad[b]
            target = expr.subs({n_b: n[b], A_b: A[b], S.G: G})
            equal = prove_equal(step, target)
            ok_grad &= equal
            # the step is identically equal to a target free of the logits: it does not
            # depend on them (the derivative of each, 3x the time, proves no more)
            ok_const &= equal and not target.free_symbols & set(th)
    three = "three actions (symbolic counts and rewards)"
    out.check(r"the advantages of a group sum to zero, $\sum_{o} n_{o} A_{o} = 0$ (mean and std "
              r"normalization, any rewards)", "sympy", ok_sum, cases=three)
    out.check(r"$\eta$ times the negative gradient of the loss in $\theta_{o}$ is "
              r"$\eta\, n_{o} A_{o} / G$ for every action: the softmax normalizer's term is "
              r"proportional to $\sum_{o} n_{o} A_{o}$ and vanishes", "sympy", ok_grad, cases=three)
    out.check(r"the step does not depend on $\theta$ (it equals $\eta\, n_{o} A_{o} / G$ identically, "
              r"which has no logit in it): the same push at every pass, so the window moves "
              r"linearly in the passes",
              "sympy", ok_const, cases=three)
    return out


# ----------------------------------------------------------------------------------
# 2. the batch's noise over a window: k, not sqrt(k)
# ----------------------------------------------------------------------------------

@functools.cache
def _binomial_moment(k):
    """E[n^k] for n ~ Bin(G, p_old), from the moment generating function (symbolic G; each
    moment once per process: the variance uses the second twice)."""
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
                  r"$A_{+}(n) = n (G - n)/G^{2}$ (mean normalization), for "
                  r"$n \sim \mathrm{Bin}(G, p_{\mathrm{old}})$: the noise of one group's push.",
                  units="reward$^2$", level="L1",
                  assumptions=r"binary rewards; mean normalization (Dr. GRPO); one group",
                  references=("liu2025drgrpo",),
                  title="Variance of the advantage mass over groups, mean normalization")
    expr = out.expr
    out.check(r"$V_{A} = \mathrm{E}[A_{+}^{2}] - \mathrm{E}[A_{+}]^{2}$ from the binomial moments "
              r"(derivatives of the moment generating function, symbolic $G$)", "sympy",
              prove_zero(sp.expand(var - expr.subs(_QO, 1 - _PO))))
    mean_ok = prove_equal(e_a, ((G - 1) * _PO * (1 - _PO) / G))
    out.check(r"its mean is $\mathrm{E}[A_{+}] = \frac{G - 1}{G} p_{\mathrm{old}} q_{\mathrm{old}}$, "
              r"(symbolic $G$), the exact $\mathcal{A}_{G}$ of the drift (compared at $G = 6$)", "sympy",
              mean_ok and prove_zero(sp.expand(
                  get("drift.expected_advantage_mean").expr.subs(_QO, 1 - _PO).subs(G, 6)
                  - (5 * _PO * (1 - _PO) / 6))))
    ok = True
    for g in range(2, 9):
        terms = [sp.binomial(g, k) * _PO**k * (1 - _PO) ** (g - k) for k in range(g + 1)]
        m1 = sum(w * sp.Rational(k * (g - k), g**2) for k, w in enumerate(terms))
        m2 = sum(w * sp.Rational(k * (g - k), g**2) ** 2 for k, w in enumerate(terms))
        ok &= prove_zero(sp.expand(m2 - m1**2 - expr.subs({_QO: 1 - _PO, G: g})))
    out.check(r"equals the exact finite binomial sum", "sympy", ok, cases=r"$G = 2, \dots, 8$")
    return out


def advantage_mass_variance_mean(p_old, group_size) -> float:
    """:math:`V_A` of ``reuse_collapse.advantage_mass_variance_mean`` (mean normalization)."""
    p = check_real("p_old", p_old, low=0, high=1)
    G = check_int("group_size", group_size, low=2)
    return float(get("reuse_collapse.advantage_mass_variance_mean").numeric(p, 1.0 - p, G))


@derivation("reuse_collapse.window_noise_variance")
def _window_noise() -> Derived:
    k, eta, kap = S.k_ref, S.eta, S.kappa
    expr = k**2 * eta**2 * kap**2 * V_A / B
    out = Derived("reuse_collapse.window_noise_variance", expr, (k, S.eta, S.kappa, V_A, B),
                  r"\operatorname{Var}\,\Delta z",
                  r"Variance over batches of the success logit's displacement over a window of $k$ "
                  r"passes over one batch of $B$ groups (log-prob surrogate): one draw of the "
                  r"batch pushes $k$ times, $\Delta z = k\eta\kappa$ times the mean of $A_{+}$ over "
                  r"the batch's $B$ groups. With a fresh batch "
                  r"from $\pi_{\mathrm{old}}$ at every step it is $k\,\eta^{2}\kappa^{2} V_{A}/B$: "
                  r"reuse multiplies the noise variance of the window by exactly $k$ (its standard "
                  r"deviation grows like $k$, not $\sqrt{k}$).",
                  units="logits$^2$", level="L2",
                  assumptions=r"log-probability surrogate (its push does not depend on the policy, "
                  r"as the first result of this subsection shows), binary rewards, symmetric actions "
                  r"(metric factor $\kappa$), $B$ independent groups per batch, SGD, no KL",
                  title="Noise of a window that reuses one batch")
    expr = out.expr
    xs = sp.symbols("xi0:6", real=True)
    var = sp.Symbol("v", positive=True)

    def variance(lin):            # variance of a linear form of independent draws, each of variance v/B
        return sum(sp.diff(lin, x) ** 2 for x in xs) * var / B

    kk = 6
    batch = kk * eta * kap * xs[0]
    fresh = eta * kap * sum(xs[:kk])
    out.check(r"one draw pushed $k$ times has variance $k^{2}\eta^{2}\kappa^{2}V_{A}/B$",
              "sympy", prove_equal(variance(batch).subs(var, V_A), expr.subs(k, kk)), cases="$k = 6$")
    out.check(r"$k$ independent draws from $\pi_{\mathrm{old}}$ give $k\,\eta^{2}\kappa^{2}V_{A}/B$: the "
              r"ratio of the reused batch's variance to the fresh batches' is $k$", "sympy",
              prove_equal(variance(batch) / variance(fresh), kk)
              and prove_equal(variance(fresh).subs(var, V_A) * kk, expr.subs(k, kk)), cases="$k = 6$")
    ok = True
    for g, p, kv, e, b in ((8, 0.3, 4, 0.05, 16), (5, 0.6, 16, 0.01, 64)):
        va = float(get("reuse_collapse.advantage_mass_variance_mean").numeric(p, 1 - p, g))
        from grpo_theory.model import GRPOModel
        from grpo_theory.theory.drift import update_variance
        per_step = float(update_variance(GRPOModel(normalization="mean", kl="none", group_size=g,
                                                   prompts=b), p))
        ours = float(expr.subs({k: kv, S.eta: e, S.kappa: 2, V_A: va, B: b}))
        ok &= abs(ours - kv**2 * e**2 * per_step) <= 1e-12 * ours
    out.check(r"with $V_{A}$ from its closed form, $k^{2}\eta^{2}$ times the drift's exact "
              r"per-step update variance (binomial sum, two actions) at two settings", "numeric", ok,
              r"relative agreement $10^{-12}$")
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
                  r"$p/p_{\mathrm{old}} > 1 + \epsilon_{\mathrm{high}}$, the wrong ones once "
                  r"$q/q_{\mathrm{old}} < 1 - \epsilon_{\mathrm{low}}$; beyond both, whatever the number "
                  r"of passes, the batch gives no gradient.",
                  units="reward", level="L1",
                  assumptions=r"one-logit picture (two actions, or symmetric rewards); a "
                  r"non-degenerate batch ($A_{+} > 0$); $p_{\mathrm{sat}} < 1$ (else the correct "
                  r"samples are never clipped); the last pass may overshoot by one step",
                  references=("schulman2017ppo", "yu2025dapo"),
                  title="Where a clipped window over one batch stalls")
    expr = out.expr
    out.step(r"the root of $p/p_{\mathrm{old}} = 1 + \epsilon_{\mathrm{high}}$", thr_h,
             r"p_{\mathrm{high}}")
    out.step(r"$1 - q$ at the root of $q/q_{\mathrm{old}} = 1 - \epsilon_{\mathrm{low}}$", thr_l,
             r"p_{\mathrm{low}}")
    out.step(r"the larger of the two: beyond it both sides are clipped",
             sp.Max(_PO * (1 + eps_h), _PO + eps_l * _QO), r"p_{\mathrm{sat}}")
    out.check(r"the correct samples' threshold solves $p/p_{\mathrm{old}} = 1 + \epsilon_{\mathrm{high}}$ "
              r"and the wrong samples' solves $q/q_{\mathrm{old}} = 1 - \epsilon_{\mathrm{low}}$ "
              r"($p = p_{\mathrm{old}} + \epsilon_{\mathrm{low}} q_{\mathrm{old}}$)", "sympy",
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
    out.check(r"from the definition of the clipped surrogate (the smaller of the ratio times the "
              r"advantage and the clipped ratio times the advantage): a positive advantage pushes only "
              r"while the ratio is at most $1 + \epsilon_{\mathrm{high}}$, a negative one only while it "
              r"is at least $1 - \epsilon_{\mathrm{low}}$ (and without bound above)", "sympy", masks,
              cases=r"$\epsilon_{\mathrm{low}} = \epsilon_{\mathrm{high}} = 1/5$, on both sides of each "
                    r"threshold")
    # the per-pass force in z splits into the correct samples' share q_old and the wrong ones' p_old
    R = get("drift.ratio_factor").expr
    G, n = S.G, S.n
    a_c, a_w = (1 - n / G), -n / G
    g_c, g_w = _Q, -_P
    corr = n * a_c * (_P / _PO) * g_c / G
    wrong = (G - n) * a_w * (_Q / _QO) * g_w / G
    A_mass = n * (G - n) / G**2
    out.check(r"the correct samples carry $q_{\mathrm{old}}$ of the ratio force $\Psi A_{+}$ and the wrong "
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
    x = eps_c                 # the series variable is the clip width itself (x is the deviation)

    def kl(p_new):            # KL(Bern(p_old) || Bern(p_new))
        return _PO * sp.log(_PO / p_new) + (1 - _PO) * sp.log((1 - _PO) / (1 - p_new))

    hi = kl(_PO * (1 + x))                 # the upper clip binds last (p_old >= 1/2)
    lo = kl(_PO + x * (1 - _PO))           # the lower clip binds last (p_old <= 1/2)
    lead_hi = sp.simplify(taylor(hi, x, 3))     # (sympy's series of each took 0.7 s)
    lead_lo = sp.simplify(taylor(lo, x, 3))
    expr = eps_c**2 * sp.Max(_PO, _QO) ** 2 / (2 * _PO * _QO)
    out = Derived("reuse_collapse.saturated_batch_kl", expr, (eps_c, _PO, _QO),
                  r"\mathrm{KL}_{\mathrm{sat}}",
                  r"Leading order in the clip width $\epsilon_{\mathrm{clip}}$ of the KL between the policy where a "
                  r"clipped window stalls ($p_{\mathrm{sat}}$) and the window's first policy: a bound "
                  r"on how far any number of passes over one batch can move it. Without the clip "
                  r"there is no such bound.",
                  units="nats", level="L1",
                  assumptions=r"symmetric clip, $\epsilon_{\mathrm{low}} = \epsilon_{\mathrm{high}} = "
                  r"\epsilon_{\mathrm{clip}}$; one-logit picture; $\mathrm{KL}(\pi_{\mathrm{old}} \,\|\, "
                  r"\pi_{\theta})$ (the estimator's target with samples from $\pi_{\mathrm{old}}$); one "
                  r"step's overshoot neglected",
                  references=("schulman2017ppo",),
                  title="KL a clipped window can travel on its batch")
    expr = out.expr
    out.step(r"the KL at the upper clip, $p_{\mathrm{sat}} = p_{\mathrm{old}} (1 + \epsilon_{\mathrm{clip}})$",
             hi, r"\mathrm{KL}_{\mathrm{high}}")
    out.step(r"to second order in $\epsilon_{\mathrm{clip}}$, simplified", lead_hi, order=x**3)
    out.step(r"the KL at the lower clip, $p_{\mathrm{sat}} = p_{\mathrm{old}} + \epsilon_{\mathrm{clip}} "
             r"q_{\mathrm{old}}$", lo, r"\mathrm{KL}_{\mathrm{low}}")
    out.step(r"to second order in $\epsilon_{\mathrm{clip}}$, simplified", lead_lo, order=x**3)
    ok = (prove_zero(sp.expand(lead_hi - x**2 * _PO**2 / (2 * _PO * (1 - _PO))))
          and prove_zero(sp.expand(lead_lo - x**2 * (1 - _PO) ** 2 / (2 * _PO * (1 - _PO)))))
    out.check(r"series of $\mathrm{KL}(p_{\mathrm{old}} \,\|\, p_{\mathrm{sat}})$ in "
              r"$\epsilon_{\mathrm{clip}}$: $\epsilon_{\mathrm{clip}}^{2} p_{\mathrm{old}}/(2 q_{\mathrm{old}})$ "
              r"when the upper clip binds last, $\epsilon_{\mathrm{clip}}^{2} q_{\mathrm{old}}/(2 "
              r"p_{\mathrm{old}})$ when the lower one does", "sympy", ok)
    ok2 = (prove_zero(sp.expand(expr.subs({eps_c: x, _QO: 1 - _PO}).subs(sp.Max(_PO, 1 - _PO), _PO)
                                - lead_hi))
           and prove_zero(sp.expand(expr.subs({eps_c: x, _QO: 1 - _PO}).subs(sp.Max(_PO, 1 - _PO),
                                                                            1 - _PO) - lead_lo)))
    out.check(r"the displayed form is the larger of the two (the threshold that binds last)",
              "sympy", ok2)
    errs = []
    with mpmath.workdps(80):            # local: the process's precision is left as it was
        for pv in ("0.3", "0.7", "0.55"):
            pv, ev = mpmath.mpf(pv), mpmath.mpf("1e-27")
            ps = max(pv * (1 + ev), pv + ev * (1 - pv))
            exact = pv * mpmath.log(pv / ps) + (1 - pv) * mpmath.log((1 - pv) / (1 - ps))
            ours = mpmath.mpf(str(sp.N(expr.subs({eps_c: sp.Float("1e-27", 80),
                                                   _PO: sp.Float(str(pv), 80),
                                                   _QO: 1 - sp.Float(str(pv), 80)}), 80)))
            errs.append(abs(exact - ours) / exact)
    record_numeric(out, r"the exact KL at $p_{\mathrm{sat}}$ for $\epsilon_{\mathrm{clip}} = 10^{-27}$ "
                   r"equals the leading order (the neglected terms are $O(\epsilon_{\mathrm{clip}})$ "
                   r"relative) at $p_{\mathrm{old}} = 0.3, 0.55, 0.7$", errs, digits=25, precision=80)
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
                  r"clip; SGD; no KL", references=("schulman2017ppo",),
                  title="Passes to reach a logit with the unclipped ratio")
    expr = out.expr
    p_of = 1 / (1 + sp.exp(-z))
    out.step(r"the ratio force per pass, $p = 1/(1 + e^{-z})$", S.eta * S.kappa * A_plus * p_of * (1 - p_of)
             / (_PO * _QO), r"\frac{\mathrm{d} z}{\mathrm{d} j}")
    out.step(r"the integral of $1/(p q) = 2 + e^{z} + e^{-z}$ from $z_{\mathrm{old}}$, over "
             r"$\eta \kappa A_{+}/(p_{\mathrm{old}} q_{\mathrm{old}})$ (its derivative is checked below)",
             expr, r"j(z)")
    force = S.eta * S.kappa * A_plus * p_of * (1 - p_of) / (_PO * _QO)
    out.check(r"$\mathrm{d}z/\mathrm{d}j = \eta\kappa\,\Psi A_{+}$, the ratio force per pass with "
              r"$\Psi = pq/(p_{\mathrm{old}}q_{\mathrm{old}})$, and $j(z_{\mathrm{old}}) = 0$",
              "sympy", prove_zero(sp.diff(expr, z) * force - 1)
              and prove_zero(expr.subs(z, z0)))
    # mpmath: the passes as the quadrature of dj/dz = p_old q_old / (u p q) from z_old (the
    # closed form is not used), at two settings (an ODE integration of z(j) gave the same
    # digits in 8 s; the quadrature takes milliseconds)
    fn = sp.lambdify((z, z0, S.eta, S.kappa, A_plus, _PO, _QO), expr, "mpmath")
    errs = []
    with mpmath.workdps(30):            # local: the process's precision is left as it was
        for z0v, uv, z1v in (("-1", "0.05", "2.5"), ("0.5", "0.2", "3")):
            z0v, uv, z1v = mpmath.mpf(z0v), mpmath.mpf(uv), mpmath.mpf(z1v)
            po = 1 / (1 + mpmath.exp(-z0v))
            passes = mpmath.quad(lambda y: po * (1 - po) / (uv * (1 / (1 + mpmath.exp(-y)))
                                                            * (1 - 1 / (1 + mpmath.exp(-y)))),
                                 [z0v, z1v])
            errs.append(abs(fn(z1v, z0v, 1, 1, uv, po, 1 - po) - passes) / passes)
    record_numeric(out, r"the solution against an independent high-precision quadrature of the "
                   r"passes per unit logit, the inverse of the pass-by-pass push, at two settings",
                   errs, digits=25, precision=30)
    return out


@derivation("reuse_collapse.passes_to_clip")
def _passes_to_clip() -> Derived:
    delta = sp.log(_PO * (1 + eps_h) / (1 - _PO * (1 + eps_h))) - sp.log(_PO / (1 - _PO))
    expr = delta / (S.eta * S.kappa * A_plus)
    out = Derived("reuse_collapse.passes_to_clip", expr, (eps_h, _PO, S.eta, S.kappa, A_plus),
                  r"j_{\mathrm{clip}}",
                  r"Passes over one batch after which the correct samples' ratio leaves the clip "
                  r"region $[1 - \epsilon_{\mathrm{low}}, 1 + \epsilon_{\mathrm{high}}]$ (log-probability "
                  r"surrogate, exact: the logit moves $\eta\kappa A_{+}$ per pass). To first order in "
                  r"$\epsilon_{\mathrm{high}}$ it is $\epsilon_{\mathrm{high}}/\delta$ with "
                  r"$\delta = \eta\kappa A_{+} q_{\mathrm{old}}$ the per-pass growth of a sample's "
                  r"log-ratio: a window of $k$ passes stays inside the trust region on its own batch "
                  r"while $(k - 1)\,\delta < \log(1 + \epsilon_{\mathrm{high}})$.",
                  units="passes", level="L1",
                  assumptions=r"one-logit picture; $p_{\mathrm{old}}(1 + \epsilon_{\mathrm{high}}) < 1$; "
                  r"SGD; no KL", references=("schulman2017ppo",),
                  title="Passes until the ratio leaves the clip")
    expr = out.expr
    zl = sp.log(_PO / (1 - _PO))
    out.step(r"the logit at the clip, $p = p_{\mathrm{old}} (1 + \epsilon_{\mathrm{high}})$, minus the "
             r"first logit", delta, r"\Delta z")
    out.step(r"over the push $\eta \kappa A_{+}$ per pass", expr, r"j_{\mathrm{clip}}")
    moved = zl + S.eta * S.kappa * A_plus * expr
    p_moved = 1 / (1 + sp.exp(-moved))
    out.check(r"after $j_{\mathrm{clip}}$ passes of $\eta\kappa A_{+}$ (the log-prob push, in "
              r"the one-logit picture) the ratio $p/p_{\mathrm{old}}$ is exactly $1 + \epsilon_{\mathrm{high}}$",
              "sympy", prove_zero(p_moved / _PO - (1 + eps_h)))
    lead = taylor(expr, eps_h, 2)
    out.check(r"to first order $j_{\mathrm{clip}} = \epsilon_{\mathrm{high}}/(\eta\kappa A_{+} q_{\mathrm{old}})$",
              "sympy", prove_zero(lead - eps_h / (S.eta * S.kappa * A_plus * (1 - _PO))))
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
