r"""Sphinx directives of the lecture book: the package's records shown where they are used.

- ``{derived} drift.advantage_sum_std`` shows a derived record of ``grpo_theory`` as a
  numbered equation, rendered by sympy's printer from the record's expression (never
  typed), labelled with the record's label (``eq:drift:advantage-sum-std``) so that any
  lecture refers to it with ``{eq}``.  Under it, the named sub-expressions of the displayed
  form (the record's ``where``, as the report prints them): "with $S_1$ from (4.2), where
  $S_2 = \dots$", so that every symbol of the equation is defined where it is shown.  A
  record may be shown once in the whole book (Sphinx warns about a label defined twice; the
  build runs with ``-W``).
- ``{proof-logs}`` (the appendix) lists, lecture by lecture, every record the lectures
  show, with its description, assumptions and proof log: how each claim was verified
  (sympy proof, mpmath digits, or a sampled check, said as such).
- ``{notation-table}`` renders the notation table from the package's one notation source,
  the table the report prints.

Equations are numbered per lecture with the lecture's number in front: ``(3.2)`` is the
second numbered equation of lecture 3 (the number is the file name's prefix, ``03_...``).
"""

from __future__ import annotations

import re
import time
from pathlib import Path

from docutils import nodes
from sphinx.directives.patches import MathDirective
from sphinx.domains.math import MathDomain
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

LOGGER = logging.getLogger(__name__)

_DERIVED = re.compile(r"^```\{derived\}\s+(\S+)\s*$", re.MULTILINE)
_TITLE = re.compile(r"^# (.+)$", re.MULTILINE)
_LECTURE_NUMBER = re.compile(r"(?:^|/)(\d\d)_[^/]*$")
_USES_PACKAGE = re.compile(r"grpo_theory|\{(?:derived|proof-logs|notation-table|running-example)\}")


def _record(name: str):
    from grpo_theory import get

    return get(name)


def _prose(text: str) -> str:
    """A record's prose (``$...$`` math in words) as MyST Markdown."""
    from grpo_theory.prose import to_markdown

    return to_markdown(text)


class DerivedDirective(MathDirective):
    """``{derived} <record name>``: the record as a numbered, labelled equation."""

    has_content = False
    required_arguments = 1
    optional_arguments = 0
    #: ``:at:`` the condition under which the record holds, in LaTeX, written after the
    #: equation as "at ..." (a record stated at a fixed point, for instance)
    option_spec = {"at": lambda text: (text or "").strip()}

    def run(self):
        name = self.arguments[0]
        try:
            record = _record(name)
        except KeyError:
            raise self.error(f"no derived record named {name!r}") from None
        at = self.options.get("at")
        self.content = [record.latex() + (rf" \qquad \text{{at }} {at}" if at else "")]
        self.arguments = []
        self.options = {"label": record.label}
        out = super().run()
        where = _where_markdown(record, _shown_records(self.env.srcdir))
        if where:
            paragraphs = self.parse_text_to_nodes(where)
            for node in paragraphs:
                node["classes"].append("derived-where")
            out += paragraphs
        return out


#: a definition wider than this (display characters), or one with an integral or a sum, is
#: shown on its own display line
_WHERE_INLINE = 30


def _shown_records(srcdir) -> set[str]:
    """The names of the records the lectures show (each with its ``{derived}`` equation)."""
    names = set()
    for path in (Path(srcdir) / "lectures").glob("[0-9][0-9]_*.md"):
        names.update(_DERIVED.findall(path.read_text(encoding="utf-8")))
    return names


def _where_markdown(record, shown: set[str]) -> str:
    """The named sub-expressions of a record's displayed form, as MyST Markdown under its
    equation, from the record itself (:meth:`Derived.where_latex`, as the report writes them
    under an equation): a symbol that is another record shown in the book is referred to by
    that record's equation number; every other one (a definition of this record, a record
    the book does not show, a symbol of the notation table) is defined there."""
    from grpo_theory.render.latex import NOTATION_REF, display_width

    refs, local = {}, []
    for sym, defn, rec in record.where_latex():
        if rec and rec != NOTATION_REF and rec in shown and rec != record.name:
            refs.setdefault(rec, []).append(f"${sym}$")
        else:
            local.append((sym, defn))
    if not (refs or local):
        return ""

    def joined(items):
        return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]

    parts = [f"{joined(syms)} from {{eq}}`{_record(rec).label}`" for rec, syms in refs.items()]

    def inline(s, t):
        return display_width(f"{s} = {t}") <= _WHERE_INLINE and not ("\\int" in t or "\\sum" in t)

    short = [f"${s} = {t}$" for s, t in local if inline(s, t)]
    long = [(s, t) for s, t in local if not inline(s, t)]
    text = ("with " + joined(parts)) if parts else ""
    if short:
        text += (", where " if text else "where ") + joined(short)
    if long:
        text += (" and" if short else (", where" if text else "where"))
        text += "\n\n" + "\n\n".join(f"$${s} = {t}$$" for s, t in long)
    else:
        text += "."
    return text


