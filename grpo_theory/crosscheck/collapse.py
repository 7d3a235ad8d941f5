"""Check 9: fraction of runs collapsed to a degenerate policy by step T vs the first-passage model."""

from __future__ import annotations

import math

import numpy as np

from grpo_theory.crosscheck.base import N_SIGMA, Check, _sim
from grpo_theory.model import GRPOModel
from grpo_theory.theory.collapse import collapse_risk

#: std advantages, exact KL beta = 0.7, G = 8, on-policy SGD eta = 0.5: p* ~ 0.908, and the
#: degenerate level 1/(10G) = 0.0125 is a shallow basin depth (~4 noise temperatures) away.
COLLAPSE_MODEL = GRPOModel(p_ref=0.3, normalization="std", kl="exact", kl_coef=0.7,
                           group_size=8, adv_eps=1e-4, learning_rate=0.5, momentum=0.0)
STEPS = 400


def check_collapse(quick=True, seed_seq=None, base=None) -> Check:
    """Fraction of runs started at p* whose reward leaves [delta, 1 - delta] by step T."""
    model = COLLAPSE_MODEL if base is None else base
    seed_seq = seed_seq or np.random.SeedSequence(9)
    R = 2000 if quick else 8000
    risk = collapse_risk(model, steps=STEPS, knobs=False)
    if risk.probability is None:
        return Check(name="collapse", description="fraction collapsed by step T",
                     predicted=None, measured=None, error=None,
                     band={"derivation": "n/a: " + risk.reason}, verdict="n/a")
    v = model.variant()
    res = _sim(seed_seq, steps=STEPS, runs=R, learning_rate=model.learning_rate,
               p0=risk.p_star, record=("reward",),
               **{k: v[k] for k in ("p_ref", "normalization", "kl", "kl_coef", "group_size",
                                    "adv_eps", "surrogate")})
    p = res.reward
    d = risk.degenerate_level
    hit = ((p <= d) | (p >= 1 - d)).any(axis=1)
    measured = float(hit.mean())
    pred = risk.probability
    se = math.sqrt(pred * (1 - pred) / R)
    notes = [f"G = {model.group_size}, eta = {model.learning_rate}, beta = {model.kl_coef}: "
             f"p* = {risk.p_star:.4f}, degenerate level {d:.4g}, basin depth "
             f"{risk.basin_depth:.3g} noise temperatures, mean first passage "
             f"{risk.mean_first_passage_steps:.4g} steps",
             f"P(collapsed by T = {STEPS}): first-passage model {pred:.4f}, simulation "
             f"{measured:.4f} ({hit.sum()} of {R} runs)"]
    return Check(
        name="collapse",
        description="fraction of runs that reach a degenerate policy (p outside [delta, "
                    "1 - delta]) by step T, vs 1 - exp(-T/tau) with tau the mean first-passage "
                    "time of the diffusion with the exact finite-G drift and noise",
        predicted=pred, measured=measured, error=measured - pred,
        band={"tolerance": N_SIGMA * se,
              "derivation": f"4 binomial SE sqrt(P(1-P)/R) at the predicted P, R = {R} runs"},
        verdict="pass" if abs(measured - pred) <= N_SIGMA * se else "fail",
        details={"units": "probability", "tau": risk.mean_first_passage_steps,
                 "basin_depth": risk.basin_depth, "degenerate_level": d, "runs": R,
                 "steps": STEPS, "notes": notes})
