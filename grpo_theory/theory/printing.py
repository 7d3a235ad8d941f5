r"""The one LaTeX printer of the project: sympy's :class:`LatexPrinter` with the conventions
of a mathematics paper.

Every formula the documents show (``Derived.latex``, the report, the book, the formulas
quoted inside descriptions) is printed by :func:`latex`.  The printer changes how an
expression is *written*, never which expression it is (every rule below rewrites a node into
one that sympy itself evaluates to the same node, or only changes the order in which the
terms or factors of one node are printed):

- an upright differential :math:`\mathrm{d}` (the letter :math:`d` is the delay);
- standard names: :math:`\log\Gamma` (``loggamma``), :math:`\operatorname{arsinh}`,
  :math:`\arctan` (inverse functions in full), :math:`\operatorname{sgn}` (``sign``) and
  :math:`\arg(x + i y)` for ``atan2(y, x)``;
- no fraction inside a fraction or an exponent: a fraction met while printing the numerator,
  the denominator or an exponent of another is written on the line, :math:`a/(b c)`; a long
  exponent of :math:`e` is written :math:`\exp(\dots)`;
- one order for the terms of a sum (:func:`term_order`), as a mathematician writes it: a
  positive constant first and a negative one last, then the simpler terms before the more
  composite ones (:math:`1 + \sqrt{G}\epsilon`, :math:`1 - \mu - \eta K_{s}\ell`,
  :math:`2 + 2\mu - \eta K`, :math:`2 p - 1`), and a polynomial in an eigenvalue or a
  characteristic exponent (:math:`\lambda`, :math:`s`) in descending powers of it, each
  power written after its coefficient (:math:`\lambda^{d+1} - (1 + \mu - \eta K_{f})\lambda^{d}
  + \mu\lambda^{d-1} + \eta K_{s}`); in an exponent and in the argument of :math:`\Gamma` (an
  index) the constant goes last, :math:`\lambda^{d+1}`, :math:`\log\Gamma(n + 1)`;
- a sum does not start with a minus sign when it has a positive term
  (:math:`1 - a k/(1 - \mu)`, not :math:`-a k/(1 - \mu) + 1`);
- a product with a leading minus sign and a factor that reads better negated absorbs the
  sign into it (:math:`n (G - n)/G^{2}`, not :math:`-n (-G + n)/G^{2}`);
- in a product the coefficients come in the order the text writes them:
  :math:`\kappa, \beta, \eta, K` before the other factors (:math:`\eta K`, :math:`\eta K_{s}\ell`).
"""

from __future__ import annotations

import sympy as sp
from sympy.core.mul import Mul
from sympy.printing.latex import LatexPrinter
from sympy.printing.precedence import PRECEDENCE
from sympy.simplify.radsimp import fraction

from grpo_theory.theory.symbols import LATEX_NAMES

__all__ = ["Printer", "latex", "absorbed_sign", "FACTOR_ORDER", "MAIN_VARIABLES", "term_order",
           "term_weight", "root", "sci"]

#: Symbols printed first in a product, in this order (by sympy name).
FACTOR_ORDER = ("kappa", "Psi", "beta", "eta", "a", "K", "K_f", "K_s")

#: Variables a polynomial is written in descending powers of (by sympy name): the eigenvalue
#: of a map and the characteristic exponent of a differential equation.
MAIN_VARIABLES = ("lambda", "s")

#: an exponent of e longer than this (characters of LaTeX) is printed as exp(...)
_LONG_EXPONENT = 40


def _negative(term) -> bool:
    return bool(term.could_extract_minus_sign())


