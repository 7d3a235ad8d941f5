r"""Vectorized kernels of the direct GRPO simulation of the softmax bandit (level L0).

Kept apart from the model API in :mod:`grpo_theory.simulation`: nothing here
validates input; every function takes already-checked numpy arrays.

Shapes: ``R`` runs, ``B`` prompts, ``K`` actions.  Logits ``theta`` are
``(R, K)``; prompt ``b`` sees the policy :math:`\pi_b = \mathrm{softmax}(\theta + d_b)`
with a fixed difficulty offset ``offsets[b]`` (``(B, K)``).  A group of ``G``
samples is represented by its action counts ``counts`` (``(R, B, K)``), which is
exact because every per-sample term depends on the sample only through its
action.

Per prompt the minimized loss is

.. math::

    \mathcal L_b = -\frac1G \sum_i \min\bigl(\rho_i \hat A_i,
        \operatorname{clip}(\rho_i, 1-\epsilon_{lo}, 1+\epsilon_{hi}) \hat A_i\bigr)
        + \beta\,\mathrm{KL}_b

(``surrogate="ratio"``), or :math:`-\frac1G\sum_i \hat A_i \log\pi_\theta(a_i)`
(``surrogate="stale"``), and the gradient is averaged over prompts.  With
:math:`\nabla_\theta \log\pi(a) = e_a - \pi` every gradient is of the form
:math:`\sum_a c_a (e_a - \pi) = c - \pi \sum_a c_a` for per-action coefficients
:math:`c_a`, which is how it is computed.

Two implementations of one step exist: :func:`group_gradient` for any ``K`` and
:func:`two_action_gradient` for ``K = 2``, where the gradient is antisymmetric
(``g_1 = -g_0``) and the whole state reduces to the logit difference
:math:`u = \theta_0 - \theta_1`; :func:`run` uses the latter when ``K = 2``
(unless ``kernel="generic"``).  Both consume the random stream identically (one
binomial draw per run and prompt for ``K = 2``), so they agree to rounding.
"""

from __future__ import annotations

import functools
import mmap
from dataclasses import dataclass

import numpy as np

__all__ = [
    "OBSERVABLES",
    "STATE_OBSERVABLES",
    "UPDATE_OBSERVABLES",
    "KernelPlan",
    "log_softmax",
    "group_gradient",
    "group_loss",
    "two_action_gradient",
    "binomial_counts",
    "Optimizer",
    "run",
]

#: Observables of the state at step t (defined for t = 0..T).
STATE_OBSERVABLES = ("reward", "z", "entropy", "kl")
#: Observables of the update taken at step t (defined for t = 0..T-1; NaN at T).
UPDATE_OBSERVABLES = ("zero_var_frac", "grad_norm", "clip_frac")
OBSERVABLES = ("reward", "z", "entropy", "zero_var_frac", "kl", "grad_norm", "clip_frac")


@dataclass
class KernelPlan:
    """Everything a kernel needs, already validated.

    The fields are those of the model and of :class:`grpo_theory.simulation.EnsembleSettings`
    (see :func:`grpo_theory.simulation.simulate`).
    """

    theta0: np.ndarray        # (R, K) initial logits
    theta_ref: np.ndarray     # (K,) reference logits
    offsets: np.ndarray       # (B, K) per-prompt difficulty offsets
    rewards: np.ndarray       # (K,) rewards in [0, 1]
    steps: int
    group_size: int
    normalization: str        # "std" | "mean"
    adv_eps: float
    surrogate: str            # "stale" | "ratio"
    clip_low: float
    clip_high: float
    kl: str                   # "none" | "exact" | "k3" | "k1_reward"
    kl_coef: float
    optimizer: str            # "sgd" | "momentum" | "adam"
    learning_rate: float
    momentum: float
    adam_betas: tuple
    adam_eps: float
    lag_model: str            # "refresh" | "delay"
    refresh_interval: int
    delay: int
    record: tuple
    reuse: str = "fresh"      # "fresh" | "batch": batches reused within a refresh window
    window_batches: int = 1   # with "batch": the window cycles through this many batches
    divergence_bound: float = 300.0   # max logit spread of a live run (see run())


# ---------------------------------------------------------------------------
# generic K
# ---------------------------------------------------------------------------

def log_softmax(logits: np.ndarray) -> np.ndarray:
    """Numerically stable :math:`\\log\\mathrm{softmax}` over the last axis."""
    m = logits.max(axis=-1, keepdims=True)
    shifted = logits - m
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def _advantages(counts, rewards, group_size, normalization, adv_eps):
    """Per-action advantages ``(R, B, K)`` and the zero-variance mask ``(R, B)``."""
    G = float(group_size)
    rbar = (counts * rewards).sum(axis=-1) / G                      # (R, B)
    dev = rewards - rbar[..., None]                                  # (R, B, K)
    present = counts > 0
    zero_var = (np.where(present, rewards, -np.inf).max(axis=-1)
                == np.where(present, rewards, np.inf).min(axis=-1))
    if normalization == "std":
        s = np.sqrt((counts * dev * dev).sum(axis=-1) / (G - 1.0))
        denom = np.where(zero_var, 1.0, s + adv_eps)[..., None]
        adv = dev / denom
    else:
        adv = dev
    adv = np.where(zero_var[..., None], 0.0, adv)
    return adv, zero_var


