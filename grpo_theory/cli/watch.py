"""``grpo-theory watch LOG``: follow a growing log and print each warning as it fires."""

from __future__ import annotations

from dataclasses import dataclass

from grpo_theory.results import Result

NAME = "watch"
HELP = ("Follow a growing training log (TRL, verl, CSV/JSONL) and print each diagnostic "
        "warning the moment it first fires.")


def add_arguments(parser) -> None:
    from grpo_theory.runs.logs import FORMATS

    parser.add_argument("log", metavar="LOG", help="the log being written")
    parser.add_argument("--format", default="auto", choices=("auto",) + FORMATS)
    parser.add_argument("--metric", default=None, help="reward metric (default per format)")
    parser.add_argument("--group-size", type=int, default=None, metavar="G")
    parser.add_argument("--interval", type=float, default=10.0, help="seconds between polls")
    parser.add_argument("--max-polls", type=int, default=None,
                        help="stop after this many polls (default: follow until interrupted)")
    parser.add_argument("--json", action="store_true", help="the warnings as JSON at the end")


@dataclass(frozen=True)
class WatchReport(Result):
    """The warnings that fired while the log was followed."""

    log: str
    warnings: list

    def __str__(self) -> str:
        return f"{self.log}: {len(self.warnings)} warning(s)"


def call(args):
    from grpo_theory.runs.watch import watch

    fired = []
    try:
        for w in watch(args.log, format=None if args.format == "auto" else args.format,
                       metric=args.metric, group_size=args.group_size, interval=args.interval,
                       max_polls=args.max_polls):
            fired.append(w)
            if not args.json:
                print(w, flush=True)
    except KeyboardInterrupt:
        pass
    return WatchReport(log=args.log, warnings=fired)
