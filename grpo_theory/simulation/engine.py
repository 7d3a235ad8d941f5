r"""Direct GRPO simulation of the softmax bandit (level L0).

An ensemble of ``runs`` independent GRPO trainings of a ``K``-action softmax
bandit, vectorized over runs.  This is the ground truth the mean-field theory
(L1–L3) is checked against, so it computes everything from sampled groups —
no mean-field formula is used anywhere.

One entry point, :func:`simulate` ``(model, steps=..., runs=..., seed=...)``: the model
(:class:`~grpo_theory.model.GRPOModel`) is the variant, the optimizer and the lag; the
keyword arguments are the simulation-only knobs (ensemble size, seed, start, per-prompt
difficulty, divergence bound, what to record).

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
  analytic gradient averaged over prompts, then heavy ball (plain SGD at μ = 0) or Adam
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
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import brentq

from grpo_theory.model import GRPOModel
from grpo_theory.progress import progress as _progress
from grpo_theory.simulation import kernels as _k
from grpo_theory.simulation.result import SimulationResult
from grpo_theory.validate import (ParameterError, check_memory, check_choice, check_finite_array, check_int,
                                  check_probability, check_real)

__all__ = ["simulate", "logits_for_success", "EnsembleSettings", "MAX_DIVERGENCE_BOUND"]

#: Largest allowed ``divergence_bound`` (logits): below it every intermediate of a
#: step (ratios π/π_old ≤ K·e^bound, their squares in Adam) stays far from overflow.
MAX_DIVERGENCE_BOUND = 300.0


@dataclass(frozen=True)
class EnsembleSettings:
    """The simulation-only arguments of one :func:`simulate` call, validated (their
    defaults are :func:`simulate`'s; the model holds everything else)."""

    steps: int
    runs: int
    seed: int
    p0: float | None
    theta0: tuple | None
    rewards: tuple | None
    theta_ref: tuple | None
    difficulty_spread: float
    divergence_bound: float
    record: tuple
    progress: bool | None = field(compare=False)

    def reward_vector(self, model: GRPOModel) -> np.ndarray:
        """Rewards per action ``(K,)``: ``rewards``, or 1 for the model's first ``correct``
        actions and 0 for the others."""
        if self.rewards is not None:
            return np.asarray(self.rewards, dtype=float)
        r = np.zeros(model.actions)
        r[: model.correct] = 1.0
        return r


def _as_tuple(x):
    if x is None:
        return None
    arr = np.asarray(x, dtype=float)
    return tuple(map(tuple, arr)) if arr.ndim == 2 else tuple(arr.tolist())


def _settings(model, steps, runs, seed, p0, theta0, rewards, theta_ref, difficulty_spread,
              divergence_bound, record, progress) -> EnsembleSettings:
    """Validate the simulation-only arguments (the model was validated at construction)."""
    K = model.actions
    steps = check_int("steps", steps, low=0)
    runs = check_int("runs", runs, low=1)
    bound = check_real("divergence_bound", divergence_bound, low=0.0, low_open=True,
                       high=MAX_DIVERGENCE_BOUND)
    if rewards is not None:
        r = check_finite_array("rewards", rewards)
        if r.shape != (K,):
            raise ParameterError("rewards", rewards, f"a sequence of {K} rewards (one per action)")
        if np.any(r < 0) or np.any(r > 1):
            raise ParameterError("rewards", rewards, "rewards in [0, 1]")
    if p0 is not None:
        p0 = check_probability("p0", p0)
    if theta0 is not None:
        if p0 is not None:
            raise ParameterError("p0", p0, "None when theta0 is given")
        th = check_finite_array("theta0", theta0)
        if th.shape not in {(K,), (runs, K)}:
            raise ParameterError("theta0", f"an array of shape {th.shape}",
                                 f"an array of shape ({K},) or ({runs}, {K})")
        spread = float((th.max(axis=-1) - th.min(axis=-1)).max())
        if spread > bound:
            raise ParameterError("theta0", f"logits with spread {spread:g}",
                                 "logits whose spread max - min is at most "
                                 f"divergence_bound = {bound:g}")
    if theta_ref is not None:
        th = check_finite_array("theta_ref", theta_ref)
        if th.shape != (K,):
            raise ParameterError("theta_ref", f"an array of shape {th.shape}",
                                 f"an array of shape ({K},)")
    spread = check_real("difficulty_spread", difficulty_spread, low=0.0)
    seed = check_int("seed", seed, low=0)
    record = (record,) if isinstance(record, str) else tuple(record)
    for name in record:
        check_choice("record", name, _k.OBSERVABLES)
    if len(set(record)) != len(record):
        raise ParameterError("record", record, "distinct observable names")
    if progress not in (None, True, False):
        raise ParameterError("progress", progress, "None, True or False")
    return EnsembleSettings(steps, runs, seed, p0, _as_tuple(theta0), _as_tuple(rewards),
                            _as_tuple(theta_ref), spread, bound, record, progress)


#: bytes per run, prompt and action of the per-step work arrays (measured: 64 for the two-action
#: kernel, 98 for the generic one, R = 1000, B = 1000-2000; rounded up)
_WORK_BYTES = 128


#: bytes per step of the per-step statistics (lists of Python floats): measured 19.8 MiB at
#: R = 1, T = 2e5 with all seven observables (12.2 MiB of it the recorded arrays); with the JSON
#: text of ``simulate --json`` 394 MiB, about 2 KiB per step
PER_STEP_BYTES = 64
PER_STEP_BYTES_JSON = 2560


def memory_needed(model, steps: int, runs: int, n_record: int,
                  per_step: int = PER_STEP_BYTES) -> tuple[int, int]:
    """Bytes a simulation needs: ``(recorded, working)``.  Recorded: a float64 ``(steps + 1,
    runs)`` array per recorded observable, plus one of that size for the ensemble statistics
    (measured peak 1.15x the recorded arrays with all seven, R = 2000-4000, T = 500) and
    ``per_step`` bytes per step for their per-step lists; working: the per-step arrays over
    runs x prompts x actions, the delay ring, the stored batches of a reuse window and the
    count tables over 0..G.  Python integers: no overflow for absurd sizes."""
    R, B, K = int(runs), int(model.prompts), int(model.actions)
    recorded = (8 * R * (n_record + 1) + per_step) * (int(steps) + 1)
    per_state = R * B * K
    working = (_WORK_BYTES * per_state + 8 * R * K * ((model.delay or 0) + 1)
               + 8 * per_state * model.window_batches + 64 * (model.group_size + 1))
    return recorded, working


def check_simulation_memory(model, steps: int, runs: int, n_record: int = len(_k.OBSERVABLES),
                            per_step: int = PER_STEP_BYTES) -> None:
    """Refuse a simulation that does not fit in memory (:func:`memory_needed` against
    :func:`grpo_theory.validate.memory_limit`) before anything is allocated: a
    ``ParameterError`` naming steps or runs (or prompts, when the per-step arrays dominate)."""
    recorded, working = memory_needed(model, steps, runs, n_record, per_step)
    if recorded >= working:
        name, value = ("steps", steps) if steps + 1 > runs else ("runs", runs)
        check_memory(name, value, recorded + working,
                     f"{n_record} recorded observable(s) x 8 bytes x runs x (steps + 1) "
                     f"with steps = {steps}, runs = {runs}, plus the ensemble statistics and "
                     f"{per_step} bytes a step of per-step output")
    else:
        check_memory("prompts", model.prompts, recorded + working,
                     f"about {_WORK_BYTES} bytes per run x prompt x action for the per-step "
                     f"arrays, with runs = {runs}, actions = {model.actions}")


def _check_memory(model, st) -> None:
    check_simulation_memory(model, st.steps, st.runs, len(st.record))


def _prompt_offsets(model, settings, mask, rng: np.random.Generator) -> np.ndarray:
    offsets = np.zeros((model.prompts, model.actions))
    if settings.difficulty_spread > 0:
        shift = rng.normal(0.0, settings.difficulty_spread, size=model.prompts)
        offsets[:, mask] = shift[:, None]
    return offsets


class _Unreachable(ParameterError):
    """A success probability outside the range ``(lo, hi)`` the logits can reach."""

    def __init__(self, p, lo, hi):
        self.lo, self.hi = lo, hi
        super().__init__("success probability", p, f"{self.range_text()}, the range reachable "
                                                   "with these rewards")

    def range_text(self) -> str:
        return f"inside ({self.lo:.6g}, {self.hi:.6g})"


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
        raise _Unreachable(p, f_lo + p, f_hi + p)
    u = brentq(lambda v: _mean_success(v, mask, rewards, offsets) - p, lo_u, hi_u,
               xtol=1e-14, rtol=4 * np.finfo(float).eps)
    return np.where(mask, u, 0.0)


def _unreachable(name, p, exc: _Unreachable, st):
    """The error for a success probability the logits cannot reach: where the prompts' offsets
    narrow the reachable range, the spread is the parameter to change."""
    if st.difficulty_spread > 0:
        return ParameterError("difficulty_spread", st.difficulty_spread,
                              f"small enough that {name} = {p:g} is reachable (with this spread "
                              f"the prompt-averaged success can only lie {exc.range_text()})")
    return ParameterError(name, p, exc.allowed)


# ---------------------------------------------------------------------------
# entry point
# ---------------------------------------------------------------------------

def simulate(model: GRPOModel, *, steps: int, runs: int = 256, seed: int = 0, p0=None,
             theta0=None, rewards=None, theta_ref=None, difficulty_spread: float = 0.0,
             divergence_bound: float = MAX_DIVERGENCE_BOUND, record=_k.OBSERVABLES,
             progress=None, _kernel: str = "auto") -> SimulationResult:
    r"""Simulate an ensemble of ``runs`` GRPO trainings of ``model`` on the softmax bandit.

    The model (:class:`~grpo_theory.model.GRPOModel`) is the variant, the optimizer and
    the lag; it needs a finite group size.  The simulation-only arguments: ``steps``
    (optimizer steps), ``runs``, ``seed``; the start: the reference policy, or the policy
    with success probability ``p0``, or given logits ``theta0`` (``(K,)`` or ``(runs, K)``);
    ``rewards`` per action in [0, 1] (default: 1 for the model's ``correct`` actions) and
    reference logits ``theta_ref`` (default: the policy with p = ``p_ref``);
    ``difficulty_spread`` σ of the per-prompt logit offset of the correct actions;
    ``divergence_bound`` (logits, in (0, 300]): a run whose logit spread exceeds it is
    frozen; ``record``: the observables to keep
    (:data:`grpo_theory.simulation.OBSERVABLES`); ``progress``: None (a bar on a
    terminal), True or False.

    For ``K = 2`` and the stale surrogate on-policy, the expected update of
    :math:`z = \theta_0 - \theta_1` is :math:`2\eta\,E[\frac1G\sum_{correct}\hat A_i]`.

    Same seed ⇒ bit-for-bit identical arrays.  Memory: ``8·runs·(steps+1)`` bytes
    per recorded observable.
    """
    if not isinstance(model, GRPOModel):
        raise ParameterError("model", type(model).__name__, "a GRPOModel")
    if model.group_size is None:
        raise ParameterError("group_size", "inf", "a finite integer >= 2 to simulate")
    st = _settings(model, steps, runs, seed, p0, theta0, rewards, theta_ref, difficulty_spread,
                   divergence_bound, record, progress)
    _check_memory(model, st)
    offsets_seq, sample_seq = np.random.SeedSequence(st.seed).spawn(2)
    rewards = st.reward_vector(model)
    mask = rewards == rewards.max()
    offsets = _prompt_offsets(model, st, mask, np.random.default_rng(offsets_seq))
    K, R = model.actions, st.runs
    if st.theta_ref is not None:
        theta_ref = np.asarray(st.theta_ref, dtype=float)
    else:
        try:
            theta_ref = logits_for_success(model.p_ref, rewards=rewards, correct_mask=mask,
                                           offsets=offsets)
        except _Unreachable as exc:
            raise _unreachable("p_ref", model.p_ref, exc, st) from None
    if st.theta0 is not None:
        theta0 = np.broadcast_to(np.asarray(st.theta0, dtype=float), (R, K)).copy()
    elif st.p0 is not None:
        try:
            start = logits_for_success(st.p0, rewards=rewards, correct_mask=mask, offsets=offsets)
        except _Unreachable as exc:
            raise _unreachable("p0", st.p0, exc, st) from None
        theta0 = np.broadcast_to(start, (R, K)).copy()
    else:
        theta0 = np.broadcast_to(theta_ref, (R, K)).copy()

    if model.optimizer == "adam":
        optimizer, momentum = "adam", 0.0
    else:   # heavy ball; its mu = 0 case takes the buffer-free step (the same increments)
        optimizer, momentum = ("momentum" if model.momentum > 0 else "sgd"), model.momentum
    plan = _k.KernelPlan(
        theta0=theta0, theta_ref=theta_ref, offsets=offsets, rewards=rewards,
        steps=st.steps, group_size=model.group_size,
        normalization=model.normalization, adv_eps=model.adv_eps,
        surrogate=model.surrogate, clip_low=model.clip_low, clip_high=model.clip_high,
        kl=model.kl, kl_coef=model.effective_kl_coef, optimizer=optimizer,
        learning_rate=model.learning_rate, momentum=momentum,
        adam_betas=(model.adam_beta1, model.adam_beta2), adam_eps=model.adam_eps,
        lag_model=model.lag_model, refresh_interval=model.window,
        delay=model.delay or 0, record=st.record, reuse=model.reuse,
        window_batches=model.window_batches, divergence_bound=st.divergence_bound)
    steps_iter = _progress(range(st.steps), total=st.steps, desc="simulate",
                           enabled=st.progress)
    rng = np.random.default_rng(sample_seq)
    try:
        observables, final, diverged_at = _k.run(plan, rng, steps_iter=steps_iter,
                                                 kernel=_kernel)
    finally:
        steps_iter.close()
    return SimulationResult(model=model, settings=st, t=np.arange(st.steps + 1),
                            observables=observables, final_logits=final,
                            theta0=theta0, theta_ref=theta_ref, offsets=offsets,
                            diverged_at=diverged_at)
