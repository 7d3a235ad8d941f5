"""The two-parameter bifurcation atlas as a section of ``equations.tex``: the fold set of the
fixed points and where it goes as the reference reward vanishes, the stability boundaries of
the discrete map with their codimension-two points, and the criticality of those boundaries."""

from __future__ import annotations

import sympy as sp

from grpo_theory.prose import escape_tex
from grpo_theory.render.latex import prose_tex
from grpo_theory.render.notation import latex_of
from grpo_theory.theory import symbols as S
from grpo_theory.theory.atlas import ATLAS_MODEL
from grpo_theory.theory.printing import latex, sci

__all__ = ["atlas_section", "number"]


def number(x, digits: int = 6) -> str:
    """A number of the atlas text, as inline math: ``digits`` significant digits (never more
    than 10), small and large ones with a power of ten."""
    x = float(x)
    if x != 0 and (abs(x) < 1e-3 or abs(x) >= 1e5):
        return sci(x, min(digits, 3))
    return f"${x:.{min(digits, 10)}g}$"


def _m(key) -> str:
    return f"${latex_of(key)}$"


def _fold_limit_text(data) -> str:
    fl = data["fold_limit"]
    lo, up = fl.limits
    rows = "\n".join(
        f"{number(r['p_ref'], 2)} & " + " & ".join(
            f"{number(f['kl_coef'], 6)} & {number(f['scaled'], 6)}" for f in r["folds"]) + " \\\\"
        for r in fl.rows)
    G = fl.group_size
    return (
        "\\paragraph{Where the fold curves go.} The continued fold curve is drawn down to "
        f"{_m('p_ref')} $= {data['p_ref_plane']['p_ref'].min():.2g}$, where the continuation was "
        "stopped: that end is a choice of the computation, not a property of the model. "
        "With the analytic KL the fixed points satisfy "
        f"$\\beta\\,(z - z_{{\\mathrm{{ref}}}}) = \\mathcal{{A}}_{{G}}/(p q)$, and as "
        f"{_m('p_ref')} $\\to 0$ the distance $z - z_{{\\mathrm{{ref}}}} \\approx \\ln(1/p_{{\\mathrm{{ref}}}})$ "
        "grows without bound. So both folds continue to every smaller reference reward: their "
        "values of $\\beta$ fall like $1/\\ln(1/p_{\\mathrm{ref}})$ and "
        "$\\beta_{\\mathrm{fold}}\\,(z - z_{\\mathrm{ref}})$ tends to the value of "
        "$\\mathcal{A}_{G}/(p q)$ at the fold: its minimum "
        f"{number(lo['h'], 6)} at $p = 1/2$ for the lower fold and its limit "
        f"$(G - 1)/\\sqrt{{G}} = {number(up['h'], 6)[1:-1]}$ as $p \\to 1$ for the upper fold "
        f"($G = {G}$; only groups with a single failure are left there). The folds found directly "
        "below the end of the drawn curve approach these limits:\n\n"
        "\\begin{center}\\begin{tabular}{lllll}\n"
        f"{_m('p_ref')} & lower $\\beta_{{\\mathrm{{fold}}}}$ & "
        "$\\beta_{\\mathrm{fold}}\\,(z - z_{\\mathrm{ref}})$ & upper $\\beta_{\\mathrm{fold}}$ & "
        "$\\beta_{\\mathrm{fold}}\\,(z - z_{\\mathrm{ref}})$ \\\\ \\hline\n"
        f"{rows}\n\\end{{tabular}}\\end{{center}}\n"
        + _width_sentence(fl.rows, lo["h"], up["h"]))


def _width_sentence(rows, h_lower, h_upper) -> str:
    """How the width of the bistable window changes down the table: the ratio of the upper to
    the lower fold's beta in its first and last rows, against its limit (both folds' beta times
    the same distance, which grows like ln(1/p_ref), tend to their limits)."""
    ratios = [r["folds"][1]["kl_coef"] / r["folds"][0]["kl_coef"] for r in rows
              if len(r["folds"]) == 2 and r["folds"][0]["kl_coef"] > 0]
    limit = h_upper / h_lower
    if len(ratios) < 2:
        return ""
    return ("The ratio of the two folds' $\\beta$, the width of the bistable window on a "
            f"logarithmic $\\beta$ axis, grows from {number(ratios[0], 3)} to {number(ratios[-1], 3)} "
            f"down the table, toward its limit {number(limit, 3)}, the ratio of the two limits above: "
            "the width tends to a constant as $p_{\\mathrm{ref}} \\to 0$ and is not constant at any "
            "finite $p_{\\mathrm{ref}}$.")


