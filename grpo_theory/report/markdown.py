"""``report.md``: the report's readable summary, written from its numbers (nothing is computed
here), to the standard of ``equations.pdf``: formulas in the notation of the notation table,
numbers with a power of ten instead of e-notation, works cited by number with the list at the
end, the results named by their equation numbers in ``equations.pdf`` (never by their record
names), no code words in the prose."""

from __future__ import annotations

import math
import re

import numpy as np

from grpo_theory.crosscheck.base import format_headline_numbers
from grpo_theory.prose import math_to_plain, to_plain_or_as_is
from grpo_theory.render.notation import notation, notation_rows
from grpo_theory.report.captions import FIGURE_ORDER, caption_markdown, captions
from grpo_theory.report.data import DEEPNET_INSTALL, family_words
from grpo_theory.report.lab import lab_markdown
from grpo_theory.theory.bibliography import REFERENCES, format_reference

__all__ = ["report_markdown", "cc_markdown_table", "number_text", "CHECK_TITLES"]

_SUPER = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def number_text(x, nd=4) -> str:
    """A number for the report: ``nd`` significant digits; a small or large one as
    ``8.4 × 10⁻⁵``; ∞, or — for none; a yes/no for a truth value."""
    if x is None or isinstance(x, (dict, list, str)):
        return "—" if x is None else str(x)
    if isinstance(x, (bool, np.bool_)):
        return "yes" if x else "no"
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    x = float(x)
    if not math.isfinite(x):
        return "∞" if x > 0 else "—"
    if x != 0 and (abs(x) < 1e-3 or abs(x) >= 10 ** nd):
        m, e = f"{x:.{max(nd - 2, 1)}e}".split("e")
        return f"{m} × 10{str(int(e)).translate(_SUPER)}"
    return f"{x:.{nd}g}"


_E_NUMBER = re.compile(r"(?<![\w.])(-?\d+(?:\.\d+)?)[eE]([-+]?\d+)\b")


def _powers(text: str) -> str:
    """A number in e-notation written with a power of ten: ``4.1e-5`` -> ``4.1 × 10⁻⁵`` (the
    cross-checks' texts serve a terminal too, where e-notation is the custom)."""
    return _E_NUMBER.sub(lambda m: f"{m.group(1)} × 10{str(int(m.group(2))).translate(_SUPER)}", text)


def _plain(text) -> str:
    """Prose (formulas between dollars) as Unicode text: tables and captions of report.md
    carry no LaTeX (a table cell cannot hold every formula); numbers with powers of ten."""
    return _powers(to_plain_or_as_is(text))


#: the cross-checks by title (their names are keys of the package)
CHECK_TITLES = {
    "mean_trajectory": "mean trajectory", "group_temperature": "group size as temperature",
    "refresh_threshold": "refresh threshold", "damping_transition": "onset of oscillation",
    "plateaus": "plateaus", "adam": "Adam: stationary variance",
    "adam_critical_damping": "Adam: critical damping", "reuse_fresh": "variance, fresh batches",
    "reuse_batch": "variance, one batch per window", "collapse": "collapse probability",
    "collapse_reuse": "collapse probability, batch reuse",
    "k1_refresh_threshold": "refresh threshold, KL in the reward",
}

#: the settings of the checks' detail rows in words
_VARIANT_WORDS = {"std": "std normalization", "mean": "mean normalization", "exact": "analytic KL",
                  "k3": "k3 KL", "k1_reward": "k1 KL in the reward", "none": "no KL"}

