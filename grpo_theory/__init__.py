"""grpo-theory: a symbolic-numeric workbench for the training dynamics of GRPO.

The package derives (with sympy) a reduced-order model of GRPO on a softmax bandit,
proves every step, turns the results into fast numpy functions, simulates GRPO
directly to cross-check the predictions, and fits, forecasts and diagnoses real
training logs.

The curated API (everything a user needs; the subpackages hold the rest):

- the model: :class:`GRPOModel`, :data:`DEFAULT_MODEL`;
- theory: :func:`get` (a derived record: expression, LaTeX, lambdified numerics, proof
  log), :func:`derive_chain`, :func:`fixed_points`, :func:`stable_fixed_point`,
  :func:`stability` (exact L2 at a given stiffness and split),
  :func:`stability_at_fixed_point` (a variant: its stiffness, split and fluctuation),
  :func:`stability_report` (a given stiffness and split), :func:`fixed_point_report`,
  :func:`trajectory_report` (the L3 trajectory),
  :func:`collapse_risk`, :func:`atlas`, :func:`findings`, :func:`citation`;
- simulation: :func:`simulate`, :class:`SimulationConfig`;
- cross-checks: :func:`run_crosschecks`;
- real runs: :func:`read_log`, :func:`fit_log`, :func:`diagnose`, :func:`check_config`,
  :func:`compare` (families of runs);
- the neural-policy test: :func:`run_deepnet` (needs PyTorch);
- the lab on TRL's own GRPOTrainer: :func:`run_lab` (needs the ``lab`` extra);
- the report: :func:`build_report`.

Names are imported on first use, so ``import grpo_theory`` stays light.

Subpackages by level: :mod:`.theory` (the derivation chain), :mod:`.simulation` (L0),
:mod:`.crosscheck`, :mod:`.runs` (real training logs), :mod:`.report`, :mod:`.cli`.
"""

__version__ = "0.2.0"

#: public name -> module that defines it (imported on first use)
_API = {
    "GRPOModel": "grpo_theory.model",
    "DEFAULT_MODEL": "grpo_theory.model",
    "Result": "grpo_theory.results",
    "ParameterError": "grpo_theory.validate",
    "get": "grpo_theory.theory.derived",
    "derive_chain": "grpo_theory.theory.chain",
    "fixed_points": "grpo_theory.theory.fixed_points",
    "stable_fixed_point": "grpo_theory.theory.fixed_points",
    "stability": "grpo_theory.theory.discrete",
    "stability_at_fixed_point": "grpo_theory.theory.stability",
    "stability_report": "grpo_theory.theory.stability",
    "fixed_point_report": "grpo_theory.theory.fixed_points",
    "trajectory_report": "grpo_theory.theory.oscillator",
    "collapse_risk": "grpo_theory.theory.collapse",
    "atlas": "grpo_theory.theory.atlas",
    "findings": "grpo_theory.theory.findings",
    "citation": "grpo_theory.theory.latex",
    "simulate": "grpo_theory.simulation",
    "SimulationConfig": "grpo_theory.simulation",
    "run_crosschecks": "grpo_theory.crosscheck",
    "read_log": "grpo_theory.runs.logs",
    "fit_log": "grpo_theory.runs.fitting",
    "diagnose": "grpo_theory.runs.diagnostics",
    "check_config": "grpo_theory.runs.check_config",
    "compare": "grpo_theory.runs.compare",
    "run_deepnet": "grpo_theory.deepnet",
    "run_lab": "grpo_theory.lab",
    "build_report": "grpo_theory.report.build",
}

__all__ = ["__version__", *_API]


def __getattr__(name):
    if name in _API:
        import importlib

        value = getattr(importlib.import_module(_API[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'grpo_theory' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_API))
