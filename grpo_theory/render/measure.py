"""Measures of typeset math shared by the equation renderer (:mod:`grpo_theory.render.latex`)
and the derivations appendix (:mod:`grpo_theory.render.derivations`): a display's rough width
and the top-level terms of a sum as the printer writes them."""

from __future__ import annotations

import re

from grpo_theory.theory.printing import Printer

__all__ = ["display_width"]


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