#: Physical columns of each cross-check's rows shown in report.md (prediction, measurement, band).
_PHYSICAL_COLUMNS = {
    "mean_trajectory": ["setting", "eta_K", "max_abs_err_L1", "max_abs_bias_closure", "max_ratio_to_band",
                        "rms_err_L3"],
    "group_temperature": ["normalization", "group_size", "var_pred", "var_meas", "var_se", "ratio_to_band"],
    "refresh_threshold": ["setting", "refresh_interval", "radius_L2", "radius_fit", "radius_fit_se",
                          "status", "agreement_ratio", "consistent"],
    "damping_transition": ["factor", "learning_rate", "overshoot_pred_L2", "overshoot_sim",
                           "overshoot_band", "consistent"],
    "plateaus": ["variant", "group_size", "p_pred", "p_meas", "sem", "ratio_to_band", "informational"],
    "k1_refresh_threshold": ["refresh_interval", "median_deviation_T", "stable"],
}
#: the headers of those columns
_COLUMN_HEADERS = {
    "setting": "setting", "eta_K": "ηK", "max_abs_err_L1": "largest |mean z − L1| (logits)",
    "max_abs_bias_closure": "largest closure bias (logits)", "max_ratio_to_band": "largest ratio to band",
    "rms_err_L3": "L3 RMS error (logits)", "normalization": "normalization", "group_size": "G",
    "var_pred": "Var z (L2)", "var_meas": "Var z (simulation)", "var_se": "SE",
    "ratio_to_band": "ratio to band", "refresh_interval": "k",
    "radius_L2": "spectral radius (L2)", "radius_fit": "spectral radius (fitted)",
    "radius_fit_se": "SE of the fit", "status": "runs", "agreement_ratio": "ratio to band",
    "consistent": "consistent with L2", "factor": "η/η_c", "learning_rate": "η",
    "overshoot_pred_L2": "overshoot (L2, logits)", "overshoot_sim": "overshoot (simulation)",
    "overshoot_band": "detection threshold (4 SE)", "variant": "variant", "p_pred": "p* (prediction)",
    "p_meas": "mean p (simulation)", "sem": "SEM",
    "informational": "in the verdict",
    "median_deviation_T": "median |z − z*| at the last step", "stable": "stable",
}


def _cell(key, row):
    v = row.get(key)
    if key == "setting" and "setting_text" in row:
        return _plain(row["setting_text"])
    if key == "variant" and isinstance(v, str):
        return ", ".join(_VARIANT_WORDS.get(p, p) for p in v.split("+"))
    if key == "normalization" and isinstance(v, str):
        return _VARIANT_WORDS.get(v, v)
    if key == "informational":
        return "no: information only (Mroueh's G → ∞ prediction)" if v else "yes"
    if isinstance(v, (list, tuple)):
        return ", ".join(number_text(x) for x in v)
    return number_text(v)


def cc_markdown_table(checks) -> str:
    """The cross-check table: check | quantity | setting | predicted | measured | band and what
    it tests | verdict, in the physical units of each check's headline, as Unicode text."""
    cols = ("check", "quantity", "setting", "predicted", "measured", "band (what it tests)",
            "verdict")
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for c in checks:
        h = c.headline or {}
        if h:
            pred, meas, band = (_powers(x) for x in format_headline_numbers(h))
            units = h.get("units") or ""
            quantity = _plain(h.get("quantity", "")) + (f" [{units}]" if units and units != "dimensionless" else "")
            cells = [CHECK_TITLES.get(c.name, c.name.replace("_", " ")), quantity,
                     _plain(h.get("setting", "")), pred, meas,
                     f"{band} ({_plain(h.get('band_kind', ''))})"]
        else:
            b = c.band if isinstance(c.band, dict) else {}
            cells = [CHECK_TITLES.get(c.name, c.name.replace("_", " ")), "its statistic", "—",
                     number_text(c.predicted), number_text(c.measured),
                     f"± {number_text(b.get('tolerance'))} around the prediction"]
        cells.append(("pass" if c.verdict == "pass" else "FAIL") +
                     (f": {_plain(c.reason)}" if c.reason else ""))
        lines.append("| " + " | ".join(str(x).replace("\n", " ").replace("|", "∣") for x in cells) + " |")
    return "\n".join(lines)


def _img(name, number, caption):
    return (f"![Figure {number}]({name}.png)\n\n*Figure {number} (of equations.pdf).* {caption} "
            f"([PDF]({name}.pdf))\n")


