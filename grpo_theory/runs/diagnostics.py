r"""Diagnostics of a GRPO run from its logged metrics (THEORY.md §5).

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
    Gain of the training reward minus gain of the held-out reward between the
    first and the last held-out evaluation (both smoothed).  The mean-field
    dynamics act on the prompt distribution, so a policy that improves on it
    improves the held-out reward by a comparable amount.  Flag when the
    training gain exceeds the held-out gain by > ``0.1`` reward *and* the
    held-out gain is < half the training gain.  KL growth over the plateau is
    reported as supporting evidence.
``dynamical_instability``
    The damping ratio :math:`\zeta` of the L3 fit, plus growth of the detrended
    fluctuation and a late collapse of the reward.  Flag when the run is
    lightly damped (:math:`\zeta < 0.3`, near the stability boundary, with a first
    overshoot larger than 2 noise standard deviations), the late fluctuation is > 2× the mid-run one,
    or the reward falls from a (smoothed) peak reached after the first third of
    the run by more than 4 noise sd and 25 % of its rise.
"""

from __future__ import annotations

import math

import numpy as np

from grpo_theory.validate import ParameterError, check_int

__all__ = [
    "DETECTORS",
    "advantage_degeneracy",
    "policy_concentration",
    "reward_hacking",
    "dynamical_instability",
    "diagnose",
    "degenerate_group_probability",
    "group_size_from_config",
]

_GROUP_KEYS = ("group_size", "num_generations", "actor_rollout_ref.rollout.n", "rollout.n",
               "G")


def _num(x):
    if x is None:
        return None
    try:
        x = float(x)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def _result(flag, score, evidence, **extra):
    out = {"flag": bool(flag), "score": _num(score), "evidence": evidence}
    for k, v in extra.items():
        if isinstance(v, (float, int, np.floating, np.integer)) and not isinstance(v, bool):
            out[k] = _num(v)
        else:
            out[k] = v
    return out


def _absent(name, what):
    return _result(False, None, f"metric {what} not in log", missing=what)


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
    for i in range(v.size):
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

