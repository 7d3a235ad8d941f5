"""Batch reuse vs fresh sampling: the exact L2 window variance against independent references."""

import math

import numpy as np
import pytest

from grpo_theory.model import DEFAULT_MODEL, GRPOModel
from grpo_theory.theory.derived import get
from grpo_theory.theory.discrete import step_matrix
from grpo_theory.simulation import simulate
from grpo_theory.theory.noise import fluctuation, stationary_variance
from grpo_theory.validate import ParameterError


def test_derivation_verified():
    d = get("reuse.sgd_window_variance")
    assert all(v.passed for v in d.verifications)
    assert {v.method for v in d.verifications} == {"sympy", "numeric"}


def test_batch_against_monte_carlo_of_the_linear_map():
    # independent: iterate the per-step linear map with one kick per window, many replications
    eta, mu, K, k, phi, s2 = 0.2, 0.3, 1.0, 4, 0.25, 1.0
    A = step_matrix(eta, mu, K, phi)
    rng = np.random.default_rng(0)
    R, W = 4000, 150
    y = np.zeros((R, 3))
    acc = []
    for w in range(W):
        y[:, 2] = y[:, 0]                     # refresh: x_s <- x
        xi = rng.normal(0.0, math.sqrt(s2), R)
        for j in range(k):
            if w >= 50:
                acc.append(y[:, 0] ** 2)
            y = y @ A.T
            y[:, 0] += eta * xi
            y[:, 1] += eta * xi
    per_run = np.mean(acc, axis=0)
    measured, se = per_run.mean(), per_run.std(ddof=1) / math.sqrt(R)
    pred = stationary_variance(eta, mu, K, s2, k, fresh_fraction=phi, reuse="batch")
    assert abs(measured - pred) < 4 * se


def test_batch_is_k_times_fresh_for_small_steps():
    for k in (2, 4, 8):
        r = (stationary_variance(1e-4, 0.0, 1.0, 1.0, k, reuse="batch")
             / stationary_variance(1e-4, 0.0, 1.0, 1.0, k, reuse="fresh"))
        assert r == pytest.approx(k, rel=1e-3)


def test_unstable_window_map_gives_inf_and_na():
    assert math.isinf(stationary_variance(5.0, 0.5, 2.0, 1.0, 8, reuse="batch"))
    f = fluctuation(DEFAULT_MODEL.replace(learning_rate=500.0, refresh_interval=8))
    assert f.stationary_variance_z is None and "unstable" in f.reason


def test_fluctuation_not_applicable():
    assert fluctuation(GRPOModel(group_size=None)).stationary_variance_z is None
    f = fluctuation(GRPOModel(kl="none", kl_coef=0.0))
    assert f.stationary_variance_z is None and "fixed point" in f.reason
    f = fluctuation(GRPOModel(lag_model="delay", delay=2))
    assert f.stationary_variance_z is None and "refresh" in f.reason
    f = fluctuation(GRPOModel(optimizer="adam"))
    assert f.stationary_variance_z is None and "Adam" in f.reason
    with pytest.raises(ParameterError, match="reuse"):
        DEFAULT_MODEL.replace(reuse="sometimes")


def test_fluctuation_scales_with_prompts():
    a = fluctuation(DEFAULT_MODEL.replace(prompts=1)).stationary_variance_z
    b = fluctuation(DEFAULT_MODEL.replace(prompts=4)).stationary_variance_z
    assert b == pytest.approx(a / 4, rel=1e-12)


def test_window_sampling_from_trainer_keys():
    from grpo_theory.theory.reuse import window_sampling

    # TRL num_iterations = 4 with steps_per_generation = gradient_accumulation_steps
    assert window_sampling(4, 1) == {"refresh_interval": 4, "reuse": "batch", "window_batches": 1}
    # TRL steps_per_generation = 4 x GAS, num_iterations = 1 (verl ppo_epochs = 1, 4 mini-batches)
    assert window_sampling(1, 4) == {"refresh_interval": 4, "reuse": "fresh", "window_batches": 1}
    # verl ppo_epochs = 2 over 4 mini-batches
    assert window_sampling(2, 4) == {"refresh_interval": 8, "reuse": "batch", "window_batches": 4}
    with pytest.raises(ParameterError, match="passes"):
        window_sampling(0, 1)


@pytest.mark.parametrize("m", [1, 2])
def test_cycled_batches_against_monte_carlo_of_the_linear_map(m):
    eta, mu, K, k, phi, s2 = 0.2, 0.3, 1.0, 4, 0.25, 1.0
    A = step_matrix(eta, mu, K, phi)
    rng = np.random.default_rng(1)
    R, W = 4000, 150
    y = np.zeros((R, 3))
    acc = []
    for w in range(W):
        y[:, 2] = y[:, 0]
        xi = rng.normal(0.0, math.sqrt(s2), (m, R))
        for j in range(k):
            if w >= 50:
                acc.append(y[:, 0] ** 2)
            y = y @ A.T
            y[:, 0] += eta * xi[j % m]
            y[:, 1] += eta * xi[j % m]
    per_run = np.mean(acc, axis=0)
    measured, se = per_run.mean(), per_run.std(ddof=1) / math.sqrt(R)
    pred = stationary_variance(eta, mu, K, s2, k, fresh_fraction=phi, reuse="batch",
                               window_batches=m)
    assert abs(measured - pred) < 4 * se


def test_k_cycled_batches_are_fresh_batches():
    a = stationary_variance(0.1, 0.5, 1.3, 0.7, 4, fresh_fraction=0.2, reuse="batch",
                            window_batches=4)
    b = stationary_variance(0.1, 0.5, 1.3, 0.7, 4, fresh_fraction=0.2, reuse="fresh")
    assert a == pytest.approx(b, rel=1e-12)


def test_cycled_batches_simulated():
    # exact L2 vs the simulator, k = 4 with 2 batches each used twice (4 SE band)
    from grpo_theory.crosscheck.base import BASE_MODEL, _stationary_var

    model = BASE_MODEL.replace(refresh_interval=4, learning_rate=0.1, reuse="batch",
                               window_batches=2)
    res = simulate(model, steps=2500, runs=200, seed=4, record=("z",))
    var, se, _ = _stationary_var(res.observables["z"], 800, 7)
    assert abs(var - fluctuation(model).stationary_variance_z) < 4 * se


def test_window_batches_refused():
    with pytest.raises(ParameterError, match="window_batches"):
        GRPOModel(refresh_interval=4, reuse="batch", window_batches=3)
    with pytest.raises(ParameterError, match="window_batches"):
        GRPOModel(refresh_interval=4, reuse="fresh", window_batches=2)
