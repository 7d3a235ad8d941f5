"""TensorBoard event files (``events.out.tfevents.*``), as TRL's ``report_to="tensorboard"`` writes them.

Needs the optional extra ``grpo-theory[tensorboard]`` (the ``tensorboard`` package's
event reader).  Scalars only; each tag becomes a metric (``train/reward`` ...).
A folder is read as the newest event file in it.
"""

from __future__ import annotations

import os

import numpy as np

from grpo_theory.runs.logs.base import LogFormatError, TrainingLog
from grpo_theory.validate import MissingExtra, ParameterError

__all__ = ["read_tensorboard", "is_event_file"]


def is_event_file(path) -> bool:
    return "tfevents" in os.path.basename(os.fspath(path))


def read_tensorboard(path) -> TrainingLog:
    """Read the scalar series of a TensorBoard event file (or the newest one in a folder)."""
    try:
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    except ImportError:
        raise MissingExtra("tensorboard", f"{os.fspath(path)}: TensorBoard event files need the "
                           "tensorboard extra: pip install 'grpo-theory[tensorboard]'",
                           "tensorboard") from None
    p = os.fspath(path)
    if os.path.isdir(p):
        files = sorted((f for f in os.listdir(p) if is_event_file(f)),
                       key=lambda f: os.path.getmtime(os.path.join(p, f)))
        if not files:
            raise ParameterError("log file", p, "a folder with an events.out.tfevents.* file")
        p = os.path.join(p, files[-1])
    acc = EventAccumulator(p, size_guidance={"scalars": 0})
    try:
        acc.Reload()
    except Exception as exc:  # the reader raises several types on a corrupt record
        raise LogFormatError(p, None, f"not a readable TensorBoard event file ({exc})") from None
    metrics = {}
    for tag in acc.Tags().get("scalars", []):
        by_step = {}
        for ev in acc.Scalars(tag):
            by_step[float(ev.step)] = float(ev.value)  # a rewritten step keeps its last value
        steps = np.array(sorted(by_step), dtype=float)
        metrics[tag] = (steps, np.array([by_step[s] for s in steps], dtype=float))
    if not metrics:
        raise LogFormatError(p, None, "no scalar summaries in the event file")
    return TrainingLog(metrics=metrics, source=p, format="tensorboard")
