"""grpo-theory: a symbolic-numeric workbench for the training dynamics of GRPO.

The package derives (with sympy) a reduced-order model of GRPO on a softmax bandit,
proves every step, turns the results into fast numpy functions, simulates GRPO
directly to cross-check the predictions, and fits, forecasts and diagnoses real
training logs.

The curated API (everything a user needs; the subpackages hold the rest):

- the model: :class:`GRPOModel`, :data:`DEFAULT_MODEL`;
- theory: :func:`get` (a derived record: expression, LaTeX, lambdified numerics, proof
  log), :func:`fixed_points`, :func:`stable_fixed_point`, :func:`stability`;
- simulation: :func:`simulate`, :class:`SimulationConfig`;
- cross-checks: :func:`run_crosschecks`;
- real runs: :func:`read_log`, :func:`fit_log`, :func:`diagnose`, :func:`check_config`;
- the report: :func:`build_report`.

Subpackages by level: :mod:`.theory` (the derivation chain), :mod:`.simulation` (L0),
:mod:`.crosscheck`, :mod:`.runs` (real training logs), :mod:`.report`, :mod:`.cli`.
"""

__version__ = "0.2.0"

from grpo_theory.crosscheck import run_crosschecks
from grpo_theory.model import DEFAULT_MODEL, GRPOModel
from grpo_theory.report.build import build_report
from grpo_theory.results import Result
from grpo_theory.runs.check_config import check_config
from grpo_theory.runs.diagnostics import diagnose
from grpo_theory.runs.fitting import fit_log
from grpo_theory.runs.logs import read_log
from grpo_theory.simulation import SimulationConfig, simulate
from grpo_theory.theory.derived import get
from grpo_theory.theory.discrete import stability
from grpo_theory.theory.fixed_points import fixed_points, stable_fixed_point
from grpo_theory.validate import ParameterError

__all__ = [
    "__version__",
    "GRPOModel",
    "DEFAULT_MODEL",
    "get",
    "fixed_points",
    "stable_fixed_point",
    "stability",
    "simulate",
    "SimulationConfig",
    "run_crosschecks",
    "read_log",
    "fit_log",
    "diagnose",
    "check_config",
    "build_report",
    "Result",
    "ParameterError",
]
