"""Typed results: what every command returns.

Each public job returns one frozen dataclass deriving from :class:`Result`.
``str(result)`` is what the terminal shows; ``result.to_dict()`` is what
``--json`` prints.  :func:`jsonable` is the project's one JSON cleaner: numpy
scalars and arrays become Python numbers and lists, complex numbers ``[re, im]``,
paths strings and nested results their ``to_dict()``.

**The JSON rule for non-finite numbers** (also in the README): every NaN or infinity
becomes ``null``; JSON numbers are always finite.  Where a ``null`` could mean two things,
the result carries a key beside it that says which (a boolean or a reason), e.g.
``max_stable_refresh_interval_exact: null`` with ``stable_for_every_refresh_interval: true``.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np

__all__ = ["Result", "jsonable", "dumps", "table_cell"]


def jsonable(obj):
    """A JSON-safe copy of ``obj`` (see the module docstring for the rules)."""
    if isinstance(obj, Result):
        return obj.to_dict()
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        to_dict = getattr(obj, "to_dict", None)
        if callable(to_dict):
            return jsonable(to_dict())
        return {f.name: jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist())
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        v = float(obj)
        return v if math.isfinite(v) else None
    if isinstance(obj, (complex, np.complexfloating)):
        return [jsonable(obj.real), jsonable(obj.imag)]
    if isinstance(obj, Path):
        return str(obj)
    return obj


def dumps(obj, **kw) -> str:
    """``json.dumps`` of :func:`jsonable` (never emits NaN)."""
    kw.setdefault("indent", 2)
    return json.dumps(jsonable(obj), allow_nan=False, **kw)


class Result:
    """Base of the typed results.  Subclasses are frozen dataclasses.

    ``to_dict()`` serialises every dataclass field through :func:`jsonable`;
    subclasses extend it (``super().to_dict()`` then add keys) or list internal fields
    in ``_json_exclude``.  ``exit_code`` is the process
    exit status the CLI uses (0 unless a subclass says otherwise).
    """

    _json_exclude: tuple = ()

    def to_dict(self) -> dict:
        return {f.name: jsonable(getattr(self, f.name)) for f in dataclasses.fields(self)
                if f.name not in self._json_exclude}

    def to_json(self, **kw) -> str:
        return dumps(self.to_dict(), **kw)

    @property
    def exit_code(self) -> int:
        return 0


def table_cell(v, fmt=".4f") -> str:
    """One cell of a terminal table: ``-`` for a missing or non-finite number, ``stable`` /
    ``UNSTABLE`` for a verdict, ``fmt`` for a float."""
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "stable" if v else "UNSTABLE"
    if isinstance(v, float):
        return format(v, fmt) if math.isfinite(v) else "-"
    return str(v)
