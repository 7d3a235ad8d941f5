r"""Check a GRPO training configuration before launch: what the theory knows, and what it does not.

The stability threshold of the model lives in the dimensionless step
:math:`\eta K` (learning rate x stiffness per unit learning rate).  A config
gives :math:`\eta`, the momentum :math:`\mu` (Adam's :math:`\beta_1`), the refresh
window (:func:`grpo_theory.theory.reuse.window_sampling`) and the loss variant,
but not :math:`K`.  So :func:`check_config` answers in two layers:

**Without a stiffness** (always):

- the variant (normalization, KL placement and estimator, surrogate) and the
  fresh/stale split :math:`\phi = K_f/K` of its bandit fixed point
  (:meth:`grpo_theory.model.GRPOModel.fixed_point`), over a grid of reference
  rewards :math:`p_{ref}` (the config does not say it), or at ``p_ref``;
- which thresholds exist at all: a refresh threshold exists for every
  :math:`\eta K` when :math:`\phi \le 1/2` (e.g. KL in the reward: all stale); with
  a fresh force (k3 in the loss, the ratio surrogate) small :math:`\eta K` is
  stable for every refresh interval;
- the largest stable refresh interval at a few :math:`\eta K`
  (:func:`grpo_theory.theory.discrete.max_stable_refresh_interval`), and the exact
  :math:`\eta K` at which the configured k becomes unstable
  (:func:`grpo_theory.theory.discrete.max_stable_learning_rate` with K = 1) beside
  the published rule (``discrete.published_threshold_learning_rate``);
- the verdict is ``stable: null``, with the reasons under ``unknown``.

**With a stiffness** (``stiffness=K`` given, or measured by ``from_log`` from a
*different* run's log: from its reward's relaxation, or, where the reward shows none, from
the per-step fluctuations of its entropy or KL about the plateau,
:mod:`grpo_theory.runs.policy_response`, only where the reward over the steps read is at a
plateau, :func:`off_plateau`; where neither route applies K is unknown, with both routes'
reasons): :math:`\eta K` and its interval, the verdict
(``True`` only if every K of the interval and every admissible split is stable,
``False`` only if every one is unstable, else ``None``), the margin, the largest
stable refresh interval, the regime, and the collapse risk of the bandit run
with the same :math:`\eta K` (:func:`grpo_theory.theory.collapse.collapse_risk`).

Adam: every real run uses Adam(W).  Its first moment is the heavy-ball buffer with
:math:`\mu = \beta_1` (``adam.momentum_form``) and its per-logit step is
:math:`\eta(1-\beta_1)/\sqrt{\hat v}` (:mod:`grpo_theory.theory.adam`): a K measured
from a log *per unit configured learning rate* already contains that factor, so
:math:`\eta K` is Adam's effective step as long as :math:`\hat v` is comparable
between the two runs.  Near the threshold Adam's :math:`\hat v` grows and damps
the step (the reduction's self-stabilisation): a crossing shows up as growing
gradient norms before (or instead of) a divergence.
"""

from __future__ import annotations

from collections.abc import Mapping

import math
import os
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import brentq

from grpo_theory.model import GRPOModel
from grpo_theory.results import Result, jsonable
from grpo_theory.runs.config_map import (ConfigMapping, log_config_kind, map_config, read_config,
                                         torch_sgd)
from grpo_theory.runs.logs import read_log
from grpo_theory.theory.collapse import collapse_risk
from grpo_theory.theory.derived import get
from grpo_theory.theory.discrete import (continuous_lag, linear_stability, max_stable_learning_rate,
                                         max_stable_refresh_interval)
from grpo_theory.theory.drift import drift_components
from grpo_theory.theory.fixed_points import stable_fixed_point
from grpo_theory.theory.oscillator import coefficients
from grpo_theory.validate import ParameterError, check_int, check_real

__all__ = ["ConfigCheck", "StiffnessNotMeasured", "check_config", "config_model", "off_plateau",
           "p_ref_for_plateau",
           "variant_thresholds", "stiffness_from_log", "read_config", "map_config"]

#: plateau levels across its 95 % interval whose splits the fluctuation route weighs
SPLIT_POINTS = 5
#: reference rewards scanned when the config does not say p_ref
P_REF_GRID = (0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95)
#: eta K values of the refresh-interval table
ETA_K_TABLE = (1e-3, 1e-2, 0.1, 0.5, 1.0)
#: reward levels of the approach to 1 where a variant without a fixed point is linearized
FLOW_P_GRID = (0.6, 0.7, 0.8, 0.9, 0.95, 0.99)


def config_model(mp: ConfigMapping, p_ref=None, **changes) -> GRPOModel:
    """The model of a mapped config: its variant, optimizer (heavy ball with mu = Adam's beta1,
    see the module docstring), refresh window and reuse, at reference reward ``p_ref``
    (default: the model's) and with ``changes``."""
    fields = dict(group_size=mp.value("group_size"), normalization=mp.value("normalization"),
                  kl=mp.value("kl"), kl_coef=mp.value("kl_coef"), adv_eps=mp.value("adv_eps"),
                  surrogate=mp.value("surrogate"), prompts=mp.value("prompts"),
                  learning_rate=mp.value("learning_rate"), momentum=mp.value("momentum"),
                  refresh_interval=mp.value("refresh_interval"), reuse=mp.value("reuse"),
                  window_batches=mp.value("window_batches"))
    if p_ref is not None:
        fields["p_ref"] = p_ref
    return GRPOModel(**{**fields, **changes})


def _flow_split(mp, out, p_refs):
    """Split of the drift's slope on the approach to p = 1 (variants without a fixed point)."""
    rows = []
    for pr in (p_refs if out["kl"] != "none" else (0.5,)):
        model = config_model(mp, pr)
        for p in FLOW_P_GRID:
            z = math.log(p / (1 - p))
            c = drift_components(model, z)
            kf, ks = -float(c["dF_dz"]), -float(c["dF_dzold"])
            if kf + ks > 0:
                rows.append({"p_ref": pr if out["kl"] != "none" else None, "p": p,
                             "stiffness": kf + ks, "fresh_fraction": kf / (kf + ks) + 0.0})
    return rows


