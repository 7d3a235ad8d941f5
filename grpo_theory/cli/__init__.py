"""The ``grpo-theory`` command line: one module per command (see :mod:`.main`)."""

from grpo_theory.cli.main import main

__all__ = ["main"]
