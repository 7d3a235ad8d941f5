"""grpo-theory: a symbolic-numeric workbench for the training dynamics of GRPO.

The package derives (with sympy) a reduced-order model of GRPO on a softmax
bandit, verifies every step, turns the results into fast numpy functions,
simulates GRPO directly to cross-check the predictions, and fits and diagnoses
real training logs.  See ``README.md`` and ``derivations/``.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
