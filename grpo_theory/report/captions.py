r"""The report's figures in ``equations.tex`` and ``report.md``: one caption per figure, written
once and rendered twice.

A caption is prose in the convention of :mod:`grpo_theory.prose` (formulas in LaTeX between
dollars, in the symbols of the notation table) with three kinds of references written as
placeholders outside the formulas:

- ``[[cite:key1,key2]]``: works of the bibliography (LaTeX ``\cite``; in ``report.md`` the
  numbered reference of its list);
- ``[[eq:record.name]]``: a derived result (LaTeX ``\eqref``; in ``report.md`` "equation N of
  equations.pdf");
- ``[[fig:stem]]``: another figure (LaTeX ``Figure~\ref``; in ``report.md`` "Figure N").

:func:`captions` writes the captions from the report's numbers (nothing is computed here);
:func:`caption_tex` and :func:`caption_markdown` render one; :func:`figure_float` is the LaTeX
float of one figure; :func:`chapter_figures` the paragraphs that place the figures in the
chapters of ``equations.tex`` and refer to them, and :func:`deepnet_section` /
:func:`log_fit_section` the two sections of ``equations.tex`` that exist for a figure.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from grpo_theory.prose import escape_tex, literal, tex_label, to_plain_or_as_is, to_tex
from grpo_theory.report.atlas_tex import number
from grpo_theory.report.data import family_words
from grpo_theory.theory.derived import get

__all__ = ["FIGURE_PLACES", "FIGURE_ORDER", "fig_label", "captions", "caption_tex",
           "caption_markdown", "figure_float", "chapter_figures", "deepnet_section",
           "log_fit_section", "include_width"]

#: where each figure stands in ``equations.tex``: a chapter key of
#: :data:`grpo_theory.theory.chapters.CHAPTERS` or one of the report's sections
FIGURE_PLACES = {
    "bifurcation": "fixed_points",
    "phase_diagram_k": "discrete", "phase_diagram_mu": "discrete",
    "trajectories": "oscillator",
    "fluctuation_law": "noise",
    "atlas_folds": "atlas", "atlas_discrete": "atlas",
    "deepnet": "deepnet",
    "log_fit": "log_fit",
}

#: the figures in the order of ``equations.tex`` (the order LaTeX numbers them in)
FIGURE_ORDER = ("bifurcation", "phase_diagram_k", "phase_diagram_mu", "trajectories",
                "fluctuation_law", "atlas_folds", "atlas_discrete", "deepnet", "log_fit")

#: the text width of ``equations.tex`` in inches (16 cm): a figure is included at its own size
#: up to this width, so its fonts print at the size they were drawn with
TEXT_WIDTH_IN = 16 / 2.54

_PLACEHOLDER = re.compile(r"\[\[(cite|eq|fig|sec):([^\]]+)\]\]")

#: the sections of ``equations.tex`` a text may refer to: label -> its name in ``report.md``
SECTIONS = {"atlas": "the two-parameter bifurcation atlas"}


def fig_label(stem: str) -> str:
    """The LaTeX label of a figure: ``fig:phase-diagram-k``."""
    return tex_label("fig:" + stem.replace("_", "-"))


def _n(x, digits=3) -> str:
    """A number of a caption, as inline math (a power of ten for a small or large one)."""
    return number(x, digits)


def _pieces(text: str):
    """``(kind, value)`` pieces: ``("text", prose)`` or a placeholder's kind and value."""
    pos = 0
    for m in _PLACEHOLDER.finditer(text):
        if m.start() > pos:
            yield "text", text[pos:m.start()]
        yield m.group(1), m.group(2)
        pos = m.end()
    if pos < len(text):
        yield "text", text[pos:]


def caption_tex(text: str) -> str:
    """A caption (or any text of this module) for LaTeX: words escaped, formulas as they are,
    the placeholders as ``\\cite``, ``\\eqref`` (``equation~\\ref`` inside parentheses),
    ``Figure~\\ref`` and ``Section~\\ref``."""
    out = []
    for kind, v in _pieces(text):
        if kind == "text":
            out.append(to_tex(v))
        elif kind == "cite":
            out.append(out.pop().rstrip() if out else "")
            out.append(f"~\\cite{{{v}}}")
        elif kind == "eq":
            label = tex_label(get(v).label)
            out.append(f"equation~\\ref{{{label}}}" if out and out[-1].endswith("(")
                       else f"\\eqref{{{label}}}")
        elif kind == "sec":
            out.append(f"Section~\\ref{{{tex_label('sec:' + v)}}}")
        else:
            out.append(f"Figure~\\ref{{{fig_label(v)}}}")
    return "".join(out)


