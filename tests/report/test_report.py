"""The report: files, figures, key numbers recomputed from the API, equations, CLI."""

from __future__ import annotations

import json
import os
import re
import shutil

import numpy as np
import pytest

from grpo_theory.theory import discrete
from grpo_theory.cli.main import main
from grpo_theory.theory.derived import all_names
from grpo_theory.theory.fixed_points import stable_fixed_point
from grpo_theory.model import DEFAULT_MODEL

pytestmark = pytest.mark.xdist_group("report")   # its module fixture is built on one worker

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
FIGURES = ("phase_diagram_k", "phase_diagram_mu", "trajectories", "fluctuation_law",
           "bifurcation", "log_fit", "atlas_folds", "atlas_discrete", "deepnet")


@pytest.fixture(scope="module")
def report_dir(tmp_path_factory, installed):
    """The main job as a user runs it: ``grpo-theory report --out DIR`` from the wheel installed
    in a fresh environment (tests/installed.py), in a directory outside the checkout, with
    pdflatex on the PATH (CI installs it; elsewhere its absence only skips the PDF's tests)."""
    cwd = tmp_path_factory.mktemp("elsewhere")
    r = installed.run("report", "--out", "report", cwd=cwd)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "Traceback" not in r.stderr, r.stderr[-2000:]
    return cwd / "report"


def test_files_exist_and_nonempty(report_dir):
    for name in ("report.md", "report.json", "equations.tex", "references.bib"):
        assert (report_dir / name).stat().st_size > 0, name
    for stem in FIGURES:
        for ext in ("png", "pdf"):
            assert (report_dir / f"{stem}.{ext}").stat().st_size > 1000, (stem, ext)


def test_pngs_are_valid_images(report_dir):
    import matplotlib.image as mpimg

    for stem in FIGURES:
        path = report_dir / f"{stem}.png"
        assert path.read_bytes()[:8] == PNG_MAGIC
        img = mpimg.imread(path)
        assert img.ndim == 3 and img.shape[0] > 200 and img.shape[1] > 200
        assert img.std() > 0.01  # not blank
        assert (report_dir / f"{stem}.pdf").read_bytes()[:5] == b"%PDF-"


def test_report_mentions_key_numbers(report_dir):
    md = (report_dir / "report.md").read_text()
    fp = stable_fixed_point(DEFAULT_MODEL)
    eta, mu, k = (getattr(DEFAULT_MODEL, x) for x in ("learning_rate", "momentum", "refresh_interval"))
    assert f"{fp.p:.6g}" in md
    assert f"{fp.stiffness:.6g}" in md
    st = discrete.linear_stability(eta, mu, k, fp.stiffness, fresh_fraction=fp.fresh_fraction)
    assert f"| regime (exact L2) | {st.discrete_regime} |" in md
    flip, cx, _ = discrete.refresh_thresholds(mu, k)
    assert f"{float(min(flip, cx)):.5g}" in md
    stale = discrete.linear_stability(eta, mu, k, fp.stiffness)
    assert f"| {stale.max_stable_refresh_interval} | {stale.max_stable_refresh_interval_continuous} |" in md
    for stem in FIGURES:
        assert f"({stem}.png)" in md
    assert "## Cross-checks" in md and "## What is verified" in md


def test_references(report_dir):
    bib = (report_dir / "references.bib").read_text()
    for key in ("predictable_grpo", "mroueh2025", "shao2024deepseekmath"):
        assert "{" + key + "," in bib
    assert "2606.30789" in bib and "2503.06639" in bib and "2402.03300" in bib


def test_equations_tex_has_a_label_per_derivation(report_dir):
    tex = (report_dir / "equations.tex").read_text()
    assert r"\begin{document}" in tex and r"\end{document}" in tex
    for name in all_names():
        label = "eq:" + name.replace(".", ":").replace("_", "-")
        assert label in tex, name


