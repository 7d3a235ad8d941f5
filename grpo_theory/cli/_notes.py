"""Options that do nothing in the combination given say so (one ``note:`` line each, on
stderr, so ``--json`` output stays machine-readable), as the model's options do
(:meth:`grpo_theory.model.GRPOModel.unused_notes`): neither required nor refused, but never
silently ignored."""

from __future__ import annotations

import sys

#: command -> (option dest, the dest it needs, the note), for options that act only with another
UNUSED = {
    "check-config": (
        ("from_log_lr", "from_log", "--from-log-lr is not used without --from-log (it is the "
                                    "learning rate of that earlier run)"),
        ("from_log_config", "from_log", "--from-log-config is not used without --from-log (it is "
                                        "the config of that earlier run)"),
        ("metric", "from_log", "--metric is not used without --from-log (it names the reward of "
                               "that earlier run's log)"),
    ),
    "simulate": (("force", "out", "--force is not used without --out (nothing is written)"),),
    "derive": (("force", "out", "--force is not used without --out (nothing is written)"),),
    "deepnet": (("force", "out", "--force is not used without --out (nothing is written)"),),
    "lab": (("force", "out", "--force is not used without --out (nothing is written)"),),
    "fit": (("force", "plot", "--force is not used without --plot (nothing is written)"),),
    "compare": (("force", "plot", "--force is not used without --plot (nothing is written)"),),
}


def unused_options(command: str, args) -> list[str]:
    """The notes for the options of ``args`` that ``command`` does not use as given."""
    out = []
    for dest, needs, text in UNUSED.get(command, ()):
        if getattr(args, dest, None) not in (None, False) and not getattr(args, needs, None):
            out.append(text)
    if command == "lab" and getattr(args, "quick", False) and args.experiment not in ("all",
                                                                                       "refresh"):
        out.append(f"the experiment {args.experiment!r} is not used with --quick (the quick run "
                   "is its own fixed set; --quick refresh: its refresh bracket alone)")
    return out


def print_notes(command: str, args) -> None:
    for text in unused_options(command, args):
        print(f"grpo-theory {command}: note: {text}", file=sys.stderr)
