r"""The stiffness from a per-step policy observable: the exact L2 dynamics as a state-space model.

A run that starts at its plateau (a warm start, a resumed run, a run whose reward is too noisy
to show its rise) has no relaxation in its reward curve to measure :math:`K` from, and a
reward logged once per generation is too sparse to show a window's dynamics.  But trainers log
*policy observables* at every optimizer step: TRL's ``entropy`` and ``kl`` are computed in the
loss's forward pass with the current parameters.  Near the fixed point every smooth observable
of the policy is, to first order, the deviation of the slow (stiff) mode: :math:`y_t = c + x_t +
e_t` in the observable's own units, with :math:`e_t` the measurement noise of the batch the
metric is averaged over.  The deviation obeys the exact discrete (L2) linearization of the
update, one heavy-ball step inside a refresh window at a time
(:func:`grpo_theory.theory.discrete.step_matrix`, lambdified from
``discrete.refresh_step_matrix``), driven by the gradient noise :math:`\xi_t`:

.. math::

    s_{t+1} = J(\eta K, \mu, \phi)\, s_t + b\, \xi_t,\qquad s = (x, v, x_s),\quad b = (1, 1, 0),

with :math:`x_s := x` at each refresh (the batch is drawn from the current policy), :math:`v_0 =
0` (a new optimizer's buffer) and :math:`x_0` unknown.  Fresh mini-batches give independent
kicks :math:`\xi_t` at every step; a window that re-uses its batches (TRL ``num_iterations``,
verl ``ppo_epochs``) kicks with the *same* draw of batch :math:`j \bmod m` at every pass over it
(``theory.reuse``: window-correlated noise), carried in the state and redrawn at each refresh.
This is a linear Gaussian state-space model, whose likelihood the Kalman filter computes
exactly.  The level :math:`c` and the initial deviation :math:`x_0` enter linearly: :math:`c`
is integrated out (the restricted likelihood, Harville, *JASA* 72, 1977; without it an
autoregression near 1 is biased towards fast relaxation) and :math:`x_0` profiled, both by the
augmented filter (de Jong, *Ann. Statist.* 19, 1991), the noise scale in closed form.  What is
left is :math:`\eta K` and the ratio of measurement to process noise; the ratio is maximized on
a grid and :math:`\eta K` has a 95 % profile-likelihood interval
:math:`2(\ell_{max} - \ell(\eta K)) \le \chi^2_{1, 0.95}` (its ends found to full precision; an
end beyond the grid, :math:`10^{-3} \le \eta K \le 4`, is reported as no bound).  On simulated
series of the model the interval covers the true :math:`\eta K` in about 95 % of seeds
(``tests/runs/test_policy_response.py``).

The linear range.  The model is linear in the deviation; a run that leaves its plateau (an
unstable window growing until the policy saturates) is linear only up to there.  So the series
is read block by block (a block: whole refresh windows, at least :data:`BLOCK_STEPS` steps): some
:math:`\eta K` of the 95 % interval that the steps so far allow must predict the next block,
its one-step standardized innovations' sum of squares within the :math:`\chi^2` quantile of
level 0.999 (the smallest over the interval: the parameters' own uncertainty does not end the
range); where none does, the linear range ends and :math:`\eta K` is measured on the steps
before.  A stable run loses
data at worst, never its verdict's direction.

What it needs, and declines without: the observable at every optimizer step (``logging_steps
= 1``; a mean over several steps is a different model) and at least :data:`MIN_STEPS` steps and
two refresh windows in the linear range.  What it assumes: the stiff mode dominates the
observable's fluctuations (the one slow mode of the bandit; a network's other modes relax
faster), the split :math:`\phi = K_f/K` of the variant is known, and the clip is inactive (a
clipped window pushes less than the linear model says).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize, stats

from grpo_theory.validate import ParameterError, check_int, check_real
from grpo_theory.runs.logs.base import step_number as _step

__all__ = ["MIN_STEPS", "OBSERVABLE_ROLES", "linear_range", "profile_loglik",
           "stiffness_from_fluctuations", "stiffness_over_splits"]

#: fewest consecutive per-step values of the observable
MIN_STEPS = 24
#: policy observables computed at the current parameters at every step, in order of preference
OBSERVABLE_ROLES = ("entropy", "kl")
#: chi-square(1) 95 % quantile: the profile-likelihood interval's drop is half of it
CHI2_95 = 3.841458820694124
#: fewest steps of a block of the linear-range scan (a block is whole refresh windows)
BLOCK_STEPS = 8
#: level of the linear-range test of each next block of steps
LINEAR_RANGE_LEVEL = 0.999
#: the grid of eta K (log-spaced) and of the measurement-to-process noise variance ratio
A_GRID = np.geomspace(1e-3, 4.0, 100)
RATIO_GRID = np.geomspace(1e-3, 1e4, 19)
#: the coarser grids of the linear-range scan (the model at the grid's best point is tested)
A_SCAN, RATIO_SCAN = np.geomspace(1e-3, 4.0, 49), np.geomspace(1e-3, 1e4, 11)
#: the noise input direction of the step map on (x, v, x_s): a kick enters v' and so x'
_B = np.array([1.0, 1.0, 0.0])


def _maps(a_grid, momentum, fresh_fraction, m):
    """Per-phase transition maps on (x, v, x_s, n_1..n_m), shape (m or 1, len(a), d, d): the
    step map of ``discrete.refresh_step_matrix`` with, for batch reuse, the kick of batch
    ``j mod m`` carried in the state."""
    from grpo_theory.theory.discrete import step_matrix

    J = np.stack([step_matrix(float(a), momentum, 1.0, fresh_fraction) for a in a_grid])
    d = 3 + m
    out = np.zeros((max(m, 1), len(a_grid), d, d))
    for j in range(max(m, 1)):
        out[j, :, :3, :3] = J
        if m:
            out[j, :, :3, 3 + j] = _B
            out[j, :, 3:, 3:] = np.eye(m)
    return out


def _filter(y, maps, r, *, k, m, phase, keep=False):
    """The augmented Kalman filter over ``y`` for P parameter sets at once (``maps``: (phases,
    P, d, d), ``r``: (P,) measurement-to-process variance ratios).  Columns: the data, the level,
    the initial deviation.  Returns ``(sum log F, sum E^T E / F)`` and, with ``keep``, the
    per-step innovations ``E`` (n, P, 3) and variances ``F`` (n, P)."""
    n = y.size
    P_, d = maps.shape[1], maps.shape[2]
    M = np.zeros((P_, d, 3))
    M[:, 0, 2] = M[:, 2, 2] = 1.0                 # x0: x = x_s = 1, v = 0
    C = np.zeros((P_, d, d))
    Qiid = np.zeros((d, d))
    if not m:
        Qiid[:3, :3] = np.outer(_B, _B)
    obs = np.zeros(3)
    logF = np.zeros(P_)
    EE = np.zeros((P_, 3, 3))
    Es, Fs = ([], []) if keep else (None, None)
    mapsT = np.swapaxes(maps, -1, -2)
    for t in range(n):
        j = (phase + t) % k
        if j == 0:                                   # refresh: x_s := x, new kicks
            M[:, 2, :] = M[:, 0, :]
            C[:, 2, :] = C[:, 0, :]
            C[:, :, 2] = C[:, :, 0]
            if m:
                M[:, 3:, :] = 0.0
                C[:, 3:, :] = 0.0
                C[:, :, 3:] = 0.0
                C[:, 3:, 3:] = np.eye(m)
        F = C[:, 0, 0] + r
        obs[0], obs[1] = y[t], 1.0
        E = obs[None, :] - M[:, 0, :]
        logF += np.log(F)
        EE += E[:, :, None] * E[:, None, :] / F[:, None, None]
        if keep:
            Es.append(E.copy())
            Fs.append(F.copy())
        G = C[:, :, 0] / F[:, None]
        M = M + G[:, :, None] * E[:, None, :]
        C = C - G[:, :, None] * C[:, None, 0, :]
        ph = (j % m) if m else 0
        A, AT = maps[ph], mapsT[ph]
        M = A @ M
        C = A @ C @ AT + Qiid
    if keep:
        return logF, EE, np.array(Es), np.array(Fs)
    return logF, EE


def _loglik(n, logF, EE):
    """Restricted log-likelihood (level integrated out, x0 profiled, the scale concentrated) and
    the GLS coefficients (level, x0) with the scale: ``(ll, beta, sigma2)``."""
    XtX, Xty = EE[:, 1:, 1:], EE[:, 1:, 0]
    beta = np.linalg.solve(XtX + 1e-300 * np.eye(2), Xty[:, :, None])[:, :, 0]
    rss = np.maximum(EE[:, 0, 0] - np.einsum("pi,pi->p", Xty, beta), 1e-300)
    ll = -0.5 * (logF + np.log(EE[:, 1, 1]) + (n - 1) * np.log(rss / (n - 1)) + (n - 1))
    return ll, beta, rss / (n - 1)


def profile_loglik(y, *, momentum=0.0, refresh_interval=1, fresh_fraction=0.0, phase=0,
                   window_batches=0, a_grid=A_GRID, ratio_grid=RATIO_GRID):
    r"""Log-likelihood of ``y`` (per-step observable, consecutive steps) for each
    :math:`\eta K` in ``a_grid``, maximized over the noise ratios of ``ratio_grid``.  ``phase``:
    position of ``y[0]`` in its refresh window (0 = the step at which the batch was drawn);
    ``window_batches``: 0 for fresh kicks at every step, m >= 1 for a window that re-uses m
    batches.  Returns ``(loglik, ratio)``, each of shape ``(len(a_grid),)``."""
    y = np.asarray(y, dtype=float)
    a_grid = np.asarray(a_grid, dtype=float)
    m = int(window_batches)
    maps = np.repeat(_maps(a_grid, momentum, fresh_fraction, m), len(ratio_grid), axis=1)
    r = np.tile(np.asarray(ratio_grid, dtype=float), a_grid.size)
    logF, EE = _filter(y, maps, r, k=int(refresh_interval), m=m, phase=phase)
    ll = _loglik(y.size, logF, EE)[0].reshape(a_grid.size, len(ratio_grid))
    best = np.argmax(ll, axis=1)
    return ll[np.arange(a_grid.size), best], np.asarray(ratio_grid)[best]


def _profile_max(z, kw, a_grid=A_GRID, ratio_grid=RATIO_GRID, xatol=1e-6):
    """The profile of eta K on ``a_grid`` (each point at its best noise ratio of ``ratio_grid``)
    and its maximum refined between the grid's neighbours (to ``xatol`` relative):
    ``(ll, ratio, a_hat, l_max, r_hat)``,
    ``ratio`` the grid points' best ratios and ``r_hat`` the one at ``a_hat``."""
    ll, ratio = profile_loglik(z, a_grid=a_grid, ratio_grid=ratio_grid, **kw)
    i = int(np.argmax(ll))
    left, right = a_grid[max(i - 1, 0)], a_grid[min(i + 1, a_grid.size - 1)]
    opt = optimize.minimize_scalar(lambda a: -_prof(z, a, kw, ratio_grid), bounds=(left, right),
                                   method="bounded", options={"xatol": xatol * right})
    a_hat, l_max = ((float(opt.x), -float(opt.fun)) if -opt.fun > ll[i]
                    else (float(a_grid[i]), float(ll[i])))
    r_hat = float(profile_loglik(z, a_grid=np.array([a_hat]), ratio_grid=ratio_grid, **kw)[1][0])
    return ll, ratio, a_hat, l_max, r_hat


