r"""Paper-ready LaTeX of every derived result, rendered from the same sympy expressions the code uses.

:func:`equations_document` returns a standalone document (compiles with a
plain ``pdflatex``: only ``amsmath``/``amssymb`` from texlive-latex-base) with
one labelled equation per registered derivation, its assumptions and its
proof log, grouped by level; :func:`write_equations` writes it (and the PDF
when ``pdflatex`` is available); :func:`citation` says which results and
papers a document rests on.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import sympy as sp

from grpo_theory import __version__
from grpo_theory.prose import escape_tex, math_to_plain, to_tex
from grpo_theory.theory import symbols as S
from grpo_theory.theory.bibliography import REFERENCES, format_reference
from grpo_theory.theory.bibliography import bibtex as _bibtex
from grpo_theory.theory.chapters import CHAPTERS
from grpo_theory.theory.derived import Derived, all_names, get

__all__ = ["REFERENCES", "NOTATION", "prose_tex", "notation", "math_label", "notation_table", "equations_document",
           "write_equations", "references_bib", "citation", "escape_tex", "equation_block",
           "METHOD_LABELS"]

#: The notation table: the one place that fixes what each symbol means.  Each entry is
#: ``key -> (sympy symbol, meaning)``; the LaTeX (PDF) and mathtext (figures) forms come
#: from :data:`grpo_theory.theory.symbols.LATEX_NAMES` through sympy's printer, and the
#: plain-text form (terminal) is :func:`notation`.  The refresh interval is ``k``; the
#: spring constant of the continuous model is ``kappa_s`` (never ``k``).
NOTATION = {
    "z": (S.z, "logit of the success probability"),
    "p": (S.p, "success probability (reward), the sigmoid of the logit"),
    "q": (S.q_fail, "failure probability"),
    "z_old": (S.z_old, "logit of the sampling policy"),
    "p_ref": (S.p_ref, "success probability of the reference policy"),
    "z_ref": (S.z_ref, "logit of the reference policy"),
    "z_star": (S.z_star, "logit at a fixed point"),
    "G": (S.G, "group size"),
    "n": (S.n, "correct samples in a group"),
    "epsilon": (S.eps, "added to the group standard deviation in the std normalisation"),
    "beta": (S.beta, "KL coefficient"),
    "kappa": (S.kappa, "softmax metric factor"),
    "eta": (S.eta, "learning rate"),
    "mu": (S.mu, "heavy-ball momentum"),
    "K": (S.K, "stiffness at the fixed point (per unit learning rate): the fresh plus the stale part"),
    "K_f": (S.K_fresh, "stiffness acting on the current iterate"),
    "K_s": (S.K_stale, "stiffness acting through the sampling policy"),
    "a": (S.a, "dimensionless step stiffness (learning rate times stiffness)"),
    "k": (S.k_ref, "refresh interval: optimizer steps per sampling policy"),
    "d": (S.d, "constant delay (staleness), steps"),
    "ell": (S.ell, "effective lag of the continuous model, steps"),
    "lambda": (S.lam, "eigenvalue of the discrete map"),
    "m": (S.m, "mass of the continuous model"),
    "gamma": (S.gamma, "damping of the continuous model"),
    "kappa_s": (S.spring, "spring constant of the continuous model (learning rate times stiffness)"),
    "t": (S.t, "time, optimizer steps"),
    "x": (S.x(S.t), "deviation of the logit from the fixed point"),
    "sigma2": (S.sigma2, "per-step gradient-noise variance"),
}


def _latex_of(key: str) -> str:
    return sp.latex(NOTATION[key][0], symbol_names=S.LATEX_NAMES)


def math_label(key: str) -> str:
    """The symbol of ``key`` as matplotlib mathtext (``$...$``), e.g. for axis labels."""
    return f"${_latex_of(key)}$"


def notation(key: str) -> str:
    """The symbol of ``key`` as plain terminal text (``κₛ``, ``k``, ``p_ref``), from the same
    LaTeX as the PDF's notation table."""
    return math_to_plain(_latex_of(key))


