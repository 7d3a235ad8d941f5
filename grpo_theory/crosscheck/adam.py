"""Check 6: Adam against its self-consistent heavy-ball reduction (theory/adam.py)."""

from __future__ import annotations

import math

import numpy as np

from grpo_theory.crosscheck.base import (
    N_SIGMA,
    Check,
    _stationary_var,
    as_base,
    band_reason,
    g2,
    headline,
    heavy_ball,
    seed_of,
)
from grpo_theory.simulation import simulate
from grpo_theory.theory.printing import sci
from grpo_theory.theory.adam import adam_reduction, critical_learning_rate
from grpo_theory.theory.derived import get
from grpo_theory.theory.fixed_points import stable_fixed_point
from grpo_theory.theory.noise import noise_at_fixed_point

#: the stated criterion (variances within 10 %, see docs/crosscheck.md)
RELATIVE_TOLERANCE = 0.10


def _adam(base, learning_rate, betas):
    """The base variant on-policy with Adam at ``learning_rate`` and ``betas``."""
    return heavy_ball(as_base(base), learning_rate).replace(
        optimizer="adam", momentum=0.0, adam_beta1=betas[0], adam_beta2=betas[1])


def check_adam(quick=True, seed_seq=None, base=None, learning_rate=0.01, betas=(0.9, 0.999)) -> Check:
    r"""Stationary Var z of Adam runs started at the fixed point vs the reduction.

    Prediction: heavy ball with mu = beta1 and eta_eff = eta (1 - beta1)/sqrt(v), v the
    self-consistent stationary second moment (sigma^2 + K^2 Var z)/4.  The first-order
    reduction (v = sigma^2/4) is reported beside it.  The runs start at p* and are measured
    after 1/(1 - beta2) steps, so v_hat has forgotten the start.
    """
    model = _adam(base, learning_rate, betas)
    seed_seq = seed_seq or np.random.SeedSequence(5)
    R = 400 if quick else 3000
    b2 = betas[1]
    t0 = int(2 / (1 - b2))
    T = t0 + (1500 if quick else 4000)
    fp = stable_fixed_point(model)
    s2 = noise_at_fixed_point(model, fp)
    red = adam_reduction(model)
    res = simulate(model, steps=T, runs=R, p0=fp.p, record=("z",), seed=seed_of(seed_seq))
    var_meas, var_se, _ = _stationary_var(res.z, t0, 20)
    pred = red.stationary_variance_z
    rel = (var_meas - pred) / pred
    rel_first = (var_meas - red.first_order_variance_z) / red.first_order_variance_z
    notes = [(rf"$\sigma^{{2}} = {s2:.4g}$, $K = {fp.stiffness:.4g}$; $\eta = {learning_rate}$, "
              rf"first-moment decay $\mu = {betas[0]}$, $\beta_{{2}} = {betas[1]}$"),
             (rf"self-consistent second moment $v = {red.second_moment:.4g}$ (first order "
              rf"$\sigma^{{2}}/4 = {s2 / 4:.4g}$), $\eta_{{\mathrm{{eff}}}} = "
              f"{red.effective_learning_rate:.4g}$ (first order "
              f"{red.first_order_learning_rate:.4g})"),
             (rf"stationary $\operatorname{{Var}} z$: reduction {pred:.4g}, simulation "
              f"{var_meas:.4g} ± {var_se:.2g} (relative error {100 * rel:+.1f} %; first-order "
              f"reduction {100 * rel_first:+.1f} %)"),
             (r"measured from step $2/(1 - \beta_{2})$: within about $1/(1 - \beta_{2})$ steps "
              r"of a large-gradient transient $\hat v$ still remembers it (the former -21 % came "
              "from measuring there)")]
    tol = RELATIVE_TOLERANCE * pred
    hl = headline("stationary variance of the logit $z$ under Adam", "logits²",
                  f"Adam $\\eta = {learning_rate:g}$, $\\mu = {betas[0]:g}$, $\\beta_{{2}} = {betas[1]:g}$, "
                  f"from $p^*$, {R} runs", pred, var_meas, [pred - tol, pred + tol],
                  "reduction ± 10 %")
    reason = band_reason(hl, "variance", f" (4 SE = {g2(N_SIGMA * var_se)} is smaller; "
                                         f"relative error {100 * rel:+.1f} %)")
    return Check(
        name="adam",
        description=r"Adam runs vs the self-consistent heavy-ball reduction (momentum $\mu$ = Adam's first-moment decay rate, "
                    r"$\eta_{\theta}$ from the stationary second moment including the "
                    r"force fluctuation): $\operatorname{Var} z$",
        predicted=pred, measured=var_meas, error=var_meas - pred,
        band={"tolerance": RELATIVE_TOLERANCE * pred,
              "derivation": f"the stated 10 % criterion for variances (4 SE = "
                            f"{sci(N_SIGMA * var_se)} from {R} runs is smaller)"},
        verdict="pass" if abs(var_meas - pred) <= RELATIVE_TOLERANCE * pred else "fail",
        headline=hl, reason=reason,
        details={"units": "z in logits (variance logits^2)", "relative_error_variance": rel,
                 "relative_error_first_order": rel_first,
                 "eta_eff": red.effective_learning_rate, "second_moment": red.second_moment,
                 "noise_variance": s2, "runs": R, "steps": T, "notes": notes})