def caption_markdown(text: str, cite, equation_numbers: dict, figure_numbers: dict) -> str:
    """A caption for ``report.md``: formulas as Unicode text, works by their numbers in the
    reference list (``cite``: keys -> "[n]"), results by equation number, figures by number."""
    out = []
    for kind, v in _pieces(text):
        if kind == "text":
            out.append(to_plain_or_as_is(v))
        elif kind == "cite":
            out.append((out.pop().rstrip() if out else "") + " " + cite(*v.split(",")))
        elif kind == "eq":
            n = equation_numbers.get(v)
            after_word = bool(out) and re.search(r"equations? $", out[-1]) is not None
            out.append(str(n) if n and after_word else
                       f"equation {n} of equations.pdf" if n else "equations.pdf")
        elif kind == "sec":
            out.append(SECTIONS.get(v, "a section") + " of equations.pdf")
        else:
            out.append(f"Figure {figure_numbers[v]}" if v in figure_numbers else "a figure")
    return "".join(out)


# ------------------------------------------------------------------------------------
# the captions
# ------------------------------------------------------------------------------------

_REGIMES = ("Regimes of the window map by its two multipliers: overdamped (real, the largest "
            "positive), alternating (real, the largest negative: the deviation changes sign every "
            "window), oscillatory (a complex pair), unstable (one outside the unit circle).")


def _fluctuation_agreement(rows) -> str:
    """How the simulated stationary variance of each panel of the 1/G figure compares with the
    exact discrete theory, from the figure's own numbers: the largest relative and
    standard-error deviation of each panel and whether all its points lie on one side."""
    out = []
    for regime, name in (("holds", "left"), ("model", "right")):
        rr = [r for r in rows if r["regime"] == regime and r.get("var_z_sim_se")]
        if not rr:
            continue
        dev = [(r["var_z_sim"] - r["var_z_theory"]) / r["var_z_sim_se"] for r in rr]
        rel = [r["var_z_sim"] / r["var_z_theory"] - 1 for r in rr]
        i = max(range(len(rr)), key=lambda j: abs(dev[j]))
        side = ("above" if all(d > 0 for d in dev) else "below" if all(d < 0 for d in dev) else None)
        if abs(dev[i]) <= 2:
            out.append(f"In the {name} panel the simulation agrees with the exact theory within "
                       f"$2$ standard errors at every $G$ (at most {abs(dev[i]):.1f})")
        else:
            out.append(
                f"In the {name} panel " + (f"every simulated point lies {side} the exact theory, "
                                           if side else "the simulation deviates from the exact theory, ")
                + f"by up to {abs(dev[i]):.1f} standard errors (${100 * rel[i]:+.0f}\\,\\%$ at "
                f"$G = {rr[i]['group_size']}$): more than the sampling error. " + _variance_cause(rr))
    return ". ".join(out) + "." if out else ""