def _prof(z, a, kw, ratio_grid=RATIO_GRID):
    return float(profile_loglik(z, a_grid=np.array([a]), ratio_grid=ratio_grid, **kw)[0][0])


def _ends(z, kw, ll, a_hat, cut):
    """The ends of ``{eta K: profile >= cut}`` around ``a_hat`` (its hull on the grid, each end
    found to full precision between the grid's neighbours; 0 and inf beyond the grid)."""
    last = A_GRID.size - 1
    inside = np.nonzero(ll >= cut)[0]
    a_lo = min(a_hat, A_GRID[inside.min()]) if inside.size else a_hat
    a_hi = max(a_hat, A_GRID[inside.max()]) if inside.size else a_hat

    def end(a_in, j_out):
        if j_out < 0 or j_out > last:
            return None
        a_out = float(A_GRID[j_out])
        return float(optimize.brentq(lambda a: _prof(z, a, kw) - cut, min(a_in, a_out),
                                     max(a_in, a_out), xtol=1e-7 * a_out))

    lo = end(a_lo, int(np.searchsorted(A_GRID, a_lo)) - 1)
    hi = end(a_hi, int(np.searchsorted(A_GRID, a_hi, side="right")))
    return 0.0 if lo is None else lo, math.inf if hi is None else hi


