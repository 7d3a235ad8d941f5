r"""Stability of a GRPO model at its fixed point: the one public route to the L2 analysis.

The fixed point of the model's variant gives the stiffness :math:`K = -F'(z^*)` **and its
split** :math:`K = K_f + K_s` (:math:`K_f` acts on the current iterate: a KL penalty
in the loss, the importance ratio; :math:`K_s` through the sampling policy: the
advantage term).  Every lag threshold depends on the split, so it is part of the
model: :func:`stability` computes both and hands them, with the model's optimizer and
lag, to the exact L2 analysis :func:`grpo_theory.theory.discrete.linear_stability` (the
low-level function at a given stiffness).  With ``optimizer="adam"`` the analysis runs
on Adam's self-consistent heavy-ball reduction (:func:`grpo_theory.theory.adam.adam_reduction`):
the result reports the learning rate the user gave and, separately, the effective step.

When :math:`K_f < 0` (exact KL near :math:`p \to 1`) the published threshold
:math:`\eta K k < 1-\mu` is unsafe; when :math:`K_f > K/2` every refresh interval is
stable.  See ``docs/stability.md`` for the numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from grpo_theory.model import GRPOModel
from grpo_theory.results import Result, jsonable
from grpo_theory.theory.adam import AdamReduction, adam_reduction
from grpo_theory.theory.discrete import StabilityResult, linear_stability
from grpo_theory.theory.fixed_points import FixedPoint, stable_fixed_point
from grpo_theory.theory.noise import Fluctuation, fluctuation
from grpo_theory.validate import ParameterError

__all__ = ["StabilityReport", "stability"]

#: keys of the exact (L2) result renamed with an ``_exact`` suffix in the JSON of ``stability``
_EXACT_KEYS = {"spectral_radius": "spectral_radius_exact", "stable": "stable_exact",
               "binding_condition": "binding_condition_exact",
               "max_stable_learning_rate": "max_stable_learning_rate_exact",
               "max_stable_refresh_interval": "max_stable_refresh_interval_exact"}
#: keys of the exact result that are inputs (reported in ``inputs`` / ``effective_step``)
_INPUT_KEYS = ("learning_rate", "momentum", "refresh_interval", "stiffness", "lag_model", "delay",
               "fresh_fraction", "notes")


@dataclass(frozen=True)
class StabilityReport(Result):
    """One stability answer: the model as given, the exact L2 result (taken at the effective
    heavy-ball step: the model's own for ``sgd``, Adam's reduction for ``adam``), the fixed
    point it was taken at (``None`` for a given stiffness), the stationary fluctuation and
    the Adam reduction.  JSON keys of ``grpo-theory stability`` (the ``*_exact`` keys are
    L2, ``mass``/``damping``/``spring``/``damping_ratio``/``regime_continuous`` are the L3
    approximation)."""

    model: GRPOModel
    exact: StabilityResult
    fixed_point: FixedPoint | None = None
    fluctuation: Fluctuation | None = None
    adam: AdamReduction | None = None

    def to_dict(self) -> dict:
        m, r = self.model, self.exact
        d = r.to_dict()
        fp = self.fixed_point
        out = {
            "inputs": {"learning_rate": m.learning_rate, "momentum": m.momentum,
                       "optimizer": m.optimizer, "refresh_interval": r.refresh_interval,
                       "stiffness": r.stiffness, "lag_model": r.lag_model, "delay": r.delay,
                       "surrogate": m.surrogate, "fresh_fraction": r.fresh_fraction},
            "effective_step": {"learning_rate": r.learning_rate, "momentum": r.momentum},
            "model": m.to_dict(),
            "variant": None if fp is None else {k: v for k, v in m.to_dict().items()
                                                if k in m.variant()},
            "fixed_point": None if fp is None else fp.to_dict(),
            "stiffness_fresh": r.fresh_fraction * r.stiffness,
            "stiffness_stale": (1 - r.fresh_fraction) * r.stiffness,
        }
        out.update({_EXACT_KEYS.get(k, k): v for k, v in d.items() if k not in _INPUT_KEYS})
        out.update(self._noise_dict())
        out["notes"] = self.notes()
        return jsonable(out)

    def notes(self) -> list[str]:
        r = self.exact
        return list(r.notes) + list(self.model.unused_notes()) + [
            "spectral radius per refresh window" if r.lag_model == "refresh"
            else "spectral radius per step (delay recurrence)",
            "regime labels and thresholds are exact (L2); the continuous (L3) block is a "
            "second-order modified equation with lag " + ("(k − 1)/2" if r.lag_model == "refresh"
                                                          else "d") + ", an approximation",
            "the published rule is ηKk < 1 − μ with all stiffness stale and lag k",
        ]

    def _noise_dict(self) -> dict:
        fl = self.fluctuation
        adam = None if self.adam is None else self.adam.to_dict()
        if fl is None:
            why = ("needs the variant (its fixed point sets the gradient noise)"
                   if self.fixed_point is None else "")
            return {"stationary_variance_z": None, "reward_fluctuation_sd": None,
                    "fluctuation_reason": why, "adam": adam}
        return {"stationary_variance_z": fl.stationary_variance_z,
                "reward_fluctuation_sd": fl.reward_fluctuation_sd,
                "fluctuation_reason": fl.reason, "reuse": fl.reuse, "prompts": fl.prompts,
                "adam": adam}

    def __str__(self) -> str:
        m, r, fp = self.model, self.exact, self.fixed_point
        given = [("learning_rate", m.learning_rate)]
        if m.optimizer == "sgd":
            given.append(("momentum", m.momentum))
        else:
            given += [("optimizer", "adam"), ("adam_beta1", m.adam_beta1),
                      ("adam_beta2", m.adam_beta2), ("adam_eps", m.adam_eps)]
        given += ([("refresh_interval", m.refresh_interval)] if m.lag_model == "refresh"
                  else [("lag_model", "delay"), ("delay", m.delay)])
        lines = ["inputs: " + ", ".join(f"{k}={_fmt(v)}" for k, v in given)]
        if fp is not None:
            lines.append(f"variant: {m.variant_text()}")
            lines.append(f"fixed point: p* = {_fmt(fp.p)}, z* = {_fmt(fp.z)}, K = {_fmt(fp.stiffness)}"
                         f" (fresh {_fmt(fp.stiffness_fresh)}, stale {_fmt(fp.stiffness_stale)})")
        else:
            lines.append(f"given stiffness: K = {_fmt(r.stiffness)}, fresh fraction K_f/K = "
                         f"{_fmt(r.fresh_fraction)}")
        if self.adam is not None:
            lines.append(f"effective step (Adam's heavy-ball reduction): learning rate "
                         f"{_fmt(r.learning_rate)}, momentum {_fmt(r.momentum)}")
        if r.lag_model == "refresh":
            k_max = ("every k (stable for every refresh interval)"
                     if r.stable_for_every_refresh_interval else r.max_stable_refresh_interval)
        else:
            k_max = None
        rows = [("exact (L2)", ""),
                ("  spectral radius", r.spectral_radius),
                ("  stable", r.stable),
                ("  regime", r.discrete_regime),
                ("  binding condition", r.binding_condition),
                ("  max stable learning rate", r.max_stable_learning_rate),
                ("  max stable refresh interval", k_max),
                ("  critical learning rate (real->complex)", r.critical_learning_rate_discrete),
                ("published rule ηKk < 1 − μ (all stale, lag k)", ""),
                ("  max refresh interval", r.max_stable_refresh_interval_continuous
                 if r.lag_model == "refresh" else None),
                ("  safe here", r.published_rule_safe),
                (f"continuous L3 approximation (lag {_fmt(r.lag_continuous)})", ""),
                ("  mass m", r.mass), ("  damping γ", r.damping), ("  spring constant κₛ", r.spring),
                ("  damping ratio ζ", r.damping_ratio if math.isfinite(r.damping_ratio)
                 else "n/a (damping γ ≤ 0: L3 is unstable)"),
                ("  regime (L3)", r.regime_continuous),
                ("  max stable learning rate (L3)", r.max_stable_learning_rate_continuous
                 if math.isfinite(r.max_stable_learning_rate_continuous)
                 else "none (L3 is stable at every learning rate)"),
                ("  relative error vs exact", r.rel_error_continuous
                 if math.isfinite(r.rel_error_continuous)
                 else "n/a (L3 predicts no threshold)" if not math.isfinite(r.max_stable_learning_rate_continuous)
                 else "n/a (no exact threshold)")]
        width = max(len(label) for label, _ in rows)
        lines += [f"{label:<{width}}  {_fmt(val)}".rstrip() for label, val in rows if val is not None]
        if self.adam is not None:
            lines.append(str(self.adam))
        if self.fluctuation is not None:
            lines.append(str(self.fluctuation))
        lines += [f"note: {n}" for n in self.notes()]
        return "\n".join(lines)


def _fmt(v):
    if isinstance(v, float):
        return f"{v:.10g}" if math.isfinite(v) else str(v)
    return str(v)


def stability(model: GRPOModel, *, stiffness=None, fresh_fraction=None) -> StabilityReport:
    """Exact (L2) stability of ``model`` at its stable fixed point, with the fixed point's
    stiffness and fresh/stale split and the stationary fluctuation (exact L2, for the model's
    B prompts and reuse mode).

    ``optimizer="adam"``: the analysis runs on Adam's self-consistent heavy-ball reduction
    (momentum beta1, the effective learning rate set by the stationary second moment),
    reported as ``adam``; the report's inputs keep the learning rate the model gave.

    ``stiffness`` (K > 0 per unit learning rate) with ``fresh_fraction`` (K_f/K, any real
    number, default 0 = all stale): the analysis of the model's optimizer and lag at that
    stiffness instead of the fixed point's (the variant is then not used; heavy ball only).
    """
    if not isinstance(model, GRPOModel):
        raise ParameterError("model", type(model).__name__, "a GRPOModel")
    lag = dict(lag_model=model.lag_model, delay=model.delay)
    if stiffness is not None:
        if model.optimizer != "sgd":
            raise ParameterError("optimizer", model.optimizer, "'sgd' with a given stiffness "
                                 "(Adam's step is set by the gradient noise at the fixed point)")
        res = linear_stability(model.learning_rate, model.momentum, model.window, stiffness,
                               fresh_fraction=0.0 if fresh_fraction is None else fresh_fraction,
                               **lag)
        return StabilityReport(model, res)
    if fresh_fraction is not None:
        raise ParameterError("fresh_fraction", fresh_fraction,
                             "given only with a stiffness (a variant's split is computed)")
    fp = stable_fixed_point(model)
    step, adam = model, None
    if model.optimizer == "adam":
        adam = adam_reduction(model)
        if adam.effective_learning_rate is None:
            raise ParameterError("learning_rate", model.learning_rate,
                                 f"a value with a stationary Adam reduction ({adam.reason})")
        step = model.replace(optimizer="sgd", learning_rate=adam.effective_learning_rate,
                             momentum=adam.momentum)
    res = linear_stability(step.learning_rate, step.momentum, model.window, fp.stiffness,
                           fresh_fraction=fp.fresh_fraction, **lag)
    return StabilityReport(model, res, fp, fluctuation(step), adam)
