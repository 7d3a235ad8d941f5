"""``grpo-theory report --out DIR [--full]``: write the paper-ready report (equations, figures,
cross-checks, report.md) for the built-in default model."""

from __future__ import annotations

NAME = "report"
HELP = ("Write a report into DIR: equations.tex/.pdf of every derivation, references.bib, "
        "figures (PNG+PDF: phase diagrams, trajectories, 1/G law, bifurcations, real-log fit), "
        "the two-parameter bifurcation atlas, cross-checks, report.md and report.json, for the default "
        "model (grpo_theory.DEFAULT_MODEL); exit 1 if a cross-check or an atlas check fails.")


def add_arguments(parser) -> None:
    parser.add_argument("--out", required=True, metavar="DIR", help="output directory (created)")
    parser.add_argument("--full", action="store_true",
                        help="larger ensembles and grids and the full cross-check run (slower)")
    parser.add_argument("--no-crosscheck", action="store_true",
                        help="skip the simulation cross-checks")
    parser.add_argument("--json", action="store_true",
                        help="print the written files, key numbers and failures as JSON")
    parser.add_argument("--force", action="store_true",
                        help="overwrite an earlier report in DIR (refused otherwise)")


def call(args):
    """Build the report; a ``ReportResult`` (exit code 1 when a check failed)."""
    from grpo_theory.report.build import build_report
    from grpo_theory.validate import check_output_dir

    # before any work: a directory holding an earlier report is not overwritten silently
    check_output_dir("--out", args.out, writes=REPORT_FILES, force=args.force)
    return build_report(args.out, full=args.full, crosscheck=not args.no_crosscheck)


#: files whose presence marks an earlier report in the output directory
REPORT_FILES = ("report.md", "report.json", "equations.tex")
