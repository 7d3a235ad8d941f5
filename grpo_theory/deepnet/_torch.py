"""Lazy PyTorch import: ``import grpo_theory`` never needs torch."""

from __future__ import annotations

from grpo_theory.validate import ParameterError

TORCH_MESSAGE = ("deepnet needs PyTorch: pip install 'grpo-theory[deepnet]' "
                 "(torch 2.13.0, the CPU build)")


class TorchMissing(ParameterError):
    """Raised when torch is not importable; the CLI turns it into one line and exit 2."""

    def __init__(self):
        ValueError.__init__(self, TORCH_MESSAGE)
        self.name, self.value, self.allowed = "torch", None, "installed"

    def __str__(self):
        return TORCH_MESSAGE


def require_torch():
    """Return the ``torch`` module or raise :class:`TorchMissing`."""
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - exercised by monkeypatching in tests
        raise TorchMissing() from exc
    return torch
