r"""The appendix "How the results follow": the derivation steps of the records, as displayed
chains of equalities.

A derivation records the intermediate expressions it computed on its way
(:meth:`grpo_theory.theory.derived.Derived.step`: ``(phrase, lhs, expression)``); this module
prints them with the project's printer, one chain per record, each step introduced by its
phrase, and ends the chain with the form printed in the body (proven equal to the derived
expression by the record's own checks).  Nothing here derives anything: every expression
printed is one the derivation computed (the atlas paragraph only substitutes the values
$\beta = 0$ and $\beta = 1$ into a drift record and divides, as the atlas does numerically).
"""

from __future__ import annotations

import re

import sympy as sp

from grpo_theory.prose import tex_label, to_tex
from grpo_theory.render.measure import _terms, display_width
from grpo_theory.theory.derived import Derived, get
from grpo_theory.theory.printing import latex

__all__ = ["derivation_chain", "derivations_appendix", "records_with_steps", "ATLAS_DRIFT"]

#: widest displayed line (the units of :func:`grpo_theory.render.measure.display_width`)
_LINE = 72.0

#: the drift record whose fixed points the atlas continues (std normalization, analytic KL,
#: stale surrogate, finite G: the model of :data:`grpo_theory.theory.atlas.ATLAS_MODEL`)
ATLAS_DRIFT = "drift.F_std_exact_stale_G"

_EQ = re.compile(r"\[\[eq:([\w.]+)\]\]")


def _phrase(text: str) -> str:
    """A step's phrase as LaTeX prose, ``[[eq:name]]`` written as the record's equation number."""
    refs = {}

    def hold(m):
        key = f"EQREF{len(refs)}X"
        refs[key] = f"\\eqref{{{tex_label(get(m.group(1)).label)}}}"
        return key

    tex = to_tex(_EQ.sub(hold, text))
    for key, ref in refs.items():
        tex = tex.replace(key, ref)
    return tex


def _order_tex(order) -> str:
    return "" if order is None else f" + O\\left({latex(order)}\\right)"


def _expr_rows(lhs: str | None, expr, body: str) -> list[str]:
    head = (lhs or "") + " &= "
    if display_width(head + body) <= _LINE or isinstance(expr, sp.MatrixBase):
        return [head + body]
    prefix, inner, suffix = "", expr, ""
    if isinstance(expr, sp.Mul):
        adds = [f for f in expr.args if isinstance(f, sp.Add)]
        rest = [f for f in expr.args if not isinstance(f, sp.Add)]
        if (len(adds) == 1 and not any(f.is_Pow and f.exp.is_negative for f in rest)
                and display_width(latex(adds[0])) > 0.5 * _LINE):
            prefix = (latex(sp.Mul(*rest)) + r" \left(") if rest else r"\left("
            inner, suffix = adds[0], r"\right)"
    if not isinstance(inner, sp.Add):
        return [head + body]
    rows, current = [], head + prefix
    for sign, tex in _terms(inner):
        piece = (f" {sign} " if sign else "") + tex
        if display_width(current + piece) > _LINE and display_width(current) > 12:
            rows.append(current + (r"\right." if prefix else ""))
            current = "&\\qquad " + (r"\left. " if prefix else "") + piece.lstrip()
        else:
            current += piece
    rows.append(current + suffix)
    return rows


def records_with_steps(names) -> list[str]:
    """The records among ``names`` whose derivation recorded its steps, in that order."""
    return [n for n in names if getattr(get(n), "steps", ())]


def derivation_chain(d: Derived) -> str:
    """The steps of ``d`` as one ``align*``: each step introduced by its phrase, a step without
    a left-hand side continuing the previous chain; the chain ends with the form of the body."""
    lines, last_lhs, last_tex = [], None, None
    for phrase, lhs, expr, order in d.steps:
        lines.append(f"\\intertext{{{_phrase(phrase)}:}}")
        body = latex(expr)
        rows = _expr_rows(lhs, expr, body)
        rows[-1] += _order_tex(order)
        lines.append(" \\\\\n".join(rows) + " \\\\")
        last_lhs = lhs if lhs is not None else last_lhs
        last_tex = body + _order_tex(order)
    shown = d.expr if d.display is None else d.display
    built = getattr(d, "latex_as_built", "")           # the body's form, printed when it was built
    shown_tex = (built[len(d.lhs) + 3:] if built.startswith(d.lhs + " = ") else latex(shown))
    ref = f"\\eqref{{{tex_label(d.label)}}}"
    if shown_tex != last_tex:
        named = [f"${latex(sym)}$" for sym, _, _ in d.where]
        words = (f"the form of {ref}" + (f", written with {', '.join(named)} as defined there"
                                         if named else "") + ", proven equal")
        lines.append(f"\\intertext{{{words}:}}")
        rows = _expr_rows(None if last_lhs == d.lhs else d.lhs, shown, shown_tex)
        lines.append(" \\\\\n".join(rows))
    elif lines:
        lines[-1] = lines[-1][:-3]
    return "\\begin{align*}\n" + "\n".join(lines) + "\n\\end{align*}"


