r"""Direct GRPO simulation of the softmax bandit (level L0).

An ensemble of ``runs`` independent GRPO trainings of a ``K``-action softmax
bandit, vectorized over runs.  This is the ground truth the mean-field theory
(L1–L3) is checked against, so it computes everything from sampled groups —
no mean-field formula is used anywhere.

Conventions (see ``THEORY.md`` §1 and ``docs/simulation.md``):

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
  policy of step t − d).

Time is in optimizer steps; ``t = 0..T``.  State observables (``reward``, ``z``,
``entropy``, ``kl``) are those of θ_t; update observables (``zero_var_frac``,
``grad_norm``, ``clip_frac``) belong to the update taken at step t, so their last
column (t = T) is NaN.
"""

from __future__ import annotations

import csv
import dataclasses
import math
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from . import _sim_kernels as _k
from .progress import progress as _progress
from .validate import (ParameterError, check_choice, check_finite_array, check_int,
                       check_probability, check_real)

__all__ = [
    "OBSERVABLES",
    "SimulationConfig",
    "SimulationResult",
    "Comparison",
    "compare",
    "simulate",
    "logits_for_success",
]

OBSERVABLES = _k.OBSERVABLES
OPTIMIZERS = ("sgd", "momentum", "adam")
NORMALIZATIONS = ("std", "mean")
SURROGATES = ("stale", "ratio")
KL_KINDS = ("none", "exact", "k3")
LAG_MODELS = ("refresh", "delay")
#: Largest allowed ``divergence_bound`` (logits): below it every intermediate of a
#: step (ratios π/π_old ≤ K·e^bound, their squares in Adam) stays far from overflow.
MAX_DIVERGENCE_BOUND = 300.0


def _as_tuple(x):
    if x is None:
        return None
    arr = np.asarray(x, dtype=float)
    return tuple(map(tuple, arr)) if arr.ndim == 2 else tuple(arr.tolist())