def advantage_degeneracy(log, reward_metric=None, group_size=None, *, threshold=0.05):
    """Observed vs predicted fraction of zero-variance groups (see module docstring)."""
    zname = log.role("zero_var_frac")
    if zname is None:
        return _absent("advantage_degeneracy", "zero-variance-group fraction "
                       "(frac_reward_zero_std / zero_var_frac)")
    G = group_size if group_size is not None else group_size_from_config(log.config)
    if G is None:
        return _result(False, None, "group size unknown: give --group-size (or a log whose "
                       "config has num_generations / rollout.n)", missing="group_size")
    G = check_int("group_size", G, low=2)
    try:
        rname = log.reward_metric(reward_metric)
    except ParameterError:
        return _absent("advantage_degeneracy", "reward")
    zs, zv = log.series(zname)
    rs, rv = log.series(rname)
    common, iz, ir = np.intersect1d(zs, rs, return_indices=True)
    if common.size < 3:
        return _result(False, None, f"fewer than 3 steps with both {zname} and {rname}")
    q = zv[iz]
    p = np.clip(rv[ir], 0.0, 1.0)
    pred = degenerate_group_probability(p, G)
    excess = q - pred
    mean_excess = float(np.mean(excess))
    se = float(np.std(excess, ddof=1) / math.sqrt(_effective_n(excess))) if excess.size > 2 else math.inf
    k = max(1, q.size // 10)
    late_obs = float(np.mean(q[-k:]))
    flag = mean_excess > threshold and mean_excess > 4 * se
    ev = (f"zero-variance groups: observed {np.mean(q):.3f} vs predicted {np.mean(pred):.3f} "
          f"(p^G + (1-p)^G at the logged mean reward, G = {G}); excess {mean_excess:+.3f} "
          f"± {se:.3f}; last 10 % of steps: {late_obs:.3f} of groups carry no gradient")
    if flag:
        ev += "; excess = heterogeneous prompt difficulty (easy/impossible prompts)"
    return _result(flag, mean_excess, ev, observed=float(np.mean(q)),
                   predicted=float(np.mean(pred)), stderr=se, late_observed=late_obs,
                   group_size=G, threshold=threshold)


def policy_concentration(log, reward_metric=None, *, threshold=0.25):
    """Entropy lost after the reward plateaued (see module docstring)."""
    hname = log.role("entropy")
    if hname is None:
        return _absent("policy_concentration", "entropy")
    try:
        rname = log.reward_metric(reward_metric)
    except ParameterError:
        return _absent("policy_concentration", "reward")
    rs, rv = log.series(rname)
    hs, hv = log.series(hname)
    if rs.size < 10 or hs.size < 10:
        return _result(False, None, "fewer than 10 logged steps of reward/entropy")
    i_on = _onset_index(rs, rv)
    onset_step = float(rs[i_on])
    hsm = _smooth(hv, _window(hv.size))
    j_on = int(np.searchsorted(hs, onset_step))
    j_on = min(j_on, hs.size - 1)
    k = max(1, hs.size // 10)
    h_start = float(np.median(hv[:min(3, hs.size)]))
    h_onset = float(hsm[j_on])
    h_end = float(np.median(hv[-k:]))
    if not (h_onset > 0) or j_on >= hs.size - k:
        return _result(False, None, f"reward plateau reached only at step {onset_step:g}: "
                       "no plateau phase to judge", onset_step=onset_step)
    # entropy still falling late in the plateau: compare the midpoint of the plateau phase
    j_mid = (j_on + hs.size) // 2
    h_mid = float(np.median(hv[max(j_on, j_mid - k // 2): j_mid + k // 2 + 1]))
    score = 1.0 - h_end / h_mid if h_mid > 0 else None
    total = 1.0 - h_end / h_start if h_start > 0 else None
    flag = score is not None and score > threshold
    ev = (f"{hname}: {h_start:.4g} at start, {h_onset:.4g} when the reward reached 90 % of its "
          f"rise (step {onset_step:g}), {h_mid:.4g} at step {hs[j_mid]:g}, {h_end:.4g} at the end: "
          f"{100 * score:.0f} % lost over the second half of the plateau "
          f"({100 * (total or 0):.0f} % over the run)")
    return _result(flag, score, ev, onset_step=onset_step, entropy_start=h_start,
                   entropy_onset=h_onset, entropy_mid_plateau=h_mid, entropy_end=h_end, total_collapse=total,
                   threshold=threshold)


def reward_hacking(log, reward_metric=None, *, gap_threshold=0.1):
    """Training vs held-out reward decoupling and KL growth (see module docstring)."""
    try:
        rname = log.reward_metric(reward_metric)
    except ParameterError:
        return _absent("reward_hacking", "reward")
    rs, rv = log.series(rname)
    kl_ev, kl_growth = "", None
    kname = log.role("kl")
    if kname is not None and rs.size >= 10:
        ks, kv = log.series(kname)
        if ks.size >= 10:
            i_on = _onset_index(rs, rv)
            j_on = min(int(np.searchsorted(ks, rs[i_on])), ks.size - 1)
            ksm = _smooth(kv, _window(kv.size))
            k_on, k_end = float(ksm[j_on]), float(np.median(kv[-max(1, ks.size // 10):]))
            kl_growth = k_end / k_on if k_on > 0 else None
            kl_ev = (f"; {kname} {k_on:.3g} at the reward plateau onset -> {k_end:.3g} at the end"
                     + (f" ({kl_growth:.1f}x)" if kl_growth is not None else ""))
    vname = log.role("val_reward")
    if vname is None:
        return _result(False, None, "metric held-out reward (eval_*/val/*) not in log" + kl_ev,
                       missing="held-out reward", kl_growth=kl_growth)
    vs, vv = log.series(vname)
    if vs.size < 3 or rs.size < 10:
        return _result(False, None, f"fewer than 3 held-out evaluations ({vname})" + kl_ev,
                       kl_growth=kl_growth)
    rsm = _smooth(rv, _window(rv.size))
    train_at = np.interp(vs, rs, rsm)
    m = max(1, min(3, vs.size // 4))
    train_gain = float(np.median(train_at[-m:]) - np.median(train_at[:m]))
    val_gain = float(np.median(vv[-m:]) - np.median(vv[:m]))
    score = train_gain - val_gain
    flag = score > gap_threshold and val_gain < 0.5 * train_gain
    corr = None
    if np.std(train_at) > 0 and np.std(vv) > 0:
        corr = float(np.corrcoef(train_at, vv)[0, 1])
    ev = (f"between held-out evaluations at steps {vs[0]:g} and {vs[-1]:g}: training reward "
          f"{rname} gained {train_gain:+.3f}, held-out {vname} gained {val_gain:+.3f}"
          + (f" (correlation {corr:.2f})" if corr is not None else "") + kl_ev)
    if flag:
        ev += "; training reward decoupled from held-out reward (reward hacking or overfitting)"
    return _result(flag, score, ev, train_gain=train_gain, heldout_gain=val_gain,
                   correlation=corr, kl_growth=kl_growth, threshold=gap_threshold)


def dynamical_instability(log, reward_metric=None, *, fit=None, growth_threshold=2.0,
                          zeta_threshold=0.3):
    """Damping ratio of the L3 fit, fluctuation growth and late collapse (see module docstring)."""
    try:
        rname = log.reward_metric(reward_metric)
    except ParameterError:
        return _absent("dynamical_instability", "reward")
    rs, rv = log.series(rname)
    if rs.size < 12:
        return _result(False, None, "fewer than 12 logged reward values")
    smooth = _smooth(rv, _window(rv.size))
    resid = rv - smooth
    n = rv.size
    third = n // 3
    sd_mid = float(np.std(resid[third: 2 * third]))
    sd_late = float(np.std(resid[2 * third:]))
    noise = float(np.std(resid)) or 1e-12
    growth = sd_late / sd_mid if sd_mid > 0 else (math.inf if sd_late > 0 else 1.0)
    rise = abs(float(np.median(smooth[-max(1, n // 20):]) - np.median(rv[:3]))) or 1e-12
    peak_i = int(np.argmax(smooth)) if smooth[-1] >= smooth[0] else int(np.argmin(smooth))
    drop = abs(float(smooth[peak_i] - np.median(smooth[-max(1, n // 20):])))
    # a late fall from the peak (a transient overshoot peaks in the first third)
    collapse = (drop > 4 * noise and drop > 0.25 * rise and third <= peak_i < n - max(1, n // 20))
    zeta, overshoot, regime = None, None, None
    try:
        from grpo_theory.runs.fitting import fit_curve
        if fit is None:
            fit = fit_curve(rs, rv, "oscillator")
        zeta = float(fit.params["zeta"])
        regime = fit.reading.get("regime")
        if zeta < 1:
            overshoot = abs(fit.params["plateau"] - fit.params["initial"]) * math.exp(
                -math.pi * zeta / math.sqrt(1 - zeta * zeta))
    except (ParameterError, ImportError, ValueError) as exc:  # pragma: no cover - defensive
        regime = f"fit failed: {exc}"
    # lightly damped (zeta < 0.3: lag/momentum have eroded damping to < 30 % of critical,
    # overshoot > 37 % of the rise) and the overshoot visible above the noise
    oscillating = (zeta is not None and zeta < zeta_threshold and overshoot is not None
                   and overshoot > 2 * noise)
    growing = growth > growth_threshold
    flag = oscillating or growing or collapse
    parts = [f"L3 fit damping ratio zeta = {zeta:.3g} ({regime})" if zeta is not None
             else f"no L3 fit ({regime})"]
    if overshoot is not None:
        parts.append(f"predicted first overshoot {overshoot:.3g} vs noise sd {noise:.3g}")
    parts.append(f"fluctuation sd late/mid = {sd_late:.3g}/{sd_mid:.3g} = {growth:.2f}")
    parts.append(f"drop from smoothed peak {drop:.3g} (rise {rise:.3g})")
    return _result(flag, zeta, "; ".join(parts), damping_ratio=zeta, regime=regime,
                   overshoot=overshoot, noise_sd=noise, fluctuation_growth=growth,
                   drop_from_peak=drop, oscillating=oscillating, growing=growing,
                   collapsed=bool(collapse))


DETECTORS = {
    "advantage_degeneracy": advantage_degeneracy,
    "policy_concentration": policy_concentration,
    "reward_hacking": reward_hacking,
    "dynamical_instability": dynamical_instability,
}


def diagnose(log, reward_metric=None, group_size=None, *, fit=None) -> dict:
    """Run every detector; returns ``{"metric", "group_size", "diagnostics": {name: result}}``."""
    G = group_size if group_size is not None else group_size_from_config(log.config)
    if G is not None:
        G = check_int("group_size", G, low=2)
    try:
        metric = log.reward_metric(reward_metric)
    except ParameterError:
        if reward_metric is not None:
            raise
        metric = None
    out = {
        "advantage_degeneracy": advantage_degeneracy(log, reward_metric, G),
        "policy_concentration": policy_concentration(log, reward_metric),
        "reward_hacking": reward_hacking(log, reward_metric),
        "dynamical_instability": dynamical_instability(log, reward_metric, fit=fit),
    }
    return {"source": log.source, "format": log.format, "run": log.run, "metric": metric,
            "group_size": G, "diagnostics": out, "flags": [k for k, v in out.items() if v["flag"]],
            "warnings": list(log.warnings)}
