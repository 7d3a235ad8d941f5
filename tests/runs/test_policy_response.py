"""K from the per-step fluctuations of a policy observable (grpo_theory.runs.policy_response)."""

import json
import math
from pathlib import Path

import numpy as np
import pytest

from grpo_theory.runs.policy_response import (profile_loglik, stiffness_from_fluctuations,
                                              stiffness_over_splits)
from grpo_theory.theory.discrete import spectral_radius, step_matrix
from grpo_theory.validate import ParameterError

LAB = Path(__file__).resolve().parents[2] / "benchmarks" / "lab_runs"


def _simulate(a, mu, k, phi, n, *, seed, q=1.0, r=0.5, m=0, level=3.0):
    """The linear model written out step by step (independently of the filter): the window's
    batch drawn at each refresh, the heavy-ball step map, kicks fresh or per re-used batch."""
    rng = np.random.default_rng(seed)
    A = step_matrix(a, mu, 1.0, phi)
    s = np.zeros(3)
    kicks, ys = None, []
    for t in range(n):
        if t % k == 0:
            s[2] = s[0]
            kicks = rng.normal(size=max(m, 1)) * math.sqrt(q)
        ys.append(level + s[0] + rng.normal() * math.sqrt(r))
        s = A @ s
        xi = kicks[(t % k) % m] if m else rng.normal() * math.sqrt(q)
        s[0] += xi
        s[1] += xi
    return np.array(ys)


def _dense_loglik(y, a, mu, k, phi, ratio):
    """The same restricted likelihood from the explicit covariance of y (no recursion): the
    level integrated out, x0 profiled, the scale concentrated."""
    n = y.size
    A = step_matrix(a, mu, 1.0, phi)
    R = np.eye(3)
    R[2] = [1.0, 0.0, 0.0]
    b = np.array([1.0, 1.0, 0.0])
    # state at step t as a linear map of (x0, xi_0 .. xi_{n-1})
    S = np.zeros((3, n + 1))
    S[:, 0] = [1.0, 0.0, 1.0]
    rows = []
    for t in range(n):
        if t % k == 0:
            S = R @ S
        rows.append(S[0].copy())
        S = A @ S
        S[:, t + 1] += b
    W = np.array(rows)                    # y_t - c = W[t] @ (x0, xi) + e_t
    g, L = W[:, 0], W[:, 1:]
    V = L @ L.T + ratio * np.eye(n)
    Vi = np.linalg.inv(V)
    X = np.column_stack([np.ones(n), g])
    beta = np.linalg.solve(X.T @ Vi @ X, X.T @ Vi @ y)
    res = y - X @ beta
    rss = res @ Vi @ res
    return -0.5 * (np.linalg.slogdet(V)[1] + math.log(np.ones(n) @ Vi @ np.ones(n))
                   + (n - 1) * math.log(rss / (n - 1)) + (n - 1))


@pytest.mark.parametrize("a,mu,k,phi", [(0.45, 0.0, 4, 0.31), (0.3, 0.5, 3, 0.6), (0.2, 0.0, 1, 0.0)])
def test_kalman_likelihood_equals_the_dense_gaussian_one(a, mu, k, phi):
    y = _simulate(a, mu, k, phi, 20, seed=3)
    for ratio in (0.01, 1.0, 30.0):
        ll, _ = profile_loglik(y, momentum=mu, refresh_interval=k, fresh_fraction=phi,
                               a_grid=np.array([a]), ratio_grid=np.array([ratio]))
        assert ll[0] == pytest.approx(_dense_loglik(y, a, mu, k, phi, ratio), abs=1e-8)
    # and it is a likelihood of eta K: a wrong one is not the same number
    wrong, _ = profile_loglik(y, momentum=mu, refresh_interval=k, fresh_fraction=phi,
                              a_grid=np.array([2 * a]), ratio_grid=np.array([1.0]))
    assert abs(wrong[0] - _dense_loglik(y, a, mu, k, phi, 1.0)) > 1e-3


def _coverage(a, mu, k, phi, n, seeds, *, fit_k=None, m=0):
    hits = 0
    for seed in range(seeds):
        y = _simulate(a, mu, k, phi, n, seed=seed, m=m)
        r = stiffness_from_fluctuations(np.arange(1, n + 1), y, learning_rate=0.01, momentum=mu,
                                        refresh_interval=fit_k or k, fresh_fraction=phi,
                                        window_batches=m)
        lo, hi = r["eta_K_interval"]
        assert r["value"] == pytest.approx(r["eta_K"] / 0.01)
        hits += lo <= a <= hi
    return hits / seeds


