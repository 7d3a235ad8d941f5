r"""Stiffness probe: measure :math:`K = -F'(z^*)` from the direct simulation.

Two ensembles start at :math:`z^* + \delta` and :math:`z^* - \delta` (on-policy,
SGD, learning rate :math:`\eta`) and take one optimizer step each.  With
:math:`F(z) = E[\Delta z]/\eta` the expected one-step update of the logit per unit
learning rate (logits per unit η),

.. math::

    \hat K = -\frac{\overline{\Delta z_+} - \overline{\Delta z_-}}{2\,\delta\,\eta},
    \qquad
    \operatorname{se}(\hat K) = \frac{\sqrt{s_+^2/R + s_-^2/R}}{2\,\delta\,\eta},

a central difference whose bias is :math:`O(\delta^2 F''')`.  The two sides use
**independent** random streams (two children of ``SeedSequence(seed)``), so the
standard error is the plain sum in quadrature of the two standard errors of the
mean.  (Common random numbers would lower the variance, but the binomial draw maps
uniforms to counts monotonically only on one side of p = 1/2 — it draws the
complement above it — so the pairing would not be exact across it.)

The fixed point :math:`z^*` is an input (it comes from the symbolic core).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from grpo_theory.model import GRPOModel
from grpo_theory.simulation.engine import simulate
from grpo_theory.simulation.result import Comparison
from grpo_theory.validate import ParameterError, check_int, check_real

__all__ = ["StiffnessMeasurement", "measure_stiffness", "measure_drift"]


@dataclass(frozen=True)
class StiffnessMeasurement:
    r"""Result of :func:`measure_stiffness`.

    ``value``/``stderr``: :math:`\hat K` and its standard error (per step per unit
    η).  ``drift_plus``/``drift_minus`` (with ``*_stderr``): the mean one-step
    :math:`\Delta z/\eta` at :math:`z^* \pm \delta`; ``drift_at_fixed_point`` their
    average, an estimate of :math:`F(z^*)` (≈ 0 if ``z_star`` is a fixed point).
    """

    value: float
    stderr: float
    z_star: float
    delta: float
    runs: int
    learning_rate: float
    drift_plus: float
    drift_plus_stderr: float
    drift_minus: float
    drift_minus_stderr: float

    @property
    def drift_at_fixed_point(self) -> float:
        return 0.5 * (self.drift_plus + self.drift_minus)

    def compare(self, predicted: float, *, n_sigma: float = 4.0) -> Comparison:
        """:math:`\\hat K` against a predicted stiffness."""
        return Comparison(self.value, self.stderr, float(predicted), float(n_sigma))


def _probe_model(model: GRPOModel) -> GRPOModel:
    """The model's variant with one on-policy SGD step: the probe's optimizer and lag."""
    if not isinstance(model, GRPOModel):
        raise ParameterError("model", type(model).__name__, "a GRPOModel")
    return model.replace(optimizer="sgd", momentum=0.0, lag_model="refresh", refresh_interval=1,
                         delay=None, reuse="fresh", window_batches=1)


def _one_step_drift(model, z0, runs, seed_seq):
    """Per-run Δz/η of one on-policy SGD step of ``model`` from the policy with logit ``z0``."""
    p0 = float(expit(z0))
    if not 0.0 < p0 < 1.0:
        raise ParameterError("z_star", z0, "a finite logit whose success probability is "
                             "strictly inside (0, 1) in floating point")
    res = simulate(model, steps=1, runs=runs, p0=p0, record=("z",),
                   seed=int(seed_seq.generate_state(1)[0]))
    return (res.z[:, 1] - res.z[:, 0]) / model.learning_rate


def measure_drift(model: GRPOModel, z, *, runs=100_000, seed=0):
    """Mean one-step update :math:`\\Delta z/\\eta` of the model's variant from logit ``z`` (one
    on-policy SGD step at the model's learning rate) and its standard error."""
    z = check_real("z", z)
    runs = check_int("runs", runs, low=2)
    seed_seq = np.random.SeedSequence(check_int("seed", seed, low=0))
    dz = _one_step_drift(_probe_model(model), z, runs, seed_seq)
    return float(dz.mean()), float(dz.std(ddof=1) / math.sqrt(dz.size))


def measure_stiffness(model: GRPOModel, z_star, *, delta=0.1, runs=100_000,
                      seed=0) -> StiffnessMeasurement:
    r"""Measure the stiffness :math:`K = -F'(z^*)` of the model's variant by a central
    difference of simulated drifts.

    ``z_star`` (logits) is the point to probe, normally the stable fixed point from
    the symbolic core; ``delta`` the half-width of the difference (logits);
    ``runs`` replications per side.  The step is one on-policy SGD step at the model's
    learning rate η (the measured drift is per unit η, so a small η keeps the one step
    local); the model's optimizer and lag are not used.

    Standard error: independent streams for the two sides (see module docstring).
    """
    z_star = check_real("z_star", z_star)
    delta = check_real("delta", delta, low=0.0, low_open=True)
    runs = check_int("runs", runs, low=2)
    seed = check_int("seed", seed, low=0)
    probe = _probe_model(model)
    plus_seq, minus_seq = np.random.SeedSequence(seed).spawn(2)
    dz_plus = _one_step_drift(probe, z_star + delta, runs, plus_seq)
    dz_minus = _one_step_drift(probe, z_star - delta, runs, minus_seq)
    mp, mm = float(dz_plus.mean()), float(dz_minus.mean())
    sp = float(dz_plus.std(ddof=1) / math.sqrt(runs))
    sm = float(dz_minus.std(ddof=1) / math.sqrt(runs))
    value = -(mp - mm) / (2.0 * delta)
    stderr = math.hypot(sp, sm) / (2.0 * delta)
    return StiffnessMeasurement(value=value, stderr=stderr, z_star=z_star, delta=delta,
                                runs=runs, learning_rate=probe.learning_rate, drift_plus=mp,
                                drift_plus_stderr=sp, drift_minus=mm,
                                drift_minus_stderr=sm)
