"""Level L0: direct GRPO simulation of the softmax bandit, and the stiffness probe.

- :mod:`.engine`: :func:`simulate` ``(model, steps=..., runs=..., seed=...)``, vectorised
  over runs and seeded; the model (:class:`~grpo_theory.model.GRPOModel`) is the variant,
  optimizer and lag, the keyword arguments the simulation-only knobs;
- :mod:`.kernels`: the per-step numpy kernels (no model API, no validation);
- :mod:`.result`: :class:`SimulationResult` (statistics over live runs) and
  :func:`compare` (an estimate with its standard error against a prediction);
- :mod:`.probe`: stiffness and drift measured by linear response.
"""

from grpo_theory.simulation.engine import EnsembleSettings, logits_for_success, simulate
from grpo_theory.simulation.kernels import OBSERVABLES
from grpo_theory.simulation.probe import StiffnessMeasurement, measure_drift, measure_stiffness
from grpo_theory.simulation.result import Comparison, SimulationResult, compare

__all__ = ["OBSERVABLES", "EnsembleSettings", "SimulationResult", "Comparison", "compare",
           "simulate", "logits_for_success", "StiffnessMeasurement", "measure_drift",
           "measure_stiffness"]
