"""``grpo-theory diagnose LOG``: advantage degeneracy, policy concentration, reward hacking, instability."""

from __future__ import annotations

import json

from grpo_theory.cli.fit import add_log_arguments, load_log

NAME = "diagnose"
HELP = ("Diagnose a training log (THEORY.md §5): advantage degeneracy, policy concentration, "
        "reward hacking, dynamical instability.")


def add_arguments(parser) -> None:
    add_log_arguments(parser)
    parser.add_argument("--group-size", type=int, default=None, metavar="G",
                        help="group size G (default: from the log's config, e.g. verl rollout.n)")


def run(args) -> int:
    from grpo_theory.runs.diagnostics import diagnose

    log = load_log(args)
    result = diagnose(log, args.metric, args.group_size)
    if args.json:
        print(json.dumps(result, indent=2, allow_nan=False))
        return 0
    print(f"{result['source']} ({result['format']}), reward metric {result['metric']}, "
          f"group size {result['group_size'] if result['group_size'] is not None else 'unknown'}")
    for w in result["warnings"]:
        print(f"  warning: {w}")
    for name, d in result["diagnostics"].items():
        mark = "FLAG" if d["flag"] else "ok  "
        score = "n/a" if d["score"] is None else f"{d['score']:.3g}"
        print(f"  [{mark}] {name} (score {score}): {d['evidence']}")
    return 0