def _prompt_logps(theta, theta_old, theta_ref, offsets):
    logp = log_softmax(theta[:, None, :] + offsets)
    logp_old = log_softmax(theta_old[:, None, :] + offsets)
    logp_ref = log_softmax(theta_ref[None, None, :] + offsets)
    return logp, logp_old, logp_ref


def _clip_masks(rho, adv, clip_low, clip_high):
    clipped_ratio = np.clip(rho, 1.0 - clip_low, 1.0 + clip_high)
    unclipped = rho * adv <= clipped_ratio * adv        # min picks the unclipped branch
    return clipped_ratio, unclipped


def group_gradient(theta, theta_old, theta_ref, offsets, rewards, counts, *, group_size,
                   normalization, adv_eps, surrogate, clip_low, clip_high, kl, kl_coef):
    r"""Analytic gradient of the GRPO loss on sampled groups, any ``K``.

    Returns ``(grad, zero_var_frac, clip_frac)`` with ``grad`` of shape ``(R, K)``
    (averaged over the ``B`` prompts), the fraction of the ``B`` groups with zero
    reward variance and the fraction of the ``G·B`` samples whose clipped branch is
    the strictly smaller one (zero for ``surrogate="stale"``), each ``(R,)``.
    ``counts`` is ``(R, B, K)``.  The clipped branch, when it is the active
    minimum, contributes no gradient.
    """
    G = float(group_size)
    counts = np.asarray(counts, dtype=float)
    logp, logp_old, logp_ref = _prompt_logps(theta, theta_old, theta_ref, offsets)
    pi = np.exp(logp)
    if kl == "k1_reward":   # r' = r - beta (log pi_old - log pi_ref), per action
        rewards = rewards - kl_coef * (logp_old - logp_ref)
    adv, zero_var = _advantages(counts, rewards, group_size, normalization, adv_eps)
    w = counts / G
    if surrogate == "ratio":
        rho = np.exp(logp - logp_old)
        _, unclipped = _clip_masks(rho, adv, clip_low, clip_high)
        coef = -w * np.where(unclipped, rho * adv, 0.0)
        clip_frac = (counts * ~unclipped).sum(axis=(1, 2)) / (G * counts.shape[1])
    else:
        coef = -w * adv
        clip_frac = np.zeros(theta.shape[0])
    if kl == "k3":
        coef = coef + kl_coef * w * (1.0 - np.exp(logp_ref - logp))
    grad_b = coef - pi * coef.sum(axis=-1, keepdims=True)
    if kl == "exact":
        log_ratio = logp - logp_ref
        kl_b = (pi * log_ratio).sum(axis=-1, keepdims=True)
        grad_b = grad_b + kl_coef * pi * (log_ratio - kl_b)
    return grad_b.mean(axis=1), zero_var.mean(axis=1), clip_frac


def group_loss(theta, theta_old, theta_ref, offsets, rewards, counts, *, group_size,
               normalization, adv_eps, surrogate, clip_low, clip_high, kl, kl_coef):
    """The loss whose gradient :func:`group_gradient` returns, ``(R,)`` (for tests)."""
    G = float(group_size)
    counts = np.asarray(counts, dtype=float)
    logp, logp_old, logp_ref = _prompt_logps(theta, theta_old, theta_ref, offsets)
    if kl == "k1_reward":
        rewards = rewards - kl_coef * (logp_old - logp_ref)
    adv, _ = _advantages(counts, rewards, group_size, normalization, adv_eps)
    w = counts / G
    if surrogate == "ratio":
        rho = np.exp(logp - logp_old)
        clipped_ratio = np.clip(rho, 1.0 - clip_low, 1.0 + clip_high)
        term = np.minimum(rho * adv, clipped_ratio * adv)
    else:
        term = adv * logp
    loss_b = -(w * term).sum(axis=-1)
    if kl == "k3":
        x = logp_ref - logp
        loss_b = loss_b + kl_coef * (w * (np.exp(x) - x - 1.0)).sum(axis=-1)
    elif kl == "exact":
        loss_b = loss_b + kl_coef * (np.exp(logp) * (logp - logp_ref)).sum(axis=-1)
    return loss_b.mean(axis=1)


# ---------------------------------------------------------------------------
# K = 2
# ---------------------------------------------------------------------------

#: Above this group size :func:`binomial_counts` hands back to ``rng.binomial``:
#: the inverse-CDF loop grows with G and stops paying (see docs/simulation.md).
INVERSE_CDF_MAX_GROUP = 64


#: :func:`binomial_table` is used for repeated draws (a refresh window) when its ``G`` rows hold
#: at most this many entries (16 MiB); above it every draw rebuilds the CDF (:func:`binomial_counts`)
BINOMIAL_TABLE_MAX_ENTRIES = 1 << 21