def _discrete_text(data) -> str:
    disc = data["discrete"]
    res = data["resonances"]
    pts = []
    for r in res:
        where = (f"$k = {number(r['refresh_interval'], 8)[1:-1]}$ at $\\mu = {disc['momentum']:g}$"
                 if "refresh_interval" in r and "momentum" not in r
                 else f"$\\mu = {number(r['momentum'], 8)[1:-1]}$ at $k = {disc['refresh_interval']}$")
        eig = ", ".join(number(e.real, 6) for e in r["eigenvalues"])
        pts.append(f"{where}, $a = {number(r['eta_K'], 6)[1:-1]}$ (eigenvalues {eig}; "
                   f"$\\lVert M + I \\rVert = {number(r['norm_M_plus_I'], 3)[1:-1]}$)")
    pts_text = "; ".join(pts)
    return (
        "\\paragraph{The discrete map.} The flip boundary (a real eigenvalue of the monodromy "
        f"{_m('M')} at $-1$, equation~\\eqref{{eq:discrete:refresh-flip-threshold}}) and the "
        "complex-pair boundary (a complex pair on the unit circle, "
        "equation~\\eqref{eq:discrete:refresh-complex-threshold}) are the stability boundaries of the "
        "\\emph{linear} map L2 of the stale surrogate, drawn over $(k, a)$ at "
        f"$\\mu = {disc['momentum']:g}$ and over $(\\mu, a)$ at $k = {disc['refresh_interval']}$ "
        "($k$ extended to real values between the integers). Where they meet, both eigenvalues "
        "are $-1$ and the monodromy is not $-I$: a Jordan block, the codimension-two point of a "
        "1:2 resonance~\\cite{kuznetsov2004}. Found by bisection on the difference of the two "
        f"thresholds and checked on the monodromy itself: {pts_text}.")


def _criticality_text(data) -> str:
    rows = data["criticality"]
    body = []
    for r in rows:
        kind = "Neimark--Sacker" if r["kind"] == "neimark-sacker" else "flip"
        coef = "$l_{1}$" if r["kind"] == "neimark-sacker" else "$c_{\\mathrm{flip}}$"
        ff = r.get("fresh_fraction")
        body.append(f"{prose_tex(r['setting'])} & {number(ff, 3) if ff is not None else '--'} & "
                    f"${r['momentum']:g}$ & ${r['refresh_interval']}$ & "
                    f"{kind} & {number(r['eta_K'], 4)} & {coef} & {number(r['coefficient'], 4)} & "
                    f"{number(r['measured'], 4)} & {escape_tex(r['criticality'])} \\\\")
    return (
        "\\paragraph{Criticality.} Those boundaries describe the linear map. What the "
        "\\emph{nonlinear} mean-field map over one refresh window does past them is decided by a "
        "cubic normal-form coefficient on the boundary~\\cite{kuznetsov2004}: the first Lyapunov "
        "coefficient $l_{1}$ at a Neimark--Sacker point (an attracting invariant circle appears "
        "past it when $l_{1} < 0$, supercritical; the fixed point is lost to a distant state when "
        "$l_{1} > 0$, subcritical) and the coefficient $c_{\\mathrm{flip}}$ at a flip point "
        "(supercritical when $c_{\\mathrm{flip}} > 0$: a stable orbit of period two). They are "
        "computed from the partial derivatives of the drift at the fixed point up to third order, "
        "in high-precision arithmetic, and each is measured independently by iterating the map "
        "at the boundary from a small amplitude. Every row is the nonlinear mean-field map over one "
        "refresh window of its variant, at that variant's own split of the stiffness: the column "
        "$K_{f}/K$ is its fresh fraction ($0$: all of it through the sampling policy, the map "
        "of the atlas):\n\n"
        "{\\footnotesize\\begin{center}\\begin{tabular}{@{}>{\\raggedright\\arraybackslash}p{2.6cm}rrrlrcrrl@{}}\n"
        "variant & $K_{f}/K$ & $\\mu$ & $k$ & boundary & $a$ & coeff. & predicted & measured & criticality \\\\ \\hline\n"
        + "\n".join(body) + "\n\\end{tabular}\\end{center}}\n"
        "With all the stiffness stale (the map of the atlas, realized exactly by the KL in the "
        "reward) the loss of stability is soft: past the threshold the reward oscillates with an "
        "amplitude growing like the square root of the distance to it; a computation over a grid "
        "($\\beta$ from $0.2$ to $5$, $G = 4, 16$ and $G \\to \\infty$, $\\mu$ from $0.3$ to $0.97$, "
        "$k$ from $2$ to $34$) found every point supercritical. A KL force acting on the current "
        "iterate changes the boundary and can change its criticality: with std normalization and "
        "the analytic KL a Neimark--Sacker point can be subcritical, a hard loss of stability, as "
        "in the last row. These are computations at the points listed, not proofs.")


