r"""Prose with inline math: the one convention for every text attached to a result.

Descriptions, assumptions, verification claims and details are English sentences whose
formulas are written in LaTeX between dollar signs, e.g. ``"$\eta K k < 2$ at $\mu = 0$"``
(a literal dollar is written ``\$``).  The text is never parsed as code; it is rendered
three ways from that one source:

- :func:`to_tex` for the PDF: the math spans are passed to LaTeX, the words are escaped;
- :func:`to_markdown` for the generated docs and the notebooks: the math spans are kept
  (MyST, Jupyter and GitHub render ``$...$``), Markdown's specials in the words escaped;
- :func:`to_plain` for the terminal: the math spans are turned into Unicode
  (``\mu^{k}`` -> ``μᵏ``) by the ``unicodeit`` package after the structural macros
  (``\frac``, ``\sqrt``, ``\mathrm``, ...) are unfolded.

:func:`programming_text` lists what looks like code outside the math spans (``mu**2``,
``sqrt(``, ``p_ref``, a Greek letter spelled out); the tests require it to be empty for
every record, and :func:`to_plain` to leave no LaTeX behind.
"""

from __future__ import annotations

import functools
import re

__all__ = ["split_math", "escape_tex", "tex_label", "literal", "to_tex", "to_markdown", "to_plain", "to_plain_or_as_is", "math_to_plain",
           "programming_text"]

_DOLLAR = re.compile(r"(?<!\\)\$")


def split_math(text: str) -> list[tuple[bool, str]]:
    """``[(is_math, piece), ...]`` in order; raises ``ValueError`` on an unclosed ``$``."""
    text = str(text)
    parts = _DOLLAR.split(text)
    if len(parts) % 2 == 0:
        raise ValueError(f"unbalanced '$' in prose: {text!r}")
    return [(i % 2 == 1, p.replace(r"\$", "$") if i % 2 == 0 else p)
            for i, p in enumerate(parts) if p]


# --- LaTeX ---------------------------------------------------------------------------

_TEX_ESCAPES = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
                "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
                "^": r"\textasciicircum{}", "<": r"\textless{}", ">": r"\textgreater{}",
                "|": r"\textbar{}",
                # symbols a plain pdflatex cannot print from their Unicode (numbers and units
                # written for the terminal reach the PDF too)
                "\u2212": r"\ensuremath{-}", "\u226b": r"\ensuremath{\gg}", "\u226a": r"\ensuremath{\ll}",
                "\u2264": r"\ensuremath{\le}", "\u2265": r"\ensuremath{\ge}",
                "\u221e": r"\ensuremath{\infty}", "\u2248": r"\ensuremath{\approx}",
                "\u221a": r"\ensuremath{\surd}", "\u2223": r"\ensuremath{\mid}",
                "\u207b": r"\textsuperscript{\ensuremath{-}}",
                **{ch: r"\textsuperscript{%d}" % i for i, ch in enumerate("\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079")},
                **{ch: r"\ensuremath{\%s}" % name for ch, name in zip(
                    "\u03b1\u03b2\u03b3\u03b4\u03b5\u03b6\u03b7\u03b8\u03ba\u03bb\u03bc\u03bd\u03be\u03c0\u03c1\u03c3\u03c4\u03c6\u03c7\u03c8\u03c9",
                    ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "kappa",
                     "lambda", "mu", "nu", "xi", "pi", "rho", "sigma", "tau", "phi", "chi", "psi",
                     "omega"))}}


def escape_tex(text: str) -> str:
    """Escape plain words for LaTeX: the one escaping function of the project.

    Every free text that reaches a LaTeX document (a note, a reason, a file name, a
    bibliography field, a family name, the words of a prose text) passes through it, so that
    ``_ % & # $ { } ~ ^ \\`` print as themselves; :func:`to_tex` applies it to the words of a
    prose text, :func:`tex_label` makes a cross-reference key of a name."""
    return "".join(_TEX_ESCAPES.get(ch, ch) for ch in str(text))


_LABEL_SAFE = re.compile(r"[^A-Za-z0-9:.\-]")


def tex_label(name: str) -> str:
    """A name as a LaTeX cross-reference key (``\\label``/``\\ref``): letters, digits, ``:``, ``.``
    and ``-`` kept, every other character written as ``+`` and its code point (a key is not
    printed, so it is not escaped for print but reduced to characters every key accepts;
    distinct names give distinct keys)."""
    return _LABEL_SAFE.sub(lambda m: f"+{ord(m.group(0)):x}", str(name))


def literal(text: str) -> str:
    """Free text (a name, a file name, a reason) to insert into a prose text as words: its
    dollars are written ``\\$``, so no math span opens; :func:`to_tex` then escapes it."""
    return str(text).replace("$", r"\$")


def to_tex(text: str) -> str:
    """The prose for LaTeX: math spans verbatim, words escaped."""
    return "".join(f"${p}$" if m else escape_tex(p) for m, p in split_math(text))


# --- Markdown ------------------------------------------------------------------------

