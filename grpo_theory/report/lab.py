r"""The GRPO lab's committed results as a section of the report (``equations.tex`` and
``report.md``).

The lab (``grpo-theory lab``, :mod:`grpo_theory.lab`) trains real GRPO with TRL's trainer; its
results ship inside the package as ``grpo_theory/data/lab/lab_<part>.json`` (written by
``benchmarks/lab_runs/regenerate.py``; :func:`grpo_theory.data.lab_results_dir`).  The report never
runs the lab (torch and TRL are optional): it reads those files at build time
(:func:`lab_data`), turns them into one summary (:func:`lab_summary`) and writes that summary
as LaTeX (:func:`lab_section`) and Markdown (:func:`lab_markdown`).  A missing or unreadable
file is named in the section instead of its numbers.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from grpo_theory.deepnet.analysis import observed_k_max_range
from grpo_theory.data import lab_results_dir
from grpo_theory.prose import escape_tex, to_tex
from grpo_theory.render.notation import latex_of

__all__ = ["LAB_RESULTS", "LAB_PARTS", "lab_data", "lab_summary", "lab_section", "lab_markdown"]

#: where the lab's committed results live: inside the package (installed with it)
LAB_RESULTS = lab_results_dir()
#: the parts of the lab the report presents, by file (``lab_<part>.json``)
LAB_PARTS = ("refresh", "transition", "group-size", "model-size", "learning-rate")


def lab_data(results_dir=None) -> dict:
    """The lab's result files as dicts: ``{part: dict or None, "problems": [text, ...],
    "dir": path}``; a part whose file is absent or unreadable is ``None`` with a problem
    naming the file (and the line, for malformed JSON)."""
    d = Path(results_dir) if results_dir is not None else LAB_RESULTS
    out: dict = {"dir": str(d), "problems": []}
    for part in LAB_PARTS:
        f = d / f"lab_{part}.json"
        out[part] = None
        if not f.is_file():
            out["problems"].append(f"{f.name} is absent")
            continue
        try:
            out[part] = json.loads(f.read_text(encoding="utf-8"))
        except json.JSONDecodeError as e:
            out["problems"].append(f"{f.name}, line {e.lineno}: {e.msg}")
        except (OSError, UnicodeDecodeError) as e:
            out["problems"].append(f"{f.name}: {e}")
    return out


def _setting(s: dict) -> str:
    """A refresh sweep's setting in words (from its fields, not its code name)."""
    how = ("$k$ fresh mini-batches per sampling policy" if s["knob"] == "steps_per_generation"
           else "one batch reused $k$ times")
    if "adam" in s["name"].lower():
        opt = f"AdamW, first-moment decay rate ${s['momentum']:g}$"
    elif s["momentum"]:
        opt = f"heavy ball, $\\mu = {s['momentum']:g}$"
    else:
        opt = "SGD"
    clip = (f", the clip on ($\\epsilon_{{\\mathrm{{clip}}}} = {s['epsilon']:g}$)" if s["epsilon"] < 1
            else "")
    return f"{how}, {opt}{clip}"


def _observed(s: dict, k_range: tuple) -> tuple[object, str]:
    """The observed largest stable k of a sweep: ``(value or None, words)``; the words give the
    k the multipliers' standard errors leave open (``k_range``, the sweep's
    :func:`~grpo_theory.deepnet.analysis.observed_k_max_range`)."""
    ks = [r["k"] for r in s["per_k"]]
    lo, hi = k_range
    if hi is not None and lo != hi:
        open_ = f"${hi}$" if lo is None or hi == lo + 1 else f"${lo + 1}$ to ${hi}$"
        return s.get("k_max_observed"), ((f"${lo}$ to ${hi}$" if lo is not None else f"at most ${hi}$")
                                         + f" ({open_} within one standard error of multiplier $1$)")
    if s.get("k_max_observed") is not None:
        return s["k_max_observed"], f"${s['k_max_observed']}$"
    if all(r["stable_observed"] for r in s["per_k"]):
        return None, f"stable at every $k$ tried (up to ${max(ks)}$)"
    return None, f"unstable from the smallest $k$ tried (${min(ks)}$)"