def _fit(z, kw):
    """Maximum and 95 % profile interval of eta K on the standardized series ``z``."""
    ll, _, a_hat, l_max, r_hat = _profile_max(z, kw)
    lo, hi = _ends(z, kw, ll, a_hat, l_max - CHI2_95 / 2)
    return {"a": a_hat, "lo": lo, "hi": hi, "ratio": r_hat, "l_max": l_max,
            "profile": (A_GRID, ll - l_max)}


def _block_statistics(z, cands, n_head, kw):
    """For each ``(a, ratio)`` of ``cands``: the sum of squared standardized one-step
    innovations of ``z[n_head:]`` under the model at ``(a, ratio)`` with the level, x0 and scale
    estimated from ``z[:n_head]`` (all candidates in one pass of the filter)."""
    m = int(kw["window_batches"])
    a = np.array([c[0] for c in cands], dtype=float)
    maps = _maps(a, kw["momentum"], kw["fresh_fraction"], m)
    _, _, E, F = _filter(z, maps, np.array([c[1] for c in cands], dtype=float),
                         k=kw["refresh_interval"], m=m, phase=kw["phase"], keep=True)
    # E: (n, P, 3), F: (n, P)
    head = np.einsum("tpi,tpj->pij", E[:n_head], E[:n_head] / F[:n_head, :, None])
    _, beta, s2 = _loglik(n_head, np.sum(np.log(F[:n_head]), axis=0), head)
    nu = E[n_head:, :, 0] - np.einsum("tpi,pi->tp", E[n_head:, :, 1:], beta)
    return np.sum(nu ** 2 / (s2[None, :] * F[n_head:]), axis=0)


