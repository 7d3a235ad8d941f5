"""Lazy PyTorch import: ``import grpo_theory`` never needs torch."""

from __future__ import annotations

from grpo_theory.validate import MissingExtra

TORCH_MESSAGE = ("deepnet needs PyTorch: pip install 'grpo-theory[deepnet]' "
                 "(torch 2.13.0, the CPU build)")


class TorchMissing(MissingExtra):
    """Raised when torch is not importable; the CLI turns it into one line and exit 1 (a missing
    optional dependency, not bad input)."""

    def __init__(self):
        super().__init__("deepnet", TORCH_MESSAGE, "torch")


def require_torch():
    """Return the ``torch`` module or raise :class:`TorchMissing`."""
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - exercised by monkeypatching in tests
        raise TorchMissing() from exc
    return torch