def _binomial_start(group_size, q):
    """``(s, ratio, pmf)`` of :func:`binomial_counts`: :math:`s = \\min(q, 1-q)` (``np.minimum``
    equals ``np.where(q > 0.5, 1 - q, q)`` bit for bit: for q > 1/2, 1 − q is exact),
    :math:`s/(1-s)` and :math:`f(0) = (1-s)^G`."""
    s = np.minimum(q, 1.0 - q)
    ratio = s / (1.0 - s)
    pmf = 1.0 - s
    pmf **= group_size
    return s, ratio, pmf


def _binomial_place(u, cdf_rows, group_size, flip):
    """The counts ``n = #{k < G : u > F(k)}`` from the CDF rows ``F(0), F(1), ...`` (an
    iterator: the rows are read only while some entry is not placed), mirrored to ``G - n``
    where ``flip``; int64."""
    n = np.zeros(u.shape, dtype=np.int8)          # G <= 64: counts fit in int8
    above = np.empty(u.shape, dtype=bool)
    above_i = above.view(np.int8)
    for cdf in cdf_rows:
        np.greater(u, cdf, out=above)
        if not np.count_nonzero(above):   # cheaper than above.any() on small arrays
            break
        n += above_i
    return np.where(flip, group_size - n, n).astype(np.int64)


def binomial_counts(rng, group_size, q):
    r"""Binomial(G, q) counts, elementwise, from one uniform per entry (inverse CDF).

    :math:`n = \#\{k < G : u > F(k)\}` with :math:`F` the binomial CDF built by the
    pmf recursion :math:`f(k+1) = f(k)\,\frac{G-k}{k+1}\frac{s}{1-s}` on
    :math:`s = \min(q, 1-q)` (so :math:`f(0) = (1-s)^G \ge 2^{-G}` never underflows;
    counts of the complement are mirrored back); the loop stops as soon as every entry
    is placed.  For ``G > INVERSE_CDF_MAX_GROUP`` it is ``rng.binomial(G, q)``.
    The law is exactly binomial; where numpy itself uses inversion
    (:math:`G\min(q, 1-q) < 30`, one double per draw, the same recursion) it reproduces
    ``rng.binomial``'s draws from the same stream, up to rare rounding differences in the
    running sum — vectorised over the entries instead of one C loop per entry.
    :func:`binomial_table` and :func:`binomial_draw` give the same draws from the same
    stream, with the CDF built once for repeated draws at one ``q``.
    """
    if group_size > INVERSE_CDF_MAX_GROUP:
        return rng.binomial(group_size, q)
    u = rng.random(np.shape(q))
    _, ratio, pmf = _binomial_start(group_size, q)
    return _binomial_place(u, _cdf_rows(group_size, ratio, pmf), group_size, q > 0.5)


def _cdf_rows(group_size, ratio, pmf):
    """The CDF rows F(0), F(1), ... of :func:`binomial_counts`, each computed when asked for
    (in place: a row is valid until the next one is asked for)."""
    cdf = pmf.copy()
    for k in range(group_size):
        yield cdf
        pmf *= ratio
        pmf *= (group_size - k) / (k + 1.0)
        cdf += pmf


def binomial_table(group_size, q):
    """The CDF rows :math:`F(0..G-1)` of :func:`binomial_counts` at ``q``, computed once, for
    :func:`binomial_draw` (``None`` for ``G > INVERSE_CDF_MAX_GROUP``: then the draw is
    ``rng.binomial``).  Holds ``G`` arrays of ``q``'s shape."""
    if group_size > INVERSE_CDF_MAX_GROUP:
        return None
    _, ratio, pmf = _binomial_start(group_size, q)
    cdf = np.empty((group_size,) + np.shape(q))
    for k, row in enumerate(_cdf_rows(group_size, ratio, pmf)):    # binomial_counts' own rows
        cdf[k] = row
    return cdf, q > 0.5


def binomial_draw(rng, group_size, q, table):
    """:func:`binomial_counts` ``(rng, group_size, q)`` from ``table = binomial_table(group_size,
    q)``: the same counts from the same stream, without rebuilding the CDF."""
    if table is None:
        return rng.binomial(group_size, q)
    cdf, flip = table
    return _binomial_place(rng.random(np.shape(q)), cdf, group_size, flip)


@functools.lru_cache(maxsize=64)
def _advantage_mass_table(group_size, normalization, adv_eps, dr):
    """Per count n = 0..G: the stale advantage term g0 and whether the group is degenerate."""
    n0 = np.arange(group_size + 1, dtype=float)[:, None]
    g0, zero_var, _ = _advantage_term(n0, group_size, normalization, adv_eps, dr)
    return g0[:, 0], zero_var[:, 0]


def _advantage_term(n0, group_size, normalization, adv_eps, dr):
    """Stale-surrogate advantage term g0 = -n0 n1 scale / G, the degenerate mask and the
    advantage scale (Â_0 = n1·scale, Â_1 = −n0·scale)."""
    G = float(group_size)
    nn = n0 * (G - n0)
    zero_var = (nn == 0.0) | (np.asarray(dr) == 0.0)
    if normalization == "std":
        s = np.sqrt(nn * (dr * dr / (G * (G - 1.0))))
        s += adv_eps
        if adv_eps > 0:
            scale = (dr / G) / s
        else:
            scale = np.divide(dr / G, s, out=np.zeros_like(s), where=~zero_var)
    else:
        scale = np.broadcast_to(dr / G, n0.shape)
    g0 = nn * scale
    g0 *= -1.0 / G
    return g0, zero_var, scale

