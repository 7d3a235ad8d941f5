"""The ``grpo-theory`` command line: parse -> one library call -> print the result.

Each sub-command is a module of :mod:`grpo_theory.cli` exposing ``NAME``, ``HELP``,
``add_arguments(parser)`` and ``call(args) -> Result``: one call of the public API
returning a typed :class:`~grpo_theory.results.Result`.  The core prints
``str(result)`` (or ``result.to_dict()`` as JSON with ``--json``) and exits with
``result.exit_code``.  Bad input exits with code 2 and one line naming the
parameter, its value and what is allowed; nothing is written and no traceback is
shown; no command at all prints the help and exits with code 2.  A closed pipe
(``grpo-theory derive --json | head -1``) ends quietly.  Ctrl-C ends any command with one line
and exit code 130 (the shell's 128 + SIGINT), no traceback; the writers build their output in
a temporary sibling (:func:`grpo_theory.outputs.atomic_output`), so nothing half-written is
left (``watch`` catches it itself: Ctrl-C is how it is stopped).  The commands that take a model
get its options from :func:`grpo_theory.cli.model_options.add_model_options`.  A command
module imports its library inside ``call`` (the laziness is the point: ``--help`` and a bad
option answer without loading sympy and the derivation chain).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys

from grpo_theory import __version__
from grpo_theory.validate import ParameterError

#: Sub-command modules, in the order shown by --help.
COMMAND_MODULES = (
    "report",
    "derive",
    "stability",
    "fixed_points",
    "trajectory",
    "simulate",
    "crosscheck",
    "fit",
    "diagnose",
    "check_config",
    "watch",
    "compare",
    "collapse_risk",
    "deepnet",
    "lab",
)


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2 (argparse default is also 2)
        self.exit(2, f"{self.prog}: error: {message}\n")


class _Formatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows each option's default in --help (except where it is None or a flag)."""

    def _get_help_string(self, action):
        text = action.help or ""
        if action.default in (None, False, argparse.SUPPRESS) or "default" in text.lower():
            return action.help  # no default, or the help text already states it
        return super()._get_help_string(action)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every sub-command; ``only``: the one sub-command whose options are
    added (the others keep their name and help: what the top-level ``--help`` shows), so a
    command does not import the libraries that other commands' options read."""
    parser = _Parser(prog="grpo-theory", formatter_class=_Formatter,
                     description="Symbolic-numeric theory workbench for GRPO training dynamics.")
    parser.add_argument("--version", action="version", version=f"grpo-theory {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for modname in COMMAND_MODULES:
        mod = importlib.import_module(f"grpo_theory.cli.{modname}")
        p = sub.add_parser(mod.NAME, help=mod.HELP, description=mod.HELP,
                           formatter_class=_Formatter)
        if only is None or mod.NAME == only:
            mod.add_arguments(p)
        p.set_defaults(_module=mod)
    return parser


def _emit(args, result) -> int:
    if getattr(args, "json", False):
        print(result.to_json())
    else:
        print(result)
    return int(result.exit_code)


def main(argv=None) -> int:
    try:
        return _main(argv)
    except KeyboardInterrupt:
        # Ctrl-C: one line and the shell's code for SIGINT; the writers removed their
        # temporary output on the way out (grpo_theory.outputs)
        with contextlib.suppress(Exception):
            sys.stdout.flush()
        command = next((a for a in (sys.argv[1:] if argv is None else argv)
                        if a in _COMMAND_NAMES), None)
        print(f"grpo-theory{' ' + command if command else ''}: interrupted", file=sys.stderr)
        return 130


#: the sub-commands' names, for the interrupt message
_COMMAND_NAMES = frozenset(m.replace("_", "-") for m in COMMAND_MODULES)


def _main(argv=None) -> int:
    words = sys.argv[1:] if argv is None else list(argv)
    command = next((w for w in words if not w.startswith("-")), None)
    # no command (``--version``, ``--help``, nothing): no command's options are needed, and
    # adding them all would import every library they read
    parser = build_parser(only=command or "")
    args = parser.parse_args(argv)
    mod = getattr(args, "_module", None)
    if mod is None:              # no command: the help, as a usage error (exit 2)
        parser.print_help(sys.stderr)
        return 2
    from grpo_theory.cli._notes import print_notes

    try:
        code = _emit(args, mod.call(args))
        print_notes(mod.NAME, args)  # options that did nothing as given say so (stderr)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's final flush
        return code
    except ParameterError as exc:   # bad input: 2; a missing optional extra (MissingExtra): 1
        print(f"grpo-theory {args.command}: error: {exc}", file=sys.stderr)
        return getattr(exc, "exit_code", 2)
    except BrokenPipeError:
        # the reader went away (e.g. `| head`): stop quietly, as other CLI tools do
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
