"""Checks 9-10: fraction of runs collapsed to a degenerate policy by step T vs the first-passage
model, on-policy and with one batch reused for a refresh window of 4 steps."""

from __future__ import annotations

import math

import numpy as np

from grpo_theory.crosscheck.base import N_SIGMA, Check, band_reason, headline, seed_of
from grpo_theory.model import GRPOModel
from grpo_theory.simulation import simulate
from grpo_theory.theory.collapse import collapse_risk

#: std advantages, exact KL beta = 0.7, G = 8, on-policy SGD eta = 0.5: p* ~ 0.908, and the
#: degenerate level 1/(10G) = 0.0125 is a shallow basin depth (~4: the barrier of phi, the integral of drift over diffusion) away.
COLLAPSE_MODEL = GRPOModel(p_ref=0.3, normalization="std", kl="exact", kl_coef=0.7,
                           group_size=8, adv_eps=1e-4, learning_rate=0.5, momentum=0.0,
                           refresh_interval=1)
STEPS = 400
#: the same variant with eta = 0.25, k = 4 and one batch reused per window: lag and reuse
#: enter the model only through the exact L2 variance (an approximation off-policy)
COLLAPSE_REUSE_MODEL = COLLAPSE_MODEL.replace(learning_rate=0.25, refresh_interval=4,
                                              reuse="batch")
REUSE_STEPS = 1000


def check_collapse(quick=True, seed_seq=None, base=None) -> Check:
    """Fraction of on-policy runs started at p* whose reward leaves [delta, 1 - delta] by T."""
    return _check("collapse", COLLAPSE_MODEL if base is None else base, STEPS, quick,
                  seed_seq or np.random.SeedSequence(9))


def check_collapse_reuse(quick=True, seed_seq=None, base=None) -> Check:
    """The same with a refresh window of 4 steps sharing one batch."""
    return _check("collapse_reuse", COLLAPSE_REUSE_MODEL if base is None else base,
                  REUSE_STEPS, quick, seed_seq or np.random.SeedSequence(10))


def _check(name, model, steps, quick, seed_seq) -> Check:
    R = (2000 if quick else 8000) if model.refresh_interval == 1 else (1000 if quick else 4000)
    risk = collapse_risk(model, steps=steps, knobs=False)
    if risk.probability is None:
        return Check(name=name, description="fraction collapsed by step $T$",
                     predicted=None, measured=None, error=None,
                     band={"derivation": "n/a: " + risk.reason}, verdict="n/a")
    res = simulate(model, steps=steps, runs=R, p0=risk.p_star, record=("reward",),
                   seed=seed_of(seed_seq))
    p = res.reward
    d = risk.degenerate_level
    hit = ((p <= d) | (p >= 1 - d)).any(axis=1)
    measured = float(hit.mean())
    pred = risk.probability
    se = math.sqrt(pred * (1 - pred) / R)
    notes = [(rf"$G = {model.group_size}$, $\eta = {model.learning_rate}$, "
              rf"$\beta = {model.kl_coef}$, $k = {model.refresh_interval}$ ({model.reuse}): "
              f"$p^{{*}} = {risk.p_star:.4f}$, degenerate level {d:.4g}, basin depth "
              f"{risk.basin_depth:.3g} (barrier of drift over diffusion), mean first passage "
              f"{risk.mean_first_passage_steps:.4g} steps"),
             (f"probability of a collapse by step {steps}: first-passage model {pred:.4f}, "
              f"simulation {measured:.4f} ({hit.sum()} of {R} runs)")]
    hl = headline(f"fraction of runs collapsed by step {steps} "
                  f"($p$ outside $[{d:.4g}, {1 - d:.4g}]$)", "fraction of runs",
                  f"$G = {model.group_size}$, SGD $\\eta = {model.learning_rate:g}$, "
                  f"$\\beta = {model.kl_coef:g}$, $k = {model.refresh_interval}$"
                  + (f" ({model.reuse} reuse)" if model.refresh_interval > 1 else "")
                  + f", from $p^*$, {R} runs", pred, measured,
                  [pred - N_SIGMA * se, pred + N_SIGMA * se], "first-passage model ± 4 binomial SE")
    reason = band_reason(hl, "collapsed fraction", f" ({int(hit.sum())} of {R} runs; mean "
                                                   f"first passage {risk.mean_first_passage_steps:.4g} "
                                                   "steps)", units=False)
    return Check(
        name=name,
        description=r"fraction of runs that reach a degenerate policy ($p$ outside "
                    r"$[p_{\min}, 1 - p_{\min}]$) by step $T$, vs $1 - e^{-T/\tau}$ with $\tau$ the "
                    "mean first-passage time of the diffusion with the exact finite-$G$ drift "
                    "and noise",
        predicted=pred, measured=measured, error=measured - pred,
        band={"tolerance": N_SIGMA * se,
              "derivation": f"4 binomial standard errors at the predicted probability, over "
                            f"{R} runs"},
        verdict="pass" if abs(measured - pred) <= N_SIGMA * se else "fail", headline=hl,
        reason=reason,
        details={"units": "probability", "tau": risk.mean_first_passage_steps,
                 "basin_depth": risk.basin_depth, "degenerate_level": d, "runs": R,
                 "steps": steps, "notes": notes})
