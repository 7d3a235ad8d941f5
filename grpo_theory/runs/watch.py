"""Follow a growing training log and report each diagnostic the moment it first fires.

:func:`watch` re-reads the log whenever its size or modification time changes, runs
:func:`grpo_theory.runs.diagnostics.diagnose` on what is there, and yields a
:class:`FiredWarning` for every detector whose flag turns on (once per detector).  A log
that is mid-write (a partial last line) is read again at the next poll.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from grpo_theory.runs.diagnostics import diagnose
from grpo_theory.runs.logs import LogFormatError, read_log
from grpo_theory.validate import ParameterError, check_int, check_real

__all__ = ["FiredWarning", "watch", "new_warnings"]


@dataclass(frozen=True)
class FiredWarning:
    """One detector that fired: its name, the step it first fired at, evidence and knob."""

    detector: str
    first_step: float | None
    last_step: float | None
    evidence: str
    knob: str | None

    def __str__(self) -> str:
        at = "" if self.first_step is None else f" (first at step {self.first_step:g})"
        return (f"[step {self.last_step:g}] {self.detector}{at}: {self.evidence}"
                + (f"; knob: {self.knob}" if self.knob else ""))


def _signature(path):
    st = os.stat(path)
    return st.st_size, st.st_mtime_ns


def _binary(path) -> bool:
    """A file with NUL bytes in its first 8 kB (not gzip): no text log, however long one
    waits (a log cut off mid-write is text)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(8192)
    except OSError:
        return False
    from grpo_theory.runs.logs.tensorboard import is_event_file

    return (b"\0" in head and not head.startswith(b"\x1f\x8b")
            and not is_event_file(os.fspath(path)))


def watch(path, *, format=None, metric=None, group_size=None, interval=10.0, max_polls=None,
          sleep=time.sleep, wait=False, state=None, rename=None):
    """Yield a :class:`FiredWarning` each time a detector first fires on the growing log ``path``.

    Polls every ``interval`` seconds; stops after ``max_polls`` polls (``None``: never).  A
    log that does not exist is a :class:`ParameterError` unless ``wait`` (a run about to
    start): then it is polled for until it appears.  ``state`` (a dict), if given, records
    ``polls`` and ``reads`` (how often the log was read), so a caller can tell "no warning"
    from "nothing was read".  ``rename`` maps the log's metric names to others (as ``read_log``'s).
    """
    interval = check_real("interval", interval, low=0)
    if max_polls is not None:
        max_polls = check_int("max_polls", max_polls, low=1)
    if not wait and not os.path.exists(path):
        raise ParameterError("log file", os.fspath(path), "an existing file (give --wait to "
                             "wait for a run that has not written it yet)")
    state = {} if state is None else state
    state.update(polls=0, reads=0)
    fired, seen, polls = set(), None, 0
    while max_polls is None or polls < max_polls:
        if polls:
            sleep(interval)
        polls += 1
        state["polls"] = polls
        if not os.path.exists(path):
            continue
        sig = _signature(path)
        if sig == seen:
            continue
        try:
            log = read_log(path, format, rename=rename)
        except LogFormatError:
            if _binary(path):
                raise      # no log being written: said at once, as `diagnose` says it
            continue  # a partial write: read again at the next poll
        seen = sig
        state["reads"] += 1
        try:
            yield from new_warnings(log, fired, metric=metric, group_size=group_size)
        except ParameterError:
            if metric is not None:
                raise


def new_warnings(log, fired: set, *, metric=None, group_size=None) -> list:
    """Diagnose ``log`` and return a :class:`FiredWarning` for each detector that fires and is not
    in ``fired`` (which is updated): the shared core of :func:`watch` and the TRL callback."""
    diag = diagnose(log, metric, group_size)
    last = max((float(s[-1]) for s, _ in log.metrics.values() if len(s)), default=None)
    out = []
    for name, d in diag.diagnostics.items():
        if d["flag"] and name not in fired:
            fired.add(name)
            out.append(FiredWarning(name, d["first_step"], last, d["evidence"], d["knob"]))
    return out