def _block_rejects(z, n_head, kw):
    """Whether no eta K of the head's 99.9 % profile interval (on the scan's grids, the maximum
    refined) predicts the next block: the smallest block statistic over them above the
    chi-square quantile of :data:`LINEAR_RANGE_LEVEL`.  Returns ``(rejects, statistic, critical)``."""
    ll, ratio, a_hat, l_max, r_hat = _profile_max(z[:n_head], kw, A_SCAN, RATIO_SCAN, xatol=1e-5)
    drop = float(stats.chi2.ppf(LINEAR_RANGE_LEVEL, 1)) / 2
    cands = [(a_hat, r_hat)] + [(float(A_SCAN[j]), float(ratio[j]))
                                for j in np.nonzero(ll >= l_max - drop)[0]]
    stat = float(np.min(_block_statistics(z, cands, n_head, kw)))
    crit = float(stats.chi2.ppf(LINEAR_RANGE_LEVEL, z.size - n_head))
    return stat > crit, stat, crit


def _prepare(steps, y, *, learning_rate, momentum, refresh_interval, fresh_fraction,
             window_batches, observable):
    """Checked arguments, the finite series, and the filter's keywords."""
    eta = check_real("learning_rate", learning_rate, low=0, low_open=True)
    mu = check_real("momentum", momentum, low=0, high=1, high_open=True)
    k = check_int("refresh_interval", refresh_interval, low=1)
    phi = check_real("fresh_fraction", fresh_fraction)
    m = check_int("window_batches", window_batches, low=0)
    steps = np.asarray(steps, dtype=float)
    y = np.asarray(y, dtype=float)
    ok = np.isfinite(steps) & np.isfinite(y)
    steps, y = steps[ok], y[ok]
    need = max(MIN_STEPS, 2 * k)
    if y.size < need:
        raise ParameterError(observable, f"{y.size} per-step values",
                             f">= {need} (>= {MIN_STEPS} steps and two refresh windows of {k})")
    d = np.diff(steps)
    if not np.all(d == 1):
        raise ParameterError(observable, f"logged every {np.median(d):g} steps",
                             "a value at every optimizer step (logging_steps = 1): a mean over "
                             "several steps is not the per-step state")
    if np.ptp(y[:need]) <= 0:
        raise ParameterError(observable, "constant", "a per-step observable that fluctuates")
    kw = dict(momentum=mu, refresh_interval=k, fresh_fraction=phi,
              phase=int((steps[0] - 1) % k), window_batches=m)
    return eta, steps, y, need, kw


