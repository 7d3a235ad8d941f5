"""``grpo-theory derive``: run the derivation chain, print every step and its verification, write LaTeX."""

from __future__ import annotations

import io
import json
import sys

NAME = "derive"
HELP = ("Run the symbolic derivation chain (THEORY.md §3): print each result with the checks "
        "that verified it, and write all results to equations.tex (and .pdf with pdflatex).")


def add_arguments(p):
    p.add_argument("--out", default=None, help="directory for equations.tex (default: none written)")
    p.add_argument("--only", default=None,
                   help="chapter key prefix: drift, fixed_points, closed_forms, discrete, oscillator, noise")
    p.add_argument("--no-pdf", action="store_true", help="do not run pdflatex even if available")
    p.add_argument("--json", action="store_true", help="print the results as JSON")


def run(args) -> int:
    from grpo_theory.theory.chain import CHAPTERS, run_chain
    from grpo_theory.validate import check_choice

    if args.only is not None:
        check_choice("only", args.only, [c.key for c in CHAPTERS])
    stream = io.StringIO() if args.json else sys.stdout
    records = run_chain(only=args.only, stream=stream)
    tex = None
    if args.out:
        from grpo_theory.theory.latex import write_equations

        tex = write_equations(args.out, compile_pdf=not args.no_pdf,
                              names=[r["name"] for r in records])
    ok = all(r["verified"] or r["level"] == "literature" or not r["verifications"] for r in records)
    if args.json:
        print(json.dumps({"results": records, "all_verified": ok,
                          "equations_tex": str(tex) if tex else None}, indent=1))
    else:
        n_checks = sum(len(r["verifications"]) for r in records)
        print()
        print(f"{len(records)} results, {n_checks} checks, "
              f"{'all verified' if ok else 'SOME CHECKS FAILED'}"
              + (f"; LaTeX written to {tex}" if tex else ""))
    return 0 if ok else 1
