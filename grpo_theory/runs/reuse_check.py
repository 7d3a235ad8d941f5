r"""Reuse collapse before launch: does a window of passes over one batch stay in its trust region?

Chapter 10 of the theory (:mod:`grpo_theory.theory.reuse_collapse`) gives the mechanism: a
sample revisited :math:`P - 1` times in a window has its log-ratio pushed by its own gradient
at every revisit, :math:`\log\rho \approx (P - 1)\,\delta` with :math:`\delta` the per-pass *self
push* (in the bandit :math:`\delta = \eta\kappa A_{+} q_{\mathrm{old}}`, exactly linear for the
log-prob surrogate).  The window stays inside the trust region of its own batch while the
**trust-region number** :math:`T = (P - 1)\,\delta/\log(1 + \epsilon_{h}) < 1`.  Beyond it:

- with the clip, a sample stops pushing once its ratio leaves the clip region; on the bandit the
  window then stalls at :math:`p_{\mathrm{sat}}` (bounded), but in a network a clipped sample's
  log-probability keeps moving with the samples it shares parameters with: **at risk**;
- without the clip (the log-prob surrogate of REINFORCE-type losses, or the ratio surrogate with
  the clip removed) nothing bounds the batch's KL: it grows with every pass: **unstable**.

A window whose samples are used once (:math:`P = 1`, e.g. TRL ``steps_per_generation`` with
fresh mini-batches) never sees its own push in a ratio: the reuse criterion holds whatever the
number of steps per generation (the mean-field thresholds still apply).

:math:`\delta` is not in a config: it is :math:`\eta` times the sample's own tangent-kernel
diagonal (its gradient norm under the optimiser's metric), which only a run's ratio
statistics show.  :func:`self_push_from_log` measures it from an earlier run that revisits its
samples (:math:`P \ge 2`): from the KL to the sampling policy on the batch (verl
``actor/ppo_kl``) or from the clipped fraction, under the stated model of per-sample log-ratios.
"""

from __future__ import annotations

import math

import numpy as np

from grpo_theory.validate import ParameterError, check_int, check_real

__all__ = ["reuse_check", "self_push_from_log", "REFERENCE_CLIP"]

#: the trust-region width used for a loss without a clip (the conventional PPO/GRPO epsilon)
REFERENCE_CLIP = 0.2


def _norm_sf(x):
    return 0.5 * math.erfc(x / math.sqrt(2.0))


def _clip_fraction_model(delta, passes, clip):
    r"""Mean clipped fraction over a window of ``passes`` passes when a sample's log-ratio at pass
    :math:`p` is :math:`(p - 1)\,x`, :math:`x \sim N(0, \delta^{2})`: clipped once
    :math:`|(p-1)x| > \log(1 + \epsilon)`."""
    c = math.log1p(clip)
    return sum(2 * _norm_sf(c / ((p - 1) * delta)) if p > 1 else 0.0
               for p in range(1, passes + 1)) / passes


