"""Progress display for long work: a bar on a terminal, silence otherwise.

Wraps :mod:`tqdm`.  ``disable=None`` in tqdm already means "off when the
stream is not a TTY"; we additionally honour ``GRPO_THEORY_PROGRESS=0/1`` to
force it off or on, and ``CI=true`` to keep CI logs clean.
"""

from __future__ import annotations

import os
import sys

from tqdm.auto import tqdm

__all__ = ["progress", "progress_enabled"]


def progress_enabled(stream=None) -> bool:
    """Whether a progress bar should be shown on ``stream`` (default stderr)."""
    forced = os.environ.get("GRPO_THEORY_PROGRESS")
    if forced is not None:
        return forced.strip().lower() not in {"0", "false", "no", "off", ""}
    if os.environ.get("CI", "").lower() == "true":
        return False
    stream = sys.stderr if stream is None else stream
    return bool(getattr(stream, "isatty", lambda: False)())


def progress(iterable=None, *, total=None, desc=None, enabled: bool | None = None, **kwargs):
    """A tqdm bar that is shown only when :func:`progress_enabled` (or ``enabled``) says so."""
    show = progress_enabled() if enabled is None else enabled
    return tqdm(iterable, total=total, desc=desc, disable=not show, leave=False,
                dynamic_ncols=True, **kwargs)
