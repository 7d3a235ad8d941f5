r"""The ONE adapter between :mod:`grpo_theory.lab` and the theory.

Every call of the lab into the model and the theory goes through this module and uses the
public routes only (the model, :func:`~grpo_theory.theory.fixed_points.stable_fixed_point`,
:func:`~grpo_theory.theory.stability.stability`, the derivation records, :func:`simulate`).

* :func:`lab_model` maps a run's TRL knobs onto a :class:`GRPOModel` with the project's one
  TRL key map (:func:`grpo_theory.runs.config_map.map_config`): ``num_generations`` ->
  ``group_size``, ``scale_rewards`` -> ``normalization``, ``beta`` -> the k3 KL in the loss
  (the exact KL with ``use_bias_correction_kl``), the clipped ratio surrogate,
  ``steps_per_generation``/``num_iterations`` -> ``refresh_interval`` with fresh or reused
  batches, SGD's momentum (``optim_args``) -> ``momentum``; AdamW -> ``optimizer="adam"``
  with the run's ``adam_beta1``/``adam_beta2``/``adam_epsilon``.  TRL's clip is not carried
  (inactive in the linear theory; the lab's sweeps set ``epsilon`` = 10, which the model's
  ``clip_low`` < 1 cannot hold).  The network enters only
  through the learning rate: with :math:`\lambda` the top eigenvalue of the empirical tangent
  kernel of the prompts' success log-odds, the top mode moves like the bandit with learning
  rate :math:`\eta\lambda/(N\kappa)` (``ntk_scale``), so :math:`\eta K_{top} = \eta_{bandit}
  K_{bandit}`.
* :func:`adam_heavy_ball`: Adam with its second moment frozen at a value measured on the
  engine is heavy ball with :math:`\mu = \beta_1` and the step of ``adam.momentum_form``
  (the reduction :func:`grpo_theory.theory.stability.stability` makes with the bandit's own
  self-consistent second moment, here with the engine's);
* fixed point, exact (L2) stability, thresholds, the published rule, critical damping;
* :func:`bandit_response`: the same configuration in the theory's own bandit simulator (L0),
  the reference for what the engine's ensemble of kicked runs should show.
"""

from __future__ import annotations

import math

from scipy.special import expit

from grpo_theory.model import GRPOModel
from grpo_theory.runs.config_map import map_config
from grpo_theory.simulation import simulate
from grpo_theory.theory.derived import get
from grpo_theory.theory.discrete import critical_momentum, max_stable_learning_rate
from grpo_theory.theory.discrete import window_discriminant as discriminant
from grpo_theory.theory.drift import geometric_factor
from grpo_theory.theory.fixed_points import stable_fixed_point
from grpo_theory.theory.stability import stability

__all__ = ["KAPPA", "lab_model", "mapping", "fixed_point_of", "adam_heavy_ball", "exact",
           "exact_k_max", "published_k_max", "spectral_radius", "threshold_eta_K",
           "critical_momentum", "discriminant", "critical_momentum_continuous", "bandit_response"]

#: |grad z|^2 of the two-logit softmax bandit (the theory's geometric factor, two answers)
KAPPA = float(geometric_factor(2, 1))


def mapping(spec, prompts: int):
    """The TRL key map of a run (``ConfigMapping``)."""
    cfg = dict(spec.grpo_config_kwargs(prompts), num_processes=1)
    return map_config(cfg, "trl")