def _first_clip_pass(log, passes, window_batches, clip):
    """delta from the pass at which clipping first appears in each refresh window.

    With per-optimizer-step clipped fractions, step ``s`` (1-based, as TRL and verl count) is at
    position ``(s - 1) % k`` of its window, pass ``position // m + 1``.  A window whose first
    clipped step is at pass ``j >= 2`` had its samples' log-ratios reach ``log(1 + eps)`` within
    ``j - 1`` passes: ``delta ~ log(1 + eps) / (j - 1)``; a window never clipped over its ``P``
    passes bounds ``delta < log(1 + eps) / (P - 1)``.  Returns the median over windows (censored
    windows at their bound) with the quartiles, or ``None`` without per-step fractions.
    """
    name = log.role("clip_frac")
    if name is None:
        return None
    s, v = log.series(name)
    m = int(window_batches)
    k = passes * m
    if s.size < 2 * k or np.any(np.diff(s) != 1):
        return None
    c = math.log1p(clip)
    win = ((s - 1) // k).astype(int)
    est, censored = [], 0
    for w in np.unique(win):
        sel = win == w
        if sel.sum() < k:
            continue
        pas = ((s[sel] - 1) % k).astype(int) // m + 1
        hit = pas[(v[sel] > 0) & (pas >= 2)]
        if hit.size:
            est.append(c / (int(hit.min()) - 1))
        else:
            est.append(c / (passes - 1))
            censored += 1
    if not est:
        return None
    q1, med, q3 = np.percentile(est, [25, 50, 75])
    return {"value": float(med), "interval": [float(q1), float(q3)], "metric": name,
            "method": f"first clipped pass in each of {len(est)} refresh windows ({censored} never "
                      f"clipped, counted at the bound log(1 + {clip:g})/(P - 1)): "
                      "delta = log(1 + eps)/(j - 1)"}


def self_push_from_log(log, passes, *, clip=REFERENCE_CLIP, window_batches=1) -> dict | None:
    r"""Per-pass self push :math:`\delta` of a run that made ``passes`` passes over each batch.

    - from the pass at which clipping first appears in each window, where the clipped fraction
      is logged at every optimizer step (:func:`_first_clip_pass`; no distributional
      assumption);

    - from the KL to the sampling policy measured on the batch (``policy_lag_kl``, verl
      ``actor/ppo_kl``), averaged over the window's steps: with a sample's log-ratio
      :math:`(p-1)\,x` at pass :math:`p` and :math:`\mathrm{KL} \approx \tfrac12 E[(\log\rho)^2]`,
      :math:`\overline{\mathrm{KL}} = \delta^{2}(P-1)(2P-1)/12`;
    - else from the clipped fraction (``clip_frac``), inverting the same model with
      :math:`x \sim N(0, \delta^{2})` (:func:`_clip_fraction_model`).

    Returns ``{"value", "interval" (from the quartiles of the logged statistic), "metric",
    "method"}`` or ``None`` when the log has neither statistic, or ``passes < 2`` (a sample used
    once never shows its own push in a ratio).
    """
    P = check_int("passes", passes, low=1)
    if P < 2:
        return None
    first = _first_clip_pass(log, P, window_batches, clip)
    if first is not None:
        return first
    name = log.role("policy_lag_kl")
    if name is not None:
        _, v = log.series(name)
        v = np.abs(v[np.isfinite(v)])
        if v.size >= 3:
            q1, med, q3 = np.percentile(v, [25, 50, 75])
            f = lambda kl: math.sqrt(12.0 * kl / ((P - 1) * (2 * P - 1)))  # noqa: E731
            return {"value": f(med), "interval": [f(q1), f(q3)], "metric": name,
                    "method": "median KL to the sampling policy on the batch = "
                              "delta^2 (P - 1)(2P - 1)/12 (log-ratio (p - 1) x at pass p)"}
    name = log.role("clip_frac")
    if name is not None:
        _, v = log.series(name)
        v = v[np.isfinite(v)]
        if v.size >= 3:
            def invert(fr):
                if fr <= 0:
                    return 0.0
                lo, hi = 1e-9, 50.0
                if _clip_fraction_model(hi, P, clip) < fr:
                    return math.inf
                for _ in range(200):
                    mid = math.sqrt(lo * hi)
                    lo, hi = (mid, hi) if _clip_fraction_model(mid, P, clip) < fr else (lo, mid)
                return math.sqrt(lo * hi)
            mean = float(np.mean(v))
            se = float(np.std(v) / math.sqrt(v.size))
            return {"value": invert(mean), "interval": [invert(max(mean - 2 * se, 0.0)),
                                                        invert(mean + 2 * se)], "metric": name,
                    "method": "mean clipped fraction (+- 2 se) inverted for delta: log-ratio "
                              f"(p - 1) x at pass p, x ~ N(0, delta^2), clipped beyond "
                              f"log(1 + {clip:g})"}
    return None


def reuse_check(passes, *, surrogate="ratio", clip=None, self_push=None,
                self_push_interval=None, self_push_source="") -> dict:
    r"""The reuse-collapse criterion of a window (see the module docstring).

    ``passes``: passes over each sample per window (TRL ``num_iterations``, verl ``ppo_epochs``,
    CS336 ``epochs_per_rollout_batch``); ``surrogate``: ``"ratio"`` or ``"stale"`` (log-prob);
    ``clip``: ``(low, high)`` clip widths, ``None`` for no clip; ``self_push``: the per-pass self
    push :math:`\delta` (log-ratio per pass), with optional ``self_push_interval``.

    Returns ``{"passes", "revisits", "clipped", "clip_high", "self_push", "trust_region_number",
    "trust_region_interval", "passes_to_clip", "verdict", "reason", "assumptions"}``;
    ``verdict`` is ``"stable"``, ``"at risk"``, ``"unstable"`` or ``None`` (unknown).
    """
    from grpo_theory.theory.reuse_collapse import passes_to_clip, trust_region_number

    P = check_int("passes", passes, low=1)
    if surrogate not in ("ratio", "stale"):
        raise ParameterError("surrogate", surrogate, "'ratio' or 'stale'")
    clipped = surrogate == "ratio" and clip is not None
    eh = REFERENCE_CLIP
    if clipped:
        lo, hi = clip
        eh = check_real("clip high", hi, low=0, low_open=True)
    out = {"passes": P, "revisits": P - 1, "clipped": clipped, "clip_high": eh if clipped else None,
           "self_push": self_push, "self_push_source": self_push_source or None,
           "trust_region_number": None, "trust_region_interval": None, "passes_to_clip": None,
           "verdict": None, "reason": "", "assumptions": [
               "a sample's log-ratio grows by its own per-pass push delta at each revisit "
               "(theory chapter reuse_collapse: exact for the log-prob surrogate on the bandit)",
               "trust region log(1 + eps_high) of the clip" + ("" if clipped else
               f"; without a clip the conventional eps = {REFERENCE_CLIP:g} is the reference")]}
    if P == 1:
        out["verdict"] = "stable"
        out["trust_region_number"] = 0.0
        out["reason"] = ("each sample is used once per window: its own push never enters its "
                         "ratio, so the window stays in the trust region of its batch (the "
                         "mean-field thresholds still apply)")
        return out
    if self_push is None:
        if not clipped:
            out["verdict"] = "at risk"
            out["reason"] = (f"{P - 1} revisit(s) of every sample with no clip: nothing bounds the "
                             "batch's KL (it grows with every pass); how many passes it takes to "
                             "leave the trust region depends on the per-pass self push, not "
                             "measured")
        else:
            out["reason"] = (f"{P - 1} revisit(s) of every sample with the clip: whether the window "
                             "leaves the trust region depends on the per-pass self push delta, which "
                             "a config does not give (measure it with --from-log on a run that "
                             "revisits its samples and logs ppo_kl or the clipped fraction)")
        return out
    d = check_real("self_push", self_push, low=0)
    T = trust_region_number(P, d, eh)
    ends = [T]
    if self_push_interval is not None:
        lo_d, hi_d = (check_real("self_push interval", x, low=0) for x in self_push_interval)
        iv = [trust_region_number(P, lo_d, eh), trust_region_number(P, hi_d, eh)]
        out["trust_region_interval"] = iv
        ends = iv + [T]
    out["trust_region_number"] = T
    out["passes_to_clip"] = passes_to_clip(d, eh)
    if all(t < 1 for t in ends):
        out["verdict"] = "stable"
        out["reason"] = (f"(P - 1) delta = {(P - 1) * d:.3g} < log(1 + {eh:g}) = "
                         f"{math.log1p(eh):.3g}: the window stays in the trust region of its batch")
    elif all(t >= 1 for t in ends):
        out["verdict"] = "at risk" if clipped else "unstable"
        out["reason"] = (f"(P - 1) delta = {(P - 1) * d:.3g} >= log(1 + {eh:g}): the batch's samples "
                         f"leave the trust region after {1 + out['passes_to_clip']:.3g} passes; "
                         + ("the clip stops each sample's own push, but in a network its "
                            "log-probability keeps moving with the samples it shares "
                            "parameters with" if clipped else
                            "nothing stops the push: the batch's KL grows with every pass"))
    else:
        out["reason"] = "the trust-region number's interval straddles 1"
    return out
