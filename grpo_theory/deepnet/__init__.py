"""Deep-network test of the exact discrete stability theory.

A small MLP policy over prompt embeddings is trained with real sampled GRPO on CPU,
batched over runs; its stiffness is measured two ways (NTK x the bandit theory's
per-prompt stiffness, and linear response along the top mode) and the exact
prediction of the largest stable refresh interval and of the critical momentum is
compared with the network.  The objective is a model's variant
(:class:`~grpo_theory.deepnet.grpo.NetObjective`; named variants in
:data:`~grpo_theory.deepnet.grpo.VARIANTS`).  See ``docs/deepnet.md``.

Importing this package does not import torch; :func:`run_deepnet` does and raises a
``ParameterError`` with the install hint when torch is missing.
"""

from __future__ import annotations

from pathlib import Path

from grpo_theory.deepnet._torch import require_torch
from grpo_theory.deepnet.experiments import run_deepnet as _run
from grpo_theory.deepnet.results import DeepnetResult, KRow, TransitionRow

__all__ = ["run_deepnet", "DeepnetResult", "KRow", "TransitionRow"]


def run_deepnet(*, out=None, **kwargs) -> DeepnetResult:
    """See :func:`grpo_theory.deepnet.experiments.run_deepnet`; ``out``: a directory to which
    ``result.json`` and ``result.txt`` are also written."""
    require_torch()
    res = _run(**kwargs)
    if out is not None:
        d = Path(out)
        d.mkdir(parents=True, exist_ok=True)
        (d / "result.json").write_text(res.to_json() + "\n")
        (d / "result.txt").write_text(str(res) + "\n")
    return res
