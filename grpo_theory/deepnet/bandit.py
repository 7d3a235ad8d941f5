r"""The two-logit bandit of the deep-network experiments under the KL-in-reward variant.

The per-prompt bandit stiffness of the KL-in-reward (verl ``use_kl_in_reward``, k1) variant
with mean (Dr. GRPO) advantages, :func:`bandit_stiffness_k1_reward`, comes from the theory
(:func:`~grpo_theory.theory.fixed_points.stable_fixed_point` with ``kl="k1_reward"``, whose
fresh part is proven to vanish) for an exact verifier.  With a noisy verifier (rewards
flipped with probability ``flip_probability``), which the theory's variants do not include,
it is a *measurement*: the exact expected bandit update is enumerated over all binomial
outcomes of a group and of the flips (:func:`bandit_k1_reward_moments`) and differentiated
by central differences; the tests check that enumeration against the theory at flip 0.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq
from scipy.stats import binom

from grpo_theory.model import GRPOModel
from grpo_theory.theory.derived import get
from grpo_theory.theory.noise import noise_at_fixed_point
from grpo_theory.theory.fixed_points import stable_fixed_point
from grpo_theory.validate import check_int, check_probability, check_real

__all__ = ["bandit_k1_reward_moments", "bandit_stiffness_k1_reward", "k1_reward_reference_logit"]


# ----------------------------------------------------------------------------------
# KL in the reward (k1), mean advantages, stale surrogate: exact enumeration
# ----------------------------------------------------------------------------------

def _log_softmax2(z):
    """(log pi(correct), log pi(wrong)) of the two-logit softmax with log-odds z."""
    return -np.logaddexp(0.0, -z), -np.logaddexp(0.0, z)


def bandit_k1_reward_moments(z, z_old, z_ref, group_size, kl_coef, flip_probability=0.0):
    r"""Mean and variance of the logit update per unit learning rate, by exact enumeration.

    Two-logit softmax bandit (logits :math:`(z, 0)` as free parameters, so the update
    of the log-odds :math:`z` carries the metric factor :math:`\kappa = 2`).  A group
    of ``group_size`` actions from :math:`\pi_{old}` has :math:`n` correct
    (:math:`n\sim\mathrm{Bin}(G, p_{old})`); each reward is flipped with probability
    ``flip_probability`` (:math:`m` of the correct and :math:`l` of the wrong ones,
    binomial); the shaped reward is :math:`r' = r - \beta(\log\pi_{old}(a) -
    \log\pi_{ref}(a))`, advantages :math:`A_i = r'_i - \bar r'` (mean), and the update
    of each logit is the gradient of :math:`\frac1G\sum_i A_i\log\pi_z(a_i)`.  Every
    outcome :math:`(n, m, l)` is enumerated with its exact probability.
    Returns ``(mean, variance)`` of :math:`\Delta z/\eta`.
    """
    G = int(group_size)
    beta = float(kl_coef)
    eps = float(flip_probability)
    lc_old, lw_old = _log_softmax2(z_old)
    lc_ref, lw_ref = _log_softmax2(z_ref)
    p_old = math.exp(lc_old)
    p = math.exp(_log_softmax2(z)[0])
    # score of each action w.r.t. the two logits (z_c, z_w) = (z, 0): e_a - pi
    grad_c = np.array([1 - p, -(1 - p)])          # d log pi(correct) / d(z_c, z_w)
    grad_w = np.array([-p, p])                    # d log pi(wrong)   / d(z_c, z_w)
    shaped_c = -beta * (lc_old - lc_ref)           # k1 term of a correct action
    shaped_w = -beta * (lw_old - lw_ref)
    mean = 0.0
    second = 0.0
    for n in range(G + 1):
        pn = binom.pmf(n, G, p_old)
        for m in range(n + 1):                    # flipped correct samples (reward 0)
            pm = binom.pmf(m, n, eps) if eps > 0 else float(m == 0)
            for ll in range(G - n + 1):           # flipped wrong samples (reward 1)
                pl = binom.pmf(ll, G - n, eps) if eps > 0 else float(ll == 0)
                w = pn * pm * pl
                if w == 0.0:
                    continue
                # rewards of the four kinds of sample: (correct, kept), (correct, flipped), ...
                kinds = [(n - m, 1.0 + shaped_c, grad_c), (m, 0.0 + shaped_c, grad_c),
                         (G - n - ll, 0.0 + shaped_w, grad_w), (ll, 1.0 + shaped_w, grad_w)]
                rbar = sum(c * r for c, r, _ in kinds) / G
                g = sum(c * (r - rbar) * gr for c, r, gr in kinds) / G
                dz = g[0] - g[1]                  # update of the log-odds z = z_c - z_w
                mean += w * dz
                second += w * dz * dz
    return mean, second - mean * mean


def k1_reward_reference_logit(p_star, group_size, kl_coef, flip_probability=0.0) -> float:
    """The reference log-odds z_ref that puts the fixed point of the k1-in-reward bandit at p*.

    Root of the enumerated on-policy drift F(z*, z*; z_ref) = 0 in z_ref (brentq).
    """
    ps = check_probability("p_star", p_star)
    beta = check_real("kl_coef", kl_coef, low=0, low_open=True)
    G = check_int("group_size", group_size, low=2)
    eps = check_real("flip_probability", flip_probability, low=0, high=0.5, high_open=True)
    zs = math.log(ps / (1 - ps))

    def f(zr):
        return bandit_k1_reward_moments(zs, zs, zr, G, beta, eps)[0]

    lo, hi = zs - 2.0 / beta - 5.0, zs + 5.0
    return float(brentq(f, lo, hi, xtol=1e-13))


def bandit_stiffness_k1_reward(p_star, group_size, kl_coef, flip_probability=0.0,
                               *, step=1e-4) -> dict:
    r"""Per-prompt bandit stiffness of the k1-in-reward variant (mean advantages, stale).

    The reference is placed so that ``p_star`` is the fixed point.  Exact verifier
    (``flip_probability = 0``): from the theory, ``stable_fixed_point(kl="k1_reward")``
    (split and location derived, :math:`K_{fresh} = 0` proven) and the exact finite-G
    ``update_variance``.  Noisy verifier: measured from the enumerated update
    (:func:`bandit_k1_reward_moments`), differentiated by central differences in the
    current logit (``stiffness_fresh`` :math:`=-\partial_z F`) and the sampling logit
    (``stiffness_stale`` :math:`=-\partial_{z_{old}} F`).  Same convention as
    ``fixed_points.FixedPoint``: per unit learning rate, two-logit softmax
    (:math:`\kappa = 2`).  Returns a dict with ``p, z, z_ref, stiffness,
    stiffness_fresh, stiffness_stale, fresh_fraction, noise_variance`` (the on-policy
    variance of the update per unit lr^2, one prompt) and ``source``.
    """
    G = check_int("group_size", group_size, low=2)
    beta = check_real("kl_coef", kl_coef, low=0, low_open=True)
    eps = check_real("flip_probability", flip_probability, low=0, high=0.5, high_open=True)
    ps = check_probability("p_star", p_star)
    zs = math.log(ps / (1 - ps))
    if eps == 0.0:
        zr = zs - 1.0 / beta   # inverts the derived location fixed_points.k1_reward_location
        loc = float(get("fixed_points.k1_reward_location").numeric(zr, beta))
        pr = 1.0 / (1.0 + math.exp(-zr))
        model = GRPOModel(p_ref=pr, kl_coef=beta, normalization="mean", kl="k1_reward",
                          surrogate="stale", group_size=G)
        fp = stable_fixed_point(model)
        var = noise_at_fixed_point(model, fp)
        return {"p": fp.p, "z": loc, "z_ref": zr, "stiffness": fp.stiffness,
                "stiffness_fresh": fp.stiffness_fresh, "stiffness_stale": fp.stiffness_stale,
                "fresh_fraction": fp.fresh_fraction, "noise_variance": float(var),
                "source": "theory (fixed_points, kl='k1_reward')"}
    zr = k1_reward_reference_logit(ps, G, beta, eps)
    F = lambda z, zo: bandit_k1_reward_moments(z, zo, zr, G, beta, eps)[0]  # noqa: E731
    Kf = -(F(zs + step, zs) - F(zs - step, zs)) / (2 * step)
    Ks = -(F(zs, zs + step) - F(zs, zs - step)) / (2 * step)
    # the fresh part is a rounding-level zero (advantages sum to zero in every group)
    if abs(Kf) < 1e-9 * max(1.0, abs(Ks)):
        Kf = 0.0
    var = bandit_k1_reward_moments(zs, zs, zr, G, beta, eps)[1]
    K = Kf + Ks
    return {"p": float(ps), "z": zs, "z_ref": zr, "stiffness": float(K),
            "stiffness_fresh": float(Kf), "stiffness_stale": float(Ks),
            "fresh_fraction": float(Kf / K) if K else float("nan"), "noise_variance": float(var),
            "source": "enumeration (noisy verifier)"}
