r"""The parts of ``equations.pdf`` that make it a paper: title, abstract, introduction with the
contributions, the default model, related work, discussion with limitations and conclusion.

Each is prose in the caption convention of :mod:`.captions` (formulas between dollars,
``[[cite:...]]``, ``[[eq:...]]``, ``[[fig:...]]``, ``[[sec:...]]`` placeholders), written from the
report's numbers (:func:`grpo_theory.report.data.key_numbers` and the rest of ``report.json``):
nothing is computed here, and every number quoted is one the report computed.
"""

from __future__ import annotations

from grpo_theory.report.atlas_tex import number
from grpo_theory.report.captions import caption_tex

__all__ = ["TITLE", "abstract", "front_sections", "back_sections", "default_model_text"]

TITLE = ("GRPO on a softmax bandit: exact stability thresholds, fixed points and noise, "
         "checked against simulation and a real training engine")


def _f(x, nd=3) -> str:
    return f"{float(x):.{nd}g}"


def _lab_agreement(lab: dict) -> tuple[int, int, float, float] | None:
    """(settings where the engine's threshold is the exact one, settings scored, smallest and
    largest exact/published ratio there) from the lab summary."""
    if not lab or not lab.get("available"):
        return None
    scored = [r for r in lab.get("sweeps", []) if not r["clip"] and not r["adam"]
              and r["exact"] is not None]
    agree = [r for r in scored if r["observed_range"] and r["observed_range"][1] is not None
             and (r["observed_range"][0] or 0) <= r["exact"] <= r["observed_range"][1]]
    if not agree:
        return None
    ratios = [r["exact"] / r["published"] for r in agree if r["published"]]
    return len(agree), len(scored), min(ratios), max(ratios)


def abstract(nums: dict) -> str:
    """The abstract: the setting and the findings, with the report's numbers."""
    th = nums["thresholds_stale"]
    m = nums["model"]
    lab = _lab_agreement(nums.get("lab") or {})
    at = nums.get("atlas") or {}
    cusp = (at.get("p_ref_plane") or {}).get("cusp")
    dn = nums.get("deepnet")
    text = (
        "We analyse Group Relative Policy Optimization (GRPO) [[cite:shao2024deepseekmath]] on the "
        "smallest model that has its dynamics: a softmax policy over two actions with a verifiable "
        "reward, trained with group-normalized advantages, a KL penalty to a reference policy, "
        "heavy-ball momentum and a sampling policy refreshed every $k$ optimizer steps. We derive "
        "the exact mean-field drift for every normalization, KL estimator and surrogate at finite "
        "group size $G$ (level L1), the exact linearization of the discrete training map over one "
        "refresh window (L2) and a reduced continuous oscillator (L3). "
        "Three published claims are tested. The first-order refresh rule $\\eta K k < 1 - \\mu$ of "
        "[[cite:predictable_grpo]] is conservative wherever all the stiffness acts through the "
        "sampling policy: the exact threshold is larger by a factor of exactly $2$ at $\\mu = 0$ "
        "and as $k \\to \\infty$, and by up to $2(1 + \\mu)/(1 - \\mu)$ at $k = 1$ "
        f"(at the momentum ${m['momentum']:g}$ and $k = {m['refresh_interval']}$ of our default "
        f"model, ${_f(th['eta_K_exact'])}$ against ${_f(th['eta_K_published'])}$); where the part "
        "of the stiffness acting on the current iterate is negative the rule is unsafe. "
        "The fixed-point recurrence of Mroueh [[cite:mroueh2025]] is reproduced exactly by std "
        "normalization with the analytic KL at $G \\to \\infty$ without the normalization "
        "constant; a finite group and the placement of that constant move its fixed point. The law that the stationary variance falls like $1/G$ "
        "holds only where $G \\min(p^{*}, q^{*}) \\gg 1$; at a high plateau, where failures are "
        "rare, the per-step variance is independent of $G$. "
        "New are the exact flip and complex-pair thresholds of the window map with its 1:2 "
        "resonance, the fold and cusp set of the fixed points (bistable plateaus"
        + (f", a cusp at $p_{{\\mathrm{{ref}}}} = {_f(cusp['p_ref'], 4)}$, "
           f"$\\beta = {_f(cusp['kl_coef'], 4)}$ for $G = {cusp['group_size']}$" if cusp else "")
        + ") and the criticality of the boundaries. "
        + (f"On a real GRPO engine (a small transformer restricted to two answers) the observed "
           f"refresh threshold is the exact one in {lab[0]} of {lab[1]} scored settings, where the "
           f"published rule is conservative by a factor of ${lab[2]:.0f}$ to ${lab[3]:.0f}$ in $k$; "
           if lab else "")
        + (f"on a neural policy the exact theory predicts the largest stable $k$ "
           f"(${dn['k_max_predicted']}$, observed ${dn['k_max_observed']}$, published rule "
           f"${dn['k_max_published']}$). " if dn else "")
        + "Every formula is derived once symbolically and printed from that derivation; each "
        "result states its assumptions and how it was checked.")
    return "\\begin{abstract}\\noindent " + caption_tex(text) + "\\end{abstract}"


