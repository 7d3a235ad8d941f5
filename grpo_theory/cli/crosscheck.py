"""``grpo-theory crosscheck``: the theory levels against the direct simulation.

Exit code 0 when every pass/fail check passes ("info" checks never fail), 1 otherwise.
"""

from __future__ import annotations

import argparse

NAME = "crosscheck"
HELP = ("Cross-check L1 mean-field, L2 exact discrete and L3 oscillator predictions against "
        "the direct GRPO simulation (mean trajectories, group-size noise, refresh threshold, "
        "plateaus); exit 1 if a check fails.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true",
                        help="small ensembles (< 60 s); default is the full run (minutes)")
    parser.add_argument("--seed", type=int, default=0, help="root seed (default 0)")
    parser.add_argument("--json", action="store_true",
                        help='print {"checks": [...], "passed": bool} instead of a table')


def call(args):
    from grpo_theory.crosscheck import run_crosschecks

    return run_crosschecks(quick=args.quick, seed=args.seed)
