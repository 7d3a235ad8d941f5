r"""Paper-ready LaTeX of every derived result, rendered from the same sympy expressions the code uses.

:func:`equations_document` returns a standalone document (compiles with a plain
``pdflatex``: ``amsmath``, ``amssymb``, ``array`` and ``longtable``, all in
texlive-latex-base) with the notation table, one section per chapter (each result under
its title, its labelled equation, its assumptions and how each claim about it was
verified), the extra sections the report adds, an appendix on how the results were
verified, an index of the results' record names and the bibliography.
:func:`write_equations` writes it (and the PDF when ``pdflatex`` is available);
:func:`citation` says which results and papers a document rests on.

Long equations are broken into lines (``multline``) at their top-level terms; nothing is
scaled.  The document body names no software: the libraries and the numerical methods are
named once, in the appendix "How each result was verified".
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import sympy as sp

from grpo_theory import __version__
from grpo_theory.prose import escape_tex, to_tex
from grpo_theory.render.notation import (NOTATION, math_label, notation, notation_rows,
                                         notation_table)
from grpo_theory.theory.bibliography import REFERENCES, format_reference
from grpo_theory.theory.bibliography import bibtex as _bibtex
from grpo_theory.theory.chapters import CHAPTERS
from grpo_theory.theory.derived import Derived, all_names, get
from grpo_theory.theory.printing import Printer, latex

__all__ = ["REFERENCES", "NOTATION", "prose_tex", "notation", "math_label", "notation_table",
           "notation_rows", "equations_document", "write_equations", "references_bib",
           "citation", "escape_tex", "equation_block", "METHOD_LABELS", "method_label",
           "verification_appendix", "LIBRARY_NAMES", "display_width", "document_order",
           "equation_numbers"]

#: How each verification method is named in the documents (only a symbolic proof is a proof).
METHOD_LABELS = {
    "sympy": "symbolic proof",
    "mpmath": "high-precision numerics",
    "numeric": "sampled numeric check",
}

#: Software named only in the appendix (the body of the document names methods, not tools).
LIBRARY_NAMES = ("sympy", "mpmath", "scipy", "numpy", "matplotlib", "pytorch", "torch",
                 "odefun", "dsolve", "lambdify", "linalg", "brentq", "fsolve")

#: widest displayed line, in the units of :func:`display_width` (about the text width)
_LINE = 76.0


def method_label(v) -> str:
    """The bracketed label of one verification: its method, and for a check of a statement
    about every value carried out at finitely many values, those values."""
    if v.method == "sympy" and getattr(v, "cases", ""):
        label = f"exact check for {to_tex(v.cases)}"
    else:
        label = METHOD_LABELS.get(v.method, v.method)
    return label if v.passed else f"{label}: FAILED"


def prose_tex(text: str) -> str:
    """Prose for LaTeX (see :mod:`grpo_theory.prose`): ``$...$`` spans verbatim,
    the words escaped."""
    return to_tex(text)


def _cites(keys) -> str:
    keys = [k for k in keys if k in REFERENCES]
    return f"~\\cite{{{','.join(keys)}}}" if keys else ""


def _verification_line(v) -> str:
    """One verification: the claim, the numbers of a numeric check, and the method label set
    flush right (on the claim's last line when it fits, else on a line of its own)."""
    detail = ""
    if v.method != "sympy" and v.detail:
        detail = " (" + prose_tex(v.detail) + ")"
    return f"\\item {prose_tex(v.claim)}{detail}\\verified{{{method_label(v)}}}"


# ------------------------------------------------------------------------------------
# equations: width, line breaks, named sub-expressions
# ------------------------------------------------------------------------------------

def _strip_frac(tex: str) -> str:
    """``\\frac{a}{b}`` replaced by the wider of ``a`` and ``b`` (for width estimates)."""
    out, i = [], 0
    while True:
        j = tex.find(r"\frac", i)
        if j < 0:
            out.append(tex[i:])
            return "".join(out)
        out.append(tex[i:j])
        k = j + len(r"\frac")
        args = []
        for _ in range(2):
            while k < len(tex) and tex[k] == " ":
                k += 1
            if k < len(tex) and tex[k] == "{":
                depth, start = 0, k
                for m in range(k, len(tex)):
                    depth += {"{": 1, "}": -1}.get(tex[m], 0)
                    if depth == 0:
                        args.append(tex[start + 1:m])
                        k = m + 1
                        break
            else:
                args.append(tex[k:k + 1])
                k += 1
        a, b = (_strip_frac(x) for x in args)
        out.append(a if display_width(a) >= display_width(b) else b)
        i = k


def display_width(tex: str) -> float:
    """A rough width of displayed math, in average glyphs: a fraction counts its wider part,
    a script 0.7, a relation or operator with its spacing 2.5, a macro name one glyph."""
    t = _strip_frac(tex)
    t = re.sub(r"\\(?:left|right|big|Big|bigl|bigr|displaystyle|limits)\b", "", t)
    t = re.sub(r"\\(?:mathrm|operatorname|text)\s*\{([^{}]*)\}", lambda m: "w" * len(m.group(1)), t)
    scripts = sum(len(re.sub(r"\\[A-Za-z]+", "x", g)) for g in re.findall(r"[_^]\{([^{}]*)\}", t))
    t = re.sub(r"[_^]\{[^{}]*\}", "", t)
    t = re.sub(r"\\[,;:! ]", " ", t)
    t = re.sub(r"\\(log|exp|sin|cos|sinh|cosh|tanh|arctan|min|max|det|lim|arg|ln)\b",
               lambda m: "x" * len(m.group(1)), t)
    t = re.sub(r"\\[A-Za-z]+", "x", t)
    ops = len(re.findall(r"[=+\-<>]", t))
    glyphs = len(re.sub(r"[\s{}=+\-<>]", "", t))
    return glyphs + 0.7 * scripts + 2.5 * ops


def _terms(expr) -> list[tuple[str, str]]:
    """The top-level terms of a sum as the printer writes them: ``(sign, LaTeX)``."""
    p = Printer()
    terms = list(p._as_ordered_terms(expr))
    if terms and terms[0].could_extract_minus_sign():
        pos = [t for t in terms if not t.could_extract_minus_sign()]
        if pos:
            terms = pos + [t for t in terms if t.could_extract_minus_sign()]
    out = []
    for i, term in enumerate(terms):
        sign = "-" if term.could_extract_minus_sign() else "+"
        body = -term if sign == "-" else term
        tex = p._print(body)
        if p._needs_add_brackets(body):
            tex = r"\left(%s\right)" % tex
        out.append(("" if i == 0 and sign == "+" else sign, tex))
    return out


def _equation(lhs: str, shown, label: str) -> str:
    """``lhs = shown`` as a numbered display: one line when it fits, else a ``multline`` broken
    before top-level terms (a product of a factor and a long sum is broken inside the sum)."""
    body = latex(shown)
    if display_width(lhs + " = " + body) <= _LINE:
        return f"\\begin{{equation}}\\label{{{label}}}\n{lhs} = {body}\n\\end{{equation}}"
    prefix, inner, suffix = "", shown, ""
    if isinstance(shown, sp.Mul):
        adds = [f for f in shown.args if isinstance(f, sp.Add)]
        rest = [f for f in shown.args if not isinstance(f, sp.Add)]
        if len(adds) == 1 and not any(f.is_Pow and f.exp.is_negative for f in rest):
            prefix = latex(sp.Mul(*rest)) + r" \Bigl(" if rest else r"\Bigl("
            inner, suffix = adds[0], r"\Bigr)"
    if not isinstance(inner, sp.Add):
        return f"\\begin{{equation}}\\label{{{label}}}\n{lhs} = {body}\n\\end{{equation}}"
    lines, current = [], f"{lhs} = {prefix}"
    for sign, tex in _terms(inner):
        piece = (f" {sign} " if sign else "") + tex
        if display_width(current + piece) > _LINE and display_width(current) > 8:
            lines.append(current)
            current = "\\qquad " + piece.lstrip() if sign else piece
        else:
            current += piece
    lines.append(current + suffix)
    if prefix.endswith(r"\Bigl("):        # balance the big parentheses across the line breaks
        lines = [ln + (r"\right." if i < len(lines) - 1 else "") for i, ln in enumerate(lines)]
        lines = [ln if i == 0 else r"\left. " + ln for i, ln in enumerate(lines)]
        lines = [ln.replace(r"\Bigl(", r"\left(").replace(r"\Bigr)", r"\right)") for ln in lines]
    return ("\\begin{multline}\\label{" + label + "}\n" + " \\\\\n".join(lines)
            + "\n\\end{multline}")


#: the record name that marks a named sub-expression as a symbol of the notation table
#: (defined there, not restated under the equation)
NOTATION_REF = "notation"


def _shown_proof(d: Derived):
    """The verification that proves the displayed form equal to the record (from
    :meth:`Derived.show`), or None."""
    return next((v for v in d.verifications if v.claim.startswith("the form displayed")), None)


def _where(d: Derived) -> str:
    """The named sub-expressions of a displayed form, below the equation: those that are other
    records by their equation numbers, the others defined there; and the proof that the form
    shown is the derived expression."""
    refs, local = {}, []
    for sym, defn, rec in d.where_latex():
        if rec == NOTATION_REF:
            continue
        if rec:
            refs.setdefault(rec, []).append(f"${sym}$")
        else:
            local.append((sym, defn))
    proof = _shown_proof(d)
    if not (refs or local or proof):
        return ""
    parts = []
    for rec, syms in refs.items():
        parts.append(" and ".join(syms) + f" from \\eqref{{{get(rec).label}}}")
    short = [f"${s} = {t}$" for s, t in local if display_width(f"{s} = {t}") <= 0.55 * _LINE]
    long = [(s, t) for s, t in local if display_width(f"{s} = {t}") > 0.55 * _LINE]
    text = ""
    if parts:
        text = "with " + (", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else parts[0])
    if short:
        text += (", where " if text else "where ") + ", ".join(short)
    if long:
        text += (", where" if not short and text else (" and" if short else "where"))
        for s, t in long:
            text += f"\n\\begin{{equation*}}\n{s} = {t}\n\\end{{equation*}}"
    if proof is not None:
        how = proof.claim[len("the form displayed"):]
        how = how.split("equals the derived expression", 1)[1].strip(" ()") if \
            "equals the derived expression" in how else ""
        note = (("the" if text else "The") + " form shown is proven equal to the derived expression"
                + (f", {prose_tex(how)}" if how else ""))
        label = method_label(proof)
        text = (text + ("" if long else ";") + " " if text else "") + note + f"\\verified{{{label}}}"
    elif not long:
        text += "."
    return text


def equation_block(d: Derived) -> str:
    """One result: its title, description, labelled equation (the project's printer on the
    displayed form of ``d``), named sub-expressions, assumptions and how each claim about it
    was verified."""
    title = d.title or d.name
    lines = [f"\\paragraph{{{prose_tex(title)}.}} {prose_tex(d.description)}{_cites(d.references)}"]
    shown = d.expr if d.display is None else d.display
    lines.append(_equation(d.lhs, shown, d.label))
    where = _where(d)
    if where:
        lines.append("\\noindent " + where + ("" if where.endswith("}") else "\\par"))
    meta = []
    if d.units:
        meta.append(f"\\emph{{Units:}} {prose_tex(d.units)}.")
    if d.assumptions:
        meta.append(f"\\emph{{Assumptions:}} {prose_tex(d.assumptions)}.")
    if meta:
        lines.append(" ".join(meta))
    proof = _shown_proof(d)
    checks = [v for v in d.verifications if v is not proof]
    if checks:
        lines.append("\\emph{Verified:}")
        lines.append("\\begin{itemize}\\setlength\\itemsep{0pt}")
        lines.extend(_verification_line(v) for v in checks)
        lines.append("\\end{itemize}")
    elif d.level == "literature":
        lines.append("\\emph{Quoted from the literature, not derived here.}")
    elif proof is None:
        lines.append("\\emph{Not verified: no check is recorded for this result.}")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------
# bibliography, literature, appendix
# ------------------------------------------------------------------------------------

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


def _ranges(names, order) -> str:
    """Equation references of ``names`` with runs of consecutive equations as ranges:
    (1), (4), (14)--(25).  ``order``: every record of the document in order (one numbered
    equation each)."""
    pos = sorted(order.index(n) for n in names)
    runs, start = [], pos[0]
    for a, b in zip(pos, pos[1:] + [None]):
        if b != a + 1:
            runs.append((start, a))
            start = b
    ref = lambda i: f"\\eqref{{{get(order[i]).label}}}"  # noqa: E731
    return ", ".join(ref(a) if a == b else (f"{ref(a)}, {ref(b)}" if b == a + 1 else f"{ref(a)}--{ref(b)}")
                     for a, b in runs)


def _literature_sentence(names, order=None) -> str:
    """Which works a chapter's results use, reproduce, quote or correct, with the equations
    that cite each (each result's description says how)."""
    order = list(names) if order is None else list(order)
    by_key = {}
    for n in names:
        for k in get(n).references:
            if k in REFERENCES:
                by_key.setdefault(k, []).append(n)
    if not by_key:
        return ("\\emph{Relation to the literature:} the results of this section are derived here; "
                "no published result is used or compared with.")
    parts = []
    for k, ns in by_key.items():
        parts.append(f"\\cite{{{k}}} ({'equation' if len(ns) == 1 else 'equations'} {_ranges(ns, order)})")
    return ("\\emph{Relation to the literature:} " + "; ".join(parts)
            + ". Each result's description says whether it uses, reproduces, quotes or "
              "corrects the work it cites.")


def _verification_key() -> str:
    labels = ", ".join(f"\\emph{{{lbl}}}" for lbl in
                       ("symbolic proof", "exact check for listed values", "high-precision numerics",
                        "sampled numeric check"))
    return ("Under each result the claims that were checked are listed, each labelled with how: "
            + labels + ". Only a symbolic proof is a proof of the statement as written; an exact "
              "check is a symbolic identity established for the listed values of a parameter "
              "only; high-precision numerics state the digits that agree, and a sampled check "
              "states its points and the error it tolerated. Appendix~\\ref{app:verification} "
              "describes each method; Appendix~\\ref{app:index} gives the name of each result in "
              "the package.")


def verification_appendix(names) -> str:
    """The appendix "How each result was verified": every method in words, with the software
    that carried it out (the only place the document names software) and how often it was
    used."""
    counts = {"sympy": 0, "cases": 0, "mpmath": 0, "numeric": 0}
    for n in names:
        for v in get(n).verifications:
            key = "cases" if v.method == "sympy" and getattr(v, "cases", "") else v.method
            counts[key] = counts.get(key, 0) + 1
    return "\n\n".join([
        "\\section{How each result was verified}\\label{app:verification}",
        "Every formula of this document is derived once, as an expression of the computer-algebra "
        "system SymPy~\\cite{meurer2017sympy}; the same expression is printed here and compiled "
        "into the numerical functions the package computes with, so the printed formula is the "
        "one that is used. A form printed with named sub-expressions (introduced by ``with'' or "
        "``where'' below an equation) is proven equal to the derived expression.",
        f"\\paragraph{{Symbolic proof ({counts['sympy']} claims).}} The claim is an identity that "
        "the computer algebra reduces to zero: by simplification (with the substitution "
        "$q = 1 - p$ where probabilities appear), by a series expansion for a limit or an order, "
        "by solving an equation and comparing the roots, or by induction in a symbolic index. "
        "The package's mutation tests perturb each derived expression and require the proof to "
        "fail, so a proof that cannot fail is not counted.",
        f"\\paragraph{{Exact check for listed values ({counts['cases']} claims).}} The same kind of "
        "identity, established separately for each listed value of a parameter, for example the "
        "drift against the GRPO objective built from all $2^{G}$ reward vectors at $G = 2, 3, 4$. "
        "It checks a statement about every value at those values; the general statement rests on "
        "the derivation itself.",
        f"\\paragraph{{High-precision numerics ({counts['mpmath']} claims).}} An independent "
        "computation in arbitrary-precision arithmetic (mpmath~\\cite{mpmath}) at 30 to 50 "
        "significant digits: integration of the differential equation by its Taylor series "
        "(mpmath's \\texttt{odefun}) for the closed-form trajectories, root finding for the first "
        "extremum of the oscillator, Gaussian quadrature for the reward fluctuation, and "
        "Richardson extrapolation in $G$ for the large-$G$ expansions. The number of agreeing "
        "digits is stated with each claim.",
        f"\\paragraph{{Sampled numeric check ({counts['numeric']} claims).}} A comparison in double "
        "precision at listed points: the Lyapunov equations solved by SciPy's solvers "
        "(\\texttt{scipy.linalg})~\\cite{virtanen2020scipy}, the roots of characteristic "
        "polynomials by NumPy~\\cite{harris2020numpy}, or exact rational arithmetic at sample "
        "points. The points and the error tolerated are stated with each claim.",
        "\\paragraph{The atlas.} The fold curves are continued by pseudo-arclength "
        "continuation~\\cite{keller1977} and checked without the fold test function by counting "
        "roots and by derivative-free bounded minimization (Brent's method~\\cite{brent1973}); "
        "the criticality of the discrete boundaries follows the normal-form theory "
        "of~\\cite{kuznetsov2004}, with the coefficients computed from the map's derivatives in "
        "high-precision arithmetic and checked against iterations of the map itself.",
        "\\paragraph{Sources of the figures.} The figures are "
        "drawn with Matplotlib~\\cite{hunter2007matplotlib} from the same computations as the "
        "numbers of the text; the deep-network experiment trains "
        "its policy with PyTorch~\\cite{paszke2019pytorch}, and the real-engine section reads the "
        "results of training with TRL's GRPO trainer~\\cite{vonwerra2020trl} on PyTorch.",
    ])


def _index(names) -> str:
    """Appendix B: the record name of every result (for readers who want the code)."""
    rows = [f"\\makebox[2.6em][r]{{\\eqref{{{get(n).label}}}}}\\quad\\texttt{{{escape_tex(n)}}}\\par"
            for n in names]
    return "\n".join([
        "\\section{Index of results}\\label{app:index}",
        "Each result is a record of the package; its name is the key under which the package, its "
        "command line (\\texttt{grpo-theory derive}) and its book find it.",
        "{\\footnotesize\\setlength{\\parskip}{0pt}\\begin{multicols}{2}", *rows,
        "\\end{multicols}}",
    ])


#: LaTeX preamble: the verification label set flush right (TeXbook, the \signed macro)
_PREAMBLE = [
    "\\documentclass[10pt]{article}",
    "\\usepackage{amsmath,amssymb,array,longtable,multicol,graphicx}",
    # floats: a figure may fill most of a page, so the figures stay with their sections
    "\\renewcommand{\\topfraction}{0.85}\\renewcommand{\\bottomfraction}{0.6}"
    "\\renewcommand{\\textfraction}{0.15}\\renewcommand{\\floatpagefraction}{0.7}",
    "\\setlength{\\textwidth}{16cm}\\setlength{\\oddsidemargin}{0cm}\\setlength{\\evensidemargin}{0cm}",
    "\\setlength{\\textheight}{23cm}\\setlength{\\topmargin}{-1cm}\\setlength{\\parindent}{0pt}",
    "\\setlength{\\parskip}{3pt plus 1pt}",
    "\\allowdisplaybreaks\\sloppy",
    # a section ends with its figures: a float still waiting for a later page is put out
    # (\\clearpage) before the next section begins; nothing happens when none is waiting
    "\\makeatletter\\newcommand{\\floatbarrier}{\\par\\ifx\\@deferlist\\@empty\\else\\clearpage\\fi}"
    "\\makeatother",
    "\\newcommand{\\verified}[1]{{\\unskip\\nobreak\\hfil\\penalty50\\hskip1.5em\\hbox{}\\nobreak"
    "\\hfill\\mbox{\\small[#1]}\\parfillskip=0pt\\finalhyphendemerits=0\\par}}",
]


def _abstract(n: int) -> str:
    return ("\\begin{abstract}\\noindent "
            "GRPO~\\cite{shao2024deepseekmath} on a softmax bandit, from the update rule to its "
            "mean-field drift (level L1), the exact linearization of the discrete training map with "
            "momentum and a lagged sampling policy (L2), and a reduced-order continuous oscillator "
            "(L3), with the noise, the collapse risk, Adam near a fixed point and the reuse of one "
            "batch over a refresh window. "
            f"This document lists the {n} derived results of the package "
            f"\\emph{{grpo-theory}} (version {escape_tex(__version__)}), each with its assumptions "
            "and the checks that verified it, the two-parameter bifurcation atlas of the "
            "fixed points and of the discrete map, and a comparison with real GRPO training of a "
            "small transformer. "
            + _verification_key() + "\\end{abstract}")


def document_order(names=None) -> list[str]:
    """The records in the order of the document (chapter by chapter); the equation number of
    each is its position plus one (one numbered equation per result)."""
    names = list(all_names() if names is None else names)
    return [n for ch in CHAPTERS for n in names if n.split(".")[0] == ch.key]


def equation_numbers(names=None) -> dict:
    """Record name -> its equation number in ``equations.pdf``."""
    return {n: i + 1 for i, n in enumerate(document_order(names))}


def equations_document(names=None, extra_sections=(), chapter_extras=None) -> str:
    """The standalone LaTeX document of the derived results (all registered ones by default).

    ``extra_sections`` are ``(title, latex_body)`` pairs placed after the chapters (the report
    adds the bifurcation atlas there); ``chapter_extras`` maps a chapter key to LaTeX placed
    after that chapter's introduction (the report's figures and the paragraph that refers to
    them; the chapter's figures are put out before the next section begins).
    Both may cite keys of :data:`REFERENCES` through ``\\cite``.
    """
    chapter_extras = chapter_extras or {}
    names = list(all_names() if names is None else names)
    parts = [*_PREAMBLE,
             "\\title{GRPO training dynamics: derived results}",
             "\\author{}", "\\date{}",
             "\\begin{document}",
             "\\maketitle\\vspace{-3em}",
             _abstract(len(names)),
             "\\section*{Notation}",
             "One symbol, one meaning, in this document, the report's figures and the command line. "
             "Time is counted in optimizer steps; a subscript $t$, $j$, $i$ or $n$ indexes a "
             "symbol (step, step in a window, sample, number of correct samples).",
             notation_table()]
    by_prefix = {}
    for name in names:
        by_prefix.setdefault(name.split(".")[0], []).append(name)
    names = document_order(names)          # one numbered equation each, in this order
    for ch in CHAPTERS:
        if ch.key not in by_prefix:
            continue
        parts.append(f"\\section{{{ch.latex_title}}}")
        if ch.latex_intro:
            parts.append(prose_tex(ch.latex_intro))
        parts.append(_literature_sentence(by_prefix[ch.key], names))
        if ch.key in chapter_extras:
            parts.append(chapter_extras[ch.key])
        for name in by_prefix[ch.key]:
            parts.append(equation_block(get(name)))
        if ch.key in chapter_extras:
            parts.append("\\floatbarrier")
    for title, body in extra_sections:
        parts.append(f"\\section{{{title}}}")
        parts.append(body)
        if "\\begin{figure}" in body:
            parts.append("\\floatbarrier")
    parts.append("\\appendix")
    parts.append(verification_appendix(names))
    parts.append(_index(names))
    doc = "\n\n".join(parts)
    keys = ["shao2024deepseekmath"]
    for group in re.findall(r"\\cite\{([^}]*)\}", doc):
        for k in group.split(","):
            if k in REFERENCES and k not in keys:
                keys.append(k)
    return doc + "\n\n" + _bibliography(keys) + "\n\n\\end{document}\n"


_OVERFULL = re.compile(r"Overfull \\hbox \(([\d.]+)pt too wide\) (?:in paragraph|detected) at lines? (\d+)")


class PdflatexError(RuntimeError):
    """pdflatex failed on ``tex``: ``error`` is its first error line (``! ...``), ``log`` the
    path of its log, which is kept; ``str()`` is one line naming both."""

    def __init__(self, tex, log, error: str):
        self.tex, self.log, self.error = Path(tex), Path(log), error
        super().__init__(f"pdflatex failed on {self.tex.name}: {error} (see {self.log})")


def write_equations(out_dir, *, compile_pdf: bool = True, names=None, extra_sections=(),
                    chapter_extras=None, warnings=None) -> Path:
    """Write ``equations.tex`` (and ``equations.pdf`` when pdflatex exists) and
    ``references.bib`` (the papers the document cites) into ``out_dir``.  ``warnings`` (a
    list) receives one line per line of the PDF wider than the text by more than 1 pt."""
    names = list(all_names() if names is None else names)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tex = out / "equations.tex"
    doc = equations_document(names, extra_sections, chapter_extras)
    tex.write_text(doc, encoding="utf-8")
    cited = [k for k in REFERENCES if f"{{{k}" in doc or f",{k}" in doc]
    (out / "references.bib").write_text(references_bib(cited), encoding="utf-8")
    if compile_pdf and shutil.which("pdflatex"):
        for _ in range(2):  # second pass resolves references
            try:
                proc = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error",
                                       tex.name], cwd=out, capture_output=True, text=True,
                                      timeout=300)
                error = None if proc.returncode == 0 else next(
                    (ln.strip() for ln in proc.stdout.splitlines() if ln.startswith("!")),
                    f"exit code {proc.returncode}")
            except subprocess.TimeoutExpired:
                error = "no result in 300 s"
            if error is not None:  # keep equations.log for the user to inspect; no partial PDF
                for ext in (".aux", ".out", ".toc", ".pdf"):
                    (out / f"equations{ext}").unlink(missing_ok=True)
                raise PdflatexError(tex, out / "equations.log", error)
        log = (out / "equations.log").read_text(errors="replace")
        if warnings is not None:
            for width, line in _OVERFULL.findall(log):
                if float(width) > 1.0:
                    warnings.append(f"equations.tex line {line}: a line {float(width):.0f} pt wider "
                                    "than the text")
        for ext in (".aux", ".log", ".out", ".toc"):  # pdflatex's by-products
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