class ProofLogsDirective(SphinxDirective):
    """``{proof-logs}``: the proof log of every record the lectures show, lecture by lecture."""

    has_content = False

    def run(self):
        lectures = sorted((Path(self.env.srcdir) / "lectures").glob("[0-9][0-9]_*.md"))
        text = []
        for path in lectures:
            self.env.note_dependency(str(path))
            source = path.read_text(encoding="utf-8")
            names = _DERIVED.findall(source)
            if not names:
                continue
            title = _TITLE.search(source).group(1).strip()
            text += [f"## {title}", ""]
            for name in names:
                text += self._entry(name)
        return self.parse_text_to_nodes("\n".join(text), allow_section_headings=True)

    @staticmethod
    def _entry(name: str) -> list[str]:
        from grpo_theory.render.latex import METHOD_LABELS   # only sympy is called a proof

        record = _record(name)
        lines = [f"**`{name}`**, equation {{eq}}`{record.label}`: {_prose(record.description)}", ""]
        if record.assumptions:
            lines += [f"*Assumes:* {_prose(record.assumptions)}", ""]
        for v in record.verifications:
            how = METHOD_LABELS.get(v.method, v.method) + (": passed" if v.passed else ": FAILED")
            detail = f" ({_prose(v.detail)})" if v.detail and v.method != "sympy" else ""
            lines.append(f"- {_prose(v.claim)} — *{how}*{detail}")
        return lines + [""]


class NotationTableDirective(SphinxDirective):
    """``{notation-table}``: symbol and meaning, from the package's notation table; with
    content (the table's keys, separated by spaces or lines) only those rows, in the table's
    order."""

    has_content = True

    def run(self):
        from grpo_theory.render.latex import NOTATION, math_label

        keys = " ".join(self.content).split() or None
        unknown = sorted(set(keys or ()) - set(NOTATION))
        if unknown:
            raise self.error(f"not in the notation table: {', '.join(unknown)}")
        rows = ["| symbol | meaning |", "|---|---|"]
        for key, (_, meaning) in NOTATION.items():
            if keys is None or key in keys:
                rows.append(f"| {_function_notation(math_label(key))} | {_prose(meaning)} |")
        return self.parse_text_to_nodes("\n".join(rows))


#: sympy's printed function application, ``x{\left(t \right)}``
_APPLIED = re.compile(r"\{\\left\(([^{}()]*?) ?\\right\)\}")


def _function_notation(tex: str) -> str:
    r"""A symbol of the table as the text writes it: ``x(t)``, not sympy's ``x{\left(t \right)}``."""
    return _APPLIED.sub(r"(\1)", tex)


class RunningExampleDirective(SphinxDirective):
    """``{running-example}``: the book's running example (the package's ``DEFAULT_MODEL``),
    its fixed point and the fresh/stale split of its stiffness, computed at build time; the
    directive's content (optional) adds what the example shows in this lecture."""

    has_content = True

    def run(self):
        from grpo_theory import DEFAULT_MODEL as m, stable_fixed_point

        fp = stable_fixed_point(m)
        lag = ", ".join(str(j) for j in range(m.refresh_interval))
        kl = {"k3": "the k3 estimator in the loss", "exact": "the exact KL in the loss",
              "k1_reward": "k1 in the reward", "none": "no KL"}[m.kl]
        norm = {"std": "std-normalized advantages (GRPO)", "mean": "mean-centred advantages (Dr. GRPO)"}
        text = [
            f"GRPO on a two-action bandit: {norm[m.normalization]}, {kl} with $\\beta = {m.kl_coef:g}$, "
            f"the {m.surrogate} surrogate, $p_{{\\mathrm{{ref}}}} = {m.p_ref:g}$, groups of $G = {m.group_size}$; "
            f"heavy-ball momentum $\\mu = {m.momentum:g}$, learning rate $\\eta = {m.learning_rate:g}$, "
            f"sampling policy refreshed every $k = {m.refresh_interval}$ steps (lag {lag}). "
            f"Stable fixed point $p^* = {fp.p:.3f}$ ($z^* = {fp.z:.3f}$), stiffness "
            f"$K = {fp.stiffness:.4f} = K_f + K_s$ with $K_f = {fp.stiffness_fresh:.4f}$ (fresh) and "
            f"$K_s = {fp.stiffness_stale:+.4f}$ (stale): fresh fraction $K_f/K = {fp.fresh_fraction:.3f}$.",
        ]
        node = nodes.admonition(classes=["tip"])
        node += nodes.title(text="Running example")
        node += self.parse_text_to_nodes("\n".join(text))
        if self.content:
            node += self.parse_content_to_nodes()
        return [node]