def default_model_text(nums: dict) -> str:
    """The default model of the figures and numbers, defined with its fresh fraction."""
    m, fp, st = nums["model"], nums["fixed_point"], nums["stability"]
    return "\\paragraph{The default model.} " + caption_tex(
        "Unless a figure says otherwise, the numbers are for one "
        f"model: reference success probability $p_{{\\mathrm{{ref}}}} = {m['p_ref']:g}$, group size "
        f"$G = {m['group_size']}$ with std normalization ($\\epsilon = {number(m['adv_eps'], 2)[1:-1]}$), the k3 "
        f"KL estimator with $\\beta = {m['kl_coef']:g}$, learning rate $\\eta = {m['learning_rate']:g}$, "
        f"heavy-ball momentum $\\mu = {m['momentum']:g}$ and refresh interval $k = {m['refresh_interval']}$, "
        "one prompt per step. Its stable fixed point is "
        f"$p^{{*}} = {_f(fp['p'], 4)}$ with stiffness $K = {_f(fp['stiffness'], 4)}$ "
        f"($a = \\eta K = {_f(nums['eta_K'], 3)}$). The stiffness splits into the part acting "
        "through the sampling policy and the part acting on the current iterate (the KL force of "
        "the k3 estimator): its fresh fraction is "
        f"$K_{{f}}/K = {_f(fp['fresh_fraction'], 3)}$, so the part through the sampling policy is "
        f"slightly negative ({_f(fp['stiffness_stale'], 2)}). At this split the exact map is "
        + ("stable at every refresh interval" if st.get("stable_for_every_refresh_interval")
           else f"stable up to $k = {st.get('max_stable_refresh_interval')}$")
        + f" (spectral radius ${_f(st['spectral_radius'], 3)}$ at $k = {m['refresh_interval']}$, "
        f"{st['discrete_regime']}). The phase diagrams [[fig:phase_diagram_k]] and "
        "[[fig:phase_diagram_mu]] are drawn for the opposite split, all of the stiffness acting "
        "through the sampling policy ($K_{f} = 0$), where the refresh interval matters most; the "
        "default model is not a point of them.")


