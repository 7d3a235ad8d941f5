r"""Stability of a GRPO variant at its fixed point: the facade the CLI and the report call.

The fixed point of the variant gives the stiffness :math:`K = -F'(z^*)` **and its
split** :math:`K = K_f + K_s` (:math:`K_f` acts on the current iterate: a KL penalty
in the loss, the importance ratio; :math:`K_s` through the sampling policy: the
advantage term).  Every lag threshold depends on the split, so it is part of the
model: :func:`stability_at_fixed_point` computes both and hands them to the exact
L2 analysis :func:`grpo_theory.theory.discrete.stability`.  A bare stiffness with no
split (``fresh_fraction = 0``) answers for the all-stale case only.

When :math:`K_f < 0` (exact KL near :math:`p \to 1`) the published threshold
:math:`\eta K k < 1-\mu` is unsafe; when :math:`K_f > K/2` every refresh interval is
stable.  See ``docs/stability.md`` for the numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from grpo_theory.results import Result, jsonable
from grpo_theory.theory.discrete import StabilityResult, stability
from grpo_theory.theory.fixed_points import FixedPoint
from grpo_theory.validate import check_real

__all__ = ["StabilityReport", "stability_at_fixed_point", "stability_report"]


@dataclass(frozen=True)
class StabilityReport(Result):
    """One stability answer: the exact L2 result, the fixed point it was taken at (or
    ``None`` for a given stiffness) and the variant.  JSON keys of ``grpo-theory
    stability`` (the ``*_exact`` keys are L2, ``mass``/``damping``/``spring``/
    ``damping_ratio``/``regime_continuous`` are the L3 approximation)."""

    exact: StabilityResult
    surrogate: str
    fixed_point: FixedPoint | None = None
    variant: dict | None = None
    fluctuation: object = None   # theory.reuse.Fluctuation at the fixed point (variant route)
    adam: object = None          # theory.adam.AdamReduction when the optimizer is Adam

    def to_dict(self) -> dict:
        r = self.exact
        d = r.to_dict()
        fp = self.fixed_point
        return {
            "inputs": {"learning_rate": r.learning_rate, "momentum": r.momentum,
                       "refresh_interval": r.refresh_interval, "stiffness": r.stiffness,
                       "lag_model": r.lag_model, "delay": r.delay, "surrogate": self.surrogate,
                       "fresh_fraction": r.fresh_fraction},
            "variant": jsonable(self.variant),
            "fixed_point": None if fp is None else fp.to_dict(),
            "stiffness_fresh": r.fresh_fraction * r.stiffness,
            "stiffness_stale": (1 - r.fresh_fraction) * r.stiffness,
            "spectral_radius_exact": d["spectral_radius"],
            "stable_exact": d["stable"],
            "binding_condition_exact": d["binding_condition"],
            "max_stable_learning_rate_exact": d["max_stable_learning_rate"],
            "max_stable_refresh_interval_exact": d["max_stable_refresh_interval"],
            "stable_for_every_refresh_interval": d["stable_for_every_refresh_interval"],
            "max_stable_refresh_interval_continuous": d["max_stable_refresh_interval_continuous"],
            "published_rule_safe": d["published_rule_safe"],
            "critical_learning_rate_discrete": d["critical_learning_rate_discrete"],
            "discrete_regime": d["discrete_regime"],
            "alternating": d["alternating"],
            "eigenvalues": d["eigenvalues"],
            "regime": d["regime"],
            "lag_continuous": d["lag_continuous"],
            "mass": d["mass"],
            "damping": d["damping"],
            "spring": d["spring"],
            "damping_ratio": d["damping_ratio"],
            "regime_continuous": d["regime_continuous"],
            "max_stable_learning_rate_continuous": d["max_stable_learning_rate_continuous"],
            "rel_error_continuous": d["rel_error_continuous"],
            **self._noise_dict(),
            "notes": list(r.notes) + [
                "spectral radius per refresh window" if r.lag_model == "refresh"
                else "spectral radius per step (delay recurrence)",
                "regime labels and thresholds are exact (L2); the continuous (L3) block is a "
                "second-order modified equation with lag " + ("(k − 1)/2" if r.lag_model == "refresh"
                                                              else "d") + ", an approximation",
                "the published rule is ηKk < 1 − μ with all stiffness stale and lag k",
            ],
        }

    def _noise_dict(self) -> dict:
        fl = self.fluctuation
        if fl is None:
            why = ("needs the variant (its fixed point sets the gradient noise)"
                   if self.fixed_point is None else "")
            return {"stationary_variance_z": None, "reward_fluctuation_sd": None,
                    "fluctuation_reason": why, "adam": jsonable(self.adam)}
        return {"stationary_variance_z": fl.stationary_variance_z,
                "reward_fluctuation_sd": fl.reward_fluctuation_sd,
                "fluctuation_reason": fl.reason, "reuse": fl.reuse, "prompts": fl.prompts,
                "adam": jsonable(self.adam)}

    def __str__(self) -> str:
        r, fp = self.exact, self.fixed_point
        lines = ["inputs: " + ", ".join(
            f"{k}={_fmt(v)}" for k, v in self.to_dict()["inputs"].items() if v is not None)]
        if fp is not None:
            v = self.variant
            lines.append(f"variant: normalization={v['normalization']} kl={v['kl']} "
                         f"kl_coef={_fmt(v['kl_coef'])} p_ref={_fmt(v['p_ref'])} "
                         f"G={'inf' if v['group_size'] is None else v['group_size']} "
                         f"surrogate={v['surrogate']}")
            lines.append(f"fixed point: p* = {_fmt(fp.p)}, z* = {_fmt(fp.z)}, K = {_fmt(fp.stiffness)}"
                         f" (fresh {_fmt(fp.stiffness_fresh)}, stale {_fmt(fp.stiffness_stale)})")
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
        lines += [f"{label:<{width}}  {_fmt(val)}" for label, val in rows if val is not None]
        if self.adam is not None:
            lines.append(str(self.adam))
        if self.fluctuation is not None:
            lines.append(str(self.fluctuation))
        lines += [f"note: {n}" for n in self.to_dict()["notes"]]
        return "\n".join(lines)


def _fmt(v):
    if isinstance(v, float):
        return f"{v:.10g}" if math.isfinite(v) else str(v)
    return str(v)


def stability_at_fixed_point(learning_rate, momentum, refresh_interval=1, *, lag_model="refresh",
                             delay=None, prompts=1, reuse="fresh", window_batches=1,
                             optimizer="sgd", adam_betas=(0.9, 0.999), adam_eps=1e-8,
                             **variant) -> StabilityReport:
    """Exact stability of a variant (the keyword arguments of
    :func:`grpo_theory.theory.fixed_points.fixed_points`) at its stable fixed point, with
    the fixed point's stiffness and fresh/stale split, and the stationary fluctuation
    (exact L2, for ``prompts`` B per step and the ``reuse`` mode of the refresh window).

    ``optimizer="adam"``: ``learning_rate`` is Adam's, ``momentum`` is ignored, and the
    analysis runs on Adam's self-consistent heavy-ball reduction
    (:func:`grpo_theory.theory.adam.adam_reduction`: momentum beta1, the effective learning
    rate set by the stationary second moment), reported as ``adam``."""
    from grpo_theory.model import GRPOModel
    from grpo_theory.validate import ParameterError, check_choice

    optimizer = check_choice("optimizer", optimizer, ("sgd", "adam"))
    model = GRPOModel(**variant, learning_rate=learning_rate,
                      momentum=0.0 if optimizer == "adam" else momentum,
                      refresh_interval=refresh_interval, lag_model=lag_model, delay=delay,
                      prompts=prompts, reuse=reuse, window_batches=window_batches)
    adam = None
    if optimizer == "adam":
        adam = model.adam_reduction(betas=adam_betas, eps=adam_eps)
        if adam.effective_learning_rate is None:
            raise ParameterError("learning_rate", learning_rate,
                                 f"a value with a stationary Adam reduction ({adam.reason})")
        model = model.replace(learning_rate=adam.effective_learning_rate, momentum=adam.momentum)
    fp = model.fixed_point()
    res = stability(model.learning_rate, model.momentum, refresh_interval, fp.stiffness,
                    lag_model=lag_model, delay=delay, fresh_fraction=fp.fresh_fraction)
    return StabilityReport(res, model.surrogate, fp, dict(variant), model.fluctuation(), adam)


def stability_report(learning_rate, momentum, refresh_interval=1, stiffness=None, *,
                     fresh_fraction=0.0, surrogate="stale", lag_model="refresh",
                     delay=None) -> StabilityReport:
    """Exact stability for a given stiffness and split (``fresh_fraction`` = K_f/K, any
    real number; 0 = all stale).  The split is a property of the fixed point, not of
    the surrogate alone: the stale surrogate with a KL penalty in the loss has a
    fresh part too."""
    phi = check_real("fresh_fraction", fresh_fraction)
    res = stability(learning_rate, momentum, refresh_interval, stiffness, lag_model=lag_model,
                    delay=delay, fresh_fraction=phi)
    return StabilityReport(res, surrogate)
