"""A derived result: one sympy expression, its LaTeX, its numeric function, its proof log.

This is the single source of truth for every formula of the theory.  A
derivation function builds a :class:`Derived` once; the LaTeX in
``equations.tex`` is rendered from ``Derived.expr`` and the fast numpy function
``Derived.numeric`` is lambdified from the same ``Derived.expr``.

Derivations are registered with :func:`derivation` and computed lazily.  The
computed expressions and their verification records are cached on disk (keyed
per chapter by a hash of the chapter's source, the theory modules it imports and
the sympy version), so a second process
gets the whole chain in well under a second.  Set ``GRPO_THEORY_CACHE=0`` to
disable the disk cache, or to a directory to move it.  Processes that share the cache never
derive one record twice: the one deriving it holds a lock file beside its entry, and the others
wait for it and load it (:func:`get`); :func:`warm_cache` derives the missing records in several
processes at once.
"""

from __future__ import annotations

import contextlib
import functools
import multiprocessing
import pickle
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Callable

try:
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX: no lock, each process derives its own
    fcntl = None

import mpmath
import sympy as sp
from sympy.core.function import AppliedUndef

from grpo_theory.prose import to_markdown, to_plain
from grpo_theory.theory.cache import (_cache_base, _cache_path, _chapter_hash,  # noqa: F401
                                      is_cached, side_cache_path, write_cache_file)
from grpo_theory.theory.chapters import import_chapters
from grpo_theory.theory.printing import latex

__all__ = [
    "Derived",
    "Verification",
    "VerificationError",
    "derivation",
    "get",
    "all_names",
    "prove_zero",
    "prove_equal",
    "taylor",
    "record_numeric",
    "mutated",
    "build",
    "warm_cache",
]


class VerificationError(AssertionError):
    """A derivation step whose verification failed (the derivation is wrong)."""


@dataclass(frozen=True)
class Verification:
    """One verified claim about a derived result.

    ``method`` says how it was verified: ``"sympy"`` (an identity proven by
    simplification or series), ``"mpmath"`` (high-precision numerics, with the
    number of agreeing digits in ``detail``) or ``"numeric"``.
    """

    claim: str
    method: str
    passed: bool
    detail: str = ""
    #: a verification of a statement about every value of a parameter that was carried out
    #: for a finite set of values only names them here (prose, e.g. ``"$G = 2, 3, 4$"``): the
    #: documents then call it a check for those cases, not a proof of the statement
    cases: str = ""


@dataclass(frozen=True)
class _Srepr:
    """A sympy expression stored as its ``srepr`` text (see ``Derived.__getstate__``)."""

    text: str


@functools.cache
def _sympy_namespace() -> dict:
    ns: dict = {}
    exec("from sympy import *", ns)  # noqa: S102 - the names srepr writes
    return ns


def _from_srepr(text: str):
    """The expression an ``srepr`` text describes, rebuilt without re-evaluating it."""
    with sp.evaluate(False):
        return eval(text, _sympy_namespace())  # noqa: S307 - our own cache, written by srepr


def _label(name: str) -> str:
    """The equation label of the record ``name`` (``eq:drift:ratio-factor``)."""
    return "eq:" + name.replace(".", ":").replace("_", "-")


def _pack(expr):
    """``expr`` as its ``srepr`` text when rebuilding it from that text gives the same tree and
    the same printed form (pickling re-evaluates a tree, which can change how it prints:
    ``(k - 1)/2`` comes back as ``k/2 - 1/2``); else the expression itself."""
    if not isinstance(expr, sp.Basic):
        return expr
    try:
        text = sp.srepr(expr)
        back = _from_srepr(text)
        if sp.srepr(back) == text and latex(back) == latex(expr):
            return _Srepr(text)
    except Exception:  # pragma: no cover - the pickled tree is the fallback
        pass
    return expr


def _pack_step(expr):
    """A derivation step's expression as :class:`_Srepr` when rebuilding it from its ``srepr``
    gives the same tree (then it prints the same); else the expression.  Cheaper than
    :func:`_pack`, which also compares the printed forms: the appendix of steps is not worth
    the printer's time at every cold build."""
    if not isinstance(expr, sp.Basic):
        return expr
    try:
        text = sp.srepr(expr)
        if sp.srepr(_from_srepr(text)) == text:
            return _Srepr(text)
    except Exception:  # pragma: no cover - the pickled tree is the fallback
        pass
    return expr