def _linear_range(steps, y, need, kw):
    """Steps in the linear range: extended by whole blocks while some eta K the steps so far
    allow predicts the next block (one-step innovations within the chi-square quantile).
    Returns ``(n_fit, ended)``."""
    k = kw["refresh_interval"]
    block = k * math.ceil(BLOCK_STEPS / k)
    n_fit, ended = min(need, y.size), None
    while n_fit < y.size:
        n_next = min(block, y.size - n_fit)
        z = y[:n_fit + n_next]
        zs = (z - y[:n_fit].mean()) / float(np.std(y[:n_fit]))
        rejects, stat, crit = _block_rejects(zs, n_fit, kw)
        if rejects:
            ended = {"step": float(steps[n_fit]), "statistic": stat, "critical": crit,
                     "block": int(n_next)}
            break
        n_fit += n_next
    return n_fit, ended


def _result(fit, eta, steps, n_fit, ended, observable, kw, n_logged):
    lo, hi = fit["lo"], fit["hi"]
    grid, prof = fit["profile"]
    return {"eta_K": fit["a"], "eta_K_interval": [lo, hi],
            "value": fit["a"] / eta, "interval": [lo / eta, hi / eta],
            "noise_ratio": fit["ratio"], "n_steps": int(n_fit), "n_logged": int(n_logged),
            "first_step": _step(steps[0]), "last_step": _step(steps[n_fit - 1]),
            "linear_range_end": ended, "observable": observable, "learning_rate": eta,
            "momentum": kw["momentum"], "refresh_interval": kw["refresh_interval"],
            "fresh_fraction": kw["fresh_fraction"], "window_batches": kw["window_batches"],
            "profile": {"eta_K": grid.tolist(), "loglik": prof.tolist()}}


def linear_range(steps, y, *, momentum=0.0, refresh_interval=1, fresh_fraction=0.0,
                 window_batches=0, observable="entropy") -> dict:
    """The last step of the series' linear range (module doc) and where and why it ended
    (``None``: the whole series), without the final fit."""
    _, steps, y, need, kw = _prepare(
        steps, y, learning_rate=1.0, momentum=momentum, refresh_interval=refresh_interval,
        fresh_fraction=fresh_fraction, window_batches=window_batches, observable=observable)
    n_fit, ended = _linear_range(steps, y, need, kw)
    return {"last_step": float(steps[n_fit - 1]), "ended": ended}


