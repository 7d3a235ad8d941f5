"""Reuse collapse (chapter 10) against the bandit simulator: k passes over one finite batch.

Every prediction is checked on ensembles of the L0 simulator (``simulation.simulate``, which
computes the GRPO gradient from sampled groups and never uses a mean-field formula), with a
band of 4 standard errors computed from the ensemble itself.
"""

import math

import numpy as np
import pytest

from grpo_theory.model import GRPOModel
from grpo_theory.simulation.engine import simulate
from grpo_theory.theory.derived import get
from grpo_theory.theory.reuse_collapse import (advantage_mass_variance_mean, passes_to_clip,
                                               saturation_probability, trust_region_number,
                                               window_noise_variance)
from grpo_theory.validate import ParameterError

NAMES = ["reuse_collapse.logprob_step", "reuse_collapse.advantage_mass_variance_mean",
         "reuse_collapse.window_noise_variance", "reuse_collapse.clip_saturation",
         "reuse_collapse.saturated_batch_kl", "reuse_collapse.ratio_window_passes",
         "reuse_collapse.passes_to_clip"]


def _logit(p):
    return math.log(p / (1 - p))


def test_every_record_is_verified():
    for name in NAMES:
        d = get(name)
        assert d.verified and d.verifications, name


def _var_and_se(x):
    """Sample variance and its standard error (fourth central moment), no normality assumed."""
    x = np.asarray(x, dtype=float)
    R = x.size
    s2 = x.var(ddof=1)
    m4 = np.mean((x - x.mean()) ** 4)
    return s2, math.sqrt(max(m4 - s2 * s2 * (R - 3) / (R - 1), 0.0) / R)


@pytest.mark.parametrize("reuse", ["batch", "fresh"])
def test_window_noise_grows_like_k_with_reuse(reuse):
    # log-prob surrogate, mean normalization, two actions, B groups: the displacement of the
    # success logit over the first window of k passes
    k, eta, G, B, p0, R = 8, 0.05, 6, 4, 0.35, 6000
    model = GRPOModel(group_size=G, prompts=B, p_ref=p0, learning_rate=eta, momentum=0.0,
                      surrogate="stale", normalization="mean", kl="none", refresh_interval=k,
                      reuse=reuse)
    res = simulate(model, steps=k, runs=R, seed=11, record=("z",))
    dz = res.z[:, k] - res.z[:, 0]
    mean_pred = k * eta * 2 * float(get("drift.expected_advantage_mean").numeric(p0, 1 - p0, G))
    var_pred = window_noise_variance(eta, k, p0, G, B, reuse=reuse)
    s2, se = _var_and_se(dz)
    assert abs(dz.mean() - mean_pred) < 4 * dz.std(ddof=1) / math.sqrt(R)
    assert abs(s2 - var_pred) < 4 * se, (s2, var_pred, se)


def test_batch_over_fresh_is_k():
    assert window_noise_variance(0.1, 16, 0.4, 8, 32) == pytest.approx(
        16 * window_noise_variance(0.1, 16, 0.4, 8, 32, reuse="fresh"), rel=1e-12)
    # V_A against a direct Monte-Carlo of n(G - n)/G^2 (independent of the simulator)
    rng = np.random.default_rng(0)
    n = rng.binomial(8, 0.3, 400_000)
    a = n * (8 - n) / 64
    assert advantage_mass_variance_mean(0.3, 8) == pytest.approx(a.var(), rel=0.01)


