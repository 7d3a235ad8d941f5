"""``grpo-theory compare LOG LOG ...``: questions about a family of runs that differ in one knob."""

from __future__ import annotations

from grpo_theory.cli._common import number
from grpo_theory.cli.model_options import add_model_options, model_from_options

NAME = "compare"
HELP = ("Compare a family of runs differing in one knob: group-size invariance and the 1/G "
        "fluctuation law, or the time-scale law in model size, learning rate or refresh interval.")


def add_arguments(parser) -> None:
    from grpo_theory.cli.fit import add_force_argument
    from grpo_theory.runs.compare import BY

    parser.add_argument("logs", metavar="LOG", nargs="+", help="training logs of the family "
                        "(any format `fit` reads), at least 2")
    parser.add_argument("--by", required=True, choices=BY, help="the knob the runs differ in")
    parser.add_argument("--values", default=None, metavar="V1,V2,...",
                        help="the knob's value for each log, in order (default: read from the "
                             "logs' configs)")
    parser.add_argument("--metric", default=None, help="reward metric (default: the logs' reward)")
    add_model_options(parser, ("variant",), fields=("normalization",))
    parser.add_argument("--fresh-fraction", type=number, default=None, metavar="PHI",
                        help="K_f/K of the runs, for the refresh-interval prediction (default: "
                             "the range over [0, 1])")
    parser.add_argument("--plot", default=None, metavar="FILE",
                        help="write a figure of the family with the fitted law to FILE (.png, "
                             ".pdf, .svg, ...)")
    add_force_argument(parser)
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def call(args):
    from grpo_theory.runs.compare import compare
    from grpo_theory.validate import ParameterError, check_output_file, figure_formats

    if args.plot:       # checked before any work: format, directory, an earlier figure
        check_output_file("--plot", args.plot, formats=figure_formats(), force=args.force)

    values = None
    if args.values is not None:
        try:
            values = [float(v) for v in args.values.split(",")]
        except ValueError:
            raise ParameterError("--values", args.values, "comma-separated numbers") from None
    return compare(args.logs, by=args.by, values=values, metric=args.metric,
                   normalization=model_from_options(args).normalization,
                   fresh_fraction=args.fresh_fraction, plot=args.plot)
