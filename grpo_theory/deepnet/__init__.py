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

from grpo_theory.deepnet._torch import require_torch
from grpo_theory.deepnet.experiments import run_deepnet as _run
from grpo_theory.deepnet.results import DeepnetResult, KRow, TransitionRow
from grpo_theory.outputs import atomic_output
from grpo_theory.validate import check_output_dir

__all__ = ["run_deepnet", "DeepnetResult", "KRow", "TransitionRow"]


#: the files ``run_deepnet(out=DIR)`` writes into DIR
OUT_FILES = ("result.json", "result.txt")


def run_deepnet(*, out=None, force=False, **kwargs) -> DeepnetResult:
    """See :func:`grpo_theory.deepnet.experiments.run_deepnet`; ``out``: a directory to which
    ``result.json`` and ``result.txt`` are also written, checked before any work (one that
    holds an earlier result is refused unless ``force``)."""
    require_torch()
    d = None if out is None else check_output_dir("--out", out, writes=OUT_FILES, force=force)
    res = _run(**kwargs)
    if d is not None:   # written beside d and moved into place (grpo_theory.outputs)
        with atomic_output(d, directory=True) as tmp:
            (tmp / "result.json").write_text(res.to_json() + "\n")
            (tmp / "result.txt").write_text(str(res) + "\n")
    return res