def _sigmoid_parts(x, need_sp=True):
    r"""``(q, sp)`` with :math:`q = \sigma(x)` and :math:`sp = \log(1 + e^{-x}) = -\log\sigma(x)`.

    One ``exp`` and (if ``need_sp``; else ``sp`` is None) one ``log1p``, stable
    for both signs: :math:`\log\sigma(-x) = -x - sp`.
    """
    if not need_sp:
        # 1/(1 + e^{-x}): e^{-x} = inf for x < -709 gives q = 0, the correctly rounded value
        with np.errstate(over="ignore"):
            q = np.negative(x)
            np.exp(q, out=q)
        q += 1.0
        return np.reciprocal(q, out=q), None
    e = np.exp(-np.abs(x))
    inv = 1.0 / (1.0 + e)
    q = np.where(x >= 0, inv, e * inv)
    sp = np.log1p(e)
    sp += np.maximum(-x, 0.0)
    return q, sp


def _softplus_neg(x):
    """The ``sp`` of :func:`_sigmoid_parts` alone (the same operations, in one work array:
    on arrays of 10^4-10^5 entries a fresh one per operation costs more than the operation),
    :math:`\\log(1 + e^{-x})`."""
    sp = np.abs(x)
    np.negative(sp, out=sp)
    np.exp(sp, out=sp)
    np.log1p(sp, out=sp)
    m = np.negative(x)
    sp += np.maximum(m, 0.0, out=m)
    return sp


def _two_action_core(x, q, sp, x_old, sp_old, x_ref, n0, dr, *, group_size, normalization,
                     adv_eps, surrogate, clip_low, clip_high, kl, kl_coef, u_minus_ref):
    """Gradient component g0 for two actions from precomputed policy parts (``(R, B)``).

    Without the ratio and with one reward gap ``dr`` for all groups, the advantage term
    depends on the count only: it is read from a table over n = 0..G.
    """
    G = float(group_size)
    if not (surrogate == "ratio" and x_old is not x) and np.ndim(dr) == 0:
        g_tab, zv_tab = _advantage_mass_table(group_size, normalization, float(adv_eps),
                                              float(dr))
        idx = n0 if n0.dtype.kind in "iu" else n0.astype(np.int64)
        g0, zero_var = g_tab[idx], zv_tab[idx]
        n0 = n0.astype(float) if kl == "k3" else n0
    else:
        n0 = n0.astype(float)
        g0, zero_var, scale = _advantage_term(n0, group_size, normalization, adv_eps, dr)
    clip_frac = None
    if surrogate == "ratio" and x_old is not x:
        # deviations r_a − r̄:  r0 − r̄ = n1·dr/G,  r1 − r̄ = −n0·dr/G;  Â_a = dev_a·scale·G/dr
        n1 = G - n0
        adv0 = n1 * scale
        adv1 = -n0 * scale
        rho0 = np.exp(sp_old - sp)                         # π(0)/π_old(0)
        rho1 = np.exp((x_old - x) + (sp_old - sp))         # π(1)/π_old(1)
        _, un0 = _clip_masks(rho0, adv0, clip_low, clip_high)
        _, un1 = _clip_masks(rho1, adv1, clip_low, clip_high)
        c0 = -(n0 / G) * np.where(un0, rho0 * adv0, 0.0)
        c1 = -(n1 / G) * np.where(un1, rho1 * adv1, 0.0)
        clip_frac = (n0 * ~un0 + n1 * ~un1).sum(axis=1) / (G * n0.shape[1])
        g0 = c0 * (1.0 - q) - c1 * q
    # otherwise ρ ≡ 1 (or ignored): c0 = −(n0/G)Â0 = −nn·scale/G = −c1, so g0 = c0
    if kl == "k3":
        # c_a += β (n_a/G)(1 − π_ref(a)/π(a)),  log π(0) = −sp,  log π(1) = −x − sp
        lr0 = -np.logaddexp(0.0, -x_ref)                   # log π_ref(0), (B,)
        lr1 = lr0 - x_ref                                  # log π_ref(1)
        k0 = kl_coef * (n0 / G) * (1.0 - np.exp(lr0 + sp))
        k1 = kl_coef * ((G - n0) / G) * (1.0 - np.exp(lr1 + x + sp))
        g0 = g0 + k0 * (1.0 - q) - k1 * q
    if kl == "exact":   # g0 is this function's own array here: added in place
        k = kl_coef * q
        k *= 1.0 - q
        k *= u_minus_ref[:, None]
        g0 += k
    g0 = g0[:, 0] if g0.shape[1] == 1 else g0.mean(axis=1)
    zvf = zero_var[:, 0].astype(float) if zero_var.shape[1] == 1 else zero_var.mean(axis=1)
    if clip_frac is None:
        clip_frac = np.zeros(n0.shape[0])
    return g0, zvf, clip_frac


