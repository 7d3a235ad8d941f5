"""Argument helpers shared by the command modules."""

import os
from pathlib import Path

def number(text):
    """argparse ``type`` that parses an int or a float but defers validation to the library.

    Text that is not a number is passed through unchanged, so the library's
    ``ParameterError`` -- which names the parameter, the value and what is
    allowed -- produces the message (exit code 2) instead of argparse's generic one.
    """
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text


def output_dir(name: str, path) -> Path:
    """Create (if needed) and return an output directory before any work is done.

    A regular file, or a place where the directory cannot be created or written, is
    refused with a ``ParameterError`` naming ``name`` (the CLI prints one line and exits
    2); nothing else has been written at that point."""
    from grpo_theory.validate import ParameterError

    p = Path(path)
    if p.exists() and not p.is_dir():
        raise ParameterError(name, str(path), "a directory (this path is an existing file)")
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ParameterError(name, str(path), f"a directory that can be created ({exc.strerror})") \
            from None
    if not os.access(p, os.W_OK | os.X_OK):
        raise ParameterError(name, str(path), "a writable directory")
    return p
