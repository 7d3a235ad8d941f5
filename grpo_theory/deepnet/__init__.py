"""Deep-network test of the exact discrete stability theory (issue 12).

A small MLP policy over prompt embeddings is trained with real sampled GRPO on CPU,
batched over runs; its stiffness is measured two ways (NTK x the bandit theory's
per-prompt stiffness, and linear response along the top mode) and the exact
prediction of the largest stable refresh interval and of the critical momentum is
compared with the network.  See ``docs/deepnet.md``.

Importing this package does not import torch; :func:`run_deepnet` does (lazily) and
raises a ``ParameterError`` with the install hint when torch is missing.
"""

from __future__ import annotations

__all__ = ["run_deepnet", "DeepnetResult", "KRow", "TransitionRow"]


def __getattr__(name):
    if name in ("DeepnetResult", "KRow", "TransitionRow"):
        from . import results
        return getattr(results, name)
    if name == "run_deepnet":
        return run_deepnet
    raise AttributeError(name)


def run_deepnet(*, out=None, **kwargs):
    """See :func:`grpo_theory.deepnet.experiments.run_deepnet`; ``out``: a directory to which
    ``result.json`` and ``result.txt`` are also written."""
    from ._torch import require_torch

    require_torch()
    from .experiments import run_deepnet as _run

    res = _run(**kwargs)
    if out is not None:
        from pathlib import Path

        d = Path(out)
        d.mkdir(parents=True, exist_ok=True)
        (d / "result.json").write_text(res.to_json() + "\n")
        (d / "result.txt").write_text(str(res) + "\n")
    return res