def term_weight(term) -> float:
    r"""How composite a term is, for :func:`term_order`: a number weighs 0, a symbol 1, a
    function 1 plus its heaviest argument, a product the sum of its factors, an integer power
    ``n`` times its base, any other power (a root, a symbolic exponent) its base, a sum its
    heaviest term.  So
    :math:`\mu` (1) comes before :math:`\eta K_{s}\ell` (3), and :math:`\ell (1 - \mu)` (2)
    before :math:`\sqrt{(1 + \mu)(1 + \mu + 2\ell(1 - \mu))}` (3)."""
    if term.is_Number or not term.free_symbols:
        return 0
    if term.is_Symbol:
        return 1
    if isinstance(term, sp.Function):
        return 1 + max((term_weight(a) for a in term.args), default=0)
    if isinstance(term, Mul):
        return sum(term_weight(f) for f in term.args)
    if term.is_Pow:
        base = term_weight(term.base)
        e = term.exp
        return base * abs(int(e)) if e.is_Integer else base
    if isinstance(term, sp.Add):
        return max(term_weight(t) for t in term.args)
    return 1


def _main_variable(terms):
    """The main variable (:data:`MAIN_VARIABLES`) of a sum's terms, or ``None``."""
    names = {str(v) for t in terms for v in t.free_symbols}
    for name in MAIN_VARIABLES:
        if name in names:
            return next(v for t in terms for v in t.free_symbols if str(v) == name)
    return None


def _power_of(term, var):
    r"""The power of ``var`` in ``term`` as a number to sort by (a symbolic exponent such as
    :math:`d - 1` is read at a large value of its symbols, which orders :math:`d + 1 > d >
    d - 1 > 0`); ``None`` when ``term`` is not a power of ``var`` times a coefficient free of
    it and sympy cannot read it as a polynomial in ``var``."""
    coeff, power = term.as_coeff_exponent(var)
    if var not in coeff.free_symbols:
        power = power.subs({sym: 1000 for sym in power.free_symbols})
        return float(power) if power.is_number else None
    try:
        return float(sp.Poly(term, var).degree())
    except (sp.PolynomialError, sp.GeneratorsNeeded, ValueError):
        return None


def term_order(terms, *, index: bool = False) -> list:
    r"""The terms of a sum in the documents' order (module docstring): a positive constant
    first, a negative one last; in between, in descending powers of the main variable when
    the sum is a polynomial in one (:data:`MAIN_VARIABLES`) with two or more powers, else by
    :func:`term_weight` (the lighter first, and of two equally heavy the positive first);
    remaining ties keep sympy's order.  In an ``index`` (an exponent) the constant goes last,
    :math:`\lambda^{d+1}`.  The same terms, only reordered."""
    terms = list(terms)
    var = _main_variable(terms)
    powers = [_power_of(t, var) for t in terms] if var is not None else []
    by_power = var is not None and None not in powers and len(set(powers)) > 1

    def key(i_t):
        i, t = i_t
        if not t.free_symbols:
            return (2 if _negative(t) or index else 0, 0, 0, i)
        if by_power:
            return (1, -powers[i], 0, i)
        return (1, term_weight(t), int(_negative(t)), i)

    return [t for _, t in sorted(enumerate(terms), key=key)]


def absorbed_sign(expr):
    """``expr`` (a product with a leading minus sign) written with the sign moved into one of
    its sum factors, ``-n (n - G) -> n (G - n)``, or ``None`` when no factor reads better
    negated (a sum factor whose terms are mostly negative, or half negative with a negative
    first term).  The result is the same expression: the unevaluated product of the same
    factors with the coefficient's sign moved into that sum."""
    if not isinstance(expr, Mul):
        return None
    coeff, factors = expr.as_coeff_mul()
    if not coeff.is_negative:
        return None
    for i, f in enumerate(factors):
        if isinstance(f, sp.Add):
            terms = f.as_ordered_terms()
            neg = sum(_negative(t) for t in terms)
            if neg * 2 > len(terms) or (neg * 2 == len(terms) and _negative(terms[0])):
                rest = list(factors[:i]) + list(factors[i + 1:])
                lead = [] if coeff == -1 else [-coeff]
                return Mul(*lead, *rest, -f, evaluate=False)
    return None