def atlas_section(data, figures=None) -> tuple[str, str]:
    """The atlas as a section of ``equations.tex`` (title, body): conditions printed by the
    project's printer, numbers and checks from :func:`grpo_theory.report.data.atlas_data`;
    ``figures`` (:func:`grpo_theory.report.captions.atlas_figures`): the sentence and float of
    each atlas figure, placed with the paragraph that discusses it."""
    figs = figures or {}
    fold_sentence, fold_float = figs.get("folds", ("", ""))
    disc_sentence, disc_float = figs.get("discrete", ("", ""))
    z = S.z
    bstar = S.beta_star(z)
    cusp = data["p_ref_plane"]["cusp"]
    chk = data["checks"]
    g = data["group_size_plane"]
    lab = {k: _m(k) for k in ("beta", "p_ref", "G", "z", "k", "mu", "a", "p")}
    plane = {"p_ref": "$(\\beta, p_{\\mathrm{ref}})$", "G": "$(\\beta, G)$"}
    fold_rows = "\n".join(
        f"{plane[c['plane']]} & "
        f"${c.get('group_size', data['p_ref_plane']['group_size'])}$ & "
        f"{number(c.get('p_ref', g['p_ref']), 6)} & {number(c['kl_coef'], 10)} & "
        f"{sci(c['abs_diff'])} & ${c['root_counts_minus_plus'][0]}$, ${c['root_counts_minus_plus'][1]}$ & "
        f"{'passed' if c['passed'] else 'FAILED'} \\\\" for c in chk["folds"])
    cc = chk["cusp"]
    v = ATLAS_MODEL
    variant = (f"{'std' if v.normalization == 'std' else 'mean'} normalization with "
               f"${latex(S.eps)} = {v.adv_eps:g}$, the "
               f"{'analytic' if v.kl == 'exact' else v.kl} KL penalty and the {v.surrogate} surrogate")
    level = sp.Eq(bstar, S.A_G / S.Phi_exact)
    body = f"""\\label{{sec:atlas}}The fixed points of the variant with {variant}. Since the drift is affine in {lab['beta']},
the fixed points are the level set
\\begin{{equation*}}{latex(level)},\\end{{equation*}}
with {_m('A_G')} and {_m('Phi_exact')} at $p = p_{{\\mathrm{{old}}}}$ (on-policy, equations~\\eqref{{eq:drift:expected-advantage-std}}
and~\\eqref{{eq:drift:kl-force-exact}}). A saddle-node (fold) is where
${latex(sp.Eq(sp.Derivative(bstar, z), 0))}$, and the cusp, where the bistable range closes, is where also
${latex(sp.Eq(sp.Derivative(bstar, (z, 2)), 0))}$.

\\paragraph{{The fold set.}} In the ({lab['beta']}, {lab['p_ref']}) plane at {lab['G']} $= {data['p_ref_plane']['group_size']}$
the fold set was continued by pseudo-arclength continuation~\\cite{{keller1977}} (secant predictor,
Newton corrector) and the cusp located by bisection on the {lab['p_ref']} component of the tangent:
{lab['p_ref']} $=$ {number(cusp['p_ref'], 10)}, {lab['beta']} $=$ {number(cusp['kl_coef'], 10)},
$p^{{*}} =$ {number(cusp['p'], 8)}. In the ({lab['beta']}, {lab['G']}) plane at {lab['p_ref']} $= {g['p_ref']:g}$ the group size is an
integer; the folds were found for each {lab['G']} by Brent's method~\\cite{{brent1973}} on the fold condition: the plateau is
bistable from {lab['G']} $= {g['first_bistable']}$ on (not at {lab['G']} $= {g['last_monostable']}$), so the cusp in
{lab['G']} lies between these two integers. {fold_sentence}

{fold_float}

\\paragraph{{Independent checks}} (they do not use the fold condition). For each fold: the number of roots
of the drift on a dense grid around the fold at {lab['beta']} moved by $\\mp 10^{{-8}}\\max(1, \\beta)$
(two on one side, none on the other), and the extremum of $\\beta^{{*}}$ found by derivative-free bounded
minimization (Brent's method), whose difference from the continued fold is given.

\\begin{{center}}\\begin{{tabular}}{{lrrrrrl}}
plane & {lab['G']} & {lab['p_ref']} & fold {lab['beta']} & difference & roots below, above & check \\\\ \\hline
{fold_rows}
\\end{{tabular}}\\end{{center}}

The cusp solved independently from the two conditions above with derivatives from fourth-order
finite differences of $\\beta^{{*}}$ alone: {lab['p_ref']} $=$ {number(cc['independent']['p_ref'], 10)},
{lab['beta']} $=$ {number(cc['independent']['kl_coef'], 10)}; differences {sci(cc['abs_diff']['p_ref'])} in
{lab['p_ref']} and {sci(cc['abs_diff']['kl_coef'])} in {lab['beta']} (tolerance $10^{{-8}}$):
{'passed' if cc['passed'] else 'FAILED'}. These are sampled checks in floating point, not proofs.

{_fold_limit_text(data)}

{_discrete_text(data)} {disc_sentence}

{disc_float}

{_criticality_text(data)}"""
    return "Two-parameter bifurcation atlas", body
