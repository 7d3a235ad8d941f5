"""``grpo-theory report --out DIR [--full]``: write the paper-ready report (equations, figures,
cross-checks, report.md) for the built-in default model."""

from __future__ import annotations

import time

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
    """Build the report; a ``ReportResult`` (exit code 1 when a check failed).

    The report is built in a temporary sibling of DIR and moved into place at the end
    (:func:`grpo_theory.outputs.atomic_output`): a failed or interrupted build leaves nothing."""
    from grpo_theory.outputs import atomic_output, relocate
    from grpo_theory.theory.derived import warm_cache
    from grpo_theory.validate import check_output_dir

    # before any work: a directory holding an earlier report is not overwritten silently
    out = check_output_dir("--out", args.out, writes=REPORT_FILES, force=args.force)
    with atomic_output(out, directory=True, stale=STALE) as tmp:
        started = time.perf_counter()
        # the derivations missing from the cache first, in two processes, while this one
        # imports the report (build_report then finds them all cached)
        warm_cache(meanwhile=_load_report)
        from grpo_theory.report.build import build_report

        result = build_report(tmp, full=args.full, crosscheck=not args.no_crosscheck, started=started)
    result.files = {name: relocate(p, tmp, out) for name, p in result.files.items()}
    result.out_dir = out
    return result


def _load_report() -> None:
    """Import the report's modules and load what drawing a figure loads
    (:func:`grpo_theory.report.figures.warm_up`)."""
    import grpo_theory.report.build  # noqa: F401 - the report's modules
    from grpo_theory.report.figures import warm_up

    warm_up()


#: files whose presence marks an earlier report in the output directory
REPORT_FILES = ("report.md", "report.json", "equations.tex")

#: the files of an earlier report that a new one replaces even where it has no namesake
#: (pdflatex's PDF and log, the optional deep-network figure)
STALE = ("equations.*", "deepnet.*")
