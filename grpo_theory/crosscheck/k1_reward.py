"""Check 11: with the KL in the reward the refresh threshold is the all-stale one (K_fresh = 0)."""

from __future__ import annotations

import numpy as np

from grpo_theory.crosscheck.base import Check, band_reason, headline, heavy_ball, seed_of
from grpo_theory.model import GRPOModel
from grpo_theory.simulation import simulate
from grpo_theory.theory.printing import sci
from grpo_theory.theory.fixed_points import stable_fixed_point
from grpo_theory.theory.stability import stability

#: |z_T - z*| (logits) below which a run has contracted onto z*: without noise at z* a stable
#: run converges geometrically (1e-9 at the threshold k = 6 after 600 steps), an unstable one
#: stays O(0.1)
CONVERGED = 1e-6
#: mean normalization, k1 in the reward with beta = 0.5, SGD eta = 2, G = 8
K1_MODEL = GRPOModel(kl="k1_reward", normalization="mean", kl_coef=0.5, learning_rate=2.0,
                     momentum=0.0, refresh_interval=1)


def check_k1_refresh_threshold(quick=True, seed_seq=None, base=None) -> Check:
    r"""Largest refresh interval whose runs settle at :math:`z^* = z_{ref} + 1/\beta`.

    At :math:`z^*` every advantage vanishes, so the noise does too: a stable window map
    contracts every run onto :math:`z^*` (to round-off), an unstable one does not.  A
    refresh interval counts as stable when the median :math:`|z_T - z^*|` over the runs is
    below ``CONVERGED`` — k from 1 to the predicted threshold + 2.
    """
    model = K1_MODEL if base is None else base
    seed_seq = seed_seq or np.random.SeedSequence(11)
    R, T = (64, 600) if quick else (256, 1500)
    fp = stable_fixed_point(model)
    k_pred = stability(model).exact.max_stable_refresh_interval
    rows, children = [], seed_seq.spawn(k_pred + 2)
    for k, ss in zip(range(1, k_pred + 3), children):
        res = simulate(heavy_ball(model, model.learning_rate, 0.0, k), steps=T, runs=R,
                       record=("z",), seed=seed_of(ss))
        late = float(np.median(np.abs(res.z[:, T] - fp.z)))
        rows.append({"refresh_interval": k, "median_deviation_T": late,
                     "stable": late < CONVERGED})
    stable = [r["refresh_interval"] for r in rows if r["stable"]]
    k_meas = max(stable) if stable else 0
    consistent = stable == list(range(1, k_meas + 1))
    k3 = stability(model.replace(kl="k3")).exact
    k3_text = ("every refresh interval is stable: no threshold" if k3.stable_for_every_refresh_interval
               else rf"L2 $k_{{\max}} = {k3.max_stable_refresh_interval}$")
    notes = [(r"$z^{*} = z_{\mathrm{ref}} + 1/\beta = "
              rf"{fp.z:.4f}$, $K = {fp.stiffness:.4g}$ all stale ($K_{{f}} = "
              rf"{fp.stiffness_fresh + 0.0:g}$); $\eta = {model.learning_rate}$"),
             (rf"exact L2 threshold $k_{{\max}} = {k_pred}$; measured: runs contract onto "
              f"$z^{{*}}$ for $k = {', '.join(map(str, stable)) or 'none'}$ of $k = 1$ to "
              f"{k_pred + 2}"),
             f"the same variant with k3 in the loss (fresh KL force): {k3_text}"]
    hl = headline("largest stable refresh interval $k_{\\max}$", "steps",
                  f"KL in the reward (k1, all stale), mean advantages, $\\beta = {model.kl_coef:g}$, "
                  f"SGD $\\eta = {model.learning_rate:g}$, {R} runs", k_pred,
                  k_meas if consistent else None, [k_pred, k_pred], "exact agreement")
    if consistent:
        reason = band_reason(hl, "$k_{\\max}$", f" (runs contract onto $z^*$ at every "
                                                  f"$k \\le {k_meas}$, not at $k = {k_meas + 1}$)")
    else:
        reason = (f"the runs show no threshold: they contract at $k = "
                  f"{', '.join(map(str, stable))}$ but not at every smaller $k$")
    return Check(
        name="k1_refresh_threshold",
        description="KL in the reward: largest refresh interval whose runs contract onto "
                    r"$z^{*} = z_{\mathrm{ref}} + 1/\beta$, vs the exact L2 threshold with the "
                    "all-stale split",
        predicted=k_pred, measured=k_meas, error=k_meas - k_pred,
        band={"tolerance": 0, "derivation": "integer threshold: exact agreement required "
                                            f"({R} runs, {T} steps per $k$; a $k$ "
                                            "is stable when the median "
                                            rf"$|z - z^{{*}}|$ at the last step is below {sci(CONVERGED)})"},
        verdict="pass" if k_meas == k_pred and consistent else "fail", headline=hl, reason=reason,
        details={"units": "steps", "rows": rows, "notes": notes})