def notation_table() -> str:
    """LaTeX of the notation table (printed at the start of ``equations.tex``)."""
    rows = [f"${_latex_of(k)}$ & {prose_tex(meaning)} \\\\" for k, (_, meaning) in NOTATION.items()]
    return ("\\begin{tabular}{@{}ll@{}}\n" + "\n".join(rows) + "\n\\end{tabular}")

#: How each verification method is stated in the document (truthfully: only ``sympy`` is a proof).
METHOD_LABELS = {
    "sympy": "symbolic proof (sympy)",
    "mpmath": "high-precision numerics (mpmath)",
    "numeric": "sampled numeric check (floating point)",
}

def prose_tex(text: str) -> str:
    """Prose for LaTeX (see :mod:`grpo_theory.prose`): ``$...$`` spans verbatim,
    the words escaped."""
    return to_tex(text)


def _cites(d: Derived) -> str:
    keys = [k for k in d.references if k in REFERENCES]
    return f" \\cite{{{','.join(keys)}}}" if keys else ""


def _verification_line(v) -> str:
    """One verification, stated by method: symbolic proof / high-precision numerics (with its
    digits) / sampled check (with its tolerance or error).  sympy's residues (programming text)
    are not printed; numeric details are."""
    label = METHOD_LABELS.get(v.method, v.method)
    status = ("proven" if v.method == "sympy" else "confirmed" if v.method == "mpmath" else "passed") \
        if v.passed else "FAILED"
    detail = ""
    if v.method != "sympy" and v.detail:
        detail = " (" + prose_tex(v.detail) + ")"
    return f"\\item[--] {prose_tex(v.claim)}{detail} \\hfill [{label}: {status}]"


def _symbol_names_by_name():
    return {str(sym): name for sym, name in S.LATEX_NAMES.items()}


def _lhs(d: Derived) -> str:
    """The left-hand side; a bare symbol name is printed with that symbol's notation name."""
    return _symbol_names_by_name().get(d.lhs, d.lhs)


def equation_block(d: Derived) -> str:
    """One result: description, labelled equation (sympy's printer on ``d.expr``), assumptions,
    and how each claim about it was verified."""
    lines = [f"\\paragraph{{\\texttt{{{escape_tex(d.name)}}}.}} {prose_tex(d.description)}{_cites(d)}"]
    body = f"{_lhs(d)} = {sp.latex(d.expr, symbol_names=S.LATEX_NAMES)}"
    lines.append("\\begin{equation}\\label{" + d.label + "}")
    if len(body) > 180:  # long expressions: shrink (never enlarge) to the line width
        lines.append("\\resizebox{\\ifdim\\width>\\linewidth\\linewidth\\else\\width\\fi}{!}"
                     "{$\\displaystyle " + body + "$}")
    else:
        lines.append(body)
    lines.append("\\end{equation}")
    meta = []
    if d.units:
        meta.append(f"\\emph{{Units:}} {prose_tex(d.units)}.")
    if d.assumptions:
        meta.append(f"\\emph{{Assumptions:}} {prose_tex(d.assumptions)}.")
    if meta:
        lines.append(" ".join(meta))
    if d.verifications:
        lines.append("\\emph{Verified:}")
        lines.append("\\begin{itemize}\\setlength\\itemsep{0pt}")
        lines.extend(_verification_line(v) for v in d.verifications)
        lines.append("\\end{itemize}")
    elif d.level == "literature":
        lines.append("\\emph{Quoted from the literature, not derived here.}")
    else:
        lines.append("\\emph{Not verified: no check is recorded for this result.}")
    return "\n".join(lines)


def _used_keys(names) -> list[str]:
    keys = []
    for n in names:
        for k in get(n).references:
            if k in REFERENCES and k not in keys:
                keys.append(k)
    return keys


def references_bib(keys=None) -> str:
    """BibTeX of ``keys`` (default: every entry of :data:`REFERENCES`)."""
    return _bibtex(keys)


def _bibliography(keys) -> str:
    items = [f"\\bibitem{{{key}}} {format_reference(key, 'tex')}" for key in keys]
    return "\\begin{thebibliography}{99}\n" + "\n".join(items) + "\n\\end{thebibliography}"


