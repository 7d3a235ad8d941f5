"""``grpo-theory collapse-risk``: probability of collapse to a degenerate policy within N steps."""

from __future__ import annotations

import argparse

from grpo_theory.cli._common import number
from grpo_theory.cli.model_options import add_model_options, model_from_options

NAME = "collapse-risk"
HELP = ("Probability that a GRPO configuration reaches a degenerate policy (every group "
        "zero-variance) within N steps, the mean first-passage time, the basin depth, and "
        "the single change that lowers the risk most.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_model_options(parser)
    parser.add_argument("--steps", type=number, default=1000, help="horizon N in optimizer steps")
    parser.add_argument("--degenerate-level", type=number, default=None,
                        help="delta: collapsed once p < delta or p > 1 - delta (default 1/(10 G))")
    parser.add_argument("--json", action="store_true", help="print JSON")


def call(args):
    from grpo_theory.theory.collapse import collapse_risk

    return collapse_risk(model_from_options(args), steps=args.steps,
                         degenerate_level=args.degenerate_level)