def lab_summary(data: dict) -> dict:
    """The numbers the report shows, from :func:`lab_data`: ``available`` is false without the
    refresh part (it carries the engine and the plateau); ``problems`` names what is missing."""
    ref = data.get("refresh")
    if ref is None:
        return {"available": False, "problems": list(data["problems"])}
    m = re.search(r"trl (\S+)", ref["engine"], flags=re.I)
    st = ref["stiffness"]
    out = {"available": True, "problems": list(data["problems"]),
           "trl_version": m.group(1) if m else None, "parameters": ref["model_parameters"],
           "prompts": ref["prompts"], "group_size": ref["group_size"], "plateau": ref["plateau"],
           "stiffness": {"kernel": st["ntk"], "response": st["response"], "se": st.get("response_se"),
                         "kernel_top_over_n": st["ntk_top_over_n"],
                         "kernel_next_over_n": (st.get("spectrum_over_n") or [None, None])[1],
                         "kappa": st.get("kappa", 2.0)}}
    rows = []
    for s in ref["sweeps"]:
        k_range = observed_k_max_range(s["per_k"])
        value, words = _observed(s, k_range)
        spread = re.search(r"range ([\d.]+)\s*-\s*([\d.]+)", " ".join(s.get("notes") or []))
        rows.append({"setting": _setting(s), "eta_K": s["eta_K"], "exact": s["k_max_predicted"],
                     "published": s["k_max_published"], "observed": value, "observed_words": words,
                     "observed_range": k_range,
                     "agrees": s.get("agrees"), "clip": s["epsilon"] < 1,
                     "adam": "adam" in s["name"].lower(),
                     "kernel_spread": [float(x) for x in spread.groups()] if spread else None})
    out["sweeps"] = rows
    # the design: kick pairs and windows per sweep, seeds per family (from the files)
    pairs = sorted({s["pairs"] for s in ref["sweeps"] + ([ref["unsafe"]] if ref.get("unsafe") else [])
                    if s.get("pairs")})
    out["design"] = {"pairs": pairs,
                     "windows": sorted({s["windows"] for s in ref["sweeps"] if s.get("windows")}),
                     "transition": {k: (data.get("transition") or {}).get("transition", {}).get(k)
                                    for k in ("pairs", "steps")} if data.get("transition") else None,
                     "seeds": {name: len({r.get("seed") for r in (data.get(part) or {}).get(fam, {}).get("runs", [])})
                               for name, part, fam in (("group", "group-size", "group_family"),
                                                       ("width", "model-size", "size_family"),
                                                       ("rate", "learning-rate", "rate_family"))
                               if (data.get(part) or {}).get(fam)}}
    u = ref.get("unsafe")
    if u:
        worst = next((r for r in u["per_k"] if r["k"] == u["k_max_published"]), None)
        out["unsafe"] = {"setting": _setting(u), "eta_K": u["eta_K"], "exact": u["k_max_predicted"],
                         "published": u["k_max_published"], "fresh_fraction": u["fresh_fraction"],
                         "at_published": worst}
    tr = (data.get("transition") or {}).get("transition")
    if tr:
        out["transition"] = {"eta_K": tr["eta_K"], "observed": tr["mu_c_observed"],
                             "exact": tr["mu_c_predicted"], "continuous": tr["mu_c_continuous"]}
    g = (data.get("group-size") or {}).get("group_family")
    if g:
        e = g.get("expected_reward") or {}
        out["group"] = {"values": g["values"], "policy": e, "logged": {
            k: g.get(k) for k in ("exponent", "exponent_interval", "predicted_exponent", "agrees")},
            "plateaus": g.get("plateaus") or [], "variant": g.get("variant") or {}}
    w = (data.get("model-size") or {}).get("size_family")
    if w:
        out["width"] = {"widths": w["widths"], "parameters": sorted({r["parameters"] for r in w["runs"]}),
                        "alpha": w["alpha"], "alpha_interval": w["alpha_interval"],
                        "alpha_kernel": w.get("alpha_kernel"),
                        "alpha_kernel_interval": w.get("alpha_kernel_interval"),
                        "tau_vs_kernel": w.get("tau_vs_kernel")}
    r = (data.get("learning-rate") or {}).get("rate_family")
    if r:
        out["rate"] = {"exponent": r["exponent"], "interval": r["exponent_interval"],
                       "expected": r["expected"], "values": r["bandit_lrs"]}
    fits = {}
    for part, name in (("learning-rate", "learning rate"), ("model-size", "width"),
                       ("group-size", "group size")):
        f = (data.get(part) or {}).get("fit_r2")
        if f:
            ex = (f.get("by_model") or {}).get("exponential") or {}
            fits[name] = {"median": ex.get("median", f["median"]), "runs": f["runs"],
                          "ceiling": f.get("noise_ceiling_median"),
                          "fraction": ex.get("fraction_at_least_0.91")}
    out["r2"] = fits
    return out