def _variant_split(mp: ConfigMapping, p_ref=None) -> dict:
    """The fresh fraction of the variant's bandit fixed point over p_ref (or at p_ref)."""
    out = {"normalization": mp.value("normalization"), "kl": mp.value("kl"),
           "kl_coef": mp.value("kl_coef"), "surrogate": mp.value("surrogate"),
           "group_size": mp.value("group_size"), "fresh_fraction": None,
           "fresh_fraction_range": None, "fixed_points": [], "reason": ""}
    if out["normalization"] is None:
        out["reason"] = mp["normalization"].get("note", "normalization not modelled")
        return out
    if out["group_size"] < 2:
        out["reason"] = f"group size {out['group_size']} < 2: every group is degenerate (no GRPO)"
        return out
    if out["kl"] == "k1_reward" and out["normalization"] != "mean":
        out["reason"] = ("KL in the reward with std normalization: the model derives KL in the "
                         "reward for mean normalization only")
        return out
    grid = (p_ref,) if p_ref is not None else P_REF_GRID
    misses = []
    for p in grid:
        try:
            fp = stable_fixed_point(config_model(mp, p))
        except ParameterError as exc:
            misses.append(f"p_ref = {p:g}: {exc.allowed}")
            continue
        out["fixed_points"].append({"p_ref": p, "p_star": fp.p, "stiffness": fp.stiffness,
                                    "fresh_fraction": fp.fresh_fraction})
    out["split_source"] = "the bandit fixed point (stiffness K = K_f + K_s, phi = K_f/K)"
    if not out["fixed_points"]:
        out["fixed_points"] = _flow_split(mp, out, grid)
        out["split_source"] = (
            "no interior fixed point at any p_ref (the reward escapes to p = 1): so the split is that of the drift's slope along the approach, "
            "K = -(dF/dz + dF/dz_old) > 0 at p = " + ", ".join(format(p, "g") for p in FLOW_P_GRID)
            + " (drift.drift_components; a frozen-coefficient reading of a slowly moving state)")
        if not out["fixed_points"]:
            out["reason"] = "the drift is not restoring along the approach: no split defined"
            return out
    phis = [f["fresh_fraction"] for f in out["fixed_points"]]
    out["fresh_fraction_range"] = [min(phis), max(phis)]
    out["fresh_fraction"] = phis[0] if len(phis) == 1 else None
    if misses and len(misses) < len(grid):
        out["reason"] = f"no interior fixed point at {len(misses)} of the p_ref values"
    return out


def variant_thresholds(momentum, refresh_interval, fresh_fractions) -> dict:
    """Thresholds in eta K for the configured mu and k, for each admissible split phi.

    Returns the exact eta K threshold at k (``exact_eta_K``: min and max over phi), the
    published rule's, the largest stable k at each eta K of :data:`ETA_K_TABLE`
    (``None`` = every k stable) and whether a refresh threshold exists at small eta K.
    """
    mu = check_real("momentum", momentum, low=0, high=1, high_open=True)
    k = check_int("refresh_interval", refresh_interval, low=1)
    stars = [max_stable_learning_rate(mu, k, 1.0, fresh_fraction=phi) for phi in fresh_fractions]
    table = []
    for a in ETA_K_TABLE:
        ks = [max_stable_refresh_interval(a, mu, 1.0, fresh_fraction=phi)
              for phi in fresh_fractions]
        table.append({"eta_K": a, "max_stable_refresh_interval": min(ks),
                      "every_refresh_interval_stable": all(x == math.inf for x in ks)})
    small = table[0]["every_refresh_interval_stable"]
    return {
        "exact_eta_K": [min(stars), max(stars)],
        "published_eta_K": float(get("discrete.published_threshold_learning_rate").numeric(mu, k)),
        "refresh_table": [{**r, "max_stable_refresh_interval": None if r[
            "max_stable_refresh_interval"] == math.inf else r["max_stable_refresh_interval"]}
            for r in table],
        "refresh_threshold": ("none at small eta K: with this split a long window relaxes onto "
                              "the fresh force (phi > 1/2), every refresh interval is stable for "
                              f"eta K <= {ETA_K_TABLE[0]:g}") if small else
                             ("exists at every eta K (phi <= 1/2: the force is mostly stale, "
                              "the refresh lag erodes it)"),
        "refresh_threshold_exists_at_small_eta_K": not small,
    }


class StiffnessNotMeasured(ParameterError):
    """``--from-log`` names a readable log from which K cannot be measured (neither route
    applies): ``check_config`` reports K as unknown with the reasons instead of failing."""


def p_ref_for_plateau(mp: ConfigMapping, p_star: float) -> float | None:
    """The reference success rate that puts the config's bandit fixed point at ``p_star`` (a
    plateau seen in a log): a 1-D root of ``stable_fixed_point(p_ref).p - p_star`` on (0, 1), or
    ``None`` where no p_ref gives it."""
    def gap(pr):
        try:
            return stable_fixed_point(config_model(mp, pr)).p - p_star
        except ParameterError:
            return math.nan

    # the first bracketing pair of the grid, scanned upwards (each point a fixed-point solve:
    # the scan stops at the first sign change instead of solving the whole grid first)
    grid = np.linspace(0.01, 0.99, 99)
    va = gap(grid[0])
    for a, b in zip(grid[:-1], grid[1:]):
        vb = gap(b)
        if np.isfinite(va) and np.isfinite(vb) and va * vb <= 0:
            return float(brentq(gap, a, b, xtol=1e-10))
        va = vb
    return None


def _earlier_mapping(log, config_path):
    """The mapped config of the earlier run: ``config_path`` if given, else a verl launch script
    kept at the top of its log, else a TRL ``GRPOConfig`` saved next to its
    ``trainer_state.json``, else ``None``."""
    if config_path is not None:
        cfg, kind = read_config(config_path)
        return map_config(cfg, kind), os.fspath(config_path)
    kind = log_config_kind(log.config)
    if kind is None:
        return None, None
    return map_config(log.config, kind), ("the launch script in the log" if kind == "verl"
                                          else "the GRPOConfig saved with the log")


