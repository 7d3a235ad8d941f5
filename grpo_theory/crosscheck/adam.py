"""Check 6 (information): Adam against its momentum-only reduction."""

from __future__ import annotations

import math

import numpy as np

from grpo_theory.theory import noise
from grpo_theory.theory.drift import update_variance
from grpo_theory.theory.fixed_points import stable_fixed_point
from grpo_theory.crosscheck.base import (N_SIGMA, Check, _sim, _variant, as_base, mean_field_trajectory, _stationary_var, _stationary_mean)


def check_adam(quick=True, seed_seq=None, base=None, learning_rate=0.01, betas=(0.9, 0.999)) -> Check:
    r"""Adam vs heavy ball with mu = beta1 and eta_eff = 2 eta (1 - beta1)/sigma.

    Approximation (stated): at stationarity F = 0, Adam's second moment of the logit
    gradient g_0 = -Δz/(2η) is E[g_0^2] = sigma^2/4 (sigma^2 = update_variance, per unit
    lr^2), its first moment is (1-beta1) times the heavy-ball buffer, so
    Δz = η(1-β1) B/sqrt(v) = η_eff B.  Bias corrections and the fluctuation of v are
    ignored; the reduction is claimed only near the fixed point (verdict "info").
    """
    base = as_base(base)
    seed_seq = seed_seq or np.random.SeedSequence(5)
    R = 400 if quick else 3000
    T = 1500 if quick else 4000
    var = _variant(base)
    fp = stable_fixed_point(**var)
    s2 = float(update_variance(fp.p, normalization=var["normalization"], kl=var["kl"],
                               group_size=var["group_size"], kl_coef=var["kl_coef"],
                               p_ref=var["p_ref"], adv_eps=var["adv_eps"]))
    b1 = betas[0]
    eta_eff = 2 * learning_rate * (1 - b1) / math.sqrt(s2)
    var_pred = noise.stationary_variance(eta_eff, b1, fp.stiffness, s2)
    res = _sim(seed_seq, steps=T, runs=R, learning_rate=learning_rate, optimizer="adam",
               adam_betas=tuple(betas), record=("z", "reward"), **base)
    t0 = T // 2
    var_meas, var_se, _ = _stationary_var(res.z, t0, 20)
    p_meas, p_se = _stationary_mean(res.reward, t0)
    # relaxation: L1 momentum map with eta_eff from p_ref vs the simulated mean
    z0 = math.log(var["p_ref"] / (1 - var["p_ref"]))
    Tm = min(T, 300)
    L1 = mean_field_trajectory(Tm, z0, eta_eff, b1, **var)
    m = res.mean("z")[:Tm + 1]
    rms_traj = float(np.sqrt(np.mean((m - L1) ** 2)))
    rel = (var_meas - var_pred) / var_pred
    notes = [f"sigma^2 = {s2:.4g}, eta_eff = 2 eta (1-beta1)/sigma = {eta_eff:.4g} (eta = "
             f"{learning_rate}, beta1 = {b1})",
             f"stationary Var z: predicted {var_pred:.4g}, Adam simulation {var_meas:.4g} ± "
             f"{var_se:.2g} (relative error {100 * rel:.1f}%)",
             f"plateau: fixed point {fp.p:.5f}, Adam {p_meas:.5f} ± {p_se:.2g}",
             f"mean trajectory from p_ref: RMS |sim - L1(eta_eff, mu=beta1)| = {rms_traj:.3g} "
             "logits over the first 300 steps (far from z* Adam's v is not sigma^2/4; "
             "information only)"]
    return Check(
        name="adam",
        description="Adam runs vs the momentum-only reduction (mu = beta1, eta_eff = 2 eta "
                    "(1-beta1)/sigma at stationarity): stationary Var z, plateau, trajectory",
        predicted=var_pred, measured=var_meas, error=var_meas - var_pred,
        band={"tolerance": N_SIGMA * var_se,
              "derivation": f"4 SE of the stationary variance (R={R} runs) - information only: "
                            "the reduction is an approximation, so the verdict is 'info'"},
        verdict="info",
        details={"units": "z in logits (variance logits^2)", "eta_eff": eta_eff,
                 "noise_variance": s2, "relative_error_variance": rel,
                 "within_4se": bool(abs(var_meas - var_pred) <= N_SIGMA * var_se),
                 "plateau_pred": fp.p, "plateau_meas": p_meas, "plateau_sem": p_se,
                 "rms_trajectory_error": rms_traj, "t": np.arange(Tm + 1),
                 "sim_mean": m, "L1_eta_eff": L1, "runs": R, "steps": T, "notes": notes})