# ------------------------------------------------------------------------------------
# LaTeX
# ------------------------------------------------------------------------------------

def _n(x, digits=3) -> str:
    """A number as inline math (never more than ``digits`` significant digits)."""
    from grpo_theory.report.atlas_tex import number
    return number(x, digits)


def _interval(iv, digits=2) -> str:
    return f"$[{float(iv[0]):.{digits}f}, {float(iv[1]):.{digits}f}]$"


def _m(key) -> str:
    return f"${latex_of(key)}$"


def _int(n: int) -> str:
    """An integer as inline math with thin spaces between thousands."""
    return "$" + f"{n:,}".replace(",", "{,}") + "$"


def _contains(iv, x) -> bool:
    return iv is not None and float(iv[0]) <= x <= float(iv[1])


def _one_over_g(pol: dict, log: dict) -> str:
    """What the two exponents' intervals say about the $1/G$ law (exponent $-1$)."""
    inside = [name for name, d in (("the policy's", pol), ("the logged reward's", log))
              if d.get("exponent") is not None and _contains(d.get("exponent_interval"), -1.0)]
    outside = [name for name, d in (("the policy's", pol), ("the logged reward's", log))
               if d.get("exponent") is not None and not _contains(d.get("exponent_interval"), -1.0)]
    text = ""
    if inside:
        text += (" and ".join(inside).capitalize() + " interval contains $-1$ as well as the "
                 "prediction: these runs do not tell the $1/G$ law from the exact finite-$G$ "
                 "exponent. ")
    if outside:
        text += (" and ".join(outside).capitalize() + " interval excludes $-1$: not the $1/G$ law, "
                 "as expected outside the region $G\\,\\min(p^{*}, q^{*}) \\gg 1$ where it holds. ")
    return text


def _range(values) -> str:
    values = sorted(values)
    return f"${values[0]}$" if len(values) == 1 else f"${values[0]}$ to ${values[-1]}$"


def _design_paragraph(s: dict) -> str:
    """The task, the seeds and the kinds of uncertainty of the lab's numbers, from the files."""
    d = s.get("design") or {}
    seeds = d.get("seeds") or {}
    words = {"group": "per group size", "width": "per width", "rate": "per learning rate"}
    n_words = {1: "one seed", 2: "two seeds", 3: "three seeds", 4: "four seeds"}
    fams = [f"{n_words.get(n, f'${n}$ seeds')} {words[k]}" for k, n in seeds.items() if n]
    tr = d.get("transition") or {}
    text = (
        "\\paragraph{Task, seeds and uncertainties.} A prompt is the sum of two one-digit numbers, "
        "written like \\mbox{``3 + 4 =''}, and the answer is its parity (the sum modulo 2), one token; the "
        "reward is 1 for the correct token and 0 for any other. "
        + (f"Each setting of a refresh sweep is measured with {_range(d['pairs'])} pairs of kicked "
           "runs (a kick of each sign with common random numbers, a new seed for each pair)"
           + (f" over {_range(d['windows'])} windows" if d.get("windows") else "")
           + "; the multiplier is fitted to the pairs' responses and its uncertainty is the "
           "jackknife standard error over the pairs. " if d.get("pairs") else "")
        + (f"The damping transition uses ${tr['pairs']}$ pairs of ${tr['steps']}$ steps at each "
           "momentum. " if tr.get("pairs") and tr.get("steps") else "")
        + ("The families of runs have " + ", ".join(fams[:-1]) + (" and " if len(fams) > 1 else "")
           + fams[-1] + ". " if fams else "")
        + "A number written with $\\pm$ in this section is a mean or a fit followed by one standard "
        "error. An interval on an exponent or a slope is a 95~\\% confidence interval of a "
        "least-squares fit of logarithms, weighted by the runs' standard errors where they have "
        "them, with the quantile of Student's distribution when the scatter of the points exceeds "
        "their errors.")
    return text


