"""``grpo-theory fit LOG``: fit the reward curve of a training log with the theory's models and forecast it."""

from __future__ import annotations

from grpo_theory.cli._common import number
from grpo_theory.validate import MissingParameter, ParameterError

NAME = "fit"
HELP = ("Fit a training log's reward curve (single exponential, L3 oscillator, mean-field, "
        "difficulty mixture); R^2, AIC/BIC, standard errors, mechanistic reading, forecast.")


def add_log_arguments(parser) -> None:
    """Arguments shared by ``fit`` and ``diagnose``: the log and how to read it."""
    from grpo_theory.runs.logs import FORMATS

    parser.add_argument("log", metavar="LOG", nargs="?", default=None,
                        help="log file: TRL trainer_state.json or console output, verl console log "
                        "or JSONL, W&B CSV export, generic CSV/JSONL (or a JSON array of per-step "
                        "objects) with a step column")
    parser.add_argument("--example", action="store_true",
                        help="use the real verl GRPO log that ships with the package instead of "
                             "LOG (its path is the first word of the output)")
    parser.add_argument("--format", default="auto", choices=("auto",) + FORMATS,
                        help="log format (default: detect from the content)")
    parser.add_argument("--metric", default=None, help="reward metric (default per format: TRL "
                        "'reward', verl 'critic/score/mean')")
    parser.add_argument("--run", default=None, help="run name in a multi-run W&B CSV")
    parser.add_argument("--step-column", default=None, help="step column of a generic CSV/JSONL")
    parser.add_argument("--rename", action="append", default=[], metavar="OLD=NEW",
                        help="rename a column/metric (repeatable), e.g. --rename acc=reward")
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def rename_map(items) -> dict:
    """``--rename OLD=NEW`` options (repeatable) as a dict."""
    rename = {}
    for item in items:
        old, sep, new = item.partition("=")
        if not sep or not old or not new:
            raise ParameterError("--rename", item, "OLD=NEW")
        rename[old] = new
    return rename


def load_log(args):
    from grpo_theory.runs.logs import read_log

    if args.example:
        if args.log is not None:
            raise ParameterError("--example", args.log, "given without LOG (it replaces LOG)")
        from grpo_theory.data import example_log

        args.log = str(example_log())
    elif args.log is None:
        raise MissingParameter("LOG", "a log file, or --example for the bundled real log")

    rename = rename_map(args.rename)
    return read_log(args.log, args.format, run=args.run, step_column=args.step_column,
                    rename=rename or None)


def add_arguments(parser) -> None:
    from grpo_theory.runs.fitting import MODEL_NAMES

    add_log_arguments(parser)
    parser.add_argument("--train-fraction", type=number, default=None, metavar="F",
                        help="fit on the first fraction F of the steps and forecast the rest")
    parser.add_argument("--models", default=None,
                        help="comma-separated subset of " + ", ".join(MODEL_NAMES))
    parser.add_argument("--reward", default="auto", choices=("auto", "binary", "dense"),
                        help="the reward's kind: binary (a success rate in [0, 1]), dense (any "
                        "other score: the mean-field families are off), or auto (binary when "
                        "every value lies in [0, 1])")
    parser.add_argument("--plot", default=None, metavar="FILE",
                        help="write a figure (data, fits, forecast band) to FILE (.png, .pdf, "
                             ".svg, ...)")
    add_force_argument(parser)


def add_force_argument(parser) -> None:
    """``--force``: the one switch that lets a command overwrite an existing output."""
    parser.add_argument("--force", action="store_true",
                        help="overwrite an existing output file (refused otherwise)")


def call(args):
    """Read the log, fit (and forecast) it: a :class:`~grpo_theory.runs.fitting.FitReport`."""
    from grpo_theory.runs.fitting import fit_log, plot_fit
    from grpo_theory.validate import check_output_file, figure_formats

    if args.plot:       # checked before any work: format, directory, an earlier figure
        check_output_file("--plot", args.plot, formats=figure_formats(), force=args.force)
    log = load_log(args)
    models = [m.strip() for m in args.models.split(",") if m.strip()] if args.models else None
    report = fit_log(log, args.metric, train_fraction=args.train_fraction, models=models,
                     reward=args.reward)
    if args.plot:
        plot_fit(report, args.plot, title=f"{log.source}: {report.metric}")
    return report
