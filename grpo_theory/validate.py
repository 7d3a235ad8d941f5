"""Input validation with messages that name the parameter, its value and what is allowed.

Every public entry point validates its arguments through these helpers, so a
user never sees a NaN or a traceback from deep inside numpy for a bad input.
The CLI turns :class:`ParameterError` into exit code 2 and a one-line message.
"""

from __future__ import annotations

import math
import tempfile
from numbers import Integral, Real
from pathlib import Path
from typing import Iterable

import numpy as np

__all__ = [
    "ParameterError",
    "check_choice",
    "check_int",
    "check_probability",
    "check_real",
    "check_finite_array",
    "check_output_dir",
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
        super().__init__(f"{name} must be {allowed}, got {value!r}")


def check_real(name: str, value, *, low=None, high=None, low_open=False,
               high_open=False, allowed: str | None = None) -> float:
    """Return ``float(value)`` after checking it is finite and inside the interval.

    ``low_open``/``high_open`` make the corresponding end exclusive.
    """
    if allowed is None:
        lo = "" if low is None else ("(" if low_open else "[") + f"{low}"
        hi = "" if high is None else f"{high}" + (")" if high_open else "]")
        if low is not None and high is not None:
            allowed = f"a real number in {lo}, {hi}"
        elif low is not None:
            allowed = f"a real number {'>' if low_open else '>='} {low}"
        elif high is not None:
            allowed = f"a real number {'<' if high_open else '<='} {high}"
        else:
            allowed = "a finite real number"
    if isinstance(value, bool) or not isinstance(value, Real):
        try:
            value_f = float(value)
        except (TypeError, ValueError):
            raise ParameterError(name, value, allowed) from None
    else:
        value_f = float(value)
    if not math.isfinite(value_f):
        raise ParameterError(name, value, allowed)
    if low is not None and (value_f < low or (low_open and value_f == low)):
        raise ParameterError(name, value, allowed)
    if high is not None and (value_f > high or (high_open and value_f == high)):
        raise ParameterError(name, value, allowed)
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


def check_output_dir(name: str, path):
    """``path`` as a :class:`~pathlib.Path` if a directory can be written there, checked before
    any work: an existing non-directory, a file on the way, or a place where no file can be
    created raises :class:`ParameterError` naming ``name``.  Nothing is left behind."""
    out = Path(path).expanduser()
    if out.exists() and not out.is_dir():
        raise ParameterError(name, str(out), "a directory (it is an existing file)")
    probe = out
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir():
        raise ParameterError(name, str(out), f"a directory ({probe} is a file)")
    try:
        with tempfile.TemporaryFile(dir=probe):
            pass
    except OSError as exc:
        raise ParameterError(name, str(out), f"a writable place ({probe}: {exc.strerror})") from None
    return out