def _variance_cause(rr) -> str:
    """The measured cause of a panel's excess over the linear theory: the exact stationarity
    condition of the update split into the linear theory with the noise averaged over the
    spread and the drift's curvature over the spread
    (:func:`grpo_theory.report.data._variance_parts`), at the two smallest group sizes and the
    largest; said only where the two parts add up to the simulation within 2 standard errors."""
    rr = [r for r in rr if r.get("var_z_curvature_part") is not None]
    if not rr or any(abs(r["var_z_noise_part"] + r["var_z_curvature_part"] - r["var_z_sim"])
                     > 2 * r["var_z_sim_se"] for r in rr):
        return ("The exact theory is the variance of the linearized map and neglects the terms "
                "of higher order in the deviation")
    pick = rr[:2] + rr[-1:] if len(rr) > 2 else rr

    def pct(r, k):
        return f"${100 * (r[k] / r['var_z_theory'] - (k == 'var_z_noise_part')):+.1f}\\,\\%$"

    return (
        "The cause is the curvature of the drift. For $\\mu = 0$, $k = 1$ the update "
        "$z' = z + \\eta (F(z) + \\xi)$ is stationary exactly when "
        "$K (2 - \\eta K) \\operatorname{E} x^{2} = \\eta \\operatorname{E}\\sigma^{2}(z) "
        "+ 2 (1 - \\eta K) \\operatorname{E}[x (F + K x)] + \\eta \\operatorname{E}(F + K x)^{2}$, "
        "with $x = z - z^{*}$ and $F + K x$ the drift's nonlinear part; the first term is the "
        "linear theory with the noise averaged over the spread, the others the "
        "curvature. Evaluated over the simulated samples, relative to the linear theory: "
        + "; ".join(f"at $G = {r['group_size']}$ the noise's change over the spread "
                    f"{pct(r, 'var_z_noise_part')}, the curvature {pct(r, 'var_z_curvature_part')}, "
                    f"measured ${100 * (r['var_z_sim'] / r['var_z_theory'] - 1):+.1f}\\,\\%$"
                    for r in pick)
        + ". The correction is of relative order $\\operatorname{Var} z$, so of order "
        "$\\eta / G$: it vanishes as $\\eta \\to 0$ and shrinks with $G$, as the figure shows")


