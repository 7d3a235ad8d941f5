"""Data bundled with the package: the real training log(s) the report and the lectures use.

:func:`example_log` is the path of a trimmed real verl GRPO run (DeepSeek-LLM-7B-chat on
GSM8K, group size 5); its provenance is in ``README.md`` beside this file.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

__all__ = ["EXAMPLE_LOG_NAME", "example_log"]

EXAMPLE_LOG_NAME = "verl_grpo_deepseek7b_gsm8k_trimmed.log"


def example_log() -> Path:
    """Path of the bundled real verl log (installed with the package)."""
    return Path(str(resources.files(__name__).joinpath(EXAMPLE_LOG_NAME)))