def two_action_gradient(u, u_old, u_ref, delta, r0, r1, n0, *, group_size, normalization,
                        adv_eps, surrogate, clip_low, clip_high, kl, kl_coef):
    r"""Gradient component :math:`g_0 = -g_1` for two actions.

    ``u = θ_0 − θ_1`` (``(R,)``), prompt offsets ``delta = d_{b0} − d_{b1}`` (``(B,)``),
    ``n0`` the count of action 0 in each group (``(R, B)``).  Returns
    ``(g0, zero_var_frac, clip_frac)``, each ``(R,)``.  Same result as
    :func:`group_gradient` (first component) for ``K = 2``.
    """
    delta = np.asarray(delta, dtype=float)
    x = u[:, None] + delta
    q, sp = _sigmoid_parts(x)
    if u_old is u:
        x_old, sp_old = x, sp
    else:
        x_old = u_old[:, None] + delta
        _, sp_old = _sigmoid_parts(x_old)
    dr = float(r0 - r1)
    if kl == "k1_reward":   # r'_0 - r'_1 = r_0 - r_1 - beta (x_old - x_ref), per prompt
        dr = dr - kl_coef * (x_old - (u_ref + delta))
    return _two_action_core(x, q, sp, x_old, sp_old, u_ref + delta, np.asarray(n0),
                            dr, group_size=group_size,
                            normalization=normalization, adv_eps=adv_eps,
                            surrogate=surrogate, clip_low=clip_low, clip_high=clip_high,
                            kl=kl, kl_coef=kl_coef, u_minus_ref=u - u_ref)


def _log(w):
    """``log(w)`` for ``w >= 0`` (``-inf`` at 0, no warning)."""
    with np.errstate(divide="ignore"):
        return np.log(w)