def _unpack(value):
    return _from_srepr(value.text) if isinstance(value, _Srepr) else value


def _equal(a, b) -> bool:
    """sympy proves ``a == b`` (elementwise for matrices)."""
    if isinstance(a, sp.MatrixBase) or isinstance(b, sp.MatrixBase):
        a, b = sp.Matrix(a), sp.Matrix(b)
        return a.shape == b.shape and all(prove_equal(x, y) for x, y in zip(a, b))
    return prove_equal(a, b)


@dataclass
class Derived:
    """A derived formula.

    Attributes
    ----------
    name : registry key, e.g. ``"oscillator.mass"``.
    expr : the sympy expression (the right-hand side).
    args : symbols, in the argument order of :attr:`numeric`.
    lhs : LaTeX of the left-hand side (``"m"``).
    description : one sentence, what the quantity is.
    units : units of the result (steps, logits, reward, ...).
    assumptions : what the derivation assumes, in words.
    verifications : the proof log.
    title : the result's name in words, as a heading (the record name is for the code).
    display : a readable form of :attr:`expr` for the documents, written with the named
        sub-expressions of :attr:`where`; set by :meth:`show`, which proves it equal to
        :attr:`expr` (``None``: the documents print :attr:`expr` itself).
    where : ``(symbol, definition, record name)`` triples: each named sub-expression of
        :attr:`display`, defined by ``definition`` (a sympy expression) and, when it is the
        expression of another record, that record's name (the documents then refer to it).
    steps : ``(phrase, lhs, expression, order)`` tuples recorded by :meth:`step`: the
        intermediate expressions the derivation computed on its way, in order (the documents
        print them as a chain of displayed equalities; ``order`` is ``None`` or the argument of
        the order term of a truncated expansion).
    """

    name: str
    expr: sp.Basic
    args: tuple
    lhs: str
    description: str
    units: str = ""
    assumptions: str = ""
    verifications: list = field(default_factory=list)
    level: str = ""
    references: tuple = ()
    title: str = ""
    display: object = None
    where: tuple = ()
    steps: tuple = ()

    # -- rendering ------------------------------------------------------------------
    def latex(self, **settings) -> str:
        """LaTeX of ``lhs = `` the displayed form (:attr:`display`, else :attr:`expr`),
        printed by the project's printer (:func:`grpo_theory.theory.printing.latex`)."""
        shown = self.expr if self.display is None else self.display
        return f"{self.lhs} = {latex(shown, **settings)}"

    def where_latex(self) -> list[tuple[str, str, str]]:
        """The named sub-expressions of the displayed form: ``(symbol LaTeX, definition LaTeX,
        record name)`` (record name ``""`` for a definition that belongs to this record)."""
        return [(latex(sym), latex(defn), rec) for sym, defn, rec in self.where]

    def show(self, form, where=(), *, proven=None, how: str = "") -> None:
        """Display ``form`` instead of :attr:`expr`: a readable form written with the named
        sub-expressions ``where`` (``(symbol, definition, record name or "")`` triples).
        sympy must prove that ``form`` with every definition substituted equals :attr:`expr`
        (recorded in the proof log; a perturbed expression fails it).  Where sympy needs a
        route, the caller proves it and passes the result as ``proven`` (a proof that compares
        with :attr:`expr`, so that a perturbed expression fails it) and says how in ``how``."""
        where = tuple((sym, sp.sympify(defn), rec) for sym, defn, rec in where)
        full, defs = form, {sym: defn for sym, defn, _ in where}
        funcs = {sym.func: sp.Lambda(sym.args, defn) for sym, defn in defs.items()
                 if isinstance(sym, AppliedUndef) and all(a.is_Symbol for a in sym.args)}
        for _ in range(len(defs) + 1):              # a definition may use another one
            full = full.xreplace(defs)
            for f, lam in funcs.items():            # f(x) = ... defines f at every argument
                full = full.replace(f, lam)
        names = [f"${latex(sym)}$" for sym, _, _ in where]
        claim = ("the form displayed" + (f" (with {', '.join(names)} as defined)" if names else "")
                 + " equals the derived expression" + (f" ({how})" if how else ""))
        self.check(claim, "sympy", _equal(full, self.expr) if proven is None else bool(proven))
        self.display, self.where = form, where

    def step(self, phrase: str, expr, lhs: str | None = None, *, order=None) -> None:
        """Record an intermediate expression the derivation computed: ``lhs = expr`` (``lhs``:
        LaTeX; ``None`` continues the previous step's chain, ``expr`` equal to the previous
        expression), ``phrase`` saying in a few words how it was obtained; for a truncated
        expansion ``order`` is the argument of its order term (``q**2``: ``expr + O(q^2)``; kept
        apart, since an order term is slow to rebuild from the cache).  Kept for the documents'
        derivations appendix; only values the code computed are to be passed."""
        self.steps = self.steps + ((phrase, lhs, expr, order),)

    @property
    def label(self) -> str:
        return _label(self.name)

    # -- numerics --------------------------------------------------------------------
    @functools.cached_property
    def numeric(self) -> Callable:
        """Fast numpy function lambdified from :attr:`expr` (cached per process)."""
        fn = sp.lambdify(self.args, self.expr, modules=["numpy", "scipy"], cse=True)
        argnames = ", ".join(str(a) for a in self.args)
        fn.__doc__ = (
            f"{self.name}({argnames}) -> {self.units or 'value'}\n\n"
            f"{to_plain(self.description)}\n\nLambdified from the sympy expression\n"
            f"    {self.lhs} = {sp.sstr(self.expr)}\n"
            f"Arguments (in order): {argnames}.  Assumptions: {to_plain(self.assumptions) or 'none'}."
        )
        fn.__name__ = self.name.replace(".", "_")
        return fn

    def __call__(self, *values):
        return self.numeric(*values)

    @property
    def verified(self) -> bool:
        return bool(self.verifications) and all(v.passed for v in self.verifications)

    def check(self, claim: str, method: str, passed: bool, detail: str = "", *,
              cases: str = "") -> None:
        """Record a verification; raise :class:`VerificationError` if it failed.  ``cases``
        names the finite set of values a statement about every value was checked for (see
        :class:`Verification`)."""
        self.verifications.append(Verification(claim, method, bool(passed), detail, cases))
        if not passed:
            raise VerificationError(f"{self.name}: {claim} failed ({method}) {detail}")

    def __post_init__(self):
        mutate = _MUTATIONS.get(self.name)
        if mutate is not None:
            self.expr = mutate(self.expr)

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("numeric", None)  # lambdified functions are rebuilt lazily
        # the printed form at build time travels with the record, so that a test can compare
        # every cached record's printed form with it (a record pickled again keeps the first)
        state.setdefault("latex_as_built", self.latex())
        # pickling rebuilds a sympy tree with evaluation on, which can change the printed form
        # ((k - 1)/2 comes back as k/2 - 1/2); keep the exact structure of every printed
        # expression as srepr when that round-trips (:func:`_pack`)
        state["expr"] = _pack(self.expr)
        state["display"] = _pack(self.display)
        state["where"] = tuple((_pack(sym), _pack(defn), rec) for sym, defn, rec in self.where)
        state["steps"] = tuple((ph, lhs, _pack_step(e), _pack_step(o)) for ph, lhs, e, o in self.steps)
        return state

    def __setstate__(self, state):
        state = dict(state)
        state["expr"] = _unpack(state["expr"])
        state["display"] = _unpack(state.get("display"))
        state["where"] = tuple((_unpack(sym), _unpack(defn), rec)
                               for sym, defn, rec in state.get("where", ()))
        state["steps"] = tuple((ph, lhs, _unpack(e), _unpack(o)) for ph, lhs, e, o in state.get("steps", ()))
        self.__dict__.update(state)

    # -- notebook display (the lectures) -------------------------------------------------
    def _repr_latex_(self) -> str:
        r"""Jupyter shows the record as a numbered equation labelled :attr:`label`, so the
        text around it can refer to it with ``\eqref{<label>}``."""
        body = self.latex()
        parts = [f"{s} = {d}" for s, d, rec in self.where_latex() if not rec]
        refs = [f"{s}" + r"\text{ from }\eqref{" + _label(rec) + "}"
                for s, _, rec in self.where_latex() if rec]
        if parts or refs:
            body = (r"\begin{gathered}" + body + r"\\ \text{with }"
                    + r",\quad ".join(parts + refs) + r"\end{gathered}")
        return rf"\begin{{equation}}{body}\label{{{self.label}}}\end{{equation}}"

    def proof_log(self) -> "ProofLog":
        """How the record was verified, as text: one line per claim, as ``derive`` prints
        them (``print(record.proof_log())``).  In a notebook the same object shows as a
        Markdown table (claim, method, detail) through ``_repr_markdown_``; no IPython is
        needed.  The records themselves are :attr:`verifications`."""
        lines = [f"proof log of {self.name}:"]
        for v in self.verifications:
            mark = "ok  " if v.passed else "FAIL"
            detail = f" -- {to_plain(v.detail)}" if v.detail else ""
            lines.append(f"  [{mark}] ({v.method}) {to_plain(v.claim)}{detail}")
        if not self.verifications:
            lines.append("  (no verification recorded: a definition or a quoted result)")
        rows = [f"| {to_markdown(v.claim)} | {v.method} {'✓' if v.passed else '✗'} | "
                f"{to_markdown(v.detail)} |"
                for v in self.verifications]
        markdown = "\n".join([f"**Proof log of `{self.name}`**", "",
                               "| claim | verified by | detail |", "|---|---|---|", *rows])
        return ProofLog("\n".join(lines), markdown)


