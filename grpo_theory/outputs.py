"""Atomic outputs: every command that writes builds its output in a temporary sibling and moves
it into place at the end.

:func:`atomic_output` is the one helper every writer uses (``report``, ``derive --out``,
``simulate --out``, ``fit --plot``, ``compare --plot``, ``lab --out``, ``deepnet --out``)::

    with atomic_output(target, directory=True) as tmp:
        write_everything_into(tmp)
    # here target holds the complete output; after an exception (or Ctrl-C) nothing was written

The temporary sibling lives in the target's own directory (``.NAME.PID.XXXX.tmp``; a file keeps
its extension, so matplotlib still infers the format from it), so the final move is a rename
on one filesystem:

- a file: ``os.replace`` -- atomic, over an earlier file too (``--force``);
- a directory that does not exist yet: one ``os.rename`` -- atomic;
- an existing directory (``--force`` over an earlier output, or a directory the user made,
  which may hold files of their own): each new entry replaces its namesake (a file by
  ``os.replace``, a sub-directory by a rename after the earlier one is moved aside), and the
  entries of an earlier output named by ``stale`` that the new output does not have are
  removed (e.g. an ``equations.pdf`` of an earlier run when this run made none).  Ctrl-C is
  held back for the few renames of this step and delivered after it, so an interrupt cannot
  leave a mixture of two outputs.

A writer killed outright (SIGKILL) runs no handler: its sibling carries its process id
(``.NAME.PID.XXXX.tmp``) and the next write to the same target removes it once that process
is gone.

If the body raises (any exception, or ``KeyboardInterrupt``) the temporary sibling and any
parent directories created for it are removed and the exception propagates: a failed or
interrupted run leaves nothing behind, and the rerun needs no ``--force``.  Files and
directories get the permissions the umask gives a new file (``tempfile`` makes them private).
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import shutil
import signal
import tempfile
import threading
from pathlib import Path

__all__ = ["atomic_output", "relocate"]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _make_parents(parent: Path) -> list[Path]:
    """Create ``parent`` and its missing ancestors; the created ones, deepest first."""
    made = []
    probe = parent
    while not probe.exists():
        made.append(probe)
        probe = probe.parent
    parent.mkdir(parents=True, exist_ok=True)
    return made


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


@contextlib.contextmanager
def _interrupts_held():
    """Hold SIGINT back for the body (main thread only) and deliver it afterwards."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught = []
    try:
        previous = signal.signal(signal.SIGINT, lambda *_: caught.append(True))
    except (ValueError, OSError):   # pragma: no cover - no signals here
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught:
        raise KeyboardInterrupt


def _commit_dir(tmp: Path, target: Path, stale) -> None:
    if not target.exists():
        os.rename(tmp, target)
        return
    trash = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".old", dir=target.parent))
    try:
        new = {p.name for p in tmp.iterdir()}
        for name in sorted(new):
            src, dst = tmp / name, target / name
            if (dst.exists() or dst.is_symlink()) and (dst.is_dir() or src.is_dir()):
                os.rename(dst, trash / name)      # a directory cannot be replaced in one call
            os.replace(src, dst)
        for entry in list(target.iterdir()):      # an earlier output's leftovers
            if entry.name not in new and any(fnmatch.fnmatch(entry.name, s) for s in stale):
                os.rename(entry, trash / entry.name)
    finally:
        shutil.rmtree(trash, ignore_errors=True)
        shutil.rmtree(tmp, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:                 # another user's live process, or no way to tell: kept
        return True
    return True


def _remove_orphans(target: Path) -> None:
    """Remove the temporary siblings of ``target`` left by a writer that was killed outright
    (SIGKILL, a power cut: no handler ran). Their names (``.NAME.PID.XXXX.tmp``) carry the
    writer's process id; only those of processes that no longer exist are removed, so a
    concurrent writer keeps its own."""
    heads = sorted({f".{target.name}.", f".{target.stem}."}, key=len, reverse=True)
    with contextlib.suppress(OSError):
        for sibling in target.parent.iterdir():
            if ".tmp" not in sibling.name:
                continue
            head = next((h for h in heads if sibling.name.startswith(h)), None)
            pid = sibling.name[len(head):].split(".")[0] if head else ""
            if pid.isdigit() and not _alive(int(pid)):
                _remove(sibling)


@contextlib.contextmanager
def atomic_output(target, *, directory: bool = False, stale=()):
    """Yield a temporary sibling of ``target`` (a :class:`~pathlib.Path`; a new empty
    directory when ``directory``, else a file name with ``target``'s extension that does not
    exist yet) and move it to ``target`` when the body returns; remove it when the body
    raises.  ``stale``: glob patterns naming the files of an earlier output in an existing
    ``target`` directory that are removed when the new output does not have them."""
    target = Path(target).expanduser().absolute()
    made = _make_parents(target.parent)
    _remove_orphans(target)
    tmp = None
    try:
        if directory:
            tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.{os.getpid()}.", suffix=".tmp",
                                        dir=target.parent))
            os.chmod(tmp, 0o777 & ~_umask())
        else:
            fd, name = tempfile.mkstemp(prefix=f".{target.stem}.{os.getpid()}.",
                                        suffix=".tmp" + target.suffix, dir=target.parent)
            os.close(fd)
            tmp = Path(name)
            tmp.unlink()          # the writer creates it (some refuse an existing file)
        yield tmp
        with _interrupts_held():
            if directory:
                _commit_dir(tmp, target, stale)
            else:
                if not tmp.exists():
                    raise FileNotFoundError(f"the writer of {target} wrote nothing")
                os.chmod(tmp, 0o666 & ~_umask())
                os.replace(tmp, target)
    except BaseException:
        if tmp is not None:
            _remove(tmp)
        for d in made:            # deepest first; only the ones still empty
            with contextlib.suppress(OSError):
                d.rmdir()
        raise


def relocate(path, tmp, target):
    """``path`` (inside the temporary sibling ``tmp``) as it is named once moved to
    ``target``; other paths (and None) unchanged."""
    if path is None:
        return None
    p, tmp = Path(path), Path(tmp)
    try:
        return Path(target) / p.relative_to(tmp)
    except ValueError:
        return path