class LectureMathDomain(MathDomain):
    """Equation numbers with the lecture's number in front: (3.2) in ``lectures/03_...``."""

    def note_equation(self, docname, labelid, location=None):
        super().note_equation(docname, labelid, location)
        lecture = _lecture_number(docname)
        if lecture is not None:
            doc, number = self.equations[labelid]
            self.equations[labelid] = (doc, f"{lecture}.{number}")


def _lecture_number(docname: str) -> int | None:
    found = _LECTURE_NUMBER.search(docname)
    return int(found.group(1)) if found else None


def _per_lecture(fignumbers: dict) -> dict:
    """Figure, proposition and exercise numbers counted per lecture, with the lecture's number
    in front ((3, 2): the second exercise of lecture 3), instead of across the book."""
    out = {}
    for docname, by_type in fignumbers.items():
        lecture = _lecture_number(docname)
        if lecture is None:
            out[docname] = by_type
            continue
        out[docname] = {figtype: {node_id: (lecture, i) for i, node_id in
                                  enumerate(sorted(numbers, key=numbers.get), 1)}
                        for figtype, numbers in by_type.items()}
    return out


def _number_per_lecture():
    """Wrap Sphinx's figure numbering (used by sphinx-proof and sphinx-exercise) so that the
    numbers restart in every lecture.  Sphinx compares new numbers with the previous build's
    to decide which pages to rewrite; it is given its own previous numbers, so an unchanged
    book is not rewritten."""
    from sphinx.environment.collectors.toctree import TocTreeCollector

    original = TocTreeCollector.assign_figure_numbers
    if getattr(original, "per_lecture", False):
        return

    def assign_figure_numbers(self, env):
        env.toc_fignumbers = getattr(env, "grpo_book_raw_fignumbers", {})
        changed = original(self, env)
        env.grpo_book_raw_fignumbers = env.toc_fignumbers
        env.toc_fignumbers = _per_lecture(env.toc_fignumbers)
        return changed

    assign_figure_numbers.per_lecture = True
    TocTreeCollector.assign_figure_numbers = assign_figure_numbers


def prepare_reading(app, env, docnames) -> None:
    """Before Sphinx reads the pages it has to (re)read (none on an unchanged second build):

    1. derive every record of the theory chain that is not yet in the package's disk cache
       (:func:`grpo_theory.theory.derived.warm_cache`, two processes; nothing to do when the
       cache is warm, as in a test session, which warms it before the book is built), and the
       running example's fixed point, which the directive shows on every lecture;
    2. execute the lectures among them whose code has no cached execution into myst-nb's
       execution cache: two at a time, each in a fork of one warm interpreter
       (``lecture_executor``: the imports and the derived records are loaded once, not once per
       kernel).  Sphinx then reads every lecture from the cache.  (Sphinx's own parallel read,
       ``-j``, is not available: sphinx-proof does not support it.)  A lecture that fails here
       is not cached, so myst-nb executes it in a kernel while reading it and the build fails
       with that kernel's traceback.
    """
    lectures = [Path(env.doc2path(d)) for d in sorted(docnames) if _lecture_number(d) is not None]
    sources = [Path(env.doc2path(d)).read_text(encoding="utf-8") for d in docnames]
    if any(_USES_PACKAGE.search(text) for text in sources):   # (a page without the package skips this)
        from grpo_theory import DEFAULT_MODEL, stable_fixed_point
        from grpo_theory.theory.derived import warm_cache

        warm_cache(workers=2)
        stable_fixed_point(DEFAULT_MODEL)     # computed once here, inherited by the lectures' forks
    config = getattr(env, "mystnb_config", None)
    if not lectures or config is None or config.execution_mode != "cache":
        return
    from jupyter_cache import get_cache

    import lecture_executor

    cache = get_cache(config.execution_cache_path or Path(app.outdir).parent / ".jupyter_cache")
    records = [cache.add_nb_to_project(str(path), read_data={"name": "myst_nb_md", "type": "plugin"})
               for path in lectures]
    start = time.monotonic()
    done = lecture_executor.execute(cache, records, parallel=2, timeout=config.execution_timeout)
    if not done:
        return
    if done["setup"] is not None:
        wall, cpu = done["setup"]
        LOGGER.info(f"lecture executor set-up (imports, derived records): {wall:.1f} s wall, {cpu:.1f} s CPU")
    for uri, (wall, cpu) in done["lectures"].items():
        LOGGER.info(f"executed {Path(uri).name}: {wall:.1f} s wall, {cpu:.1f} s CPU")
    LOGGER.info(f"executed {len(done['lectures'])} lecture(s) ahead in {time.monotonic() - start:.1f} s")


def setup(app):
    app.connect("env-before-read-docs", prepare_reading)
    _number_per_lecture()
    app.add_domain(LectureMathDomain, override=True)
    app.add_directive("derived", DerivedDirective)
    app.add_directive("proof-logs", ProofLogsDirective)
    app.add_directive("notation-table", NotationTableDirective)
    app.add_directive("running-example", RunningExampleDirective)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