def test_equations_compile(report_dir):
    """The report runs pdflatex with -halt-on-error (and fails when it fails), twice, so the
    PDF beside the .tex is the proof that it compiles. CI installs pdflatex (.ci/run): there
    its absence is a failure, not a skip."""
    if not shutil.which("pdflatex"):
        assert not os.environ.get("CI"), "CI runs the main job with pdflatex: install TeX (.ci/run)"
        pytest.skip("no pdflatex on this machine")
    pdf = report_dir / "equations.pdf"
    assert pdf.read_bytes()[:5] == b"%PDF-" and pdf.stat().st_size > 1000
    assert not (report_dir / "equations.log").exists()        # removed after a clean run


def test_default_model_has_stable_interior_fixed_point():
    fp = stable_fixed_point(DEFAULT_MODEL)
    assert fp.stable and DEFAULT_MODEL.p_ref < fp.p < 1


def test_every_figure_has_a_data_twin():
    from grpo_theory.report.data import FIGURE_DATA

    assert set(FIGURES) == set(FIGURE_DATA)
    d = FIGURE_DATA["phase_diagram_mu"]()
    axis, eta_K = d["mu"]["exact_boundary"]
    assert axis.shape == eta_K.shape and np.all(np.isfinite(eta_K))
    # the exact boundary is the binding Jury threshold, recomputed here from refresh_thresholds
    flip, cx, _ = discrete.refresh_thresholds(axis[10], DEFAULT_MODEL.refresh_interval)
    assert eta_K[10] == pytest.approx(min(float(flip), float(cx)), rel=1e-12)


def test_atlas_in_report(report_dir):
    import json

    md = (report_dir / "report.md").read_text()
    tex = (report_dir / "equations.tex").read_text()
    nums = json.loads((report_dir / "report.json").read_text())
    at = nums["atlas"]
    assert at["passed"] and at["checks"]["cusp"]["passed"]
    cusp = at["p_ref_plane"]["cusp"]
    assert f"{cusp['p_ref']:.10g}" in md and f"{cusp['p_ref']:.10g}" in tex
    assert "Two-parameter bifurcation atlas" in tex


def test_equations_use_one_notation_and_state_methods(report_dir):
    tex = (report_dir / "equations.tex").read_text()
    assert r"\kappa_{s}" in tex                     # spring constant: never k
    assert "k_{\\mathrm{ref}}" not in tex           # the refresh interval is k
    assert "\\verified{sampled numeric check}" in tex and "\\verified{symbolic proof}" in tex
    assert "\\verified{exact check for $G = 2, 3, 4$}" in tex  # a finite check says so
    for token in ("**", "np.float64", "proven (sympy)", "symbolic proof (sympy)"):
        assert token not in tex, token


def _body(tex):
    """The document from the abstract to the appendices (the appendix names the software, the
    index the record names, the bibliography the works)."""
    return tex[tex.index("\\begin{abstract}"):tex.index("\\appendix")]


def test_no_operator_names_texttt_headings_or_scaling(report_dir):
    tex = (report_dir / "equations.tex").read_text()
    assert not re.search(r"\\operatorname\{(?:loggamma|asinh|acosh|atan|atan2|sign)\}", tex)
    assert not re.search(r"\\(?:paragraph|section|subsection)\*?\{[^}]*\\texttt", tex)
    for factor in re.findall(r"\\scalebox\{([\d.]+)\}", tex):
        assert float(factor) >= 0.8
    assert "\\resizebox" not in tex
    # and no displayed line wider than the text (the build reports pdflatex's overfull boxes)
    assert "wider than the text" not in (report_dir / "report.md").read_text()


def _numbers(text):
    return re.findall(r"(?<![\w.{])\d[\d.]*(?:[eE][-+]?\d+)?", text)


def test_numbers_are_written_for_readers(report_dir):
    tex = _body((report_dir / "equations.tex").read_text())
    md = (report_dir / "report.md").read_text()
    for text in (tex, md):
        assert not re.search(r"\d[eE][-+]?\d", text), re.search(r".{30}\d[eE][-+]?\d.{10}", text)
        for num in _numbers(text):
            digits = len(num.split("e")[0].replace(".", "").lstrip("0"))
            assert digits <= 12, num
        assert "inf digits" not in text and " nan" not in text