def front_sections(nums: dict) -> list[tuple[str, str]]:
    """The sections before the derivations: introduction (with the contributions) and related
    work, as ``(title, LaTeX)`` pairs."""
    lab = _lab_agreement(nums.get("lab") or {})
    intro = caption_tex(
        "GRPO [[cite:shao2024deepseekmath]] trains a language model on verifiable rewards by "
        "normalizing the rewards of a group of $G$ samples of one prompt, with a KL penalty to a "
        "reference policy; in practice the samples come from a policy that is refreshed only every "
        "$k$ optimizer steps, and the optimizer carries momentum. Whether such training settles, "
        "oscillates or diverges, and where its plateau lies, has been described by two closed-form "
        "accounts: a fixed-point recurrence of the success probability [[cite:mroueh2025]] and a "
        "damped-oscillator model with a first-order stability rule for the refresh interval "
        "[[cite:predictable_grpo]]. This paper derives the dynamics of the smallest model that has "
        "them, a two-action softmax bandit, without those approximations, and tests the results "
        "against simulation and a real GRPO engine.") + "\n\n" + "\\paragraph{Contributions.} " + caption_tex(
        "What reproduces earlier work: the fixed points of Mroueh's "
        "recurrence, recovered exactly as one variant of the drift "
        "([[eq:fixed_points.mroueh_agreement]]), and the damped-oscillator form of "
        "[[cite:predictable_grpo]] as the continuous limit L3. What corrects it: the published "
        "refresh rule is replaced by the exact flip and complex-pair thresholds "
        "([[eq:discrete.refresh_flip_threshold]], [[eq:discrete.refresh_complex_threshold]]); it is "
        "conservative by a factor between $2$ and $2(1+\\mu)/(1-\\mu)$ when all of the stiffness "
        "acts through the sampling policy and unsafe when the part acting on the current iterate "
        "is negative; the law that the group size acts as an inverse temperature holds only where "
        "$G \\min(p^{*}, q^{*}) \\gg 1$. What is new: the exact drift of every variant at finite $G$; "
        "the discrete map's 1:2 resonance and the criticality of its boundaries; the fold and cusp "
        "set of the fixed points (bistable plateaus); the noise, reuse and Adam reductions; and "
        + ("a test on a real engine, where the observed refresh threshold is the exact one in "
           f"{lab[0]} of {lab[1]} scored settings." if lab else "a test on a real engine.")) \
        + "\n\n" + "\\paragraph{Organization.} " + caption_tex(
        "The sections after the related work derive the results level by level, each "
        "with its assumptions and the checks that verified it; the sections after them compare "
        "with a neural policy, a published training log and a real engine; the discussion states "
        "the limitations. The notation is in Appendix A; Appendix B derives the central results step "
        "by step. One convention for uncertainties holds "
        "in every figure and table: an error bar is $\\pm 2$ standard errors of the mean; a shaded "
        "band around simulated runs is $\\pm 2$ standard deviations of the runs (their spread, "
        "not an error); a forecast's band is its 90 % interval; each caption says which it shows.") + "\n\n" + default_model_text(nums)
    related = caption_tex(
        "The refresh interval makes the gradient stale: GRPO's sampling policy lags the iterate "
        "by up to $k - 1$ steps. Asynchronous SGD with stale gradients was shown to behave like "
        "added momentum [[cite:mitliagkas2016asynchrony]]; here the lag and the optimizer's "
        "momentum enter one exact periodic map, whose monodromy gives the thresholds. Training "
        "near the largest stable step, where the top curvature sits at the stability limit, is "
        "the edge of stability of full-batch gradient descent [[cite:cohen2021eos]]; our "
        "thresholds are that limit for this map, with the flip (a period-two oscillation) as its "
        "first instability. Continuous stochastic models of SGD, stochastic modified equations "
        "[[cite:li2017sme]] and the Ornstein--Uhlenbeck picture of SGD near a minimum "
        "[[cite:mandt2017sgd]], underlie our level L3 and its stationary variance; the discrete "
        "map L2 shows where the continuous model misses an instability. Among analyses of GRPO, "
        "Mroueh [[cite:mroueh2025]] derives the success-amplification recurrence, Liu et al. "
        "[[cite:liu2025drgrpo]] the bias of std normalization (our mean-normalization variant), "
        "DAPO [[cite:yu2025dapo]] the asymmetric clip, and Cui et al. [[cite:cui2025entropy]] the "
        "collapse of the policy's entropy; [[cite:predictable_grpo]] models the reward curve as a "
        "damped oscillator and gives the first-order refresh rule tested here.")
    return [("Introduction", intro), ("Related work", related)]


