r"""Direct GRPO simulation of the softmax bandit (level L0).

An ensemble of ``runs`` independent GRPO trainings of a ``K``-action softmax
bandit, vectorized over runs.  This is the ground truth the mean-field theory
(L1–L3) is checked against, so it computes everything from sampled groups —
no mean-field formula is used anywhere.

Conventions (see ``docs/theory.md`` and ``docs/simulation.md``):

- Shared logits :math:`\theta \in \mathbb R^K`; prompt ``b`` sees
  :math:`\pi_b = \mathrm{softmax}(\theta + d_b)`, ``d_b`` a fixed difficulty offset
  (zero by default; with ``difficulty_spread`` σ the correct actions of prompt
  ``b`` get a logit offset :math:`\sim N(0, \sigma^2)`, drawn once per prompt from
  the seed and shared by all runs).
- Rewards :math:`r \in [0,1]^K`, binary by default (the first ``correct`` actions
  pay 1).  Success probability :math:`p = \sum_a \pi(a) r(a)` averaged over
  prompts (units: reward), :math:`z = \log(p/(1-p))` (logits).
- The reference policy is the one with :math:`p = p_{ref}` (correct actions share
  one logit, wrong actions another); the start is the same policy, or the one with
  :math:`p = p_0`, or given logits ``theta0``.
- One step: per prompt a group of ``G`` actions from :math:`\pi_{old}` drawn as
  multinomial counts (one binomial for ``K = 2``), group-normalized advantages,
  clipped-ratio or ratio-free ("stale") surrogate, optional KL (exact or k3), the
  analytic gradient averaged over prompts, then SGD / heavy-ball / Adam
  (PyTorch conventions).
- Lag: ``refresh`` (π_old := π_θ at t ≡ 0 mod k) or ``delay`` (groups from the
  policy of step t − d).  Within a refresh window the k steps draw fresh batches
  from π_old (``reuse="fresh"``) or reuse the first one (``reuse="batch"``).
- ``kl="k1_reward"`` (verl ``use_kl_in_reward``): the KL enters the reward,
  :math:`r'(a) = r(a) - \beta(\log\pi_{old}(a) - \log\pi_{ref}(a))`, before the
  advantages are formed; it adds no loss term.

Time is in optimizer steps; ``t = 0..T``.  State observables (``reward``, ``z``,
``entropy``, ``kl``) are those of θ_t; update observables (``zero_var_frac``,
``grad_norm``, ``clip_frac``) belong to the update taken at step t, so their last
column (t = T) is NaN.
"""

from __future__ import annotations

import math

import numpy as np

from grpo_theory.progress import progress as _progress
from grpo_theory.simulation import kernels as _k
from grpo_theory.simulation.config import SimulationConfig
from grpo_theory.simulation.result import SimulationResult
from grpo_theory.validate import ParameterError

__all__ = ["simulate", "logits_for_success"]


def _prompt_offsets(config: SimulationConfig, rng: np.random.Generator) -> np.ndarray:
    offsets = np.zeros((config.prompts, config.actions))
    if config.difficulty_spread > 0:
        shift = rng.normal(0.0, config.difficulty_spread, size=config.prompts)
        offsets[:, config.correct_mask()] = shift[:, None]
    return offsets


def _mean_success(u, mask, rewards, offsets):
    logits = np.where(mask, u, 0.0) + offsets
    logp = _k.log_softmax(logits)
    return float((np.exp(logp) * rewards).sum(axis=-1).mean())


def logits_for_success(p: float, *, rewards, correct_mask=None, offsets=None) -> np.ndarray:
    r"""Logits :math:`\theta` (``(K,)``) with prompt-averaged success probability ``p``.

    The 'correct' actions (``correct_mask``, default: maximal reward) share the
    logit :math:`u`, the others have logit 0.  For binary rewards with ``c`` correct
    of ``K`` actions and no offsets, :math:`u = \log\frac{p (K - c)}{c (1 - p)}`;
    otherwise :math:`u` is found by root bracketing (p is increasing in u).
    """
    from scipy.optimize import brentq

    rewards = np.asarray(rewards, dtype=float)
    K = rewards.size
    mask = rewards == rewards.max() if correct_mask is None else np.asarray(correct_mask, bool)
    offsets = np.zeros((1, K)) if offsets is None else np.asarray(offsets, dtype=float)
    c = int(mask.sum())
    binary = np.all((rewards == 1.0) == mask) and np.all(rewards[~mask] == 0.0)
    if binary and not np.any(offsets) and 0 < c < K:
        u = math.log(p * (K - c) / (c * (1.0 - p)))
        return np.where(mask, u, 0.0)
    lo_u, hi_u = -60.0, 60.0
    f_lo = _mean_success(lo_u, mask, rewards, offsets) - p
    f_hi = _mean_success(hi_u, mask, rewards, offsets) - p
    if not (f_lo < 0 < f_hi):
        lo = f_lo + p
        hi = f_hi + p
        raise ParameterError("success probability", p,
                             f"inside ({lo:.6g}, {hi:.6g}), the range reachable with "
                             "these rewards")
    u = brentq(lambda v: _mean_success(v, mask, rewards, offsets) - p, lo_u, hi_u,
               xtol=1e-14, rtol=4 * np.finfo(float).eps)
    return np.where(mask, u, 0.0)