def _atlas_paragraph() -> str:
    """How the atlas's fold test follows from the drift: its two values at beta = 0 and 1
    (computed here from the drift record's displayed form by substitution), their ratio B,
    the fold B' = 0 and the cusp B'' = 0."""
    d = get(ATLAS_DRIFT)
    form = d.display if d.display is not None else d.expr
    beta = next(s for s in form.free_symbols if s.name == "beta")
    z = sp.Symbol("z", real=True)
    at0, at1 = form.subs(beta, 0), form.subs(beta, 1)
    ratio = sp.simplify(at0 / (at0 - at1))
    A = next((sym for sym, _, rec in d.where if rec.startswith("drift.expected_advantage")), None)
    Phi = next((sym for sym, _, rec in d.where if rec.startswith("drift.kl_force")), None)
    if A is None or Phi is None:
        return ""
    Af, Pf = sp.Function("A")(z), sp.Function("Phi")(z)
    fold = sp.together(sp.diff(Af / Pf, z)).xreplace(
        {sp.Derivative(Af, z): sp.Symbol(latex(A) + "'"), sp.Derivative(Pf, z): sp.Symbol(latex(Phi) + "'")})
    fold = fold.xreplace({Af: A, Pf: Phi})
    ref = f"\\eqref{{{tex_label(d.label)}}}"
    return "\n".join([
        f"\\paragraph{{The atlas.}} The fixed points are the zeros of the drift {ref} "
        f"on the diagonal $z_{{\\mathrm{{old}}}} = z$, which is affine in $\\beta$. The atlas "
        "evaluates it at $\\beta = 0$ and $\\beta = 1$:",
        "\\begin{align*}",
        f"F|_{{\\beta = 0}} &= {latex(at0)}, \\qquad F|_{{\\beta = 0}} - F|_{{\\beta = 1}} = "
        f"{latex(sp.factor(at0 - at1))},",
        "\\intertext{so that $F = 0$ exactly on the level set}",
        f"\\beta &= \\beta^{{*}}(z) = \\frac{{F|_{{\\beta = 0}}}}{{F|_{{\\beta = 0}} - F|_{{\\beta = 1}}}} = "
        f"{latex(ratio)}.",
        "\\intertext{A fixed point is born or vanishes (a fold) where $\\beta$ is extremal along "
        "the level set, and the two folds meet (the cusp) where the extremum degenerates:}",
        f"\\frac{{\\mathrm{{d}} \\beta^{{*}}}}{{\\mathrm{{d}} z}} &= {latex(fold)} = 0, \\qquad "
        "\\frac{\\mathrm{d}^{2} \\beta^{*}}{\\mathrm{d} z^{2}} = 0 \\quad \\text{(cusp)}.",
        "\\end{align*}",
        "The fold curves in the $(\\beta, p_{\\mathrm{ref}})$ plane and the folds at each $G$ are "
        "the zeros of $\\mathrm{d} \\beta^{*}/\\mathrm{d} z$ computed numerically from these expressions; the cusp is where "
        "$p_{\\mathrm{ref}}$ is extremal along the fold curve.",
    ])


def derivations_appendix(names) -> str:
    """The appendix: for every record among ``names`` that recorded its steps, its title with
    its equation number and the chain of its steps; then how the atlas follows.  Empty when
    no record recorded steps."""
    chosen = records_with_steps(names)
    if not chosen:
        return ""
    parts = ["\\section{How the results follow}\\label{app:derivations}",
             to_tex("The derivations of the central results, step by step. Each expression below "
                    "is one the derivation computed on its way, printed from it; the phrase "
                    "before it says how it was obtained. A chain ends with the form printed in "
                    "the body, which the result's own checks prove equal to the last step.")]
    for n in chosen:
        d = get(n)
        parts.append(f"\\paragraph{{\\eqref{{{tex_label(d.label)}}} {to_tex(d.title or d.name)}.}}")
        parts.append(derivation_chain(d))
    if ATLAS_DRIFT in names:
        parts.append(_atlas_paragraph())
    return "\n\n".join(parts)