def stiffness_from_log(path, *, metric=None, learning_rate=None, momentum=None,
                       refresh_interval=None, fresh_fraction=0.0, config=None) -> dict:
    r"""K per unit learning rate, with an interval, from an earlier run's log.

    The reward curve is read once, as ``fit`` reads it (:func:`grpo_theory.runs.fitting.
    summarize_curve`): where ``fit`` declines the curve (too few points, no rise significant at
    4 sd) there is no relaxation to measure, and K is read instead from
    the per-step fluctuations of a policy observable about the plateau
    (:func:`_stiffness_from_fluctuations`); where that does not apply either,
    :class:`StiffnessNotMeasured` names both routes' reasons.  Otherwise the exponential gives :math:`\tau` with its 95 % profile-likelihood
    interval (:meth:`~grpo_theory.runs.fitting.CurveSummary.relaxation_time_interval`, widened for
    the residuals' autocorrelation; its upper end is ``inf`` where a straight line fits as well);
    K is chosen so that the L3 time scale (:func:`grpo_theory.theory.oscillator.coefficients`
    ``.time_scale``) at the earlier run's :math:`\eta`, :math:`\mu` and lag equals
    :math:`\tau`, and the ends of :math:`\tau`'s interval give the ends of K's (``0`` for an
    unbounded :math:`\tau`).  The earlier run's learning rate is, in order: ``learning_rate``,
    the median learning rate logged over the fitted rise, its config (``config``, or a verl
    launch script in the log); its momentum and refresh interval come from the same config
    (defaults: Adam's 0.9 and 1, stated).
    """
    from grpo_theory.runs.fitting import summarize_curve

    log = read_log(path)
    name = log.reward_metric(metric)
    steps, values = log.series(name)
    summary = summarize_curve(steps, values, metric=name, models=["exponential"])
    if not summary.applicable:
        return _stiffness_from_fluctuations(log, path, name, summary.reasons,
                                            learning_rate=learning_rate, config=config)
    fit = summary.fits["exponential"]
    tau, se = summary.relaxation_time()
    earlier, earlier_src = _earlier_mapping(log, config)
    src = "given (--from-log-lr)"
    if learning_rate is None:
        end = steps[0] + (fit.time_to_90 if math.isfinite(fit.time_to_90) else np.inf)
        learning_rate, src = _logged_learning_rate(log, -np.inf, end, "the fitted rise")
        if learning_rate is None and earlier is not None and not earlier["learning_rate"]["assumed"]:
            learning_rate = earlier.value("learning_rate")
            src = f"the earlier run's config ({earlier['learning_rate']['source']})"
    if learning_rate is None:
        raise ParameterError("--from-log-lr", None, f"given: {os.fspath(path)} logs no learning "
                             "rate and no config with one was given (--from-log-config)")
    eta = check_real("learning rate of the earlier run", learning_rate, low=0, low_open=True)
    mom_src = refresh_src = "given"
    if momentum is None:
        momentum = earlier.value("momentum") if earlier else 0.9
        mom_src = earlier_src if earlier else "assumed: Adam's beta1 = 0.9 (no config of the earlier run)"
    if refresh_interval is None:
        refresh_interval = earlier.value("refresh_interval") if earlier else 1
        refresh_src = earlier_src if earlier else "assumed: 1, on-policy (no config of the earlier run)"
    lag = continuous_lag("refresh", refresh_interval)

    def K_for(t):
        def mismatch(K):
            return coefficients(eta, momentum, lag, K, fresh_fraction=fresh_fraction).time_scale - t

        hi = 1.0 / (t * eta)
        while mismatch(hi) > 0:
            hi *= 2
        lo = hi / 2
        while mismatch(lo) < 0 and lo > 1e-300:
            lo /= 2
        return brentq(mismatch, lo, hi, xtol=1e-12 * hi)

    if not (math.isfinite(tau) and tau > 0):
        raise ParameterError("--from-log", os.fspath(path), "a log whose reward curve has a "
                             "finite relaxation time (the exponential fit found none)")
    K = K_for(tau)
    prof = summary.relaxation_time_interval(0.95)
    t_lo, t_hi = prof["interval"]
    interval = [K_for(t_hi) if math.isfinite(t_hi) else 0.0,
                K_for(t_lo) if t_lo > 0 else math.inf]
    return {"value": K, "interval": interval, "tau_steps": tau, "tau_stderr": se,
            "tau_interval": [t_lo, t_hi], "r2": fit.r2,
            "initial_reward": fit.params["initial"], "plateau_reward": fit.params["plateau"],
            "gain": summary.gain, "learning_rate": eta, "learning_rate_source": src,
            "momentum": momentum, "momentum_source": mom_src,
            "refresh_interval": refresh_interval, "refresh_interval_source": refresh_src,
            "earlier_config": earlier_src, "metric": name, "source": os.fspath(path),
            "route": "relaxation",
            "method": "the reward curve read as fit reads it (runs.fitting.summarize_curve); the "
                      "exponential's tau; K such that the L3 time scale (oscillator.coefficients) "
                      "at the earlier run's eta, mu and lag equals tau; the interval maps the ends "
                      "of tau's 95 % profile-likelihood interval (runs.curves.relaxation_time_"
                      "profile, widened for autocorrelated residuals: a prefix that shows only the "
                      "start of a rise bounds a fast relaxation, not a slow one)"}


def _logged_learning_rate(log, first, last, where):
    """Median learning rate logged at steps ``first``..``last`` (all logged values where none
    falls there) and its source, naming the span as ``where``; ``(None, None)`` where the log
    has none."""
    lr_name = next((n for n in ("learning_rate", "train/learning_rate", "actor/lr", "lr")
                    if log.has(n)), None)
    if lr_name is None:
        return None, None
    ls, lv = log.series(lr_name)
    sel = lv[(ls >= first) & (ls <= last) & (lv > 0)]
    sel = sel if sel.size else lv[lv > 0]
    return (float(np.median(sel)), f"median of {lr_name} logged over {where}") if sel.size \
        else (None, None)


#: fewest rewards over the steps read for the plateau's trend test (``fit``'s own minimum)
PLATEAU_MIN_POINTS = 8


def off_plateau(log, reward, first, last) -> str | None:
    r"""Why the steps ``first``..``last`` of ``log`` are not at a plateau, or ``None``.

    The fluctuation route's model is the stiff mode's deviation *about a fixed point*
    (:mod:`grpo_theory.runs.policy_response`): a window in which the policy moves away from
    its plateau reads as a slow mode (a trend or a jump is what a random walk, :math:`\eta K
    \to 0`, explains best), so a run thrown off its plateau would be called stable.  The
    assumption is checked on the reward over the steps read, with the package's own tests and
    their bars, fixed before any run was looked at: ``fit``'s trend rule (the gain between the
    end levels, :func:`grpo_theory.runs.curves.curve_gain`, significant at
    :data:`~grpo_theory.runs.curves.TREND_Z` sd of its noise, either sign: the reward is still
    moving) and ``diagnose``'s collapse test on those steps
    (:func:`grpo_theory.runs.diagnostics.collapse`: a rise then a fall, a fall to the floor or
    below half of the highest level, each beyond 4 noise sd; or a divergence with a falling
    reward).  Fewer than :data:`PLATEAU_MIN_POINTS` rewards there: the trend is not tested (the
    collapse test states its own minimum)."""
    import dataclasses

    from grpo_theory.runs.curves import TREND_Z, curve_gain, gain_basis
    from grpo_theory.runs.diagnostics import collapse

    rs, rv = log.series(reward)
    sel = (rs >= first) & (rs <= last)
    v = rv[sel]
    why = []
    if v.size >= PLATEAU_MIN_POINTS:
        g = curve_gain(v)
        if g["gain_sd"] > 0 and abs(g["gain"]) > TREND_Z * g["gain_sd"]:
            why.append(f"{reward} {'falls' if g['gain'] < 0 else 'rises'} by {abs(g['gain']):.3g} "
                       f"over steps {first:g}-{last:g}, {abs(g['gain']) / g['gain_sd']:.1f} sd of "
                       f"its noise ({gain_basis(g)}; the trend bar is {TREND_Z:g} sd, fit's)")
    inside = {n: (st >= first) & (st <= last) for n, (st, _) in log.metrics.items()}
    window = dataclasses.replace(log, metrics={n: (st[inside[n]], va[inside[n]])
                                               for n, (st, va) in log.metrics.items()})
    c = collapse(window, reward)
    if c.get("flag"):
        why.append(f"{reward} collapses over steps {first:g}-{last:g} (diagnose's collapse test: "
                   + c["evidence"].split(";")[0] + ")")
    if not why:
        return None
    return ("the policy is not at a plateau over the steps read (" + "; ".join(why) + "), and the "
            "model reads fluctuations about one: a run moving off its plateau reads as a slow, "
            "stable mode, so K is not measured from these steps")