def test_no_software_in_the_body_of_the_document(report_dir):
    from grpo_theory.render.latex import LIBRARY_NAMES

    body = _body((report_dir / "equations.tex").read_text()).lower()
    for word in LIBRARY_NAMES:
        assert not re.search(rf"\b{word}\b", body), word
    # the package's own vocabulary (issue 30, section 4): results and sections, not records and
    # chapters; no file, test or version of the package
    for phrase in (r"\brecords?\b", r"\bchapters?\b", r"committed result", r"\bits book\b",
                   r"mutation tests?", r"version 0\.\d", r"scipy\.linalg"):
        m = re.search(phrase, body)
        assert m is None, body[max(0, m.start() - 60):m.end() + 20]
    assert "committed result files" not in (report_dir / "report.md").read_text()
    appendix = (report_dir / "equations.tex").read_text()
    assert "SymPy" in appendix and "mpmath" in appendix      # named once, in the appendix


def test_every_symbol_of_the_document_is_in_the_notation_table(report_dir):
    from grpo_theory.render.notation import unknown_symbols

    body = _body((report_dir / "equations.tex").read_text())
    body = re.sub(r"\\(?:label|eqref|ref|cite)\{[^}]*\}", "", body)
    maths = re.findall(r"(?<!\\)\$(.+?)(?<!\\)\$", body, flags=re.S)
    maths += re.findall(r"\\begin\{(equation\*?|multline)\}(.*?)\\end\{\1\}", body, flags=re.S)
    bad = {}
    for m in maths:
        m = m[1] if isinstance(m, tuple) else m
        for sym in unknown_symbols(m):
            bad.setdefault(sym, m[:80])
    assert not bad, bad


def test_every_symbol_of_report_md_is_in_the_notation_table(report_dir):
    """report.md writes its formulas in plain text: every Greek symbol there is a symbol of the
    notation table (one meaning each), as in the PDF."""
    from grpo_theory.render.notation import unknown_in_plain

    md = (report_dir / "report.md").read_text()
    assert not unknown_in_plain(md), sorted(set(unknown_in_plain(md)))
    assert "β₁" not in md                     # Adam's first-moment decay rate is the momentum μ


def test_the_one_over_g_law_is_stated_with_its_region(report_dir):
    tex = (report_dir / "equations.tex").read_text()
    md = (report_dir / "report.md").read_text()
    assert "hence to $1/G$" not in tex and "proportional to $1/G$ because" not in tex
    assert r"G \min(p^{*}, q^{*}) \gg 1" in tex
    assert "G min(p*, q*) ≫ 1" in md or "G·min(p*, q*) ≫ 1" in md
    nums = json.loads((report_dir / "report.json").read_text())
    regimes = {r["regime"] for r in nums["fluctuation_law"]}
    assert regimes == {"holds", "model"}
    for r in nums["fluctuation_law"]:                 # theory and simulation in each regime
        assert r["var_z_sim"] > 0 and r["var_z_theory"] > 0
        # the exact stationarity condition, evaluated with the exact drift and noise over the
        # simulated samples, adds up to the simulated variance (the linear theory alone does not)
        both = r["var_z_noise_part"] + r["var_z_curvature_part"]
        assert abs(both - r["var_z_sim"]) < 3 * r["var_z_sim_se"], r
    left = [r for r in nums["fluctuation_law"] if r["regime"] == "holds"]
    assert left[0]["var_z_curvature_part"] > 2 * left[0]["var_z_sim_se"]   # the curvature is the excess
    assert "The cause is the curvature of the drift" in tex


