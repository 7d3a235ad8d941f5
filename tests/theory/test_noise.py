"""Noise: Lyapunov-derived stationary variances vs closed forms, scipy and seeded simulation."""

import math

import numpy as np
import pytest
import scipy.linalg

from grpo_theory.model import GRPOModel
from grpo_theory.theory import noise as N
from grpo_theory.theory.reuse import window_phase_variances
from grpo_theory.theory.derived import all_names, get
from grpo_theory.validate import ParameterError


@pytest.mark.parametrize("name", [n for n in all_names() if n.startswith("noise.")])
def test_derivation_verified(name):
    assert get(name).verified


def test_ar2_vs_scipy_and_langevin_limit():
    for eta, mu, K in ((0.1, 0.0, 1.0), (0.02, 0.5, 3.0), (0.001, 0.9, 1.0)):
        A = np.array([[1 + mu - eta * K, -mu], [1, 0]])
        ref = scipy.linalg.solve_discrete_lyapunov(A, np.diag([eta**2 * 2.0, 0]))[0, 0]
        assert N.stationary_variance(eta, mu, K, 2.0) == pytest.approx(ref, rel=1e-10)
    # leading order in a: ratio -> 1, first correction a/(2(1+mu))
    for a in (1e-2, 1e-3, 1e-4):
        ratio = N.stationary_variance(a, 0.5, 1.0, 1.0) / N.stationary_variance(
            a, 0.5, 1.0, 1.0, level="continuous")
        assert ratio - 1 == pytest.approx(a / 3, rel=1e-2)   # a/(2(1+mu)) + O(a^2)


def test_window_phase_variances_k1_is_ar2():
    v = window_phase_variances(0.05, 0.7, 2.0, 1.3, 1)
    assert v.shape == (1,) and v[0] == pytest.approx(N.stationary_variance(0.05, 0.7, 2.0, 1.3))


def _simulate(eta, mu, K, s2, k, runs, steps, seed):
    """Seeded ensemble of the noisy stale update; returns x at the last k steps (runs, k)."""
    rng = np.random.default_rng(seed)
    x = np.zeros(runs)
    v = np.zeros(runs)
    xs = x.copy()
    tail = []
    for t in range(steps):
        if t % k == 0:
            xs = x.copy()
        if t >= steps - k:
            tail.append(x.copy())
        v = mu * v - eta * (K * xs + math.sqrt(s2) * rng.standard_normal(runs))
        x = x + v
    return np.array(tail).T


@pytest.mark.parametrize("eta,mu,K,k", [(0.1, 0.5, 1.0, 1), (0.05, 0.5, 1.0, 4), (0.02, 0.8, 1.0, 3)])
def test_stationary_variance_vs_simulation(eta, mu, K, k):
    runs = 40_000
    s2 = 1.0
    relax = (1 - mu) / (eta * K)                  # slow-mode time scale, steps
    steps = int(30 * relax / k + 2) * k           # start of window = phase 0 at steps - k
    xs = _simulate(eta, mu, K, s2, k, runs, steps, seed=1234 + k)
    pred = window_phase_variances(eta, mu, K, s2, k)
    # independent runs: SE of a sample variance of Gaussians = var * sqrt(2/(runs-1))
    for j in range(k):
        est = xs[:, j].var(ddof=1)
        se = pred[j] * math.sqrt(2 / (runs - 1))
        assert abs(est - pred[j]) < 4 * se, (j, est, pred[j], se)
    mean_pred = N.stationary_variance(eta, mu, K, s2, refresh_interval=k)
    assert mean_pred == pytest.approx(pred.mean())


def test_continuous_vs_discrete_refresh_small_a():
    for k in (1, 4, 16):
        ex = N.stationary_variance(1e-3, 0.5, 1.0, 1.0, refresh_interval=k)
        co = N.stationary_variance(1e-3, 0.5, 1.0, 1.0, refresh_interval=k, level="continuous")
        assert co == pytest.approx(ex, rel=0.02)


def test_unstable_gives_inf_and_scaling_in_noise():
    assert N.stationary_variance(5.0, 0.0, 1.0, 1.0) == math.inf
    assert N.stationary_variance(0.5, 0.0, 1.0, 1.0, refresh_interval=8) == math.inf
    v1 = N.stationary_variance(0.05, 0.5, 1.0, 1.0, refresh_interval=3)
    v4 = N.stationary_variance(0.05, 0.5, 1.0, 0.25, refresh_interval=3)    # G -> 4 G
    assert v4 == pytest.approx(v1 / 4)


def test_reward_fluctuation():
    assert N.reward_fluctuation(0.7, 0.01) == pytest.approx((0.21)**2 * 0.01)
    rng = np.random.default_rng(7)
    zs = math.log(0.7 / 0.3)
    z = zs + math.sqrt(1e-4) * rng.standard_normal(400_000)
    p = 1 / (1 + np.exp(-z))
    pred = N.reward_fluctuation(0.7, 1e-4)
    assert p.var() == pytest.approx(pred, rel=4 * math.sqrt(2 / 400_000) + 1e-3)


@pytest.mark.parametrize("call,name", [
    (lambda: GRPOModel(momentum=1.0), "momentum"),            # the model's fields: its check
    (lambda: N.stationary_variance(0.1, 0.5, 1.0, -1.0), "noise_variance"),
    (lambda: N.stationary_variance(0.1, 0.5, 0.0, 1.0), "stiffness"),
    (lambda: N.stationary_variance(0.1, 0.5, 1.0, 1.0, level="sde"), "level"),
    (lambda: GRPOModel(refresh_interval=0), "refresh_interval"),
    (lambda: N.reward_fluctuation(1.0, 0.1), "p_star"),
])
def test_bad_input(call, name):
    with pytest.raises(ParameterError) as err:
        call()
    assert err.value.name == name
