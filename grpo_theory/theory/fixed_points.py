r"""Fixed points of the mean-field drift, their stiffness, bifurcations in β, and Mroueh's recurrence.

A fixed point :math:`z^*` solves :math:`F(z^*, z^*) = 0`; it is stable for
small steps when the stiffness :math:`K = -dF/dz|_{z^*} > 0`.  The stiffness
splits into a part acting on the current iterate, :math:`K_f = -\partial_z F`,
and a part acting through the sampling policy, :math:`K_s = -\partial_{z_{\mathrm{old}}} F`;
off-policy lag acts on :math:`K_s` only.

Interior fixed points exist only where the KL force balances the advantage
force.  Since :math:`F = \kappa[\mathcal A(z) - \beta\Phi(z)]` is linear in
:math:`\beta`, fixed points are the level set :math:`\beta = B(z) := \mathcal A/\Phi`
and the bifurcation values of :math:`\beta` are the critical values of :math:`B`.
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass

import numpy as np
import sympy as sp
from grpo_theory.theory.lazy_scipy import brentq, expit

from grpo_theory.model import NORMALIZATIONS, SURROGATES, GRPOModel
from grpo_theory.results import Result, jsonable
from grpo_theory.theory import symbols as S
from grpo_theory.theory.derived import Derived, derivation, get, prove_zero, taylor
from grpo_theory.theory.printing import latex, root
from grpo_theory.theory.drift import (d_dz, drift_components, drift_expr, force_parts, on_policy,
                                      on_simplex)
from grpo_theory.validate import ParameterError, check_real

__all__ = [
    "FixedPoint",
    "fixed_points",
    "stable_fixed_point",
    "level_set",
    "bifurcations",
    "bifurcations_in_adv_eps",
    "mroueh_map",
    "mroueh_fixed_point",
    "mroueh_fixed_points",
    "compare_with_mroueh",
    "FixedPointsReport",
    "fixed_point_report",
]

_P, _Q, _PR, _QR = S.p, S.q_fail, S.p_ref, S.q_ref


# ----------------------------------------------------------------------------------
# derivations
# ----------------------------------------------------------------------------------

def _tex(e) -> str:
    """LaTeX of a sympy expression in the notation of the documents."""
    return latex(e)


def _z_of(p, q):
    return sp.log(p / q)


@derivation("fixed_points.mean_exact_location")
def _mean_exact_loc() -> Derived:
    F = on_policy(drift_expr("mean", "exact", "stale", finite=True))
    expr = S.z_ref + (1 - 1 / S.G) / S.beta
    out = Derived("fixed_points.mean_exact_location", expr, (S.z_ref, S.G, S.beta), "z^{*}",
                  "Unique interior fixed point for mean normalization with the analytic KL: the "
                  "amplified logit, exact at every finite $G$.", units="logits",
                  assumptions=r"$\beta > 0$", level="L1", references=("liu2025drgrpo",),
                  title="Fixed point, mean normalization with the analytic KL")
    expr = out.expr
    # F = kappa p q [(1 - 1/G) - beta (z - z_ref)] with z - z_ref = log(p/q) - log(p_ref/q_ref)
    Delta = sp.Symbol("Delta", real=True)
    reduced = sp.expand(sp.expand_log(F / (S.kappa * _P * _Q), force=True))
    reduced = reduced.subs(sp.log(_P), Delta + sp.log(_Q) + sp.log(_PR) - sp.log(_QR))
    reduced = sp.simplify(reduced)
    out.check(r"$\frac{F}{\kappa p q} = 1 - \frac{1}{G} - \beta (z - z_{\mathrm{ref}})$: affine in $z$",
              "sympy", prove_zero(reduced - ((1 - 1 / S.G) - S.beta * Delta)),
              rf"sympy reduces it to ${_tex(reduced)}$ with $\Delta = z - z_{{\mathrm{{ref}}}}$")
    out.check(r"it vanishes at $z^{*} = z_{\mathrm{ref}} + \frac{1 - 1/G}{\beta}$, and only there "
              r"(slope $-\beta < 0$)",
              "sympy", prove_zero(reduced.subs(Delta, expr - S.z_ref))
              and sp.diff(reduced, Delta) == -S.beta)
    return out


@derivation("fixed_points.mean_exact_stiffness")
def _mean_exact_stiff() -> Derived:
    F = on_policy(drift_expr("mean", "exact", "stale", finite=True))
    K_expr = -d_dz(F)
    zstar = get("fixed_points.mean_exact_location").expr
    # at the fixed point log(p/q) - log(p_ref/q_ref) = (1 - 1/G)/beta
    Kat = sp.expand_log(sp.expand(K_expr), force=True)
    Kat = Kat.subs(sp.log(_P), sp.log(_Q) + sp.log(_PR) - sp.log(_QR) + (zstar - S.z_ref))
    expr = S.kappa * S.beta * S.p_star * S.q_star
    out = Derived("fixed_points.mean_exact_stiffness", expr, (S.p_star, S.q_star, S.kappa, S.beta), "K",
                  r"Stiffness at the fixed point, mean normalization, analytic KL: the KL "
                  r"coefficient sets the restoring force.",
                  units="per unit learning rate", level="L1",
                  title="Stiffness, mean normalization with the analytic KL")
    expr = out.expr
    out.check(r"$-\mathrm{d}F/\mathrm{d}z$ at $z^{*}$ is this expression", "sympy",
              prove_zero(on_simplex(sp.simplify(Kat - expr.subs({S.p_star: _P, S.q_star: _Q})))))
    return out


@derivation("fixed_points.k1_reward_location")
def _k1_reward_loc() -> Derived:
    expr = S.z_ref + 1 / S.beta
    out = Derived("fixed_points.k1_reward_location", expr, (S.z_ref, S.beta), "z^{*}",
                  "Unique interior fixed point with the KL in the reward (k1, mean normalization): "
                  r"$z^{*} = z_{\mathrm{ref}} + 1/\beta$ at every $G$ and for both surrogates; there "
                  "the shifted rewards of both actions are equal, every advantage is zero.",
                  units="logits", assumptions=r"$\beta > 0$", level="L1",
                  references=("sheng2025hybridflow",),
                  title="Fixed point with the k1 KL in the reward")
    expr = out.expr
    Delta = sp.Symbol("Delta", real=True)   # z_old - z_ref
    for sur in SURROGATES:
        F = drift_expr("mean", "k1_reward", sur, finite=True)
        Fd = sp.expand_log(sp.expand(F), force=True)
        Fd = Fd.subs(sp.log(S.p_old), Delta + sp.log(S.q_old) + sp.log(_PR) - sp.log(_QR))
        kf = sp.expand_log(d_dz(F), force=True).subs(
            sp.log(S.p_old), Delta + sp.log(S.q_old) + sp.log(_PR) - sp.log(_QR))
        out.check(f"{sur} surrogate: " + r"$F = 0$ at $z_{\mathrm{old}} - z_{\mathrm{ref}} = 1/\beta$, "
                  r"and $K_{f} = -\partial F/\partial z = 0$ there",
                  "sympy", prove_zero(Fd.subs(Delta, expr - S.z_ref))
                  and prove_zero(kf.subs(Delta, expr - S.z_ref)))
    F = on_policy(drift_expr("mean", "k1_reward", "stale", finite=True))
    K_total = sp.expand_log(sp.expand(-d_dz(F)), force=True).subs(
        sp.log(_P), Delta + sp.log(_Q) + sp.log(_PR) - sp.log(_QR)).subs(Delta, expr - S.z_ref)
    out.check(r"the stiffness there is all stale: "
              r"$K = K_{s} = \kappa \beta (1 - 1/G)\, p^{*} q^{*}$", "sympy",
              prove_zero(on_simplex(K_total - S.kappa * S.beta * (1 - 1 / S.G) * _P * _Q)))
    return out


@derivation("fixed_points.std_exact_condition")
def _std_exact_cond() -> Derived:
    F = on_policy(drift_expr("std", "exact", "stale", finite=False))
    Delta = sp.Symbol("Delta", real=True)  # z - z_ref
    Fd = sp.expand_log(F, force=True).subs(sp.log(_P), Delta + sp.log(_Q) + sp.log(_PR) - sp.log(_QR))
    sol = sp.solve(sp.Eq(sp.simplify(Fd), 0), Delta)
    expr = 1 / (S.beta * (sp.sqrt(_P * _Q) + S.eps))
    out = Derived("fixed_points.std_exact_condition", expr, (_P, _Q, S.beta, S.eps),
                  r"z^{*} - z_{\mathrm{ref}}",
                  "Fixed-point condition for std normalization with the analytic KL at large $G$: "
                  "the amplification of the logit over the reference.", units="logits",
                  assumptions=r"$G \to \infty$", level="L1", references=("shao2024deepseekmath",),
                  title="Fixed-point condition, std normalization with the analytic KL, large $G$")
    expr = out.expr
    out.show(1 / (S.beta * (S.eps + S.sd_inf)), [(S.sd_inf, root(_P * _Q), "")])
    out.check(r"$F = 0 \iff z - z_{\mathrm{ref}} = 1/(\beta (\sqrt{p q} + \epsilon))$", "sympy",
              len(sol) == 1 and prove_zero(sol[0] - expr),
              f"the solutions from sympy's solve: ${_tex(sol)}$")
    return out


@derivation("fixed_points.mroueh_map")
def _mroueh_map() -> Derived:
    # QUOTED from Mroueh (arXiv 2503.06639), not derived here:
    expr = 1 / (1 + ((1 - _PR) / _PR) * sp.exp(-1 / (S.beta * sp.sqrt(_P * (1 - _P) + S.eps))))
    out = Derived("fixed_points.mroueh_map", expr, (_P, _PR, S.beta, S.eps), "p_{t+1}",
                  r"Mroueh's recurrence for the success probability: the next iterate $p_{t+1}$ from "
                  r"the current one $p = p_{t}$, for binary rewards, mean and std normalization and "
                  "a KL penalty to the reference (quoted from the literature).",
                  units="probability", assumptions="quoted, not derived here", level="literature",
                  references=("mroueh2025",), title="Mroueh's recurrence for the success probability")
    expr = out.expr
    z_next = S.z_next
    out.show(1 / (1 + sp.exp(-z_next)),
             [(z_next, S.z_ref + 1 / (S.beta * root(_P * (1 - _P) + S.eps)), ""),
              (S.z_ref, sp.log(_PR / (1 - _PR)), "notation")])
    odds = expr / (1 - expr)
    out.check(r"in logits the map reads $z_{t+1} = z_{\mathrm{ref}} + 1/(\beta \sqrt{p q + \epsilon})$ "
              r"(odds $p_{t+1}/(1 - p_{t+1}) = (p_{\mathrm{ref}}/q_{\mathrm{ref}}) "
              r"\exp(1/(\beta \sqrt{p q + \epsilon}))$)", "sympy",
              prove_zero(odds - _PR / (1 - _PR) * sp.exp(1 / (S.beta * sp.sqrt(_P * (1 - _P) + S.eps)))))
    return out


@derivation("fixed_points.mroueh_agreement")
def _mroueh_agree() -> Derived:
    ours = get("fixed_points.std_exact_condition").expr
    # Mroueh's fixed point p = f(p), read from the quoted map: in logits
    # z - z_ref = log(f/(1-f)) - log(p_ref/(1-p_ref)), taken from the record, not retyped
    f = get("fixed_points.mroueh_map").expr.subs(1 - _P, _Q)
    odds = sp.simplify(f / (1 - f))
    theirs = sp.simplify(sp.expand_log(sp.log(odds * (1 - _PR) / _PR), force=True))
    # the series in epsilon, taken in a stand-in h (sympy's series wants a plain symbol)
    derived = taylor((ours - theirs).subs(S.eps, S.h), S.h, 2).subs(S.h, S.eps)
    out = Derived("fixed_points.mroueh_agreement", sp.simplify(derived), (_P, _Q, S.beta, S.eps),
                  r"h_{\mathrm{here}}(p) - h_{\mathrm{Mroueh}}(p)",
                  r"Difference of the two fixed-point conditions at one $p$, written as "
                  r"$z - z_{\mathrm{ref}} = h_{\mathrm{here}}$ (std normalization and analytic KL, "
                  r"$G \to \infty$) and $z - z_{\mathrm{ref}} = h_{\mathrm{Mroueh}}$ (Mroueh's "
                  r"recurrence), to first order in $\epsilon$; not a difference of fixed points: "
                  r"zero at $\epsilon = 0$ (the variants coincide), "
                  r"$O(\epsilon)$ because $\epsilon$ is added outside the square root in TRL and verl and "
                  "inside it in Mroueh's.", units="logits",
                  assumptions=r"$G \to \infty$", level="L1",
                  references=("mroueh2025", "vonwerra2020trl", "sheng2025hybridflow"),
                  title="Agreement with Mroueh's fixed point")
    expr = out.expr
    out.show(S.eps * (1 - 2 * S.sd_inf) / (2 * S.beta * S.sd_inf**3), [(S.sd_inf, root(_P * _Q), "")])
    out.check(r"the logit of Mroueh's map is $z_{\mathrm{ref}} + 1/(\beta \sqrt{p q + \epsilon})$: "
              r"its fixed points satisfy $z - z_{\mathrm{ref}} = 1/(\beta \sqrt{p q + \epsilon})$",
              "sympy", prove_zero(theirs - 1 / (S.beta * sp.sqrt(_P * _Q + S.eps))),
              f"sympy gives ${_tex(theirs)}$")
    out.check(r"equals the first-order series in $\epsilon$ of ours minus Mroueh's (computed from the "
              "two results)", "sympy", prove_zero(expr - derived))
    out.check(r"at $\epsilon = 0$ the fixed-point conditions coincide exactly (our condition and "
              "the fixed point of Mroueh's map)", "sympy", prove_zero(expr.subs(S.eps, 0)))
    out.check(r"the first-order difference is nonzero (the placement of $\epsilon$ matters)", "sympy",
              not prove_zero(expr))
    return out


@derivation("fixed_points.stiffness_reward_invariance")
def _stiff_reward() -> Derived:
    f = sp.Function("F")
    pp = sp.Symbol("p", positive=True)
    g = pp * (1 - pp) * f(sp.log(pp / (1 - pp)))  # dp/dt = p (1-p) dz/dt
    dg = sp.diff(g, pp)
    zs = sp.Symbol("z_star", real=True)
    at = dg.subs(f(sp.log(pp / (1 - pp))), 0).doit()
    expr = -sp.Derivative(f(S.z), S.z)
    out = Derived("fixed_points.stiffness_reward_invariance", expr, (), "K_{p}",
                  r"Stiffness in reward coordinates: $-\mathrm{d}\dot{p}/\mathrm{d}p$ at a fixed point "
                  r"equals the logit stiffness $K$ (an eigenvalue is coordinate invariant).",
                  units="per step per unit learning rate", level="L1",
                  title="Stiffness in reward coordinates")
    expr = out.expr
    lhs = sp.simplify(-at)
    target = sp.Subs(expr.xreplace({S.z: zs}), zs, sp.log(pp / (1 - pp))).doit()
    # the detail shows sympy's result with its dummy variable named z
    subs = sorted(lhs.atoms(sp.Subs), key=sp.default_sort_key)
    shown = (rf"${_tex(lhs.xreplace({subs[0]: subs[0].expr.xreplace({subs[0].variables[0]: S.z})}))}$ "
             rf"at $z = {_tex(subs[0].point[0])}$") if len(subs) == 1 else f"${_tex(lhs)}$"
    out.check(r"$-\frac{\mathrm{d}}{\mathrm{d}p} \big[p (1 - p) F(z(p))\big] = -F'(z)$ wherever $F = 0$", "sympy",
              prove_zero(lhs - target), "sympy gives " + shown)
    del zs
    return out


# ----------------------------------------------------------------------------------
# numerics
# ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class FixedPoint:
    """An interior fixed point of the on-policy mean-field drift.

    ``p`` (reward), ``z`` (logit), ``stable`` (K > 0), ``stiffness`` K = -dF/dz
    (per unit learning rate; the spring constant is eta*K), split into
    ``stiffness_fresh`` (acts on the current iterate) and ``stiffness_stale``
    (acts through the sampling policy: the part off-policy lag delays), and
    ``fresh_fraction`` = K_f/K.
    """

    p: float
    z: float
    stable: bool
    stiffness: float
    stiffness_fresh: float
    stiffness_stale: float

    @property
    def fresh_fraction(self) -> float:
        return self.stiffness_fresh / self.stiffness if self.stiffness != 0 else float("nan")

    def to_dict(self) -> dict:
        out = asdict(self)
        out["fresh_fraction"] = self.fresh_fraction
        return jsonable(out)


def drift_model(model: GRPOModel) -> GRPOModel:
    """The fields the on-policy drift depends on (the others at their defaults): models with
    the same drift share their fixed points."""
    return GRPOModel(p_ref=model.p_ref, group_size=model.group_size,
                     normalization=model.normalization, adv_eps=model.adv_eps, kl=model.kl,
                     kl_coef=model.effective_kl_coef, surrogate=model.surrogate,
                     actions=model.actions, correct=model.correct)


#: largest logit whose failure probability 1 - p = e^{-z} is a normal double
_Z_REPRESENTABLE = 700.0


def _upper_bound(model: GRPOModel) -> float:
    r"""An upper bound on z* - z_ref for every interior fixed point (logits), from the drift.

    Below z_ref both forces push up, so no root lies there.  Above it: for std
    normalization at finite G each group's advantage mass obeys
    :math:`A_+(n) \le \sqrt{G}\,n(G-n)/G^2` (since :math:`n(G-n) \ge G-1`), so
    :math:`\mathcal A_G \le \sqrt{G}\,pq`; for mean normalization :math:`\mathcal A_G \le pq`;
    for std at :math:`G=\infty`, :math:`\mathcal A \le pq/\epsilon`.  With the exact KL force
    :math:`\beta pq(z - z_{ref})` the drift is negative beyond :math:`z_{ref} + c/\beta` with
    c the factor above; the k3 force :math:`\beta(p - p_{ref})` wins once
    :math:`q < \beta(p-p_{ref})/(c\,p)`, i.e. by :math:`z_{ref} + \log(c/(\beta(1-p_{ref}))) + 1`.
    The metric factor kappa multiplies both forces and drops out.  ``inf`` when nothing
    bounds the reward (no KL, or std at G = oo with epsilon = 0)."""
    beta, G = model.effective_kl_coef, model.group_size
    if beta == 0:
        return math.inf
    if model.normalization == "mean":
        c = 1.0
    elif G is not None:
        c = math.sqrt(G)
    elif model.adv_eps > 0:
        c = 1.0 / model.adv_eps
    else:
        return math.inf
    if model.kl == "k1_reward":   # the only root is z* = z_ref + 1/beta (proven)
        return 1.0 / beta + 1.0
    if model.kl == "exact":
        return 1.05 * c / beta + 1.0
    return math.log(c / (beta * (1 - model.p_ref))) + 1.0 - model.z_ref


def _span_for(span, model):
    """Widen the upper end of the search to the analytic bound on the fixed points
    (:func:`_upper_bound`), up to the largest representable logit (unchanged where no
    finite bound exists)."""
    lo, hi = span
    bound = _upper_bound(model)
    if math.isfinite(bound):
        hi = max(hi, min(_Z_REPRESENTABLE - model.z_ref, bound))
    return lo, hi


def _grid(z_ref, span=(-30.0, 60.0), points=6001):
    return z_ref + np.linspace(span[0], span[1], points)


def fixed_points(model: GRPOModel, *, span=(-30.0, 60.0)) -> list[FixedPoint]:
    """All interior fixed points of the model's on-policy drift in ``z_ref + span`` (logits),
    sorted by p (the upper end widened to the analytic bound on the fixed points).

    Roots of the exact on-policy drift are bracketed on a fine grid and
    polished with ``scipy.optimize.brentq`` (xtol 1e-13).  Tangential double
    roots (exactly at a bifurcation) are not reported.
    """
    return list(_fixed_points(drift_model(model), tuple(span)))


@functools.lru_cache(maxsize=512)
def _fixed_points(model: GRPOModel, span: tuple) -> tuple:
    span = _span_for(span, model)
    zg = _grid(model.z_ref, span, 6001 + int(span[1] - 60.0) * 4)
    F = drift_components(model, zg)["F"]
    out = []
    sign = np.sign(F)

    def point(zs):
        c = drift_components(model, zs)
        Kf, Ks = -float(c["dF_dz"]) + 0.0, -float(c["dF_dzold"]) + 0.0   # + 0.0: no "-0"
        return FixedPoint(p=float(expit(zs)), z=float(zs), stable=bool(Kf + Ks > 0),
                          stiffness=Kf + Ks, stiffness_fresh=Kf, stiffness_stale=Ks)

    for i in np.nonzero(sign[:-1] * sign[1:] < 0)[0]:
        zs = brentq(lambda zz: float(drift_components(model, zz)["F"]), zg[i], zg[i + 1],
                    xtol=1e-13, rtol=4 * np.finfo(float).eps)
        out.append(point(zs))
    for i in np.nonzero(sign == 0)[0]:
        out.append(point(zg[i]))
    return tuple(sorted(out, key=lambda fp: fp.p))


def stable_fixed_point(model: GRPOModel) -> FixedPoint:
    """The stable interior fixed point with the lowest reward (the one training from p_ref
    reaches), with its stiffness and fresh/stale split.

    Raises ``ParameterError`` when there is none (e.g. ``kl="none"``: the reward escapes to 1).
    """
    fps = [fp for fp in fixed_points(model) if fp.stable]
    if not fps:
        raise ParameterError("kl_coef", model.kl_coef,
                             "a value for which a stable interior fixed point exists "
                             "(here the reward escapes to p = 1; see `bifurcations`)")
    return fps[0]


def level_set(model: GRPOModel, z):
    r"""The fold test: :math:`(B(z), B'(z))` on the on-policy diagonal (arrays like ``z``).

    The drift is affine in :math:`\beta`, :math:`F = \kappa[\mathcal A - \beta\Phi]`, so the
    fixed points of every :math:`\beta` are the level set :math:`\beta = B(z) := \mathcal A/\Phi`
    (the model's ``kl_coef`` is not used); a saddle-node (fold) is a zero of :math:`B'`, and a
    point of the level set is stable where :math:`dF/dz = d\mathcal A - B\,d\Phi < 0`.  NaN
    where both forces underflow (extreme z)."""
    # one evaluation of the pieces: F = kappa [R A - beta Phi] (beta per unit kl_coef: 0 with
    # kl "none", where B is then undefined)
    kap, R, dR, dRo, Ad, dAd, Ph, dPh, dPho = force_parts(model, z)
    unit = 0.0 if model.kl == "none" else 1.0
    A = np.asarray(kap * R * Ad, float)
    dA = np.asarray(kap * (dR * Ad + dRo * Ad + R * dAd), float)
    Phi = np.asarray(kap * unit * Ph, float)
    dPhi = np.asarray(kap * unit * (dPh + dPho), float)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        B = A / Phi
        dB = (dA / Phi) - B * (dPhi / Phi)
    return np.where(np.isfinite(B), B, np.nan), np.where(np.isfinite(dB), dB, np.nan)


def bifurcations(model: GRPOModel, *, span=None, points=None) -> list[dict]:
    """Values of the KL coefficient beta where interior fixed points are born or vanish, for
    the model's variant at every beta (its ``kl_coef`` and ``surrogate`` are not used): the
    one fold scan.

    The saddle-node bifurcations are the critical values of :func:`level_set` B: sign
    changes of B' on the grid ``z_ref + (1e-3 .. span)`` (default: up to the analytic bound
    on the fixed points, at least 60 logits, ``points`` grid points scaled with it), refined
    by ``brentq``.  Returns dicts with ``kl_coef``, ``z``, ``p`` and ``kind``
    ("saddle-node"), sorted by beta.
    """
    if model.kl == "none":
        return []
    model = model.replace(surrogate="stale")
    if span is None:
        span = _span_for((-30.0, 60.0), model.replace(kl_coef=1e-2))[1]
    if points is None:
        points = 8001 + int(span - 60.0) * 20
    zg = _grid(model.z_ref, (1e-3, span), points)
    B, dB = level_set(model, zg)
    out = []
    s = np.sign(np.nan_to_num(dB, nan=0.0))
    for i in np.nonzero(s[:-1] * s[1:] < 0)[0]:
        zc = brentq(lambda zz: float(level_set(model, zz)[1]), zg[i], zg[i + 1], xtol=1e-13,
                    rtol=4 * np.finfo(float).eps)
        if not _is_fold(model, zc):
            continue
        out.append({"kl_coef": float(level_set(model, zc)[0]), "z": float(zc),
                    "p": float(expit(zc)), "kind": "saddle-node"})
    return sorted(out, key=lambda r: r["kl_coef"])


def _is_fold(model: GRPOModel, zc: float, h: float = 1e-2, rel: float = 1e-10) -> bool:
    """Whether the zero ``zc`` of B' is an extremum of the level set B (a fold), not a sign
    change of B' in rounding noise: where B is flat to machine precision (its asymptote at
    extreme p_ref, e.g. 1e-50, where B' is a difference of equal doubles) the grid sees many
    sign changes of B' and no fixed point is born or lost.  A fold has B(zc +- h) on the same
    side of B(zc), by more than ``rel`` relative (rounding is ~1e-16)."""
    B = level_set(model, np.array([zc - h, zc, zc + h]))[0]
    if not np.all(np.isfinite(B)):
        return False
    left, right = B[0] - B[1], B[2] - B[1]
    tol = rel * max(abs(B[1]), 1e-300)
    return left * right > 0 and min(abs(left), abs(right)) > tol


def bifurcations_in_adv_eps(model: GRPOModel, *, eps_range=(1e-6, 1.0), grid=60) -> list[dict]:
    """Values of the advantage epsilon where interior fixed points of the model (at its beta)
    are born or vanish.

    The number of interior fixed points is piecewise constant in epsilon; it is
    scanned on a log grid over ``eps_range`` and every change is located by
    bisection to a relative width of 1e-9; a change is kept only when a beta-bifurcation
    (:func:`bifurcations`) at that epsilon equals ``kl_coef``.  Returns dicts ``adv_eps``,
    ``count_below``, ``count_above`` and ``kind`` ("birth" or "death" as epsilon grows).
    """
    lo_e = check_real("eps_range[0]", eps_range[0], low=0, low_open=True)
    hi_e = check_real("eps_range[1]", eps_range[1], low=lo_e, low_open=True)
    kl_coef = model.effective_kl_coef

    def count(e):
        return len(fixed_points(model.replace(adv_eps=float(e))))

    es = np.geomspace(lo_e, hi_e, int(grid))
    counts = [count(e) for e in es]
    out = []
    for (e0, c0), (e1, c1) in zip(zip(es, counts), zip(es[1:], counts[1:])):
        if c0 == c1:
            continue
        a_, b_ = float(e0), float(e1)
        while b_ / a_ - 1 > 1e-9:
            mid = math.sqrt(a_ * b_)
            if count(mid) == c0:
                a_ = mid
            else:
                b_ = mid
        e_c = math.sqrt(a_ * b_)
        # a genuine bifurcation in epsilon at this beta is where a beta-bifurcation curve
        # passes through beta; count changes from a root entering or leaving the finite
        # search window (the high fixed point near z_ref + 1/(epsilon beta)) are discarded
        betas = [b["kl_coef"] for b in bifurcations(model.replace(adv_eps=e_c))]
        if not any(abs(b - kl_coef) <= 1e-5 * kl_coef for b in betas):
            continue
        out.append({"adv_eps": e_c, "count_below": c0, "count_above": c1,
                    "kind": "birth" if c1 > c0 else "death"})
    return out


def mroueh_map(model: GRPOModel, p):
    """Mroueh's recurrence p_n = f(p_{n-1}) (quoted from arXiv 2503.06639) at the model's
    p_ref, beta and epsilon, vectorised."""
    return get("fixed_points.mroueh_map").numeric(np.asarray(p, float), model.p_ref,
                                                  model.effective_kl_coef, model.adv_eps)


def mroueh_fixed_points(model: GRPOModel, *, span=60.0) -> list[float]:
    """Interior fixed points of Mroueh's recurrence at the model's p_ref, beta > 0 and
    epsilon, sorted (p = 1 is always a boundary one).

    Uses the proven logit form z = z_ref + 1/(beta sqrt(pq + eps)) of the map
    (``fixed_points.mroueh_map``): roots of (z - z_ref) beta sqrt(pq + eps) - 1,
    bracketed on a grid and polished with brentq.
    """
    beta, eps, z_ref = model.effective_kl_coef, model.adv_eps, model.z_ref
    if beta == 0:
        raise ParameterError("kl_coef", model.kl_coef, "a value > 0 (and kl not 'none') for "
                             "Mroueh's recurrence")

    def h(zz):      # overflows to +inf at huge beta: the sign, all the bracketing uses, is kept
        zz = np.asarray(zz, float)
        with np.errstate(over="ignore"):
            return (zz - z_ref) * beta * np.sqrt(expit(zz) * expit(-zz) + eps) - 1.0

    zg = z_ref + np.linspace(1e-9, span, 6001)
    hv = h(zg)
    roots = [brentq(lambda zz: float(h(zz)), zg[i], zg[i + 1], xtol=1e-14)
             for i in np.nonzero(np.sign(hv[:-1]) * np.sign(hv[1:]) < 0)[0]]
    return [float(expit(r)) for r in roots]


def mroueh_fixed_point(model: GRPOModel):
    """The lowest interior fixed point of Mroueh's recurrence (reached from p_ref), or None."""
    fps = mroueh_fixed_points(model)
    return fps[0] if fps else None


def compare_with_mroueh(model: GRPOModel) -> list[dict]:
    """The stable fixed point of every variant (std/mean normalization, exact/k3 KL, the
    model's G and G -> infinity) at the model's p_ref, beta and epsilon, next to Mroueh's.

    Returns rows ``{"variant", "group_size", "p_star", "mroueh_p_star", "difference"}``.
    The std + exact-KL variant at G -> infinity and epsilon = 0 coincides with
    Mroueh (proven in ``fixed_points.mroueh_agreement``); the others do not.
    """
    ref = mroueh_fixed_point(model)
    rows = []
    for norm in NORMALIZATIONS:
        for kl in ("exact", "k3"):
            for G in (model.group_size, None):
                try:
                    fp = stable_fixed_point(model.replace(normalization=norm, kl=kl, group_size=G,
                                                          surrogate="stale"))
                    ps = fp.p
                except ParameterError:
                    ps = None
                rows.append({"variant": f"{norm}+{kl}", "group_size": "inf" if G is None else G,
                             "p_star": ps, "mroueh_p_star": ref,
                             "difference": None if ps is None or ref is None else ps - ref})
    return rows


# ----------------------------------------------------------------------------------
# the report of `grpo-theory fixed-points`
# ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class FixedPointsReport(Result):
    """All interior fixed points of a model's variant with a one-line summary (bistability,
    the failure probability 1 - p* where p* rounds to 1), the beta bifurcations and Mroueh's
    fixed point.  JSON keys of ``grpo-theory fixed-points``."""

    model: GRPOModel
    fixed_points: tuple
    escapes_to_one: bool
    bifurcations: tuple
    adv_eps_bifurcations: tuple | None
    mroueh_fixed_point: float | None
    z_bound: float = math.inf

    @property
    def summary(self) -> str:
        fps = self.fixed_points
        if not fps and self.z_bound > _Z_REPRESENTABLE:
            return (f"no interior fixed point with z* < {_Z_REPRESENTABLE:g} (1 - p* > 1e-304); the "
                    f"analytic bound allows one up to z* = {self.z_bound:.4g}: the reward saturates "
                    f"beyond double precision")
        if not fps:
            return "no interior fixed point" + (" -- the reward escapes to p = 1"
                                                if self.escapes_to_one else "")
        stable = [fp for fp in fps if fp.stable]
        head = ("bistable: " if len(stable) > 1 else "") + ", ".join(
            f"{'stable' if fp.stable else 'unstable'} p* = {_p_text(fp)}" for fp in fps)
        return head + ("; above the largest the reward escapes to p = 1" if self.escapes_to_one
                       else "")

    def to_dict(self) -> dict:
        inputs = {k: v for k, v in self.model.to_dict().items() if k in self.model.variant()}
        return jsonable({
            "inputs": inputs,
            "fixed_points": [dict(fp.to_dict(), failure_probability=_failure(fp))
                             for fp in self.fixed_points],
            "summary": self.summary,
            "bistable": sum(fp.stable for fp in self.fixed_points) > 1,
            "escapes_to_one": self.escapes_to_one,
            "bifurcations": list(self.bifurcations),
            "adv_eps_bifurcations": None if self.adv_eps_bifurcations is None
            else list(self.adv_eps_bifurcations),
            "mroueh_fixed_point": self.mroueh_fixed_point,
            "z_bound": self.z_bound,
            "z_bound_exists": math.isfinite(self.z_bound),
            "notes": "stiffness per unit learning rate (the spring constant is eta*K); "
                     "stable means K > 0 (small steps); failure_probability = 1 - p* = "
                     "sigma(-z*) (exact where p* rounds to 1); z_bound null: nothing bounds the "
                     "reward; `grpo-theory stability` takes the same variant options and uses "
                     "the fresh/stale split.",
            "unused": list(self.model.unused_notes())})

    def __str__(self) -> str:
        lines = [f"variant: {self.model.variant_text()}", f"summary: {self.summary}"]
        for fp in self.fixed_points:
            lines.append(f"  p* = {_p_text(fp)}  z* = {fp.z:+.6f}  "
                         f"{'stable  ' if fp.stable else 'unstable'}  K = {fp.stiffness:.6g} "
                         f"(fresh {fp.stiffness_fresh:.4g}, stale {fp.stiffness_stale:.4g})")
        for b in self.bifurcations:
            lines.append(f"  bifurcation ({b['kind']}) at beta = {b['kl_coef']:.6g}, p = {b['p']:.6f}")
        for b in self.adv_eps_bifurcations or []:
            lines.append(f"  at adv_eps = {b['adv_eps']:.6g} fixed points: {b['count_below']} -> "
                         f"{b['count_above']} ({b['kind']} as epsilon grows)")
        if self.mroueh_fixed_point is not None:
            lines.append(f"  Mroueh's recurrence: lowest interior fixed point p = "
                         f"{self.mroueh_fixed_point:.6f}")
        lines += [f"note: {n}" for n in self.model.unused_notes()]
        return "\n".join(lines)


def _failure(fp) -> float:
    return float(expit(-fp.z))


def _p_text(fp) -> str:
    q = _failure(fp)
    return f"{fp.p:.6f}" if q > 1e-6 else f"1 - {q:.3g}"


def fixed_point_report(model: GRPOModel, *, eps_bifurcations=False) -> FixedPointsReport:
    """Fixed points of the model's variant, its bifurcations in beta (and optionally in
    epsilon) and Mroueh's point (what ``grpo-theory fixed-points`` prints)."""
    fps = fixed_points(model)
    bifs = bifurcations(model)
    mroueh = mroueh_fixed_point(model) if model.effective_kl_coef > 0 else None
    bound = _upper_bound(model)
    if math.isfinite(bound):
        escapes = False          # the drift is negative beyond z_ref + bound
    else:
        escapes = bool(drift_components(model, model.z_ref + 60.0)["F"] > 0)
    eps_bifs = None
    if eps_bifurcations and model.kl != "none":
        eps_bifs = tuple(bifurcations_in_adv_eps(model))
    return FixedPointsReport(model=model, fixed_points=tuple(fps), escapes_to_one=escapes,
                             bifurcations=tuple(bifs), adv_eps_bifurcations=eps_bifs,
                             mroueh_fixed_point=mroueh, z_bound=model.z_ref + bound)
