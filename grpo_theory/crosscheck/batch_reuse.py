"""Checks 7-8: stationary variance with fresh batches vs one batch reused per refresh window."""

from __future__ import annotations

import numpy as np

from grpo_theory.crosscheck.base import (
    N_SIGMA,
    Check,
    _stationary_var,
    as_base,
    band_reason,
    headline,
    heavy_ball,
    seed_of,
)
from grpo_theory.simulation import simulate
from grpo_theory.theory.noise import fluctuation

REFRESH_INTERVAL = 4
LEARNING_RATE = 0.1


def _check(reuse, quick, seed_seq, base):
    fresh = heavy_ball(as_base(base), LEARNING_RATE, 0.0, REFRESH_INTERVAL)
    models = {"fresh": fresh, "batch": fresh.replace(reuse="batch")}
    model = models[reuse]
    seed_seq = seed_seq or np.random.SeedSequence(7)
    R = 200 if quick else 800
    T = 3000 if quick else 6000
    pred = {mode: fluctuation(m) for mode, m in models.items()}
    if pred[reuse].stationary_variance_z is None:
        return Check(name=f"reuse_{reuse}",
                     description=rf"stationary $\operatorname{{Var}} z$, reuse {reuse}",
                     predicted=None, measured=None, error=None,
                     band={"derivation": "n/a: " + pred[reuse].reason}, verdict="n/a")
    res = simulate(model, steps=T, runs=R, record=("z",), seed=seed_of(seed_seq))
    t0 = T // 3
    # stride 7 is coprime to k = 4: the sampled times visit every phase of the window
    var, se, ts = _stationary_var(res.z, t0, 7)
    p = pred[reuse].stationary_variance_z
    ratio = pred["batch"].stationary_variance_z / pred["fresh"].stationary_variance_z
    notes = [(rf"$k = {REFRESH_INTERVAL}$, SGD $\eta = {LEARNING_RATE}$, $G = {model.group_size}$, "
              rf"$B = 1$: exact L2 $\operatorname{{Var}} z$ {p:.4g} (batch over fresh "
              f"{ratio:.3f}), simulation {var:.4g} ± {se:.2g} (relative error "
              f"{100 * (var - p) / p:+.1f} %)")]
    hl = headline("stationary variance of the logit $z$", "logits²",
                  f"{'one batch per window' if reuse == 'batch' else 'fresh batch per step'}, "
                  f"$k = {REFRESH_INTERVAL}$, SGD $\\eta = {LEARNING_RATE}$, $G = {model.group_size}$, "
                  f"{R} runs", p, var, [p - N_SIGMA * se, p + N_SIGMA * se], "L2 ± 4 SE")
    reason = band_reason(hl, "variance", f" (relative error {100 * (var - p) / p:+.1f} %)")
    return Check(
        name=f"reuse_{reuse}",
        description=(r"stationary $\operatorname{Var} z$ with "
                     + ("one batch reused by the $k$ steps of a window (TRL's number of "
                        "iterations)" if reuse == "batch" else "a fresh batch per step "
                        "from the window's old policy (TRL's steps per generation)")
                     + " vs the exact L2 window map"),
        predicted=p, measured=var, error=var - p,
        band={"tolerance": N_SIGMA * se,
              "derivation": f"4 SE of the phase-averaged variance over {R} independent runs"},
        verdict="pass" if abs(var - p) <= N_SIGMA * se else "fail", headline=hl, reason=reason,
        details={"units": "logits^2", "relative_error": (var - p) / p,
                 "predicted_batch_over_fresh": ratio, "runs": R, "steps": T,
                 "times": [int(ts[0]), int(ts[-1])], "notes": notes})


def check_reuse_fresh(quick=True, seed_seq=None, base=None) -> Check:
    """Fresh batches from the stale policy: Var z against the exact L2 prediction."""
    return _check("fresh", quick, seed_seq, base)


def check_reuse_batch(quick=True, seed_seq=None, base=None) -> Check:
    """One batch reused for the whole refresh window: Var z against the exact L2 prediction."""
    return _check("batch", quick, seed_seq, base)