def captions(nums: dict, model: dict) -> dict:
    """Stem -> caption (prose with placeholders) of every figure the numbers describe; a
    figure whose numbers are missing (the deep network without its optional dependency, the
    real run without its log) has no caption."""
    mu, k = model["momentum"], model["refresh_interval"]
    out = {}
    out["phase_diagram_k"] = (
        f"Exact regimes of the linearized training map (level L2, all stiffness acting through "
        f"the sampling policy) over the refresh interval $k$ and the step stiffness $a = \\eta K$ "
        f"at the model's momentum $\\mu = {mu:g}$. " + _REGIMES + " Each integer $k$ is a column; "
        "the solid steps are the exact stability boundary (equations "
        "[[eq:discrete.refresh_flip_threshold]] and [[eq:discrete.refresh_complex_threshold]]), the dashed line the published first-order "
        "rule $\\eta K k = 1 - \\mu$ [[cite:predictable_grpo]]. The default model, whose stiffness "
        "acts on the current iterate ($K_{f}/K$ near $1$), is not a point of this diagram. "
        "Theory only, no simulation; the linear map describes deviations small enough for the "
        "drift to be linear in them.")
    out["phase_diagram_mu"] = (
        f"Exact regimes of the linearized training map (level L2) over the momentum $\\mu$ and "
        f"$a = \\eta K$ at the model's refresh interval $k = {k}$, coloured as in "
        "[[fig:phase_diagram_k]]; dashed: the published rule $\\eta K k = 1 - \\mu$. The open circle "
        "is where the flip boundary meets the complex-pair boundary: a 1:2 resonance (both "
        "multipliers at $-1$), where the exact boundary has its kink. Theory only.")
    tr = nums.get("trajectories") or []
    unstable = next((r for r in tr if r["regime"].startswith("unstable")), None)
    if tr:
        r0 = tr[0]
        out["trajectories"] = (
            "The logit $z$ against the step $t$ in three regimes (learning rate $\\eta$ and momentum "
            "$\\mu$ varied, refresh interval $k = 1$, the model's KL and group size), started 1 logit "
            "below the fixed point $z^{*}$ (0.05 in the unstable panel). Simulation: "
            f"{r0['runs']} independent runs of sampled GRPO with $B = {r0['prompts']}$ identical "
            "prompts per step, mean $\\pm 2$ standard deviations. Theory: the nonlinear mean-field "
            "map L1, the exact linear map L2 and the closed form of the oscillator L3 "
            "([[eq:oscillator.trajectory_underdamped]] and its overdamped twin). L1 differs from the "
            "simulation mean only by the noise-induced bias of order $\\eta^{2} \\operatorname{Var} z$; "
            "L2 in addition by the linearization about $z^{*}$ (about 0.1 logit below the simulation "
            "in the overdamped panel for a 1-logit start); L3 in addition by the continuous-time "
            "approximation."
            + (" The unstable panel shows the size of the deviation $|z - z^{*}|$ on a log scale: "
               f"the maps L2 and L1 grow by the spectral radius $\\rho = {_n(unstable['spectral_radius'], 3)[1:-1]}$ "
               "per step (a multiplier beyond $-1$, a flip), the simulation's spread grows with "
               "them, and the oscillator L3, which cannot represent a flip, predicts a decaying "
               f"oscillation ($\\zeta = {_n(unstable['damping_ratio'], 2)[1:-1]} < 1$): the continuous "
               "model misses this instability." if unstable and unstable.get("damping_ratio") else ""))
    fl = nums.get("fluctuation_law") or []
    setup = nums.get("fluctuation_setup") or {}
    hold = [r for r in fl if r["regime"] == "holds"]
    mod = [r for r in fl if r["regime"] == "model"]
    if hold and mod and setup:
        out["fluctuation_law"] = (
            "Group size as temperature: the stationary $G \\operatorname{Var} z$ at the fixed point "
            f"(SGD with $\\eta = {setup['learning_rate']:g}$, $\\mu = {setup['momentum']:g}$, $k = 1$, "
            "one prompt per step). Simulation: "
            f"{setup['runs']} runs of {setup['steps']} steps started at the fixed point, the first "
            f"{setup['burn']} discarded, the mean squared deviation from $z^{{*}}$ with $\\pm 2$ standard "
            "errors. Theory: the exact discrete variance (L2, equation [[eq:noise.ar2_variance]]) and the "
            "continuous one (L3, equation [[eq:noise.langevin_variance]]), both with the per-step noise "
            "$\\sigma^{2}$ of the exact binomial update. Under each $G$: $G \\min(p^{*}, q^{*})$. The law "
            "$\\operatorname{Var} z \\propto 1/G$ (a flat curve) holds only where "
            "$G \\min(p^{*}, q^{*}) \\gg 1$. Left: mean normalization with the analytic KL at "
            f"$\\beta = {setup['kl_coef_holds']:g}$, where $p^{{*}}$ stays between "
            f"{_n(hold[0]['p_star'], 2)} and {_n(hold[-1]['p_star'], 2)}: $G \\operatorname{{Var}} z$ "
            "levels off as $G \\min(p^{*}, q^{*})$ grows. Right: the model of this report, with "
            f"$p^{{*}}$ from {_n(mod[0]['p_star'], 3)} to {_n(mod[-1]['p_star'], 3)}: failures are "
            f"rare, $G \\min(p^{{*}}, q^{{*}})$ stays between {_n(mod[0]['g_min_pq'], 2)} and "
            f"{_n(mod[-1]['g_min_pq'], 2)}, and $G \\operatorname{{Var}} z$ keeps growing. The reason is "
            "the rare-failure limit ([[eq:drift.update_variance_rare_failure]]): most groups are "
            "degenerate and the informative ones hold a single failure, whose std-normalized "
            "advantage is of order $\\sqrt{G}$; to first order in $q^{*}$ the per-step variance is "
            "$\\kappa^{2} (1 - 1/G)^{2} q^{*}$, independent of $G$. " + _fluctuation_agreement(fl))
    out["bifurcation"] = (
        "Fixed points $p^{*}$ of the mean-field drift L1 against the KL coefficient $\\beta$ at "
        f"$p_{{\\mathrm{{ref}}}} = {model['p_ref']:g}$; solid lines stable, dashed lines unstable "
        "(the dotted line is $p_{\\mathrm{ref}}$). The normalization constant is "
        f"$\\epsilon = {_n(model['adv_eps'], 2)[1:-1]}$, the default model's. Variants: std and mean normalization, analytic "
        f"and k3 KL, $G = {model['group_size']}$ and $G \\to \\infty$. Circles: the fixed points of "
        "Mroueh's recurrence [[cite:mroueh2025]], which only std normalization with the analytic KL "
        "at $G \\to \\infty$ reproduces ([[eq:fixed_points.mroueh_agreement]]). Each curve is the "
        "level set $\\beta = \\beta^{*}(z)$ drawn over the $\\beta$ its fixed points reach inside the "
        "plotted window, traced up to $1 - p^{*} \\approx 10^{-17}$: a curve starts where its branch "
        "enters the window (at small $\\beta$ the fixed point sits at $p \\approx 1$, above the "
        "axis), not at a bifurcation; a curve that starts below 1 starts at a saddle-node (fold). "
        "With $\\epsilon > 0$ at $G \\to \\infty$ a second saddle-node appears at $\\beta$ of order "
        "$10^{4}$ and $p = 1 - O(\\epsilon^{2})$: a fold of the regularised model (where "
        "$\\sqrt{p q}$ becomes comparable with $\\epsilon$), far outside any practical $\\beta$. "
        "Theory only; the fixed points of the deterministic drift, about which the noise of a "
        "finite batch fluctuates.")
    at = nums.get("atlas")
    if at:
        c = at["p_ref_plane"]["cusp"]
        out["atlas_folds"] = (
            "Fold atlas of the fixed points (std normalization, analytic KL, $\\epsilon = 0$). Left: "
            f"$p^{{*}}$ against $\\beta$ at $G = {c['group_size']}$, $p_{{\\mathrm{{ref}}}} = 0.3$, stable "
            "solid, unstable dashed, folds as dots: between the folds the plateau is bistable. "
            f"Middle: the fold curve in $(\\beta, p_{{\\mathrm{{ref}}}})$ at $G = {c['group_size']}$, "
            "continued by pseudo-arclength [[cite:keller1977]]; its two branches meet at the cusp "
            "(star). The continuation stops at $p_{\\mathrm{ref}} = "
            f"{at.get('continuation_end_p_ref', 0.02):.2g}$, a choice of the "
            "computation; the open circles are folds found directly at smaller "
            "$p_{\\mathrm{ref}}$: the curves continue, both $\\beta_{\\mathrm{fold}}$ falling like "
            "$1/\\ln(1/p_{\\mathrm{ref}})$. Right: the folds per integer $G$ at "
            "$p_{\\mathrm{ref}} = 0.3$; bistability begins between the marked group sizes. Theory "
            "only, each fold checked independently of the fold condition.")
        out["atlas_discrete"] = (
            "Stability boundaries of the exact linear map L2 (stale surrogate): flip (a real "
            "eigenvalue of the window's monodromy $M$ at $-1$) and complex pair on the unit circle "
            "(Neimark--Sacker), over $(k, a)$ at $\\mu = 0.8$ ($k$ extended to real values between the "
            "integers) and over $(\\mu, a)$ at $k = 4$, with $a = \\eta K$; above them the map is "
            "unstable. The open circles are the codimension-two points where the two boundaries "
            "meet: 1:2 resonances (both eigenvalues $-1$, a single eigenvector) "
            "[[cite:kuznetsov2004]]. These are boundaries of the linear map; what the nonlinear map "
            "does past them is in the criticality table. Theory only.")
    dn = nums.get("deepnet")
    if dn:
        out["deepnet"] = (
            f"Modulus of the per-window multiplier of the top mode of a neural policy (an MLP with {dn['parameters']} "
            f"parameters over {dn['prompts']} prompts) trained with sampled GRPO (mean normalization, "
            f"k1 KL in the reward, $G = {dn['group_size']}$) by SGD with $\\eta = "
            f"{_n(dn['learning_rate'], 3)[1:-1]}$ and $\\mu = {_n(dn['momentum'], 3)[1:-1]}$ "
            f"($\\eta K = {_n(dn['eta_K'], 3)[1:-1]}$), against the exact L2 prediction from its "
            "measured stiffness $K$, over refresh intervals $k$ from 1 to past the predicted "
            "boundary. Task: each prompt is a two-answer question whose answer the verifier "
            "checks exactly, and the network is warm-started at the plateau "
            f"$p^{{*}} = {_n(dn['p_star'], 2)[1:-1]}$. "
            + (f"At each $k$: {dn['design']['pairs']} pairs of runs (the two runs of a pair kicked by the same small "
               "displacement in opposite directions along the top mode, with common random numbers), "
               f"{dn['design']['windows']} refresh windows per run, random seed "
               f"{dn['design']['seed']}; the multiplier is fitted to the top-mode coordinate at the "
               "window starts and its standard error is the jackknife over pairs. "
               if dn.get("design") else "")
            + "Past the point where the window's multiplier changes sign (the deviation "
            "then alternates from window to window) its modulus is drawn. Below: the measured minus "
            "the predicted modulus with $\\pm 2$ standard "
            "errors (above, the error bars are smaller than the markers). The vertical lines mark "
            f"the largest stable $k$ of the exact theory ($k = {dn['k_max_predicted']}$) and of the "
            f"published rule ($k = {dn['k_max_published']}$); the network is stable up to "
            f"$k = {dn['k_max_observed']}$. Measured on the network, predicted from the bandit "
            "theory with the network's stiffness; the prediction holds near the plateau, where the "
            "top mode is linear.")
    lf = nums.get("log_fit")
    if lf:
        fc = lf.get("forecast") or {}
        by = fc.get("holdout_rmse_by_family") or {}
        held = ((f": here the {literal(family_words(fc['best']))}. Held-out root-mean-square error "
                 + ", ".join(f"{literal(family_words(m))} {_n(v, 2)}" for m, v in by.items())
                 + f"; {100 * fc['holdout_coverage']:.0f} % of the held-out points lie inside the "
                 "interval") if fc.get("holdout_rmse") is not None else "")
        out["log_fit"] = (
            "The training reward of a public GRPO run (the verl engine [[cite:sheng2025hybridflow]], "
            "the DeepSeek LLM 7B chat model [[cite:bi2024deepseekllm]] on GSM8K "
            f"[[cite:cobbe2021gsm8k]]; {lf['n']} steps of the published training log "
            "[[cite:su2025verllog]], the logged mean score). Left: the logged reward with the model "
            "families fitted to the first half (the dotted line splits the fitted part from the "
            "held-out part); the legend gives each family's coefficient of determination. Right: "
            "the held-out half at its own scale, with its 90 % forecast interval and the forecast of "
            "the candidate with the smallest rolling-origin error on the fitted part, among the two "
            "families and the level carried forward (the mean of the last points of the fitted "
            f"part, a baseline every forecast includes and not a family of the fit){held}. Data, "
            "not simulation: the families are curves of the theory's shapes, fitted without the "
            "bandit's parameters.")
    return out


