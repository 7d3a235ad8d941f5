"""The ``grpo-theory`` command line.

Each sub-command lives in its own module under :mod:`grpo_theory.commands`
and exposes ``NAME``, ``HELP``, ``add_arguments(parser)`` and ``run(args) -> int``.
Human-readable output by default, ``--json`` for scripts.  Bad input exits
with code 2 and a single line naming the parameter, its value and what is
allowed.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from .validate import ParameterError

# Sub-command modules, in the order shown by --help.
COMMAND_MODULES = [
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
]


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2 (argparse default is also 2)
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="grpo-theory",
                     description="Symbolic-numeric theory workbench for GRPO training dynamics.")
    from . import __version__

    parser.add_argument("--version", action="version", version=f"grpo-theory {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for modname in COMMAND_MODULES:
        try:
            mod = importlib.import_module(f".commands.{modname}", __package__)
        except ModuleNotFoundError as exc:  # a command not built yet in this checkout
            if exc.name == f"{__package__}.commands.{modname}":
                continue
            raise
        p = sub.add_parser(mod.NAME, help=mod.HELP, description=mod.HELP)
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 0
    try:
        return int(args._run(args) or 0)
    except ParameterError as exc:
        print(f"grpo-theory {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
