"""Imports every module that registers derivations (see :func:`grpo_theory.derived.derivation`)."""

import importlib

MODULES = [
    "drift",
    "fixed_points",
    "discrete",
    "oscillator",
    "noise",
    "closed_forms",
]

for _name in MODULES:
    try:
        importlib.import_module(f"grpo_theory.{_name}")
    except ModuleNotFoundError as exc:  # pragma: no cover - only while a module is being written
        if exc.name != f"grpo_theory.{_name}":
            raise
