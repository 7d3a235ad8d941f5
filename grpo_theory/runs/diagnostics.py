r"""Diagnostics of a GRPO run from its logged metrics (see docs/theory.md and docs/logs_and_fitting.md).

Each detector takes a :class:`~grpo_theory.runs.logs.TrainingLog` (a real log, or a
simulated run converted by :func:`grpo_theory.runs.logs.from_simulation`) and returns
``{"flag": bool, "score": float | None, "evidence": str, ...}``.  A metric that
is absent gives ``flag = False`` and evidence ``"metric X not in log"``; no
detector raises on missing data and no value is NaN (``None`` instead).

Detectors and their thresholds (justified in ``docs/logs_and_fitting.md``):

``advantage_degeneracy``
    Observed fraction of zero-variance groups :math:`q_t` against the
    homogeneous-difficulty prediction :math:`\bar p^G + (1-\bar p)^G` at the
    logged mean reward :math:`\bar p`.  By Jensen's inequality
    (:math:`p\mapsto p^G + (1-p)^G` is convex) heterogeneous prompts can only
    raise :math:`q`; the score is the mean excess.  Flag when the excess is
    > ``0.05`` and > 4 standard errors (autocorrelation-corrected).
``policy_concentration``
    Entropy lost *after* the reward reached 90 % of its rise (the fixed point in
    reward coordinates): score :math:`1 - H_{end}/H_{onset}`.  At a fixed point
    with a KL anchor every observable is stationary; a continuing entropy fall at
    constant reward is concentration not bought by reward.  Flag when > ``0.5``.
``reward_hacking``
    Gain of the training reward and of the held-out reward between the first and the
    last held-out evaluation, each against its noise (the held-out one binomial on the
    evaluation set, whose size is read off the lattice of the logged values).  The
    mean-field dynamics act on the prompt distribution, so a policy that improves on it
    improves held-out prompts of the same distribution.  Flag when the training gain
    exceeds 4 sd while the held-out gain stays below 2 of its sd (flat or falling).
``divergence``
    Unbounded growth of the policy's drift away from where it was, seen in the metrics
    that move before the reward falls: KL to the reference, entropy, response length,
    gradient norm, KL to the sampling policy.  A bounded relaxation decelerates and a
    steady drift is linear, so neither gains an e-fold within a tenth of the run above
    every level it reached before; runaway growth does (:func:`growth_scan`).  Flag when
    two channels do so in the same stretch of the run, one channel gains two e-folds, a
    training metric turns non-finite and stays so, the median response reaches the
    length cap (truncated fraction crossing one half), or the entropy rises an e-fold
    above its start.
``dynamical_instability``
    The damping ratio :math:`\zeta` of the L3 fit, plus growth of the detrended
    fluctuation and a late collapse of the reward.  Flag when the run is
    lightly damped (:math:`\zeta < 0.3`, near the stability boundary, with a first
    overshoot larger than 2 noise standard deviations), the late fluctuation is > 2× the mid-run one,
    or the reward falls from a (smoothed) peak reached after the first third of
    the run by more than 4 noise sd and 25 % of its rise; a diverging run (``divergence``)
    is dynamically unstable too, whether or not its reward has fallen yet.
``collapse``
    The reward collapsing: a rise then a fall of half of it (both > 4 noise sd); a fall to the
    floor (more than half of the start lost); for a run that starts high (no significant rise
    in the log: warm-started, resumed), a fall of its level below half of its highest level,
    the trough counting even if the run partly recovers; and, where the divergence detector
    has fired, a fall of the reward's mean across the divergence's onset by 4 standard errors
    of the difference of the two means (a smaller fall than 4 sd of one point: the other
    signals announce it).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass

import numpy as np

from grpo_theory.results import Result
from grpo_theory.runs.config_map import log_config_kind, map_config
from grpo_theory.runs.fitting import summarize_curve
from grpo_theory.runs.logs.base import finite_number as _num
from grpo_theory.runs.logs.base import step_number as _step
from grpo_theory.validate import ParameterError, check_int

__all__ = [
    "DETECTORS",
    "advantage_degeneracy",
    "policy_concentration",
    "reward_hacking",
    "dynamical_instability",
    "diagnose",
    "Diagnosis",
    "entropy_explosion",
    "degenerate_group_probability",
    "group_size_from_config",
    "divergence",
    "collapse",
    "growth_scan",
    "eval_set_size",
    "DIVERGENCE_CHANNELS",
    "alternation",
]

_GROUP_KEYS = ("group_size", "num_generations", "actor_rollout_ref.rollout.n", "rollout.n",
               "G")



#: what a detector's score measures, where "score" alone would not say (the terminal line)
SCORE_TEXT = {"reward_hacking": "training z - held-out z = {:.3g}"}


def _result(flag, score, evidence, *, missing=None, first_step=None, knob=None, **extra):
    """One detector's answer; ``flag`` is ``None`` when the check cannot run (``missing`` says why)."""
    out = {"flag": None if flag is None else bool(flag), "score": _num(score),
           "missing": missing, "evidence": evidence, "first_step": _step(first_step),
           "knob": knob}
    for k, v in extra.items():
        if isinstance(v, (float, int, np.floating, np.integer)) and not isinstance(v, bool):
            out[k] = _num(v)
        else:
            out[k] = v
    return out


def _absent(name, what):
    return _result(None, None, f"n/a: metric {what} not in log", missing=what)


def _na(reason, missing):
    return _result(None, None, f"n/a: {reason}", missing=missing)


def _first_crossing(steps, values, threshold):
    """First step at which ``values`` exceeds ``threshold`` (``None`` if never)."""
    hit = np.nonzero(np.asarray(values, dtype=float) > threshold)[0]
    return float(steps[hit[0]]) if hit.size else None


def degenerate_group_probability(p, group_size):
    r"""Probability that a group of ``group_size`` binary rewards has zero variance.

    :math:`P_{deg} = p^G + (1-p)^G` (all correct or all wrong) at success
    probability ``p`` — from :func:`grpo_theory.theory.drift.degenerate_probability` (the
    core's derived expression).
    """
    from grpo_theory.theory.drift import degenerate_probability

    return np.asarray(degenerate_probability(p, group_size), dtype=float)


def group_size_from_config(config: dict):
    """``G`` from a log's config (TRL ``num_generations``, verl ``rollout.n``), else ``None``."""
    for key in _GROUP_KEYS:
        if key in config:
            try:
                return int(config[key])
            except (TypeError, ValueError):
                continue
    for key, value in config.items():
        if key.endswith("rollout.n"):
            try:
                return int(value)
            except (TypeError, ValueError):
                continue
    return None


def _smooth(values, window):
    """Centred rolling median (odd window, shrinking at the ends)."""
    v = np.asarray(values, dtype=float)
    w = max(1, int(window) | 1)
    if w <= 1 or v.size < 3:
        return v.copy()
    h = w // 2
    out = np.empty_like(v)
    if v.size > 2 * h:         # the full windows at once; the shrinking ones at the ends
        out[h: v.size - h] = np.median(np.lib.stride_tricks.sliding_window_view(v, 2 * h + 1), axis=1)
    for i in [*range(min(h, v.size)), *range(max(h, v.size - h), v.size)]:
        out[i] = np.median(v[max(0, i - h): i + h + 1])
    return out