def _log_mean_exp(a, axis, overwrite=False):
    r""":math:`\log` of the mean of :math:`e^a` over ``axis`` (``-inf`` entries allowed);
    ``overwrite``: ``a`` is a temporary, used as the work array (the same operations)."""
    m = a.max(axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    if overwrite:
        a -= m
        w = np.exp(a, out=a)
    else:
        w = np.exp(a - m)
    with np.errstate(divide="ignore"):
        s = np.log(w.mean(axis=axis, keepdims=True))
    return np.squeeze(s + m, axis=axis)


def _z_from_logs(logp_hit, logp_miss, axis, overwrite=False):
    r"""``z = log p − log(1 − p)`` with ``p`` the mean over ``axis`` of :math:`e^{logp\_hit}`
    and ``1 − p`` that of :math:`e^{logp\_miss}`, both in the log domain, so ``z``
    stays finite when ``p`` rounds to 0 or 1 (only degenerate rewards give ±inf).
    ``overwrite``: both are temporaries, used as work arrays."""
    return (_log_mean_exp(logp_hit, axis, overwrite)
            - _log_mean_exp(logp_miss, axis, overwrite))


def _two_action_state(x, q, sp, x_ref, lr1, r0, r1, out, t, z_is_x):
    """Fill the state observables at row ``t`` of ``out`` for two actions.

    Entropy :math:`H = sp + (1-q)x`; :math:`KL = -H - \\log\\pi_{ref}(1) - q\\,x_{ref}`.
    """
    qm = q[:, 0] if q.shape[1] == 1 else None
    if "reward" in out or ("z" in out and not z_is_x):
        pq = q if r0 == 1.0 and r1 == 0.0 else r1 + (r0 - r1) * q
        p = pq[:, 0] if qm is not None else pq.mean(axis=1)
        if "reward" in out:
            out["reward"][t] = p
    if "z" in out:
        if z_is_x:
            out["z"][t] = x[:, 0]
        else:
            if sp is None:
                sp = _softplus_neg(x)
            l1q = np.negative(x)                   # log π(1) = −x − sp, log π(0) = −sp
            l1q -= sp
            lq = -sp
            if r0 == 1.0 and r1 == 0.0:
                # log(1·π(0) + 0·π(1)) = log π(0): logaddexp(a, −inf) is a + log1p(0) = a
                hit, miss = lq, l1q
            else:
                hit = np.logaddexp(_log(r0) + lq, _log(r1) + l1q)
                miss = np.logaddexp(_log(1.0 - r0) + lq, _log(1.0 - r1) + l1q)
            out["z"][t] = _z_from_logs(hit, miss, 1, overwrite=True)
    if "entropy" in out or "kl" in out:
        h = (1.0 - q) * x
        h += sp
        if "entropy" in out:
            out["entropy"][t] = h[:, 0] if qm is not None else h.mean(axis=1)
        if "kl" in out:
            kl = q * x_ref
            kl += h
            kl += lr1
            kl *= -1.0
            out["kl"][t] = kl[:, 0] if qm is not None else kl.mean(axis=1)


def _generic_state(theta, theta_ref, offsets, rewards, out, t):
    logp = log_softmax(theta[:, None, :] + offsets)
    pi = np.exp(logp)
    p = (pi * rewards).sum(axis=-1).mean(axis=1)
    if "reward" in out:
        out["reward"][t] = p
    if "z" in out:
        R = logp.shape[0]
        hit = (logp + _log(rewards)).reshape(R, -1)
        miss = (logp + _log(1.0 - rewards)).reshape(R, -1)
        out["z"][t] = _z_from_logs(hit, miss, 1)
    if "entropy" in out:
        out["entropy"][t] = -(pi * logp).sum(axis=-1).mean(axis=1)
    if "kl" in out:
        logp_ref = log_softmax(theta_ref[None, None, :] + offsets)
        out["kl"][t] = (pi * (logp - logp_ref)).sum(axis=-1).mean(axis=1)


# ---------------------------------------------------------------------------
# optimizers (PyTorch conventions)
# ---------------------------------------------------------------------------

class Optimizer:
    r"""SGD, heavy-ball momentum and Adam on an array of parameters, PyTorch conventions.

    ``step(g)`` returns the parameter increment :math:`\Delta\theta`:

    - ``sgd``: :math:`-\eta g`;
    - ``momentum``: :math:`b \leftarrow \mu b + g`, :math:`-\eta b` (``torch.optim.SGD``,
      dampening 0, no Nesterov; :math:`b_0 = 0` so the first buffer is ``g``);
    - ``adam``: :math:`m \leftarrow \beta_1 m + (1-\beta_1) g`,
      :math:`v \leftarrow \beta_2 v + (1-\beta_2) g^2`,
      :math:`-\frac{\eta}{1-\beta_1^t}\, m / (\sqrt{v}/\sqrt{1-\beta_2^t} + \epsilon)`.
    """

    def __init__(self, kind, shape, *, learning_rate, momentum=0.0, betas=(0.9, 0.999),
                 eps=1e-8):
        self.kind = kind
        self.lr = float(learning_rate)
        self.mu = float(momentum)
        self.b1, self.b2 = (float(b) for b in betas)
        self.eps = float(eps)
        self.t = 0
        if kind == "momentum":
            self.buf = np.zeros(shape)
        elif kind == "adam":
            self.m = np.zeros(shape)
            self.v = np.zeros(shape)

    def reset(self, mask):
        """Zero the optimizer state of the runs selected by ``mask`` (frozen runs)."""
        if self.kind == "momentum":
            self.buf[mask] = 0.0
        elif self.kind == "adam":
            self.m[mask] = 0.0
            self.v[mask] = 0.0

    def step(self, g):
        self.t += 1
        if self.kind == "sgd":
            return -self.lr * g
        if self.kind == "momentum":
            self.buf *= self.mu
            self.buf += g
            return -self.lr * self.buf
        # adam
        self.m *= self.b1
        self.m += (1.0 - self.b1) * g
        self.v *= self.b2
        self.v += (1.0 - self.b2) * (g * g)
        bc1 = 1.0 - self.b1 ** self.t
        bc2 = 1.0 - self.b2 ** self.t
        denom = np.sqrt(self.v) / np.sqrt(bc2) + self.eps
        return -(self.lr / bc1) * self.m / denom


# ---------------------------------------------------------------------------
# driver
# ---------------------------------------------------------------------------

def _empty_rows(rows, cols):
    """An uninitialised float array ``(rows, cols)``.

    Large arrays are mapped with ``MAP_POPULATE`` where available: the pages are
    faulted in by one system call instead of one fault per page while the
    simulation writes row by row (measured 2–6x cheaper; see docs/simulation.md).
    """
    nbytes = rows * cols * 8
    populate = getattr(mmap, "MAP_POPULATE", None)
    if nbytes < (1 << 22) or populate is None:
        return np.empty((rows, cols))
    try:
        buf = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | populate)
    except (OSError, ValueError):
        return np.empty((rows, cols))
    return np.frombuffer(buf, dtype=float).reshape(rows, cols)


def _allocate(plan, runs):
    T = plan.steps
    out = {}
    for name in plan.record:
        arr = _empty_rows(T + 1, runs)   # time-major while filling: contiguous rows
        if name in UPDATE_OBSERVABLES:
            arr[T] = np.nan
        out[name] = arr
    return out


def _lagged(plan, t, current, ring, old):
    """Logits (or logit differences) of the sampling policy at step ``t``.

    ``refresh``: π_old := π_θ at t ≡ 0 (mod k).  ``delay``: the policy of step
    t − d, the initial one for t < d (``ring`` holds the last d + 1 states, all
    initialized to the start).
    """
    if plan.lag_model == "refresh":
        if plan.refresh_interval == 1:
            return current
        if t % plan.refresh_interval == 0:
            old[...] = current
        return old
    d = plan.delay
    if d == 0:
        return current
    ring[t % (d + 1)] = current
    return ring[(t + 1) % (d + 1)]