# ------------------------------------------------------------------------------------
# equations.tex
# ------------------------------------------------------------------------------------

def include_width(pdf: Path) -> str:
    """The width to include ``pdf`` at: its own width up to the text width (never enlarged,
    so its fonts print at their drawn size; a wider one is shrunk to the text width)."""
    head = Path(pdf).read_bytes()
    m = re.search(rb"/MediaBox\s*\[\s*([-\d.]+)\s+([-\d.]+)\s+([-\d.]+)\s+([-\d.]+)", head)
    if m is None:
        return "\\linewidth"
    width_in = (float(m.group(3)) - float(m.group(1))) / 72.0
    frac = min(1.0, width_in / TEXT_WIDTH_IN)
    return "\\linewidth" if frac > 0.995 else f"{math.floor(frac * 1000) / 1000:g}\\linewidth"


def figure_float(stem: str, caption: str, out_dir) -> str:
    """One figure as a LaTeX float: the PDF of ``stem`` (in the document's directory), centred,
    its caption below it, and its label."""
    if not re.fullmatch(r"[A-Za-z0-9_.\-]+", stem):
        raise ValueError(f"figure file name must be letters, digits, '_', '.' or '-', got {stem!r}")
    width = include_width(Path(out_dir) / f"{stem}.pdf")
    return ("\\begin{figure}[!htbp]\n\\centering\n"
            f"\\includegraphics[width={width}]{{{stem}.pdf}}\n"
            f"\\caption{{{caption_tex(caption)}}}\\label{{{fig_label(stem)}}}\n"
            "\\end{figure}")


