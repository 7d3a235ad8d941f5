"""Every free text that can reach ``equations.tex`` passes through the one escaping function
(:func:`grpo_theory.prose.escape_tex`): each field is fed LaTeX's special characters and the
document made of all of them compiles with pdflatex (one compilation for the whole test)."""

from __future__ import annotations

import shutil
import subprocess

import pytest
import sympy as sp

from grpo_theory.model import DEFAULT_MODEL
from grpo_theory.prose import escape_tex, literal, tex_label
from grpo_theory.render import latex as L
from grpo_theory.report import atlas_tex, lab
from grpo_theory.report.captions import captions, caption_tex, figure_float, log_fit_section
from grpo_theory.theory import bibliography
from grpo_theory.theory.derived import Derived, Verification

#: LaTeX's special characters, as plain words
SPECIALS = r"_ % & # $ { } ~ ^ \ end"
#: the same as the words of a prose text (formulas between dollars), with a formula after them
PROSE = literal(SPECIALS) + r" and $x_{1}^{2}$"


def _tiny_pdf(path):
    """A one-page PDF to include as a figure (drawn by pdflatex itself)."""
    (path.parent / "tiny.tex").write_text(
        "\\documentclass{article}\\pagestyle{empty}\\begin{document}x\\end{document}\n")
    subprocess.run(["pdflatex", "-interaction=nonstopmode", "tiny.tex"], cwd=path.parent,
                   capture_output=True, check=True, timeout=120)
    (path.parent / "tiny.pdf").rename(path)


def test_escape_tex_and_labels():
    assert escape_tex("a_b%c") == r"a\_b\%c"
    assert tex_label("eq:drift:ratio-factor") == "eq:drift:ratio-factor"    # real labels unchanged
    assert tex_label("a_b") != tex_label("a+5fb") and not set(tex_label(SPECIALS)) & set("_%&#${}~^\\ ")
    with pytest.raises(ValueError, match="figure file name"):
        figure_float("a%b", "caption", ".")


def test_every_free_text_field_compiles(tmp_path, monkeypatch):
    if not shutil.which("pdflatex"):
        pytest.skip("no pdflatex on this machine")
    # a result whose every text field (and its name, hence its label) carries the specials
    d = Derived(name="drift.odd_" + SPECIALS, expr=sp.Symbol("p") + 1, args=(), lhs="F",
                description=PROSE, units=PROSE, assumptions=PROSE, title=PROSE,
                verifications=[Verification(claim=PROSE, method="sympy", passed=True, cases=PROSE),
                               Verification(claim=PROSE, method="numeric", passed=True, detail=PROSE),
                               Verification(claim=PROSE, method="odd_" + SPECIALS, passed=False)])
    result = L.equation_block(d) + f"\n\nSee \\eqref{{{tex_label(d.label)}}}."
    # the lab section: problems (file names, reasons) and the engine's version
    missing = lab.lab_section({"available": False,
                               "problems": ["lab_refresh.json is absent", SPECIALS,
                                            "units logits² − μ ≫ 1, ∞ ≤ 10⁻³ ≈ √2"]})[1]
    present = ""
    data = lab.lab_data()
    if data.get("refresh") is not None:
        s = lab.lab_summary(data)
        s["problems"].append(SPECIALS)
        s["trl_version"] = SPECIALS
        present = lab.lab_section(s)[1]
    # the bibliography: every field, an organization as author, the url
    monkeypatch.setitem(bibliography.REFERENCES, "zz_odd", {
        "type": "misc", "authors": ["{" + SPECIALS + "}", "Fam_%&#, Giv~^"], "title": SPECIALS,
        "howpublished": SPECIALS, "note": SPECIALS, "url": "https://x.org/a_b%c#d~e&f", "year": "2025"})
    bib = L._bibliography(["zz_odd"])
    # the atlas' criticality table: the variant and its verdict
    crit = atlas_tex._criticality_text({"criticality": [{
        "setting": PROSE, "momentum": 0.5, "refresh_interval": 2, "kind": "flip", "eta_K": 0.3,
        "coefficient": 1.0, "measured": 1.1, "criticality": SPECIALS}]})
    # a figure: its caption, the log-fit family names, the family chosen
    _tiny_pdf(tmp_path / "log_fit.pdf")
    lf = {"n": 10, "best": SPECIALS, "models": {SPECIALS: {"r2": 0.9, "plateau": 0.5,
                                                           "time_to_90_steps": 3.0}},
          "forecast": {"best": SPECIALS, "holdout_rmse": 0.1, "holdout_coverage": 0.9}}
    caps = captions({"log_fit": lf}, DEFAULT_MODEL.to_dict())
    caps["log_fit"] += " " + PROSE + " [[cite:keller1977]]"
    fit = log_fit_section({"log_fit": lf}, caps, tmp_path)[1]
    figure = caption_tex(PROSE + " [[fig:log_fit]]")
    doc = L.equations_document([], extra_sections=[
        (PROSE, result), ("lab missing", missing), ("lab present", present), ("atlas", crit),
        ("fit", fit + "\n\n" + figure)])
    doc = doc.replace("\\end{thebibliography}", bib.split("\n", 1)[1].rsplit("\n", 1)[0]
                      + "\n\\end{thebibliography}")
    (tmp_path / "doc.tex").write_text(doc, encoding="utf-8")
    for _ in range(2):
        proc = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "doc.tex"],
                              cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stdout[-3000:]
    log = (tmp_path / "doc.log").read_text(errors="replace")
    assert "There were undefined references" not in log and "multiply defined" not in log
    # the specials print as themselves (the text layer of the PDF holds them)
    if shutil.which("pdftotext"):
        text = subprocess.run(["pdftotext", "doc.pdf", "-"], cwd=tmp_path, capture_output=True,
                              text=True).stdout
        # (the OT1 underscore is a rule, not a glyph: the text layer has no character for it)
        assert "% & # $ { } ~ ^ \\ end" in text.replace("\u02dc", "~").replace("\u02c6", "^")