def test_report_md_has_no_code_words(report_dir):
    md = (report_dir / "report.md").read_text()
    for token in ("True", "False", "grpo_theory.", "[shao2024", "std+exact", "dr-grpo", "`"):
        assert token not in md, token
    assert "information only" in md                   # the informational plateau row says so
    assert "what it tests" in md
    assert "## References" in md and "1. " in md


def test_bad_out_is_one_line_exit_2_nothing_written(tmp_path, capsys):
    f = tmp_path / "file"
    f.write_text("x")
    assert main(["report", "--out", str(f)]) == 2
    assert main(["report", "--out", str(f / "sub")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all("--out" in line for line in err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"] and f.read_text() == "x"


def test_failed_crosscheck_gives_exit_1_with_reason(tmp_path):
    from grpo_theory.report.build import ReportResult

    ok = {"name": "plateaus", "predicted": 0.9, "measured": 0.9, "error": 0.0,
          "band": {"tolerance": 0.01}, "verdict": "pass"}
    bad = {**ok, "name": "refresh_threshold", "measured": 0.5, "error": -0.4, "verdict": "fail"}
    good = ReportResult(out_dir=tmp_path, numbers={"crosschecks": {"checks": [ok]}})
    assert good.exit_code == 0 and good.failures() == []
    rr = ReportResult(out_dir=tmp_path, numbers={"crosschecks": {"checks": [ok, bad]}})
    assert rr.exit_code == 1
    text = str(rr)
    assert "1 FAILED" in text and "refresh_threshold failed" in text and "> tolerance 0.01" in text
    assert rr.to_dict()["failures"] == rr.failures()


def test_citation_is_generated_from_what_is_used():
    from grpo_theory.render.latex import citation

    only_osc = [n for n in all_names() if n.startswith("oscillator.")]
    assert "@article{mroueh2025," in citation(["fixed_points.mroueh_map"], bibtex=True)
    assert "@article{mroueh2025," not in citation(only_osc, bibtex=True)


def test_deepnet_section(report_dir):
    """With PyTorch (the test extra installs it) the report has the neural-policy refresh
    sweep: the exact k_max from the measured stiffness brackets the observed one."""
    import json

    nums = json.loads((report_dir / "report.json").read_text())
    dn = nums["deepnet"]
    assert dn["k_max_predicted"] == dn["k_max_observed"] == 10
    assert dn["k_max_published"] < dn["k_max_predicted"]
    assert "Deep network" in (report_dir / "report.md").read_text()



def _captions(tex):
    """The text of every caption of the document (braces balanced)."""
    out = []
    for m in re.finditer(r"\\caption\{", tex):
        depth, i = 1, m.end()
        while depth:
            depth += {"{": 1, "}": -1}.get(tex[i], 0)
            i += 1
        out.append(tex[m.end():i - 1])
    return out


def test_every_figure_is_in_the_pdf_once_with_caption_label_and_reference(report_dir):
    """Every figure the report writes stands in equations.tex once, as a float with its
    caption below it and a label the text refers to; the floats are numbered in the order
    report.md numbers them."""
    from grpo_theory.report.captions import FIGURE_ORDER, fig_label

    tex = (report_dir / "equations.tex").read_text()
    written = sorted(p.stem for p in report_dir.glob("*.pdf") if p.stem != "equations")
    assert set(written) == set(FIGURES)
    floats = re.findall(r"\\begin\{figure\}\[!?htbp\](.*?)\\end\{figure\}", tex, flags=re.S)
    assert len(floats) == len(written)
    included = [re.search(r"\\includegraphics\[width=[\d.]*\\linewidth\]\{(\w+)\.pdf\}", f).group(1)
                for f in floats]
    assert sorted(included) == written                         # each once, by its relative name
    assert included == [s for s in FIGURE_ORDER if s in written]
    md = (report_dir / "report.md").read_text()
    for i, (stem, body) in enumerate(zip(included, floats)):
        label = fig_label(stem)
        assert body.index("\\includegraphics") < body.index("\\caption") < body.index(f"\\label{{{label}}}")
        outside = tex.replace(body, "")
        assert f"\\ref{{{label}}}" in outside, stem           # the text refers to it
        assert f"*Figure {i + 1} (of equations.pdf).*" in md and f"({stem}.png)" in md
    assert tex.count("\\includegraphics") == len(written)


def test_captions_are_written_for_readers(report_dir):
    """No caption (in equations.tex or report.md) holds a file name, a code word or a number in
    e-notation; the two documents' captions come from one text."""
    from grpo_theory.render.latex import LIBRARY_NAMES

    tex = (report_dir / "equations.tex").read_text()
    caps = _captions(tex)
    assert len(caps) == len(FIGURES)
    md_caps = re.findall(r"^\*Figure \d+ \(of equations\.pdf\)\.\* (.*) \(\[PDF\]", 
                         (report_dir / "report.md").read_text(), flags=re.M)
    assert len(md_caps) == len(FIGURES)
    for cap in caps + md_caps:
        words = re.sub(r"\$[^$]*\$", " ", cap)                # the words, formulas left out
        words = re.sub(r"\\(?:cite|ref|eqref)\{[^}]*\}", " ", words)   # keys and labels
        words = words.replace("of equations.pdf", "")         # report.md names the document
        assert not re.search(r"\.(?:png|pdf|json|tex|py)\b|/\w+/", words), cap[:80]
        if cap in caps:                                       # LaTeX: no underscore in the words
            assert "_" not in words, cap[:80]
        else:                                                 # Markdown: p_ref, not low_var_kl
            assert not re.search(r"\w+_\w+_\w+|_[a-z]{6,}", words), cap[:80]
        assert not re.search(r"\d[eE][-+]?\d", cap), cap[:80]
        assert not re.search(r"\d\.\d{7,}", cap), cap[:80]                  # machine floats
        assert not any(re.search(rf"\b{w}\b", words.lower()) for w in LIBRARY_NAMES), cap[:80]
        assert "\\texttt" not in cap and "`" not in cap
    # one source: a caption's opening words are the same in both documents
    assert any(m.startswith("Group size as temperature: the stationary G") for m in md_caps)
    assert any(c.startswith("Group size as temperature: the stationary $G") for c in caps)


def test_a_figure_not_drawn_is_said_and_not_included(tmp_path):
    """Without the deep network (no PyTorch) or any figure file, the sections say so and no
    \\includegraphics points at a missing file (cheap: no report is built)."""
    from grpo_theory.report.captions import (atlas_figures, captions, chapter_figures,
                                             deepnet_section, log_fit_section)

    nums = {"trajectories": [], "fluctuation_law": [], "deepnet": None, "log_fit": None}
    caps = captions(nums, DEFAULT_MODEL.to_dict())
    assert "deepnet" not in caps and "log_fit" not in caps and "bifurcation" in caps
    title, body = deepnet_section(nums, caps, tmp_path)
    assert "not run" in body and "\\includegraphics" not in body and "\\ref{fig:" not in body
    assert "\\includegraphics" not in log_fit_section(nums, caps, tmp_path)[1]
    assert chapter_figures(caps, tmp_path) == {}                  # no PDF written: no float
    assert atlas_figures(caps, tmp_path) == {"folds": ("", ""), "discrete": ("", "")}
    (tmp_path / "phase_diagram_k.pdf").write_bytes(b"%PDF-1.4\n/MediaBox [0 0 268.6 305.3]\n")
    disc = chapter_figures(caps, tmp_path)["discrete"]
    assert disc.count("\\includegraphics") == 1 and "phase_diagram_mu" not in disc
    assert "\\ref{fig:phase-diagram-k}" in disc and "\\ref{fig:phase-diagram-mu}" not in disc
    assert "[width=0.592\\linewidth]" in disc                     # its drawn width, 3.73 in


def test_figures_print_at_their_drawn_size(report_dir):
    """Each figure is drawn at most about the text width and included at its own width, so
    its fonts (none below 7 pt outside sub- and superscripts) print at their drawn size."""
    from grpo_theory.report.captions import TEXT_WIDTH_IN, include_width

    for stem in FIGURES:
        head = (report_dir / f"{stem}.pdf").read_bytes()
        box = re.search(rb"/MediaBox\s*\[\s*[-\d.]+\s+[-\d.]+\s+([\d.]+)", head)
        width_in = float(box.group(1)) / 72
        assert width_in <= 1.05 * TEXT_WIDTH_IN, (stem, width_in)
        w = include_width(report_dir / f"{stem}.pdf")
        frac = 1.0 if w == "\\linewidth" else float(w.split("\\")[0])
        assert frac * TEXT_WIDTH_IN / width_in >= 0.95, stem        # shrunk by at most 5 %


def test_the_installed_report_has_the_lab_section_with_its_numbers(report_dir):
    """The lab's results ship in the wheel: the report built from it shows their numbers (read
    here from the package's files), not the sentence that replaces a missing section."""
    from grpo_theory.data import lab_results_dir

    raw = json.loads((lab_results_dir() / "lab_refresh.json").read_text())
    tex = (report_dir / "equations.tex").read_text()
    md = (report_dir / "report.md").read_text()
    for text in (tex, md):
        assert "not available" not in text
    assert f"{raw['stiffness']['ntk']:.4g}" in tex and f"{raw['stiffness']['ntk']:.4g}" in md
    nums = json.loads((report_dir / "report.json").read_text())
    assert nums["log_fit"] and (report_dir / "log_fit.png").stat().st_size > 1000


def test_the_installed_environment_has_torch_so_the_report_has_the_deep_network(installed, tmp_path):
    """The deep-network section is checked (test_deepnet_section) when the environment the
    report ran in has PyTorch, as the test extra's has."""
    pytest.importorskip("torch")
    r = installed.python_c("import torch; print(torch.__version__)", cwd=tmp_path)
    assert r.returncode == 0, r.stderr


def test_report_md_figures_in_the_pdf_order_and_forecast_candidates_named(report_dir):
    """report.md shows its figures in the order equations.pdf numbers them (1, 2, 3, ...), and
    names every forecast candidate as the report defines it: a curve family that `fit --models`
    offers, or the level carried forward (the forecast's baseline, which `fit` does not offer)."""
    from grpo_theory.report.data import FAMILY_WORDS
    from grpo_theory.runs.curves import MODEL_NAMES

    md = (report_dir / "report.md").read_text()
    shown = [int(n) for n in re.findall(r"!\[Figure (\d+)\]", md)]
    assert shown == list(range(1, len(shown) + 1)), shown
    fc = json.loads((report_dir / "report.json").read_text())["log_fit"]["forecast"]
    for m in fc["holdout_rmse_by_family"]:
        assert m in MODEL_NAMES or m == "constant", m
        assert FAMILY_WORDS[m] in md
    tex = (report_dir / "equations.tex").read_text()
    assert FAMILY_WORDS[fc["best"]] in tex and FAMILY_WORDS[fc["best"]] in md
    assert "constant family" not in tex + md and "(constant" not in tex + md


def test_the_document_is_a_paper(report_dir):
    """Title, authors, an abstract of findings, introduction with contributions, related work,
    discussion and conclusion; the notation table in an appendix; no per-equation tag that
    certifies only the typesetting."""
    from grpo_theory.render.latex import package_authors

    tex = (report_dir / "equations.tex").read_text()
    assert f"\\author{{{package_authors()}}}" in tex and package_authors()
    abstract = tex.split("\\begin{abstract}", 1)[1].split("\\end{abstract}", 1)[0]
    assert "This document lists" not in abstract and "version" not in abstract
    assert "conservative" in abstract and "cite{mroueh2025}" in abstract
    order = [tex.index(f"\\section{{{t}}}") for t in ("Introduction", "Related work", "Discussion",
                                                      "Conclusion")]
    assert order == sorted(order) and "\\paragraph{Contributions.}" in tex
    assert "\\paragraph{The default model.}" in tex and "K_{f}/K = 1.04" in tex
    assert tex.index("\\appendix") < tex.index("\\section{Notation}")
    assert "form shown is proven equal" not in tex and "Star: the model" not in tex


def test_no_agreement_claimed_beyond_the_working_precision(report_dir):
    tex = (report_dir / "equations.tex").read_text()
    pairs = re.findall(r"at (\d+)-digit\s+precision: the two agree to at least (\d+) digits", tex)
    assert all(int(agree) <= int(prec) for prec, agree in pairs), pairs
    assert "agree to the working precision" in tex


def test_corrected_statements_stay_corrected(report_dir):
    """The statements a referee found false or overclaimed (issue 30, section 2)."""
    tex = (report_dir / "equations.tex").read_text()
    assert "too cautious at small" not in tex and "lies beyond the flip threshold" not in tex
    assert "agrees with the\nexact theory in both regimes" not in tex and "in both regimes." not in tex
    assert "Neither is the $1/G$ law" not in tex and "keeps a fixed width" not in tex
    assert "says whether it uses, reproduces" not in tex
    assert "(z^{*} - z_{\\mathrm{ref}})_{\\mathrm{here}}" not in tex


def test_every_caption_states_its_error_bars(report_dir):
    """Each figure's caption says what its bars or bands are (the one convention: +-2 standard
    errors; bands of runs +-2 standard deviations; a forecast's 90 % interval), or that it is
    theory only."""
    from grpo_theory.report.captions import captions

    nums = json.loads((report_dir / "report.json").read_text())
    caps = captions(nums, nums["model"])
    assert len(caps) >= 8
    for stem, cap in caps.items():
        assert re.search(r"\$\\pm 2\$ standard (errors|deviations)|90 % (forecast )?interval|[Tt]heory only",
                         cap), stem
        assert "pm 1$ standard" not in cap, stem


def test_the_derivations_appendix_is_appendix_b_and_is_cited(report_dir):
    """Issue 30, section 3: the appendix of derivations is in the PDF, after the notation (so the
    introduction's "Appendix B" is it), with displayed chains and no proof tags."""
    tex = (report_dir / "equations.tex").read_text()
    appendices = re.findall(r"\\section\{([^}]*)\}", tex[tex.index("\\appendix"):])
    assert appendices[:2] == ["Notation", "How the results follow"], appendices
    assert "Appendix B derives the central results" in tex and "textasciitilde" not in tex
    part = tex[tex.index("\\label{app:derivations}"):tex.index("\\label{app:verification}")]
    assert part.count("\\begin{align*}") >= 17 and "\\verified" not in part


def test_report_md_tables_have_one_cell_per_column(report_dir):
    """No "|" inside a cell breaks a table of report.md (issue 30, section 5): every row of a
    table has as many cells as its header."""
    lines = (report_dir / "report.md").read_text().split("\n")
    tables, i = 0, 0
    while i < len(lines):
        if lines[i].startswith("|"):
            j = i
            while j < len(lines) and lines[j].startswith("|"):
                j += 1
            cells = [len(re.split(r"(?<!\\)\|", row.strip())) for row in lines[i:j]]
            assert len(set(cells)) == 1, (i + 1, cells)
            tables, i = tables + 1, j
        else:
            i += 1
    assert tables >= 3


def test_report_md_numbers_the_references_as_the_pdf(report_dir):
    """report.md's reference [n] is the PDF's [n]: its list starts with the PDF's bibliography
    in the PDF's order."""
    from grpo_theory.theory.bibliography import format_reference
    tex = (report_dir / "equations.tex").read_text()
    md = (report_dir / "report.md").read_text()
    keys = re.findall(r"\\bibitem\{([^}]*)\}", tex)
    assert len(keys) > 5
    refs = md.split("## References", 1)[1]
    for i, k in enumerate(keys):
        assert f"{i + 1}. {format_reference(k, 'md')}" in refs, (i + 1, k)
