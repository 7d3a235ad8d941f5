"""Input validation with messages that name the parameter, its value and what is allowed.

Every public entry point validates its arguments through these helpers, so a
user never sees a NaN or a traceback from deep inside numpy for a bad input.
The CLI turns :class:`ParameterError` into exit code 2 and a one-line message.
"""

from __future__ import annotations

import math
import os
import re
import tempfile
from numbers import Integral, Real
from pathlib import Path
from typing import Iterable

import numpy as np

__all__ = [
    "ParameterError",
    "MissingParameter",
    "check_choice",
    "check_int",
    "check_probability",
    "check_real",
    "check_finite_array",
    "check_output_dir",
    "check_output_file",
    "figure_formats",
]


class ParameterError(ValueError):
    """A parameter value outside the allowed set.

    ``str(err)`` is a single line such as
    ``"group_size must be an integer >= 2, got 1"``.
    """

    def __init__(self, name: str, value, allowed: str):
        self.name = name
        self.value = value
        self.allowed = allowed
        shown = _ANSI.sub("", value) if isinstance(value, str) else value
        super().__init__(_ANSI.sub("", f"{name} must be {allowed}, got {shown!r}"))


class MissingParameter(ParameterError):
    """A required parameter that was not given: ``"LOG is required: a log file ..."`` (not
    ``"... got None"``, which reads as if ``None`` had been typed)."""

    def __init__(self, name: str, allowed: str):
        self.name, self.value, self.allowed = name, None, allowed
        ValueError.__init__(self, f"{name} is required: {allowed}")


#: terminal colour codes: no message carries one (a coloured log quoted in an error)
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")


class MissingExtra(ParameterError):
    """An optional dependency (a ``pip install 'grpo-theory[EXTRA]'`` extra) is not installed.

    Not bad input: the CLI prints its one-line message, which names the extra, and exits with
    code 1 (:attr:`exit_code`), where bad input exits with 2.  A ``ParameterError`` for callers
    that catch those."""

    exit_code = 1

    def __init__(self, extra: str, message: str, module: str | None = None):
        ValueError.__init__(self, message)
        self.name, self.value, self.allowed = module or extra, None, "installed"
        self.extra, self.module, self.message = extra, module, message

    def __str__(self):
        return self.message


def _interval_text(low, high, low_open, high_open, allowed=None) -> str:
    """What :func:`check_real` allows, in words (``allowed`` when given; built only when a
    value is refused)."""
    if allowed is not None:
        return allowed
    lo = "" if low is None else ("(" if low_open else "[") + f"{low}"
    hi = "" if high is None else f"{high}" + (")" if high_open else "]")
    if low is not None and high is not None:
        return f"a real number in {lo}, {hi}"
    if low is not None:
        return f"a real number {'>' if low_open else '>='} {low}"
    if high is not None:
        return f"a real number {'<' if high_open else '<='} {high}"
    return "a finite real number"


def check_real(name: str, value, *, low=None, high=None, low_open=False,
               high_open=False, allowed: str | None = None) -> float:
    """Return ``float(value)`` after checking it is finite and inside the interval.

    ``low_open``/``high_open`` make the corresponding end exclusive.
    """
    def refused(finite=False):
        text = _interval_text(low, high, low_open, high_open, allowed)
        if finite and "finite" not in text:   # inf or nan: say that it must be finite
            text = text.replace("a real number", "a finite real number", 1)
        return ParameterError(name, value, text)

    if isinstance(value, bool) or not isinstance(value, Real):
        try:
            value_f = float(value)
        except (TypeError, ValueError):
            raise refused() from None
    else:
        value_f = float(value)
    if not math.isfinite(value_f):
        raise refused(finite=True)
    if low is not None and (value_f < low or (low_open and value_f == low)):
        raise refused()
    if high is not None and (value_f > high or (high_open and value_f == high)):
        raise refused()
    return value_f


def check_int(name: str, value, *, low: int | None = None, high: int | None = None,
              allowed: str | None = None) -> int:
    """Return ``int(value)`` after checking it is an integer in ``[low, high]``."""
    if allowed is None:
        if low is not None and high is not None:
            allowed = f"an integer in [{low}, {high}]"
        elif low is not None:
            allowed = f"an integer >= {low}"
        elif high is not None:
            allowed = f"an integer <= {high}"
        else:
            allowed = "an integer"
    if isinstance(value, bool):
        raise ParameterError(name, value, allowed)
    if isinstance(value, Integral):
        v = int(value)
    elif isinstance(value, Real) and float(value).is_integer():
        v = int(value)
    elif isinstance(value, str):
        try:
            v = int(value)
        except ValueError:
            raise ParameterError(name, value, allowed) from None
    else:
        raise ParameterError(name, value, allowed)
    if (low is not None and v < low) or (high is not None and v > high):
        raise ParameterError(name, value, allowed)
    return v


def check_probability(name: str, value, *, open_interval: bool = True) -> float:
    """A probability in (0, 1) (default) or [0, 1]."""
    return check_real(name, value, low=0.0, high=1.0, low_open=open_interval,
                      high_open=open_interval)