class ProofLog(str):
    """A proof log: the text is the terminal form; :meth:`_repr_markdown_` the notebook's."""

    def __new__(cls, text: str, markdown: str):
        obj = super().__new__(cls, text)
        obj.markdown = markdown
        return obj

    def _repr_markdown_(self) -> str:
        return self.markdown


# --- mutation testing ------------------------------------------------------------------

_MUTATIONS: dict[str, Callable] = {}


@contextlib.contextmanager
def mutated(name: str, mutate: Callable):
    """Within the block, a :class:`Derived` named ``name`` is built with
    ``mutate(expr)`` in place of its expression, so its proof log runs on the perturbed
    expression (builders take ``expr = out.expr`` before proving).  A proof that still
    passes proves nothing.  Results built here must not be cached: call the builder
    (:func:`build`), not :func:`get`."""
    _MUTATIONS[name] = mutate
    try:
        yield
    finally:
        _MUTATIONS.pop(name, None)


def build(name: str) -> Derived:
    """Run the derivation ``name`` now, bypassing both caches (for mutation tests)."""
    if name not in _REGISTRY:
        import_chapters()
    return _REGISTRY[name]()


# --- proof helpers --------------------------------------------------------------------

def _disproved(expr) -> bool:
    """True when ``expr`` is clearly nonzero at a sample point (50-digit evaluation with every
    free symbol at a value in (0, 1), integers in {3, 4, 5}): a counterexample ends the
    proof attempt at once instead of letting simplification search.  Never proves anything;
    an expression that cannot be evaluated is left to the symbolic route."""
    symbols = sorted(expr.free_symbols, key=str)
    if not symbols or len(symbols) > 40 or expr.has(AppliedUndef):
        return False      # an undefined function has no value (doit would try to integrate it)
    for seed in (0, 1):
        point = {}
        for i, sym in enumerate(symbols):
            if sym.is_integer:
                point[sym] = 3 + (i + seed) % 3
            else:
                point[sym] = sp.Rational(13 + (7 * i + 5 * seed) % 17, 41)
        try:
            value = complex(sp.N(expr.xreplace(point).doit(), 50))
        except (TypeError, ValueError, ZeroDivisionError, AttributeError, NotImplementedError,
                RecursionError):
            return False
        if value != value or abs(value) == float("inf"):
            return False
        if abs(value) > 1e-20:
            return True
    return False