def _literature_sentence(names) -> str:
    """Which papers a chapter's results reproduce, quote or correct (from the records' own
    references; each record's description says how)."""
    by_key = {}
    for n in names:
        for k in get(n).references:
            if k in REFERENCES:
                by_key.setdefault(k, []).append(n)
    if not by_key:
        return ("\\emph{Relation to the literature:} the results of this section are derived here "
                "and cite no published counterpart.")
    parts = [f"\\cite{{{k}}} (" + ", ".join(escape_tex(n.split('.', 1)[1]) for n in ns) + ")"
             for k, ns in by_key.items()]
    return ("\\emph{Relation to the literature:} results of this section reproduce, quote or correct "
            + "; ".join(parts) + "; each result's description says which.")


def _verification_key() -> str:
    return ("Each result lists the claims that were checked and how: "
            + "; ".join(f"\\emph{{{escape_tex(lbl)}}}" for lbl in METHOD_LABELS.values())
            + ". Only a symbolic proof is a proof; high-precision numerics state their digits, "
              "and a sampled check states the points and the error it tolerated.")


def equations_document(names=None, extra_sections=()) -> str:
    """The standalone LaTeX document of the derived results (all registered ones by default).

    ``extra_sections`` are ``(title, latex_body)`` pairs appended after the chapters (the report
    adds the bifurcation atlas there); they may cite keys of :data:`REFERENCES` through
    ``\\cite``.
    """
    names = list(all_names() if names is None else names)
    keys = ["shao2024deepseekmath"] + [k for k in _used_keys(names) if k != "shao2024deepseekmath"]
    for _, body in extra_sections:
        for k in re.findall(r"\\cite\{([^}]*)\}", body):
            for kk in k.split(","):
                if kk in REFERENCES and kk not in keys:
                    keys.append(kk)
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
        "Every equation below is printed by sympy's \\LaTeX{} printer from the expression that the "
        "package lambdifies for its numerics. The algorithm is GRPO \\cite{shao2024deepseekmath} "
        "on a softmax bandit. " + _verification_key(),
        "",
        "\\section*{Notation}",
        "One symbol, one meaning, in this document, the figures and the command line.",
        "",
        notation_table(),
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
        parts.append(_literature_sentence(by_prefix[ch.key]))
        for name in by_prefix[ch.key]:
            parts.append(equation_block(get(name)))
    for title, body in extra_sections:
        parts.append(f"\\section{{{title}}}")
        parts.append(body)
    if keys:
        parts.append(_bibliography(keys))
    parts.append("\\end{document}")
    return "\n\n".join(parts) + "\n"


def write_equations(out_dir, *, compile_pdf: bool = True, names=None, extra_sections=()) -> Path:
    """Write ``equations.tex`` (and ``equations.pdf`` when pdflatex exists) and
    ``references.bib`` (the papers the document cites) into ``out_dir``."""
    names = list(all_names() if names is None else names)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tex = out / "equations.tex"
    doc = equations_document(names, extra_sections)
    tex.write_text(doc, encoding="utf-8")
    cited = [k for k in REFERENCES if f"{{{k}" in doc or f",{k}" in doc]
    (out / "references.bib").write_text(references_bib(cited), encoding="utf-8")
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


def citation(names=None, *, bibtex: bool = False) -> str:
    """What to cite when using the results ``names`` (default: all registered ones).

    Plain text by default: the package and the papers the results rest on; with
    ``bibtex=True`` the BibTeX entries of those papers.  The report's bibliography is
    generated from the same list.
    """
    names = list(all_names() if names is None else names)
    keys = _used_keys(names)
    if bibtex:
        return references_bib(keys)
    papers = "; ".join(format_reference(k, "text") for k in keys)
    return (f"Generated by grpo-theory {__version__} from {len(names)} derived results "
            f"({', '.join(names[:6])}{', ...' if len(names) > 6 else ''}). "
            f"Rests on: {papers or 'no external results'}.")