def check_choice(name: str, value, choices: Iterable[str]) -> str:
    """A string among ``choices``."""
    choices = tuple(choices)
    if value not in choices:
        raise ParameterError(name, value, "one of " + ", ".join(repr(c) for c in choices))
    return value


def check_finite_array(name: str, values):
    """Return ``numpy.asarray(values, float)`` after checking every entry is finite."""
    arr = np.asarray(values, dtype=float)
    if not np.all(np.isfinite(arr)):
        bad = arr[~np.isfinite(arr)].ravel()[0]
        raise ParameterError(name, bad, "finite real numbers (no NaN or inf)")
    return arr


def _writable_parent(name: str, out, shown: str):
    """The nearest existing ancestor of ``out`` must be a directory where a file can be made."""
    probe = out
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir():
        raise ParameterError(name, shown, f"a path below a directory ({probe} is a file)")
    try:
        with tempfile.TemporaryFile(dir=probe):
            pass
    except OSError as exc:
        raise ParameterError(name, shown, f"a writable place ({probe}: {exc.strerror})") from None


def check_output_dir(name: str, path, *, writes=(), force: bool = False):
    """``path`` as a :class:`~pathlib.Path` if a directory can be written there, checked before
    any work: an existing non-directory, a file on the way, or a place where no file can be
    created raises :class:`ParameterError` naming ``name``.  ``writes`` names the files the
    command writes into it: if one of them is already there the directory holds an earlier
    output, refused unless ``force`` (the one rule of every command that writes: an existing
    output is never overwritten silently).  Nothing is left behind."""
    out = Path(path).expanduser()
    if out.exists() and not out.is_dir():
        raise ParameterError(name, str(out), "a directory (it is an existing file)")
    _writable_parent(name, out, str(out))
    if not force and out.is_dir():
        there = [w for w in writes if (out / w).exists()]
        if there:
            raise ParameterError(name, str(out), f"a directory without an earlier output (it "
                                 f"has {there[0]}; give --force to overwrite)")
    return out


def figure_formats() -> tuple[str, ...]:
    """File extensions matplotlib can write (``png``, ``pdf``, ``svg``, ...)."""
    from matplotlib.backend_bases import FigureCanvasBase   # lazy: matplotlib only when plotting

    return tuple(sorted(FigureCanvasBase.get_supported_filetypes()))


def check_output_file(name: str, path, *, formats=None, force: bool = False):
    """``path`` as a :class:`~pathlib.Path` if the file can be written there, checked before
    any work: its extension is one of ``formats`` (when given; e.g. :func:`figure_formats`),
    its directory exists and is writable, it is not a directory, and it does not exist yet
    unless ``force``.  Otherwise one :class:`ParameterError` naming ``name``, the path and
    what is allowed."""
    shown = str(path)
    out = Path(path).expanduser()
    if formats is not None:
        ext = out.suffix.lower().lstrip(".")
        if ext not in formats:
            raise ParameterError(name, shown, "a file name ending in one of "
                                 + ", ".join("." + f for f in formats))
    if out.is_dir():
        raise ParameterError(name, shown, "a file name (it is a directory)")
    if not out.parent.is_dir():
        raise ParameterError(name, shown, f"a file in an existing directory ({out.parent} "
                             + ("is a file)" if out.parent.exists() else "does not exist)"))
    _writable_parent(name, out.parent, shown)
    if out.exists() and not force:
        raise ParameterError(name, shown, "a new file (it exists; give --force to overwrite it)")
    return out


#: the share of the memory available now that one computation may plan to use
MEMORY_SHARE = 0.8
#: the limit when the available memory cannot be read (no /proc/meminfo, no sysconf)
MEMORY_FALLBACK = 2 << 30


def memory_limit() -> tuple[int, str]:
    """The bytes a computation may allocate, and where the figure comes from: 80 % of the
    memory available now (``MemAvailable`` of /proc/meminfo, else ``os.sysconf``'s available
    physical pages), or 2 GiB where neither can be read."""
    avail = None
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    avail = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        pass
    if avail is None:
        try:
            avail = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (AttributeError, ValueError, OSError):
            return MEMORY_FALLBACK, "the fallback when the available memory cannot be read"
    return int(MEMORY_SHARE * avail), f"{MEMORY_SHARE:.0%} of the {_bytes_text(avail)} available"


def _bytes_text(n) -> str:
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):
        if n < 1024 or unit == "EiB":
            return f"{n:.3g} {unit}" if unit != "B" else f"{n:.0f} B"
        n /= 1024
    return f"{n:.3g} EiB"   # pragma: no cover


def check_memory(name: str, value, needed, detail: str) -> None:
    """Refuse (``ParameterError`` naming ``name``) a computation estimated to need ``needed``
    bytes (a Python number: no overflow) above :func:`memory_limit`, before anything is
    allocated; ``detail`` says how the estimate is made."""
    limit, source = memory_limit()
    if needed > limit:
        raise ParameterError(name, value, f"small enough to fit in memory: this needs about "
                             f"{_bytes_text(needed)} ({detail}), over the limit of "
                             f"{_bytes_text(limit)} ({source})")