def _rational_zero(expr) -> bool:
    """True when ``expr`` is zero as a rational function (``sympy.polys``: ``cancel`` of its
    ``together`` form), every non-polynomial part (a logarithm, a square root, a power with a
    symbolic exponent) taken as an independent variable.  A proof: a rational function that
    vanishes identically in independent variables vanishes at every value they take.  Where
    the identity needs a relation between those parts (``log(p/q) = log p - log q``,
    ``sqrt(p) sqrt(q) = sqrt(p q)``) it is not found here and :func:`sp.simplify` tries.
    Much faster than ``simplify`` on the drift's objective checks (the same answer, 3-5x
    less time).  The numerator of the ``together`` form is expanded first: when it expands to
    0 the fraction is 0 without ``cancel``'s greatest common divisor of numerator and
    denominator (on the chain's 205 calls: the same answers, 4.8 s instead of 7.9 s)."""
    try:
        combined = sp.together(expr)
        numerator = sp.fraction(combined)[0]
        if numerator == 0 or sp.expand(numerator) == 0:
            return True
        return sp.cancel(combined) == 0
    except (TypeError, NotImplementedError, ValueError, sp.PolynomialError, RecursionError):
        return False


def opaque_integrals(expr):
    """``expr`` with every integral of an undefined function (``b(w)``, ``D(w)``: nothing
    sympy can integrate) replaced by a symbol of its own.  An identity proven for arbitrary
    values of those integrals holds for their values; and simplification no longer tries to
    integrate them (``simplify`` and ``equals`` call ``doit``: on a false identity about the
    mean first-passage time that search took 20 s and could only fail)."""
    if not isinstance(expr, sp.Basic) or not expr.has(sp.Integral):
        return expr
    ints = sorted((i for i in expr.atoms(sp.Integral) if i.function.has(AppliedUndef)),
                  key=sp.default_sort_key)
    return expr.xreplace({i: sp.Dummy(f"I{j}") for j, i in enumerate(ints)})