def test_interval_covers_the_true_eta_K_on_the_model():
    # 20 seeded series of a stable refresh window (k = 4, phi = 0.31) at the lab's eta K: the
    # 95 % interval covers the truth (fewer than 16 of 20 at a true rate of 0.95: p = 0.003)
    assert _coverage(0.45, 0.0, 4, 0.31, 48, 20) >= 0.8


def test_interval_covers_on_an_unstable_window_and_on_batch_reuse():
    # past the threshold (k = 12: spectral radius 1.69 per window) and one batch re-used for 16
    # steps (the kick held over the window)
    assert spectral_radius(1.0, 0.0, 12, 0.45, 0.31) > 1
    assert _coverage(0.45, 0.0, 12, 0.31, 96, 10) >= 0.7
    assert _coverage(0.3, 0.0, 16, 0.31, 64, 8, m=1) >= 0.75


def test_the_window_model_matters():
    # the same series read with the wrong window (k = 6 instead of 12) misses the truth: the
    # interval is built from the model, not from the data alone
    assert _coverage(0.45, 0.0, 12, 0.31, 96, 8, fit_k=6) <= 0.25


def test_over_splits_weighs_the_splits():
    y = _simulate(0.45, 0.0, 12, 0.31, 60, seed=1)
    r = stiffness_over_splits(np.arange(1, 61), y, learning_rate=1.0, refresh_interval=12,
                              fresh_fractions=[0.1, 0.31, 0.5])
    kept = [b for b in r["by_split"] if b["eta_K_interval"]]
    assert any(b["fresh_fraction"] == 0.31 for b in kept)
    # every kept (eta K, phi) pair says the window is unstable, as the truth is
    for b in kept:
        for a in b["eta_K_interval"]:
            if 0 < a < math.inf:
                assert spectral_radius(1.0, 0.0, 12, a, b["fresh_fraction"]) > 1


def test_refusals():
    y = _simulate(0.45, 0.0, 4, 0.31, 48, seed=0)
    with pytest.raises(ParameterError, match="logging_steps = 1"):
        stiffness_from_fluctuations(np.arange(1, 97, 2), y, learning_rate=0.1, refresh_interval=4)
    with pytest.raises(ParameterError, match="two refresh windows"):
        stiffness_from_fluctuations(np.arange(1, 21), y[:20], learning_rate=0.1, refresh_interval=4)
    with pytest.raises(ParameterError, match="fluctuates"):
        stiffness_from_fluctuations(np.arange(1, 49), np.ones(48), learning_rate=0.1)
    with pytest.raises(ParameterError, match="learning_rate"):
        stiffness_from_fluctuations(np.arange(1, 49), y, learning_rate=0.0)


def _lab_prefix(run, fraction=0.2):
    entries = json.loads((LAB / run / "trainer_state.json").read_text())["log_history"]
    rows = [e for e in entries if "entropy" in e]
    cut = fraction * max(e["step"] for e in entries)
    rows = [e for e in rows if e["step"] <= cut]
    return (np.array([e["step"] for e in rows], dtype=float),
            np.array([e["entropy"] for e in rows], dtype=float))


@pytest.mark.parametrize("run", ["lab_stable_refresh_s0", "lab_stable_momentum_s1",
                                 "lab_unstable_momentum_s0"])
def test_lab_spot_check_against_the_tangent_kernel(run):
    # spot check on the engine: eta K read from TRL's per-step entropy in the first 20 % of a
    # plateau-start run against the lab's independent measurement (tangent-kernel top mode x the
    # bandit's stiffness, facts.eta_K), at the lab's split
    info = json.loads((LAB / run / "run.json").read_text())
    h, facts = info["hyperparameters"], info["facts"]
    steps, y = _lab_prefix(run)
    r = stiffness_from_fluctuations(
        steps, y, learning_rate=h["learning_rate"], momentum=h["momentum"],
        refresh_interval=h["steps_per_generation"] * h["num_iterations"],
        fresh_fraction=facts["fixed_point"]["fresh_fraction"])
    lo, hi = r["eta_K_interval"]
    assert lo <= facts["eta_K"] <= hi
    assert hi / max(lo, 1e-9) < 3          # and the interval says something
