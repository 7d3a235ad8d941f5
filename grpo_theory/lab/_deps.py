"""Lazy imports of the lab's optional extra: ``import grpo_theory`` never needs TRL or torch.

:func:`require_lab` imports torch, transformers, TRL, datasets and tokenizers (in that
order) and raises :class:`LabExtraMissing` - a ``MissingExtra`` whose one-line message is
the install hint - when any of them is missing; the CLI turns it into exit code 1.
"""

from __future__ import annotations

import importlib
import platform

from grpo_theory.validate import MissingExtra

__all__ = ["LAB_MESSAGE", "LabExtraMissing", "require_lab", "versions"]

LAB_MESSAGE = ("the lab needs TRL, transformers, accelerate, datasets and torch: "
               "pip install 'grpo-theory[lab]' (CPU torch: pip install torch==2.13.0)")
MODULES = ("torch", "transformers", "accelerate", "trl", "datasets", "tokenizers")


class LabExtraMissing(MissingExtra):
    """Raised when a module of the ``lab`` extra is not importable (the CLI: one line, exit 1)."""

    def __init__(self, module: str):
        super().__init__("lab", f"{LAB_MESSAGE} ({module} is missing)", module)


def require_lab() -> dict:
    """Import the extra's modules; ``{name: module}`` or :class:`LabExtraMissing`."""
    out = {}
    for name in MODULES:
        try:
            out[name] = importlib.import_module(name)
        except ImportError as exc:
            raise LabExtraMissing(name) from exc
    return out


def versions() -> dict:
    """Versions of the engine's packages (for the run records)."""
    mods = require_lab()
    v = {name: getattr(m, "__version__", "unknown") for name, m in mods.items()}
    v["python"] = platform.python_version()
    return v