# ---------------------------------------------------------------------------
# entry point
# ---------------------------------------------------------------------------

def simulate(config: SimulationConfig | None = None, /, *, _kernel: str = "auto",
             **params) -> SimulationResult:
    r"""Simulate an ensemble of GRPO runs on the softmax bandit.

    Call as ``simulate(steps=200, group_size=8, ...)`` or ``simulate(config)``
    (keyword arguments then override fields of ``config``).  Parameters are the
    fields of :class:`SimulationConfig`:

    steps, runs, group_size, prompts, actions, correct, rewards, p_ref, p0, theta0,
    theta_ref, learning_rate, optimizer (``sgd``/``momentum``/``adam``), momentum,
    adam_betas, adam_eps, normalization (``std``/``mean``), adv_eps, surrogate
    (``stale``/``ratio``), clip_low, clip_high, kl (``none``/``exact``/``k3``/
    ``k1_reward``), kl_coef, lag_model (``refresh``/``delay``), refresh_interval, delay,
    reuse (``fresh``: a new batch from π_old at every step of a refresh window;
    ``batch``: the window's first ``window_batches`` batches, cycled through by its steps),
    window_batches,
    difficulty_spread, seed, record, progress.

    For ``K = 2`` and the stale surrogate on-policy, the expected update of
    :math:`z = \theta_0 - \theta_1` is :math:`2\eta\,E[\frac1G\sum_{correct}\hat A_i]`.

    Same seed ⇒ bit-for-bit identical arrays.  Memory: ``8·runs·(steps+1)`` bytes
    per recorded observable.
    """
    if config is None:
        config = SimulationConfig(**params)
    elif not isinstance(config, SimulationConfig):
        raise ParameterError("config", type(config).__name__, "a SimulationConfig")
    elif params:
        config = config.replace(**params)

    offsets_seq, sample_seq = np.random.SeedSequence(config.seed).spawn(2)
    offsets = _prompt_offsets(config, np.random.default_rng(offsets_seq))
    rewards = config.reward_vector()
    mask = config.correct_mask()
    K, R = config.actions, config.runs
    if config.theta_ref is not None:
        theta_ref = np.asarray(config.theta_ref, dtype=float)
    else:
        try:
            theta_ref = logits_for_success(config.p_ref, rewards=rewards, correct_mask=mask,
                                           offsets=offsets)
        except ParameterError as exc:
            raise ParameterError("p_ref", config.p_ref, exc.allowed) from None
    if config.theta0 is not None:
        theta0 = np.broadcast_to(np.asarray(config.theta0, dtype=float), (R, K)).copy()
    elif config.p0 is not None:
        try:
            start = logits_for_success(config.p0, rewards=rewards, correct_mask=mask,
                                       offsets=offsets)
        except ParameterError as exc:
            raise ParameterError("p0", config.p0, exc.allowed) from None
        theta0 = np.broadcast_to(start, (R, K)).copy()
    else:
        theta0 = np.broadcast_to(theta_ref, (R, K)).copy()

    plan = _k.KernelPlan(
        theta0=theta0, theta_ref=theta_ref, offsets=offsets, rewards=rewards,
        steps=config.steps, group_size=config.group_size,
        normalization=config.normalization, adv_eps=config.adv_eps,
        surrogate=config.surrogate, clip_low=config.clip_low, clip_high=config.clip_high,
        kl=config.kl, kl_coef=config.kl_coef, optimizer=config.optimizer,
        learning_rate=config.learning_rate, momentum=config.momentum,
        adam_betas=config.adam_betas, adam_eps=config.adam_eps,
        lag_model=config.lag_model, refresh_interval=config.refresh_interval,
        delay=config.delay, record=config.record, reuse=config.reuse,
        window_batches=config.window_batches,
        divergence_bound=config.divergence_bound)
    steps_iter = _progress(range(config.steps), total=config.steps, desc="simulate",
                           enabled=config.progress)
    rng = np.random.default_rng(sample_seq)
    try:
        observables, final, diverged_at = _k.run(plan, rng, steps_iter=steps_iter,
                                                 kernel=_kernel)
    finally:
        steps_iter.close()
    return SimulationResult(config=config, t=np.arange(config.steps + 1),
                            observables=observables, final_logits=final,
                            theta0=theta0, theta_ref=theta_ref, offsets=offsets,
                            diverged_at=diverged_at)
