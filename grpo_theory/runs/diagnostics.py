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
from dataclasses import dataclass

import numpy as np

from grpo_theory.results import Result
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


def _result(flag, score, evidence, *, missing=None, first_step=None, knob=None, **extra):
    """One detector's answer; ``flag`` is ``None`` when the check cannot run (``missing`` says why)."""
    out = {"flag": None if flag is None else bool(flag), "score": _num(score),
           "missing": missing, "evidence": evidence, "first_step": _num(first_step),
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
    if zs.size < 3:
        return _na(f"fewer than 3 logged values of {zname}", zname)
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
        rname = log.reward_metric(reward_metric)
        rs, rv = log.series(rname)
        if rs.size >= 3:
            gain = float(np.median(rv[-max(1, rs.size // 10):]) - np.median(rv[:3]))
            ev += f"; reward {rname} gained {gain:+.3g} over the run"
    except ParameterError:
        pass
    return _result(flag, score, ev, first_step=first,
                   knob="beta (KL to the reference), e.g. 0.04; or a lower learning rate",
                   entropy_start=h_start, entropy_end=h_end, threshold=threshold)


def entropy_explosion(log, reward_metric=None, *, factor=math.e):
    """Entropy rising an e-fold above its start: the policy spreading out (divergence)."""
    hname, hs, hv = _entropy_series(log)
    if hname is None:
        return _absent("entropy_explosion", "entropy")
    if hs.size < 10:
        return _na(f"fewer than 10 logged values of {hname}", hname)
    hsm = _smooth(hv, _window(hv.size))
    h_start = float(np.median(hv[:min(3, hs.size)]))
    if not h_start > 0:
        return _na(f"{hname} at the start is {h_start:.3g} (not positive)", hname)
    score = float(np.max(hsm)) / h_start
    flag = score > factor
    ev = (f"{hname}: {h_start:.4g} at the start, smoothed maximum {np.max(hsm):.4g} "
          f"({score:.2f}x; flag above e-fold {factor:.2f}x)")
    return _result(flag, score, ev, first_step=_first_crossing(hs, hsm, factor * h_start),
                   knob="learning rate (halve it) or the clip epsilon (e.g. 0.2)")


def reward_hacking(log, reward_metric=None, *, min_evaluations=5, z=2.0):
    """Training vs held-out reward, scale-free: standardised gains and their correlation."""
    try:
        rname = log.reward_metric(reward_metric)
    except ParameterError:
        return _absent("reward_hacking", "reward")
    vname = log.role("val_reward")
    if vname is None or vname == rname:
        return _absent("reward_hacking", "held-out reward (eval_*/val/*) next to the training reward")
    rs, rv = log.series(rname)
    vs, vv = log.series(vname)
    ok = np.isfinite(vv)
    vs, vv = vs[ok], vv[ok]
    if vs.size < min_evaluations or rs.size < 10:
        return _na(f"{vs.size} held-out evaluations ({vname}), need >= {min_evaluations}; "
                   f"{rs.size} training rewards, need >= 10", vname)
    rsm = _smooth(rv, _window(rv.size))
    train_at = np.interp(vs, rs, rsm)
    m = max(1, vs.size // 4)
    sd_t = float(np.std(rv - rsm)) or float(np.std(rv)) or 1e-12
    sd_v = float(np.std(np.diff(vv)) / math.sqrt(2)) or float(np.std(vv)) or 1e-12
    zt = float(np.median(train_at[-m:]) - np.median(train_at[:m])) / sd_t
    zv = float(np.median(vv[-m:]) - np.median(vv[:m])) / sd_v
    corr = float(np.corrcoef(train_at, vv)[0, 1]) if np.std(train_at) > 0 and np.std(vv) > 0 else None
    # the training reward rose by more than z noise sd while the held-out reward did not rise by
    # one sd and does not follow it (correlation below 0.3)
    flag = zt > z and zv < 1 and (corr is None or corr < 0.3)
    first = None
    if flag:
        best = int(np.argmax(_smooth(vv, 3)))
        first = float(vs[min(best + 1, vs.size - 1)])
    ev = (f"standardised gains between held-out evaluations at steps {vs[0]:g} and {vs[-1]:g}: "
          f"training {rname} {zt:+.1f} sd, held-out {vname} {zv:+.1f} sd"
          + (f", correlation {corr:.2f}" if corr is not None else "")
          + f" (flag: training > {z:g} sd, held-out < 1 sd, correlation < 0.3)")
    return _result(flag, zt - zv, ev, first_step=first,
                   knob="beta (KL to the reference), e.g. 0.04; stop at the held-out peak",
                   train_gain_sd=zt, heldout_gain_sd=zv, correlation=corr)


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


def dynamical_instability(log, reward_metric=None, *, fit=None, growth_threshold=2.0,
                          zeta_threshold=0.3, spike_factor=10.0):
    """Collapse (rise then fall), lightly damped oscillation, fluctuation growth, grad-norm spikes."""
    try:
        rname = log.reward_metric(reward_metric)
    except ParameterError:
        return _absent("dynamical_instability", "reward")
    rs, rv = log.series(rname)
    ok = np.isfinite(rv)
    rs, rv = rs[ok], rv[ok]
    if rs.size < 12:
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
    collapse = collapse or to_floor
    zeta, overshoot, regime = None, None, None
    try:
        from grpo_theory.runs.curves import fit_curve
        if fit is None:
            fit = fit_curve(rs, rv, "oscillator")
        zeta = float(fit.params["zeta"])
        regime = fit.reading.get("regime")
        if zeta < 1 and fit.r2 is not None and fit.r2 > 0.5:
            # the fitted oscillator (m = 1, gamma = 2 zeta omega0, spring omega0^2) with its free
            # initial slope: the overshoot -x(t_1)/x0 from the derived record, in reward units
            from grpo_theory.theory.derived import get

            om, x0 = fit.params["omega0"], fit.params["initial"] - fit.params["plateau"]
            with np.errstate(divide="ignore", invalid="ignore"):  # numpy evaluates both cases
                rel = float(get("oscillator.overshoot").numeric(1.0, 2 * zeta * om, om * om, x0,
                                                                fit.params["slope0"]))
            if not np.isfinite(rel):
                raise ValueError(f"overshoot of the fitted oscillator is not finite ({rel})")
            overshoot = abs(x0) * max(rel, 0.0)
    except (ParameterError, ValueError) as exc:
        regime = f"fit failed: {exc}"
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
    flag = oscillating or growing or collapse
    first_step = min(first.values()) if first and all(v is not None for v in first.values()) else None
    parts = [f"rise {rise:.3g} to the smoothed peak at step {rs[peak]:g}, then a fall of {drop:.3g} "
             f"(noise sd {noise:.3g}; collapse = rise and fall > 4 sd, fall > half the rise)"]
    parts.append(f"start {start:.3g} -> end {end:.3g}" + (" (fell to the floor)" if to_floor else ""))
    parts.append(f"L3 fit damping ratio zeta = {zeta:.3g} ({regime})" if zeta is not None
                 else f"no L3 fit ({regime})")
    parts.append("fluctuation sd late/mid = " + (f"{growth:.2f} (F-test p = {growth_p:.2g})"
                                                  if growth is not None and growth_p is not None
                                                  else "n/a (mid-run fluctuation unresolved)"))
    if spikes:
        parts.append("evidence only, spikes > {:g}x the running median: ".format(spike_factor)
                     + ", ".join(f"{k} at step {v:g}" for k, v in spikes.items()))
    return _result(flag, drop / rise if rise > 0 else None, "; ".join(parts), first_step=first_step,
                   knob="learning rate (halve it); num_iterations / ppo_epochs = 1; clip epsilon 0.2",
                   damping_ratio=zeta, regime=regime, overshoot=overshoot, noise_sd=noise,
                   fluctuation_growth=growth, rise=rise, drop_from_peak=drop,
                   oscillating=oscillating, growing=growing, collapsed=bool(collapse),
                   spikes=spikes)


DETECTORS = {
    "advantage_degeneracy": advantage_degeneracy,
    "policy_concentration": policy_concentration,
    "entropy_explosion": entropy_explosion,
    "reward_hacking": reward_hacking,
    "dynamical_instability": dynamical_instability,
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

    @property
    def flags(self) -> list:
        return [k for k, v in self.diagnostics.items() if v["flag"]]

    def to_dict(self) -> dict:
        return {**super().to_dict(), "flags": self.flags}

    def __str__(self) -> str:
        lines = [f"{self.source} ({self.format}), reward metric {self.metric}, group size "
                 f"{self.group_size if self.group_size is not None else 'unknown'}"]
        lines += [f"  warning: {w}" for w in self.warnings]
        for name, d in self.diagnostics.items():
            mark = "n/a " if d["flag"] is None else ("FLAG" if d["flag"] else "ok  ")
            score = "" if d["score"] is None else f" (score {d['score']:.3g})"
            lines.append(f"  [{mark}] {name}{score}: {d['evidence']}")
            if d["flag"]:
                when = "" if d["first_step"] is None else f"first fired at step {d['first_step']:g}; "
                lines.append(f"         {when}knob: {d['knob']}")
        return "\n".join(lines)


def diagnose(log, reward_metric=None, group_size=None, *, fit=None) -> Diagnosis:
    """Run every detector on ``log``; checks that cannot run have ``flag = None``."""
    G = group_size if group_size is not None else group_size_from_config(log.config)
    if G is not None:
        G = check_int("group_size", G, low=2)
    warnings = list(log.warnings)
    try:
        metric = log.reward_metric(reward_metric)
    except ParameterError:
        if reward_metric is not None:
            raise
        metric = None
        warnings.append("no reward metric in the log (an SFT or evaluation-only log?): the "
                        "reward-based checks do not apply")
    if metric is not None:
        _, rv = log.series(metric)
        rv = rv[np.isfinite(rv)]
        if rv.size and (rv.min() < 0 or rv.max() > 1):
            warnings.append(f"{metric} is not in [0, 1] (a dense or shaped reward): the binary "
                            "mean-field predictions are switched off")
    out = {
        "advantage_degeneracy": advantage_degeneracy(log, reward_metric, G),
        "policy_concentration": policy_concentration(log, reward_metric),
        "entropy_explosion": entropy_explosion(log, reward_metric),
        "reward_hacking": reward_hacking(log, reward_metric),
        "dynamical_instability": dynamical_instability(log, reward_metric, fit=fit),
    }
    return Diagnosis(source=str(log.source), format=log.format, run=log.run, metric=metric,
                     group_size=G, diagnostics=out, warnings=warnings)
