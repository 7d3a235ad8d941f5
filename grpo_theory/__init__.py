"""grpo-theory: a symbolic-numeric workbench for the training dynamics of GRPO.

The package derives (with sympy) a reduced-order model of GRPO on a softmax bandit,
proves every step, turns the results into fast numpy functions, simulates GRPO
directly to cross-check the predictions, and fits, forecasts and diagnoses real
training logs.

The curated API (everything a user needs; the subpackages hold the rest):

- the model: :class:`GRPOModel` (variant, optimizer and lag; the one set of defaults and all
  validation), :data:`DEFAULT_MODEL`;
- theory, each a function of a model: :func:`fixed_points`, :func:`stable_fixed_point`,
  :func:`fixed_point_report`, :func:`stability` (exact L2 at the fixed point, or at a given
  stiffness), :func:`fluctuation`, :func:`collapse_risk`, :func:`adam_reduction`; the
  derivation records :func:`get` and :func:`derive_chain`; :func:`trajectory_report` (the L3
  trajectory), :func:`atlas`, :func:`findings`, :func:`citation`;
- simulation: :func:`simulate` ``(model, steps=..., runs=..., seed=...)``;
- cross-checks: :func:`run_crosschecks`;
- real runs: :func:`read_log`, :func:`fit_log`, :func:`diagnose`, :func:`check_config`,
  :func:`compare` (families of runs);
- the neural-policy test: :func:`run_deepnet` (needs PyTorch);
- the lab on TRL's own GRPOTrainer: :func:`run_lab` (needs the ``lab`` extra);
- the report: :func:`build_report`.

Names are imported on first use, so ``import grpo_theory`` stays light (sympy and the
derivation chain load only when a name that needs them is used).

Subpackages by level: :mod:`.model` (the ground floor, with :mod:`.validate`,
:mod:`.results`, :mod:`.prose`), :mod:`.theory` (the derivation chain),
:mod:`.simulation` (L0), :mod:`.render` (equations, the printed chain, findings),
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
    "derive_chain": "grpo_theory.render.chain",
    "fixed_points": "grpo_theory.theory.fixed_points",
    "stable_fixed_point": "grpo_theory.theory.fixed_points",
    "fixed_point_report": "grpo_theory.theory.fixed_points",
    "stability": "grpo_theory.theory.stability",
    "fluctuation": "grpo_theory.theory.noise",
    "adam_reduction": "grpo_theory.theory.adam",
    "collapse_risk": "grpo_theory.theory.collapse",
    "trajectory_report": "grpo_theory.theory.oscillator",
    "atlas": "grpo_theory.theory.atlas",
    "findings": "grpo_theory.render.findings",
    "citation": "grpo_theory.render.latex",
    "simulate": "grpo_theory.simulation",
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