def _stiffness_from_fluctuations(log, path, reward, reasons, *, learning_rate, config) -> dict:
    r"""K from the per-step fluctuations of a policy observable about the plateau, where the
    reward curve shows no relaxation (:mod:`grpo_theory.runs.policy_response`: the exact L2
    dynamics of the earlier run's window and optimizer as a state-space model).  The split
    :math:`\phi` of the earlier run's variant comes from its p_ref, solved from the plateau
    the log's reward sits at (a success rate); at k = 1 no split enters.  Raises
    :class:`StiffnessNotMeasured` with the reasons of both routes where neither applies."""
    from grpo_theory.runs.policy_response import (OBSERVABLE_ROLES, linear_range,
                                                  stiffness_from_fluctuations,
                                                  stiffness_over_splits)

    def refuse(why):
        raise StiffnessNotMeasured(
            "--from-log", os.fspath(path),
            "a log whose reward curve fit accepts, or whose per-step policy observable the "
            "state-space model reads (K cannot be measured from this one: the reward curve: "
            + "; ".join(reasons) + "; the fluctuations: " + why + ")")

    earlier, earlier_src = _earlier_mapping(log, config)
    if earlier is None:
        refuse("they need the run's window and optimizer, from a GRPOConfig saved with the log, "
               "a verl launch script in it, or --from-log-config")
    kind = read_config(config)[1] if config is not None else log_config_kind(log.config)
    if kind != "trl" and earlier.value("refresh_interval") > 1:
        refuse(f"a {kind} log counts its steps in generations (one logged value per window of "
               f"{earlier.value('refresh_interval')} optimizer steps), and the model needs the "
               "observable at every optimizer step (TRL logs it so)")
    obs = next((log.role(r) for r in OBSERVABLE_ROLES if log.role(r)), None)
    if obs is None:
        refuse("the log has no per-step entropy or KL")
    steps, y = log.series(obs)
    if not steps.size:
        refuse(f"{obs} has no finite value")
    clip, cf = _clip_of(earlier), log.role("clip_frac")
    if clip is not None and cf is not None:
        _, cv = log.series(cf)
        active = int(np.sum(cv > 0))
        if active:
            refuse(f"the clip is active ({cf} > 0 at {active} of {cv.size} steps): a clipped step "
                   "pushes less than the linear model says")
    k, mu = earlier.value("refresh_interval"), earlier.value("momentum")
    m = earlier.value("window_batches") if earlier.value("reuse") == "batch" else 0
    lr_src = "given (--from-log-lr)"
    if learning_rate is None:
        learning_rate, lr_src = _logged_learning_rate(log, steps[0], steps[-1], "those steps")
    if learning_rate is None and not earlier["learning_rate"]["assumed"]:
        learning_rate = earlier.value("learning_rate")
        lr_src = f"the earlier run's config ({earlier['learning_rate']['source']})"
    if learning_rate is None:
        raise ParameterError("--from-log-lr", None, f"given: {os.fspath(path)} logs no learning "
                             "rate and no config with one was given (--from-log-config)")
    rs, rv = log.series(reward)
    ok = np.isfinite(rv)
    rs, rv = rs[ok], rv[ok]
    binary = rv.size > 0 and rv.min() >= 0 and rv.max() <= 1

    def plateau_over(last_step):
        """The rewards' mean up to ``last_step`` and its 95 % interval (z 1.96, the values'
        own spread: the batch noise and the plateau's wander)."""
        sel = rv[rs <= last_step]
        if not sel.size:
            return None, []
        mean = float(np.mean(sel))
        hw = 1.96 * float(np.std(sel, ddof=1)) / math.sqrt(sel.size) if sel.size >= 2 else 0.0
        return mean, [mean - hw, mean, mean + hw]

    def split(p_ref):
        phis = [f["fresh_fraction"] for f in _variant_split(earlier, p_ref)["fixed_points"]]
        return phis[0] if phis else None

    def fit(phi):
        try:
            return stiffness_from_fluctuations(steps, y, learning_rate=learning_rate, momentum=mu,
                                               refresh_interval=k, fresh_fraction=phi,
                                               window_batches=m, observable=obs)
        except ParameterError as exc:
            refuse(str(exc))

    p_ref_at = {}

    def p_ref_of(level):
        """p_ref for a plateau level (each a root search over fixed points: solved once)."""
        if level not in p_ref_at:
            p_ref_at[level] = (p_ref_for_plateau(earlier, level)
                               if binary and level is not None and 0 < level < 1 else None)
        return p_ref_at[level]

    no_split = (f"at k = {k} the split phi = K_f/K enters, and it depends on p_ref, which the "
                f"reward's plateau does not give ({reward} is not a success rate at an interior "
                "fixed point of the variant)")
    last = float(steps[-1])
    plateau, levels = plateau_over(last)
    p_mid = p_ref_of(plateau)
    if k == 1:
        phi_src = "not needed: at k = 1 the sampling policy is the current one"
        r = fit(0.0)
        cands = [{"p_ref": p_mid, "fresh_fraction": 0.0, "fit": r}]
    else:
        if p_mid is None or split(p_mid) is None:
            refuse(no_split)
        # the plateau is read over the steps the model describes: where the linear range ends
        # early (the run left its plateau), it is read again from the rewards before the end
        try:
            lin = linear_range(steps, y, momentum=mu, refresh_interval=k,
                               fresh_fraction=split(p_mid), window_batches=m, observable=obs)
        except ParameterError as exc:
            refuse(str(exc))
        if lin["last_step"] < last:
            last = lin["last_step"]
            plateau, levels = plateau_over(last)
            p_mid = p_ref_of(plateau)
            if p_mid is None or split(p_mid) is None:
                refuse(no_split)
        # p_ref is known only as far as the plateau is: the p_ref of its interval give a range
        # of splits, weighed by the rewards' likelihood of their plateau level and by the
        # observable's of (eta K, split) together (the joint profile set); each kept split is a
        # candidate with its own eta K interval and its own verdict
        grid, prior = [], []
        hw = (levels[-1] - levels[0]) / 2
        levels_grid = (np.linspace(levels[0], levels[-1], SPLIT_POINTS) if len(levels) > 1
                       else np.array(levels))
        levels_grid[len(levels_grid) // 2] = plateau      # the middle level is the plateau itself
        for lv in levels_grid:
            pr = p_ref_of(float(lv))
            phi = split(pr) if pr is not None else None
            if phi is not None and all(abs(phi - g[1]) > 1e-12 for g in grid):
                grid.append((pr, phi))
                # the rewards' own likelihood of this plateau level (normal, se = hw / 1.96)
                prior.append(-0.5 * ((lv - plateau) / (hw / 1.96)) ** 2 if hw > 0 else 0.0)
        if not grid:
            refuse(no_split)
        try:
            r = stiffness_over_splits(steps, y, learning_rate=learning_rate, momentum=mu,
                                      refresh_interval=k, window_batches=m, observable=obs,
                                      fresh_fractions=[g[1] for g in grid], split_loglik=prior)
        except ParameterError as exc:
            refuse(str(exc))
        cands = []
        for (pr, _), b in zip(grid, r["by_split"]):
            if b["eta_K_interval"] is not None:
                cands.append({"p_ref": pr, "fresh_fraction": b["fresh_fraction"], "fit": {
                    "eta_K": b["eta_K"], "eta_K_interval": b["eta_K_interval"],
                    "value": b["eta_K"] / r["learning_rate"],
                    "interval": [v / r["learning_rate"] for v in b["eta_K_interval"]]}})
        p_mid = next(c["p_ref"] for c in cands if c["fresh_fraction"] == r["fresh_fraction"])
        phi_src = (f"the variant's bandit fixed point at p_ref {p_mid:.4g}, the split the data "
                   f"favour among those of the plateau {plateau:.4g} of {reward} up to step "
                   f"{last:g} (95 % interval {levels[0]:.4g}-{levels[-1]:.4g}: p_ref "
                   f"{min(g[0] for g in grid):.4g}-{max(g[0] for g in grid):.4g}, phi "
                   f"{min(g[1] for g in grid):.3g}-{max(g[1] for g in grid):.3g}; "
                   f"{len(cands)} of {len(grid)} kept by the joint 95 % set of eta K and phi, "
                   "each checked)")
    off = off_plateau(log, reward, r["first_step"], r["last_step"])
    if off:
        refuse(off)
    p_ref = p_mid
    phi = r["fresh_fraction"]
    candidates = [{"p_ref": c["p_ref"], "fresh_fraction": c["fresh_fraction"],
                   "eta_K": c["fit"]["eta_K"], "eta_K_interval": c["fit"]["eta_K_interval"],
                   "value": c["fit"]["value"], "interval": c["fit"]["interval"]} for c in cands]
    end = r["linear_range_end"]
    return {"value": r["value"], "interval": r["interval"], "eta_K_measured": r["eta_K"],
            "eta_K_measured_interval": r["eta_K_interval"],
            "tau_steps": None, "tau_stderr": None, "tau_interval": None, "r2": None,
            "initial_reward": None, "plateau_reward": plateau, "reference_reward": p_ref,
            "plateau_interval": [levels[0], levels[-1]] if levels else None,
            "fresh_fraction": phi, "fresh_fraction_source": phi_src, "gain": None,
            "learning_rate": float(learning_rate), "learning_rate_source": lr_src,
            "momentum": mu, "momentum_source": earlier_src, "refresh_interval": k,
            "refresh_interval_source": earlier_src, "window_batches": m,
            "earlier_config": earlier_src, "metric": obs, "reward_metric": reward,
            "source": os.fspath(path), "route": "fluctuations", "candidates": candidates,
            "_earlier": earlier,
            "observable": obs, "steps_used": [r["first_step"], r["last_step"]],
            "linear_range_end": end, "reward_curve_reasons": list(reasons),
            "method": "the reward curve shows no relaxation (" + "; ".join(reasons) + "), so K "
                      f"is read from the per-step fluctuations of {obs} about the plateau: the "
                      "exact L2 step map of the earlier run's window and optimizer "
                      "(discrete.refresh_step_matrix) as a linear Gaussian state-space model, "
                      "its likelihood by the Kalman filter, eta K's 95 % profile-likelihood "
                      f"interval (runs.policy_response) over steps {r['first_step']:g}-"
                      f"{r['last_step']:g}" + (f" (the linear range ends at step {end['step']:g}: "
                                              "the next steps are not what the linear model "
                                              "predicts)" if end else "")}


@dataclass(frozen=True)
class ConfigCheck(Result):
    """What ``check-config`` answers (``to_dict()`` is the ``--json`` contract)."""

    config: str
    kind: str
    parameters: dict
    variant: dict
    thresholds: dict | None
    stiffness: dict | None
    prediction: dict
    assumptions: tuple = ()
    warnings: tuple = field(default=())

    def to_dict(self) -> dict:
        out = super().to_dict()
        out["parameters"] = {k: jsonable(v) for k, v in self.parameters.items()}
        return out

    def __str__(self) -> str:
        def f(x, spec=".4g"):
            if x is None:
                return "unknown"
            if isinstance(x, float):
                return format(x, spec)
            return str(x)

        L = [f"{self.config} ({self.kind} config)"]
        for name, p in self.parameters.items():
            tag = " [default]" if p.get("assumed") else ""
            L.append(f"  {name:<17} = {f(p['value'])}   ({p['source']}){tag}")
            if p.get("warning"):
                L.append(f"  {'':<17}   warning: {p['warning']}")
        v = self.variant
        L.append(f"variant: {v['normalization']} normalization, KL {v['kl']} (beta "
                 f"{f(v['kl_coef'])}), {v['surrogate']} surrogate, G = {v['group_size']}")
        if v["fresh_fraction_range"]:
            lo, hi = v["fresh_fraction_range"]
            L.append(f"  fresh fraction phi = K_f/K: {_span(lo, hi)}" + (
                "   (> 1: the stale part K_s = K - K_f is negative, it pulls against the fresh "
                "force)" if hi > 1 else "   (< 0: the fresh part K_f is negative, the stale part "
                "carries the whole restoring force)" if lo < 0 else ""))
            L.append(f"  split from {v['split_source']}")
        if v["reason"]:
            L.append(f"  note: {v['reason']}")
        t = self.thresholds
        if t:
            lo, hi = t["exact_eta_K"]
            L.append(f"thresholds (mu = {f(self.parameters['momentum']['value'])}, k = "
                     f"{self.parameters['refresh_interval']['value']}):")
            L.append(f"  exact L2: unstable above eta K = {_span(lo, hi)}"
                     + f"   (published rule eta K k < 1 - mu: "
                     f"{t['published_eta_K']:.4g})")
            L.append(f"  refresh threshold: {t['refresh_threshold']}")
            L.append("  largest stable refresh interval at eta K = "
                     + ", ".join(f"{r['eta_K']:g}: "
                                 + ("every k" if r["every_refresh_interval_stable"] else
                                    str(r["max_stable_refresh_interval"]))
                                 for r in t["refresh_table"]))
        K = self.stiffness
        if K:
            iv = K.get("interval")
            L.append(f"stiffness K = {K['value']:.4g} per unit lr"
                     + (f" [{iv[0]:.4g}, {f(iv[1])}]" if iv else "")
                     + f" ({K['source']})")
        p = self.prediction
        L.append(f"prediction: stable {p['stable'] if p['stable'] is not None else 'unknown'}"
                 f", regime {f(p['regime'])}, eta K = {f(p['eta_K'])}"
                 + (f" [{p['eta_K_interval'][0]:.4g}, {f(p['eta_K_interval'][1])}]"
                    if p.get("eta_K_interval") else "")
                 + f", margin {f(p['stability_margin'])}")
        L.append("  largest stable refresh interval " + (
            "none (every k stable)" if p.get("stable_for_every_refresh_interval") else
            f(p["max_stable_refresh_interval"])))
        cr = p.get("collapse_risk")
        if cr is not None:
            if cr.get("probability") is not None:
                L.append(f"  collapse risk within {cr['steps']} steps: {cr['probability']:.3g}"
                         + (f" (best change: {cr['best_knob']})" if cr.get("best_knob") else ""))
            else:
                L.append(f"  collapse risk: unknown ({cr.get('reason')})")
        r = p.get("reuse")
        if r:
            L.append(f"  reuse: {r['passes']} pass(es) over each sample per window, "
                     + ("clip" if r["clipped"] else "no clip") + ": "
                     + (r["verdict"] or "unknown") + (f" (trust-region number "
                     f"{r['trust_region_number']:.3g})" if r["trust_region_number"] is not None else "")
                     + f" -- {r['reason']}")
        if p.get("risk"):
            L.append(f"  risk: {p['risk']}")
        for u in p["unknown"]:
            L.append(f"  unknown: {u}")
        for w in self.warnings:
            L.append(f"  warning: {w}")
        if self.assumptions:
            L.append("assumptions:")
            L.extend(f"  - {a}" for a in self.assumptions)
        return "\n".join(L)


def _span(lo, hi, spec=".4g") -> str:
    """``lo .. hi``, or one number when both print the same (never ``3.8 .. 3.8``)."""
    a, b = format(lo, spec), format(hi, spec)
    return a if a == b else f"{a} .. {b}"


def _same_file(a, b) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def check_config(path, *, stiffness=None, from_log=None, from_log_lr=None, metric=None,
                 p_ref=None, steps=None, from_log_config=None) -> ConfigCheck:
    """Map ``path`` to the model and say what is known about its stability (see module doc).

    ``path`` is a config file, or a mapping of TRL trainer arguments (e.g.
    ``GRPOConfig.to_dict()``, as the TRL callback passes them)."""
    warnings = []                      # the file's own (keys not read, ...) come first
    unknown = []                       # the file's own (keys whose value is not in it) first
    if isinstance(path, Mapping):
        cfg, kind, path = dict(path), "trl", "<trainer arguments>"
    else:
        if from_log is not None and _same_file(path, from_log):
            raise ParameterError("--from-log", os.fspath(from_log), "the log of a different run "
                                 "than CONFIG (fitting a run's own curve predicts it stable by "
                                 "construction)")
        cfg, kind = read_config(path, warnings=warnings, unknown=unknown)
    mp = map_config(cfg, kind)
    if stiffness is not None and from_log is not None:
        raise ParameterError("--stiffness/--from-log", "both", "only one of them")
    if p_ref is not None:
        p_ref = check_real("p_ref", p_ref, low=0, high=1, low_open=True, high_open=True)
    if steps is None:
        steps = mp.value("steps") if "steps" in mp else 1000
    steps = check_int("steps", steps, low=1)
    assumptions = [
        "optimizer torch SGD: heavy ball with mu = the momentum of optim_args; eta K is the "
        "per-step product, K per unit configured learning rate" if torch_sgd(cfg, kind) else
        "optimizer Adam(W): heavy ball with mu = beta1 (adam.momentum_form); eta K is the "
        "per-step product, K per unit configured learning rate (it absorbs Adam's "
        "(1 - beta1)/sqrt(v_hat)); near the threshold Adam's v_hat grows and damps the step "
        "(theory.adam), so a crossing may first show as growing gradient norms",
        "the refresh window is the lag (discrete L2 monodromy); the clip is inactive to "
        "linear order; loss_type aggregation is a constant factor on the bandit",
    ]
    variant = _variant_split(mp, p_ref)
    if variant["reason"]:
        unknown.append("split: " + variant["reason"])
    k, mu = mp.value("refresh_interval"), mp.value("momentum")
    phis = sorted({fp["fresh_fraction"] for fp in variant["fixed_points"]})
    thresholds = variant_thresholds(mu, k, phis) if phis else None
    if thresholds is None:
        unknown.append("thresholds in eta K: they need the split of the force (above)")
    if p_ref is None and phis and variant["kl"] != "none":
        assumptions.append("p_ref not given: the split is taken over p_ref in "
                           + ", ".join(format(x, "g") for x in P_REF_GRID)
                           + " and every statement holds for the whole range")
    if mp.value("reuse") == "batch":
        warnings.append(f"batch reuse: {mp.value('refresh_interval')} optimizer steps per "
                        f"generation cycle through {mp.value('window_batches')} batch(es): the "
                        "same mean force, but window-correlated noise (larger fluctuations and "
                        "collapse risk, theory.reuse)")
    K_info = earlier_mp = None
    if stiffness is not None:
        Kv = check_real("stiffness", stiffness, low=0, low_open=True)
        K_info = {"value": Kv, "interval": [Kv, Kv], "source": "given (--stiffness)"}
    elif from_log is not None:
        if from_log_lr is not None:
            from_log_lr = check_real("from_log_lr", from_log_lr, low=0, low_open=True)
        try:
            K_info = stiffness_from_log(from_log, metric=metric, learning_rate=from_log_lr,
                                        fresh_fraction=phis[0] if len(phis) == 1 else 0.0,
                                        config=from_log_config)
        except StiffnessNotMeasured as exc:
            unknown.append(f"stiffness K: not measured from {os.fspath(from_log)}: {exc.allowed}")
        if K_info is not None and K_info.get("route", "relaxation") == "relaxation":
            t_lo, t_hi = K_info["tau_interval"]
            K_info["source"] = (f"measured from {K_info['source']} (tau = {K_info['tau_steps']:.4g} "
                                f"steps, 95 % interval [{t_lo:.4g}, "
                                + (f"{t_hi:.4g}]" if math.isfinite(t_hi) else "inf: a line fits as well)")
                                + f", lr {K_info['learning_rate']:g}: {K_info['learning_rate_source']})")
            if p_ref is None and K_info["initial_reward"] is not None and 0 < K_info["initial_reward"] < 1:
                p_ref = K_info["initial_reward"]
        elif K_info is not None:
            lo_a, hi_a = K_info["eta_K_measured_interval"]
            K_info["source"] = (f"measured from the fluctuations of {K_info['observable']} in "
                                f"{K_info['source']} (steps {K_info['steps_used'][0]:g}-"
                                f"{K_info['steps_used'][1]:g}: eta K = {K_info['eta_K_measured']:.4g}, "
                                f"95 % interval [{lo_a:.4g}, " + (f"{hi_a:.4g}]" if math.isfinite(hi_a)
                                                                  else "inf]")
                                + f", lr {K_info['learning_rate']:g}: {K_info['learning_rate_source']}"
                                + (f"; phi {K_info['fresh_fraction']:.3g}: {K_info['fresh_fraction_source']}")
                                + ")")
            if p_ref is None and K_info["reference_reward"] is not None:
                p_ref = K_info["reference_reward"]
                assumptions.append(f"p_ref = {p_ref:.4g}: the reference reward that puts the variant's "
                                   f"fixed point at the plateau {K_info['plateau_reward']:.4g} of "
                                   f"{K_info['reward_metric']} in {os.fspath(from_log)}")
                assumptions[:] = [a for a in assumptions if not a.startswith("p_ref not given")]
                variant = _variant_split(mp, p_ref)
                phis = sorted({fp["fresh_fraction"] for fp in variant["fixed_points"]})
                thresholds = variant_thresholds(mu, k, phis) if phis else None
                unknown[:] = [u for u in unknown if not u.startswith(("split: ", "thresholds in eta K"))]
                if variant["reason"]:
                    unknown.append("split: " + variant["reason"])
        if K_info is not None:
            earlier_mp = K_info.pop("_earlier", None)
            assumptions.append("stiffness from an earlier run: same task and model, so K per unit "
                               "lr carries over; " + K_info["method"])
            _bandit_rescale(K_info, from_log, from_log_config, mp, p_ref, assumptions)
    reuse = _reuse(mp, from_log, from_log_config, metric)
    assumptions.extend(reuse["assumptions"])
    prediction = {"stable": None, "regime": None, "stability_margin": None,
                  "max_stable_refresh_interval": None, "stable_for_every_refresh_interval": None,
                  "eta_K": None, "eta_K_interval": None, "collapse_risk": None,
                  "unknown": unknown}
    if K_info is None:
        if from_log is None:
            unknown.append("stiffness K: the verdict needs eta K (give --stiffness K or --from-log "
                           "LOG of an earlier run on the same task); the thresholds above are in "
                           "eta K")
        unknown.append("collapse risk: needs eta K")
    else:
        assumptions.append("the verdict must hold for every K of its interval and every split "
                           "phi of the variant's range (the bandit's split: the LLM's own split "
                           "is not measured)")
        _predict(prediction, mp, K_info, phis, variant, p_ref, steps, unknown, earlier=earlier_mp)
    _combine(prediction, reuse, unknown)
    return ConfigCheck(config=os.fspath(path) if not isinstance(path, str) else path, kind=kind, parameters=dict(mp), variant=variant,
                       thresholds=thresholds, stiffness=K_info, prediction=prediction,
                       assumptions=tuple(assumptions), warnings=tuple(warnings))


def _bandit_rescale(K_info, from_log, from_log_config, mp, p_ref, assumptions):
    """K of the earlier run carried over to this config: K = (tangent-kernel scale of the model
    on the task) x (the bandit's stiffness at the variant's fixed point); the first factor is
    the model's and the task's and carries over, the second is recomputed for this config's
    variant and reference reward (``p_ref``; the earlier run's is its fitted initial reward,
    i.e. it started from its reference).  Scales ``K_info`` in place and records the factor;
    where either fixed point is unknown (no earlier config, no interior fixed point) K is
    carried over unscaled and the assumption says so."""
    p_old = K_info.get("reference_reward") or K_info.get("initial_reward")
    earlier = None
    if from_log is not None:
        try:
            earlier, _ = _earlier_mapping(read_log(from_log), from_log_config)
        except (ParameterError, OSError):
            earlier = None
    why = None
    if earlier is None:
        why = "the earlier run's config is unknown"
    elif p_old is None or not 0 < p_old < 1 or p_ref is None:
        why = ("the earlier run's reference reward is unknown (" + (
            "fitted initial reward not in (0, 1))" if K_info.get("route") == "relaxation" else
            "no p_ref puts the variant's fixed point at its plateau)"))
    else:
        try:
            k_old, k_new = _bandit_stiffnesses(earlier, p_old, mp, p_ref)
        except ParameterError as exc:
            why = f"no bandit fixed point for one of the two variants ({exc.allowed})"
        else:
            if not (k_old > 0 and k_new > 0):
                why = "a bandit stiffness <= 0"
    if why is not None:
        assumptions.append("K carried over unscaled (the bandit factor of the two variants is "
                           f"not compared: {why}): the two runs must share the variant and p_ref")
        return
    ratio = k_new / k_old
    K_info["bandit_factor"] = {"earlier": k_old, "this": k_new, "ratio": ratio,
                               "p_ref_earlier": p_old, "p_ref": p_ref}
    if abs(ratio - 1.0) > 1e-12:
        K_info["value"] *= ratio
        if K_info.get("interval"):
            K_info["interval"] = [v * ratio for v in K_info["interval"]]
        K_info["source"] += (f"; x {ratio:.4g}, the bandit stiffness of this variant at p_ref "
                             f"{p_ref:.3g} ({k_new:.4g}) over the earlier run's at p_ref "
                             f"{p_old:.3g} ({k_old:.4g})")
    assumptions.append("K = (tangent-kernel scale of the model on the task, carried over from "
                       "the earlier run) x (the bandit's stiffness at the fixed point, recomputed "
                       "for this variant and p_ref; " + (
                           "the earlier run started from its reference, p_ref = its fitted "
                           "initial reward)" if K_info.get("route", "relaxation") == "relaxation"
                           else "the earlier run's p_ref puts its fixed point at its plateau)"))


def _bandit_stiffnesses(earlier, p_old, mp, p_new):
    """The bandit stiffness of the earlier run's variant at ``p_old`` and of this config's at
    ``p_new`` (raises :class:`ParameterError` where either has no stable fixed point)."""
    return (stable_fixed_point(config_model(earlier, p_old)).stiffness,
            stable_fixed_point(config_model(mp, p_new)).stiffness)


def _bandit_ratio(earlier, mp, p_ref):
    """This config's bandit stiffness over the earlier run's (``earlier``: its mapped config),
    both at ``p_ref`` (a candidate of the fluctuation route), or ``None`` where either fixed
    point is missing."""
    if earlier is None or p_ref is None:
        return None
    try:
        k_old, k_new = _bandit_stiffnesses(earlier, p_ref, mp, p_ref)
    except ParameterError:
        return None
    return k_new / k_old if k_old > 0 and k_new > 0 else None


def _passes(mp):
    """Passes over each sample per refresh window (1 unless the window re-uses its batches)."""
    if mp.value("reuse") != "batch":
        return 1
    return mp.value("refresh_interval") // mp.value("window_batches")


def _clip_of(mp):
    """The clip as a trust region: ``(low, high)``, or ``None`` for a loss without one -- or one
    so wide (``log(1 + eps_high) >= 1``, ratios beyond e) that it bounds nothing the linear
    surrogate describes."""
    if mp.value("surrogate") != "ratio" or "clip" not in mp:
        return None
    lo, hi = mp.value("clip")
    return None if math.log1p(hi) >= 1.0 else (lo, hi)


def _reuse(mp, from_log, from_log_config, metric) -> dict:
    """The reuse-collapse criterion of the config's window (:mod:`grpo_theory.runs.reuse_check`),
    the self push measured from the earlier run's ratio statistics where it revisits its
    samples."""
    from grpo_theory.runs.reuse_check import self_push_from_log, reuse_check

    P, clip = _passes(mp), _clip_of(mp)
    push = None
    if from_log is not None and P >= 2:
        log = read_log(from_log)
        earlier, _ = _earlier_mapping(log, from_log_config)
        if earlier is not None and _passes(earlier) >= 2:
            ec = _clip_of(earlier)
            push = self_push_from_log(log, _passes(earlier), clip=ec[1] if ec else 0.2,
                                      window_batches=earlier.value("window_batches"))
    out = reuse_check(P, surrogate=mp.value("surrogate"), clip=clip,
                      self_push=push["value"] if push else None,
                      self_push_interval=push["interval"] if push else None,
                      self_push_source=(f"{push['metric']} of {os.fspath(from_log)}: "
                                        f"{push['method']}") if push else "")
    return out


def _combine(pred, reuse, unknown):
    """The verdict holds only if the linear thresholds and the reuse criterion both allow it."""
    pred["reuse"] = {k: v for k, v in reuse.items() if k != "assumptions"}
    rv, lin = reuse["verdict"], pred["stable"]
    if rv == "unstable" or lin is False:
        pred["stable"] = False
    elif rv == "at risk":
        pred["stable"] = None
        pred["risk"] = "at risk: " + reuse["reason"]
        unknown.append("verdict: the reuse criterion says at risk (" + reuse["reason"] + ")")
    elif rv is None:
        if lin is True:
            unknown.append("verdict: the linear thresholds say stable, the reuse criterion is "
                           "unknown (" + reuse["reason"] + ")")
        pred["stable"] = None
    if pred["stable"] is False and rv in ("unstable", "at risk") and lin is not False:
        pred["risk"] = reuse["reason"]


def _predict(pred, mp, K_info, phis, variant, p_ref, steps, unknown, earlier=None):
    eta, mu, k = mp.value("learning_rate"), mp.value("momentum"), mp.value("refresh_interval")
    K = K_info["value"]
    pred["eta_K"] = eta * K
    iv = K_info.get("interval")
    if iv is not None:
        pred["eta_K_interval"] = [eta * iv[0], eta * iv[1]]
    if not phis:
        unknown.append("verdict: the split of the force is unknown (see split), and the "
                       "thresholds depend on it")
        return
    # the ends of K's interval that are stiffnesses (a lower end 0 is "no lower bound": the
    # thresholds are upper bounds on eta K, so the smallest positive K checked is the central one)
    def ends_of(K_, iv_):
        return [K_] if iv_ is None else ([iv_[0]] if iv_[0] > 0 else []) + [K_] + (
            [iv_[1]] if math.isfinite(iv_[1]) else [])

    ends = ends_of(K, iv)
    cands = K_info.get("candidates") or []
    if len(cands) > 1 and p_ref == K_info.get("reference_reward"):
        # the earlier run's p_ref is known only within its plateau's interval: each candidate
        # p_ref pairs its own K interval (fitted with its own split) with this config's split and
        # bandit factor at the same p_ref (same task)
        combos = []
        for c in cands:
            ratio = _bandit_ratio(earlier, mp, c["p_ref"]) or 1.0
            phis_c = sorted({f["fresh_fraction"] for f in _variant_split(mp, c["p_ref"])["fixed_points"]})
            combos += [(Kx * ratio, ph) for Kx in ends_of(c["value"], c["interval"]) for ph in phis_c]
            if not math.isfinite(c["interval"][1]):
                iv = [iv[0], math.inf]
    else:
        combos = [(Kx, phi) for Kx in ends for phi in phis]
    results = [linear_stability(eta, mu, k, Kx, fresh_fraction=phi) for Kx, phi in combos]
    verdicts = {r.stable for r in results}
    if iv is not None and not math.isfinite(iv[1]):
        verdicts.add(False)            # K unbounded above: an unstable K is in the interval
    if iv is None:
        unknown.append("verdict: without K's interval only the central value is known")
    elif verdicts == {True}:
        pred["stable"] = True
    elif verdicts == {False}:
        pred["stable"] = False
    else:
        unknown.append("verdict: stable for part of the stiffness interval / split range and "
                       "unstable for the rest")
    central = [r for r in results if r.stiffness == K]
    regimes = {r.discrete_regime for r in central}
    pred["regime"] = regimes.pop() if len(regimes) == 1 else None
    a_stars = [r.max_stable_learning_rate * r.stiffness for r in results]
    a_hi = eta * (iv[1] if iv is not None else K)
    pred["stability_margin"] = 1.0 - a_hi / min(a_stars) if math.isfinite(a_hi) else None
    pred["stability_margin_meaning"] = ("1 - (largest eta K of the interval) / (smallest exact "
                                        "threshold over the split range): 0 at the threshold, "
                                        "negative beyond")
    kmax = [math.inf if r.stable_for_every_refresh_interval else r.max_stable_refresh_interval
            for r in results]
    worst = min(kmax)
    pred["stable_for_every_refresh_interval"] = worst == math.inf
    pred["max_stable_refresh_interval"] = None if worst == math.inf else worst
    pred["collapse_risk"] = _collapse(mp, K, variant, p_ref, steps)


def _collapse(mp, K, variant, p_ref, steps) -> dict:
    """Collapse risk of the bandit run with the config's eta K, G, B, window and reuse."""
    if p_ref is None:
        return {"probability": None, "steps": steps, "reason": "needs p_ref (--p-ref, or a "
                "--from-log fit whose initial reward is in (0, 1))"}
    if variant["normalization"] is None or variant["group_size"] < 2 or (
            variant["kl"] == "k1_reward" and variant["normalization"] != "mean"):
        return {"probability": None, "steps": steps, "reason": variant["reason"]}
    model = config_model(mp, p_ref)
    try:
        fp = stable_fixed_point(model)
    except ParameterError as exc:
        return {"probability": None, "steps": steps,
                "reason": f"no stable bandit fixed point at p_ref = {p_ref:.4g} ({exc.allowed})"}
    eta_b = mp.value("learning_rate") * K / fp.stiffness
    risk = collapse_risk(model.replace(learning_rate=eta_b), steps=steps)
    out = risk.to_dict()
    out["bandit_learning_rate"] = eta_b
    out["meaning"] = ("the bandit run with the same eta K (bandit lr = eta K / K_bandit), "
                      "G, prompts per step, window and reuse")
    return out