def _window(n):
    """Smoothing window: ~1 % of the run (odd, >= 3) — short enough to keep a 10-step rise."""
    return max(3, (n // 100) | 1)


def _effective_n(x):
    """Number of independent samples for the mean of an AR(1)-like series."""
    x = np.asarray(x, dtype=float)
    n = x.size
    if n < 3 or np.std(x) == 0:
        return float(n)
    d = x - x.mean()
    rho = float(np.sum(d[1:] * d[:-1]) / np.sum(d * d))
    rho = min(max(rho, 0.0), 0.99)
    return max(1.0, n * (1 - rho) / (1 + rho))


def _onset_index(steps, reward, fraction=0.9):
    """Index at which the smoothed reward first covers ``fraction`` of its rise."""
    s = _smooth(reward, _window(reward.size))
    k = max(1, reward.size // 20)
    r0, r1 = float(np.median(reward[:min(3, reward.size)])), float(np.median(s[-k:]))
    if r1 == r0:
        return 0
    target = r0 + fraction * (r1 - r0)
    sign = 1.0 if r1 > r0 else -1.0
    hit = np.nonzero(sign * (s - target) >= 0)[0]
    return int(hit[0]) if hit.size else reward.size - 1


# ----------------------------------------------------------------------------------
# Detectors
# ----------------------------------------------------------------------------------

def advantage_degeneracy(log, reward_metric=None, group_size=None, *, threshold=0.05,
                         dead_fraction=0.5):
    """Zero-variance groups: observed fraction, and its excess over p^G + (1-p)^G when G is known."""
    zname = log.role("zero_var_frac")
    if zname is None:
        return _absent("advantage_degeneracy", "zero-variance-group fraction "
                       "(frac_reward_zero_std / zero_var_frac)")
    zs, zv = log.series(zname)
    ok = np.isfinite(zv)
    zs, zv = zs[ok], zv[ok]
    if zs.size < 10:        # the minimum of the other trend detectors (policy_concentration)
        return _na(f"fewer than 10 logged values of {zname} ({zs.size})", zname)
    knob = ("group size G (num_generations / rollout.n): raise it, or filter prompts that are "
            "always solved or never solved (dynamic sampling)")
    qsm = _smooth(zv, _window(zv.size))
    k = max(1, zv.size // 10)
    late_obs = float(np.mean(zv[-k:]))
    # more than half of the groups carry no gradient: the effective batch is halved
    dead = late_obs > dead_fraction
    first = _first_crossing(zs, qsm, dead_fraction)
    G = group_size if group_size is not None else group_size_from_config(log.config)
    ev = (f"{zname}: last 10 % of steps {late_obs:.3f} of groups carry no gradient "
          f"(flag above {dead_fraction:g})")
    if G is None:
        return _result(dead, late_obs, ev + "; group size unknown, so the excess over the "
                       "homogeneous prediction p^G + (1-p)^G is not computed",
                       first_step=first if dead else None, knob=knob, late_observed=late_obs)
    G = check_int("group_size", G, low=2)
    try:
        rname = log.reward_metric(reward_metric)
    except ParameterError:
        return _result(dead, late_obs, ev + "; no reward metric for the predicted fraction",
                       first_step=first if dead else None, knob=knob, late_observed=late_obs)
    rs, rv = log.series(rname)
    common, iz, ir = np.intersect1d(zs, rs, return_indices=True)
    if common.size < 3 or np.nanmin(rv) < 0 or np.nanmax(rv) > 1:
        return _result(dead, late_obs, ev + "; reward not in [0, 1] on common steps: the "
                       "binary prediction p^G + (1-p)^G does not apply",
                       first_step=first if dead else None, knob=knob, late_observed=late_obs)
    q = zv[iz]
    pred = degenerate_group_probability(rv[ir], G)
    excess = q - pred
    mean_excess = float(np.mean(excess))
    se = float(np.std(excess, ddof=1) / math.sqrt(_effective_n(excess)))
    hetero = mean_excess > threshold and mean_excess > 4 * se
    flag = dead or hetero
    if hetero and not dead:
        first = _first_crossing(common, _smooth(excess, _window(excess.size)), threshold)
    ev += (f"; observed {np.mean(q):.3f} vs predicted {np.mean(pred):.3f} "
           f"(p^G + (1-p)^G at the logged mean reward, G = {G}); excess {mean_excess:+.3f} "
           f"± {se:.3f}")
    if hetero:
        ev += "; excess = heterogeneous prompt difficulty (easy/impossible prompts)"
    return _result(flag, late_obs, ev, first_step=first if flag else None, knob=knob,
                   observed=float(np.mean(q)), predicted=float(np.mean(pred)), excess=mean_excess,
                   stderr=se, late_observed=late_obs, group_size=G, threshold=threshold)


#: An e-fold of entropy lost (H_end < H_start / e) reads as policy concentration.
ENTROPY_EFOLD = 1.0 - math.exp(-1.0)


def _entropy_series(log):
    hname = log.role("entropy")
    if hname is None:
        return None, None, None
    hs, hv = log.series(hname)
    ok = np.isfinite(hv)
    return hname, hs[ok], hv[ok]


def policy_concentration(log, reward_metric=None, *, threshold=ENTROPY_EFOLD):
    """Entropy lost relative to the start of the run (an e-fold flags), with the reward bought."""
    hname, hs, hv = _entropy_series(log)
    if hname is None:
        return _absent("policy_concentration", "entropy")
    if hs.size < 10:
        return _na(f"fewer than 10 logged values of {hname}", hname)
    hsm = _smooth(hv, _window(hv.size))
    k = max(1, hs.size // 10)
    h_start = float(np.median(hv[:min(3, hs.size)]))
    h_end = float(np.median(hv[-k:]))
    if not h_start > 0:
        return _na(f"{hname} at the start is {h_start:.3g} (not positive): the loss relative to "
                   "the start is undefined", hname)
    score = 1.0 - h_end / h_start
    flag = score > threshold
    first = _first_crossing(hs, -hsm, -h_start * (1 - threshold)) if flag else None
    ev = (f"{hname}: {h_start:.4g} at the start, {h_end:.4g} at the end: {100 * score:.0f} % "
          f"lost (flag above {100 * threshold:.0f} %, one e-fold)")
    try:
        from grpo_theory.runs.curves import curve_gain, gain_basis

        rname = log.reward_metric(reward_metric)
        rs, rv = log.series(rname)
        if rs.size >= 3:
            g = curve_gain(rv)
            ev += (f"; reward {rname} gained {g['gain']:+.3g} ± {g['gain_sd']:.2g} over the run "
                   f"({gain_basis(g)})")
    except ParameterError:
        pass
    return _result(flag, score, ev, first_step=first,
                   knob="beta (KL to the reference), e.g. 0.04; or a lower learning rate",
                   entropy_start=h_start, entropy_end=h_end, threshold=threshold)


def entropy_explosion(log, reward_metric=None, *, factor=math.e):
    """Entropy rising an e-fold above its start, or re-expanding an e-fold above its lowest
    level after having concentrated and ending above its start: the policy spreading out."""
    hname, hs, hv = _entropy_series(log)
    if hname is None:
        return _absent("entropy_explosion", "entropy")
    if hs.size < 10:
        return _na(f"fewer than 10 logged values of {hname}", hname)
    hsm = _smooth(hv, _window(hv.size))
    k0 = min(3, hs.size)
    h_start = float(np.median(hv[:k0]))
    if not h_start > 0:
        return _na(f"{hname} at the start is {h_start:.3g} (not positive)", hname)
    # the rise is measured after the start window (a first value far above the start median,
    # e.g. an entropy falling fast from ln 2, is the start, not an explosion)
    after = hsm[k0:] if hs.size > k0 else hsm
    score = float(np.max(after)) / h_start
    flag = score > factor
    first = _first_crossing(hs[k0:], after, factor * h_start) if flag else None
    # re-expansion: after concentrating, the entropy climbs an e-fold above its running minimum
    # and the run ends above where it started (a bump that comes back down is bounded)
    run_min = np.minimum.accumulate(after)
    rebound = after / np.maximum(run_min, 1e-300)
    k = max(1, hs.size // 20)
    end = float(np.median(hv[-k:]))
    re_exp = bool(np.max(rebound) > factor and end > h_start)
    if re_exp and not flag:
        i = int(np.nonzero(rebound > factor)[0][0])
        first = float(hs[k0 + i])
    ev = (f"{hname}: {h_start:.4g} at the start, smoothed maximum after it {np.max(after):.4g} "
          f"({score:.2f}x), largest rise above its running minimum {np.max(rebound):.2f}x, "
          f"{end:.4g} at the end (flag: e-fold {factor:.2f}x above the start, or above the "
          f"running minimum while ending above the start)")
    return _result(flag or re_exp, score, ev, first_step=first,
                   knob="learning rate (halve it) or the clip epsilon (e.g. 0.2)",
                   rebound=float(np.max(rebound)))


#: Name prefixes of held-out metrics (a reward under one of them is not a training reward).
_HELDOUT_PREFIXES = ("val", "eval", "test", "heldout")
#: Largest evaluation-set size searched for when the held-out values' lattice is inferred.
EVAL_LATTICE_MAX = 100_000


def eval_set_size(values):
    r"""Number of trials behind a held-out success rate, from the lattice of its logged values.

    An accuracy on :math:`n` problems (or mean@k on :math:`n/k` of them) is a multiple of
    :math:`1/n`; the smallest :math:`n \le` :data:`EVAL_LATTICE_MAX` that puts every logged value
    on that lattice (to float precision) is returned.  ``None`` when no such :math:`n` exists,
    when fewer than 3 distinct values are logged, or when the lattice is only the printing
    precision (:math:`n = 10^d` with every value written with at most :math:`d` decimals, e.g.
    ``0.648``): the true set size is then not recoverable.
    """
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    if x.size < 3 or np.unique(x).size < 3 or np.any(x < 0) or np.any(x > 1):
        return None
    frac = x[(x > 0) & (x < 1)]
    if frac.size == 0:
        return None
    for start in range(2, EVAL_LATTICE_MAX + 1, 4096):     # candidates in blocks, smallest first
        ns = np.arange(start, min(start + 4096, EVAL_LATTICE_MAX + 1), dtype=float)[:, None]
        k = frac[None, :] * ns
        on = np.all(np.abs(k - np.round(k)) <= 1e-9 * ns, axis=1)
        if on.any():
            n = int(ns[np.argmax(on), 0])
            d = round(math.log10(n))
            if 10 ** d == n and np.all(np.abs(frac * 10 ** d - np.round(frac * 10 ** d)) < 1e-9 * n):
                return None          # the printing grid, not the evaluation set
            return n
    return None


def reward_hacking(log, reward_metric=None, *, min_evaluations=5, z=4.0, flat=2.0):
    r"""Training reward rising while the held-out reward stays flat, against their noise.

    Both gains are taken between the first and the last held-out evaluation (means of the first
    and last quarter of the evaluations; of the training reward over a tenth of the run around
    the same steps).  The held-out noise is binomial, :math:`\sqrt{v(1-v)/n}` per evaluation with
    :math:`n` the evaluation set's size (:func:`eval_set_size`, from the lattice of the logged
    values); where the lattice is not recoverable, the step-to-step spread of the evaluations
    (lag-1 differences, which also holds real change: fewer flags).  The training noise is the
    lag-1 spread of the training reward.  Flag when the training gain exceeds ``z`` = 4 sd while
    the held-out gain is below ``flat`` = 2 of its sd (flat or falling): the mean-field drift acts
    on the prompt distribution, so a gain on it shows on held-out prompts of the same
    distribution unless it is not a gain on the task.
    """
    try:
        rname = log.reward_metric(reward_metric)
    except ParameterError:
        return _absent("reward_hacking", "reward")
    vname = log.role("val_reward")
    if vname is None or vname == rname:
        return _absent("reward_hacking", "held-out reward (eval_*/val/*) next to the training reward")
    if rname.lower().startswith(_HELDOUT_PREFIXES):
        return _na(f"the reward metric {rname} is itself a held-out one: no training reward to "
                   "compare it with", "training reward")
    rs, rv = log.series(rname)
    vs, vv = log.series(vname)
    if vs.size < min_evaluations or rs.size < 10:
        return _na(f"{vs.size} held-out evaluations ({vname}), need >= {min_evaluations}; "
                   f"{rs.size} training rewards, need >= 10", vname)
    inside = (vs >= rs[0]) & (vs <= rs[-1])
    vs, vv = vs[inside], vv[inside]
    if vs.size < min_evaluations:
        return _na(f"{vs.size} held-out evaluations inside the logged training steps, need >= "
                   f"{min_evaluations}", vname)
    m = max(1, vs.size // 4)
    g_v = float(np.mean(vv[-m:]) - np.mean(vv[:m]))
    n_eval = eval_set_size(vv)
    if n_eval is not None:
        p = float(np.clip(np.mean(vv), 1.0 / n_eval, 1 - 1.0 / n_eval))
        sd_eval = math.sqrt(p * (1 - p) / n_eval)
        noise_src = f"binomial on {n_eval} trials (the lattice of the logged values)"
    else:
        sd_eval = float(np.std(np.diff(vv)) / math.sqrt(2.0))
        noise_src = "lag-1 spread of the evaluations (set size not recoverable from the values)"
    sd_gv = sd_eval * math.sqrt(2.0 / m) or 1e-12
    half = max(1, rs.size // 20)

    def around(step):
        i = int(np.searchsorted(rs, step))
        return rv[max(0, i - half): i + half + 1]

    a, b = around(vs[:m].mean()), around(vs[-m:].mean())
    g_t = float(np.mean(b) - np.mean(a))
    sd_t = float(np.std(np.diff(rv)) / math.sqrt(2.0))
    sd_gt = sd_t * math.sqrt(1.0 / a.size + 1.0 / b.size) or 1e-12
    zt, zv = g_t / sd_gt, g_v / sd_gv
    flag = zt > z and zv < flat
    first = None
    if flag:   # the first evaluation from which the held-out reward no longer follows
        for j in range(m, vs.size):
            tj = float(np.mean(around(vs[j])) - np.mean(a))
            vj = float(vv[j] - np.mean(vv[:m]))
            if tj / sd_gt > z and vj / (sd_eval * math.sqrt(1 + 1.0 / m)) < flat:
                first = float(vs[j])
                break
    same_scale = (np.nanmin(rv) >= 0 and np.nanmax(rv) <= 1)
    gap = (g_t - g_v) / math.hypot(sd_gt, sd_gv) if same_scale else None
    ev = (f"from the first {m} held-out evaluations (steps {vs[0]:g}-{vs[m - 1]:g}) to the last "
          f"{m} (steps {vs[-m]:g}-{vs[-1]:g}): training {rname} around them "
          f"gained {g_t:+.3g} ± {sd_gt:.2g} ({zt:+.1f} sd), held-out {vname} {g_v:+.3g} ± "
          f"{sd_gv:.2g} ({zv:+.1f} sd; noise: {noise_src})"
          + (f"; divergence of the two {gap:+.1f} sd" if gap is not None else "")
          + f" (flag: training > {z:g} sd while held-out < {flat:g} sd)")
    return _result(flag, zt - zv, ev, first_step=first,
                   knob="beta (KL to the reference), e.g. 0.04; stop at the held-out peak; check "
                        "the reward function for exploitable shortcuts",
                   train_gain=g_t, train_gain_sd=sd_gt, heldout_gain=g_v, heldout_gain_sd=sd_gv,
                   eval_set_size=n_eval, divergence_sd=gap)


#: Metrics whose runaway growth marks a diverging run: role -> what it measures.
DIVERGENCE_CHANNELS = {
    "kl": "KL to the reference",
    "entropy": "entropy",
    "response_length": "response length",
    "grad_norm": "gradient norm",
    "policy_lag_kl": "KL to the sampling policy",
}
#: Roles whose non-finite values (after finite ones) mean the numbers blew up.
_FINITE_ROLES = ("reward", "kl", "entropy", "grad_norm", "policy_lag_kl")
#: Fewest logged values for the growth scan (warm-up, history and window of >= 3 points each).
GROWTH_MIN_POINTS = 12


def growth_scan(steps, values, *, factor=math.e):
    r"""Largest rise of a positive series above every level it reached before (its new territory).

    The series is smoothed by a centred rolling median (window ~5 % of the run) so that isolated
    spikes do not count.  The first tenth of the run (the transient away from the initial policy,
    where a KL starts from 0) is excluded from the history; from then on, at each point
    :math:`t` the smoothed value :math:`\tilde x_t` is compared with the highest smoothed value
    of the history :math:`[w_0, t - w]`, :math:`w` a tenth of the run:
    :math:`r_t = \tilde x_t / \max_{w_0 \le s \le t-w}\tilde x_s`.  A relaxation to a plateau
    (decelerating) never exceeds 1 by much; a drift growing like :math:`t^d` gains at most
    :math:`1.5^d` (2.25 for a quadratic; the scan starts at :math:`t = 3w`, so the history holds
    at least :math:`w + 1` points); growth faster than an e-fold per
    tenth of the run gains more than ``factor`` = e.  The rise must also exceed 4 noise sd (the
    step-to-step noise of the history, lag-1 differences).

    Returns ``{"ratio", "step" (first point where the ratio exceeds ``factor``, else ``None``),
    "step_max", "index", "window", "reference", "peak", "noise"}`` or ``None`` when the series
    has fewer than :data:`GROWTH_MIN_POINTS` positive values.
    """
    s = np.asarray(steps, dtype=float)
    v = np.abs(np.asarray(values, dtype=float))
    ok = np.isfinite(v)
    s, v = s[ok], v[ok]
    n = v.size
    if n < GROWTH_MIN_POINTS or not np.any(v > 0):
        return None
    w = max(3, n // 10)
    sm = _smooth(v, max(3, (n // 20) | 1))
    noise = float(np.std(np.diff(v[w: n - w])) / math.sqrt(2.0)) if n - 2 * w >= 3 else 0.0
    best = {"ratio": 0.0, "step": None, "step_max": None, "index": None, "window": w,
            "reference": None, "peak": None, "noise": noise}
    run_max = float(np.max(sm[w: 2 * w]))
    for t in range(3 * w, n):
        run_max = max(run_max, float(sm[t - w]))          # history [w, t - w], >= w + 1 points
        if run_max <= 0:
            continue
        r = float(sm[t]) / run_max
        significant = float(sm[t]) - run_max > 4.0 * noise
        if r > factor and significant and best["step"] is None:
            best["step"] = float(s[t])
            best["index"] = t
        if r > best["ratio"] and (significant or r <= factor):
            best.update(ratio=r, step_max=float(s[t]), reference=run_max, peak=float(sm[t]))
    return best


#: A finite value this many e-folds above the series' 90th percentile is a numerical blow-up
#: (overflow scale): 10 e-folds (x 2.2e4), two orders of magnitude above the largest isolated
#: spike of a healthy log in the benchmark (a gradient norm x 63 its 90th percentile).  Only
#: for unbounded quantities (KL, gradient norm, loss), never for entropy or reward.
BLOWUP_EFOLDS = 10.0
_UNBOUNDED_ROLES = ("kl", "grad_norm", "policy_lag_kl")


def _nonfinite(log):
    """Training metrics whose numbers blow up: non-finite after finite values, or overflow-scale.

    Returns ``{name: (step, kind)}``.  Non-finite: two values in a row, or a single last one in a
    series that had already blown up (a lone NaN at the end is otherwise a logging convention,
    e.g. the update metrics of a simulation's last step).  Overflow-scale: a finite value more
    than :data:`BLOWUP_EFOLDS` e-folds above the 90th percentile of the series' absolute values
    (KL, gradient norm, loss only: robust to a series that collapses towards 0).
    """
    out = {}
    unbounded = {log.role(r) for r in _UNBOUNDED_ROLES} | {n for n in log.names if n.endswith("loss")}
    names = {log.role(r) for r in _FINITE_ROLES} | unbounded
    for name in sorted(n for n in names if n is not None):
        s, v = log.series(name, dropna=False)
        fin_mask = np.isfinite(v)
        fin = np.abs(v[fin_mask])
        if fin.size < 3:
            continue
        top = float(np.percentile(fin, 90))
        huge = (np.nonzero(fin_mask & (np.abs(np.nan_to_num(v, nan=0.0, posinf=0.0, neginf=0.0))
                                       > math.exp(BLOWUP_EFOLDS) * top))[0]
                if top > 0 and name in unbounded else [])
        bad = ~fin_mask
        good = np.nonzero(fin_mask)[0]
        if len(huge):
            out[name] = (float(s[huge[0]]), "overflow-scale value")
        if not bad[good[0]:].any():
            continue
        first = int(good[0] + np.argmax(bad[good[0]:]))
        run = int(np.argmin(bad[first:])) if not bad[first:].all() else v.size - first
        if run >= 2 or (len(huge) and huge[0] < first):
            out.setdefault(name, (float(s[first]), "non-finite"))
    return out


def _truncation(log):
    """The median response reaching the length cap: truncated fraction crossing one half."""
    name = log.role("truncation_frac")
    if name is None:
        return None, None
    s, v = log.series(name)
    if v.size < GROWTH_MIN_POINTS or np.nanmin(v) < 0 or np.nanmax(v) > 1:
        return None, None
    sm = _smooth(v, max(3, (v.size // 20) | 1))
    k = max(3, v.size // 10)
    start = float(np.median(v[:k]))
    noise = float(np.std(np.diff(v)) / math.sqrt(2.0))
    late = sm[k:]
    ev = (f"{name}: {start:.2f} of the responses truncated at the start, at most "
          f"{np.max(late):.2f} later (smoothed)")
    # after the start, the smoothed fraction crosses one half and stays above it for half a
    # start window (or to the end): the median response sits at the cap, not a blip
    above = late > 0.5
    for i in np.nonzero(above)[0]:
        hold = above[i:i + max(2, k // 2)]
        if hold.all() and start < 0.5 and float(late[i]) - start > 4 * noise:
            return float(s[k + i]), ev + " (> 0.5: the median response hits the length cap)"
    return None, ev


def divergence(log, reward_metric=None, *, factor=math.e):
    """Runaway growth of KL, entropy, response length, gradient norm; blow-up; length saturation."""
    channels, parts = {}, []
    for role, what in DIVERGENCE_CHANNELS.items():
        name = log.role(role)
        if name is None:
            continue
        s, v = log.series(name)
        g = growth_scan(s, v, factor=factor)
        if g is None:
            continue
        channels[name] = g
        parts.append(f"{name} {g['ratio']:.2f}x" + (f" (e-fold at step {g['step']:g})"
                                                    if g["step"] is not None else ""))
    nonfinite = _nonfinite(log)
    trunc_step, trunc_ev = _truncation(log)
    hname, hs, hv = _entropy_series(log)
    ent_step = None
    if hname is not None and hs.size >= 10:
        k0 = min(3, hs.size)
        h0 = float(np.median(hv[:k0]))
        if h0 > 0:       # after the start window, as in entropy_explosion
            ent_step = _first_crossing(hs[k0:], _smooth(hv, _window(hv.size))[k0:], factor * h0)
    if not channels and not nonfinite and trunc_ev is None and ent_step is None:
        present = {n: int(np.sum(np.isfinite(log.series(n)[1]))) for n in
                   filter(None, (log.role(r) for r in (*DIVERGENCE_CHANNELS, "truncation_frac")))}
        if not present:
            return _absent("divergence", "KL, entropy, response length, gradient norm or "
                           "truncation fraction")
        return _na("; ".join(f"{n}: {c} finite values" + (
            f" (the growth scan needs >= {GROWTH_MIN_POINTS})" if c < GROWTH_MIN_POINTS else
            ", all zero") for n, c in present.items()),
                   "too few usable values of KL, entropy, response length, gradient norm or "
                   "truncation fraction")
    crossed = {n: g for n, g in channels.items() if g["step"] is not None}
    strong = {n: g for n, g in channels.items() if g["ratio"] > factor * factor and g["step"] is not None}
    reasons, firsts = [], []
    names = sorted(crossed, key=lambda n: crossed[n]["index"])
    for i, a in enumerate(names):       # two channels gaining an e-fold in the same stretch
        for b in names[i + 1:]:
            if abs(crossed[a]["index"] - crossed[b]["index"]) <= 2 * max(crossed[a]["window"],
                                                                       crossed[b]["window"]):
                reasons.append(f"{a} and {b} both gained an e-fold above every earlier level")
                firsts.append(max(crossed[a]["step"], crossed[b]["step"]))
    for n, g in strong.items():
        reasons.append(f"{n} gained two e-folds ({g['ratio']:.1f}x) above every earlier level")
        firsts.append(g["step"])
    for n, (st, kind) in nonfinite.items():
        reasons.append(f"{n} blew up at step {st:g} ({kind})")
        firsts.append(st)
    if trunc_step is not None:
        reasons.append("the median response reached the length cap")
        firsts.append(trunc_step)
    if ent_step is not None:
        reasons.append(f"{hname} rose an e-fold above its start")
        firsts.append(ent_step)
    flag = bool(reasons)
    score = max((g["ratio"] for g in channels.values()), default=None)
    ev = ("new territory within a tenth of the run (flag: two channels > e-fold, or one > "
          "e-fold^2): " + (", ".join(parts) if parts else "no channel with enough values"))
    if trunc_ev:
        ev += "; " + trunc_ev
    if nonfinite:
        ev += "; blow-up: " + ", ".join(f"{n} at step {st:g} ({kind})"
                                         for n, (st, kind) in nonfinite.items())
    if reasons:
        ev += "; diverging: " + "; ".join(reasons)
    knob = ("learning rate (halve it); one pass per batch (num_iterations / ppo_epochs = 1) with "
            "the clip on (epsilon 0.2); a KL anchor (beta > 0)")
    if trunc_step is not None:
        knob += "; the length cap or an overlong penalty"
    return _result(flag, score, ev, first_step=min(firsts) if firsts else None, knob=knob,
                   channels={n: {k: g[k] for k in ("ratio", "step", "step_max")}
                             for n, g in channels.items()},
                   blow_up={n: {"step": st, "kind": kind} for n, (st, kind) in nonfinite.items()},
                   truncation_step=trunc_step, reasons=reasons)


#: Significance of the alternation test (as the growth F-test): a false alarm in 1e3 noise logs.
ALTERNATION_ALPHA = 1e-3
#: Window eigenvalue magnitude implied by the alternation, |lambda| = 1 - 1/V, from which a
#: flip-flop counts as instability: at least half of a deviation carries over, flipped, to the
#: next window (a stationary flip-flop with eigenvalue -|lambda| has V = 1/(1 - |lambda|); past
#: the threshold the flip grows until the nonlinearity saturates it, which caps V -- the lab's
#: unstable runs show |lambda| 0.65-0.98, its stable ones at most 0.4).  A choice, stated.
ALTERNATION_EDGE = 0.5
#: Monte-Carlo draws of white noise for the alternation test's null distribution (its mean and
#: sd; the tail is the normal one), and the longest lag tried.
_ALT_DRAWS = 1000
_ALT_MAX_LAG = 24


def _alternation_ratio(x, lag):
    """mean (x_{t+L} - x_t)^2 / mean (x_{t+2L} - x_t)^2: 1 for white noise, < 1 for a trend, >> 1
    when deviations flip sign every L points."""
    d1 = x[..., lag:] - x[..., :-lag]
    d2 = x[..., 2 * lag:] - x[..., :-2 * lag]
    return np.mean(d1 * d1, axis=-1) / np.maximum(np.mean(d2 * d2, axis=-1), 1e-300)


def _alternation_lags(n):
    """The lags :func:`alternation` tries on ``n`` points: 1 to min(n/6, 24), each leaving at
    least 5 differences at twice the lag."""
    return [L for L in range(1, min(n // 6, _ALT_MAX_LAG) + 1) if n - 2 * L >= 5]


@functools.lru_cache(maxsize=64)
def _alternation_null(n):
    r"""The white-noise null of :func:`alternation` for logs of ``n`` points: ``{L: (mean,
    sd)}`` of :math:`\log V_L` over the fixed-seed draws, for every lag it can try (the same
    for every log of that length, so computed once per length)."""
    z = np.random.default_rng(0).standard_normal((_ALT_DRAWS, n))
    out = {}
    for L in _alternation_lags(n):
        null = np.log(_alternation_ratio(z, L))
        out[L] = (float(np.mean(null)), float(np.std(null)))
    return out


def alternation(steps, values, *, alpha=ALTERNATION_ALPHA, edge=ALTERNATION_EDGE):
    r"""Deviations that flip sign every :math:`L` points: the signature of a window eigenvalue at
    or beyond :math:`-1` (L2 chapter: a real eigenvalue crossing :math:`-1`, or a complex pair near
    it), where the deviation from the fixed point changes sign every refresh window.

    For each lag :math:`L = 1, \dots, \min(n/6, 24)` the ratio
    :math:`V_L = \overline{(x_{t+L} - x_t)^2} / \overline{(x_{t+2L} - x_t)^2}` is 1 for white
    noise, below 1 for a trend and far above 1 for a sign flip every :math:`L` points.  Its
    p-value comes from white-noise logs of the same length (Monte Carlo, fixed seed): the null
    of :math:`\log V_L` is close to normal, so the tail beyond the draws is the normal tail with
    the draws' mean and sd; it is corrected for the number of lags tried (Bonferroni).  A
    stationary flip-flop driven by a window eigenvalue :math:`-|\lambda|` has
    :math:`V = 1/(1 - |\lambda|)`, so :math:`|\hat\lambda| = 1 - 1/V`; ``alternating`` when the
    corrected p-value is below ``alpha`` *and* :math:`|\hat\lambda| \ge` ``edge`` = 0.5 (half a
    deviation or more carried over, flipped, to the next window: a lightly damped but stable
    oscillation, e.g. heavy-ball momentum's, gives a significant but small :math:`V`).
    :math:`V < 1` (a trend) reads as :math:`|\hat\lambda| = 0`.  Returns ``{"alternating", "lag",
    "lag_steps", "ratio", "eigenvalue", "p_value"}`` or ``None`` for fewer than 12 points.
    """
    x = np.asarray(values, dtype=float)
    s = np.asarray(steps, dtype=float)
    ok = np.isfinite(x)
    x, s = x[ok], s[ok]
    n = x.size
    lags = _alternation_lags(n)
    if n < 12 or np.std(x) == 0 or not lags:
        return None
    null = _alternation_null(n)
    best = (1.0, None, None)
    for L in lags:
        obs = float(_alternation_ratio(x, L))
        m, sd = null[L]
        p = 0.5 * math.erfc((math.log(max(obs, 1e-300)) - m) / (sd * math.sqrt(2.0))) if sd > 0 else 1.0
        if p < best[0] or best[1] is None:
            best = (p, L, obs)
    p = min(1.0, best[0] * len(lags))
    lag = best[1]
    # |lambda| = 1 - 1/V is the flip-flop's reading of V >= 1; V < 1 (a trend, no flip) reads
    # as no carried-over flip at all, |lambda| = 0
    lam = max(0.0, 1.0 - 1.0 / best[2]) if best[2] and best[2] > 0 else None
    return {"alternating": bool(p < alpha and lam is not None and lam >= edge), "lag": lag,
            "lag_steps": float(np.median(np.diff(s)) * lag) if lag else None,
            "ratio": best[2], "eigenvalue": lam, "p_value": p}


#: fewest reward points for the oscillation rule (the L3 fit's damping ratio is not resolved below)
OSCILLATION_MIN_POINTS = 30


def _rise_and_fall(steps, values, noise):
    """Peak of the smoothed series, its rise from the start and its fall to the end."""
    sm = _smooth(values, _window(values.size))
    n = values.size
    peak = int(np.argmax(sm))
    start = float(np.median(values[:3]))
    end = float(np.median(sm[-max(1, n // 20):]))
    return sm, peak, float(sm[peak]) - start, float(sm[peak]) - end


def _level(values):
    """The reward's level: a centred rolling mean over a twentieth of the run (>= 3 points, odd;
    shrinking at the ends) -- long enough that a single noisy point does not set a peak or a
    trough, short enough to keep a fall that lasts a few percent of the run."""
    v = np.asarray(values, dtype=float)
    h = max(3, (v.size // 20) | 1) // 2
    return np.array([np.mean(v[max(0, i - h): i + h + 1]) for i in range(v.size)])


def _fall_from_high(steps, values, noise, rise):
    r"""A fall from the highest level a run held that did *not* climb there during the log.

    A run that starts high (warm-started, resumed, an SFT checkpoint) made its gain before the
    log began, from the floor of the reward's range; without a significant rise in the log
    (``rise`` <= 4 noise sd) the rise-then-fall test has no gain to measure the fall against,
    so the gain is the highest level above that floor.  For a success rate (every value in
    [0, 1]) the floor is 0, the absorbing boundary of a binary reward, and the test is the
    rise-then-fall test with the gain made before the log: the level (:func:`_level`) falls
    from its highest value :math:`H` to a trough :math:`T` after it that gives back more than
    half of the gain (:math:`T < H/2`), by more than 4 noise sd.  The trough, not the end: a
    collapse that partly recovers is still a collapse.  A dense reward has no known floor:
    ``None`` (not tested).  Returns ``{"flag", "high", "trough", "step_high", "step_trough",
    "first"}`` or ``None``."""
    v = np.asarray(values, dtype=float)
    if rise > 4 * noise or v.size < 12 or float(np.min(v)) < 0.0 or float(np.max(v)) > 1.0:
        return None
    lvl = _level(v)
    hi = int(np.argmax(lvl))
    lo = hi + int(np.argmin(lvl[hi:]))
    high, trough = float(lvl[hi]), float(lvl[lo])
    flag = trough < 0.5 * high and high - trough > 4 * noise
    first = _first_crossing(steps[hi:], -lvl[hi:], -0.5 * high) if flag else None
    return {"flag": bool(flag), "high": high, "trough": trough, "step_high": float(steps[hi]),
            "step_trough": float(steps[lo]), "first": first}


def _fall_after_divergence(steps, values, noise, onset):
    r"""The reward's fall across the divergence's onset: the mean of the ``w`` points before the
    first step the divergence detector fired (``w`` a tenth of the run, >= 3) against the mean
    of the run's last ``w`` points from that step on (where the run stands now).  Where KL, entropy, length or the gradient norm have
    already run away, the fall need not clear 4 sd of a *single* point (the rise-then-fall bar):
    the two means are each an average, and a fall of 4 standard errors of their difference,
    :math:`\sigma\sqrt{1/n_b + 1/n_a}` with :math:`\sigma` the step-to-step noise, is as
    significant a fall as 4 sd of one point is of a single value.  Returns ``{"flag", "before",
    "after", "n_before", "n_after", "se", "step"}`` or ``None`` (no onset, or fewer than 3
    points on either side)."""
    if onset is None or noise <= 0:
        return None
    s, v = np.asarray(steps, dtype=float), np.asarray(values, dtype=float)
    i = int(np.searchsorted(s, onset))
    w = max(3, v.size // 10)
    before, after = v[max(0, i - w): i], v[max(i, v.size - w):]
    if before.size < 3 or after.size < 3:
        return None
    se = noise * math.sqrt(1.0 / before.size + 1.0 / after.size)
    b, a = float(np.mean(before)), float(np.mean(after))
    return {"flag": bool(b - a > 4 * se), "before": b, "after": a, "n_before": int(before.size),
            "n_after": int(after.size), "se": se, "step": float(s[min(i, s.size - 1)])}


def _instability_knob(log) -> str:
    """What to turn against a dynamical instability: a smaller eta K, or a shorter refresh
    window (the exact threshold falls with k); with the run's config, its own window named."""
    window = ("a shorter refresh window (steps_per_generation, num_iterations / ppo_epochs "
              "towards 1)")
    kind = log_config_kind(log.config)
    if kind is not None:
        try:
            k = map_config(log.config, kind)["refresh_interval"]
        except ParameterError:        # a config the map refuses: the generic advice stands
            k = None
        if k is not None and not k["assumed"]:
            window = (f"a shorter refresh window (this run: k = {k['value']:g} optimizer steps per "
                      "sampling policy, from its config)" if k["value"] > 1 else
                      "less momentum (this run is on-policy, k = 1)")
    return f"learning rate (halve it), or {window}; keep the clip (epsilon 0.2)"


def dynamical_instability(log, reward_metric=None, *, fit=None, growth_threshold=2.0,
                          zeta_threshold=0.3, spike_factor=10.0):
    """Collapse (rise then fall), lightly damped oscillation, fluctuation growth, grad-norm spikes.

    ``fit``: the reward curve's :class:`~grpo_theory.runs.fitting.CurveSummary` (computed here
    when not given), so the regime and damping ratio are the ones ``fit`` reports."""
    try:
        rname = log.reward_metric(reward_metric)
    except ParameterError:
        return _absent("dynamical_instability", "reward")
    rs, rv = log.series(rname)
    ok = np.isfinite(rv)
    rs, rv = rs[ok], rv[ok]
    if rs.size < 12:
        # too few rewards for the reward-based checks; a divergence seen in the per-step
        # metrics (KL, entropy, gradient norm, blow-up) is a dynamical instability all the same
        div = divergence(log, reward_metric)
        if div["flag"]:
            return _result(True, div["score"], f"{rs.size} logged reward values (the reward-based "
                           "checks need >= 12); diverging: " + "; ".join(div["reasons"]),
                           first_step=div["first_step"], knob=div["knob"], diverging=True,
                           collapsed=False, oscillating=False, growing=False, alternating=False)
        return _na(f"{rs.size} logged reward values, need >= 12", rname)
    n = rv.size
    third = n // 3
    noise = float(np.std(np.diff(rv)) / math.sqrt(2))
    # noise of each third from its first differences (sd(diff)/sqrt(2)): free of the
    # smoother's edge effects, which inflate residuals at the end of the log
    sd_mid = float(np.std(np.diff(rv[third: 2 * third])) / math.sqrt(2))
    sd_late = float(np.std(np.diff(rv[2 * third:])) / math.sqrt(2))
    # the ratio means something only when the mid-run fluctuation is resolved above rounding
    growth = sd_late / sd_mid if sd_mid > 1e-3 * (np.ptp(rv) or 1.0) else None
    sm, peak, rise, drop = _rise_and_fall(rs, rv, noise)
    # rise then fall: the reward climbed (> 4 noise sd) and gave back at least half of it
    collapse = rise > 4 * noise and drop > 0.5 * rise and drop > 4 * noise
    rise_fall = collapse
    first = {}
    if collapse:
        first["collapse"] = _first_crossing(rs[peak:], -sm[peak:], -(sm[peak] - 0.5 * rise))
    # fall to the floor (the absorbing boundary p = 0 of a binary reward): more than half of
    # the starting reward lost, by more than 4 noise sd
    start = float(np.median(rv[:3]))
    end = float(np.median(sm[-max(1, n // 20):]))
    to_floor = (float(np.min(rv)) >= 0.0 and float(np.max(rv)) <= 1.0
                and start - end > 0.5 * start and start - end > 4 * noise)
    if to_floor:
        first["floor"] = _first_crossing(rs, -sm, -0.5 * start)
    high = _fall_from_high(rs, rv, noise, rise)
    from_high = bool(high and high["flag"])
    if from_high:
        first["from_high"] = high["first"]
    collapse = collapse or to_floor or from_high
    zeta, overshoot, regime = None, None, None
    # the L3 fit read from the one summary of the reward curve (runs.fitting.summarize_curve), as
    # `fit` reads it: a regime and a damping ratio only where the model applies

    summary = fit if fit is not None else summarize_curve(rs, rv, metric=rname)
    if not summary.applicable:
        regime = "no regime is named, the fit does not apply: " + "; ".join(summary.reasons)
    elif summary.oscillator is None and summary.misses_range("oscillator"):
        regime = (f"no regime is named: the L3 fit's plateau {summary.fits['oscillator'].plateau:.4g} "
                  "lies outside the reward's range [0, 1]")
    elif summary.oscillator is None:
        regime = "no L3 fit"
    else:
        fit_ = summary.oscillator
        zeta, regime = summary.damping_ratio, summary.regime
        try:
            if zeta < 1 and fit_.r2 is not None and fit_.r2 > 0.5:
                # the fitted oscillator (m = 1, gamma = 2 zeta omega0, spring omega0^2) with its
                # free initial slope: the overshoot -x(t_1)/x0 from the derived record, in reward
                # units
                from grpo_theory.theory.derived import get

                om, x0 = fit_.params["omega0"], fit_.params["initial"] - fit_.params["plateau"]
                with np.errstate(divide="ignore", invalid="ignore"):  # both cases evaluated
                    rel = float(get("oscillator.overshoot").numeric(1.0, 2 * zeta * om, om * om,
                                                                    x0, fit_.params["slope0"]))
                if not np.isfinite(rel):
                    raise ValueError(f"overshoot of the fitted oscillator is not finite ({rel})")
                overshoot = abs(x0) * max(rel, 0.0)
        except (ParameterError, ValueError) as exc:
            regime = f"{regime} (overshoot not computed: {exc})"
    # lightly damped by the L3 fit *and* an overshoot seen in the data: the smoothed reward
    # came back down from its peak by more than 2 noise sd (a fit's extrapolated overshoot
    # alone is not evidence); an L3 fit to fewer than OSCILLATION_MIN_POINTS points cannot
    # resolve zeta (a log watched from its first steps would otherwise flag on noise)
    oscillating = (n >= OSCILLATION_MIN_POINTS and zeta is not None and zeta < zeta_threshold
                   and overshoot is not None and drop > 2 * max(noise, 1e-12))
    if oscillating:
        first["oscillation"] = _first_crossing(rs[peak:], -sm[peak:], -(sm[peak] - 2 * noise))
    # the ratio must also be significant for the sizes of the two thirds (variance-ratio F
    # test at 1e-3): short or early logs give wild ratios by chance (with 4 points a third,
    # a ratio above 2 happens 14 % of the time without any growth)
    from scipy.stats import f as f_dist

    growth_p = (float(f_dist.sf(growth * growth, n - 2 * third - 2, third - 2))
                if growth is not None and third >= 3 else None)
    growing = (growth is not None and growth > growth_threshold and growth_p is not None
               and growth_p < 1e-3)
    if growing:
        first["growth"] = float(rs[2 * third])
    # the reward's deviations flipping sign every L points (a window eigenvalue at -1); only the
    # reward: per-step metrics such as the KL carry a deterministic saw-tooth over every refresh
    # window (the lag cycles 0..k-1) even when the window map is stable
    alt = {}
    a = alternation(rs, rv)
    if a is not None:
        alt[rname] = a
    flipping = [n_ for n_, a in alt.items() if a["alternating"]]
    if flipping:
        first["alternation"] = float(rs[n // 3])
    spikes = {}
    for role in ("grad_norm", "kl"):
        name = log.role(role)
        if name is None:
            continue
        s, v = log.series(name)
        s, v = s[np.isfinite(v)], np.abs(v[np.isfinite(v)])
        if v.size >= 12 and np.median(v) > 0:
            run_med = np.array([np.median(v[:i + 1]) for i in range(v.size)])
            ratio = v[1:] / np.maximum(run_med[:-1], 1e-12)
            i = np.nonzero((ratio > spike_factor) & (np.arange(1, v.size) >= 5))[0]
            if i.size:
                spikes[name] = float(s[i[0] + 1])
    # spikes are reported as evidence; alone they do not flag (healthy runs show isolated ones)
    div = divergence(log, reward_metric)
    diverging = bool(div["flag"])
    if diverging:
        first["divergence"] = div["first_step"]
    # a fall from the level the run started at (to the floor, or from a high start) is a
    # collapse of the reward, reported by `collapse`; alone it is no sign of an instability: a
    # stable map relaxes from any starting point to its fixed point, which can lie far below it
    # (a warm start anchored to a weaker reference).  The instability counts a fall from a level
    # the run climbed to (rise then fall), or one the other tests explain.
    flag = oscillating or growing or rise_fall or diverging or bool(flipping)
    inst_first = {k: v for k, v in first.items() if k not in ("floor", "from_high") or rise_fall}
    first_step = (min(inst_first.values()) if inst_first and all(v is not None for v in inst_first.values())
                  else None)
    parts = [f"rise {rise:.3g} to the smoothed peak at step {rs[peak]:g}, then a fall of {drop:.3g} "
             f"(noise sd {noise:.3g}; collapse = rise and fall > 4 sd, fall > half the rise)"]
    parts.append(f"floor test: start {start:.3g} (median of the first 3 points) -> end {end:.3g} "
                 "(the smoothed curve's last 5 %)" + (" (fell to the floor)" if to_floor else ""))
    if high is not None:
        parts.append(f"fall from the highest level (no significant rise in the log: the gain was "
                     f"made before it, from the floor 0): level {high['high']:.3g} at step "
                     f"{high['step_high']:g} -> trough {high['trough']:.3g} at step "
                     f"{high['step_trough']:g} (collapse = trough below half the high level, fall "
                     "> 4 sd)" + (" (collapsed from a high start)" if from_high else ""))
    after_div = _fall_after_divergence(rs, rv, noise, div["first_step"]) if diverging else None
    if after_div is not None:
        parts.append(f"across the divergence's onset (step {after_div['step']:g}): mean reward "
                     f"{after_div['before']:.3g} over the {after_div['n_before']} points before, "
                     f"{after_div['after']:.3g} over the last {after_div['n_after']} from it on (fall "
                     f"{after_div['before'] - after_div['after']:.3g}, 4 standard errors = "
                     f"{4 * after_div['se']:.3g})")
    collapse_parts = list(parts)       # the reward-collapse tests: what `collapse` reports
    parts.append(f"L3 fit damping ratio zeta = {zeta:.3g} ({regime})" if zeta is not None
                 else regime)
    parts.append("fluctuation sd late/mid = " + (f"{growth:.2f} (F-test p = {growth_p:.2g})"
                                                  if growth is not None and growth_p is not None
                                                  else "n/a (mid-run fluctuation unresolved)"))
    if spikes:
        parts.append("evidence only, spikes > {:g}x the running median: ".format(spike_factor)
                     + ", ".join(f"{k} at step {v:g}" for k, v in spikes.items()))
    if diverging:
        parts.append("diverging before (or without) a reward fall: " + "; ".join(div["reasons"]))
        collapse_parts.append(parts[-1])
    if alt:
        parts.append("sign flips: " + ", ".join(
            f"{n_} every {a['lag']} points, V = {a['ratio']:.3g} (|lambda| ~ "
            f"{a['eigenvalue']:.2f}), p = {a['p_value']:.2g}" for n_, a in alt.items())
            + f" (flag: p < {ALTERNATION_ALPHA:g} and |lambda| >= {ALTERNATION_EDGE:g}: half a "
            "deviation or more carried over, flipped, to the next window)")
    return _result(flag, drop / rise if rise > 0 else None, "; ".join(parts), first_step=first_step,
                   knob=_instability_knob(log),
                   damping_ratio=zeta, regime=regime, overshoot=overshoot, noise_sd=noise,
                   fluctuation_growth=growth, rise=rise, drop_from_peak=drop,
                   oscillating=oscillating, growing=growing, collapsed=bool(collapse),
                   collapsed_from_high=from_high,
                   collapse_first_step=(min(first.values()) if first and all(
                       v is not None for v in first.values()) else None),
                   fell_after_divergence=bool(after_div and after_div["flag"]),
                   diverging=diverging, alternating=bool(flipping),
                   alternation={n_: a for n_, a in alt.items()}, spikes=spikes,
                   collapse_evidence="; ".join(collapse_parts))


def collapse(log, reward_metric=None, *, instability=None):
    """The reward collapsing: a rise then a fall of half of it, a fall to the floor, a fall below
    half of the highest level for a run that starts high (:func:`_fall_from_high`), or a run
    diverging in KL / entropy / length whose reward has begun to fall -- more than 4 noise sd
    below its smoothed peak (``early``), or its mean by 4 standard errors across the
    divergence's onset (``announced``, :func:`_fall_after_divergence`): the collapse seen
    before the reward has finished falling."""
    di = instability if instability is not None else dynamical_instability(log, reward_metric)
    if di["flag"] is None:
        return dict(di)
    if di.get("drop_from_peak") is None:
        # too few rewards for the reward-based checks (the instability flagged on the per-step
        # metrics alone): whether the reward collapsed is not seen -- n/a, never "no collapse"
        return _na("too few logged rewards to see a collapse of the reward (" + di["evidence"]
                   + ")", log.reward_metric(reward_metric))
    fell = (di.get("drop_from_peak") is not None and di.get("noise_sd") is not None
            and di["drop_from_peak"] > 4 * di["noise_sd"])
    early = bool(di.get("diverging")) and fell
    announced = bool(di.get("diverging")) and bool(di.get("fell_after_divergence"))
    flag = bool(di.get("collapsed")) or early or announced
    ev = (("reward collapsed from a high start (fell below half of its highest level)"
           if di.get("collapsed_from_high") else
           "reward collapsed (rise then fall of half of it, or fall to the floor)")
          if di.get("collapsed")
          else "diverging, and the reward has fallen {:.3g} (> 4 noise sd {:.3g}) below its peak".format(
              di["drop_from_peak"], di["noise_sd"]) if early else
          "diverging, and the reward's mean fell across the divergence's onset by more than 4 "
          "standard errors: a collapse the other signals announce" if announced else
          "no reward collapse" + (" (diverging, but the reward has not fallen yet)"
                                  if di.get("diverging") else ""))
    return _result(flag, di.get("score"), ev + "; " + di.get("collapse_evidence", di["evidence"]),
                   first_step=di.get("collapse_first_step", di.get("first_step")) if flag else None,
                   knob=di.get("knob"), collapsed=bool(di.get("collapsed")), early=early,
                   announced=announced)


DETECTORS = {
    "advantage_degeneracy": advantage_degeneracy,
    "policy_concentration": policy_concentration,
    "entropy_explosion": entropy_explosion,
    "reward_hacking": reward_hacking,
    "divergence": divergence,
    "dynamical_instability": dynamical_instability,
    "collapse": collapse,
}


@dataclass(frozen=True)
class Diagnosis(Result):
    """Every detector's answer on one log; ``flag`` is ``None`` where a check cannot run."""

    source: str
    format: str
    run: str | None
    metric: str | None
    group_size: int | None
    diagnostics: dict
    warnings: list
    curve: dict | None = None

    @property
    def flags(self) -> list:
        return [k for k, v in self.diagnostics.items() if v["flag"]]

    def to_dict(self) -> dict:
        return {**super().to_dict(), "flags": self.flags}

    def __str__(self) -> str:
        lines = [f"{self.source} ({self.format}), reward metric {self.metric}, group size "
                 f"{self.group_size if self.group_size is not None else 'unknown'}"]
        lines += [f"  warning: {w}" for w in self.warnings]
        if self.curve:
            lines.append(f"  reward curve (as fit reads it): {self.curve['summary']}")
        for name, d in self.diagnostics.items():
            mark = "n/a " if d["flag"] is None else ("FLAG" if d["flag"] else "ok  ")
            score = "" if d["score"] is None else \
                f" ({SCORE_TEXT.get(name, 'score {:.3g}').format(d['score'])})"
            lines.append(f"  [{mark}] {name}{score}: {d['evidence']}")
            if d["flag"]:
                when = "" if d["first_step"] is None else f"first fired at step {d['first_step']:g}; "
                lines.append(f"         {when}knob: {d['knob']}")
        return "\n".join(lines)


def diagnose(log, reward_metric=None, group_size=None, *, fit=None) -> Diagnosis:
    """Run every detector on ``log``; checks that cannot run have ``flag = None``.

    The reward curve is read once (:func:`~grpo_theory.runs.fitting.summarize_curve`, or
    ``fit`` when given; a single family's fit, e.g. ``fit_curve(..., "oscillator")``, replaces
    that family in the summary): its gain, whether the model applies and the L3 regime are the ones
    ``fit`` reports, in ``curve`` and in the instability evidence."""
    G = group_size if group_size is not None else group_size_from_config(log.config)
    if G is not None:
        G = check_int("group_size", G, low=2)
    warnings = list(log.warnings)
    try:
        metric = log.reward_metric(reward_metric)
    except ParameterError as exc:
        if reward_metric is not None or getattr(exc, "name", None) == "log file":
            raise                     # asked for, or a reward column of text: not an SFT log
        metric = None
        kind = getattr(exc, "looks_like", "an SFT or evaluation-only log")
        warnings.append(f"no reward metric in the log ({kind}?): the reward-based checks do not "
                        "apply")
    if metric is not None:
        _, rv = log.series(metric)
        rv = rv[np.isfinite(rv)]
        if rv.size and (rv.min() < 0 or rv.max() > 1):
            warnings.append(f"{metric} is not in [0, 1] (a dense or shaped reward): the binary "
                            "mean-field predictions are switched off")
    curve = None
    given = None
    if fit is not None and not hasattr(fit, "gain"):
        # one fitted family (runs.curves.FitResult, e.g. the oscillator of fit_curve): the curve
        # is summarized here and that fit stands in for the summary's own of its family
        given, fit = fit, None
    if metric is not None and fit is None:
        rs, rv = log.series(metric)
        if rs.size >= 12:      # the instability checks' minimum
            fit = summarize_curve(rs, rv, metric=metric)
            if given is not None:
                fit = dataclasses.replace(fit, fits={**fit.fits, given.model: given})
    if fit is not None:
        curve = {"gain": fit.gain, "applicable": fit.applicable, "reasons": list(fit.reasons),
                 "regime": fit.regime, "damping_ratio": fit.damping_ratio,
                 "summary": fit.describe()}
    out = {
        "advantage_degeneracy": advantage_degeneracy(log, reward_metric, G),
        "policy_concentration": policy_concentration(log, reward_metric),
        "entropy_explosion": entropy_explosion(log, reward_metric),
        "reward_hacking": reward_hacking(log, reward_metric),
        "divergence": divergence(log, reward_metric),
        "dynamical_instability": dynamical_instability(log, reward_metric, fit=fit),
    }
    out["collapse"] = collapse(log, reward_metric, instability=out["dynamical_instability"])
    return Diagnosis(source=str(log.source), format=log.format, run=log.run, metric=metric,
                     group_size=G, diagnostics=out, warnings=warnings, curve=curve)
