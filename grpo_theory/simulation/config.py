"""Parameters of one ensemble simulation of GRPO on the softmax bandit (see :mod:`.engine`)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from grpo_theory.simulation import kernels as _k
from grpo_theory.validate import (ParameterError, check_choice, check_finite_array, check_int,
                                  check_probability, check_real)

__all__ = ["OBSERVABLES", "OPTIMIZERS", "NORMALIZATIONS", "SURROGATES", "KL_KINDS", "LAG_MODELS",
           "REUSE_MODES",
           "MAX_DIVERGENCE_BOUND", "SimulationConfig"]

OBSERVABLES = _k.OBSERVABLES
OPTIMIZERS = ("sgd", "momentum", "adam")
NORMALIZATIONS = ("std", "mean")
SURROGATES = ("stale", "ratio")
KL_KINDS = ("none", "exact", "k3", "k1_reward")
LAG_MODELS = ("refresh", "delay")
#: How the steps of one refresh window get their samples: ``fresh`` — a new batch per
#: step, all drawn from π_old (TRL ``steps_per_generation``); ``batch`` — one batch
#: drawn at the window's first step and reused by all its steps (TRL
#: ``num_iterations``, verl ``ppo_epochs``); with ``window_batches`` m > 1 the window
#: draws m batches at its first m steps and cycles through them.
REUSE_MODES = ("fresh", "batch")
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
    reuse: str = "fresh"
    window_batches: int = 1
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
                                 "0 when kl is 'none' (choose kl 'exact', 'k3' or 'k1_reward')")
        if kl != "none" and self.kl_coef == 0:
            raise ParameterError("kl_coef", self.kl_coef,
                                 f"a value > 0 when kl is {kl!r} (kl 'none' for no KL)")
        lag = check_choice("lag_model", self.lag_model, LAG_MODELS)
        check_int("refresh_interval", self.refresh_interval, low=1)
        check_int("delay", self.delay, low=0)
        if lag == "refresh" and self.delay != 0:
            raise ParameterError("delay", self.delay, "0 with lag_model 'refresh' "
                                 "(use lag_model 'delay')")
        if lag == "delay" and self.refresh_interval != 1:
            raise ParameterError("refresh_interval", self.refresh_interval,
                                 "1 with lag_model 'delay' (use lag_model 'refresh')")
        if check_choice("reuse", self.reuse, REUSE_MODES) == "batch" and lag != "refresh":
            raise ParameterError("reuse", self.reuse, "'fresh' with lag_model 'delay' "
                                 "(batch reuse needs refresh windows)")
        check_int("window_batches", self.window_batches, low=1)
        if self.reuse != "batch" and self.window_batches != 1:
            raise ParameterError("window_batches", self.window_batches,
                                 "1 unless reuse is 'batch'")
        if self.refresh_interval % self.window_batches:
            raise ParameterError("window_batches", self.window_batches,
                                 f"a divisor of the refresh interval {self.refresh_interval}")
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


