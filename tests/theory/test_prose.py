"""Prose with inline math (grpo_theory.prose): the renderers, and the lint that keeps
programming text out of every record's description, assumptions, units, claims and details."""

import re

import pytest

from grpo_theory.theory.chapters import CHAPTERS
from grpo_theory.theory.derived import all_names, get
from grpo_theory.prose import (math_to_plain, programming_text, split_math, to_markdown,
                                      to_plain, to_tex)


# --- the renderers (expected values written by hand) ------------------------------------

@pytest.mark.parametrize("math, plain", [
    (r"\mu^{k}", "μᵏ"),
    (r"\frac{1}{\beta}", "1/β"),
    (r"\frac{a k}{1 - \mu}", "(a k)/(1 - μ)"),
    (r"\sqrt{p q}", "√(p q)"),
    (r"z_{\mathrm{ref}} + 1/\beta", "z_ref + 1/β"),
    (r"\mu^{(k-1)/2}", "μ^((k-1)/2)"),
    (r"\sigma_1^2", "σ₁²"),
    (r"\operatorname{tr}^2 - 4\det M", "tr² - 4 det M"),
    (r"k \to \infty", "k → ∞"),
    (r"2\cosh(z/2)", "2 cosh(z/2)"),
    (r"K_{s}", "Kₛ"),
    (r"k_{\max} + \Delta z^{*}_{\mathrm{ours}}", "k_max + Δ z*_ours"),   # a word subscript stays a word
    (r"x{\left(t \right)}", "x(t)"),
    (r"\frac{a k}{\left(1 - \mu\right)^{2}}", "(a k)/(1 - μ)²"),
    (r"\frac{\bar{g}}{\sqrt{\hat{v}}}", "g̅/√v̂"),                     # accents keep a symbol atomic       # one group: no extra brackets
    (r"\frac{1}{\left(1 - \mu\right) \left(2 + \mu\right)}", "1/((1 - μ) (2 + μ))"),
    # issue 29: `derive --only oscillator` printed "\begincases ... \endcases"
    (r"\begin{cases} e^{- a} & \text{for}\: v_{0} = 0 \\ 1 & \text{otherwise} \end{cases}",
     "{ e^(- a), for v₀ = 0; 1, otherwise }"),
    (r"\begin{pmatrix} a & b \\ c & d \end{pmatrix}", "[a, b; c, d]"),
])
def test_math_to_plain(math, plain):
    assert math_to_plain(math) == plain


def test_the_three_renderings_share_one_source():
    text = r"stable iff $\eta K k < 2$ at $\mu = 0$ (50% of p_ref's range & more)"
    assert to_tex(text) == (r"stable iff $\eta K k < 2$ at $\mu = 0$ "
                            r"(50\% of p\_ref's range \& more)")
    assert to_markdown(text) == r"stable iff $\eta K k < 2$ at $\mu = 0$ (50% of p\_ref's range & more)"
    assert to_plain(text) == "stable iff η K k < 2 at μ = 0 (50% of p_ref's range & more)"


def test_a_literal_dollar_and_an_unclosed_one():
    assert split_math(r"costs \$5 and $x$") == [(False, "costs $5 and "), (True, "x")]
    with pytest.raises(ValueError, match="unbalanced"):
        split_math("an $x without its end")


@pytest.mark.parametrize("bad", [
    "S1 - k q >= 0", "mu^k -> 0", "kappa beta p q", "sqrt(p q)", "z = z_ref + 1/beta",
    "k -> oo", "2*mu + 2", "at mu = 0", "the limit is sigma_1^2", "$mu**2$",
    "TRL's steps_per_generation",
])
def test_the_lint_catches_programming_text(bad):
    assert programming_text(bad)


@pytest.mark.parametrize("good", [
    r"large-$G$ limit of the std-normalized advantage (20 points, 50-digit mpmath)",
    r"$S_1 - k\mu^k \ge 0$, so $\det M \ge \mu^k > -1$",
    "equals the explicit k-fold matrix product for six window lengths",
])
def test_the_lint_passes_prose(good):
    assert programming_text(good) == []


# --- every record ----------------------------------------------------------------------

def _texts(d):
    yield "description", d.description
    yield "assumptions", d.assumptions
    yield "units", d.units
    for i, v in enumerate(d.verifications):
        yield f"claim {i}", v.claim
        yield f"detail {i}", v.detail


@pytest.mark.parametrize("name", all_names())
def test_record_prose_has_no_programming_text(name):
    """Every formula in a record's text is written as LaTeX between dollars, so the PDF
    typesets it and the terminal shows it in Unicode; none is left as code."""
    d = get(name)
    problems = {where: programming_text(t) for where, t in _texts(d) if programming_text(t)}
    assert not problems, f"{name}: {problems}"
    for where, t in _texts(d):
        plain = to_plain(t)
        assert not re.search(r"[\\{}]", plain), f"{name} {where}: LaTeX left in {plain!r}"


@pytest.mark.parametrize("ch", CHAPTERS, ids=lambda c: c.key)
def test_chapter_narratives_have_no_programming_text(ch):
    assert programming_text(ch.narrative) == []