def lab_model(spec, *, p_ref: float, prompts: int, ntk_scale: float = 1.0) -> GRPOModel:
    """The theory's model of a lab run (see the module docstring)."""
    mp = mapping(spec, prompts)
    if spec.optimizer == "sgd":
        opt = dict(optimizer="sgd", momentum=mp.value("momentum"))
    else:   # AdamW (the weight decay is 0 in the lab): beta1 plays the momentum's part
        opt = dict(optimizer="adam", momentum=0.0, adam_beta1=spec.adam_beta1,
                   adam_beta2=spec.adam_beta2, adam_eps=spec.adam_epsilon)
    return GRPOModel(
        p_ref=p_ref, group_size=mp.value("group_size"), normalization=mp.value("normalization"),
        kl=mp.value("kl"), kl_coef=mp.value("kl_coef"), adv_eps=mp.value("adv_eps"),
        surrogate=mp.value("surrogate"), prompts=mp.value("prompts"),
        learning_rate=spec.learning_rate * ntk_scale,
        refresh_interval=mp.value("refresh_interval"), reuse=mp.value("reuse"),
        window_batches=mp.value("window_batches"), **opt)


def fixed_point_of(model: GRPOModel):
    """The stable interior fixed point of the model's variant (stiffness and split)."""
    return stable_fixed_point(model)


def adam_heavy_ball(model: GRPOModel, gain: float) -> GRPOModel:
    r"""The heavy-ball model of an Adam ``model`` whose second moment is frozen at a measured
    value: momentum :math:`\beta_1` and the step of ``adam.momentum_form``,
    :math:`\eta(1-\beta_1)/((1-\beta_1^t)\sqrt{\hat v})` with the bias correction 1 (the
    engine's Adam state starts at step :math:`10^6`) and :math:`1/\sqrt{\hat v}` = ``gain``
    (for the network: the top eigenvalue of the preconditioned tangent kernel over the plain
    one, :class:`grpo_theory.lab.adam.AdamSetup`)."""
    if model.optimizer != "adam":
        return model
    step = float(get("adam.momentum_form").numeric(model.learning_rate, model.adam_beta1,
                                                   math.inf, float(gain) ** -2))
    return model.replace(optimizer="sgd", learning_rate=step, momentum=model.adam_beta1)


def exact(model: GRPOModel):
    """The exact (L2) result at the model's fixed point (the one stability route)."""
    return stability(model).exact


def exact_k_max(model: GRPOModel):
    """Exact largest stable refresh interval at the model's eta K and split (inf: every k)."""
    r = exact(model)
    return math.inf if r.stable_for_every_refresh_interval else r.max_stable_refresh_interval


def published_k_max(model: GRPOModel) -> int:
    """Largest k allowed by the published rule eta K k < 1 - mu (all of K delayed)."""
    return int(exact(model).max_stable_refresh_interval_continuous)


def spectral_radius(model: GRPOModel) -> float:
    """Spectral radius of the exact map over one refresh window."""
    return float(exact(model).spectral_radius)


def threshold_eta_K(momentum, refresh_interval, fresh_fraction) -> float:
    """Exact threshold of eta K at which refresh interval k becomes unstable."""
    return float(max_stable_learning_rate(momentum, refresh_interval, 1.0,
                                          fresh_fraction=fresh_fraction))


def critical_momentum_continuous(eta_K) -> float:
    """The continuous (L3) oscillator's critical momentum at k = 1."""
    return float(get("oscillator.critical_momentum").numeric(eta_K, 1.0, 1.0))


def is_finite(x) -> bool:
    return x is not None and math.isfinite(x)


def bandit_response(model: GRPOModel, *, windows: int, delta: float = 0.15, runs: int = 4000,
                    seed: int = 1):
    """The theory's own L0 simulator (the bandit, no network): ensemble-mean half difference
    of runs started at z* +- delta, at window starts; ``(W + 1,)`` array.  The clip is set
    out of reach (the lab's sweeps switch TRL's off)."""
    fp = fixed_point_of(model)
    k = model.refresh_interval
    free = model.replace(clip_low=0.99, clip_high=100.0)
    means = [simulate(free, steps=windows * k, runs=runs, seed=seed, progress=False,
                      p0=float(expit(fp.z + sign * delta)), record=("z",)).observables["z"].mean(0)
             for sign in (1.0, -1.0)]
    return 0.5 * (means[0] - means[1])[::k]