@dataclass(frozen=True)
class SimulationConfig:
    """All parameters of one ensemble simulation (frozen; see :func:`simulate`).

    Units: ``learning_rate`` in logits per unit gradient, ``steps`` in optimizer
    steps, rewards and probabilities in reward units.
    """

    steps: int
    runs: int = 256
    group_size: int = 8
    prompts: int = 1
    actions: int = 2
    correct: int = 1
    rewards: tuple | None = None
    p_ref: float = 0.3
    p0: float | None = None
    theta0: tuple | None = None
    theta_ref: tuple | None = None
    learning_rate: float = 0.1
    optimizer: str = "sgd"
    momentum: float = 0.0
    adam_betas: tuple = (0.9, 0.999)
    adam_eps: float = 1e-8
    normalization: str = "std"
    adv_eps: float = 1e-4
    surrogate: str = "stale"
    clip_low: float = 0.2
    clip_high: float = 0.2
    kl: str = "none"
    kl_coef: float = 0.0
    lag_model: str = "refresh"
    refresh_interval: int = 1
    delay: int = 0
    difficulty_spread: float = 0.0
    divergence_bound: float = MAX_DIVERGENCE_BOUND
    seed: int = 0
    record: tuple = OBSERVABLES
    progress: bool | None = field(default=None, compare=False)

    def __post_init__(self):
        for name in ("rewards", "theta0", "theta_ref"):
            object.__setattr__(self, name, _as_tuple(getattr(self, name)))
        if isinstance(self.record, str):
            object.__setattr__(self, "record", (self.record,))
        object.__setattr__(self, "record", tuple(self.record))
        object.__setattr__(self, "adam_betas", tuple(self.adam_betas))
        self.validate()

    # -- validation -----------------------------------------------------------
    def validate(self) -> None:
        """Raise :class:`ParameterError` for the first invalid parameter."""
        check_int("steps", self.steps, low=0)
        check_real("divergence_bound", self.divergence_bound, low=0.0, low_open=True,
                   high=MAX_DIVERGENCE_BOUND)
        check_int("runs", self.runs, low=1)
        check_int("group_size", self.group_size, low=2)
        check_int("prompts", self.prompts, low=1)
        K = check_int("actions", self.actions, low=2)
        if self.rewards is None:
            check_int("correct", self.correct, low=1, high=K - 1)
        else:
            r = check_finite_array("rewards", self.rewards)
            if r.shape != (K,):
                raise ParameterError("rewards", self.rewards, f"a sequence of {K} rewards "
                                     "(one per action)")
            if np.any(r < 0) or np.any(r > 1):
                raise ParameterError("rewards", self.rewards, "rewards in [0, 1]")
        check_probability("p_ref", self.p_ref)
        if self.p0 is not None:
            check_probability("p0", self.p0)
        if self.theta0 is not None:
            if self.p0 is not None:
                raise ParameterError("p0", self.p0, "None when theta0 is given")
            th = check_finite_array("theta0", self.theta0)
            if th.shape not in {(K,), (self.runs, K)}:
                raise ParameterError("theta0", f"an array of shape {th.shape}",
                                     f"an array of shape ({K},) or ({self.runs}, {K})")
            spread = float((th.max(axis=-1) - th.min(axis=-1)).max())
            if spread > self.divergence_bound:
                raise ParameterError("theta0", f"logits with spread {spread:g}",
                                     "logits whose spread max - min is at most "
                                     f"divergence_bound = {self.divergence_bound:g}")
        if self.theta_ref is not None:
            th = check_finite_array("theta_ref", self.theta_ref)
            if th.shape != (K,):
                raise ParameterError("theta_ref", f"an array of shape {th.shape}",
                                     f"an array of shape ({K},)")
        check_real("learning_rate", self.learning_rate, low=0.0, low_open=True)
        opt = check_choice("optimizer", self.optimizer, OPTIMIZERS)
        check_real("momentum", self.momentum, low=0.0, high=1.0, high_open=True)
        if opt != "momentum" and self.momentum != 0:
            raise ParameterError("momentum", self.momentum,
                                 f"0 with optimizer {opt!r} (use optimizer 'momentum')")
        if len(self.adam_betas) != 2:
            raise ParameterError("adam_betas", self.adam_betas, "a pair (beta1, beta2)")
        check_real("adam_betas[0]", self.adam_betas[0], low=0.0, high=1.0, high_open=True)
        check_real("adam_betas[1]", self.adam_betas[1], low=0.0, high=1.0, high_open=True)
        check_real("adam_eps", self.adam_eps, low=0.0, low_open=True)
        check_choice("normalization", self.normalization, NORMALIZATIONS)
        check_real("adv_eps", self.adv_eps, low=0.0)
        check_choice("surrogate", self.surrogate, SURROGATES)
        check_real("clip_low", self.clip_low, low=0.0, high=1.0, high_open=True)
        check_real("clip_high", self.clip_high, low=0.0)
        kl = check_choice("kl", self.kl, KL_KINDS)
        check_real("kl_coef", self.kl_coef, low=0.0)
        if kl == "none" and self.kl_coef != 0:
            raise ParameterError("kl_coef", self.kl_coef,
                                 "0 when kl is 'none' (choose kl 'exact' or 'k3')")
        lag = check_choice("lag_model", self.lag_model, LAG_MODELS)
        check_int("refresh_interval", self.refresh_interval, low=1)
        check_int("delay", self.delay, low=0)
        if lag == "refresh" and self.delay != 0:
            raise ParameterError("delay", self.delay, "0 with lag_model 'refresh' "
                                 "(use lag_model 'delay')")
        if lag == "delay" and self.refresh_interval != 1:
            raise ParameterError("refresh_interval", self.refresh_interval,
                                 "1 with lag_model 'delay' (use lag_model 'refresh')")
        check_real("difficulty_spread", self.difficulty_spread, low=0.0)
        check_int("seed", self.seed, low=0)
        for name in self.record:
            check_choice("record", name, OBSERVABLES)
        if len(set(self.record)) != len(self.record):
            raise ParameterError("record", self.record, "distinct observable names")
        if self.progress not in (None, True, False):
            raise ParameterError("progress", self.progress, "None, True or False")

    def replace(self, **changes) -> "SimulationConfig":
        """A copy with some parameters changed (validated)."""
        return dataclasses.replace(self, **changes)

    # -- derived quantities -----------------------------------------------------
    def reward_vector(self) -> np.ndarray:
        """Rewards per action ``(K,)``."""
        if self.rewards is not None:
            return np.asarray(self.rewards, dtype=float)
        r = np.zeros(self.actions)
        r[: self.correct] = 1.0
        return r

    def correct_mask(self) -> np.ndarray:
        """The actions that share the 'correct' logit: those with the maximal reward."""
        r = self.reward_vector()
        return r == r.max()


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
# statistics helpers
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Comparison:
    """An estimate with its standard error against a prediction.

    ``ok`` is ``|estimate − expected| ≤ n_sigma·stderr``; truthy when ok.
    ``str()`` reports the numbers.
    """

    estimate: float
    stderr: float
    expected: float
    n_sigma: float = 4.0

    @property
    def deviation(self) -> float:
        """(estimate − expected) in standard errors."""
        if self.stderr == 0:
            if self.estimate == self.expected:
                return 0.0
            return math.copysign(math.inf, self.estimate - self.expected)
        return (self.estimate - self.expected) / self.stderr

    @property
    def ok(self) -> bool:
        return bool(abs(self.deviation) <= self.n_sigma)

    def __bool__(self) -> bool:
        return self.ok

    def __str__(self) -> str:
        verdict = "agrees" if self.ok else "DISAGREES"
        return (f"estimate {self.estimate:.6g} ± {self.stderr:.3g} vs expected "
                f"{self.expected:.6g}: {self.deviation:+.2f} σ, {verdict} "
                f"(bound {self.n_sigma:g} σ)")


