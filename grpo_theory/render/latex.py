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
from grpo_theory.prose import escape_tex, tex_label, to_tex
from grpo_theory.render.notation import (NOTATION, latex_of as notation_latex, math_label,
                                         notation, notation_rows, notation_table)
from grpo_theory.theory.bibliography import REFERENCES, format_reference
from grpo_theory.theory.bibliography import bibtex as _bibtex
from grpo_theory.theory.chapters import CHAPTERS
from grpo_theory.theory.derived import Derived, all_names, get
from grpo_theory.render.measure import _strip_frac, _terms, display_width  # noqa: F401 (re-exported)
from grpo_theory.theory.printing import latex

__all__ = ["REFERENCES", "NOTATION", "prose_tex", "notation", "math_label", "notation_table",
           "notation_rows", "equations_document", "write_equations", "references_bib",
           "citation", "escape_tex", "equation_block", "METHOD_LABELS", "method_label",
           "verification_appendix", "LIBRARY_NAMES", "display_width", "document_order",
           "equation_numbers", "write_result_files", "result_tex", "notation_macros",
           "macro_name", "result_file_name", "package_authors", "record_parts", "prepare_equations"]

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
        label = METHOD_LABELS.get(v.method) or escape_tex(v.method)
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

def _equation(lhs: str, shown, label: str, tag: str = "") -> str:
    """``lhs = shown`` as a numbered display: one line when it fits, else a ``multline`` broken
    before top-level terms (a product of a factor and a long sum is broken inside the sum).
    ``tag`` (a definition's "D3") replaces the result number; ``label="*"`` an unnumbered display."""
    if label == "*":
        return _equation(lhs, shown, "").replace("\\label{}", "\\notag", 1)
    if tag:
        label = label + "}\\tag{" + tag
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
    if not (refs or local or (proof is not None and not proof.passed)):
        return ""
    parts = []
    for rec, syms in refs.items():
        parts.append(" and ".join(syms) + f" from \\eqref{{{tex_label(get(rec).label)}}}")
    # a definition with a fraction is displayed, never set inline in the sentence
    inline = [(s, t) for s, t in local
              if display_width(f"{s} = {t}") <= 0.55 * _LINE and "\\frac" not in t]
    short = [f"${s} = {t}$" for s, t in inline]
    long = [(s, t) for s, t in local if (s, t) not in inline]
    text = ""
    if parts:
        text = "with " + (", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else parts[0])
    if short:
        text += (", where " if text else "where ") + ", ".join(short)
    if long:
        text += (", where" if not short and text else (" and" if short else "where"))
        for s, t in long:
            text += f"\n\\begin{{equation*}}\n{s} = {t}\n\\end{{equation*}}"
    if proof is not None and not proof.passed:      # a failed proof is said where it failed
        text = (text + ("" if long else ";") + " " if text else "") + \
            f"the form shown is not proven equal to the derived expression\\verified{{{method_label(proof)}}}"
    elif text and not long:
        text += "."
    return text


#: records that define a quantity rather than derive a result: displayed with a tag D1, D2, ...
#: of their own, not numbered among the results
DEFINITIONS = ("drift.advantage_sum_std", "drift.advantage_sum_mean", "drift.binomial_log_weight",
               "drift.degenerate_probability", "discrete.refresh_step_matrix",
               "oscillator.damping_ratio")

#: records that restate another result (the same condition solved for another variable, or a
#: special case equal to it): printed under that result as an equivalent form, without a
#: number of their own (a reference to one gives the number of its host)
DUPLICATES = {"oscillator.critical_learning_rate": "oscillator.critical_momentum",
              "oscillator.critical_stiffness": "oscillator.critical_momentum",
              "noise.ar2_stability_bound": "discrete.delay_threshold_d0",
              "adam.critical_step": "discrete.refresh_critical_damping"}


def _ref(name) -> str:
    return f"\\eqref{{{tex_label(get(name).label)}}}"


def _adam_derivation() -> str:
    """The derivation of Adam's self-consistent step (``adam.self_consistent_step``) as
    displayed equalities, each side computed here from the records it uses and proven equal
    by sympy before it is printed."""
    from grpo_theory.theory import symbols as S
    from grpo_theory.theory.derived import prove_zero
    mu, a, K, s2 = S.mu, S.a, S.K, S.sigma2
    rec = get("adam.self_consistent_step")
    a_sig = sp.Symbol(r"a_{\sigma}", positive=True)
    force = a * (1 + mu) / ((1 - mu) * (2 * (1 + mu) - a))
    if not prove_zero(sp.together(K**2 * get("noise.ar2_variance").expr.subs(S.eta, a / K) / s2
                                  - force)):
        raise AssertionError("the displayed force fluctuation of Adam's derivation is wrong")
    total = 1 + force
    combined = 2 * ((1 - mu**2) + mu * a) / ((1 - mu) * (2 * (1 + mu) - a))
    for lhs, rhs in ((total, combined), (combined, (rec.expr / a) ** 2)):
        if not prove_zero(sp.together(lhs - rhs)):
            raise AssertionError("the displayed derivation of Adam's self-consistent step is wrong")
    vx = r"\operatorname{Var} z"
    return "\n".join([
        "\\paragraph{Derivation.} By " + _ref("adam.momentum_form") + " with the bias correction "
        "complete, Adam is a heavy ball with momentum $\\mu$ and step "
        "$a = \\eta_{\\theta} K = \\eta (1 - \\mu) K/\\sqrt{\\overline{g^{2}}}$; with "
        "$a_{\\sigma} = \\eta (1 - \\mu) \\kappa K/\\sigma$ this reads",
        "\\begin{equation*}\n\\frac{\\kappa^{2} \\overline{g^{2}}}{\\sigma^{2}} = "
        + latex(a_sig**2 / a**2) + ".\n\\end{equation*}",
        "At stationarity the squared gradient averages the noise and the restoring force's "
        f"fluctuation, $\\kappa^{{2}} \\overline{{g^{{2}}}} = \\sigma^{{2}} + K^{{2}} {vx}$, and "
        + _ref("noise.ar2_variance") + " gives the variance of the heavy ball at the step $a$:",
        "\\begin{equation*}\n\\frac{K^{2} " + vx + "}{\\sigma^{2}} = " + latex(force)
        + ".\n\\end{equation*}",
        "The two together:",
        "\\begin{equation*}\n" + latex(a_sig**2 / a**2) + " = 1 + " + latex(force) + " = "
        + latex(combined) + ",\n\\end{equation*}",
        "which is " + _ref("adam.self_consistent_step") + ". Its right-hand side increases "
        "with $a$ from $1$ at $a = 0$ to infinity at $a = 2 (1 + \\mu)$, so every learning "
        "rate has one self-consistent step and it lies below the flip threshold of "
        + _ref("discrete.delay_threshold_d0") + ": a learning rate that a first-order reading "
        "($a = a_{\\sigma}$) would put past the threshold is held below it by the growth of "
        "$\\overline{g^{2}}$. The critical damping of the step, $a = (1 - \\sqrt{\\mu})^{2}$ "
        "(" + _ref("discrete.refresh_critical_damping") + " at $k = 1$), is reached where "
        "$a_{\\sigma}$ takes the value of " + _ref("adam.self_consistent_step") + " there.",
    ])


#: derivations displayed after a result (record name -> function returning LaTeX)
DERIVATIONS = {"adam.self_consistent_step": _adam_derivation}


def _duplicates(names) -> dict:
    """The entries of :data:`DUPLICATES` whose record and host are both among ``names``."""
    names = set(names)
    return {d: h for d, h in DUPLICATES.items() if d in names and h in names}


def _restatement(d: Derived) -> str:
    """A record that restates its host, under the host: its description, its form unnumbered
    (its label refers to the host's number) and its checks."""
    shown = d.expr if d.display is None else d.display
    lines = [f"\\emph{{Equivalently ({prose_tex(d.title or d.name).lower()}).}} "
             f"{prose_tex(d.description)}{_cites(d.references)}",
             _equation(d.lhs, shown, "*")]
    where = _where(d)
    if where:
        lines.append("\\noindent " + where + ("" if where.endswith("}") else "\\par"))
    proof = _shown_proof(d)
    checks = [v for v in d.verifications if v is not proof]
    if checks:
        lines += ["\\emph{Verified:}", "\\begin{itemize}\\setlength\\itemsep{0pt}",
                  *(_verification_line(v) for v in checks), "\\end{itemize}"]
    return "\n".join(lines)


def equation_block(d: Derived, tag: str = "", restates=()) -> str:
    """One result: its title, description, labelled equation (the project's printer on the
    displayed form of ``d``), named sub-expressions, assumptions and how each claim about it
    was verified.  ``tag``: a definition's own tag (D1, ...); ``restates``: the records that
    restate this one (:data:`DUPLICATES`), printed after it as equivalent forms."""
    title = d.title or d.name
    head = "Definition: " if tag else ""
    lines = [f"\\paragraph{{{head}{prose_tex(title)}.}} {prose_tex(d.description)}{_cites(d.references)}"]
    shown = d.expr if d.display is None else d.display
    lines.append(_equation(d.lhs, shown, tex_label(d.label), tag)
                 + "".join(f"\\label{{{tex_label(r.label)}}}" for r in restates))
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
    lines.extend(_restatement(r) for r in restates)
    return "\n".join(lines)


#: records printed as one equation and a table of their forms (name prefix -> heading): they
#: are variants of one formula, each still numbered (a row of the table) so that it can be
#: referred to
VARIANT_TABLES = {"drift.F_": "The drift of every variant"}


def _variant_words(title: str) -> list[str]:
    """``"Drift: std normalization, k3 KL, ratio surrogate, finite $G$"`` -> the four settings
    in short words (``std``, ``k3``, ``ratio``, ``finite $G$``)."""
    parts = [p.strip() for p in title.split(":", 1)[-1].split(",")]
    short = [re.sub(r" (normalization|surrogate)$", "", p) for p in parts]
    short = [re.sub(r"^(no|analytic|k3|k1) KL", r"\1", p) for p in short]
    return short


def variant_table(names, heading: str) -> str:
    """Records that are variants of one formula as one displayed formula and a table: a row
    per variant with its equation number, its settings and its form; the named pieces and
    the checks once, each check with the rows it was carried out for."""
    ds = [get(n) for n in names]
    rows, pieces, checks = [], {}, {}
    for d in ds:
        shown = d.expr if d.display is None else d.display
        words = _variant_words(d.title or d.name)
        rows.append("\\refstepcounter{equation}(\\theequation)\\label{" + tex_label(d.label) + "} & "
                    + " & ".join(prose_tex(w) for w in words) + f" & ${latex(shown)}$ \\\\")
        for sym, _defn, rec in d.where_latex():
            if rec and rec != NOTATION_REF:
                pieces.setdefault(sym, [])
                if rec not in pieces[sym]:
                    pieces[sym].append(rec)
        proof = _shown_proof(d)
        for v in d.verifications:
            if v is proof:
                continue
            checks.setdefault((v.claim, method_label(v), v.detail if v.method != "sympy" else ""),
                              []).append(d.name)
    order = [d.name for d in ds]
    with_ = "; ".join(f"${sym}$ " + ", ".join(f"\\eqref{{{tex_label(get(r).label)}}}" for r in recs)
                      for sym, recs in pieces.items())
    lhs = ds[0].lhs
    assumptions = {d.assumptions for d in ds}
    lines = [f"\\paragraph{{{prose_tex(heading)}.}} The drift of each combination of normalization, "
             "KL penalty, surrogate and group size is one formula,",
             "\\begin{equation*}\n" + lhs + " = \\kappa \\left(\\Psi \\mathcal{A}_{G} - \\beta \\Phi_{\\mathrm{exact}}\\right),"
             "\n\\end{equation*}",
             "with $\\Psi = 1$ for the stale surrogate, the advantage mass of the normalization at "
             "finite $G$ ($\\mathcal{A}_{\\infty}$ or $p_{\\mathrm{old}} q_{\\mathrm{old}}$ in its place "
             "as $G \\to \\infty$), and the force of the KL penalty ($\\Phi_{\\mathrm{k3}}$ or "
             "$\\Phi_{\\mathrm{k1}}$ in place of $\\Phi_{\\mathrm{exact}}$, none without one; with the "
             "KL in the reward it enters the advantage). The table gives "
             "each variant's form; each row is numbered as an equation. The pieces: " + with_ + ".",
             "{\\small\\begin{longtable}{@{}rlllll@{}}",
             "& normalization & KL & surrogate & group & $" + lhs + "$ \\\\ \\hline\\endhead",
             *rows, "\\end{longtable}}"]
    if len(assumptions) == 1 and next(iter(assumptions)):
        lines.append(f"\\emph{{Assumptions (every row):}} {prose_tex(next(iter(assumptions)))}.")
    items = []
    for (claim, label, detail), recs in checks.items():
        finite = [d.name for d in ds if "finite" in (d.title or "")]
        which = ("every row" if len(recs) == len(ds) else
                 f"the {len(recs)} rows at finite $G$" if sorted(recs) == sorted(finite) else
                 "the rows " + _ranges(recs, order).replace("\\eqref", "\\ref"))
        items.append(f"\\item {prose_tex(claim)}" + (f" ({prose_tex(detail)})" if detail else "")
                     + f", for {which}\\verified{{{label}}}")
    if items:
        lines += ["\\emph{Verified:}", "\\begin{itemize}\\setlength\\itemsep{0pt}", *items,
                  "\\end{itemize}"]
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
    # ragged right: a long handle or address is not stretched across the line
    return ("\\begin{thebibliography}{99}\\raggedright\n" + "\n".join(items)
            + "\n\\end{thebibliography}")


def _ranges(names, order) -> str:
    """Equation references of ``names`` with runs of consecutive equations as ranges:
    (1), (4), (14)--(25).  ``order``: every record of the document in order (one numbered
    equation each)."""
    dups = _duplicates(order)
    names = {dups.get(n, n) for n in names}           # a restatement is cited by its host
    defs = [n for n in order if n in names and n in DEFINITIONS]
    order = [n for n in order if n not in DEFINITIONS and n not in dups]
    pos = sorted(order.index(n) for n in names if n in order)
    head = ", ".join(f"\\eqref{{{tex_label(get(n).label)}}}" for n in defs)
    if not pos:
        return head
    runs, start = [], pos[0]
    for a, b in zip(pos, pos[1:] + [None]):
        if b != a + 1:
            runs.append((start, a))
            start = b
    ref = lambda i: f"\\eqref{{{tex_label(get(order[i]).label)}}}"  # noqa: E731
    return ", ".join(([head] if head else [])
                     + [ref(a) if a == b else (f"{ref(a)}, {ref(b)}" if b == a + 1 else f"{ref(a)}--{ref(b)}")
                        for a, b in runs])


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
    return "\\emph{Relation to the literature:} " + "; ".join(parts) + "."


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
        "``where'' below an equation) is proven equal to the derived expression by symbolic "
        "simplification; that proof certifies the typesetting, not the mathematics, and is not "
        "listed under each result.",
        f"\\paragraph{{Symbolic proof ({counts['sympy']} claims).}} The claim is an identity that "
        "the computer algebra reduces to zero: by simplification (with the substitution "
        "$q = 1 - p$ where probabilities appear), by a series expansion for a limit or an order, "
        "by solving an equation and comparing the roots, or by induction in a symbolic index. "
        "Each proof was also run on deliberately perturbed expressions and required to fail there, "
        "so a proof that cannot fail is not counted.",
        f"\\paragraph{{Exact check for listed values ({counts['cases']} claims).}} The same kind of "
        "identity, established separately for each listed value of a parameter, for example the "
        "drift against the GRPO objective built from all $2^{G}$ reward vectors at $G = 2, 3, 4$. "
        "It checks a statement about every value at those values; the general statement rests on "
        "the derivation itself.",
        f"\\paragraph{{High-precision numerics ({counts['mpmath']} claims).}} An independent "
        "computation in arbitrary-precision arithmetic (mpmath~\\cite{mpmath}) at 30 to 50 "
        "significant digits: the matrix exponential of the oscillator's first-order system "
        "for its closed-form trajectories, integration of the differential equation by its "
        "Taylor series for the logit's trajectories without KL, root finding for the first "
        "extremum of the oscillator, Gaussian quadrature for the reward fluctuation, and "
        "Richardson extrapolation in $G$ for the large-$G$ expansions. The number of agreeing "
        "digits is stated with each claim.",
        f"\\paragraph{{Sampled numeric check ({counts['numeric']} claims).}} A comparison in double "
        "precision at listed points: the Lyapunov equations solved by SciPy's linear-algebra "
        "solvers~\\cite{virtanen2020scipy}, the roots of characteristic "
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
    rows = [f"\\makebox[2.6em][r]{{\\eqref{{{tex_label(get(n).label)}}}}}\\quad\\texttt{{{escape_tex(n)}}}\\par"
            for n in names]
    return "\n".join([
        "\\section{Index of results}\\label{app:index}",
        "The name under which the accompanying software computes each result; the file of the "
        "result for inclusion in another document carries the same name.",
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
            f"The {n} derived results follow, each with its assumptions "
            "and the checks that verified it, the two-parameter bifurcation atlas of the "
            "fixed points and of the discrete map, and a comparison with real GRPO training of a "
            "small transformer. "
            + _verification_key() + "\\end{abstract}")


#: chapters printed as a subsection of another (key -> the chapter they follow, inside it)
MERGED_CHAPTERS = {"reuse_collapse": "reuse"}


def _document_chapters() -> list:
    """The chapters in the order of the document: a merged chapter right after its host."""
    merged = {v: k for k, v in MERGED_CHAPTERS.items()}
    out = []
    for ch in CHAPTERS:
        if ch.key in MERGED_CHAPTERS:
            continue
        out.append(ch)
        if ch.key in merged:
            out += [c for c in CHAPTERS if c.key == merged[ch.key]]
    return out


def document_order(names=None) -> list[str]:
    """The records in the order of the document (chapter by chapter); the equation number of
    each is its position plus one (one numbered equation per result)."""
    names = list(all_names() if names is None else names)
    return [n for ch in _document_chapters() for n in names if n.split(".")[0] == ch.key]


def equation_numbers(names=None) -> dict:
    """Record name -> its equation number in ``equations.pdf``: the results numbered in
    document order; a definition by its tag ("D1", ...); a restatement by its host's number."""
    order = document_order(names)
    dups = _duplicates(order)
    out, n, nd = {}, 0, 0
    for name in order:
        if name in dups:
            continue
        if name in DEFINITIONS:
            nd += 1
            out[name] = f"D{nd}"
        else:
            n += 1
            out[name] = n
    out.update({d: out[h] for d, h in dups.items()})
    return out


def package_authors() -> str:
    """The package's authors, as its metadata gives them (the authorship line of the documents
    and of :func:`citation`)."""
    try:
        from importlib.metadata import metadata
        md = metadata("grpo-theory")
        author = md.get("Author") or (md.get("Author-email") or "").split("<")[0].strip()
    except Exception:  # noqa: BLE001 - not installed: the name the project gives itself
        author = ""
    return author or "grpo-theory developers"


def record_parts(names=None) -> dict:
    """The parts of :func:`equations_document` that depend on the records ``names`` alone
    (default: all registered ones): each chapter's heading, introduction and results, and the
    appendices, as ``{"names": [...], "chapters": {key: (head, results)}, "appendix": [...]}``.
    Computed apart so that a caller can compute them while it computes the rest (the report
    does, beside its figures) and pass them to :func:`equations_document`."""
    names = list(all_names() if names is None else names)
    by_prefix = {}
    for name in names:
        by_prefix.setdefault(name.split(".")[0], []).append(name)
    order = document_order(names)          # one numbered equation each, in this order
    dups, numbers = _duplicates(order), equation_numbers(order)
    chapters = {}
    for ch in _document_chapters():
        if ch.key not in by_prefix:
            continue
        head = [("\\subsection" if ch.key in MERGED_CHAPTERS else "\\section")
                + f"{{{ch.latex_title}}}"]
        if ch.latex_intro:
            head.append(prose_tex(ch.latex_intro))
        head.append(_literature_sentence(by_prefix[ch.key], order))
        results = []
        done = set(dups)
        for name in by_prefix[ch.key]:
            if name in done:
                continue
            prefix = next((p for p in VARIANT_TABLES if name.startswith(p)), None)
            if prefix is None:
                tag = numbers[name] if name in DEFINITIONS else ""
                results.append(equation_block(get(name), str(tag),
                                              [get(r) for r, h in dups.items() if h == name]))
                if name in DERIVATIONS:
                    results.append(DERIVATIONS[name]())
                continue
            group = [n for n in by_prefix[ch.key] if n.startswith(prefix)]
            done.update(group)
            results.append(variant_table(group, VARIANT_TABLES[prefix]))
        chapters[ch.key] = (head, results)
    from grpo_theory.render.derivations import derivations_appendix
    appendix = ["\\appendix",
                "\\section{Notation}\\label{app:notation}",
                "One symbol, one meaning, in this document and its figures. Time is counted in "
                "optimizer steps; a subscript $t$, $j$, $i$ or $n$ indexes a symbol (step, step in a "
                "window, sample, number of correct samples).",
                notation_table(),
                derivations_appendix(order), verification_appendix(order), _index(order)]
    return {"names": names, "chapters": chapters, "appendix": appendix}


def equations_document(names=None, extra_sections=(), chapter_extras=None, *, title=None,
                       abstract=None, front_sections=(), back_sections=(), records=None) -> str:
    """The standalone LaTeX document of the derived results (all registered ones by default).

    ``extra_sections`` are ``(title, latex_body)`` pairs placed after the chapters (the report
    adds the bifurcation atlas there); ``chapter_extras`` maps a chapter key to LaTeX placed
    after that chapter's introduction (the report's figures and the paragraph that refers to
    them; the chapter's figures are put out before the next section begins).
    Both may cite keys of :data:`REFERENCES` through ``\\cite``.  ``records``: the records'
    parts computed ahead by :func:`record_parts` for the same ``names`` (else computed here).
    """
    chapter_extras = chapter_extras or {}
    names = list(all_names() if names is None else names)
    if records is None or records["names"] != names:
        records = record_parts(names)
    parts = [*_PREAMBLE,
             f"\\title{{{escape_tex(title or 'GRPO training dynamics: derived results')}}}",
             f"\\author{{{escape_tex(package_authors())}}}", "\\date{}",
             "\\begin{document}",
             "\\maketitle",
             abstract if abstract is not None else _abstract(
                 sum(isinstance(v, int) for v in set(equation_numbers(names).values())))]
    for sec_title, body in front_sections:
        parts += [f"\\section{{{to_tex(sec_title)}}}", body]
    for key, (head, results) in records["chapters"].items():
        parts += head
        if key in chapter_extras:
            parts.append(chapter_extras[key])
        parts += results
        if key in chapter_extras:
            parts.append("\\floatbarrier")
    for title, body in extra_sections:
        parts.append(f"\\section{{{to_tex(title)}}}")
        parts.append(body)
        if "\\begin{figure}" in body:
            parts.append("\\floatbarrier")
    for sec_title, body in back_sections:
        parts += [f"\\section{{{to_tex(sec_title)}}}", body]
    parts += records["appendix"]
    doc = "\n\n".join(parts)
    keys = ["shao2024deepseekmath"]
    for group in re.findall(r"\\cite\{([^}]*)\}", doc):
        for k in group.split(","):
            if k in REFERENCES and k not in keys:
                keys.append(k)
    return doc + "\n\n" + _bibliography(keys) + "\n\n\\end{document}\n"


# ------------------------------------------------------------------------------------
# one file per result, to \input into another document
# ------------------------------------------------------------------------------------

#: the folder of the per-result files, inside the output directory
RESULTS_DIR = "results"
#: the notation macros file, inside :data:`RESULTS_DIR`
NOTATION_FILE = "grpo-notation.tex"

_DIGIT_WORDS = ("Zero", "One", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight", "Nine")


def macro_name(key: str) -> str:
    """The notation macro of a symbol key: ``p_ref`` -> ``\\grpopref``, ``K_f`` -> ``\\grpoKf``,
    ``l_1`` -> ``\\grpolOne`` (letters only, the key's case kept)."""
    body = "".join(_DIGIT_WORDS[int(c)] if c.isdigit() else c for c in key if c.isalnum())
    return "\\grpo" + body


def result_file_name(name: str) -> str:
    """The file of one result: its record name with ``.`` as ``-`` (``discrete-refresh_flip_threshold.tex``)."""
    return name.replace(".", "-") + ".tex"


def notation_macros() -> str:
    """The notation macros file: one ``\\providecommand`` per symbol of the notation table (its
    meaning as a comment) and the three macros the result files use around their equation,
    each of which a document may redefine (to nothing, to drop that part)."""
    lines = ["% Notation of the grpo-theory results: one macro per symbol, one meaning each.",
             "% Needs \\usepackage{amsmath,amssymb}. Input it once, before the results:",
             "%   \\input{" + RESULTS_DIR + "/" + NOTATION_FILE + "}",
             "% Every macro is \\providecommand: a document's own definition wins.",
             "\\providecommand{\\grpowhere}[1]{\\par\\noindent #1\\par}",
             "\\providecommand{\\grpoconditions}[1]{\\par\\noindent\\emph{Conditions:} #1\\par}",
             "\\providecommand{\\grposource}[1]{\\par\\noindent\\emph{Source:} #1\\par}"]
    seen = {}
    for key in NOTATION:
        macro = macro_name(key)
        if macro in seen:
            raise ValueError(f"notation keys {seen[macro]!r} and {key!r} give the same macro {macro}")
        seen[macro] = key
        meaning = re.sub(r"\s+", " ", NOTATION[key][1])
        lines.append(f"\\providecommand{{{macro}}}{{{notation_latex(key)}}}  % {meaning}")
    return "\n".join(lines) + "\n"


def result_tex(d: Derived) -> str:
    """One result as a fragment to ``\\input``: its labelled displayed equation, the named
    sub-expressions it is written with, its conditions and its source (``\\grpowhere``,
    ``\\grpoconditions``, ``\\grposource`` of :func:`notation_macros`)."""
    shown = d.expr if d.display is None else d.display
    out = [f"% {d.title or d.name} (grpo-theory {__version__}, result {d.name})",
           "% " + re.sub(r"\s+", " ", d.description),
           "% Needs amsmath, amssymb and the notation file " + RESULTS_DIR + "/" + NOTATION_FILE + ".",
           _equation(d.lhs, shown, tex_label(d.label))]
    refs, local, uses = [], [], []
    for sym, defn, rec in d.where_latex():
        if rec == NOTATION_REF:
            continue
        if rec:
            refs.append(f"${sym}$ from \\eqref{{{tex_label(get(rec).label)}}}")
            uses.append(result_file_name(rec))
        else:
            local.append(f"${sym} = {defn}$")
    if uses:
        out.insert(3, "% Refers to the results of " + ", ".join(dict.fromkeys(uses)) + ".")
    if refs or local:
        out.append("\\grpowhere{" + ("with " + ", ".join(refs) if refs else "")
                   + ("; " if refs and local else "") + ("where " + ", ".join(local) if local else "")
                   + ".}")
    if d.assumptions:
        out.append(f"\\grpoconditions{{{prose_tex(d.assumptions)}.}}")
    keys = [k for k in d.references if k in REFERENCES]
    out.append("\\grposource{" + (f"\\cite{{{','.join(keys)}}}; " if keys else "")
               + f"derived in grpo-theory~{escape_tex(__version__)}.}}")
    return "\n".join(out) + "\n"


def write_result_files(out_dir, names=None) -> Path:
    """Write ``out_dir/results/``: one ``.tex`` per result (:func:`result_tex`, named by
    :func:`result_file_name`) and the notation macros file (:func:`notation_macros`); the
    papers they cite are in ``references.bib`` beside them.  Returns the folder."""
    names = list(all_names() if names is None else names)
    folder = Path(out_dir) / RESULTS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    (folder / NOTATION_FILE).write_text(notation_macros(), encoding="utf-8")
    for n in names:
        (folder / result_file_name(n)).write_text(result_tex(get(n)), encoding="utf-8")
    (folder / "references.bib").write_text(references_bib(_used_keys(names)), encoding="utf-8")
    return folder


_OVERFULL = re.compile(r"Overfull \\hbox \(([\d.]+)pt too wide\) (?:in paragraph|detected) at lines? (\d+)")


class PdflatexError(RuntimeError):
    """pdflatex failed on ``tex``: ``error`` is its first error line (``! ...``), ``log`` the
    path of its log, which is kept; ``str()`` is one line naming both."""

    def __init__(self, tex, log, error: str):
        self.tex, self.log, self.error = Path(tex), Path(log), error
        super().__init__(f"pdflatex failed on {self.tex.name}: {error} (see {self.log})")


def prepare_equations(out_dir, names=None) -> dict:
    """What :func:`write_equations` computes from the records ``names`` alone, done ahead (the
    report does it beside its figures): the result files written into ``out_dir``
    (:func:`write_result_files`) and the document's record parts returned
    (:func:`record_parts`), for ``write_equations(..., prepared=...)``."""
    names = list(all_names() if names is None else names)
    write_result_files(out_dir, names)
    return record_parts(names)


def write_equations(out_dir, *, compile_pdf: bool = True, names=None, extra_sections=(),
                    chapter_extras=None, warnings=None, paper=None, prepared=None) -> Path:
    """Write ``equations.tex`` (and ``equations.pdf`` when pdflatex exists) and
    ``references.bib`` (the papers the document cites) into ``out_dir``.  ``warnings`` (a
    list) receives one line per line of the PDF wider than the text by more than 1 pt.
    ``prepared``: :func:`prepare_equations`'s result for the same ``out_dir`` and ``names``."""
    names = list(all_names() if names is None else names)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tex = out / "equations.tex"
    records = prepared if prepared is not None and prepared["names"] == names else None
    doc = equations_document(names, extra_sections, chapter_extras, **(paper or {}), records=records)
    tex.write_text(doc, encoding="utf-8")
    cited = [k for k in REFERENCES if f"{{{k}" in doc or f",{k}" in doc]
    (out / "references.bib").write_text(references_bib(cited), encoding="utf-8")
    if records is None:
        write_result_files(out, names)
    if compile_pdf and shutil.which("pdflatex") and not _reuse_pdf(out, doc, warnings):
        for draft in (True, False):  # the second pass resolves references
            try:
                # the first pass only writes the references (equations.aux): -draftmode skips
                # writing a PDF that the second pass overwrites
                proc = subprocess.run(["pdflatex", *(["-draftmode"] if draft else []),
                                       "-interaction=nonstopmode", "-halt-on-error", tex.name],
                                      cwd=out, capture_output=True, text=True, timeout=300)
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
        _keep_pdf(out, doc, log)
    return tex


def _pdf_key(out: Path, doc: str) -> str:
    """Hash of what pdflatex reads: the document and every figure file it includes."""
    import hashlib

    h = hashlib.sha256(doc.encode())
    for name in sorted(set(re.findall(r"\\includegraphics(?:\[[^]]*\])?\{([^}]*)\}", doc))):
        f = out / name
        h.update(name.encode())
        h.update(f.read_bytes() if f.is_file() else b"absent")
    return h.hexdigest()[:24]


def _pdf_entry(out: Path, doc: str):
    from grpo_theory.report.warm import reuse_dir

    base = reuse_dir()
    return None if base is None else base / "pdf" / _pdf_key(out, doc)


def _reuse_pdf(out: Path, doc: str, warnings) -> bool:
    """The PDF of an identical document with identical figures, compiled before (the report's
    warm path, :mod:`grpo_theory.report.warm`): copied with its log's warnings; False when
    there is none."""
    entry = _pdf_entry(out, doc)
    if entry is None or not (entry / "equations.pdf").is_file() or not (entry / "equations.log").is_file():
        return False
    shutil.copyfile(entry / "equations.pdf", out / "equations.pdf")
    if warnings is not None:
        log = (entry / "equations.log").read_text(errors="replace")
        for width, line in _OVERFULL.findall(log):
            if float(width) > 1.0:
                warnings.append(f"equations.tex line {line}: a line {float(width):.0f} pt wider "
                                "than the text")
    return True


def _keep_pdf(out: Path, doc: str, log: str) -> None:
    entry = _pdf_entry(out, doc)
    if entry is None:
        return
    try:
        entry.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(out / "equations.pdf", entry / "equations.pdf")
        (entry / "equations.log").write_text(log)
    except OSError:
        pass


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
    return (f"{package_authors()}. Generated by grpo-theory {__version__} from {len(names)} derived results "
            f"({', '.join(names[:6])}{', ...' if len(names) > 6 else ''}). "
            f"Rests on: {papers or 'no external results'}.")
