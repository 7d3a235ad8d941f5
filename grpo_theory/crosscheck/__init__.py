r"""Cross-checks of the theory levels (L1 mean-field map, L2 exact discrete linearization,
L3 continuous oscillator, the noise model) against the direct GRPO simulation (L0).

What "verified" means here (``docs/theory.md``): "lambdified numerics agree with direct simulation: ensemble means within a
statistically justified band, variance ∝ 1/G within 10 %, stability threshold and
transition located where predicted.  Each comparison reports its numbers."

:func:`run_crosschecks` runs the checks of :data:`CHECKS` and returns a :class:`CrosscheckReport`.  Every
band is derived from the number of replications (standard errors of means over
independent runs, 4σ), plus, where stated, a *computed* model bias (never a hand-tuned
tolerance).  Every check simulates models (:func:`grpo_theory.simulation.simulate`) built
from :data:`~.base.BASE_MODEL` — the two-action bandit with p_ref = 0.3, std advantages
(ε_adv = 1e-4), exact KL with β = 2, the stale surrogate and G = 8, on-policy SGD — or from
a model of its own (the refresh threshold's KL-in-the-loss setting has β = 1: p* ≈ 0.737,
z* ≈ 1.031, K ≈ 0.293 per unit η, fresh fraction K_f/K ≈ 0.145).  Time is in optimizer
steps, z in logits.
"""

from __future__ import annotations

import numpy as np

from grpo_theory.crosscheck.adam import check_adam, check_adam_critical_damping
from grpo_theory.crosscheck.base import BASE_MODEL, N_SIGMA, Check, CrosscheckReport
from grpo_theory.crosscheck.batch_reuse import check_reuse_batch, check_reuse_fresh
from grpo_theory.crosscheck.collapse import check_collapse, check_collapse_reuse
from grpo_theory.crosscheck.damping_transition import check_damping_transition
from grpo_theory.crosscheck.group_temperature import check_group_temperature
from grpo_theory.crosscheck.k1_reward import check_k1_refresh_threshold
from grpo_theory.crosscheck.mean_trajectory import check_mean_trajectory
from grpo_theory.crosscheck.plateaus import check_plateaus
from grpo_theory.crosscheck.refresh_threshold import check_refresh_threshold
from grpo_theory.progress import progress as _progress
from grpo_theory.validate import check_int

__all__ = [
    "BASE_MODEL",
    "CHECKS",
    "N_SIGMA",
    "Check",
    "CrosscheckReport",
    "check_adam",
    "check_adam_critical_damping",
    "check_collapse",
    "check_collapse_reuse",
    "check_damping_transition",
    "check_group_temperature",
    "check_k1_refresh_threshold",
    "check_mean_trajectory",
    "check_plateaus",
    "check_refresh_threshold",
    "check_reuse_batch",
    "check_reuse_fresh",
    "run_crosschecks",
]

#: (name, function) in report order
CHECKS = [("mean_trajectory", check_mean_trajectory),
          ("group_temperature", check_group_temperature),
          ("refresh_threshold", check_refresh_threshold),
          ("damping_transition", check_damping_transition),
          ("plateaus", check_plateaus),
          ("adam", check_adam),
          ("adam_critical_damping", check_adam_critical_damping),
          ("reuse_fresh", check_reuse_fresh),
          ("reuse_batch", check_reuse_batch),
          ("collapse", check_collapse),
          ("collapse_reuse", check_collapse_reuse),
          ("k1_refresh_threshold", check_k1_refresh_threshold)]


def run_crosschecks(quick=True, seed=0, progress=None) -> CrosscheckReport:
    """Run every check; deterministic given ``seed`` (one SeedSequence child per check).

    ``quick=True``: small ensembles (< 60 s on 2 cores); ``quick=False``: the full run.
    ``progress``: None (a bar on a TTY), True or False.
    """
    seed = check_int("seed", seed, low=0)
    children = np.random.SeedSequence(seed).spawn(len(CHECKS))
    checks = []
    for (name, fn), ss in _progress(list(zip(CHECKS, children)), total=len(CHECKS),
                                    desc="crosschecks", enabled=progress):
        checks.append(fn(quick=quick, seed_seq=ss))
    return CrosscheckReport(checks=checks, quick=bool(quick), seed=seed)