def lab_section(s: dict) -> tuple[str, str]:
    """The lab as a section of ``equations.tex`` (title, body), from :func:`lab_summary`."""
    title = "The theory on a real GRPO engine"
    if not s["available"]:
        return title, ("The lab's results are not available in this build ("
                       + "; ".join(escape_tex(p) for p in s["problems"]) + "), so this section has no numbers. "
                       "They are produced by the lab command, which needs the optional training "
                       "libraries; the report reads them and never runs the lab.")
    pl, st = s["plateau"], s["stiffness"]
    rel = st["response"] / st["kernel"] - 1 if st["response"] else None
    ver = f" (version {escape_tex(s['trl_version'])})" if s["trl_version"] else ""
    head = (
        "Every number in this section comes from real training with the GRPO trainer of "
        f"TRL~\\cite{{vonwerra2020trl}}{ver}. The policy is a small transformer language model "
        f"({_int(s['parameters'])} trainable parameters) on single-token modular arithmetic with a "
        "binary verifier; its output is restricted to the two answers, so every prompt is exactly "
        f"the two-action bandit of the derivations. Each optimizer step uses {s['prompts']} prompts "
        f"({_m('B')} $= {s['prompts']}$) with {_m('G')} $= {s['group_size']}$, std "
        f"normalization and the k3 KL estimator with {_m('beta')} $= {pl['beta']:g}$ to a reference "
        f"at {_m('p_ref')} $= {pl['p_ref']:g}$: the plateau is {_m('p_star')} $=$ "
        f"{_n(pl['p_star'], 4)}, with stiffness {_m('K')} $=$ {_n(pl['stiffness_bandit'], 4)} "
        f"and fresh fraction {_m('K_f')}$/${_m('K')} $=$ {_n(pl['fresh_fraction'], 3)}.\n\n"
        "\\paragraph{Stiffness, measured two ways.} The network's slowest direction is the top "
        "eigenvector of its tangent kernel~\\cite{jacot2018ntk}: its eigenvalue per prompt is "
        f"{_n(st['kernel_top_over_n'], 4)}, the next {_n(st['kernel_next_over_n'], 3)}. The bandit's "
        f"{_m('K')} carries the softmax metric factor {_m('kappa')} $= {st['kappa']:g}$ of a table of two "
        "logits; on the network the kernel's top eigenvalue per prompt takes its place, so the "
        f"bandit's {_m('K')} divided by {_m('kappa')} and multiplied by that eigenvalue, "
        "$" + " ".join((_n(pl['stiffness_bandit'], 4).strip("$"), f"/ {st['kappa']:g} \\times",
                        _n(st['kernel_top_over_n'], 4).strip("$"), "=",
                        _n(st['kernel'], 4).strip("$"))) + "$, is the stiffness per unit learning rate along that mode. A kick of the policy along the mode, trained in both "
        "signs with the same random numbers, gives the linear response "
        + (f"{_n(st['response'], 4)} $\\pm$ {_n(st['se'], 2)}, a difference of "
           f"${100 * rel:+.1f}\\,\\%$ ({abs(st['response'] - st['kernel']) / st['se']:.1f} standard "
           "errors)." if st["response"] else "(not measured in these files)."))
    rows = []
    for r in s["sweeps"]:
        rows.append(f"{to_tex(r['setting'])} & {_n(r['eta_K'], 4)} & ${r['exact']}$ & ${r['published']}$ & "
                    f"{to_tex(r['observed_words'])} \\\\")
    u = s.get("unsafe")
    if u:
        w = u["at_published"]
        obs = (f"$k = {w['k']}$ unstable (multiplier {_n(w['multiplier'], 3)} $\\pm$ {_n(w['se'], 2)})"
               if w else "—")
        rows.append(f"{to_tex(u['setting'])}, negative fresh fraction ({_n(u['fresh_fraction'], 3)}) & "
                    f"{_n(u['eta_K'], 3)} & ${u['exact']}$ & ${u['published']}$ & {obs} \\\\")
    table = ("\\begin{center}\\small\\begin{tabular}{>{\\raggedright\\arraybackslash}p{0.40\\textwidth}rrr"
             ">{\\raggedright\\arraybackslash}p{0.22\\textwidth}}\n"
             f"setting & {_m('a')} & exact {_m('k_max')} & published & observed \\\\ \\hline\n"
             + "\n".join(rows) + "\n\\end{tabular}\\end{center}\n")
    agree = [r for r in s["sweeps"] if r["observed"] is not None and r["exact"] is not None
             and not r["clip"] and (r["observed"] == r["exact"] or (
                 r["observed_range"][1] is not None
                 and (r["observed_range"][0] or 0) <= r["exact"] <= r["observed_range"][1]))]
    exact_point = sum(r["observed_range"] == (r["exact"], r["exact"]) for r in agree)
    ad = next((r for r in s["sweeps"] if r["adam"]), None)
    clip = next((r for r in s["sweeps"] if r["clip"]), None)
    refresh = (
        "\\paragraph{Refresh thresholds in the trainer's settings.} Each sweep sets the learning "
        f"rate so that {_m('a')} lies between the exact thresholds of two neighbouring {_m('k')}, "
        "kicks the plateau along the top mode and measures the per-window multiplier from the "
        "first windows: without momentum, the deviation at the end of the first window over the "
        "kick. With momentum the state at a window start is the pair $(x, v)$, and by the "
        "Cayley--Hamilton theorem for the window's $2 \\times 2$ monodromy $M$ the deviations at "
        "successive window starts obey $x_{j+2} = \\operatorname{tr}(M) x_{j+1} - \\det(M) x_{j}$ "
        "exactly: the second-order autoregression fitted to the first four window starts (three "
        "transitions) estimates $\\operatorname{tr} M$ and $\\det M$, and its spectral radius is "
        "that of $M$, whose crossing of $1$ is the exact threshold (the ratio over one window, "
        "$M_{11}$ for a start at rest, is not a stability measure under momentum). The first windows "
        "are used because in later ones the runs' noise-driven spread damps the mean response. "
        "A multiplier above $1$ is an instability. Exact is the largest stable "
        f"{_m('k')} of the exact (L2) window map at the measured stiffness, published the largest "
        f"{_m('k')} the first-order rule $\\eta K k < 1 - \\mu$ allows, observed the largest stable "
        f"{_m('k')} on the engine:\n\n" + table
        + (f"The observed threshold is the exact one in {len(agree)} settings without the clip "
           + (f"(in {len(agree) - exact_point} of them the standard errors also leave the next "
              f"{_m('k')} open)" if exact_point < len(agree) else "")
           + ", where the published rule is conservative by a factor of "
           f"${min(r['exact'] / r['published'] for r in agree):.0f}$ to "
           f"${max(r['exact'] / r['published'] for r in agree):.0f}$ in {_m('k')}. " if agree else "")
        + ("In the last row the fresh part of the stiffness is negative and the published rule "
           "allows one step more than the exact map: the engine is unstable there, so the published "
           "rule is unsafe. " if u else "")
        + ("The clip bounds the excursions the linear map amplifies: it is outside the linear "
           "theory, and its row is reported, not scored. " if clip else "")
        + ("With AdamW the observed threshold lies above the exact one of the heavy-ball "
           "reduction, which holds Adam's second moment at its plateau value; in the kicked runs "
           "the response enlarges the second moment and lowers the effective step"
           + (" (the preconditioned kernel's top eigenvalue at the end of a run is "
              f"{_n(ad['kernel_spread'][0], 2)} to {_n(ad['kernel_spread'][1], 2)} times its plateau "
              "value)" if ad["kernel_spread"] else "")
           + ", which moves the exact threshold up: a disagreement of the reduction, explained, "
           "not a confirmation." if ad else ""))
    parts = [head, _design_paragraph(s), refresh]
    t = s.get("transition")
    if t:
        parts.append(
            f"\\paragraph{{Damping transition.}} On-policy ({_m('k')} $= 1$) at {_m('a')} $=$ "
            f"{_n(t['eta_K'], 3)}, heavy ball, the sign of the discriminant of the fitted "
            "second-order response changes at the momentum "
            f"{_n(t['observed'], 3)} on the engine; the exact map's critical momentum is "
            f"{_n(t['exact'], 4)} and the continuous model's {_m('mu_c')} $=$ "
            f"{_n(t['continuous'], 4)} (with the lag $(k-1)/2 = 0$): the engine's transition "
            f"lies {_n(t['observed'] - t['exact'], 2)} above the exact one, and the two "
            "predictions differ by less than the engine resolves.")
    g = s.get("group")
    if g:
        pol, log = g["policy"], g["logged"]
        pls = g["plateaus"]
        parts.append(
            "\\paragraph{Group size.} Runs at "
            f"{_m('G')} $= {', '.join(str(v) for v in g['values'])}$ (three seeds each"
            + (f"; {_m('beta')} $= {g['variant']['beta']:g}$, {_m('p_ref')} $= {g['variant']['p_ref']:g}$, "
               f"so their plateau differs from the $\\beta = {pl['beta']:g}$ setting above"
               if g.get("variant") and g["variant"].get("beta") is not None else "")
            + ") follow the "
            f"exact finite-{_m('G')} plateau: {_m('p_star')} $=$ "
            + ", ".join(f"${p['p_star_exact']:.3f}$" for p in pls) + " against the engine's late "
            "expected reward " + ", ".join(f"${p['late_expected_reward_mean']:.3f}$" for p in pls) + ". "
            + (f"The plateau fluctuation of the policy's own expected reward scales as "
               f"$\\operatorname{{Var}} p \\propto G^{{{pol['exponent']:.2f}}}$, interval "
               f"{_interval(pol['exponent_interval'])}, which contains the exact finite-{_m('G')} "
               f"prediction ${pol['predicted_exponent']:.2f}$. " if pol.get("exponent") is not None else "")
            + (f"The trainer's logged reward, a mean over the batch's samples whose binomial noise "
               f"dominates it, gives ${log['exponent']:.2f}$, interval "
               f"{_interval(log['exponent_interval'])}, against ${log['predicted_exponent']:.2f}$ "
               "(the prediction is for the policy's fluctuation). "
               if log.get("exponent") is not None else "")
            + _one_over_g(pol, log))
    w = s.get("width")
    if w:
        tk = w.get("tau_vs_kernel")
        parts.append(
            f"\\paragraph{{Width.}} Widths {', '.join(str(x) for x in w['widths'])} "
            f"({_int(w['parameters'][0])} to {_int(w['parameters'][-1])} parameters, two seeds each): the "
            f"exponent {_m('alpha')} of $K = c_{{K}} N^{{\\alpha}}$ is ${w['alpha']:.2f}$, interval "
            f"{_interval(w['alpha_interval'])}, from the reward curves"
            + (f" and ${w['alpha_kernel']:.2f}$, interval {_interval(w['alpha_kernel_interval'])}, "
               "from the tangent kernel" if w.get("alpha_kernel") is not None else "")
            + ": no size dependence is resolved at this precision."
            + (f" Run by run the saturation time {_m('tau')} against $1/(\\eta K)$ has slope "
               f"${tk['slope']:.2f}$, interval {_interval(tk['interval'])}, over a "
               f"${tk['K_top_range'][1] / tk['K_top_range'][0]:.1f}$-fold range of the measured "
               "stiffness: the time scale is the inverse stiffness." if tk else ""))
    r = s.get("rate")
    if r:
        parts.append(
            f"\\paragraph{{Learning rate.}} {_m('tau')} $\\propto \\eta^{{{r['exponent']:.2f}}}$, "
            f"interval {_interval(r['interval'])}, against the theory's ${r['expected']:g}$ "
            "(no lag).")
    if s["r2"]:
        items = [f"{name}: median {_n(v['median'], 3)} over {v['runs']} runs (signal share "
                 f"{_n(v['ceiling'], 3)})" for name, v in s["r2"].items()]
        parts.append(
            "\\paragraph{The single-exponential law.} R\\textsuperscript{2} of the single "
            "exponential fitted to the trainer's logged reward, by family: " + "; ".join(items)
            + ". The fits reach the signal share of a batch mean where the reward rises; the "
            "group-size family starts near its plateau and has little curve to fit.")
    if s["problems"]:
        parts.append("Not available in this build: " + "; ".join(escape_tex(p) for p in s["problems"]) + ".")
    return title, "\n\n".join(parts)