def run(plan: KernelPlan, rng: np.random.Generator, *, steps_iter=None, kernel="auto"):
    r"""Integrate the plan; returns ``(observables, final_theta, diverged_at)``.

    ``observables`` maps each recorded name to an array ``(R, T+1)``; per-update
    observables have NaN in the last column.

    Divergence: after every update the logit spread
    :math:`\max_a\theta_a - \min_a\theta_a` of each live run (``|u|`` for the
    two-action kernel) is compared with ``plan.divergence_bound``; a run whose new
    state exceeds it or is not finite is *frozen*: its state is reset to the last
    accepted one (so it stays finite), its optimizer state is zeroed, it takes no
    further updates, and ``diverged_at[r]`` is the step t + 1 of the rejected
    state (-1 for runs that never diverged).  The observables of a frozen run
    repeat its last accepted state (update observables are evaluated there) and
    are placeholders; :class:`grpo_theory.simulation.SimulationResult` excludes them
    from its ensemble statistics.  The check is two reductions per step; the rest
    runs only once some run has diverged.  ``steps_iter`` wraps
    ``range(steps)`` (a progress bar).  ``kernel`` is ``"auto"`` (two-action
    kernel when ``K = 2``), ``"generic"`` or ``"two_action"``.
    """
    R, K = plan.theta0.shape
    if kernel == "auto":
        kernel = "two_action" if K == 2 else "generic"
    it = range(plan.steps) if steps_iter is None else steps_iter
    if kernel == "two_action":
        return _run_two_action(plan, rng, it)
    return _run_generic(plan, rng, it)


def _loop_state(plan, R):
    """The per-run divergence bookkeeping and the batch-reuse store both kernels start from:
    ``(bound, active, diverged_at, frozen, reuse, stored)``."""
    reuse = plan.reuse == "batch" and plan.refresh_interval > 1
    return (plan.divergence_bound, np.ones(R, dtype=bool), np.full(R, -1, dtype=np.int64),
            False, reuse, [None] * plan.window_batches)


def _grad_kwargs(plan):
    return dict(group_size=plan.group_size, normalization=plan.normalization,
                adv_eps=plan.adv_eps, surrogate=plan.surrogate, clip_low=plan.clip_low,
                clip_high=plan.clip_high, kl=plan.kl, kl_coef=plan.kl_coef)


def _freeze(ok, active, diverged_at, t, opt):
    """Bookkeeping for runs whose proposed state at step ``t`` was rejected."""
    newly = active & ~ok
    diverged_at[newly] = t
    opt.reset(newly)
    active &= ok
    return active


def _finish(out):
    # (T+1, R) filled row by row; hand out the (R, T+1) transposed view (no copy)
    return {name: arr.T for name, arr in out.items()}


def _run_two_action(plan, rng, steps_iter):
    R = plan.theta0.shape[0]
    G = plan.group_size
    u0 = plan.theta0[:, 0] - plan.theta0[:, 1]
    u = u0.copy()
    u_ref = float(plan.theta_ref[0] - plan.theta_ref[1])
    delta = plan.offsets[:, 0] - plan.offsets[:, 1]
    x_ref = u_ref + delta                                   # (B,)
    lr1 = -np.logaddexp(0.0, x_ref)                         # log π_ref(1) per prompt
    r0, r1 = float(plan.rewards[0]), float(plan.rewards[1])
    z_is_x = delta.size == 1 and delta[0] == 0.0 and r0 == 1.0 and r1 == 0.0
    out = _allocate(plan, R)
    state_out = {n: out[n] for n in STATE_OBSERVABLES if n in out}
    opt = Optimizer(plan.optimizer, (R,), learning_rate=plan.learning_rate,
                    momentum=plan.momentum, betas=plan.adam_betas, eps=plan.adam_eps)
    kw = _grad_kwargs(plan)
    on_policy = ((plan.lag_model == "refresh" and plan.refresh_interval == 1)
                 or (plan.lag_model == "delay" and plan.delay == 0))
    ring = np.repeat(u0[None], plan.delay + 1, axis=0) if plan.lag_model == "delay" else None
    old = u0.copy()
    # log σ(x) is needed for entropy, KL, k3 and off-policy ratios; skip it otherwise
    need_sp = ("entropy" in out or "kl" in out or plan.kl == "k3"
               or (plan.surrogate == "ratio" and not on_policy))
    x = u[:, None] + delta
    q, sp = _sigmoid_parts(x, need_sp)
    _two_action_state(x, q, sp, x_ref, lr1, r0, r1, state_out, 0, z_is_x)
    bound, active, diverged_at, frozen, reuse, stored = _loop_state(plan, R)
    # refresh windows: π_old is fixed between refreshes, so its parts (and, for fresh batches,
    # the CDF table of its binomial draws) are computed once per window
    windowed = plan.lag_model == "refresh" and plan.refresh_interval > 1
    use_table = (windowed and not reuse
                 and G * x.size <= BINOMIAL_TABLE_MAX_ENTRIES)
    x_old = table = None
    for t in steps_iter:
        if on_policy:
            x_old, q_old, sp_old = x, q, sp
        elif not windowed or t % plan.refresh_interval == 0 or x_old is None:
            u_old = _lagged(plan, t, u, ring, old)
            x_old = u_old[:, None] + delta
            q_old, sp_old = _sigmoid_parts(x_old, need_sp)
            table = binomial_table(G, q_old) if use_table else None
        if use_table:
            n0 = binomial_draw(rng, G, q_old, table)
        elif not reuse:
            n0 = binomial_counts(rng, G, q_old)
        else:   # the window draws its m batches at its first m steps, then cycles
            j = t % plan.refresh_interval
            if j < plan.window_batches:
                stored[j] = binomial_counts(rng, G, q_old)
            n0 = stored[j % plan.window_batches]
        dr = r0 - r1
        if plan.kl == "k1_reward":   # r'_0 - r'_1 = r_0 - r_1 - beta (x_old - x_ref)
            dr = dr - plan.kl_coef * (x_old - x_ref)
        g0, zvf, cf = _two_action_core(x, q, sp, x_old, sp_old, x_ref, n0, dr,
                                       u_minus_ref=u - u_ref, **kw)
        if "zero_var_frac" in out:
            out["zero_var_frac"][t] = zvf
        if "clip_frac" in out:
            out["clip_frac"][t] = cf
        if "grad_norm" in out:
            out["grad_norm"][t] = np.abs(g0) * np.sqrt(2.0)
        # θ_0 += Δ, θ_1 −= Δ  ⇒  u += 2Δ
        with np.errstate(over="ignore", invalid="ignore"):
            step = opt.step(g0)
            step *= 2.0
            u_new = u + step
            # NaN fails both comparisons; one reduction each on the fast path
            safe = u_new.max() <= bound and u_new.min() >= -bound
            if frozen or not safe:
                ok = np.abs(u_new) <= bound
                active = _freeze(ok, active, diverged_at, t + 1, opt)
                frozen = not active.all()
                u_new = np.where(active, u_new, u)
        u = u_new
        x = u[:, None] + delta
        q, sp = _sigmoid_parts(x, need_sp)
        _two_action_state(x, q, sp, x_ref, lr1, r0, r1, state_out, t + 1, z_is_x)
    shift = 0.5 * (u - u0)
    theta = plan.theta0 + np.stack([shift, -shift], axis=1)
    return _finish(out), theta, diverged_at


