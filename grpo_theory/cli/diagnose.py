"""``grpo-theory diagnose LOG``: collapse, oscillation, concentration, hacking and degeneracy checks."""

from __future__ import annotations

from grpo_theory.cli.fit import add_log_arguments, load_log

NAME = "diagnose"
HELP = ("Diagnose a training log: advantage degeneracy, policy concentration, "
        "entropy explosion, reward hacking, dynamical instability; n/a where a check cannot run.")


def add_arguments(parser) -> None:
    add_log_arguments(parser)
    parser.add_argument("--group-size", type=int, default=None, metavar="G",
                        help="group size G (default: from the log's config, e.g. verl rollout.n)")


def call(args):
    from grpo_theory.runs.diagnostics import diagnose

    return diagnose(load_log(args), args.metric, args.group_size)
