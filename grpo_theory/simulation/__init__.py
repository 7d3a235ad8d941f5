"""Level L0: direct GRPO simulation of the softmax bandit, and the stiffness probe.

- :mod:`.config`: :class:`SimulationConfig`, every parameter of one ensemble;
- :mod:`.engine`: :func:`simulate` (vectorised over runs, seeded);
- :mod:`.kernels`: the per-step numpy kernels (no model API);
- :mod:`.result`: :class:`SimulationResult` (statistics over live runs) and
  :func:`compare` (an estimate with its standard error against a prediction);
- :mod:`.probe`: stiffness and drift measured by linear response.
"""

from grpo_theory.simulation.config import OBSERVABLES, SimulationConfig
from grpo_theory.simulation.engine import logits_for_success, simulate
from grpo_theory.simulation.probe import StiffnessMeasurement, measure_drift, measure_stiffness
from grpo_theory.simulation.result import Comparison, SimulationResult, compare

__all__ = ["OBSERVABLES", "SimulationConfig", "SimulationResult", "Comparison", "compare",
           "simulate", "logits_for_success", "StiffnessMeasurement", "measure_drift",
           "measure_stiffness"]