def to_markdown(text: str) -> str:
    """The prose for Markdown: math spans kept as ``$...$``, Markdown's specials escaped."""
    return "".join(f"${p}$" if m else re.sub(r"([\\`*_\[\]<>#|])", r"\\\1", p)
                   for m, p in split_math(text))


# --- plain text (terminal) -------------------------------------------------------------

def latex_argument(s: str, i: int, *, strict: bool = True) -> tuple[str, int]:
    """The LaTeX argument starting at ``s[i]`` (a brace group or one token) and the index
    after it; an unclosed brace group is an error, or with ``strict=False`` runs to the end."""
    while i < len(s) and s[i] == " ":
        i += 1
    if i >= len(s):
        return "", i
    if s[i] == "{":
        depth = 0
        for j in range(i, len(s)):
            depth += {"{": 1, "}": -1}.get(s[j], 0)
            if depth == 0:
                return s[i + 1:j], j + 1
        if not strict:
            return s[i + 1:], len(s)
        raise ValueError(f"unbalanced braces in math: {s!r}")
    if s[i] == "\\":
        m = re.match(r"\\[A-Za-z]+|\\.", s[i:])
        return m.group(0), i + len(m.group(0))
    return s[i], i + 1


_SUPERSCRIPTS = "⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖʳˢᵗᵘᵛʷˣʸᶻ"


def _enclosed(t: str) -> bool:
    """``(…)`` or ``(…)²``: one parenthesised group (its first bracket closes last), optionally
    raised to a superscript power."""
    body = t.rstrip(_SUPERSCRIPTS)
    if len(body) < 2 or body[0] != "(" or body[-1] != ")":
        return False
    depth = 0
    for i, ch in enumerate(body):
        depth += (ch == "(") - (ch == ")")
        if depth == 0 and i < len(body) - 1:
            return False
    return True


def _atomic(t: str) -> bool:
    return _enclosed(t) or (bool(re.fullmatch(r"[\w.*′'\u0300-\u036f]+|\(.*\)|√\S+", t))
                            and not re.search(r"[-+/ =<>]", t.strip("()")))


_FUNCS = ("det", "lim", "max", "min", "log", "ln", "exp", "cosh", "sinh", "tanh", "cos", "sin",
          "sup", "inf", "arg", "sgn", "Var", "tr", "logit", "erf", "mod")
_DROP = {r"\left": "", r"\right": "", r"\big": "", r"\Big": "", r"\bigl": "", r"\bigr": "",
         r"\,": " ", r"\;": " ", r"\:": " ", r"\!": "", r"\quad": "  ", r"\qquad": "   ",
         r"\displaystyle": "", r"\limits": "", r"\{": "{", r"\}": "}", r"\%": "%", r"\_": "_",
         r"\&": "&", r"\lvert": "|", r"\rvert": "|", r"\lVert": "‖", r"\rVert": "‖", r"\|": "‖",
         r"\dots": "…", r"\bmod": " mod ", r"\pmod": " mod ", r"\cdots": "⋯", r"\ldots": "…", r"\mid": "|", r"\colon": ":"}
_TEXTLIKE = ("mathrm", "operatorname", "text", "textrm", "mathit", "mathsf", "texttt", "mbox",
             "boldsymbol", "mathbf", "bm")


@functools.lru_cache(maxsize=4096)
def _unicode(latex_piece: str) -> str:
    """``unicodeit.replace`` of one small piece (a macro, a script), remembered: it scans its
    whole table on every call (milliseconds each), and the pieces repeat."""
    import unicodeit

    return unicodeit.replace(latex_piece)


def _script(body: str, sup: bool) -> str:
    plain = _unfold(body).strip()
    if plain in ("*", "′", "'"):
        return plain
    if sup and plain == "T":
        return "ᵀ"
    if not sup and len(plain) > 1 and plain.isalpha():
        return "_" + plain          # a word as a label reads better than small letters (z_ref, k_max)
    chars = [_unicode(("^{" if sup else "_{") + ch + "}") for ch in plain]
    if plain and all(len(c) == 1 and (c != ch or ch == " ") for c, ch in zip(chars, plain)):
        return "".join(chars)
    mark = "^" if sup else "_"
    return mark + (plain if _atomic(plain) else f"({plain})")