def _present(out_dir, stems, caps) -> list[str]:
    return [s for s in stems if s in caps and (Path(out_dir) / f"{s}.pdf").exists()]


#: the paragraph that introduces the figures of a chapter (prose with placeholders)
_CHAPTER_LEADS = {
    "fixed_points": (
        "The fixed points over the KL coefficient",
        "[[fig:bifurcation]] draws the stable and unstable fixed points of the four variants "
        "over $\\beta$ with the fixed points of Mroueh's recurrence; only std normalization with "
        "the analytic KL at $G \\to \\infty$ meets them ([[eq:fixed_points.mroueh_agreement]]), and "
        "where a branch folds the plateau is bistable (the atlas in [[sec:atlas]])."),
    "discrete": (
        "The regimes of the window map",
        "[[fig:phase_diagram_k]] and [[fig:phase_diagram_mu]] draw the regimes of the exact window "
        "map over $(k, a)$ and $(\\mu, a)$: the exact stability boundary, the flip threshold "
        "[[eq:discrete.refresh_flip_threshold]] or the complex-pair threshold "
        "[[eq:discrete.refresh_complex_threshold]], whichever is crossed first, against the "
        "published first-order rule [[eq:discrete.published_threshold_learning_rate]], which is "
        "conservative at every point drawn: by a factor of exactly $2$ at $\\mu = 0$ and in the "
        "limit $k \\to \\infty$, and most at large $\\mu$ and small $k$ (at $k = 1$ by the factor "
        "$2(1 + \\mu)/(1 - \\mu)$: $6$, $18$ and $38$ at $\\mu = 0.5$, $0.8$ and $0.9$); it also "
        "misses the kink at the 1:2 resonance."),
    "oscillator": (
        "The three levels against simulation",
        "[[fig:trajectories]] follows the logit from a kick in three regimes with the simulation "
        "of sampled GRPO, the nonlinear map L1, the exact linear map L2 and the oscillator L3 "
        "(equations [[eq:oscillator.trajectory_overdamped]] and [[eq:oscillator.trajectory_underdamped]]): "
        "the levels agree where the oscillator applies, and past the flip boundary the oscillator "
        "predicts a decay where the discrete maps and the simulation diverge."),
    "noise": (
        "Where the group-size law holds",
        "[[fig:fluctuation_law]] measures the stationary variance against the exact discrete "
        "theory [[eq:noise.ar2_variance]] and the continuous one [[eq:noise.langevin_variance]] "
        "over the group size, in a variant where the law $\\operatorname{Var} z \\propto 1/G$ "
        "holds ($G \\min(p^{*}, q^{*}) \\gg 1$) and at the model of this report, where failures "
        "are rare and it does not."),
}