def test_logprob_push_is_exactly_linear_in_the_passes_for_many_actions():
    # five actions, two correct: one pass and five passes over the same batch (same seed, so the
    # same batch) move every logit by exactly 1x and 5x the same amount; unsampled actions do
    # not move and the moves sum to zero (the advantages of a batch sum to zero)
    base = dict(group_size=4, prompts=1, actions=5, correct=2, p_ref=0.3, learning_rate=0.1,
                momentum=0.0, surrogate="stale", normalization="std", kl="none")
    one = simulate(GRPOModel(**base, refresh_interval=1), steps=1, runs=200, seed=5)
    five = simulate(GRPOModel(**base, refresh_interval=5, reuse="batch"), steps=5, runs=200, seed=5)
    d1 = one.final_logits - one.theta0
    d5 = five.final_logits - five.theta0
    np.testing.assert_allclose(d5, 5 * d1, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(d1.sum(axis=1), 0.0, atol=1e-12)
    assert np.mean(np.abs(d1) < 1e-15) > 0.2          # unsampled actions stay put


def _window(surrogate_kw, k, seed=3):
    model = GRPOModel(group_size=8, prompts=1, p_ref=0.3, learning_rate=0.02, momentum=0.0,
                      surrogate="ratio", normalization="mean", kl="none", refresh_interval=k,
                      reuse="batch", **surrogate_kw)
    return simulate(model, steps=k, runs=400, seed=seed,
                    record=("z", "kl", "zero_var_frac", "clip_frac"))


def test_clip_saturates_the_window_and_no_clip_does_not():
    k, p0, e = 600, 0.3, 0.2
    clip = _window(dict(clip_low=e, clip_high=e), k)
    free = _window(dict(clip_low=0.999999, clip_high=1e9), k)
    live = clip.zero_var_frac[:, 0] == 0                     # non-degenerate batches
    assert live.sum() > 300
    p_sat = saturation_probability(p0, e)
    z_sat = _logit(p_sat)
    # largest single step: eta * kappa * A_+ * R, A_+ <= 1/4, R = pq/(p_old q_old) <= 1/(4 p_old q_old)
    step = 0.02 * 2 * 0.25 / (4 * p0 * (1 - p0))
    zc, zf = clip.z[live, k], free.z[live, k]
    assert np.all(zc <= z_sat + step + 1e-12)
    assert np.all(zc >= z_sat - 1e-9)                      # every live batch reached p_sat
    assert np.all(clip.clip_frac[live, k - 1] == 1.0)      # and pushes no more
    assert np.all(zf > z_sat + 0.5)                        # without the clip it went on
    # the KL the clipped window travelled is bounded by the saturation, the free one is not
    q_sat = min(p_sat + 0.1, 1 - 1e-12)
    kl_bound = q_sat * math.log(q_sat / p0) + (1 - q_sat) * math.log((1 - q_sat) / (1 - p0))
    assert np.all(clip.kl[live, k] <= kl_bound)
    assert np.median(free.kl[live, k]) > 3 * np.median(clip.kl[live, k])


def test_ratio_window_follows_the_continuum_solution():
    # passes needed to reach the simulated z_k without the clip, from the implicit solution,
    # with each run's A_+ read off its first pass (rho = 1 there): spot check, O(step) error
    k = 300
    free = _window(dict(clip_low=0.999999, clip_high=1e9), k, seed=4)
    live = free.zero_var_frac[:, 0] == 0
    z0 = free.z[live, 0]
    a_plus = (free.z[live, 1] - z0) / (0.02 * 2)
    p0 = 1 / (1 + np.exp(-z0))
    fn = get("reuse_collapse.ratio_window_passes").numeric
    j = fn(free.z[live, k], z0, 0.02, 2.0, a_plus, p0, 1 - p0)
    assert np.all(np.abs(j - k) / k < 0.05), np.max(np.abs(j - k) / k)


def test_passes_to_clip_and_the_trust_region_number():
    # in the bandit the per-pass log-ratio step of a correct sample is eta kappa A_+ q_old
    eta, A, p0, e = 0.01, 0.2, 0.3, 0.2
    delta = eta * 2 * A * (1 - p0)
    exact = float(get("reuse_collapse.passes_to_clip").numeric(e, p0, eta, 2.0, A))
    assert passes_to_clip(delta, e) == pytest.approx(exact, rel=e)     # first order in eps
    assert trust_region_number(1, delta, e) == 0.0                     # no revisit: inside
    P = int(math.ceil(1 + passes_to_clip(delta, e)))
    assert trust_region_number(P, delta, e) >= 1 > trust_region_number(P - 1, delta, e)
    with pytest.raises(ParameterError, match="passes"):
        trust_region_number(0, delta)