def _draw_counts(rng, G, theta_old, offsets):
    """Action counts ``(R, B, K)`` of one group per run and prompt, drawn from π_old."""
    if theta_old.shape[1] == 2:   # same stream as the two-action kernel: one binomial per group
        q_old = 1.0 / (1.0 + np.exp(-((theta_old[:, 0] - theta_old[:, 1])[:, None]
                                      + (offsets[:, 0] - offsets[:, 1]))))
        n0 = binomial_counts(rng, G, q_old)
        return np.stack([n0, G - n0], axis=-1)
    pi_old = np.exp(log_softmax(theta_old[:, None, :] + offsets))
    return rng.multinomial(G, pi_old / pi_old.sum(axis=-1, keepdims=True))


def _run_generic(plan, rng, steps_iter):
    R, K = plan.theta0.shape
    G = plan.group_size
    theta = plan.theta0.copy()
    out = _allocate(plan, R)
    opt = Optimizer(plan.optimizer, (R, K), learning_rate=plan.learning_rate,
                    momentum=plan.momentum, betas=plan.adam_betas, eps=plan.adam_eps)
    kw = _grad_kwargs(plan)
    ring = (np.repeat(theta[None], plan.delay + 1, axis=0)
            if plan.lag_model == "delay" else None)
    old = theta.copy()
    state_out = {n: out[n] for n in STATE_OBSERVABLES if n in out}
    _generic_state(theta, plan.theta_ref, plan.offsets, plan.rewards, state_out, 0)
    bound, active, diverged_at, frozen, reuse, stored = _loop_state(plan, R)
    for t in steps_iter:
        theta_old = _lagged(plan, t, theta, ring, old)
        if not reuse:
            counts = _draw_counts(rng, G, theta_old, plan.offsets)
        else:   # the window draws its m batches at its first m steps, then cycles
            j = t % plan.refresh_interval
            if j < plan.window_batches:
                stored[j] = _draw_counts(rng, G, theta_old, plan.offsets)
            counts = stored[j % plan.window_batches]
        g, zvf, cf = group_gradient(theta, theta_old, plan.theta_ref, plan.offsets,
                                    plan.rewards, counts, **kw)
        if "zero_var_frac" in out:
            out["zero_var_frac"][t] = zvf
        if "clip_frac" in out:
            out["clip_frac"][t] = cf
        if "grad_norm" in out:
            out["grad_norm"][t] = np.sqrt((g * g).sum(axis=1))
        with np.errstate(over="ignore", invalid="ignore"):
            theta_new = theta + opt.step(g)
            spread = theta_new.max(axis=1) - theta_new.min(axis=1)
            if frozen or not spread.max() <= bound:
                ok = spread <= bound
                active = _freeze(ok, active, diverged_at, t + 1, opt)
                frozen = not active.all()
                theta_new = np.where(active[:, None], theta_new, theta)
        theta = theta_new
        _generic_state(theta, plan.theta_ref, plan.offsets, plan.rewards, state_out, t + 1)
    return _finish(out), theta, diverged_at