class _Cite:
    """Numbered citations in order of first use; :meth:`list` writes the reference list."""

    def __init__(self, keys=()):
        self.keys = [k for k in keys if k in REFERENCES]   # numbered as given (the PDF's order)

    def __call__(self, *keys) -> str:
        nums = []
        for k in keys:
            if k not in REFERENCES:
                continue
            if k not in self.keys:
                self.keys.append(k)
            nums.append(str(self.keys.index(k) + 1))
        return "[" + ", ".join(nums) + "]" if nums else ""

    def list(self) -> list[str]:
        return [f"{i + 1}. {format_reference(k, 'md')}" for i, k in enumerate(self.keys)]


#: the model's fields in the report: (symbol key of the notation table or None, meaning)
_FIELD_WORDS = {
    "p_ref": ("p_ref", "reference (and initial) success probability"),
    "group_size": ("G", "group size"),
    "normalization": (None, "advantage normalization"),
    "adv_eps": ("epsilon", "added to the group standard deviation"),
    "kl": (None, "KL penalty"),
    "kl_coef": ("beta", "KL coefficient"),
    "surrogate": (None, "surrogate (stale: no importance ratio)"),
    "clip_low": (None, "lower clip range of the ratio"),
    "clip_high": (None, "upper clip range of the ratio"),
    "actions": ("K_a", "actions of the softmax bandit"),
    "correct": ("c", "correct actions"),
    "prompts": ("B", "prompts (groups) per step"),
    "optimizer": (None, "optimizer"),
    "learning_rate": ("eta", "learning rate"),
    "momentum": ("mu", "heavy-ball momentum"),
    "adam_beta1": (None, "Adam: first-moment decay rate (its momentum)"),
    "adam_beta2": (None, "Adam: second-moment decay rate"),
    "adam_eps": (None, "Adam: constant added to the denominator"),
    "lag_model": (None, "how the sampling policy lags"),
    "refresh_interval": ("k", "refresh interval: steps per sampling policy"),
    "delay": ("d", "constant delay (delay lag model only)"),
    "reuse": (None, "batches in a window"),
    "window_batches": (None, "batches drawn per window (batch reuse only)"),
}
_VALUE_WORDS = {
    ("normalization", "std"): "std (GRPO)", ("normalization", "mean"): "mean (Dr. GRPO)",
    ("kl", "k3"): "k3 estimator", ("kl", "exact"): "analytic", ("kl", "none"): "none",
    ("kl", "k1_reward"): "k1 estimator in the reward", ("surrogate", "stale"): "stale",
    ("surrogate", "ratio"): "importance ratio", ("optimizer", "sgd"): "SGD with heavy-ball momentum",
    ("optimizer", "adam"): "Adam", ("lag_model", "refresh"): "refreshed every k steps",
    ("lag_model", "delay"): "constant delay", ("reuse", "fresh"): "a fresh batch every step",
    ("reuse", "batch"): "batches reused across the window",
}


