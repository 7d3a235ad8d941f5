"""Data bundled with the package: everything a command reads at run time ships here.

- :func:`example_log`: the path of a trimmed real verl GRPO run (DeepSeek-LLM-7B-chat on
  GSM8K, group size 5); its provenance is in ``README.md`` beside this file;
- :func:`lab_results_dir`: the GRPO lab's results (``lab/lab_<part>.json``, with their terminal
  text ``lab_<part>.txt``), written by ``benchmarks/lab_runs/regenerate.py`` and read by the
  report's lab section;
- ``config_keys.json``: the trainers' own keys, read by ``check-config``.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

__all__ = ["EXAMPLE_LOG_NAME", "example_log", "lab_results_dir"]

EXAMPLE_LOG_NAME = "verl_grpo_deepseek7b_gsm8k_trimmed.log"


def example_log() -> Path:
    """Path of the bundled real verl log (installed with the package)."""
    return Path(str(resources.files(__name__).joinpath(EXAMPLE_LOG_NAME)))


def lab_results_dir() -> Path:
    """Directory of the lab's result files ``lab_<part>.json`` (installed with the package)."""
    return Path(str(resources.files(__name__).joinpath("lab")))
