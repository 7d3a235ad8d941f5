"""The notation table: one symbol per entry, one entry per symbol, and every symbol of every
rendered expression and of every formula in the records' prose is in it."""

from __future__ import annotations

import pytest

from grpo_theory.prose import split_math
from grpo_theory.render.notation import (NAMED, NOTATION, notation, notation_rows, plain_symbols,
                                         symbols_in, table_symbols, unknown_in_plain,
                                         unknown_symbols)
from grpo_theory.theory.chapters import CHAPTERS
from grpo_theory.theory.derived import all_names, get


def test_each_entry_is_one_symbol_and_no_symbol_has_two_entries():
    found = table_symbols()                  # raises on a duplicate or a multi-symbol entry
    assert len(found) == len(NOTATION) and len(notation_rows()) == len(NOTATION) + len(NAMED)
    # the words and statistics the records write are listed too (each used by some record)
    words = {tex for tex, _ in NAMED}
    assert {r"\operatorname{Var}", r"\mathrm{OS}", r"\mathrm{KL}_{\mathrm{sat}}", "R^{2}"} <= words
    written = " ".join(get(n).lhs + " " + get(n).latex() for n in all_names())
    for tex in words - {"R^{2}", r"\operatorname{E}"}:     # R² and E: the report's fits and figures
        assert tex in written, tex


@pytest.mark.parametrize("tex, symbols", [
    (r"z_{\mathrm{ref}} + \frac{1}{\beta}", ["z_{ref}", r"\beta"]),
    (r"x_{t+1} = \mu x_{t}", ["x_{t+1}", "t", r"\mu", "x_{t}", "t"]),
    (r"\ddot{x}(0) + \mathcal{A}_{G} \operatorname{Var} z", ["x", r"\mathcal{A}_{G}", "z"]),
    (r"p^{*} q^{*} e^{-\pi}", ["p^{*}", "q^{*}"]),
])
def test_the_reader_of_symbols(tex, symbols):
    assert symbols_in(tex) == symbols


def test_an_unknown_or_reused_letter_is_reported():
    assert unknown_symbols(r"A P + P A^{\mathsf{T}} + Q = 0") == ["A", "A", "Q"]
    assert unknown_symbols(r"\eta K_{s} \ell + x_{t}") == []


def _math(text):
    return [p for is_math, p in split_math(text) if is_math]


def test_every_rendered_symbol_is_in_the_table():
    bad = {}
    for name in all_names():
        d = get(name)
        pieces = [d.latex()] + [f"{s} = {t}" for s, t, _ in d.where_latex()]
        for text in (d.description, d.units, d.assumptions, d.title):
            pieces += _math(text)
        for v in d.verifications:
            pieces += _math(v.claim) + _math(v.cases) + (_math(v.detail) if v.method != "sympy" else [])
        for p in pieces:
            for sym in unknown_symbols(p):
                bad.setdefault(sym, set()).add(name)
    for ch in CHAPTERS:
        for p in _math(ch.narrative) + _math(ch.latex_intro):
            for sym in unknown_symbols(p):
                bad.setdefault(sym, set()).add(f"chapter {ch.key}")
    assert not bad, bad


def test_each_entry_has_its_own_plain_form():
    """report.md writes the symbols in plain text: two entries must not print alike there."""
    plain = [notation(key) for key in NOTATION]
    assert len(set(plain)) == len(plain), sorted(p for p in plain if plain.count(p) > 1)


@pytest.mark.parametrize("text, unknown", [
    ("Adam's decay rates (β₁, β₂)", ["β₁"]),              # Adam's first decay rate is mu
    ("4 SE + |δᵥ| Var z, from the autocorrelation ρ₁", ["δᵥ", "ρ₁"]),
    ("|Δ_sim - Δ_L1|, Δθ_b", ["Δ_sim", "Δ_L1", "θ_b"]),
    ("a_σ, σ̂ₙ, κₛ, x_(±), ε_low, p*, z*, σ², ε_Adam, ν, ω", []),
])
def test_the_reader_of_plain_symbols(text, unknown):
    assert unknown_in_plain(text) == unknown


def test_the_clashes_of_the_last_review_are_gone_from_the_table():
    """One symbol, one meaning: Adam's epsilon, the overdamped half-gap, the action index, the
    number of actions and the integration variable each have their own symbol."""
    known = plain_symbols()
    assert {"ε_Adam", "ν", "θₒ", "N_act", "u", "t₁", "p_min"} <= known
    assert not {"K_a", "θ_b", "v̂", "β₁"} & known
    assert "overdamped" not in NOTATION["omega"][1] and "overdamped" in NOTATION["nu"][1]
