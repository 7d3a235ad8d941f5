"""``grpo-theory report --out DIR [--full]``: write the paper-ready report (equations, figures,
cross-checks, report.md) for the built-in default model."""

from __future__ import annotations

import json

NAME = "report"
HELP = ("Write a report into DIR: equations.tex/.pdf of every derivation, references.bib, "
        "figures (PNG+PDF: phase diagrams, trajectories, 1/G law, bifurcations, real-log fit), "
        "cross-checks and report.md, for the default model (grpo_theory.report.DEFAULT_MODEL).")


def add_arguments(parser) -> None:
    parser.add_argument("--out", required=True, metavar="DIR", help="output directory (created)")
    parser.add_argument("--full", action="store_true",
                        help="larger ensembles and grids and the full cross-check run (slower)")
    parser.add_argument("--no-crosscheck", action="store_true",
                        help="skip the simulation cross-checks")
    parser.add_argument("--json", action="store_true",
                        help="print the written files and key numbers as JSON")


def run(args) -> int:
    from grpo_theory.report.build import build_report

    res = build_report(args.out, full=args.full, crosscheck=not args.no_crosscheck)
    if args.json:
        print(json.dumps({"out_dir": str(res.out_dir), "seconds": round(res.seconds, 1),
                          "files": {k: str(v) for k, v in res.files.items()},
                          "notes": res.notes}, indent=1))
        return 0
    fp = res.numbers["fixed_point"]
    print(f"report written to {res.out_dir} in {res.seconds:.0f} s ({len(res.files)} files)")
    print(f"  default model: p* = {fp['p']:.4f}, K = {fp['stiffness']:.4g}, "
          f"regime (L2) = {res.numbers['stability']['discrete_regime']}")
    print(f"  open {res.out_dir / 'report.md'}")
    for note in res.notes:
        print(f"  note: {note}")
    return 0
