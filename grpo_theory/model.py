r"""One GRPO configuration on the softmax bandit: the model object every layer takes.

A :class:`GRPOModel` holds the three things the theory and the simulator need:

- the **variant** (the loss): reference success probability ``p_ref``, group size
  ``group_size`` (``None``, spelled ``'inf'``, for :math:`G\to\infty`), advantage
  ``normalization`` (``std``: GRPO, ``mean``: Dr. GRPO) with its ``adv_eps``, the KL
  estimator ``kl`` (``exact``, ``k3`` in the loss, or ``k1_reward``: k1 in the reward, verl
  ``use_kl_in_reward``, mean normalization only) and its coefficient ``kl_coef``, the
  ``surrogate`` (``stale``: no importance ratio; ``ratio``: the PPO ratio, clipped to
  :math:`[1-\epsilon_{low}, 1+\epsilon_{high}]` = ``clip_low``/``clip_high``), the bandit
  (``actions``, ``correct``) and ``prompts`` B per step;
- the **optimizer**: ``optimizer`` ``sgd`` (heavy ball with ``momentum`` :math:`\mu`;
  :math:`\mu = 0` is plain SGD) or ``adam`` (``adam_beta1``, ``adam_beta2``, ``adam_eps``),
  with ``learning_rate`` :math:`\eta` (logits per unit gradient);
- the **lag**: the sampling policy is refreshed every ``refresh_interval`` steps
  (``lag_model="refresh"``) or lags by a constant ``delay`` (``"delay"``); within a
  refresh window the steps draw fresh batches from the old policy (``reuse="fresh"``,
  TRL ``steps_per_generation``) or cycle through ``window_batches`` batches drawn at its
  start (``reuse="batch"``, TRL ``num_iterations``, verl ``ppo_epochs``).

This module is the ground floor: it owns the option lists, the one set of defaults (the
field defaults: :data:`DEFAULT_MODEL` ``= GRPOModel()``), the help text of every field
(the command line is generated from it) and all validation, done once at construction.
It imports nothing from the theory, the simulator or above; the jobs are functions that
take the model: :func:`grpo_theory.stability`, :func:`grpo_theory.fixed_points`,
:func:`grpo_theory.simulate`, :func:`grpo_theory.collapse_risk`, ...

**Unused fields.**  A field that the chosen options do not use is neither required nor
refused, so no default ever conflicts with a choice: ``momentum`` with Adam, the Adam
constants with SGD, ``kl_coef`` with ``kl="none"``, the clip with the stale surrogate and
``refresh_interval`` with ``lag_model="delay"``.  :meth:`GRPOModel.unused_notes` names the
ones whose value would otherwise matter, and the results print them.  Fields whose default
is neutral (``delay``, ``window_batches``, ``reuse``) are refused when set without the
option that uses them.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass, field
from numbers import Real

from grpo_theory.validate import ParameterError, check_choice, check_int, check_probability, check_real

__all__ = ["GRPOModel", "DEFAULT_MODEL", "NORMALIZATIONS", "KL_KINDS", "SURROGATES", "OPTIMIZERS",
           "LAG_MODELS", "REUSE_MODES", "FIELD_GROUPS", "field_help"]

#: ``std``: (r - mean)/(std + adv_eps) within the group (GRPO); ``mean``: r - mean (Dr. GRPO).
NORMALIZATIONS = ("std", "mean")
#: ``none``; ``exact``: the analytic KL in the loss; ``k3``: the sampled k3 estimator in the
#: loss (TRL/verl); ``k1_reward``: k1 subtracted from the reward (verl use_kl_in_reward).
KL_KINDS = ("none", "exact", "k3", "k1_reward")
#: ``stale``: no importance ratio (the gradient at the sampling policy's samples);
#: ``ratio``: the clipped PPO ratio.
SURROGATES = ("stale", "ratio")
#: ``sgd``: heavy ball with ``momentum`` (torch SGD without dampening); ``adam``: Adam.
OPTIMIZERS = ("sgd", "adam")
#: ``refresh``: pi_old refreshed every ``refresh_interval`` steps; ``delay``: constant staleness.
LAG_MODELS = ("refresh", "delay")
#: ``fresh``: a new batch per step from pi_old; ``batch``: the window's batches reused.
REUSE_MODES = ("fresh", "batch")


#: The sizes the theory's exact computations take (issue 29 item 5: larger ones ran for minutes
#: or overflowed): the finite-G binomial sums cost O(G); the refresh window's monodromy is a
#: product of k maps; the delay recurrence is a companion matrix of order d + 1 whose exact
#: threshold costs about O(d^3) (measured: d = 30 under 1 s, d = 100 10-30 s, d = 300 minutes);
#: counts enter the formulas as doubles, exact up to 2^53.
MAX_GROUP_SIZE = 10**6
MAX_REFRESH_INTERVAL = 10**4
MAX_DELAY = 100
MAX_COUNT = 2**53


def _field(default, group: str, help: str, metavar: str | None = None):
    return field(default=default, metadata={"group": group, "help": help, "metavar": metavar})


def _choices(options) -> str:
    return "{" + ",".join(options) + "}"


@dataclass(frozen=True)
class GRPOModel:
    """A GRPO variant with its optimizer and lag (see the module docstring).

    Units: ``learning_rate`` in logits per unit gradient, ``refresh_interval`` and
    ``delay`` in optimizer steps, ``p_ref`` in reward units.  The defaults are the
    built-in default model (:data:`DEFAULT_MODEL`).
    """

    # -- the variant (the loss) ------------------------------------------------------
    p_ref: float = _field(0.3, "variant", "success probability of the reference (and initial) "
                          "policy, in (0, 1)", "P")
    group_size: int | None = _field(8, "variant", "G samples per group: an integer >= 2, or "
                                    "'inf' for the large-G limit", "G")
    normalization: str = _field("std", "variant", "advantages: std = (r - mean)/(std + adv_eps) "
                                "(GRPO) | mean = r - mean (Dr. GRPO)", _choices(NORMALIZATIONS))
    adv_eps: float = _field(1e-6, "variant", "epsilon of the std normalization >= 0 (verl 1e-6, "
                            "TRL 1e-4)", "EPS")
    kl: str = _field("k3", "variant", "KL penalty: none | exact (analytic, in the loss) | k3 "
                     "(sampled, in the loss: TRL/verl) | k1_reward (k1 in the reward, verl "
                     "use_kl_in_reward; needs mean normalization)", _choices(KL_KINDS))
    kl_coef: float = _field(0.1, "variant", "KL coefficient beta >= 0 (not used with kl none)",
                            "BETA")
    surrogate: str = _field("stale", "variant", "stale (no importance ratio) | ratio (the "
                            "clipped PPO ratio)", _choices(SURROGATES))
    clip_low: float = _field(0.2, "variant", "epsilon_low of the ratio clip, in [0, 1) (ratio "
                             "surrogate only)", "EPS")
    clip_high: float = _field(0.2, "variant", "epsilon_high of the ratio clip >= 0 (ratio "
                              "surrogate only)", "EPS")
    actions: int = _field(2, "variant", "K actions of the softmax bandit >= 2", "K")
    correct: int = _field(1, "variant", "correct actions c in [1, K - 1]", "C")
    prompts: int = _field(1, "variant", "B prompts (groups) per optimizer step >= 1", "B")
    # -- the optimizer -------------------------------------------------------------
    optimizer: str = _field("sgd", "optimizer", "sgd (heavy ball with --momentum; 0 is plain "
                            "SGD) | adam (--adam-beta1/2, --adam-eps; --momentum is not used)",
                            _choices(OPTIMIZERS))
    learning_rate: float = _field(0.5, "optimizer", "eta > 0, logits per unit gradient", "ETA")
    momentum: float = _field(0.5, "optimizer", "heavy-ball mu in [0, 1) (sgd only)", "MU")
    adam_beta1: float = _field(0.9, "optimizer", "Adam beta1 in [0, 1) (adam only)", "B1")
    adam_beta2: float = _field(0.999, "optimizer", "Adam beta2 in [0, 1) (adam only)", "B2")
    adam_eps: float = _field(1e-8, "optimizer", "Adam epsilon > 0 (adam only)", "EPS")
    # -- the lag -----------------------------------------------------------------------
    lag_model: str = _field("refresh", "lag", "refresh (pi_old refreshed every k steps) | delay "
                            "(groups from the policy d steps back)", _choices(LAG_MODELS))
    refresh_interval: int = _field(2, "lag", "k >= 1 steps per sampling policy (1 = on-policy; "
                                   "not used with lag_model delay)", "k")
    delay: int | None = _field(None, "lag", "d >= 0 steps of staleness (lag_model delay only)",
                               "D")
    reuse: str = _field("fresh", "lag", "fresh: a new batch from pi_old at every step of a "
                        "window (TRL steps_per_generation) | batch: the window cycles through "
                        "--window-batches batches drawn at its start (TRL num_iterations, verl "
                        "ppo_epochs)", _choices(REUSE_MODES))
    window_batches: int = _field(1, "lag", "m batches per window with reuse batch, a divisor of "
                                 "k (verl train_batch_size/ppo_mini_batch_size)", "M")

    def __post_init__(self):
        set_ = functools.partial(object.__setattr__, self)
        set_("p_ref", check_probability("p_ref", self.p_ref))
        set_("group_size", _check_group_size(self.group_size))
        check_choice("normalization", self.normalization, NORMALIZATIONS)
        set_("adv_eps", check_real("adv_eps", self.adv_eps, low=0))
        check_choice("kl", self.kl, KL_KINDS)
        if self.kl == "k1_reward" and self.normalization != "mean":
            # std divides the KL-shifted reward gap by its own group std: the force is
            # sign(gap) A_G, a bang-bang force with no linearization at its zero.
            raise ParameterError("normalization", self.normalization,
                                 "'mean' with kl 'k1_reward' (KL in the reward)")
        set_("kl_coef", check_real("kl_coef", self.kl_coef, low=0))
        check_choice("surrogate", self.surrogate, SURROGATES)
        set_("clip_low", check_real("clip_low", self.clip_low, low=0, high=1, high_open=True))
        set_("clip_high", check_real("clip_high", self.clip_high, low=0))
        set_("actions", _sized_int("actions", self.actions, 2, MAX_COUNT, "2^53"))
        set_("correct", check_int("correct", self.correct, low=1, high=self.actions - 1))
        set_("prompts", _sized_int("prompts", self.prompts, 1, MAX_COUNT, "2^53"))
        check_choice("optimizer", self.optimizer, OPTIMIZERS)
        set_("learning_rate", check_real("learning_rate", self.learning_rate, low=0,
                                         low_open=True))
        set_("momentum", check_real("momentum", self.momentum, low=0, high=1, high_open=True))
        set_("adam_beta1", check_real("adam_beta1", self.adam_beta1, low=0, high=1,
                                      high_open=True))
        set_("adam_beta2", check_real("adam_beta2", self.adam_beta2, low=0, high=1,
                                      high_open=True))
        set_("adam_eps", check_real("adam_eps", self.adam_eps, low=0, low_open=True))
        check_choice("lag_model", self.lag_model, LAG_MODELS)
        set_("refresh_interval", _sized_int("refresh_interval", self.refresh_interval, 1,
                                            MAX_REFRESH_INTERVAL))
        if self.lag_model == "delay":
            if self.delay is None:
                raise ParameterError("delay", None, "an integer >= 0 with lag_model 'delay'")
            set_("delay", _sized_int("delay", self.delay, 0, MAX_DELAY))
        elif self.delay is not None:
            raise ParameterError("delay", self.delay, "given only with lag_model 'delay'")
        if check_choice("reuse", self.reuse, REUSE_MODES) == "batch" and self.lag_model != "refresh":
            raise ParameterError("reuse", self.reuse, "'fresh' with lag_model 'delay' (batch "
                                 "reuse needs refresh windows)")
        m = check_int("window_batches", self.window_batches, low=1)
        if self.reuse != "batch" and m != 1:
            raise ParameterError("window_batches", m, "1 unless reuse is 'batch'")
        if self.refresh_interval % m:
            raise ParameterError("window_batches", m,
                                 f"a divisor of the refresh interval {self.refresh_interval}")
        set_("window_batches", m)

    # -- construction ------------------------------------------------------------
    def replace(self, **changes) -> "GRPOModel":
        """A copy with some fields changed (validated)."""
        _check_names(changes)
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        """Every field; an infinite group size is ``"inf"`` (as the command line spells it)."""
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        if d["group_size"] is None:
            d["group_size"] = "inf"
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "GRPOModel":
        """The model with the fields of ``d`` (the others default); inverse of :meth:`to_dict`."""
        _check_names(d)
        return cls(**d)

    # -- derived parameters ------------------------------------------------------------
    @property
    def z_ref(self) -> float:
        r"""Reference logit :math:`z_{ref} = \log(p_{ref}/(1-p_{ref}))`."""
        return math.log(self.p_ref / (1 - self.p_ref))

    @property
    def clip_range(self) -> tuple[float, float]:
        r"""The ratio clip :math:`[1-\epsilon_{low}, 1+\epsilon_{high}]`."""
        return (1.0 - self.clip_low, 1.0 + self.clip_high)

    @property
    def effective_kl_coef(self) -> float:
        """``kl_coef``, or 0 with ``kl="none"`` (where the coefficient is not used)."""
        return 0.0 if self.kl == "none" else self.kl_coef

    @property
    def window(self) -> int:
        """Steps per sampling policy: ``refresh_interval``, or 1 with ``lag_model="delay"``."""
        return self.refresh_interval if self.lag_model == "refresh" else 1

    def variant(self) -> dict:
        """The variant fields (the loss), a dict keyed by field name."""
        return {name: getattr(self, name) for name in FIELD_GROUPS["variant"]}

    def variant_text(self) -> str:
        """One line naming the variant: normalization, KL, surrogate, G, p_ref."""
        kl = self.kl if self.kl == "none" else f"{self.kl} (beta = {self.kl_coef:g})"
        g = "inf" if self.group_size is None else self.group_size
        return (f"normalization={self.normalization} kl={kl} surrogate={self.surrogate} "
                f"G={g} p_ref={self.p_ref:g} adv_eps={self.adv_eps:g}")

    def unused_notes(self) -> tuple[str, ...]:
        """One note per field that the chosen options do not use although its value would
        otherwise matter (see the module docstring); empty when there is none."""
        notes = []
        d = DEFAULTS
        if self.optimizer == "adam" and self.momentum != 0:
            notes.append(f"momentum = {self.momentum:g} is not used by Adam (its first moment, "
                         f"beta1 = {self.adam_beta1:g}, plays that role)")
        if self.optimizer == "sgd":
            changed = [n for n in ("adam_beta1", "adam_beta2", "adam_eps")
                       if getattr(self, n) != d[n]]
            if changed:
                notes.append(", ".join(f"{n} = {getattr(self, n):g}" for n in changed)
                             + " not used by the optimizer sgd")
        if self.kl == "none" and self.kl_coef != 0:
            notes.append(f"kl_coef = {self.kl_coef:g} is not used (kl is 'none')")
        if self.surrogate == "stale":
            changed = [n for n in ("clip_low", "clip_high") if getattr(self, n) != d[n]]
            if changed:
                notes.append(", ".join(f"{n} = {getattr(self, n):g}" for n in changed)
                             + " not used by the stale surrogate (it has no ratio to clip)")
        if self.lag_model == "delay" and self.refresh_interval != 1:
            notes.append(f"refresh_interval = {self.refresh_interval} is not used with "
                         f"lag_model 'delay'")
        return tuple(notes)


def _check_group_size(group_size):
    """``None``, ``'inf'`` or +inf -> ``None`` (the large-G limit); otherwise an integer >= 2."""
    if group_size is None or (isinstance(group_size, str)
                              and group_size.strip().lower() in {"inf", "infinity"}):
        return None
    if isinstance(group_size, Real) and not isinstance(group_size, bool) \
            and math.isinf(group_size) and group_size > 0:
        return None
    return _sized_int("group_size", group_size, 2, MAX_GROUP_SIZE, low_text="an integer >= 2 or "
                      "'inf'", high_text=f"an integer in [2, {MAX_GROUP_SIZE}] or 'inf' (the "
                      "finite-G sums cost O(G); a larger group is the large-G limit 'inf')")


def _sized_int(name, value, low, high, high_shown=None, *, low_text=None, high_text=None):
    """An integer >= ``low`` (refused with the usual text) that is at most ``high`` (refused
    with the bound)."""
    v = check_int(name, value, low=low, allowed=low_text)
    if v > high:
        raise ParameterError(name, value, high_text
                             or f"an integer in [{low}, {high_shown or high}]")
    return v


def _check_names(changes: dict) -> None:
    unknown = sorted(set(changes) - set(DEFAULTS))
    if unknown:
        raise ParameterError(unknown[0], changes[unknown[0]],
                             "a field of GRPOModel: " + ", ".join(DEFAULTS))


#: field name -> its default (the default model's value)
DEFAULTS = {f.name: f.default for f in dataclasses.fields(GRPOModel)}

#: ``"variant"``, ``"optimizer"``, ``"lag"`` -> the field names of that group, in order
FIELD_GROUPS = {g: tuple(f.name for f in dataclasses.fields(GRPOModel) if f.metadata["group"] == g)
                for g in ("variant", "optimizer", "lag")}


def field_help(name: str) -> tuple[str, str | None]:
    """(help text, metavar) of a field, as the command line shows it."""
    f = next(f for f in dataclasses.fields(GRPOModel) if f.name == name)
    return f.metadata["help"], f.metadata["metavar"]


#: The built-in default model of the report and the lectures: the field defaults.
#:
#: A two-action softmax bandit started at its reference policy, p_ref = 0.3; groups of
#: G = 8; std (GRPO) normalization with verl's epsilon_adv = 1e-6; the per-sample k3 KL
#: estimator (TRL/verl) with beta = 0.1; the stale surrogate; heavy-ball momentum
#: mu = 0.5, learning rate eta = 0.5 and a refresh interval k = 2 steps (the report's model
#: since it was written: one refresh window of two steps is the smallest off-policy lag, so
#: every lag result has something to say about it).  A stable interior fixed point exists
#: (p* ~ 0.971, well above p_ref: success amplification).
DEFAULT_MODEL = GRPOModel()
