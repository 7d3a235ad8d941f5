"""``grpo-theory watch LOG``: follow a growing log and print each warning as it fires."""

from __future__ import annotations

from dataclasses import dataclass

from grpo_theory.cli._common import number
from grpo_theory.cli.diagnose import GROUP_SIZE_DEFAULT
from grpo_theory.cli.model_options import add_model_options, model_from_options, model_options_given
from grpo_theory.results import Result

NAME = "watch"
HELP = ("Follow a growing training log (TRL state or console, verl, CSV/JSONL) and print each diagnostic "
        "warning the moment it first fires.")


def add_arguments(parser) -> None:
    from grpo_theory.runs.logs import FORMATS

    parser.add_argument("log", metavar="LOG", help="the log being written")
    parser.add_argument("--format", default="auto", choices=("auto",) + FORMATS,
                        help="log format (default: detect from the content at each read)")
    parser.add_argument("--metric", default=None, help="reward metric (default per format)")
    parser.add_argument("--rename", action="append", default=[], metavar="OLD=NEW",
                        help="rename a column/metric (repeatable), as for diagnose, e.g. "
                             "--rename acc=reward")
    add_model_options(parser, ("variant",), fields=("group_size",),
                      defaults={"group_size": GROUP_SIZE_DEFAULT})
    parser.add_argument("--interval", type=number, default=10.0, help="seconds between polls")
    parser.add_argument("--max-polls", type=number, default=None,
                        help="stop after this many polls (default: follow until interrupted)")
    parser.add_argument("--wait", action="store_true",
                        help="wait for a log that does not exist yet (a run about to start); "
                             "without it a missing log is an error")
    parser.add_argument("--json", action="store_true", help="the warnings as JSON at the end")


@dataclass(frozen=True)
class WatchReport(Result):
    """The warnings that fired while the log was followed."""

    log: str
    warnings: list
    polls: int = 0
    reads: int = 0

    def __str__(self) -> str:
        if not self.reads:
            return (f"{self.log}: not read in {self.polls} poll(s) (it did not appear, or "
                    "never held a complete record): no check ran")
        return f"{self.log}: {len(self.warnings)} warning(s) ({self.reads} read(s) in {self.polls} poll(s))"

    @property
    def exit_code(self) -> int:
        return 0 if self.reads else 1


def call(args):
    from grpo_theory.cli.fit import rename_map
    from grpo_theory.runs.watch import watch

    model_from_options(args)                   # validates a given group size
    rename = rename_map(args.rename) or None
    group_size = model_options_given(args).get("group_size")
    fired, state = [], {}
    try:
        for w in watch(args.log, format=None if args.format == "auto" else args.format,
                       metric=args.metric, group_size=group_size, interval=args.interval,
                       max_polls=args.max_polls, wait=args.wait, state=state,
                       rename=rename):
            fired.append(w)
            if not args.json:
                print(w, flush=True)
    except KeyboardInterrupt:
        pass
    return WatchReport(log=args.log, warnings=fired, polls=state.get("polls", 0),
                       reads=state.get("reads", 0))
