"""The GRPO lab: the theory tested on TRL's own ``GRPOTrainer`` (issue 22).

A tiny randomly initialized GPT-2 (``transformers``) with an answer-restricted output head, a
tokenizer built locally (``tokenizers`` WordLevel over digits and symbols), a synthetic
verifiable task (single-token modular arithmetic, binary verifier), trained by TRL's
``GRPOTrainer`` itself on CPU, seeded, nothing downloaded.  Experiments: the transformer's
stiffness two ways (tangent kernel x bandit, linear response), refresh thresholds in TRL's
knobs against the exact prediction and the published rule, the damping transition, families
of runs (group size, width, learning rate) read back by :func:`grpo_theory.runs.compare.compare`,
and labelled failures of known cause (:mod:`grpo_theory.lab.failures`).  See ``docs/lab.md``.

Importing this package imports neither torch nor TRL: :func:`run_lab` does (lazily) and raises
a ``ParameterError`` with the install hint (``pip install 'grpo-theory[lab]'``) when the
``lab`` extra is missing.
"""

from __future__ import annotations

__all__ = ["run_lab", "LabResult", "LabExtraMissing", "LAB_MESSAGE", "EXPERIMENTS", "OUT_DIRS"]


def __getattr__(name):
    if name == "LabResult":
        from .results import LabResult
        return LabResult
    if name in ("LabExtraMissing", "LAB_MESSAGE"):
        from . import _deps
        return getattr(_deps, name)
    if name in ("EXPERIMENTS", "OUT_DIRS"):
        from . import run
        return getattr(run, name)
    if name == "run_lab":
        return run_lab
    raise AttributeError(name)


def run_lab(**kwargs):
    """See :func:`grpo_theory.lab.run.run_lab`."""
    from .run import run_lab as _run

    return _run(**kwargs)