def _unfold(s: str) -> str:
    """Unfold the structural macros of a math span into plain text (recursively)."""
    out, i = [], 0
    while i < len(s):
        c = s[i]
        if c == "\\":
            m = re.match(r"\\[A-Za-z]+|\\.", s[i:])
            name = m.group(0)
            j = i + len(name)
            if name == r"\frac" or name == r"\tfrac" or name == r"\dfrac":
                num, j = latex_argument(s, j)
                den, j = latex_argument(s, j)
                a, b = _unfold(num).strip(), _unfold(den).strip()
                out.append(f"{a if _atomic(a) else f'({a})'}/{b if _atomic(b) else f'({b})'}")
            elif name == r"\sqrt":
                arg, j = latex_argument(s, j)
                a = _unfold(arg).strip()
                out.append("√" + (a if _atomic(a) else f"({a})"))
            elif name == r"\binom":
                n_, j = latex_argument(s, j)
                k_, j = latex_argument(s, j)
                out.append(f"C({_unfold(n_).strip()}, {_unfold(k_).strip()})")
            elif name[1:] in _TEXTLIKE:
                arg, j = latex_argument(s, j)
                out.append(_unfold(arg))
            elif name in (r"\mathcal", r"\mathbb", r"\hat", r"\bar", r"\tilde", r"\dot",
                          r"\ddot", r"\overline", r"\vec"):
                arg, j = latex_argument(s, j)
                inner = _unfold(arg).strip()
                conv = _unicode(f"{name}{{{inner}}}")
                if len(inner) > 1 and name in (r"\overline", r"\bar"):
                    out.append(f"⟨{inner}⟩")  # an average over a long expression
                else:
                    out.append(conv if "\\" not in conv and "{" not in conv else inner)
            elif name[1:] in _FUNCS:
                before = "".join(out)[-1:]
                after = s[j:].lstrip()[:1]
                out.append((" " if before.isalnum() else "") + name[1:]
                           + ("" if after in ("(", "", "^", "_") else " "))
            elif name in _DROP:
                out.append(_DROP[name])
            else:
                conv = _unicode(name)
                out.append(conv + (" " if j < len(s) and s[j] == " " else ""))
            i = j
        elif c in "^_":
            arg, j = latex_argument(s, i + 1)
            out.append(_script(arg, c == "^"))
            i = j
        elif c in "{}":
            i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def math_to_plain(math: str) -> str:
    """One math span as Unicode text: ``\\frac{1}{\\beta}`` -> ``1/β``, ``\\mu^{k}`` -> ``μᵏ``."""
    math = re.sub(r"\\begin\{[pbv]?matrix\}", "[", math)
    math = re.sub(r"\\end\{[pbv]?matrix\}", "]", math)
    math = re.sub(r"\\begin\{cases\}", r"\\{ ", math)     # a braced list of branches
    math = re.sub(r"\\end\{cases\}", r" \\}", math)
    math = math.replace("\\\\", "; ").replace("&", ",")
    text = _unfold(math)
    text = re.sub(r"\s*([=<>≤≥≈≠→⇔∈∼∝≲≳×±])\s*", r" \1 ", text)  # spaces round relations
    text = re.sub(r"([(\[])\s+", r"\1", re.sub(r"\s+([)\]])", r"\1", text))
    text = re.sub(r"\s+([,;])", r"\1", text)
    return re.sub(r" {2,}", " ", text).strip()


def to_plain(text: str) -> str:
    """The prose for a terminal: math spans in Unicode, words as they are."""
    return "".join(math_to_plain(p) if m else p for m, p in split_math(text))


def to_plain_or_as_is(text) -> str:
    """:func:`to_plain`, or the text as it is when it is not prose (an unbalanced dollar)."""
    try:
        return to_plain(text)
    except ValueError:
        return str(text)


# --- lint ------------------------------------------------------------------------------

_GREEK = ("alpha", "beta", "gamma", "delta", "epsilon", "eps", "zeta", "eta", "theta", "kappa",
          "lambda", "mu", "nu", "xi", "pi", "rho", "sigma", "tau", "phi", "chi", "psi", "omega")
_CODE = [
    (re.compile(r"\*\*"), "'**'"),
    (re.compile(r"\S\^|\^\S"), "'^'"),
    (re.compile(r"\w\s*\*\s*[\w(]"), "'*' as multiplication"),
    (re.compile(r"\b(?:sqrt|exp|log|cosh|sinh|tanh|abs)\("), "a function call"),
    (re.compile(r"\b[A-Za-z]+(?:_[A-Za-z0-9]+)+\b"), "an identifier with '_'"),
    (re.compile(r"\b(?:" + "|".join(_GREEK) + r")\b"), "a Greek letter spelled out"),
    (re.compile(r"\boo\b"), "sympy's 'oo'"),
    (re.compile(r"<=|>=|!=|==|->|<=>"), "an ASCII relation"),
    (re.compile(r"\b[a-zA-Z]\s*[<>=]\s*[-\w(]"), "a formula outside '$'"),
    (re.compile(r"\b\d+\s*[/+]\s*[A-Za-z(]"), "a formula outside '$'"),
]


def programming_text(text: str) -> list[str]:
    """What looks like code in the words of ``text`` (outside its ``$...$`` spans)."""
    found = []
    try:
        pieces = split_math(text)
    except ValueError as exc:
        return [str(exc)]
    for is_math, piece in pieces:
        if is_math:
            if "**" in piece:
                found.append(f"'**' inside math: {piece!r}")
            continue
        for pat, what in _CODE:
            m = pat.search(piece)
            if m:
                found.append(f"{what}: {m.group(0)!r} in {piece!r}")
    return found