def back_sections(nums: dict) -> list[tuple[str, str]]:
    """Discussion with limitations, and conclusion."""
    th = nums["thresholds_stale"]
    discussion = caption_tex(
        "The exact map changes the practical advice of the first-order rule in two directions. "
        "When the stiffness acts through the sampling policy, longer refresh windows are safe than "
        "the rule allows, by a factor of at least two; when part of it acts on the current iterate "
        "with the opposite sign, the rule can allow an unstable window. Both follow from the "
        "monodromy of one window, which the continuous model cannot represent: it misses the flip, "
        "the first instability at large momentum.") + "\n\n" + "\\paragraph{Limitations.} " + caption_tex(
        "The model is a bandit with two actions and one prompt type; a "
        "language model enters only through its stiffness along one mode, measured on the network "
        "(the tangent kernel [[cite:jacot2018ntk]] or the response to a kick), so the thresholds "
        "apply near a plateau where that mode is linear and separated from the next. The "
        "mean-field levels neglect the batch noise except where it is modelled explicitly "
        "(the stationary variance, the collapse time); the simulated stationary variance exceeds the "
        "linear theory by more than its sampling error in one regime of [[fig:fluctuation_law]], "
        "through the curvature of the drift over the spread, "
        "a correction of relative order $\\operatorname{Var} z$ that the linear levels neglect. "
        "The Adam reduction holds the second moment at its plateau value, and the engine "
        "contradicts it where the kicked runs enlarge that moment. The real-engine tests use a "
        "small transformer on single-token arithmetic restricted to two answers, with few seeds; "
        "the published-log comparison fits curve shapes, not the bandit's parameters. A symbolic "
        "proof covers the statement as written; checks at listed values or points cover only "
        "those.")
    conclusion = caption_tex(
        "GRPO's training map with momentum and a lagged sampling policy has exact stability "
        "thresholds in closed form. At the default model's momentum and refresh interval the "
        f"exact threshold is $\\eta K = {_f(th['eta_K_exact'])}$ where the first-order rule gives "
        f"${_f(th['eta_K_published'])}$, and with all of the stiffness acting through the sampling "
        "policy the largest stable refresh interval at its step is "
        f"${th['max_refresh_interval_exact']}$ against ${th['max_refresh_interval_published']}$. The "
        "fixed points fold into bistable plateaus at large KL coefficients, the $1/G$ noise law "
        "needs $G \\min(p^{*}, q^{*}) \\gg 1$, and on a real engine the exact thresholds are the "
        "ones observed. The formulas are available as separate files to include in other work.")
    return [("Discussion", discussion), ("Conclusion", conclusion)]


def crosscheck_section(cc: dict | None) -> tuple[str, str]:
    """The simulation cross-checks as a section: one row per check with the quantity, its
    setting, the prediction, the measurement, the acceptance band and the verdict."""
    from grpo_theory.prose import escape_tex, to_tex
    from grpo_theory.report.atlas_tex import number
    from grpo_theory.report.markdown import CHECK_TITLES

    title = "The theory against simulation"
    if not cc or not cc.get("checks"):
        return title, "The simulation cross-checks were not run for this build."

    def num(x):
        if x is None:
            return "--"
        if isinstance(x, (list, tuple)):
            return "$[" + ", ".join(number(v, 4)[1:-1] for v in x) + "]$"
        return number(x, 4)

    rows = []
    for c in cc["checks"]:
        h = c.get("headline") or {}
        name = CHECK_TITLES.get(c["name"], c["name"].replace("_", " "))
        units = h.get("units") or ""
        quantity = to_tex(h.get("quantity", "its statistic")) + (
            f" ({escape_tex(units)})" if units and units != "dimensionless" else "")
        rows.append(" & ".join([escape_tex(name), quantity, to_tex(h.get("setting", "")),
                                num(h.get("predicted", c.get("predicted"))),
                                num(h.get("measured", c.get("measured"))),
                                num(h.get("band")) + (" " + to_tex(h["band_kind"]) if h.get("band_kind") else ""),
                                "pass" if c["verdict"] == "pass" else "\\textbf{fail}"]) + " \\\\")
    n_pass = sum(c["verdict"] == "pass" for c in cc["checks"])
    text = caption_tex(
        f"Each prediction of the theory that a simulation of sampled GRPO can test is compared "
        f"with one; {n_pass} of the {len(cc['checks'])} checks pass. A check passes when the "
        "compared number lies in its acceptance band, whose construction the last column names "
        "(for a measured mean, the prediction plus or minus four standard errors and the known "
        "bias of the closure); the band is a test's tolerance, not an error bar. The simulation "
        "draws every group from the exact softmax bandit, with the update rule of the trainer.")
    table = ("{\\footnotesize\\begin{longtable}{@{}>{\\raggedright\\arraybackslash}p{2.1cm}"
             ">{\\raggedright\\arraybackslash}p{3.2cm}>{\\raggedright\\arraybackslash}p{3.6cm}"
             "rr>{\\raggedright\\arraybackslash}p{2.6cm}l@{}}\n"
             "check & quantity & setting & predicted & measured & band & verdict \\\\ \\hline\\endhead\n"
             + "\n".join(rows) + "\n\\end{longtable}}")
    return title, text + "\n\n" + table


