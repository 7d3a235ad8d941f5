"""The two-parameter bifurcation atlas as a section of ``equations.tex``."""

from __future__ import annotations

import sympy as sp

from grpo_theory.render.latex import math_label
from grpo_theory.theory import symbols as S
from grpo_theory.theory.atlas import ATLAS_MODEL

__all__ = ["atlas_section"]


def atlas_section(data) -> tuple[str, str]:
    """The atlas as a section of ``equations.tex`` (title, body): conditions printed by sympy,
    numbers and checks from :func:`grpo_theory.report.data.atlas_data`."""
    def tex(e):
        return sp.latex(e, symbol_names=S.LATEX_NAMES)

    Acal, Phi = sp.Function(r"\mathcal{A}"), sp.Function(r"\Phi")
    Bz = sp.Function("B")(S.z)
    cusp = data["p_ref_plane"]["cusp"]
    chk = data["checks"]
    g = data["group_size_plane"]
    disc = data["discrete"]
    lab = {k: math_label(k) for k in ("beta", "p_ref", "G", "z", "k", "mu", "a", "p")}
    fold_rows = "\n".join(
        f"({lab['beta']}, {lab[c['plane']]}) & {c.get('group_size', data['p_ref_plane']['group_size'])} & "
        f"{c.get('p_ref', g['p_ref']):.6g} & {c['kl_coef']:.12f} & {c['abs_diff']:.1e} & "
        f"{c['root_counts_minus_plus'][0]}, {c['root_counts_minus_plus'][1]} & "
        f"{'passed' if c['passed'] else 'FAILED'} \\\\" for c in chk["folds"])
    cc = chk["cusp"]
    cod = "; ".join([f"{lab['k']} = {p_['refresh_interval']:.6f}, {lab['a']} = {p_['eta_K']:.6f} "
                     f"(at {lab['mu']} = {disc['momentum']:g})" for p_ in disc["codim2_k"]]
                    + [f"{lab['mu']} = {p_['momentum']:.6f}, {lab['a']} = {p_['eta_K']:.6f} "
                       f"(at {lab['k']} = {disc['refresh_interval']})" for p_ in disc["codim2_mu"]])
    v = ATLAS_MODEL
    variant = (f"{'std-normalised' if v.normalization == 'std' else 'mean-centred'} advantages"
               + (f" with ${tex(S.eps)} = {v.adv_eps:g}$" if v.normalization == "std" else "")
               + f", the {'exact' if v.kl == 'exact' else v.kl} KL penalty and the "
               f"{v.surrogate} surrogate")
    body = f"""Variant: {variant}. Since the drift is affine in {lab['beta']}, the fixed points are the level set
\\begin{{equation*}}{tex(sp.Eq(S.beta, Acal(S.z) / Phi(S.z)))} =: {tex(Bz)},\\end{{equation*}}
a saddle-node (fold) is where ${tex(sp.Eq(sp.Derivative(Bz, S.z), 0))}$ (the fold test function), and the cusp,
where the bistable range closes, is where also ${tex(sp.Eq(sp.Derivative(Bz, (S.z, 2)), 0))}$.
The fold set in the ({lab['beta']}, {lab['p_ref']}) plane at {lab['G']} = {data['p_ref_plane']['group_size']} was
continued by pseudo-arclength (secant predictor, Newton corrector) and the cusp located by bisection
on the {lab['p_ref']} component of the tangent:
{lab['p_ref']} = {cusp['p_ref']:.10f}, {lab['beta']} = {cusp['kl_coef']:.10f}, {lab['p']}$^*$ = {cusp['p']:.8f}.
In the ({lab['beta']}, {lab['G']}) plane at {lab['p_ref']} = {g['p_ref']:g} the group size is an integer; the
folds were found for each {lab['G']} by bisection (Brent) on the fold test function: the plateau is bistable
from {lab['G']} = {g['first_bistable']} on (none at {lab['G']} = {g['last_monostable']}), so the cusp in
{lab['G']} lies between these two integers.

\\emph{{Independent checks}} (they never use the fold test function). Each fold: the number of roots of
the drift on a dense grid around the fold at {lab['beta']} shifted by $\\mp 10^{{-8}}\\max(1,{tex(S.beta)})$
(two on one side, none on the other) and the extremum of $B$ by derivative-free bounded Brent
minimisation (column: its difference from the continued fold).

\\begin{{tabular}}{{lrrrrrl}}
plane & {lab['G']} & {lab['p_ref']} & fold {lab['beta']} & $|\\Delta{lab['beta'][1:-1]}|$ & roots $-$, $+$ & check \\\\ \\hline
{fold_rows}
\\end{{tabular}}

The cusp solved independently from $B' = B'' = 0$ with derivatives from fourth-order finite differences
of $B$ alone: {lab['p_ref']} = {cc['independent']['p_ref']:.10f}, {lab['beta']} = {cc['independent']['kl_coef']:.10f};
differences {cc['abs_diff']['p_ref']:.1e} in {lab['p_ref']} and {cc['abs_diff']['kl_coef']:.1e} in {lab['beta']}
(tolerance $10^{{-8}}$): {'passed' if cc['passed'] else 'FAILED'}. These are sampled numeric checks in floating point,
not proofs.

\\emph{{The exact discrete map (L2).}} The flip (a real eigenvalue of the refresh-window monodromy at $-1$)
and complex-pair (Neimark--Sacker) boundaries meet at the codimension-two points {cod}
(bisection on the difference of the two thresholds)."""
    return "Two-parameter bifurcation atlas", body