def prove_zero(expr, *, simplifier=None) -> bool:
    """True when sympy proves ``expr == 0`` identically (not at sample points).  A
    counterexample at a sample point (:func:`_disproved`) answers False at once; then the
    rational-function route (:func:`_rational_zero`), then simplification (``simplifier``,
    when given, replaces both), each on :func:`opaque_integrals` of ``expr``."""
    expr = sp.sympify(expr)
    if expr == 0:
        return True
    if isinstance(expr, sp.Basic) and not isinstance(expr, sp.MatrixBase):
        if _disproved(expr):
            return False
        expr = opaque_integrals(expr)
        if simplifier is None and _rational_zero(expr):
            return True
    for simp in (simplifier,) if simplifier else (sp.simplify, lambda e: sp.simplify(sp.expand(e)),
                                                   lambda e: sp.simplify(e.rewrite(sp.exp))):
        try:
            if simp(expr) == 0:
                return True
        except (TypeError, NotImplementedError, ValueError):
            continue
    return bool(expr.equals(0))


def taylor(expr, x, n: int):
    """The Taylor polynomial of ``expr`` in ``x`` at 0 up to ``x**(n - 1)``: the sum of
    ``diff(expr, x, k).subs(x, 0)/k! * x**k`` for ``k < n``, which is ``sympy.series(expr, x, 0,
    n).removeO()`` for an ``expr`` analytic at 0 (derivatives at a point cost a fraction of
    sympy's series on sums of logarithms and powers: 0.1 s instead of 0.7 s).  A coefficient that
    is not finite (``expr`` not analytic at 0: ``log(x)``, ``sqrt(x)``) raises ``ValueError``."""
    expr = sp.sympify(expr)
    terms, deriv = [], expr
    for k in range(n):
        if k:
            deriv = sp.diff(deriv, x)
        coeff = deriv.subs(x, 0)
        if coeff.has(sp.zoo, sp.oo, -sp.oo, sp.nan):
            raise ValueError(f"{expr} is not analytic at {x} = 0 (coefficient {k}: {coeff})")
        terms.append(coeff / sp.factorial(k) * x**k)
    return sp.Add(*terms)


def prove_equal(lhs, rhs, **kw) -> bool:
    """True when sympy proves ``lhs - rhs == 0``."""
    return prove_zero(sp.sympify(lhs) - sp.sympify(rhs), **kw)


def record_numeric(derived: Derived, claim: str, errors, *, digits: float,
                   precision: int | None = None) -> None:
    """Record a high-precision numerical verification: all relative errors < 10**-digits
    (``precision``: the working precision in decimal digits, stated in the detail)."""
    errors = list(errors)
    worst = max((mpmath.mpf(e) for e in errors), default=mpmath.mpf(0))
    agree = float(-mpmath.log10(worst)) if worst > 0 else float("inf")
    at = f" at {precision}-digit precision" if precision else ""
    if precision and agree >= precision:      # never more digits than the arithmetic carries
        found = "the two agree to the working precision at every point"
    else:
        found = (f"the two agree to at least {agree:.0f} digits at every point" if worst > 0
                 else "the two are identical at every point")
    derived.check(claim, "mpmath", agree >= digits,
                  f"{len(errors)} points{at}: {found} ({digits:g} required)")


