r"""One GRPO configuration on the softmax bandit: the model object every layer takes.

A :class:`GRPOModel` holds the three things the theory needs:

- the **variant** (the loss): reference success probability ``p_ref``, group size
  ``group_size`` (``None`` for :math:`G\to\infty`), advantage ``normalization``
  (``std``: GRPO, ``mean``: Dr. GRPO), ``adv_eps``, the KL estimator ``kl`` (``exact``,
  ``k3`` in the loss, or ``k1_reward``: k1 in the reward, verl ``use_kl_in_reward``,
  mean normalization only) and its coefficient ``kl_coef``, ``prompts`` B per step, and the ``surrogate`` (``stale``: no importance ratio;
  ``ratio``: the ratio, which moves part of the force onto the current iterate);
- the **optimizer**: ``learning_rate`` :math:`\eta` (logits per unit gradient),
  heavy-ball ``momentum`` :math:`\mu`;
- the **lag**: the sampling policy is refreshed every ``refresh_interval`` steps
  (``lag_model="refresh"``) or lags by a constant ``delay`` (``"delay"``); within a
  refresh window the steps draw fresh batches from the old policy (``reuse="fresh"``,
  TRL ``steps_per_generation``) or cycle through ``window_batches`` batches drawn at its
  start (``reuse="batch"``, TRL ``num_iterations``, verl ``ppo_epochs``; 1: one batch for
  the whole window): the same mean force, different noise.

Its methods are the theory applied to it: :meth:`fixed_point` (L1), :meth:`stability`
(exact L2, with the fresh/stale stiffness split of the fixed point),
:meth:`oscillator` (L3), :meth:`simulation_config` / :meth:`simulate` (L0).
:data:`DEFAULT_MODEL` is the model of the report and of the lectures.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass

from grpo_theory.results import jsonable
from grpo_theory.validate import ParameterError, check_choice, check_int, check_probability, check_real

__all__ = ["GRPOModel", "DEFAULT_MODEL"]

NORMALIZATIONS = ("std", "mean")
KL_KINDS = ("none", "exact", "k3", "k1_reward")
SURROGATES = ("stale", "ratio")
LAG_MODELS = ("refresh", "delay")
REUSE_MODES = ("fresh", "batch")


@dataclass(frozen=True)
class GRPOModel:
    """A GRPO variant with its optimizer and lag (see the module docstring).

    Units: ``learning_rate`` in logits per unit gradient, ``refresh_interval`` and
    ``delay`` in optimizer steps, ``p_ref`` in reward units.
    """

    # the variant (the loss)
    p_ref: float = 0.3
    group_size: int | None = 8
    normalization: str = "std"
    kl: str = "k3"
    kl_coef: float = 0.1
    adv_eps: float = 1e-6
    surrogate: str = "stale"
    actions: int = 2
    correct: int = 1
    prompts: int = 1
    # the optimizer
    learning_rate: float = 0.5
    momentum: float = 0.5
    # the lag
    refresh_interval: int = 1
    lag_model: str = "refresh"
    delay: int | None = None
    reuse: str = "fresh"
    window_batches: int = 1

    def __post_init__(self):
        from grpo_theory.theory.drift import Variant, check_group_size

        set_ = functools.partial(object.__setattr__, self)
        set_("p_ref", check_probability("p_ref", self.p_ref))
        set_("group_size", check_group_size(self.group_size))
        check_choice("normalization", self.normalization, NORMALIZATIONS)
        check_choice("kl", self.kl, KL_KINDS)
        set_("kl_coef", check_real("kl_coef", self.kl_coef, low=0))
        if self.kl == "none" and self.kl_coef != 0:
            raise ParameterError("kl_coef", self.kl_coef, "0 when kl is 'none'")
        set_("adv_eps", check_real("adv_eps", self.adv_eps, low=0))
        check_choice("surrogate", self.surrogate, SURROGATES)
        Variant(self.normalization, self.kl, self.surrogate)   # k1_reward needs 'mean'
        set_("actions", check_int("actions", self.actions, low=2))
        set_("correct", check_int("correct", self.correct, low=1, high=self.actions - 1))
        set_("prompts", check_int("prompts", self.prompts, low=1))
        set_("learning_rate", check_real("learning_rate", self.learning_rate, low=0, low_open=True))
        set_("momentum", check_real("momentum", self.momentum, low=0, high=1, high_open=True))
        set_("refresh_interval", check_int("refresh_interval", self.refresh_interval, low=1))
        check_choice("lag_model", self.lag_model, LAG_MODELS)
        if self.lag_model == "delay":
            if self.delay is None:
                raise ParameterError("delay", None, "an integer >= 0 when lag_model is 'delay'")
            set_("delay", check_int("delay", self.delay, low=0))
            if self.refresh_interval != 1:
                raise ParameterError("refresh_interval", self.refresh_interval,
                                     "1 when lag_model is 'delay'")
        elif self.delay is not None:
            raise ParameterError("delay", self.delay, "None unless lag_model is 'delay'")
        if check_choice("reuse", self.reuse, REUSE_MODES) == "batch" and self.lag_model != "refresh":
            raise ParameterError("reuse", self.reuse, "'fresh' unless lag_model is 'refresh'")
        from grpo_theory.theory.reuse import check_window_batches

        set_("window_batches", check_window_batches(self.window_batches, self.refresh_interval,
                                                    self.reuse))

    # -- construction ------------------------------------------------------------
    def replace(self, **changes) -> "GRPOModel":
        """A copy with some fields changed (validated)."""
        unknown = set(changes) - {f.name for f in dataclasses.fields(self)}
        if unknown:
            name = sorted(unknown)[0]
            raise ParameterError(name, changes[name], "a field of GRPOModel: "
                                 + ", ".join(f.name for f in dataclasses.fields(self)))
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        return jsonable({f.name: getattr(self, f.name) for f in dataclasses.fields(self)})

    @classmethod
    def from_dict(cls, d: dict) -> "GRPOModel":
        return cls().replace(**d)

    # -- views for the layers ------------------------------------------------------
    def variant(self) -> dict:
        """Keyword arguments of the mean-field drift and its fixed points
        (:mod:`grpo_theory.theory.drift`, :mod:`grpo_theory.theory.fixed_points`)."""
        return dict(p_ref=self.p_ref, kl_coef=self.kl_coef, normalization=self.normalization,
                    kl=self.kl, surrogate=self.surrogate, adv_eps=self.adv_eps,
                    group_size=self.group_size, actions=self.actions, correct=self.correct)

    @property
    def z_ref(self) -> float:
        """Reference logit :math:`z_{ref} = \\log(p_{ref}/(1-p_{ref}))`."""
        return math.log(self.p_ref / (1 - self.p_ref))

    # -- theory ----------------------------------------------------------------------
    def fixed_points(self):
        """All interior fixed points of the on-policy mean-field drift (sorted by p)."""
        from grpo_theory.theory.fixed_points import fixed_points

        return fixed_points(**self.variant())

    def fixed_point(self):
        """The stable interior fixed point training from p_ref reaches (with its
        stiffness :math:`K = K_f + K_s`); ``ParameterError`` when the reward escapes."""
        return _stable_fixed_point(self._variant_key())

    def _variant_key(self):
        return tuple(sorted(self.variant().items()))

    def stability(self):
        """Exact (L2) stability at the stable fixed point, with its fresh/stale split."""
        from grpo_theory.theory.discrete import stability

        fp = self.fixed_point()
        return stability(self.learning_rate, self.momentum, self.refresh_interval, fp.stiffness,
                         lag_model=self.lag_model, delay=self.delay,
                         fresh_fraction=fp.fresh_fraction)

    def fluctuation(self, **overrides):
        """Stationary Var z and reward sd at the fixed point, exact L2 for the reuse mode
        (:func:`grpo_theory.theory.reuse.fluctuation`)."""
        from grpo_theory.theory.reuse import fluctuation

        return fluctuation(self, **overrides)

    def adam_reduction(self, *, betas=(0.9, 0.999), eps=1e-8):
        """Adam(``learning_rate``, ``betas``, ``eps``) at the fixed point as self-consistent heavy
        ball (:func:`grpo_theory.theory.adam.adam_reduction`; ``momentum`` is not used)."""
        from grpo_theory.theory.adam import adam_reduction
        from grpo_theory.theory.drift import geometric_factor, update_variance

        if self.group_size is None:
            raise ParameterError("group_size", "inf", "a finite group size (Adam's step is "
                                 "set by the gradient noise)")
        fp = self.fixed_point()
        s2 = float(update_variance(fp.p, normalization=self.normalization, kl=self.kl,
                                   group_size=self.group_size, kl_coef=self.kl_coef,
                                   p_ref=self.p_ref, adv_eps=self.adv_eps, actions=self.actions,
                                   correct=self.correct, prompts=self.prompts))
        return adam_reduction(self.learning_rate, fp.stiffness, s2, betas=betas, eps=eps,
                              refresh_interval=self.refresh_interval,
                              fresh_fraction=fp.fresh_fraction, reuse=self.reuse,
                              window_batches=self.window_batches,
                              geometric_factor=geometric_factor(self.actions, self.correct))

    def oscillator(self):
        """The continuous (L3) oscillator at the fixed point (mass, damping, spring)."""
        from grpo_theory.theory.discrete import continuous_lag
        from grpo_theory.theory.oscillator import coefficients

        fp = self.fixed_point()
        lag = continuous_lag(self.lag_model, self.refresh_interval, self.delay)
        return coefficients(self.learning_rate, self.momentum, lag, fp.stiffness,
                            fresh_fraction=fp.fresh_fraction)

    # -- simulation --------------------------------------------------------------------
    def simulation_config(self, *, steps: int, runs: int = 256, **overrides):
        """A :class:`~grpo_theory.simulation.SimulationConfig` of this model (the
        simulator needs a finite group; heavy-ball momentum selects ``"momentum"``)."""
        from grpo_theory.simulation import SimulationConfig

        if self.group_size is None:
            raise ParameterError("group_size", "inf", "a finite group size to simulate")
        params = dict(steps=steps, runs=runs, group_size=self.group_size, p_ref=self.p_ref,
                      actions=self.actions, correct=self.correct, prompts=self.prompts,
                      normalization=self.normalization, adv_eps=self.adv_eps,
                      surrogate=self.surrogate, kl=self.kl, kl_coef=self.kl_coef,
                      learning_rate=self.learning_rate,
                      optimizer="momentum" if self.momentum > 0 else "sgd",
                      momentum=self.momentum, lag_model=self.lag_model,
                      refresh_interval=self.refresh_interval, delay=self.delay or 0,
                      reuse=self.reuse, window_batches=self.window_batches)
        params.update(overrides)
        if params.get("optimizer") in ("sgd", "adam") and "momentum" not in overrides:
            params["momentum"] = 0.0
        return SimulationConfig(**params)

    def simulate(self, *, steps: int, runs: int = 256, **overrides):
        """Direct GRPO simulation (L0) of this model: an ensemble of ``runs`` runs."""
        from grpo_theory.simulation import simulate

        return simulate(self.simulation_config(steps=steps, runs=runs, **overrides))


@functools.lru_cache(maxsize=256)
def _stable_fixed_point(variant_key):
    from grpo_theory.theory.fixed_points import stable_fixed_point

    return stable_fixed_point(**dict(variant_key))


#: The built-in default model of the report and the lectures.
#:
#: A two-action softmax bandit started at its reference policy, p_ref = 0.3; groups of
#: G = 8; std (GRPO) normalisation with verl's epsilon_adv = 1e-6; the per-sample k3 KL
#: estimator (TRL/verl) with beta = 0.1; the stale surrogate; heavy-ball momentum
#: mu = 0.5, learning rate eta = 0.5 and a refresh interval k = 2 steps.  A stable
#: interior fixed point exists (p* ~ 0.971, well above p_ref: success amplification).
DEFAULT_MODEL = GRPOModel(refresh_interval=2)
