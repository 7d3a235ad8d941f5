r"""Paper-ready LaTeX of every derived result, rendered from the same sympy expressions the code uses.

:func:`equations_document` returns a standalone document (compiles with a
plain ``pdflatex``: only ``amsmath``/``amssymb`` from texlive-latex-base) with
one labelled equation per registered derivation, its assumptions and its
proof log, grouped by level; :func:`write_equations` writes it (and the PDF
when ``pdflatex`` is available); :func:`citation` says which results and
papers a document rests on.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from grpo_theory import __version__
from grpo_theory.theory.chapters import CHAPTERS
from grpo_theory.theory.derived import Derived, all_names, get

__all__ = ["REFERENCES", "equations_document", "write_equations", "references_bib", "citation",
           "escape_tex", "equation_block"]

#: The papers the results rest on (bib key -> fields).  ``references_bib`` renders them.
REFERENCES = {
    "predictable_grpo": {
        "type": "article",
        "title": "Predictable {GRPO}: A Closed-Form Model of Training Dynamics",
        "author": "{Anonymous}",
        "journal": "arXiv preprint arXiv:2606.30789",
        "year": "2026",
    },
    "mroueh2025": {
        "type": "article",
        "title": "Reinforcement Learning with Verifiable Rewards: {GRPO}'s Effective Loss, "
                 "Dynamics, and Success Amplification",
        "author": "Mroueh, Youssef",
        "journal": "arXiv preprint arXiv:2503.06639",
        "year": "2025",
    },
    "shao2024deepseekmath": {
        "type": "article",
        "title": "{DeepSeekMath}: Pushing the Limits of Mathematical Reasoning in Open Language Models",
        "author": "Shao, Zhihong and Wang, Peiyi and Zhu, Qihao and Xu, Runxin and Song, Junxiao "
                  "and others",
        "journal": "arXiv preprint arXiv:2402.03300",
        "year": "2024",
    },
}


_TEX_ESCAPES = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
                "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
                "^": r"\textasciicircum{}", "<": r"$<$", ">": r"$>$", "|": r"$|$"}


def escape_tex(text: str) -> str:
    """Escape plain text for LaTeX (descriptions and claims are plain text)."""
    return "".join(_TEX_ESCAPES.get(ch, ch) for ch in str(text))


def _cites(d: Derived) -> str:
    keys = [k for k in d.references if k in REFERENCES]
    return f" \\cite{{{','.join(keys)}}}" if keys else ""


def equation_block(d: Derived) -> str:
    """One result: description, labelled equation (from ``d.latex()``), assumptions, proof log."""
    lines = [f"\\paragraph{{{escape_tex(d.name)}.}} {escape_tex(d.description)}{_cites(d)}"]
    body = d.latex()
    lines.append("\\begin{equation}\\label{" + d.label + "}")
    if len(body) > 180:  # long expressions: shrink (never enlarge) to the line width
        lines.append("\\resizebox{\\ifdim\\width>\\linewidth\\linewidth\\else\\width\\fi}{!}"
                     "{$\\displaystyle " + body + "$}")
    else:
        lines.append(body)
    lines.append("\\end{equation}")
    meta = []
    if d.units:
        meta.append(f"\\emph{{Units:}} {escape_tex(d.units)}.")
    if d.assumptions:
        meta.append(f"\\emph{{Assumptions:}} {escape_tex(d.assumptions)}.")
    if meta:
        lines.append(" ".join(meta))
    if d.verifications:
        lines.append("\\emph{Verified:}")
        lines.append("\\begin{itemize}\\setlength\\itemsep{0pt}")
        for v in d.verifications:
            status = "proven" if v.passed else "FAILED"
            detail = f" ({escape_tex(v.detail)})" if v.detail else ""
            lines.append(f"\\item[--] {escape_tex(v.claim)} \\hfill [{escape_tex(v.method)}, {status}]{detail}")
        lines.append("\\end{itemize}")
    elif d.level == "literature":
        lines.append("\\emph{Quoted from the literature, not derived here.}")
    return "\n".join(lines)


def references_bib() -> str:
    """BibTeX of :data:`REFERENCES`."""
    out = []
    for key, f in REFERENCES.items():
        fields = ",\n".join(f"  {k} = {{{v}}}" for k, v in f.items() if k != "type")
        out.append(f"@{f['type']}{{{key},\n{fields}\n}}")
    return "\n\n".join(out) + "\n"


def _bibliography() -> str:
    items = []
    for key, f in REFERENCES.items():
        items.append(f"\\bibitem{{{key}}} {f['author'].replace('{', '').replace('}', '')}. "
                     f"\\emph{{{f['title']}}}. {f['journal']}, {f['year']}.")
    return "\\begin{thebibliography}{9}\n" + "\n".join(items) + "\n\\end{thebibliography}"


def equations_document(names=None) -> str:
    """The standalone LaTeX document of the derived results (all registered ones by default)."""
    names = list(all_names() if names is None else names)
    parts = [
        "\\documentclass[10pt]{article}",
        "\\usepackage{amsmath,amssymb,graphicx}",
        "\\setlength{\\textwidth}{16cm}\\setlength{\\oddsidemargin}{0cm}\\setlength{\\evensidemargin}{0cm}",
        "\\setlength{\\textheight}{23cm}\\setlength{\\topmargin}{-1cm}\\setlength{\\parindent}{0pt}",
        "\\allowdisplaybreaks\\sloppy",
        "\\title{GRPO training dynamics: derived results}",
        f"\\author{{generated by grpo-theory {escape_tex(__version__)}}}",
        "\\date{}",
        "\\begin{document}",
        "\\maketitle",
        "Every equation below is rendered from the sympy expression that the package lambdifies "
        "for its numerics; each carries the checks that verified it (``sympy'': an identity proven "
        "symbolically; ``mpmath'': agreement with a high-precision numerical solution). "
        "GRPO \\cite{shao2024deepseekmath}; the reduced-order model follows \\cite{predictable_grpo}; "
        "success amplification \\cite{mroueh2025}.",
        "",
        "\\section*{Notation}",
        "$z$: logit of the success probability $p=\\sigma(z)$, $q=1-p$; "
        "$z_{\\mathrm{old}}$: logit of the sampling policy; $p_{\\mathrm{ref}}$, $z_{\\mathrm{ref}}$: "
        "reference policy; $G$: group size; $n$: correct samples in a group; $\\epsilon$: advantage "
        "epsilon; $\\beta$: KL coefficient; $\\kappa$: softmax metric factor; $\\eta$: learning rate; "
        "$\\mu$: heavy-ball momentum; $K=K_f+K_s$: stiffness (fresh and stale parts); "
        "$k_{\\mathrm{ref}}$: refresh interval; $d$: delay; $\\ell$: lag; $m,\\gamma,k$: mass, damping "
        "and spring of the continuous model; $t$: optimizer steps; $x=z-z^*$.",
    ]
    by_prefix = {}
    for name in names:
        by_prefix.setdefault(name.split(".")[0], []).append(name)
    for ch in CHAPTERS:
        if ch.key not in by_prefix:
            continue
        parts.append(f"\\section{{{ch.latex_title}}}")
        if ch.latex_intro:
            parts.append(ch.latex_intro)
        for name in by_prefix[ch.key]:
            parts.append(equation_block(get(name)))
    parts.append(_bibliography())
    parts.append("\\end{document}")
    return "\n\n".join(parts) + "\n"


def write_equations(out_dir, *, compile_pdf: bool = True, names=None) -> Path:
    """Write ``equations.tex`` (and ``equations.pdf`` when pdflatex exists) into ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tex = out / "equations.tex"
    tex.write_text(equations_document(names), encoding="utf-8")
    (out / "references.bib").write_text(references_bib(), encoding="utf-8")
    if compile_pdf and shutil.which("pdflatex"):
        for _ in range(2):  # second pass resolves references
            proc = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", tex.name],
                                  cwd=out, capture_output=True, text=True, timeout=300)
            if proc.returncode != 0:  # keep equations.log for the user to inspect
                tail = "\n".join(proc.stdout.splitlines()[-20:])
                raise RuntimeError(f"pdflatex failed on {tex} (see {out / 'equations.log'}):\n{tail}")
        for ext in (".aux", ".log", ".out"):  # pdflatex's by-products
            (out / f"equations{ext}").unlink(missing_ok=True)
    return tex


def citation(names=None) -> str:
    """Plain-text statement of which derived results and which papers a document rests on."""
    names = list(all_names() if names is None else names)
    keys = []
    for n in names:
        for k in get(n).references:
            if k not in keys:
                keys.append(k)
    papers = "; ".join(f"{REFERENCES[k]['author'].replace('{', '').replace('}', '')}, "
                       f"\"{REFERENCES[k]['title'].replace('{', '').replace('}', '')}\", "
                       f"{REFERENCES[k]['journal']} ({REFERENCES[k]['year']})" for k in keys)
    return (f"Generated by grpo-theory {__version__} from {len(names)} derived results "
            f"({', '.join(names[:6])}{', ...' if len(names) > 6 else ''}). Rests on: {papers or 'no external results'}.")