def stiffness_from_fluctuations(steps, y, *, learning_rate, momentum=0.0, refresh_interval=1,
                                fresh_fraction=0.0, window_batches=0,
                                observable="entropy") -> dict:
    r""":math:`\eta K` and :math:`K` with their 95 % profile-likelihood intervals from a per-step
    policy observable (module doc), over the series' linear range.  ``steps``: the optimizer
    steps of ``y`` (1-based, as TRL and verl count; consecutive); ``window_batches``: 0 for fresh
    mini-batches, m >= 1 for a window re-using m batches.  Raises :class:`ParameterError` where
    the model cannot be fitted (too few or non-consecutive steps, no fluctuation)."""
    eta, steps, y, need, kw = _prepare(
        steps, y, learning_rate=learning_rate, momentum=momentum,
        refresh_interval=refresh_interval, fresh_fraction=fresh_fraction,
        window_batches=window_batches, observable=observable)
    n_fit, ended = _linear_range(steps, y, need, kw)
    z = y[:n_fit]
    fit = _fit((z - z.mean()) / float(np.std(z)), kw)
    return _result(fit, eta, steps, n_fit, ended, observable, kw, y.size)


def stiffness_over_splits(steps, y, *, learning_rate, fresh_fractions, momentum=0.0,
                          refresh_interval=1, window_batches=0, observable="entropy",
                          split_loglik=None) -> dict:
    r"""Where the split :math:`\phi` is known only within a range: the set of
    :math:`(\eta K, \phi)` over ``fresh_fractions`` (a grid of the range) with
    :math:`2(\ell_{max} - \ell(\eta K, \phi)) \le \chi^2_{1, 0.95}`, the data weighing the
    splits too; ``split_loglik`` adds each split's own log-likelihood from other data (e.g. of
    the plateau that gives it).  Its projection on :math:`\eta K` is the profile-likelihood
    interval of :math:`\eta K` with :math:`\phi` profiled out, and its image under any one
    function of both (the window's spectral radius, the verdict) is that function's 95 %
    profile interval.  The linear range is found with the middle split.  Returns the fit at the
    best split (as :func:`stiffness_from_fluctuations`) with ``"by_split"``: per split, its
    :math:`\eta K` interval at the joint cut (``None`` where the split is excluded)."""
    phis = [check_real("fresh_fraction", f) for f in fresh_fractions]
    if not phis:
        raise ParameterError("fresh_fractions", fresh_fractions, "at least one split")
    extra = dict(zip(phis, split_loglik if split_loglik is not None else [0.0] * len(phis)))
    mid = sorted(phis)[len(phis) // 2]
    eta, steps, y, need, kw = _prepare(
        steps, y, learning_rate=learning_rate, momentum=momentum,
        refresh_interval=refresh_interval, fresh_fraction=mid, window_batches=window_batches,
        observable=observable)
    n_fit, ended = _linear_range(steps, y, need, kw)
    z = y[:n_fit]
    z = (z - z.mean()) / float(np.std(z))
    kws = {f: dict(kw, fresh_fraction=f) for f in phis}
    prof = {f: _profile_max(z, kws[f]) for f in phis}
    best = max(phis, key=lambda f: prof[f][3] + extra[f])
    cut = prof[best][3] + extra[best] - CHI2_95 / 2
    by = []
    for f in phis:
        ll, _, a_hat, l_max, _ = prof[f]
        # the split's own term shifts its whole profile: its eta K set is at the cut less it
        iv = (list(_ends(z, kws[f], ll, a_hat, cut - extra[f])) if l_max + extra[f] >= cut
              else None)
        by.append({"fresh_fraction": f, "eta_K": a_hat if iv else None, "eta_K_interval": iv})
    kept = [b for b in by if b["eta_K_interval"]]
    ll, _, a_best, l_max, r_hat = prof[best]
    lo = min(b["eta_K_interval"][0] for b in kept)
    hi = max(b["eta_K_interval"][1] for b in kept)
    fit = {"a": a_best, "lo": lo, "hi": hi, "ratio": r_hat, "profile": (A_GRID, ll - l_max)}
    out = _result(fit, eta, steps, n_fit, ended, observable, kws[best], y.size)
    out["by_split"] = by
    return out
