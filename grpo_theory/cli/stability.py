"""``grpo-theory stability``: exact (L2) stability at a fixed point, with its fresh/stale split."""

from __future__ import annotations

import argparse

from grpo_theory.cli._common import number
from grpo_theory.cli.model_options import add_model_options, model_from_options, model_options_given
from grpo_theory.model import FIELD_GROUPS
from grpo_theory.validate import ParameterError

NAME = "stability"
HELP = ("Exact discrete (L2) stability of a GRPO model at the fixed point of its variant (its "
        "stiffness and fresh/stale split computed here) or at a given --stiffness: spectral "
        "radius of the refresh-window monodromy (or delay recurrence), binding Jury condition, "
        "exact thresholds, the published rule and whether it is safe, the continuous (L3) "
        "approximation with its error, and the stationary fluctuation; Adam through its "
        "self-consistent heavy-ball reduction.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_model_options(parser)
    s = parser.add_argument_group("given stiffness (instead of the variant's fixed point)")
    s.add_argument("--stiffness", type=number, default=None, metavar="K",
                   help="K > 0, -F'(z*) per unit learning rate")
    s.add_argument("--fresh-fraction", type=number, default=None, metavar="PHI",
                   help="phi = K_f/K, the part of K acting on the current iterate (any real; "
                        "negative where the exact-KL force is destabilizing; `fixed-points` "
                        "reports it). Default 0: all stale, whatever the surrogate")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")


def call(args):
    from grpo_theory.theory.stability import stability

    if args.stiffness is not None:
        given = {k: v for k, v in model_options_given(args).items()
                 if k in FIELD_GROUPS["variant"]}
        if given:
            name = sorted(given)[0]
            raise ParameterError(name, given[name], "omitted with --stiffness (give either a "
                                 "variant or a stiffness with its --fresh-fraction)")
    return stability(model_from_options(args), stiffness=args.stiffness,
                     fresh_fraction=args.fresh_fraction)
