r"""The ONE adapter between :mod:`grpo_theory.lab` and the theory.

Every call of the lab into the model and the theory goes through this module, so that a
rework of :class:`grpo_theory.model.GRPOModel` needs the lab adapted in one place.

* :func:`lab_model` maps a run's TRL knobs onto a :class:`GRPOModel` with the project's one
  TRL key map (:func:`grpo_theory.runs.config_map.map_config`): ``num_generations`` ->
  ``group_size``, ``scale_rewards`` -> ``normalization``, ``beta`` -> the k3 KL in the loss
  (the exact KL with ``use_bias_correction_kl``), the clipped ratio surrogate,
  ``steps_per_generation``/``num_iterations`` -> ``refresh_interval`` with fresh or reused
  batches, SGD's momentum (``optim_args``) or Adam's beta1 -> ``momentum``.  The network
  enters only through the learning rate: with :math:`\lambda` the top eigenvalue of the
  empirical tangent kernel of the prompts' success log-odds, the top mode moves like the
  bandit with learning rate :math:`\eta\lambda/(N\kappa)` (``ntk_scale``), so
  :math:`\eta K_{top} = \eta_{bandit} K_{bandit}`.
* fixed point, exact (L2) stability, thresholds, the published rule, critical damping;
* :func:`bandit_response`: the same configuration in the theory's own bandit simulator (L0),
  the reference for what the engine's ensemble of kicked runs should show.
"""

from __future__ import annotations

import math

from grpo_theory.model import GRPOModel
from grpo_theory.runs.config_map import map_config
from grpo_theory.theory.derived import get as _get
from grpo_theory.theory.discrete import (_published_k_max, max_stable_learning_rate,
                                         max_stable_refresh_interval, refresh_thresholds)
from grpo_theory.theory.drift import geometric_factor

__all__ = ["KAPPA", "lab_model", "mapping", "published_k_max", "exact_k_max", "threshold_eta_K",
           "critical_momentum", "critical_momentum_continuous", "fixed_point_of",
           "bandit_response"]

#: |grad z|^2 of the two-logit softmax bandit (the theory's geometric factor, two answers)
KAPPA = float(geometric_factor(2, 1))


def mapping(spec, prompts: int):
    """The TRL key map of a run (``ConfigMapping``)."""
    cfg = dict(spec.grpo_config_kwargs(prompts), num_processes=1)
    return map_config(cfg, "trl")


def lab_model(spec, *, p_ref: float, prompts: int, ntk_scale: float = 1.0) -> GRPOModel:
    """The theory's model of a lab run (see the module docstring)."""
    mp = mapping(spec, prompts)
    return GRPOModel(
        p_ref=p_ref, group_size=mp.value("group_size"), normalization=mp.value("normalization"),
        kl=mp.value("kl"), kl_coef=mp.value("kl_coef"), adv_eps=mp.value("adv_eps"),
        surrogate=mp.value("surrogate"), prompts=mp.value("prompts"),
        learning_rate=spec.learning_rate * ntk_scale, momentum=mp.value("momentum"),
        refresh_interval=mp.value("refresh_interval"), reuse=mp.value("reuse"),
        window_batches=mp.value("window_batches"))


def fixed_point_of(model: GRPOModel):
    return model.fixed_point()


def exact_k_max(model: GRPOModel):
    """Exact largest stable refresh interval at the model's eta K and split (inf: every k)."""
    fp = model.fixed_point()
    return max_stable_refresh_interval(model.learning_rate, model.momentum, fp.stiffness,
                                       fresh_fraction=fp.fresh_fraction)


def published_k_max(model: GRPOModel) -> int:
    """Largest k allowed by the published rule eta K k < 1 - mu (all of K delayed)."""
    fp = model.fixed_point()
    bound = float(_get("oscillator.published_threshold").numeric(
        model.momentum, model.learning_rate, fp.stiffness))
    return _published_k_max(bound)


def threshold_eta_K(momentum, refresh_interval, fresh_fraction) -> float:
    """Exact threshold of eta K at which refresh interval k becomes unstable."""
    return float(max_stable_learning_rate(momentum, refresh_interval, 1.0,
                                          fresh_fraction=fresh_fraction))


def critical_momentum(eta_K) -> float:
    """Exact discrete critical momentum at k = 1 (real -> complex eigenvalues of the step map)."""
    from scipy.optimize import brentq

    f = lambda m: float(refresh_thresholds(m, 1)[2]) - eta_K  # noqa: E731
    return float(brentq(f, 1e-9, 0.999999, xtol=1e-14))


def critical_momentum_continuous(eta_K) -> float:
    """The continuous (L3) oscillator's critical momentum at k = 1."""
    return float(_get("oscillator.critical_momentum").numeric(eta_K, 1.0, 1.0))


def spectral_radius(model: GRPOModel) -> float:
    return float(model.stability().spectral_radius)


def is_finite(x) -> bool:
    return x is not None and math.isfinite(x)


def bandit_response(model: GRPOModel, *, windows: int, delta: float = 0.15, runs: int = 4000,
                    seed: int = 1):
    """The theory's own L0 simulator (the bandit, no network): ensemble-mean half difference
    of runs started at z* +- delta, at window starts; ``(W + 1,)`` array.  The clip is set
    out of reach (the lab's sweeps switch TRL's off)."""
    from scipy.special import expit

    from grpo_theory.simulation import SimulationConfig, simulate

    fp = model.fixed_point()
    k = model.refresh_interval
    means = []
    for sign in (1.0, -1.0):
        cfg = SimulationConfig(
            steps=windows * k, runs=runs, group_size=model.group_size, prompts=model.prompts,
            p_ref=model.p_ref, p0=float(expit(fp.z + sign * delta)),
            learning_rate=model.learning_rate,
            optimizer="momentum" if model.momentum > 0 else "sgd", momentum=model.momentum,
            normalization=model.normalization, adv_eps=model.adv_eps, surrogate=model.surrogate,
            clip_low=0.99, clip_high=100.0, kl=model.kl, kl_coef=model.kl_coef,
            refresh_interval=k, reuse=model.reuse, window_batches=model.window_batches,
            seed=seed, record=("z",))
        means.append(simulate(cfg).observables["z"].mean(0))
    return 0.5 * (means[0] - means[1])[::k]