def compare(samples, expected: float, *, n_sigma: float = 4.0) -> Comparison:
    """Compare the mean of i.i.d. ``samples`` with ``expected`` (standard error of the mean)."""
    x = np.asarray(samples, dtype=float).ravel()
    if x.size < 2:
        raise ParameterError("samples", f"{x.size} sample(s)", "at least 2 samples")
    return Comparison(float(x.mean()), float(x.std(ddof=1) / math.sqrt(x.size)),
                      float(expected), float(n_sigma))


# ---------------------------------------------------------------------------
# result
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class SimulationResult:
    """Ensemble trajectories of one simulation.

    ``observables[name]`` (also ``result.name`` / ``result[name]``) has shape
    ``(runs, steps + 1)``; ``t`` is ``0..steps`` (optimizer steps).
    ``final_logits`` is ``(runs, K)``; ``theta0``/``theta_ref`` the initial and
    reference logits; ``offsets`` ``(prompts, K)`` the difficulty offsets.

    Divergence: ``diverged_at`` (``(runs,)`` int) is the first step whose state
    left the safe region (logit spread above ``config.divergence_bound`` or not
    finite), ``-1`` for runs that never did; ``diverged`` is ``diverged_at >= 0``.
    A diverged run is frozen at its last accepted state, so its raw arrays stay
    finite but hold placeholders from ``diverged_at`` on (``active`` is the mask of
    valid entries) and ``final_logits`` is that last accepted state.  The ensemble
    statistics (:meth:`mean`, :meth:`var`, :meth:`sem`, :meth:`per_step`,
    :meth:`summary`, :meth:`to_csv`) at step t use the ``n_active[t]`` runs still
    live at t (survivors only: conditioned on not having diverged yet); they are
    NaN (``None`` in :meth:`summary`) where fewer runs than needed are left.
    """

    config: SimulationConfig
    t: np.ndarray
    observables: Mapping[str, np.ndarray]
    final_logits: np.ndarray
    theta0: np.ndarray
    theta_ref: np.ndarray
    offsets: np.ndarray
    diverged_at: np.ndarray = None

    def __post_init__(self):
        if self.diverged_at is None:
            object.__setattr__(self, "diverged_at", np.full(self.config.runs, -1, np.int64))

    def __getattr__(self, name):
        obs = object.__getattribute__(self, "observables")
        if name in obs:
            return obs[name]
        raise AttributeError(name)

    def __getitem__(self, name):
        return self._get(name)

    def _get(self, name) -> np.ndarray:
        if name not in self.observables:
            raise ParameterError("observable", name,
                                 "one of the recorded " + ", ".join(map(repr, self.observables)))
        return self.observables[name]

    @property
    def runs(self) -> int:
        return self.config.runs

    @property
    def steps(self) -> int:
        return self.config.steps

    # -- divergence --------------------------------------------------------------
    @property
    def diverged(self) -> np.ndarray:
        """``(runs,)`` bool: the run left the safe region (see class docstring)."""
        return self.diverged_at >= 0

    @property
    def any_diverged(self) -> bool:
        return bool(np.any(self.diverged_at >= 0))

    @property
    def diverged_fraction(self) -> float:
        """Fraction of the runs that diverged within ``steps``."""
        return float(np.mean(self.diverged_at >= 0))

    @property
    def active(self) -> np.ndarray:
        """``(runs, steps + 1)`` bool: the entry is a real state, ``t < diverged_at``."""
        end = np.where(self.diverged_at >= 0, self.diverged_at, self.steps + 1)
        return self.t[None, :] < end[:, None]

    @property
    def n_active(self) -> np.ndarray:
        """``(steps + 1,)`` int: runs still live at each step (the statistics' sample size)."""
        if not self.any_diverged:
            return np.full(self.steps + 1, self.runs, dtype=np.int64)
        return self.active.sum(axis=0)

    # -- statistics over live runs -------------------------------------------------
    def mean(self, name: str) -> np.ndarray:
        """Ensemble mean per step over the live runs, ``(steps + 1,)``; NaN where none."""
        x = self._get(name)
        if not self.any_diverged:
            return x.mean(axis=0)
        act = self.active
        n = act.sum(axis=0)
        total = np.where(act, x, 0.0).sum(axis=0)
        return np.divide(total, n, out=np.full(n.shape, np.nan), where=n > 0)

    def var(self, name: str) -> np.ndarray:
        """Variance across the live runs per step (ddof = 1); NaN with fewer than 2."""
        x = self._get(name)
        if not self.any_diverged:
            if x.shape[0] < 2:
                return np.full(x.shape[1], np.nan)
            return x.var(axis=0, ddof=1)
        act = self.active
        n = act.sum(axis=0)
        dev = np.where(act, x - self.mean(name), 0.0)
        return np.divide((dev * dev).sum(axis=0), n - 1, out=np.full(n.shape, np.nan),
                         where=n > 1)

    def sem(self, name: str) -> np.ndarray:
        """Standard error of the ensemble mean per step (over the live runs)."""
        if not self.any_diverged:
            return np.sqrt(self.var(name) / self._get(name).shape[0])
        n = self.n_active
        v = self.var(name)
        return np.sqrt(np.divide(v, n, out=np.full(n.shape, np.nan), where=n > 0))

    def compare_mean(self, name: str, step: int, expected: float, *,
                     n_sigma: float = 4.0) -> Comparison:
        """The ensemble mean of ``name`` at ``step`` (live runs) against a prediction."""
        x = self._get(name)[:, step]
        if self.any_diverged:
            x = x[self.active[:, step]]
        return compare(x, expected, n_sigma=n_sigma)

    def summary(self) -> dict:
        """Plain-dict summary: settings, divergence (``diverged_fraction``,
        ``n_diverged``, ``divergence_bound``) and, per observable, the last defined
        ensemble mean, variance and standard error over the ``n_active`` live runs
        (``None`` where undefined, so the dict is valid JSON as is)."""
        out = {"runs": self.runs, "steps": self.steps,
               "group_size": self.config.group_size, "seed": self.config.seed,
               "divergence_bound": self.config.divergence_bound,
               "n_diverged": int(self.diverged.sum()),
               "diverged_fraction": self.diverged_fraction,
               "final": {}}
        n_active = self.n_active
        for name in self.observables:
            step = self.steps - 1 if name in _k.UPDATE_OBSERVABLES else self.steps
            if step < 0:
                continue
            out["final"][name] = {"step": step, "n_active": int(n_active[step]),
                                  "mean": _json_float(self.mean(name)[step]),
                                  "var": _json_float(self.var(name)[step]),
                                  "sem": _json_float(self.sem(name)[step])}
        return out

    def per_step(self) -> dict:
        """Per-step ensemble statistics over the live runs: ``{"step": [...],
        "n_active": [...], "mean_<name>": [...], "var_<name>": [...],
        "sem_<name>": [...]}`` (NaN where undefined)."""
        out = {"step": self.t.tolist(), "n_active": self.n_active.tolist()}
        for name in self.observables:
            out[f"mean_{name}"] = self.mean(name).tolist()
            out[f"var_{name}"] = self.var(name).tolist()
            out[f"sem_{name}"] = self.sem(name).tolist()
        return out

    def to_csv(self, path) -> None:
        """Write per-step ``n_active`` and ensemble mean, variance and standard error
        (over the live runs) as CSV; undefined entries are written as ``nan``."""
        table = self.per_step()
        cols = list(table)
        with open(path, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(cols)
            for row in zip(*(table[c] for c in cols)):
                w.writerow([repr(v) if isinstance(v, float) else v for v in row])


def _json_float(v):
    v = float(v)
    return v if math.isfinite(v) else None


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
    (``stale``/``ratio``), clip_low, clip_high, kl (``none``/``exact``/``k3``),
    kl_coef, lag_model (``refresh``/``delay``), refresh_interval, delay,
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
        delay=config.delay, record=config.record,
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