def chapter_figures(captions_: dict, out_dir) -> dict:
    """Chapter key -> LaTeX appended to that chapter of ``equations.tex``: a paragraph that
    refers to the chapter's figures and their floats (only figures whose PDF was written)."""
    out = {}
    for chapter, (title, lead) in _CHAPTER_LEADS.items():
        stems = _present(out_dir, [s for s in FIGURE_ORDER if FIGURE_PLACES[s] == chapter], captions_)
        if not stems:
            continue
        text = lead
        for s in FIGURE_ORDER:          # a figure not drawn is not referred to
            if FIGURE_PLACES[s] == chapter and s not in stems:
                text = text.replace(f"[[fig:{s}]]", "a figure not drawn in this build")
        out[chapter] = "\n\n".join([f"\\paragraph{{{title}.}} " + caption_tex(text),
                                    *(figure_float(s, captions_[s], out_dir) for s in stems)])
    return out


def atlas_figures(captions_: dict, out_dir) -> dict:
    """``{"folds": ..., "discrete": ...}``: the sentence and float of each atlas figure, for
    the atlas section (empty strings when a figure was not drawn)."""
    out = {}
    for key, stem, sentence in (
            ("folds", "atlas_folds", "[[fig:atlas_folds]] draws the fold set in both planes."),
            ("discrete", "atlas_discrete", "[[fig:atlas_discrete]] draws the two boundaries and "
                                           "their codimension-two points.")):
        if _present(out_dir, [stem], captions_):
            out[key] = (caption_tex(sentence), figure_float(stem, captions_[stem], out_dir))
        else:
            out[key] = ("", "")
    return out