def check_adam_critical_damping(quick=True, seed_seq=None, base=None, betas=(0.9, 0.999)) -> Check:
    r"""Adam at the learning rate predicted to be critically damped: the measured step
    :math:`\hat a = (1+\mu)(1-\mathrm{AC}_1)` (from the lag-1 autocorrelation of the
    stationary deviations, AR(2) Yule-Walker) against :math:`a_c = (1-\sqrt{\mu})^2`."""
    model = _adam(base, as_base(base).learning_rate, betas)
    seed_seq = seed_seq or np.random.SeedSequence(6)
    R = 400 if quick else 2000
    t0 = int(2 / (1 - betas[1]))
    T = t0 + 2000
    fp = stable_fixed_point(model)
    eta_c = critical_learning_rate(model)
    a_c = float(get("adam.critical_step").numeric(betas[0]))
    res = simulate(model.replace(learning_rate=eta_c), steps=T, runs=R, p0=fp.p, record=("z",),
                   seed=seed_of(seed_seq))
    x = res.z[:, t0:]
    x = x - x.mean(axis=0)                 # deviations from the ensemble mean at each time
    num = (x[:, :-1] * x[:, 1:]).mean(axis=1)
    den = (x[:, :-1] ** 2).mean(axis=1)
    a_meas = float((1 + betas[0]) * (1 - num.sum() / den.sum()))
    se = float(((1 + betas[0]) * (1 - num / den)).std(ddof=1) / math.sqrt(R))
    notes = [(rf"predicted critical Adam learning rate $\eta_{{c}} = {eta_c:.4g}$ ($a_{{c}} = "
              rf"(1 - \sqrt{{\mu}})^{{2}} = {a_c:.4g}$); measured step there "
              f"{a_meas:.4g} ± {se:.2g} ({100 * (a_meas - a_c) / a_c:+.1f} %)")]
    rho_pred = 1 - a_c / (1 + betas[0])
    rho_meas = 1 - a_meas / (1 + betas[0])
    hl = headline(r"step $\eta_{\theta} K$ (the per-step contraction, from the lag-1 "
                  "autocorrelation $\\mathrm{AC}_{1}$ of $z$) at the predicted critical Adam learning rate",
                  "dimensionless",
                  f"Adam $\\eta = \\eta_c = {eta_c:.4g}$, $\\mu = {betas[0]:g}$, "
                  f"{R} runs", a_c, a_meas, [a_c - N_SIGMA * se, a_c + N_SIGMA * se],
                  "± 4 SE of the per-run estimates")
    reason = band_reason(hl, "step", f" (measured $\\mathrm{{AC}}_{{1}} = {rho_meas:.5f}$ against the "
                                     f"predicted ${rho_pred:.5f}$; the step is "
                                     f"$(1 + \\mu)(1 - \\mathrm{{AC}}_{{1}})$)")
    return Check(
        name="adam_critical_damping",
        description=r"Adam at the predicted critically damped learning rate: the step "
                    r"$\eta_{\theta} K$ measured from the lag-1 autocorrelation vs "
                    r"$(1 - \sqrt{\mu})^{2}$",
        predicted=a_c, measured=a_meas, error=a_meas - a_c,
        band={"tolerance": N_SIGMA * se,
              "derivation": f"4 SE of the per-run step estimates over {R} runs"},
        verdict="pass" if abs(a_meas - a_c) <= N_SIGMA * se else "fail",
        headline=hl, reason=reason,
        details={"units": "dimensionless step eta_eff K", "eta_critical": eta_c, "runs": R,
                 "steps": T, "notes": notes})
