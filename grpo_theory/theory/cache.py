"""Where the derivation chain's records live on disk, without sympy.

The disk cache of :mod:`grpo_theory.theory.derived` keeps one directory per chapter, named by a
hash of what the chapter's derivations depend on (:func:`_chapter_hash`: its source files, the
theory modules it imports, the shared modules and the sympy version).  Finding a record's
file needs none of sympy's machinery, so this module imports neither sympy nor the chapters:
a cached ``grpo-theory derive`` reads its printed summaries (beside the records) and the
chapter's list of names (:func:`chapter_names`) without loading sympy at all.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
from importlib import metadata
from pathlib import Path

__all__ = ["chapter_names", "is_cached", "side_cache_path", "store_chapter_names",
           "write_cache_file"]


@functools.cache
def _sympy_version() -> str:
    """The installed sympy's version (its distribution's metadata: ``sympy.__version__``
    without importing sympy)."""
    try:
        return metadata.version("sympy")
    except metadata.PackageNotFoundError:     # pragma: no cover - sympy without its metadata
        import sympy

        return sympy.__version__


def _cache_base() -> Path | None:
    setting = os.environ.get("GRPO_THEORY_CACHE", "")
    if setting.strip().lower() in {"0", "false", "off", "no"}:
        return None
    if setting:
        return Path(setting)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "grpo_theory"


_THEORY_DIR = Path(__file__).parent
_SHARED_SOURCES = ("derived", "symbols", "printing", "cache")
_IMPORT_RE = re.compile(r"grpo_theory\.theory(?:\.(\w+)| import ([\w, ]+))")


def _source_files(module: str) -> list[Path]:
    """The files of a theory module: ``theory/<module>.py``, or every ``.py`` file of the
    package ``theory/<module>/`` (a chapter split by concept); empty when neither exists."""
    path = _THEORY_DIR / module
    if path.is_dir():
        return sorted(path.rglob("*.py"))
    single = path.with_suffix(".py")
    return [single] if single.exists() else []


def _theory_imports(module: str) -> set[str]:
    """Theory modules (top-level names under ``grpo_theory.theory``) that ``module`` imports,
    read from its source files."""
    found = set()
    for file in _source_files(module):
        for a, b in _IMPORT_RE.findall(file.read_text()):
            names = [a] if a else [n.strip().split(" as ")[0] for n in b.split(",")]
            found.update(n for n in names if _source_files(n))
    return found


@functools.cache
def _chapter_hash(chapter: str) -> str:
    """Hash of what a chapter's derivations depend on: its source files (all files of a
    chapter split into a package), the theory modules it imports (transitively), the
    registry and the symbols, and the sympy version.  Editing one chapter re-derives that
    chapter and those that import it, not the whole chain."""
    seen, todo = set(), [chapter]
    while todo:
        m = todo.pop()
        if m in seen or not _source_files(m):
            continue
        seen.add(m)
        todo.extend(_theory_imports(m) - seen)
    h = hashlib.sha256(_sympy_version().encode())
    for name in sorted(seen | set(_SHARED_SOURCES)):
        for file in _source_files(name):
            h.update(file.relative_to(_THEORY_DIR).as_posix().encode())
            h.update(file.read_bytes())
    return h.hexdigest()[:16]


def _chapter_dir(chapter: str) -> Path | None:
    """The chapter's directory in the disk cache, named by its hash (``None`` without a cache)."""
    base = _cache_base()
    return None if base is None else base / chapter / _chapter_hash(chapter)


def _cache_path(name: str) -> Path | None:
    folder = _chapter_dir(name.split(".")[0])
    return None if folder is None else folder / f"{name}.pkl"


def side_cache_path(name: str, tag: str) -> Path | None:
    """A file beside ``name``'s disk-cache entry, for something computed from the record alone
    (``tag`` names it and must change with whatever else it depends on); ``None`` without a
    disk cache.  It lives in the chapter's hashed directory, so it goes stale with the record."""
    path = _cache_path(name)
    return None if path is None else path.with_name(f"{name}.{tag}")


def is_cached(name: str) -> bool | None:
    """Whether ``name`` is in the disk cache (``None`` when the cache is disabled)."""
    path = _cache_path(name)
    return None if path is None else path.exists()


def write_cache_file(path: Path, data: bytes) -> None:
    """Write ``data`` to the cache file ``path`` atomically (a temporary file of this process,
    then ``os.replace``: a reader never sees half a file); a cache that cannot be written is
    skipped."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.tmp{os.getpid()}")
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except OSError:
        pass


def _names_path(chapter: str) -> Path | None:
    folder = _chapter_dir(chapter)
    return None if folder is None else folder / "names.json"


def chapter_names(chapter: str) -> list[str] | None:
    """The names of ``chapter``'s records in registration order, as the last process that
    imported the chapter wrote them (:func:`store_chapter_names`), or None (no cache, not
    written yet, or written for other source files: the directory is the chapter's hash)."""
    path = _names_path(chapter)
    if path is None or not path.exists():
        return None
    try:
        names = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return names if isinstance(names, list) and all(isinstance(n, str) for n in names) else None


def store_chapter_names(chapter: str, names: list[str]) -> None:
    """Keep ``chapter``'s record names (read by :func:`chapter_names`)."""
    path = _names_path(chapter)
    if path is not None:
        write_cache_file(path, json.dumps(list(names)).encode("utf-8"))