def report_markdown(model: dict, nums, cc, notes, full, rr) -> str:
    """``report.md``: the model, its key numbers and thresholds, the figures with their tables,
    the real run, the atlas, the deep network, the cross-checks and what is verified (``model``
    is the model's ``to_dict()``, ``nums`` the numbers of ``report.json``, ``cc`` the
    cross-check report or ``None``, ``rr`` the :class:`~.build.ReportResult`)."""
    # the reference numbers of equations.pdf (its bibliography in the order of its \bibitem)
    tex = rr.out_dir / "equations.tex"
    cite = _Cite(re.findall(r"\\bibitem\{([^}]*)\}", tex.read_text(encoding="utf-8"))
                 if tex.exists() else ())
    eq = nums.get("equation_numbers") or {}

    def ref(name):
        n = eq.get(name)
        return f"equation {n} of equations.pdf" if n else "equations.pdf"

    # the captions of equations.pdf's figures, numbered as there (figures not drawn are skipped)
    caps = captions(nums, model)
    drawn = [s for s in FIGURE_ORDER if s in caps and (rr.out_dir / f"{s}.png").exists()]
    fig_numbers = {s: i + 1 for i, s in enumerate(drawn)}

    def img(stem):
        if stem not in fig_numbers:
            return ""
        return _img(stem, fig_numbers[stem], caption_markdown(caps[stem], cite, eq, fig_numbers))

    KS = notation("kappa_s")
    fp, st, th = nums["fixed_point"], nums["stability"], nums["thresholds_stale"]
    osc = nums["oscillator"]
    L = []
    a = L.append
    a("# GRPO training dynamics — report\n")
    a(f"Generated by grpo-theory in {rr.seconds:.0f} s ({'large' if full else 'default'} simulation "
      "ensembles, random seed 0). Every number below is computed by the package; every equation of "
      "equations.pdf is printed from the expression the package computes with. The algorithm is GRPO "
      f"{cite('shao2024deepseekmath')}; the closed-form model it is compared with is "
      f"{cite('predictable_grpo')} and the success-amplification recurrence {cite('mroueh2025')}.\n")
    a("## The model\n")
    a("GRPO on a softmax bandit (level L0). The policy is summarized by its success probability p, or "
      "its logit z = log(p/q) with q = 1 − p. Each step samples a group of G actions from the sampling "
      "policy, normalizes the binary rewards within the group, and takes a policy-gradient step with a "
      "KL penalty towards the reference policy. The levels built on it:\n")
    a("- **L1** exact mean-field drift F(z, z_old): the expected update, an exact binomial sum at finite G;\n"
      "- **L2** its linearization at the fixed point z*: a periodic linear map (heavy-ball momentum μ "
      f"{cite('polyak1964')}, refresh interval k) whose monodromy over one window gives exact stability "
      f"(Jury's conditions {cite('jury1964')});\n"
      f"- **L3** the continuous damped oscillator m·ẍ + γ·ẋ + {KS}·x = η·ξ(t), ξ the gradient noise of "
      "variance σ²; its first-order-in-lag stability condition is the published threshold ηK·k < 1 − μ.\n")
    a("### Notation (one symbol, one meaning; the same in equations.pdf and the figures)\n")
    a("| symbol | meaning |\n|---|---|")
    for tex, meaning in notation_rows():
        a(f"| {math_to_plain(tex)} | {_plain(meaning)} |")
    a("")
    a("### The model of this report (the package's default)\n")
    a("| quantity | symbol | value |\n|---|---|---|")
    for k_, v in model.items():
        key, words = _FIELD_WORDS.get(k_, (None, k_.replace("_", " ")))
        sym = notation(key) if key else ""
        val = _VALUE_WORDS.get((k_, v), number_text(v) if not isinstance(v, str) else v)
        a(f"| {words} | {sym} | {val} |")
    a("")
    a("## Key numbers\n")
    a("| quantity | value |\n|---|---|")
    rows = [
        ("stable fixed point p*", number_text(fp["p"], 6)), ("fixed-point logit z*", number_text(fp["z"], 6)),
        ("amplification p* − p_ref", number_text(fp["p"] - model["p_ref"], 4)),
        ("stiffness K = −dF/dz at z*", number_text(fp["stiffness"], 6)),
        ("  acting on the current iterate, K_f", number_text(fp["stiffness_fresh"], 4)),
        ("  acting through the sampling policy, K_s", number_text(fp["stiffness_stale"], 4)),
        ("step stiffness a = ηK", number_text(nums["eta_K"], 5)),
        (f"L3 mass m, damping γ, spring constant {KS}",
         f"{number_text(osc['mass'])}, {number_text(osc['damping'])}, {number_text(osc['spring'])}"),
        ("damping ratio ζ (L3)", number_text(osc["damping_ratio"])),
        ("regime (L3)", osc["regime"]),
        ("regime (exact L2)", st["discrete_regime"]),
        ("spectral radius per refresh window (L2)", number_text(st["spectral_radius"], 5)),
        (f"time scale τ = γ/{KS} (steps)", number_text(osc["time_scale"])),
    ]
    for q, v in rows:
        a(f"| {q} | {v} |")
    a("")
    a(f"The stiffness splits into a part acting on the current iterate (K_f/K = "
      f"{number_text(fp['fresh_fraction'])}) and a part acting through the lagged sampling policy. "
      "Only the second is delayed by the off-policy lag. For std normalization with the k3 estimator "
      "K_f/K is slightly above 1 (the stale part is slightly destabilizing), so in this model the "
      "lag barely changes the damping; the L2 and L3 numbers above use the split as it is.\n")
    a("### Thresholds: exact (L2) against published (first-order continuous)\n")
    a(f"These use the stale surrogate (all stiffness through the sampling policy: the setting of the "
      f"published threshold) at μ = {model['momentum']}, k = {model['refresh_interval']}. The relative "
      "error is published ÷ exact − 1: negative where the published rule is more cautious than the "
      "exact threshold.\n")
    a("| threshold | exact L2 | published | relative error |\n|---|---|---|---|")
    a(f"| largest ηK | {number_text(th['eta_K_exact'], 5)} ({th['binding']}) | {number_text(th['eta_K_published'], 5)} | "
      f"{number_text(100 * th['rel_error_published'], 3)} % |")
    a(f"| largest learning rate η (at this K) | {number_text(th['max_learning_rate_exact'], 5)} | "
      f"{number_text(th['max_learning_rate_published'], 5)} | |")
    a(f"| largest refresh interval k (at this η, K) | {number_text(th['max_refresh_interval_exact'])} | "
      f"{number_text(th['max_refresh_interval_published'])} | |")
    a(f"| ηK at the discrete critical damping | {number_text(th['eta_K_critical_damping_exact'], 5)} | | |")
    a("")
    a("Relative error of the published threshold against the exact one over momentum and refresh "
      "interval; the binding boundary is the exact one that is crossed first: flip (a real "
      "eigenvalue at −1) or complex pair (a complex pair on the unit circle):\n")
    a("| μ | k | exact ηK | binding | published ηK | relative error |\n|---|---|---|---|---|---|")
    for r in nums["threshold_errors"]:
        a(f"| {r['momentum']} | {r['refresh_interval']} | {number_text(r['eta_K_exact'], 5)} | "
          f"{'complex pair' if r['binding'] == 'complex' else r['binding']} | "
          f"{number_text(r['eta_K_published'], 5)} | {number_text(100 * r['rel_error_published'], 3)} % |")
    a("")
    a("## Figures\n")
    a(img("bifurcation"))
    if nums["bifurcations"]:
        a("Saddle-node bifurcations of the fixed points:\n")
        a("| normalization | KL | G | β | p |\n|---|---|---|---|---|")
        for b in nums["bifurcations"]:
            a(f"| {_VARIANT_WORDS.get(b['normalization'], b['normalization'])} | "
              f"{_VARIANT_WORDS.get(b['kl'], b['kl'])} | {b['group_size'] or '∞'} | "
              f"{number_text(b['kl_coef'])} | {number_text(b['p'])} |")
        a("")
    a(f"Comparison with Mroueh's fixed point at β = {nums['mroueh_kl_coef']}, p_ref = {model['p_ref']}, "
      "ε = 0. Only std normalization with the analytic KL at G → ∞ reproduces it "
      f"({ref('fixed_points.mroueh_agreement')}):\n")
    if nums["mroueh"]:
        a("| variant | G | p* (here) | p* (Mroueh) | difference |\n|---|---|---|---|---|")
        for r in nums["mroueh"]:
            a(f"| {_cell('variant', r)} | {r['group_size'] or '∞'} | {number_text(r['p_star'], 6)} | "
              f"{number_text(r['mroueh_p_star'], 6)} | {number_text(r['difference'], 4)} |")
        a("")
    a(img("phase_diagram_k"))
    a(img("phase_diagram_mu"))
    a(img("trajectories"))
    a("| regime | η | μ | ηK | L2 regime | spectral radius | L3 regime | ζ |\n|---|---|---|---|---|---|---|---|")
    for r in nums["trajectories"]:
        a(f"| {r['regime']} | {number_text(r['learning_rate'])} | {r['momentum']} | {number_text(r['eta_K'])} | "
          f"{r['l2_regime']} | {number_text(r['spectral_radius'])} | {r['l3_regime']} | {number_text(r['damping_ratio'])} |")
    a("")
    fl_rows = nums["fluctuation_law"]
    a(img("fluctuation_law"))
    a("| regime | G | p* | G·min(p*, q*) | K | σ² (per step) | Var z simulated | ± SE | Var z exact L2 | Var z L3 |\n"
      "|---|---|---|---|---|---|---|---|---|---|")
    for r in fl_rows:
        a(f"| {'law holds' if r['regime'] == 'holds' else 'the model'} | {r['group_size']} | "
          f"{number_text(r['p_star'])} | {number_text(r['g_min_pq'], 3)} | {number_text(r['stiffness'])} | "
          f"{number_text(r['noise_variance'])} | {number_text(r['var_z_sim'])} | {number_text(r['var_z_sim_se'], 2)} | "
          f"{number_text(r['var_z_theory'])} | {number_text(r['var_z_continuous'])} |")
    a("")
    at = nums.get("atlas")
    if at:
        c = at["p_ref_plane"]["cusp"]
        g = at["group_size_cusp"]
        a("## Two-parameter bifurcation atlas\n")
        a(img("atlas_folds"))
        a(img("atlas_discrete"))
        a(f"Cusp at G = {c['group_size']}: p_ref = {number_text(c['p_ref'], 10)}, β = {number_text(c['kl_coef'], 10)}, "
          f"p* = {number_text(c['p'], 8)}. Bistability in G at p_ref = {g['p_ref']}: first at G = {g['first_bistable']} "
          f"(none at G = {g['last_monostable']}).\n")
        cc_ = at["checks"]["cusp"]
        a(f"Independent cusp (the two fold conditions from finite differences of β* alone): "
          f"differences {number_text(cc_['abs_diff']['p_ref'], 2)} in p_ref and "
          f"{number_text(cc_['abs_diff']['kl_coef'], 2)} in β (tolerance 10⁻⁸): "
          f"{'passed' if cc_['passed'] else 'FAILED'}.\n")
        a("| plane | β of the fold | independent β (derivative-free) | difference | roots of F at β ∓ 10⁻⁸ | check |\n"
          "|---|---|---|---|---|---|")
        for f_ in at["checks"]["folds"]:
            rc = f_["root_counts_minus_plus"]
            a(f"| ({'β, p_ref' if f_['plane'] == 'p_ref' else 'β, G'}) | {number_text(f_['kl_coef'], 10)} | "
              f"{number_text(f_['kl_coef_independent'], 10)} | {number_text(f_['abs_diff'], 2)} | "
              f"{rc[0]} below, {rc[1]} above | {'passed' if f_['passed'] else 'FAILED'} |")
        a("")
        for r in at.get("resonances", []):
            where = (f"k = {number_text(r['refresh_interval'], 8)} at μ = 0.8" if "momentum" not in r
                     else f"μ = {number_text(r['momentum'], 8)} at k = 4")
            a(f"- 1:2 resonance at {where}, ηK = {number_text(r['eta_K'], 6)}: eigenvalues "
              + ", ".join(number_text(e[0], 6) for e in r["eigenvalues"])
              + f", ‖M + I‖ = {number_text(r['norm_M_plus_I'], 3)} (not −I: a Jordan block).")
        a("")
        crit = at.get("criticality") or []
        if crit:
            a("Criticality of the boundaries (the nonlinear window map, normal-form coefficient "
              "predicted from the drift's derivatives and measured by iterating the map at the boundary; "
              "l₁ < 0 or c_flip > 0 is supercritical, a soft loss of stability):\n")
            a("| variant | μ | k | boundary | ηK | coefficient | measured | criticality |\n"
              "|---|---|---|---|---|---|---|---|")
            for r in crit:
                a(f"| {_plain(r['setting'])} | {r['momentum']:g} | {r['refresh_interval']} | "
                  f"{'Neimark–Sacker' if r['kind'] == 'neimark-sacker' else 'flip'} | "
                  f"{number_text(r['eta_K'])} | {'l₁' if r['kind'] == 'neimark-sacker' else 'c_flip'} = "
                  f"{number_text(r['coefficient'])} | {number_text(r['measured'])} | {r['criticality']} |")
            a("")
    a("## Deep network: the refresh threshold on a neural policy\n")
    dn = nums.get("deepnet")
    if dn is None:
        a("Not run: PyTorch is not installed. " + DEEPNET_INSTALL + ", then rebuild the report.\n")
    else:
        per_k = dn.get("per_k") or []
        worst = max((abs(r["multiplier"] - r["predicted"]) / r["se"] for r in per_k if r.get("se")),
                    default=None)
        a(f"A {dn['parameters']}-parameter MLP policy over {dn['prompts']} prompts, trained with sampled "
          f"GRPO (Dr. GRPO normalization {cite('liu2025drgrpo')} with the k1 KL in the reward, "
          f"G = {dn['group_size']}) by SGD with η = {number_text(dn['learning_rate'], 3)} and "
          f"μ = {number_text(dn['momentum'])} (ηK = {number_text(dn['eta_K'], 3)}; PyTorch "
          f"{cite('paszke2019pytorch')}). Its stiffness, measured two independent ways, is "
          f"{number_text(dn['stiffness_ntk'])} (the neural tangent kernel {cite('jacot2018ntk')} times the "
          f"bandit theory) and {number_text(dn['stiffness_response'])} ± {number_text(dn['stiffness_response_se'], 2)} "
          f"(linear response of the top mode). With it the exact L2 theory predicts stability up to "
          f"k = {dn['k_max_predicted']}; the published rule says up to k = {dn['k_max_published']}; the network "
          f"is stable up to k = {dn['k_max_observed']} "
          f"({'every tested k classified as predicted' if not dn['misclassified_k'] else 'misclassified k: ' + ', '.join(map(str, dn['misclassified_k']))})"
          + (f"; the largest difference between the measured and the predicted multiplier is "
             f"{number_text(worst, 2)} standard errors" if worst is not None else "") + ".\n")
        a(img("deepnet"))
    a("## The real run\n")
    lf = nums.get("log_fit")
    if lf is None:
        a("*Not available: the test-data log was not found next to the package.*\n")
    else:
        a(f"The training reward of a public GRPO run with verl {cite('sheng2025hybridflow')}: "
          f"deepseek-llm-7b-chat {cite('bi2024deepseekllm')} on GSM8K {cite('cobbe2021gsm8k')}, from the "
          f"published training log {cite('su2025verllog')} ({lf['n']} steps, the logged mean score). "
          "The model families are fitted to the first half and forecast the second.\n")
        a(img("log_fit"))
        by = (lf.get("forecast") or {}).get("holdout_rmse_by_family") or {}
        zeta = ((lf["models"].get("oscillator") or {}).get("params") or {}).get("zeta")
        a(f"Best family by AIC on the fitted part: **{family_words(lf['best'])}**"
          + (f" (fitted damping ratio ζ = {number_text(zeta, 3)})" if zeta is not None
             and lf["best"] == "oscillator" else "")
          + ". The forecast also considers the level carried forward (the mean of the last points "
            "of the fitted part), a baseline that is not a curve family of the fit.\n")
        a("| candidate | R² | plateau | steps to 90 % | held-out RMSE |\n|---|---|---|---|---|")
        for m_, d in lf["models"].items():
            a(f"| {family_words(m_)} | {number_text(d['r2'])} | {number_text(d['plateau'])} | "
              f"{number_text(d['time_to_90_steps'])} | {number_text(by.get(m_), 2)} |")
        if "constant" in by:
            a(f"| {family_words('constant')} | — | — | — | {number_text(by['constant'], 2)} |")
        a("")
    if nums.get("lab") is not None:
        for line in lab_markdown(nums["lab"], cite, number_text):
            a(line)
    a("## Cross-checks: theory against direct simulation\n")
    if cc is None:
        a("*Not available in this build* (the cross-checks could not be run).\n")
    else:
        a(f"{len(cc.checks)} checks, {'all passed' if cc.passed else 'SOME FAILED'}.\n")
        a(cc_markdown_table(cc.checks))
        a("")
        a("Each row is the comparison the verdict rests on: the quantity in its units, the prediction, "
          "the measurement and the band in the same units, with what the band tests; for a check over "
          "several settings, the binding one (on a pass the worst-placed, on a failure the first "
          "failing). The details below give the band's derivation, the check's decisive statistic where "
          "it is a normalized one, and the physical numbers of every setting; a row marked "
          "\"information only\" is shown and not judged:\n")
        for c in cc.checks:
            how = c.band.get("derivation", "") if isinstance(c.band, dict) else ""
            desc = _plain(c.description).rstrip()
            desc += "" if desc.endswith(".") else "."
            a(f"- **{CHECK_TITLES.get(c.name, c.name)}**: {desc}" + (f" *Band:* {_plain(how).rstrip('.')}." if how else ""))
            stat = (c.headline or {}).get("statistic") if isinstance(c.headline, dict) else None
            if stat:
                a(f"  Decisive statistic (normalized, dimensionless): {_plain(stat['name'])} "
                  f"= {number_text(stat['value'], 3)}; pass if at most {number_text(stat['tolerance'])}.")
            rows = c.details.get("rows") if isinstance(c.details, dict) else None
            if rows and isinstance(rows[0], dict):
                cols = [k for k in _PHYSICAL_COLUMNS.get(c.name, []) if k in rows[0]]
                if cols:
                    a("")
                    a("  | " + " | ".join(_COLUMN_HEADERS.get(k, k.replace("_", " ")) for k in cols)
                      + " |\n  |" + "---|" * len(cols))
                    for r in rows:
                        a("  | " + " | ".join(_cell(k, r) for k in cols) + " |")
                    a("")
        a("")
    v = nums["verification"]
    by = v["claims_by_method"]
    a("## What is verified, and how\n")
    a(f"{v['derivations']} derived results: {v['verified']} verified, {v['unverified']} without a "
      f"verification record, {v['failed']} failing. Their claims: {by.get('sympy', 0)} proven or checked "
      f"symbolically (of which {v.get('finite_cases', 0)} checked for listed values of a parameter "
      f"only), {by.get('mpmath', 0)} confirmed by independent high-precision numerics and "
      f"{by.get('numeric', 0)} by sampled floating-point checks. Appendix A of equations.pdf describes "
      "each method and names the software that carried it out. The cross-checks above compare the "
      "theory with direct simulation of GRPO inside statistical bands.\n")
    if v["failed_list"]:
        a("Failing derivations, reported and not hidden:\n")
        for f_ in v["failed_list"]:
            a(f"- {f_['name']}: {f_['error']}")
        a("")
    if notes:
        a("## Notes\n")
        for n in notes:
            a(f"- {n}")
        a("")
    a("## Files\n")
    for name in ("equations.tex", "equations.pdf", "references.bib", "report.json"):
        if (rr.out_dir / name).exists():
            a(f"- [{name}]({name})")
    if (rr.out_dir / "results" / "grpo-notation.tex").exists():
        a("- [results/](results/): one .tex file per result (its labelled equation, conditions "
          "and source) and the notation macros results/grpo-notation.tex, to input into your "
          "own paper")
    a("")
    a("## References\n")
    L.extend(cite.list())
    a("")
    return "\n".join(L)