# --- registry and cache ------------------------------------------------------------------

_REGISTRY: dict[str, Callable[[], Derived]] = {}
_COMPUTED: dict[str, Derived] = {}
_TIMINGS: dict[str, float] = {}


def derivation(name: str):
    """Register a zero-argument function that builds the :class:`Derived` ``name``."""

    def deco(fn):
        _REGISTRY[name] = fn

        @functools.wraps(fn)
        def wrapper() -> Derived:
            return get(name)

        wrapper.derivation_name = name
        return wrapper

    return deco


def all_names(chapter: str | None = None) -> list[str]:
    """Names of all registered derivations in registration order (importing the chapter
    modules first), or of one ``chapter`` (its key, the prefix of its names)."""
    import_chapters()
    return [n for n in _REGISTRY if chapter is None or n.split(".")[0] == chapter]


def _load(path):
    """The record pickled at ``path``, or None (absent, stale or corrupt: recomputed)."""
    if path is None or not path.exists():
        return None
    try:
        with open(path, "rb") as fh:
            return pickle.load(fh)
    except Exception:  # a stale or corrupt cache entry is recomputed
        return None


class _Busy(BaseException):
    """Raised in a :func:`warm_cache` worker that needs a record another worker is computing:
    the worker puts its own record back and takes another, instead of computing that record a
    second time.  (A BaseException, so that no ``except Exception`` on the way swallows it.)"""

    def __init__(self, name):
        super().__init__(name)
        self.name = name


#: seconds spent in the records derived inside each build in progress (innermost last)
_NESTED: list[float] = []

#: seconds a process waits for another one deriving the same record before deriving it itself
LOCK_WAIT = 300.0

#: set in :func:`warm_cache`'s workers: a record locked by another worker raises :class:`_Busy`
_WARMING = False


@contextlib.contextmanager
def _computing(path, name):
    """Hold the record's lock file (next to its cache file) while computing it, so that two
    processes on one cache (the test workers, the book's build, two commands) never derive the
    same record at once: a second one waits, then loads what the first wrote (a warm-up worker
    is told :class:`_Busy` instead).  Without a disk cache or ``fcntl`` there is nothing to share."""
    if path is None or fcntl is None:
        yield
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fh = open(path.with_suffix(".lock"), "a+b")
    except OSError:
        yield
        return
    try:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if _WARMING:
                raise _Busy(name) from None
            # wait for the other process; one stopped or stuck beyond LOCK_WAIT seconds (a
            # record takes a few) is not waited for: this one derives the record itself
            deadline = time.monotonic() + LOCK_WAIT
            while True:
                time.sleep(0.05)
                try:
                    fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        break
        yield
    finally:
        fh.close()          # releases the lock


def get(name: str) -> Derived:
    """The derived result ``name`` (computed once per process, cached on disk)."""
    if name in _COMPUTED:
        return _COMPUTED[name]
    if name not in _REGISTRY:
        import_chapters()
    if name not in _REGISTRY:
        raise KeyError(f"no derivation named {name!r}; known: {', '.join(sorted(_REGISTRY))}")
    path = _cache_path(name)
    result = _load(path)
    if result is None:
        with _computing(path, name):
            result = _load(path)            # written by another process meanwhile
            if result is None:
                _NESTED.append(0.0)
                start = time.perf_counter()
                try:
                    result = _REGISTRY[name]()
                finally:
                    inner = _NESTED.pop()
                elapsed = time.perf_counter() - start
                _TIMINGS[name] = elapsed - inner        # its own work, not its dependencies'
                if _NESTED:
                    _NESTED[-1] += elapsed
                if not isinstance(result, Derived) or result.name != name:
                    raise TypeError(f"derivation {name!r} must return a Derived named {name!r}")
                _store(path, result)
    _COMPUTED[name] = result
    _TIMINGS.setdefault(name, 0.0)
    return result


