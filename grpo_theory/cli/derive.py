"""``grpo-theory derive``: run the derivation chain, print every step and its verification, write LaTeX."""

from __future__ import annotations

NAME = "derive"
HELP = ("Run the symbolic derivation chain: print each result with the checks that verified it, "
        "and optionally write all results to equations.tex (and .pdf with pdflatex).")


def add_arguments(p):
    from grpo_theory.theory.chapters import CHAPTERS

    p.add_argument("--out", default=None, metavar="DIR",
                   help="directory for equations.tex (default: nothing is written)")
    p.add_argument("--only", default=None, metavar="CHAPTER",
                   help="one chapter: " + ", ".join(c.key for c in CHAPTERS))
    p.add_argument("--no-pdf", action="store_true", help="do not run pdflatex even if available")
    p.add_argument("--force", action="store_true",
                   help="overwrite an earlier equations.tex in DIR (refused otherwise)")
    p.add_argument("--json", action="store_true", help="print the results as JSON")


def call(args):
    import dataclasses

    from grpo_theory.outputs import atomic_output, relocate
    from grpo_theory.render.chain import derive_chain
    from grpo_theory.theory.chapters import chapter
    from grpo_theory.validate import check_output_dir

    if args.only is not None:
        chapter(args.only)
    if not args.out:
        return derive_chain(args.only, compile_pdf=not args.no_pdf)
    out = check_output_dir("--out", args.out, writes=("equations.tex", "equations.pdf"),
                           force=args.force)
    # written in a temporary sibling and moved into place at the end: nothing half-written
    with atomic_output(out, directory=True, stale=("equations.*",)) as tmp:
        result = derive_chain(args.only, out_dir=tmp, compile_pdf=not args.no_pdf)
    return dataclasses.replace(result, **{f: relocate(getattr(result, f), tmp, out)
                                          for f in PATH_FIELDS if hasattr(result, f)})


#: the fields of the chain's result that name a written file
PATH_FIELDS = ("equations_tex", "pdflatex_log")