class Printer(LatexPrinter):
    """sympy's LaTeX printer with the notation of the documents (module docstring)."""

    _default_settings = {**LatexPrinter._default_settings, "inv_trig_style": "full",
                         "diff_operator": "rd", "imaginary_unit": "ri"}

    def __init__(self, settings=None):
        settings = dict(settings or {})
        settings.setdefault("symbol_names", LATEX_NAMES)
        super().__init__(settings)
        self._inline = 0          # > 0 inside a fraction or an exponent: no \frac there
        self._exponent = 0        # > 0 in an exponent or the argument of Gamma: an index, d + 1

    # -- function names -----------------------------------------------------------------
    def _print_loggamma(self, expr, exp=None):
        self._exponent += 1                 # a shifted argument is an index: Gamma(n + 1)
        try:
            arg = self._print(expr.args[0])
        finally:
            self._exponent -= 1
        tex = r"\log \Gamma\left(%s\right)" % arg
        return tex if exp is None else r"\left(%s\right)^{%s}" % (tex, exp)

    def _print_sign(self, expr, exp=None):
        tex = r"\operatorname{sgn}\left(%s\right)" % self._print(expr.args[0])
        return tex if exp is None else r"\left(%s\right)^{%s}" % (tex, exp)

    def _print_atan2(self, expr, exp=None):
        y, x = expr.args
        tex = r"\arg\left(%s\right)" % self._print(sp.Add(x, sp.I * y, evaluate=False))
        return tex if exp is None else r"\left(%s\right)^{%s}" % (tex, exp)

    # -- cases: each branch in display style (a fraction in a case is not shrunk) --------------
    def _print_Piecewise(self, expr):
        rows = []
        for e, c in expr.args:
            cond = r"\text{otherwise}" if c == sp.true else r"\text{for}\: %s" % self._print(c)
            rows.append(r"\displaystyle %s & %s" % (self._print(e), cond))
        return r"\begin{cases} %s \end{cases}" % r" \\ ".join(rows)

    # -- sums: no leading minus when a positive term exists -------------------------------
    def _print_Add(self, expr, order=None):
        terms = term_order(self._as_ordered_terms(expr, order=order), index=self._exponent > 0)
        if terms and _negative(terms[0]):
            pos = [t for t in terms if not _negative(t)]
            if pos:
                terms = pos + [t for t in terms if _negative(t)]
        tex = ""
        for i, term in enumerate(terms):
            if i == 0:
                pass
            elif _negative(term):
                tex += " - "
                term = -term
            else:
                tex += " + "
            term_tex = self._print(term)
            if self._needs_add_brackets(term):
                term_tex = r"\left(%s\right)" % term_tex
            tex += term_tex
        return tex

    # -- products -----------------------------------------------------------------------
    def _factor_key(self, f):
        name = str(f) if f.is_Symbol else None
        base = f.base if f.is_Pow else f
        if base.is_Symbol and str(base) in MAIN_VARIABLES:
            return len(FACTOR_ORDER) + 1        # the main variable's power after its coefficient
        return FACTOR_ORDER.index(name) if name in FACTOR_ORDER else len(FACTOR_ORDER)

    def _product(self, factors) -> str:
        """The factors of a product (no denominator, no sign) in the document's order."""
        factors = list(factors)
        numbers = [f for f in factors if f.is_Number]
        others = [f for f in factors if not f.is_Number]
        others = sorted(Mul(*others, evaluate=False).as_ordered_factors() if len(others) > 1
                        else others, key=self._factor_key)
        args = numbers + others
        if len(args) == 1:
            return self._print(args[0])
        tex = ""
        last = ""
        for i, term in enumerate(args):
            term_tex = self._print(term)
            if self._needs_mul_brackets(term, first=(i == 0), last=(i == len(args) - 1)):
                term_tex = r"\left(%s\right)" % term_tex
            if tex:
                if last and last[-1].isdigit() and term_tex[:1].isdigit():
                    tex += r" \cdot "
                else:
                    tex += " "
            tex += term_tex
            last = term_tex
        return tex

    def _print_Mul(self, expr):
        moved = absorbed_sign(expr)
        if moved is not None:
            expr = moved
        sign = ""
        if _negative(expr):
            sign, expr = "- ", -expr
        numer, denom = fraction(expr, exact=True)
        if denom == 1:
            return sign + self._product(Mul.make_args(numer))
        self._inline += 1
        try:
            snum = self._product(Mul.make_args(numer))
            sden = self._product(Mul.make_args(denom))
        finally:
            self._inline -= 1
        if self._inline > 0:      # a fraction inside a fraction or an exponent: on the line
            if isinstance(numer, sp.Add):
                snum = r"\left(%s\right)" % snum
            if not self._atomic_denominator(denom):
                sden = r"\left(%s\right)" % sden
            return f"{sign}{snum}/{sden}"
        return sign + r"\frac{%s}{%s}" % (snum, sden)

    @staticmethod
    def _atomic_denominator(denom) -> bool:
        if denom.is_Atom or denom.is_Function:
            return True
        if denom.is_Pow:
            return denom.base.is_Atom or denom.base.is_Function or denom.exp == sp.Rational(1, 2)
        return False

    # -- powers and exponentials: no fraction in a superscript -------------------------------
    def _print_Pow(self, expr):
        if _negative(expr.exp) and expr.base.is_commutative and expr.base != 1:
            return self._print_Mul(expr)          # a fraction: 1/x^n, 1/sqrt(x)
        if expr.exp.is_Rational and abs(expr.exp.p) == 1 and expr.exp.q != 1:
            return super()._print_Pow(expr)
        if expr.exp.is_Rational and expr.exp.q != 1:   # x^{3/2}: a fraction in the exponent
            base = self.parenthesize(expr.base, PRECEDENCE["Pow"])
            if expr.base.is_Symbol:
                base = self.parenthesize_super(base)
            return r"%s^{%d/%d}" % (base, expr.exp.p, expr.exp.q)
        if expr.base.is_Function:
            self._inline += 1
            try:
                return self._print(expr.base, exp=self._print(expr.exp))
            finally:
                self._inline -= 1
        self._inline += 1
        self._exponent += 1
        try:
            exp = self._print(expr.exp)
        finally:
            self._inline -= 1
            self._exponent -= 1
        base = self.parenthesize(expr.base, PRECEDENCE["Pow"])
        if expr.base.is_Symbol:
            base = self.parenthesize_super(base)
        return r"%s^{%s}" % (base, exp)

    def _print_ExpBase(self, expr, exp=None):
        self._inline += 1
        try:
            arg = self._print(expr.args[0])
        finally:
            self._inline -= 1
        if self._inline > 0 and len(arg) > _LONG_EXPONENT:
            tex = r"\exp\left(%s\right)" % arg
        elif len(arg) > _LONG_EXPONENT:
            tex = r"\exp\left(%s\right)" % self._print(expr.args[0])
        else:
            tex = r"e^{%s}" % arg
        return self._do_exponent(tex, exp)