# ------------------------------------------------------------------------------------
# Markdown
# ------------------------------------------------------------------------------------

def lab_markdown(s: dict, cite, nt) -> list[str]:
    """The lab section of ``report.md`` as lines, from :func:`lab_summary` (``cite``: key ->
    numbered reference; ``nt``: the report's number format)."""
    L = ["## The theory on a real GRPO engine\n"]
    if not s["available"]:
        L.append("The lab's results are not available in this build (" + "; ".join(s["problems"])
                 + "). They are produced by the lab command, which needs the optional training "
                 "libraries; the report reads them and never runs the lab.\n")
        return L
    pl, st = s["plateau"], s["stiffness"]
    ver = f" {s['trl_version']}" if s["trl_version"] else ""
    L.append(f"Real training with TRL's GRPO trainer{ver} {cite('vonwerra2020trl')}, as measured "
             "by the lab: a "
             f"{s['parameters']:,}-parameter transformer on single-token modular arithmetic restricted "
             f"to two answers (exactly the two-action bandit), B = {s['prompts']} prompts per step, "
             f"G = {s['group_size']}, std normalization, k3 KL with β = {pl['beta']:g} to p_ref = "
             f"{pl['p_ref']:g}: plateau p* = {nt(pl['p_star'], 4)}, K = {nt(pl['stiffness_bandit'], 4)}, "
             f"K_f/K = {nt(pl['fresh_fraction'], 3)}.\n")
    d = s.get("design") or {}
    if d.get("pairs"):
        seeds = ", ".join(f"{n} seeds per {w}" for w, n in (
            ("group size", (d.get("seeds") or {}).get("group")), ("width", (d.get("seeds") or {}).get("width")),
            ("learning rate", (d.get("seeds") or {}).get("rate"))) if n)
        L.append(f"Task: the parity of the sum of two one-digit numbers (one answer token, reward 1 or 0). "
                 f"Each refresh setting: {min(d['pairs'])}–{max(d['pairs'])} pairs of ± kicks (one seed "
                 f"per pair); the multiplier's ± is its jackknife standard error over the pairs"
                 + (f"; families: {seeds}" if seeds else "") + ". A ± is one standard error; an "
                 "interval on an exponent or slope is a 95 % confidence interval of a least-squares "
                 "fit of logarithms.\n")
    if st["response"]:
        L.append(f"**Stiffness, two ways.** Tangent kernel {cite('jacot2018ntk')}: K = "
                 f"{nt(st['kernel'], 4)} along the top mode; linear response to a kick: "
                 f"{nt(st['response'], 4)} ± {nt(st['se'], 2)} "
                 f"({100 * (st['response'] / st['kernel'] - 1):+.1f} %, "
                 f"{abs(st['response'] - st['kernel']) / st['se']:.1f} SE).\n")
    L.append("**Refresh thresholds** (largest stable k: exact L2 window map, published first-order "
             "rule ηKk < 1 − μ, observed on the engine from the first windows' multiplier: without momentum the first window's ratio, with momentum the spectral radius of the second-order autoregression fitted to the first four window starts, which the 2 × 2 monodromy makes exact):\n")
    L.append("| setting | ηK | exact k_max | published | observed |\n|---|---|---|---|---|")
    plain = lambda t: re.sub(r"\$([^$]*)\$", lambda m: m.group(1), t).replace(  # noqa: E731
        "\\epsilon_{\\mathrm{clip}}", "ε").replace("\\mu", "μ")
    for r in s["sweeps"]:
        L.append(f"| {plain(r['setting'])} | {nt(r['eta_K'], 4)} | {r['exact']} | {r['published']} | "
                 f"{plain(r['observed_words'])}" + (" (clip: reported, not scored)" if r["clip"] else "")
                 + (" (disagrees: Adam's second moment grows in the kicked runs)" if r["adam"] else "")
                 + " |")
    u = s.get("unsafe")
    if u and u["at_published"]:
        w = u["at_published"]
        L.append(f"| {plain(u['setting'])}, fresh fraction {nt(u['fresh_fraction'], 3)} | "
                 f"{nt(u['eta_K'], 3)} | {u['exact']} | {u['published']} | k = {w['k']} unstable "
                 f"(multiplier {nt(w['multiplier'], 3)} ± {nt(w['se'], 2)}): the published rule is unsafe |")
    L.append("")
    t = s.get("transition")
    if t:
        L.append(f"**Damping transition** (k = 1, ηK = {nt(t['eta_K'], 3)}): critical momentum observed "
                 f"{nt(t['observed'], 3)}, exact L2 {nt(t['exact'], 4)}, continuous L3 μ_c = "
                 f"{nt(t['continuous'], 4)}.\n")
    g = s.get("group")
    if g and g["policy"].get("exponent") is not None:
        pol, log = g["policy"], g["logged"]
        L.append(f"**Group size** (G = {', '.join(map(str, g['values']))}): exact p*(G) "
                 + ", ".join(f"{p['p_star_exact']:.3f}" for p in g["plateaus"]) + " vs the engine's "
                 + ", ".join(f"{p['late_expected_reward_mean']:.3f}" for p in g["plateaus"])
                 + f"; policy fluctuation Var p ∝ G^{pol['exponent']:.2f} "
                 f"[{pol['exponent_interval'][0]:.2f}, {pol['exponent_interval'][1]:.2f}] vs the exact "
                 f"finite-G prediction {pol['predicted_exponent']:.2f}"
                 + (f"; the logged reward (binomial noise of the batch mean) G^{log['exponent']:.2f} "
                    f"[{log['exponent_interval'][0]:.2f}, {log['exponent_interval'][1]:.2f}] vs "
                    f"{log['predicted_exponent']:.2f}" if log.get("exponent") is not None else "")
                 + ". Not the 1/G law: that holds only where G·min(p*, q*) ≫ 1.\n")
    w = s.get("width")
    if w:
        tk = w.get("tau_vs_kernel")
        L.append(f"**Width** ({', '.join(map(str, w['widths']))}): α = {w['alpha']:.2f} "
                 f"[{w['alpha_interval'][0]:.2f}, {w['alpha_interval'][1]:.2f}] from the curves"
                 + (f", {w['alpha_kernel']:.2f} [{w['alpha_kernel_interval'][0]:.2f}, "
                    f"{w['alpha_kernel_interval'][1]:.2f}] from the kernel" if w.get("alpha_kernel") is not None else "")
                 + "; no size dependence resolved"
                 + (f"; τ against 1/(ηK) run by run: slope {tk['slope']:.2f} [{tk['interval'][0]:.2f}, "
                    f"{tk['interval'][1]:.2f}]" if tk else "") + ".\n")
    r = s.get("rate")
    if r:
        L.append(f"**Learning rate**: τ ∝ η^{r['exponent']:.2f} [{r['interval'][0]:.2f}, "
                 f"{r['interval'][1]:.2f}], theory {r['expected']:g}.\n")
    if s["r2"]:
        L.append("**R² of the single exponential** on the logged reward: " + "; ".join(
            f"{name} {nt(v['median'], 3)} (median of {v['runs']}, signal share {nt(v['ceiling'], 3)})"
            for name, v in s["r2"].items()) + ".\n")
    if s["problems"]:
        L.append("Not available in this build: " + "; ".join(s["problems"]) + ".\n")
    return L