def collapse_text(nums: dict) -> str:
    """The collapse model written out for GRPO (drift, diffusion, basin) with the numbers of the
    simulation check (the cross-check ``collapse``), for the collapse section."""
    cc = nums.get("crosschecks") or {}
    c = next((c for c in cc.get("checks", []) if c["name"] == "collapse"), None)
    if c is None or not (c.get("details") or {}).get("tau"):
        return ""
    from grpo_theory.crosscheck.collapse import COLLAPSE_MODEL as cm
    d = c["details"]
    G = cm.group_size
    se = (c["predicted"] * (1 - c["predicted"]) / d["runs"]) ** 0.5
    text = (
        "For GRPO the logit walks with the drift $b = \\eta F/(1 - \\mu)$, the mean-field drift of "
        "Section 3 with the gain of the momentum, and the diffusion "
        "$D = \\tfrac{1}{2} \\left(\\eta/(1 - \\mu)\\right)^{2} \\sigma^{2}$, with $\\sigma^{2}$ the exact "
        "per-step variance of the update at finite $G$, multiplied by the ratio of the exact "
        "stationary variance of the window map to that of on-policy SGD when the sampling policy "
        "lags or a batch is reused. A group is degenerate when all its samples agree; the plateau "
        f"ends when $p$ leaves $[{d['degenerate_level']:g}, {1 - d['degenerate_level']:g}]$ "
        f"(the level $1/(10 G)$ at $G = {G}$), so the basin is "
        f"$x_{{\\pm}} = \\pm \\ln\\left(10 G - 1\\right) = \\pm {__import__('math').log(10 * G - 1):.3f}$ "
        "in the logit. At the setting of the simulation check "
        f"({cm.normalization} normalization, {'analytic' if cm.kl == 'exact' else cm.kl} KL with "
        f"$\\beta = {cm.kl_coef:g}$, $G = {cm.group_size}$, SGD with $\\eta = {cm.learning_rate:g}$, "
        f"$k = {cm.refresh_interval}$, $p_{{\\mathrm{{ref}}}} = {cm.p_ref:g}$) the "
        f"barrier of the potential $\\phi$ is {d['basin_depth']:.2f}, the mean first passage "
        f"$\\tau_{{\\mathrm{{exit}}}} = {d['tau']:.0f}$ steps, and the probability of a collapse by "
        f"step {d['steps']}, $1 - e^{{-{d['steps']}/\\tau_{{\\mathrm{{exit}}}}}}$, is "
        f"${c['predicted']:.3f}$; {d['runs']} simulated runs give ${c['measured']:.3f}$ "
        f"($\\pm {2 * se:.3f}$, two standard errors).")
    return "\\paragraph{The model for GRPO, against simulation.} " + caption_tex(text)