def _store(path, result) -> None:
    if path is not None:
        write_cache_file(path, pickle.dumps(result))


def timings() -> dict[str, float]:
    """Seconds spent deriving each record (its own work: the records it derived on the way are
    counted apart) in this process or, for this process, in :func:`warm_cache`'s workers (0
    when loaded from an earlier cache)."""
    return dict(_TIMINGS)


#: the costliest records of a cold chain (each 0.8-2 s; measured 2026-11-28), handed out first
#: so that the warm-up's workers finish together
_SLOW_FIRST = ("oscillator.overshoot", "oscillator.traj", "drift.expected", "discrete.refresh_",
               "reuse.sgd_window_variance", "oscillator.critical")


def _cost_hint(name):
    return 0 if name.startswith(_SLOW_FIRST) else 1


def _warm_one(name, after=None):
    """A warm-up worker's task: ``(name, other, seconds)``: ``other`` is None when done (or
    failed: a failing derivation is reported where it is used, not here), else the record
    another worker is computing that this one needs; ``seconds``: the time of each record this
    task derived.  ``after(name, record)`` is called in the worker for each of them."""
    global _WARMING
    _WARMING = True
    before = {n for n, t in _TIMINGS.items() if t > 0}
    blocked = None
    try:
        get(name)
    except _Busy as busy:
        blocked = busy.name
    except Exception:
        pass
    derived = {n: t for n, t in _TIMINGS.items() if t > 0 and n not in before}
    if after is not None:
        for n in derived:
            after(n, _COMPUTED[n])
    return name, blocked, derived


def warm_cache(workers: int = 2, *, names=None, on_done=None, after=None, meanwhile=None) -> int:
    """Compute every derivation missing from the disk cache (of ``names``, default all) in
    ``workers`` forked processes, slow ones first, so that later :func:`get` calls load them;
    returns how many were missing.  The time each took is kept as if this process had derived
    it (:func:`timings`); ``on_done(name)`` is called as each one is stored; ``after(name,
    record)`` (a module-level function) in the worker that derived it, with the record in hand.

    No record is derived twice: a worker that needs a record another one is computing (its lock
    is held, :func:`_computing`) puts its own back and takes the next; the one put back is
    handed out again once the record it waited for is in the cache.

    ``meanwhile()`` is called once in this process while the workers derive (once they are all
    started: nothing is forked while it runs; not at all when nothing is derived); what it raises
    is raised here, once the workers are done.

    An optimisation only: without a disk cache, on a platform without ``fork`` or with fewer
    than 2 workers nothing happens and :func:`get` computes on demand."""
    todo = [n for n in (all_names() if names is None else names) if is_cached(n) is False]
    if workers < 2 or len(todo) < 4:
        return len(todo)
    failed = None
    try:
        ctx = multiprocessing.get_context("fork")
        queue = sorted(todo, key=_cost_hint)
        waiting: dict[str, list[str]] = {}      # record being computed -> records put back
        with ProcessPoolExecutor(workers, mp_context=ctx) as ex:
            running = {}
            while queue or running:
                while queue and len(running) < workers:
                    name = queue.pop(0)
                    if is_cached(name) is False:
                        running[ex.submit(_warm_one, name, after)] = name
                if meanwhile is not None:
                    call, meanwhile = meanwhile, None
                    try:
                        call()
                    except Exception as exc:    # raised once the workers are done
                        failed = exc
                if not running:
                    break
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for fut in done:
                    name = running.pop(fut)
                    _, blocked_on, seconds = fut.result()
                    for done_name, t in seconds.items():
                        _TIMINGS.setdefault(done_name, t)
                        if on_done is not None:
                            on_done(done_name)
                    if blocked_on is not None:
                        waiting.setdefault(blocked_on, []).append(name)
                for other in [k for k in waiting if is_cached(k) is not False]:
                    queue[:0] = waiting.pop(other)      # what it waited for is done
                if not queue and not running and waiting:
                    # what they waited for was not stored (its derivation failed): hand them
                    # out anyway, each then fails where it is used
                    queue = [n for names in waiting.values() for n in names]
                    waiting.clear()
    except Exception:  # pragma: no cover - pre-warming is an optimisation only
        pass
    if failed is not None:
        raise failed
    return len(todo)