def sci(x, digits: int = 2) -> str:
    """A number for the text of a check, as inline math: ``$3.2 \\times 10^{-5}$`` for a small
    or large one, ``$0.0813$`` otherwise, ``$0$`` and ``$\\infty$`` as such."""
    import math

    x = float(x)
    if x == 0:
        return "$0$"
    if not math.isfinite(x):
        return "$\\infty$" if x > 0 else "$-\\infty$"
    m, e = f"{x:.{digits - 1}e}".split("e")
    if abs(int(e)) > 2:
        return f"${m} \\times 10^{{{int(e)}}}$"
    return f"${x:.{digits + 1}g}$"


def root(expr):
    """The square root of ``expr`` kept as one root, :math:`\\sqrt{p q}` rather than
    :math:`\\sqrt{p}\\sqrt{q}` (sympy splits the root of a product of positive factors), for a
    displayed form; the same value as ``sympy.sqrt(expr)``."""
    return sp.Pow(expr, sp.S.Half, evaluate=False)


def latex(expr, **settings) -> str:
    """LaTeX of a sympy expression as the documents print it (:class:`Printer`; the notation
    names of :data:`~grpo_theory.theory.symbols.LATEX_NAMES` unless ``symbol_names`` is given)."""
    return Printer(settings).doprint(expr)
