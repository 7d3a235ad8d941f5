"""``grpo-theory simulate``: direct GRPO simulation of the softmax bandit (L0)."""

from __future__ import annotations

import argparse

from grpo_theory.cli._common import number
from grpo_theory.cli.model_options import add_model_options, model_from_options
from grpo_theory.validate import ParameterError, check_int, check_output_file

NAME = "simulate"
HELP = ("Simulate an ensemble of GRPO runs of a model on the softmax bandit and report the "
        "per-step ensemble mean and variance of the reward.")


def simulate(*args, **kwargs):
    """:func:`grpo_theory.simulation.simulate`, imported at the call (the other commands do not
    load the simulator and scipy for this command's options)."""
    from grpo_theory.simulation.engine import simulate as run

    return run(*args, **kwargs)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from grpo_theory.simulation.engine import MAX_DIVERGENCE_BOUND

    add_model_options(parser)
    s = parser.add_argument_group("simulation")
    a = s.add_argument
    a("--steps", type=number, default=200, help="optimizer steps")
    a("--runs", type=number, default=256, help="independent runs in the ensemble")
    a("--seed", type=number, default=0, help="random seed")
    a("--p0", type=number, default=None, help="starting success probability (default p_ref)")
    a("--difficulty-spread", type=number, default=0.0,
      help="sigma of the per-prompt logit offset of the correct actions")
    a("--divergence-bound", type=number, default=MAX_DIVERGENCE_BOUND,
      help="a run whose logit spread max-min exceeds this (or is not finite) counts as "
           f"diverged and is frozen; in (0, {MAX_DIVERGENCE_BOUND:g}]")
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    parser.add_argument("--out", metavar="FILE.csv", default=None,
                        help="write per-step ensemble mean/var/sem as CSV (read by `compare`)")
    parser.add_argument("--force", action="store_true",
                        help="overwrite an existing --out file (refused otherwise)")


def call(args) -> "EnsembleSummary":  # noqa: F821 - imported here, not at the top
    from grpo_theory.simulation.result import EnsembleSummary

    model = model_from_options(args)
    steps = check_int("steps", args.steps, low=1)
    if args.out:   # before any work: never overwrite an earlier output silently
        check_output_file("--out", args.out, force=args.force)
    result = simulate(model, steps=steps, runs=args.runs, seed=args.seed, p0=args.p0,
                      difficulty_spread=args.difficulty_spread,
                      divergence_bound=args.divergence_bound)
    if args.out:
        try:
            result.to_csv(args.out)
        except OSError as exc:
            raise ParameterError("--out", args.out, f"a writable file path ({exc.strerror})") \
                from None
    return EnsembleSummary(result, args.out)