def deepnet_section(nums: dict, captions_: dict, out_dir) -> tuple[str, str]:
    """The neural-policy experiment as a section of ``equations.tex`` (title, body); without
    its numbers (the optional deep-learning dependency not installed) the section says so and
    includes no figure."""
    title = "The refresh threshold on a neural policy"
    dn = nums.get("deepnet")
    if not dn or not _present(out_dir, ["deepnet"], captions_):
        return title, ("This experiment was not run when this document was built: it needs the "
                       "package's optional deep-learning dependency (Appendix~\\ref{app:verification} "
                       "names it), which was not installed. There is no figure for it.")
    per_k = dn.get("per_k") or []
    worst = max((abs(r["multiplier"] - r["predicted"]) / r["se"] for r in per_k if r.get("se")),
                default=None)
    mis = dn.get("misclassified_k") or []
    text = (
        f"A neural policy, an MLP with {dn['parameters']} parameters over {dn['prompts']} prompts, is "
        "trained with sampled GRPO (mean normalization [[cite:liu2025drgrpo]] with the k1 KL in "
        f"the reward, $G = {dn['group_size']}$) by SGD with $\\eta = {_n(dn['learning_rate'], 3)[1:-1]}$ "
        f"and $\\mu = {_n(dn['momentum'], 3)[1:-1]}$. Its stiffness, measured two independent ways, is "
        f"$K = {_n(dn['stiffness_ntk'], 4)[1:-1]}$ (the top eigenvalue of the neural tangent kernel "
        "[[cite:jacot2018ntk]] times the bandit's stiffness) and "
        f"$K = {_n(dn['stiffness_response'], 4)[1:-1]} \\pm {_n(dn['stiffness_response_se'], 2)[1:-1]}$ "
        "(the linear response of the top mode). With it the exact L2 theory predicts stability up "
        f"to $k = {dn['k_max_predicted']}$ and the published rule up to $k = {dn['k_max_published']}$; "
        f"the network is stable up to $k = {dn['k_max_observed']}$ ("
        + ("every tested $k$ classified as predicted" if not mis else
           "misclassified: " + ", ".join(f"$k = {m}$" for m in mis)) + ")"
        + (f", and the largest difference between the measured and the predicted multiplier is "
           f"{_n(worst, 2)} standard errors" if worst is not None else "")
        + ". [[fig:deepnet]] shows the sweep.")
    return title, caption_tex(text) + "\n\n" + figure_float("deepnet", captions_["deepnet"], out_dir)


def log_fit_section(nums: dict, captions_: dict, out_dir) -> tuple[str, str]:
    """The fit of a published training log as a section of ``equations.tex`` (title, body)."""
    title = "A published GRPO training log"
    lf = nums.get("log_fit")
    if not lf or not _present(out_dir, ["log_fit"], captions_):
        return title, "The training log was not found next to the package; there is no figure for it."
    by = (lf.get("forecast") or {}).get("holdout_rmse_by_family") or {}
    rows = "\n".join(
        f"{escape_tex(family_words(name))} & {_n(d['r2'], 4)} & {_n(d['plateau'], 4)} & "
        f"{_n(d['time_to_90_steps'], 3) if d.get('time_to_90_steps') is not None else '--'} & "
        f"{_n(by[name], 2) if name in by else '--'} \\\\"
        for name, d in lf["models"].items())
    if "constant" in by:
        rows += f"\n{escape_tex(family_words('constant'))} & -- & -- & -- & {_n(by['constant'], 2)} \\\\"
    zeta = ((lf["models"].get("oscillator") or {}).get("params") or {}).get("zeta")
    text = (
        "The reward curve of a real run is compared with the shapes of the theory: the relaxation "
        "of an overdamped plateau (a single exponential) and the damped oscillator. Each family is "
        "fitted to the first half of the log and forecasts the second; the family chosen by the "
        f"Akaike information criterion on the first half is the {literal(family_words(lf['best']))}"
        + (f", with the fitted damping ratio $\\zeta = {_n(zeta, 3)[1:-1]}$"
           + (" (overdamped: no oscillation)" if zeta > 1 else "")
           if zeta is not None and lf["best"] == "oscillator" else "")
        + ". The forecast also considers the level carried forward (the mean of the last points "
        "of the first half), a baseline that is not a curve family. [[fig:log_fit]] "
        "shows the fits and the forecast; the table gives each candidate's held-out error.")
    table = ("\\begin{center}\\begin{tabular}{lrrrr}\n"
             "candidate & coefficient of determination & plateau & steps to 90\\,\\% & held-out RMSE \\\\ \\hline\n"
             f"{rows}\n\\end{{tabular}}\\end{{center}}")
    return title, "\n\n".join([caption_tex(text), table,
                               figure_float("log_fit", captions_["log_fit"], out_dir)])
