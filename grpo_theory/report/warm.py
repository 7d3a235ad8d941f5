"""The report's warm path: a stage whose inputs did not change is read back, not recomputed.

A report stage (a figure's data twin and the figure files drawn from it, the key numbers,
the cross-checks' simulations, the PDF of ``equations.tex``) is a deterministic function of
the package's code and its arguments (every simulation is seeded).  :func:`reuse` keeps its
result on disk under the derivation cache's directory (``GRPO_THEORY_CACHE``, see
:mod:`grpo_theory.theory.derived`), keyed by

- a hash of every file of the installed package (its code and its bundled data) and the
  versions of Python, numpy, scipy, sympy, mpmath, matplotlib and torch (:func:`code_key`): any
  edit anywhere in the package recomputes every stage;
- the stage's name and the ``repr`` of its arguments (the model is a dataclass: its
  ``repr`` lists every field).

The files a stage writes into the output directory are kept with it and copied back.  Only
the stages of the :data:`KEEP_VERSIONS` most recently used code versions are kept
(:func:`prune`, after each new stage is written).
``GRPO_THEORY_CACHE=0`` turns the reuse off with the derivation cache.
"""

from __future__ import annotations

import functools
import hashlib
import os
import pickle
import shutil
import sys
from importlib import metadata, resources
from pathlib import Path

from grpo_theory.theory.derived import _cache_base

__all__ = ["code_key", "prune", "reuse", "reuse_dir"]

#: the package's own directory (every file in it is hashed)
_PACKAGE = Path(str(resources.files("grpo_theory"))).resolve()
_VERSIONED = ("numpy", "scipy", "sympy", "mpmath", "matplotlib", "torch")


@functools.cache
def code_key() -> str:
    """Hash of every file of the package (sorted by path) and the versions it computes with."""
    h = hashlib.sha256(sys.version.encode())
    for dist in _VERSIONED:
        try:
            h.update(f"{dist} {metadata.version(dist)}".encode())
        except metadata.PackageNotFoundError:
            h.update(f"{dist} absent".encode())
    for f in sorted(_PACKAGE.rglob("*")):
        if f.is_file() and "__pycache__" not in f.parts and f.suffix not in {".pyc", ".pyo"}:
            h.update(f.relative_to(_PACKAGE).as_posix().encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


def reuse_dir() -> Path | None:
    """The directory of this code's reusable stages (``None`` when the cache is off)."""
    base = _cache_base()
    return None if base is None else base / "report" / code_key()


def _swap_paths(value, old: Path, new: Path):
    """``value`` with every Path inside ``old`` moved to ``new`` (lists, tuples, dicts)."""
    if isinstance(value, Path):
        try:
            return new / value.relative_to(old)
        except ValueError:
            return value
    if isinstance(value, list):
        return [_swap_paths(v, old, new) for v in value]
    if isinstance(value, tuple):
        return tuple(_swap_paths(v, old, new) for v in value)
    if isinstance(value, dict):
        return {k: _swap_paths(v, old, new) for k, v in value.items()}
    return value


def _written(value, out_dir: Path) -> list[Path]:
    """The files inside ``out_dir`` that ``value`` names (the files a stage wrote)."""
    if isinstance(value, Path):
        try:
            value.relative_to(out_dir)
        except ValueError:
            return []
        return [value] if value.is_file() else []
    if isinstance(value, (list, tuple)):
        return [p for v in value for p in _written(v, out_dir)]
    if isinstance(value, dict):
        return [p for v in value.values() for p in _written(v, out_dir)]
    return []


#: the code versions whose stages are kept (the most recently used ones; each is ~2 MB)
KEEP_VERSIONS = 4


def prune(base: Path, keep: int = KEEP_VERSIONS) -> list[Path]:
    """Remove the stage directories of all but the ``keep`` most recently used code versions
    beside ``base`` (``base`` itself is always kept); returns what was removed."""
    try:
        others = sorted((d for d in base.parent.iterdir() if d.is_dir() and d != base
                         and ".tmp" not in d.name),
                        key=lambda d: d.stat().st_mtime, reverse=True)
    except OSError:
        return []
    removed = others[max(keep - 1, 0):]
    for d in removed:
        shutil.rmtree(d, ignore_errors=True)
    return removed


def reuse(name: str, fn, *args, out_dir=None, notes=None, reused=None, **kwargs):
    """``fn(*args, **kwargs)``, or its result from an earlier run of the same code with the
    same arguments.

    ``out_dir``: the stage writes files there (passed to ``fn`` as its first argument); the
    files its result names are kept and copied back.  ``notes``: a list the stage appends to
    (passed as the keyword ``notes``); what it appended is kept and appended again.
    ``reused``: a list that receives ``name`` when the result was read back."""
    base = reuse_dir()
    if base is None:
        call_args = ((out_dir,) if out_dir is not None else ()) + args
        return fn(*call_args, **kwargs, **({"notes": notes} if notes is not None else {}))
    key = hashlib.sha256(repr((name, args, sorted(kwargs.items()))).encode()).hexdigest()[:16]
    entry = base / f"{name}-{key}"
    out = Path(out_dir).resolve() if out_dir is not None else None
    try:
        with open(entry / "result.pkl", "rb") as fh:
            result, added = pickle.load(fh)
        if out is not None:
            files = entry / "files"
            for f in files.rglob("*"):
                if f.is_file():
                    target = out / f.relative_to(files)
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(f, target)
            result = _swap_paths(result, files, out)
        if notes is not None:
            notes.extend(added)
        if reused is not None:
            reused.append(name)
        os.utime(base)                  # this version was used: pruning keeps the recent ones
        return result
    except Exception:  # absent, stale or unreadable: computed again
        pass
    added: list = []
    call_args = ((out,) if out is not None else ()) + args
    result = fn(*call_args, **kwargs, **({"notes": added} if notes is not None else {}))
    if notes is not None:
        notes.extend(added)
    try:
        tmp = entry.with_name(entry.name + f".tmp{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        kept = result
        if out is not None:
            for p in _written(result, out):
                target = tmp / "files" / p.relative_to(out)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(p, target)
            kept = _swap_paths(result, out, entry / "files")
        with open(tmp / "result.pkl", "wb") as fh:
            pickle.dump((kept, added), fh)
        shutil.rmtree(entry, ignore_errors=True)
        os.replace(tmp, entry)
        prune(base)
    except Exception:  # an unpicklable result or a full disk: nothing is kept
        shutil.rmtree(tmp, ignore_errors=True)
    return result
