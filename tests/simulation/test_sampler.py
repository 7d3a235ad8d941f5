"""The inverse-CDF binomial sampler: the exact binomial law, and trajectories statistically
identical to those drawn with ``rng.binomial`` (bands from the number of draws)."""

import math

import numpy as np
import pytest
from scipy.stats import binom

from grpo_theory.simulation import kernels as K
from grpo_theory.model import GRPOModel
from grpo_theory.simulation import simulate


@pytest.mark.parametrize("G,q", [(2, 0.3), (8, 0.05), (8, 0.5), (8, 0.97), (16, 0.71),
                                 (64, 0.999), (64, 0.4)])
def test_counts_follow_the_binomial_law(G, q):
    N = 200_000
    n = K.binomial_counts(np.random.default_rng(1), G, np.full(N, q))
    freq = np.bincount(n, minlength=G + 1) / N
    pmf = binom.pmf(np.arange(G + 1), G, q)
    se = np.sqrt(pmf * (1 - pmf) / N)
    assert np.all(np.abs(freq - pmf) <= 4.5 * se + 1e-12)


def test_per_entry_probabilities():
    rng = np.random.default_rng(2)
    q = rng.uniform(0, 1, 300_000)
    n = K.binomial_counts(rng, 8, q)
    # E[n - G q] = 0 and Var = G q (1 - q), entry by entry
    z = (n - 8 * q).sum() / math.sqrt((8 * q * (1 - q)).sum())
    assert abs(z) < 4


def test_large_groups_hand_back_to_numpy():
    q = np.linspace(0.1, 0.9, 50)
    a = K.binomial_counts(np.random.default_rng(3), K.INVERSE_CDF_MAX_GROUP + 1, q)
    b = np.random.default_rng(3).binomial(K.INVERSE_CDF_MAX_GROUP + 1, q)
    np.testing.assert_array_equal(a, b)


def test_trajectories_match_numpy_binomial(monkeypatch):
    model = GRPOModel(group_size=8, kl="exact", kl_coef=1.0, learning_rate=0.3, momentum=0.0,
                      refresh_interval=1, adv_eps=1e-4)
    kw = dict(steps=60, runs=3000, record=("z",), seed=5)
    new = simulate(model, **kw).observables["z"][:, [20, 60]]
    monkeypatch.setattr(K, "binomial_counts", lambda rng, G, q: rng.binomial(G, q))
    ref = simulate(model, **kw).observables["z"][:, [20, 60]]
    diff = new.mean(axis=0) - ref.mean(axis=0)
    se = np.sqrt(new.var(axis=0, ddof=1) / new.shape[0] + ref.var(axis=0, ddof=1) / ref.shape[0])
    assert np.all(np.abs(diff) < 4 * se)
    # variances: SE of log(s1^2/s2^2) is sqrt(2/(R-1) + 2/(R-1)) for near-normal samples
    log_ratio = np.log(new.var(axis=0, ddof=1) / ref.var(axis=0, ddof=1))
    assert np.all(np.abs(log_ratio) < 4 * math.sqrt(4 / (new.shape[0] - 1)))


@pytest.mark.parametrize("G", [1, 2, 8, 33, K.INVERSE_CDF_MAX_GROUP, K.INVERSE_CDF_MAX_GROUP + 1])
def test_table_draws_are_binomial_counts(G):
    # the CDF built once (a refresh window's repeated draws) gives binomial_counts' draws from
    # the same stream, draw after draw, at the edges q = 0, 1/2, 1 and for a scalar q
    q = np.concatenate([[0.0, 0.5, 1.0, 0.5 + 2.0**-53],
                        np.random.default_rng(7).uniform(0, 1, 997)]).reshape(-1, 1)
    for qq in (q, 0.3):
        table = K.binomial_table(G, qq)
        a, b = np.random.default_rng(11), np.random.default_rng(11)
        for _ in range(3):
            np.testing.assert_array_equal(K.binomial_draw(a, G, qq, table),
                                          K.binomial_counts(b, G, qq))
