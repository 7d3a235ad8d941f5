"""Tests of the direct GRPO simulation (level L0).

Every reference is computed here, independently of the code under test: a
per-sample loss and gradient written as explicit loops over the group, exact
binomial enumeration of expectations, and hand-iterated optimizer updates.
Statistical bounds are 4 standard errors derived from the number of runs.
"""

from __future__ import annotations

import csv
import itertools
import json
import math

import numpy as np
import pytest
from scipy.special import comb, expit

from grpo_theory.cli.main import main as cli_main
from grpo_theory.model import GRPOModel
from grpo_theory.simulation import Comparison, compare, logits_for_success
from grpo_theory.simulation import kernels as K
from grpo_theory.simulation import simulate as simulate_model
from support import BASE, simulate
from grpo_theory.validate import ParameterError

N_SIGMA = 4.0


# ---------------------------------------------------------------------------
# independent references: per-sample loss and gradient, written as loops
# ---------------------------------------------------------------------------

def _log_softmax(v):
    m = max(v)
    s = math.log(sum(math.exp(x - m) for x in v))
    return [x - m - s for x in v]


def ref_loss(theta, theta_old, theta_ref, offsets, actions, rewards, *, G, normalization,
             adv_eps, surrogate, clip_low, clip_high, kl, beta):
    """Loss of one run; ``actions[b]`` is the list of G sampled actions of prompt b."""
    total = 0.0
    for b, acts in enumerate(actions):
        lp = _log_softmax([t + d for t, d in zip(theta, offsets[b])])
        lp_old = _log_softmax([t + d for t, d in zip(theta_old, offsets[b])])
        lp_ref = _log_softmax([t + d for t, d in zip(theta_ref, offsets[b])])
        r = [rewards[a] for a in acts]
        mean = sum(r) / G
        if max(r) == min(r):
            adv = [0.0] * G
        elif normalization == "std":
            sd = math.sqrt(sum((x - mean) ** 2 for x in r) / (G - 1))
            adv = [(x - mean) / (sd + adv_eps) for x in r]
        else:
            adv = [x - mean for x in r]
        loss = 0.0
        for a, A in zip(acts, adv):
            if surrogate == "ratio":
                rho = math.exp(lp[a] - lp_old[a])
                clipped = min(max(rho, 1 - clip_low), 1 + clip_high)
                loss -= min(rho * A, clipped * A) / G
            else:
                loss -= A * lp[a] / G
            if kl == "k3":
                x = lp_ref[a] - lp[a]
                loss += beta * (math.exp(x) - x - 1) / G
        if kl == "exact":
            loss += beta * sum(math.exp(lg) * (lg - lr) for lg, lr in zip(lp, lp_ref))
        total += loss
    return total / len(actions)


def ref_grad(theta, theta_old, theta_ref, offsets, actions, rewards, *, G, normalization,
             adv_eps, surrogate, clip_low, clip_high, kl, beta):
    """Analytic gradient of :func:`ref_loss`, sample by sample (∇ log π(a) = e_a − π)."""
    Kn = len(theta)
    g = [0.0] * Kn
    for b, acts in enumerate(actions):
        lp = _log_softmax([t + d for t, d in zip(theta, offsets[b])])
        lp_old = _log_softmax([t + d for t, d in zip(theta_old, offsets[b])])
        lp_ref = _log_softmax([t + d for t, d in zip(theta_ref, offsets[b])])
        pi = [math.exp(v) for v in lp]
        r = [rewards[a] for a in acts]
        mean = sum(r) / G
        if max(r) == min(r):
            adv = [0.0] * G
        elif normalization == "std":
            sd = math.sqrt(sum((x - mean) ** 2 for x in r) / (G - 1))
            adv = [(x - mean) / (sd + adv_eps) for x in r]
        else:
            adv = [x - mean for x in r]
        for a, A in zip(acts, adv):
            grad_logp = [(1.0 if k == a else 0.0) - pi[k] for k in range(Kn)]
            if surrogate == "ratio":
                rho = math.exp(lp[a] - lp_old[a])
                clipped = min(max(rho, 1 - clip_low), 1 + clip_high)
                coef = -rho * A / G if rho * A <= clipped * A else 0.0
            else:
                coef = -A / G
            if kl == "k3":
                coef += beta * (1 - math.exp(lp_ref[a] - lp[a])) / G
            for k in range(Kn):
                g[k] += coef * grad_logp[k] / len(actions)
        if kl == "exact":
            kl_val = sum(p * (lg - lr) for p, lg, lr in zip(pi, lp, lp_ref))
            for k in range(Kn):
                g[k] += beta * pi[k] * (lp[k] - lp_ref[k] - kl_val) / len(actions)
    return g


def counts_of(actions, Kn):
    return np.array([[sum(1 for a in acts if a == k) for k in range(Kn)] for acts in actions],
                    dtype=float)


VARIANTS = list(itertools.product(("std", "mean"), ("stale", "ratio"), ("none", "exact", "k3")))


# ---------------------------------------------------------------------------
# gradient of the sampled loss
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("normalization,surrogate,kl", VARIANTS)
def test_gradient_matches_finite_differences(normalization, surrogate, kl):
    rng = np.random.default_rng(11)
    Kn, B, G = 3, 2, 6
    kw = dict(G=G, normalization=normalization, adv_eps=1e-4, surrogate=surrogate,
              clip_low=0.2, clip_high=0.28, kl=kl, beta=0.37)
    rewards = [1.0, 0.3, 0.0]
    n_clipped = 0
    for trial in range(6):
        theta = rng.normal(0, 1, Kn).tolist()
        theta_old = (np.array(theta) + rng.normal(0, 0.4, Kn)).tolist()   # ratio ≠ 1
        theta_ref = rng.normal(0, 1, Kn).tolist()
        offsets = rng.normal(0, 0.5, (B, Kn)).tolist()
        actions = [rng.integers(0, Kn, G).tolist() for _ in range(B)]
        h = 1e-6
        fd = []
        for k in range(Kn):
            tp, tm = list(theta), list(theta)
            tp[k] += h
            tm[k] -= h
            fd.append((ref_loss(tp, theta_old, theta_ref, offsets, actions, rewards, **kw)
                       - ref_loss(tm, theta_old, theta_ref, offsets, actions, rewards, **kw))
                      / (2 * h))
        # the hand-written per-sample gradient agrees with finite differences ...
        np.testing.assert_allclose(ref_grad(theta, theta_old, theta_ref, offsets, actions,
                                            rewards, **kw), fd, atol=1e-7)
        # ... and so does the vectorized kernel working on counts
        args = (np.array([theta]), np.array([theta_old]), np.array(theta_ref),
                np.array(offsets), np.array(rewards), counts_of(actions, Kn)[None])
        kkw = dict(group_size=G, normalization=normalization, adv_eps=1e-4,
                   surrogate=surrogate, clip_low=0.2, clip_high=0.28, kl=kl, kl_coef=0.37)
        g, zvf, cf = K.group_gradient(*args, **kkw)
        np.testing.assert_allclose(g[0], fd, atol=1e-7)
        loss = K.group_loss(*args, **kkw)[0]
        assert loss == pytest.approx(ref_loss(theta, theta_old, theta_ref, offsets, actions,
                                              rewards, **kw), rel=1e-12, abs=1e-14)
        n_clipped += cf[0] > 0
        if surrogate == "stale":
            assert cf[0] == 0
    if surrogate == "ratio":
        assert n_clipped > 0, "clipping never active: the test would not cover it"


@pytest.mark.parametrize("normalization,surrogate,kl", VARIANTS)
def test_two_action_kernel_equals_generic_gradient(normalization, surrogate, kl):
    rng = np.random.default_rng(5)
    R, B, G = 50, 3, 8
    theta = rng.normal(0, 1, (R, 2))
    theta_old = theta + rng.normal(0, 0.5, (R, 2))
    theta_ref = np.array([0.3, -0.2])
    offsets = rng.normal(0, 1, (B, 2))
    rewards = np.array([0.9, 0.2])
    n0 = rng.integers(0, G + 1, (R, B))
    counts = np.stack([n0, G - n0], axis=-1)
    kw = dict(group_size=G, normalization=normalization, adv_eps=1e-4, surrogate=surrogate,
              clip_low=0.2, clip_high=0.2, kl=kl, kl_coef=0.4)
    g, zvf, cf = K.group_gradient(theta, theta_old, theta_ref, offsets, rewards, counts, **kw)
    u = theta[:, 0] - theta[:, 1]
    g0, zvf2, cf2 = K.two_action_gradient(u, theta_old[:, 0] - theta_old[:, 1],
                                          theta_ref[0] - theta_ref[1],
                                          offsets[:, 0] - offsets[:, 1], rewards[0],
                                          rewards[1], n0, **kw)
    np.testing.assert_allclose(g[:, 1], -g[:, 0], atol=1e-14)
    np.testing.assert_allclose(g0, g[:, 0], rtol=1e-10, atol=1e-13)
    np.testing.assert_array_equal(zvf, zvf2)
    np.testing.assert_allclose(cf, cf2, atol=1e-14)


@pytest.mark.parametrize("kw", [
    dict(),
    dict(surrogate="ratio", refresh_interval=4, kl="k3", kl_coef=0.1, p0=0.5,
         optimizer="adam", learning_rate=0.5),
    dict(lag_model="delay", delay=3, kl="exact", kl_coef=0.2, prompts=3,
         difficulty_spread=1.0, optimizer="momentum", momentum=0.9),
    dict(rewards=[0.2, 0.9], surrogate="ratio", lag_model="delay", delay=2,
         learning_rate=1.0, kl="k3", kl_coef=0.3, adv_eps=0.0, normalization="mean"),
])
def test_two_action_and_generic_simulations_agree(kw):
    a = simulate(steps=30, runs=64, **kw)
    b = simulate(steps=30, runs=64, _kernel="generic", **kw)
    for name in a.observables:
        np.testing.assert_allclose(a[name], b[name], rtol=1e-9, atol=1e-11, err_msg=name)
    np.testing.assert_allclose(a.final_logits, b.final_logits, rtol=1e-9, atol=1e-11)


# ---------------------------------------------------------------------------
# reproducibility and result object
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("actions", [2, 3])
def test_same_seed_identical_different_seed_different(actions):
    kw = dict(steps=20, runs=32, actions=actions, prompts=2, difficulty_spread=0.5,
              surrogate="ratio", refresh_interval=2)
    a, b = simulate(seed=7, **kw), simulate(seed=7, **kw)
    c = simulate(seed=8, **kw)
    for name in a.observables:
        np.testing.assert_array_equal(a[name], b[name])
    np.testing.assert_array_equal(a.final_logits, b.final_logits)
    np.testing.assert_array_equal(a.offsets, b.offsets)
    assert not np.array_equal(a.reward, c.reward)
    assert not np.array_equal(a.offsets, c.offsets)


def test_result_object_shapes_statistics_and_csv(tmp_path):
    res = simulate(steps=12, runs=40, actions=3, correct=1, seed=3)
    assert res.t.tolist() == list(range(13))
    for name in K.OBSERVABLES:
        assert res[name].shape == (40, 13)
        assert getattr(res, name) is res.observables[name]
    for name in K.UPDATE_OBSERVABLES:
        assert np.all(np.isnan(res[name][:, -1]))
        assert np.all(np.isfinite(res[name][:, :-1]))
    x = res.reward
    np.testing.assert_allclose(res.mean("reward"), x.mean(axis=0))
    np.testing.assert_allclose(res.var("reward"), x.var(axis=0, ddof=1))
    np.testing.assert_allclose(res.sem("reward"), np.sqrt(x.var(axis=0, ddof=1) / 40))
    assert res.final_logits.shape == (40, 3)
    s = res.summary()
    assert s["runs"] == 40 and s["steps"] == 12 and s["group_size"] == 8 and s["seed"] == 3
    assert s["final"]["grad_norm"]["step"] == 11
    assert s["final"]["reward"]["mean"] == pytest.approx(res.mean("reward")[12])
    path = tmp_path / "sim.csv"
    res.to_csv(path)
    rows = list(csv.DictReader(open(path)))
    assert len(rows) == 13
    assert {"step", "mean_reward", "var_reward", "sem_reward", "mean_z"} <= set(rows[0])
    assert float(rows[5]["mean_reward"]) == pytest.approx(res.mean("reward")[5], rel=1e-15)
    assert math.isnan(simulate(steps=2, runs=1).var("reward")[0])


def test_initial_state_and_observables_exact():
    """Start at p_ref (prompt-averaged, also with difficulty spread); entropy, KL,
    z computed by hand at the start."""
    res = simulate(steps=0, runs=3, actions=4, correct=2, p_ref=0.2, prompts=5,
                   difficulty_spread=1.5, seed=1)
    assert res.reward[:, 0] == pytest.approx([0.2] * 3, rel=1e-12)
    assert res.z[:, 0] == pytest.approx([math.log(0.2 / 0.8)] * 3, rel=1e-10)
    assert res.kl[:, 0] == pytest.approx([0.0] * 3, abs=1e-14)
    # offsets only on the correct actions, shared logit within each class
    assert np.all(res.offsets[:, 2:] == 0) and np.all(res.offsets[:, 0] == res.offsets[:, 1])
    res2 = simulate(steps=0, runs=1, p_ref=0.3, p0=0.6)
    pi = expit(res2.final_logits[0, 0] - res2.final_logits[0, 1])
    assert pi == pytest.approx(0.6, rel=1e-14)
    h = -(0.6 * math.log(0.6) + 0.4 * math.log(0.4))
    kl = 0.6 * math.log(0.6 / 0.3) + 0.4 * math.log(0.4 / 0.7)
    assert res2.entropy[0, 0] == pytest.approx(h, rel=1e-12)
    assert res2.kl[0, 0] == pytest.approx(kl, rel=1e-12)
    th = logits_for_success(0.3, rewards=[1.0, 0.0, 0.0])
    assert np.exp(_log_softmax(list(th))[0]) == pytest.approx(0.3, rel=1e-14)


# ---------------------------------------------------------------------------
# one-step statistics against exact binomial enumeration
# ---------------------------------------------------------------------------

def binom_pmf(G, p):
    return np.array([comb(G, n, exact=True) * p ** n * (1 - p) ** (G - n) for n in range(G + 1)])


def enumerated_dz(G, p, learning_rate, *, p_ref=None, **kw):
    """Values Δz(n) of the first on-policy SGD step for n correct samples (two actions,
    action 0 correct), from the per-sample reference gradient."""
    z = math.log(p / (1 - p))
    z_ref = z if p_ref is None else math.log(p_ref / (1 - p_ref))
    theta, theta_ref = [z, 0.0], [z_ref, 0.0]
    out = []
    for n in range(G + 1):
        acts = [[0] * n + [1] * (G - n)]
        g = ref_grad(theta, theta, theta_ref, [[0.0, 0.0]], acts, [1.0, 0.0], G=G, **kw)
        out.append(-learning_rate * (g[0] - g[1]))
    return np.array(out)


def test_mean_normalization_binomial_identity():
    """E[(1/G) Σ_correct Â] = (1 − 1/G) p (1 − p), checked by enumeration."""
    for G in (2, 5, 8, 13):
        for p in (0.1, 0.3, 0.77):
            n = np.arange(G + 1)
            val = (binom_pmf(G, p) * (n / G) * (1 - n / G)).sum()
            assert val == pytest.approx((1 - 1 / G) * p * (1 - p), rel=1e-12)


@pytest.mark.parametrize("normalization,surrogate,kl,p0", [
    ("mean", "stale", "none", None),
    ("std", "stale", "none", None),
    ("std", "ratio", "none", None),
    ("mean", "ratio", "exact", 0.55),
    ("std", "stale", "k3", 0.55),
    ("mean", "stale", "exact", 0.2),
])
def test_one_step_mean_update_matches_enumeration(normalization, surrogate, kl, p0):
    G, eta, R, p_ref, beta = 8, 0.1, 100_000, 0.3, 0.6
    p = p_ref if p0 is None else p0
    kw = dict(normalization=normalization, adv_eps=1e-4, surrogate=surrogate,
              clip_low=0.2, clip_high=0.2, kl=kl, beta=beta if kl != "none" else 0.0)
    expected = (binom_pmf(G, p) * enumerated_dz(G, p, eta, p_ref=p_ref, **kw)).sum()
    if normalization == "mean" and kl == "none":     # κ = 2 and the binomial identity
        assert expected == pytest.approx(2 * eta * (1 - 1 / G) * p * (1 - p), rel=1e-12)
    res = simulate(steps=1, runs=R, group_size=G, learning_rate=eta, p_ref=p_ref, p0=p0,
                   normalization=normalization, surrogate=surrogate, kl=kl,
                   kl_coef=beta if kl != "none" else 0.0, seed=21, record=("z",))
    cmp = compare(res.z[:, 1] - res.z[:, 0], expected)
    assert cmp, str(cmp)


def test_zero_variance_fraction_matches_enumeration():
    G, p, R = 4, 0.3, 50_000
    res = simulate(steps=1, runs=R, group_size=G, prompts=3, p_ref=p, seed=2,
                   record=("zero_var_frac",))
    cmp = compare(res.zero_var_frac[:, 0], p ** G + (1 - p) ** G)
    assert cmp, str(cmp)


def test_wrong_prediction_is_rejected():
    """The statistical check has power: dropping the (1 − 1/G) factor is detected."""
    G, eta, p, R = 8, 0.1, 0.3, 100_000
    res = simulate(steps=1, runs=R, group_size=G, learning_rate=eta, p_ref=p,
                   normalization="mean", seed=4, record=("z",))
    dz = res.z[:, 1] - res.z[:, 0]
    right = compare(dz, 2 * eta * (1 - 1 / G) * p * (1 - p))
    wrong = compare(dz, 2 * eta * p * (1 - p))
    assert right, str(right)
    assert not wrong, str(wrong)
    assert abs(wrong.deviation) > 10 * N_SIGMA
    assert "DISAGREES" in str(wrong)
    assert Comparison(1.0, 0.1, 1.5).ok is False and Comparison(1.0, 0.1, 1.3).ok is True


def test_variance_of_one_step_update_scales_as_one_over_group_size():
    """Var(Δz)·G at G = 4 and G = 32: each variance within 4 standard errors of the
    exact enumerated variance (standard error of a sample variance from the exact
    fourth central moment), and the ratio of Var·G within 4 propagated standard
    errors of its exact value, which is 1 up to the finite-G correction."""
    eta, p, R = 0.1, 0.3, 200_000
    stats = {}
    for G in (4, 32):
        w = binom_pmf(G, p)
        vals = enumerated_dz(G, p, eta, normalization="mean", adv_eps=1e-4, surrogate="stale",
                             clip_low=0.2, clip_high=0.2, kl="none", beta=0.0)
        mu = (w * vals).sum()
        var = (w * (vals - mu) ** 2).sum()
        mu4 = (w * (vals - mu) ** 4).sum()
        se_var = math.sqrt((mu4 - var ** 2 * (R - 3) / (R - 1)) / R)
        res = simulate(steps=1, runs=R, group_size=G, learning_rate=eta, p_ref=p,
                       normalization="mean", seed=G, record=("z",))
        sample_var = float(np.var(res.z[:, 1] - res.z[:, 0], ddof=1))
        cmp = Comparison(sample_var, se_var, var)
        assert cmp, f"G={G}: {cmp}"
        stats[G] = (sample_var, se_var, var)
    (v4, s4, e4), (v32, s32, e32) = stats[4], stats[32]
    ratio = (v4 * 4) / (v32 * 32)
    ratio_exact = (e4 * 4) / (e32 * 32)
    se_ratio = ratio * math.hypot(s4 / v4, s32 / v32)
    cmp = Comparison(ratio, se_ratio, ratio_exact)
    assert cmp, str(cmp)
    assert abs(ratio_exact - 1) < 0.5          # 1/G scaling to leading order


# ---------------------------------------------------------------------------
# optimizers against hand-iterated references
# ---------------------------------------------------------------------------

def hand_kl_gradient(theta, theta_ref, beta):
    lp, lr = _log_softmax(theta), _log_softmax(theta_ref)
    pi = [math.exp(v) for v in lp]
    kl = sum(p * (a - b) for p, a, b in zip(pi, lp, lr))
    return [beta * p * (a - b - kl) for p, a, b in zip(pi, lp, lr)]


def hand_iterate(theta, theta_ref, beta, steps, optimizer, lr, mu=0.0, b1=0.9, b2=0.999,
                 eps=1e-8):
    theta = list(theta)
    buf = [0.0] * len(theta)
    m = [0.0] * len(theta)
    v = [0.0] * len(theta)
    traj = [list(theta)]
    for t in range(1, steps + 1):
        g = hand_kl_gradient(theta, theta_ref, beta)
        for k in range(len(theta)):
            if optimizer == "sgd":
                theta[k] -= lr * g[k]
            elif optimizer == "momentum":
                buf[k] = mu * buf[k] + g[k]
                theta[k] -= lr * buf[k]
            else:
                m[k] = b1 * m[k] + (1 - b1) * g[k]
                v[k] = b2 * v[k] + (1 - b2) * g[k] ** 2
                mhat = m[k] / (1 - b1 ** t)
                vhat = v[k] / (1 - b2 ** t)
                theta[k] -= lr * mhat / (math.sqrt(vhat) + eps)
        traj.append(list(theta))
    return traj


@pytest.mark.parametrize("actions", [2, 3])
@pytest.mark.parametrize("optimizer,extra", [
    ("sgd", {}), ("momentum", {"momentum": 0.9}),
    ("adam", {}), ("adam", {"adam_betas": (0.8, 0.99), "adam_eps": 1e-3}),
])
def test_optimizer_updates_match_hand_iterated_reference(actions, optimizer, extra):
    """Equal rewards make every group zero-variance (Â = 0), so the exact-KL force is
    the whole, deterministic gradient and the trajectory can be iterated by hand."""
    theta0 = [1.0, -0.5, 0.25][:actions]
    theta_ref = [0.0, 0.3, -0.1][:actions]
    steps, lr, beta = 25, 0.3, 0.7
    res = simulate(steps=steps, runs=3, actions=actions, rewards=[0.5] * actions,
                   theta0=theta0, theta_ref=theta_ref, kl="exact", kl_coef=beta,
                   optimizer=optimizer, learning_rate=lr, **extra)
    b1, b2 = extra.get("adam_betas", (0.9, 0.999))
    traj = hand_iterate(theta0, theta_ref, beta, steps, optimizer, lr,
                        mu=extra.get("momentum", 0.0), b1=b1, b2=b2,
                        eps=extra.get("adam_eps", 1e-8))
    for run in range(3):
        np.testing.assert_allclose(res.final_logits[run], traj[-1], rtol=1e-10, atol=1e-12)
    kl_hand = []
    for th in traj:
        lp, lr_ = _log_softmax(th), _log_softmax(theta_ref)
        kl_hand.append(sum(math.exp(a) * (a - b) for a, b in zip(lp, lr_)))
    np.testing.assert_allclose(res.kl[0], kl_hand, rtol=1e-9, atol=1e-13)
    assert np.all(res.zero_var_frac[:, :-1] == 1.0)


def test_optimizer_class_matches_scalar_reference_on_random_gradients():
    rng = np.random.default_rng(0)
    grads = rng.normal(0, 1, (40, 5))
    for kind, kw in (("momentum", {"momentum": 0.7}), ("adam", {"betas": (0.85, 0.95)})):
        opt = K.Optimizer(kind, (5,), learning_rate=0.05, **kw)
        theta = np.zeros(5)
        for g in grads:
            theta += opt.step(g)
        for j in range(5):
            th, buf, m, v = 0.0, 0.0, 0.0, 0.0
            for t, g in enumerate(grads[:, j], start=1):
                if kind == "momentum":
                    buf = 0.7 * buf + g
                    th -= 0.05 * buf
                else:
                    m = 0.85 * m + 0.15 * g
                    v = 0.95 * v + 0.05 * g * g
                    th -= 0.05 * (m / (1 - 0.85 ** t)) / (math.sqrt(v / (1 - 0.95 ** t)) + 1e-8)
            assert theta[j] == pytest.approx(th, rel=1e-12, abs=1e-14)


# ---------------------------------------------------------------------------
# lag models
# ---------------------------------------------------------------------------

def _lag_residuals(res, lag_of_step, eta, G):
    """Per-run residual Δz_t − 2η(1 − 1/G) q(1 − q) with q the success probability of
    the step lag_of_step(t): zero mean iff the group was drawn from that policy."""
    p = res.reward
    cols = []
    for t in range(res.steps):
        q = p[:, lag_of_step(t)]
        cols.append(res.z[:, t + 1] - res.z[:, t] - 2 * eta * (1 - 1 / G) * q * (1 - q))
    return np.stack(cols, axis=1)


@pytest.mark.parametrize("lag_model,k", [("delay", 3), ("refresh", 4)])
def test_lag_models_draw_groups_from_the_stale_policy(lag_model, k):
    G, eta, R, T = 8, 1.0, 20_000, 8
    params = dict(delay=k) if lag_model == "delay" else dict(refresh_interval=k)
    res = simulate(steps=T, runs=R, group_size=G, learning_rate=eta, normalization="mean",
                   lag_model=lag_model, seed=9, record=("reward", "z"), **params)
    lagged = (lambda t: max(t - k, 0)) if lag_model == "delay" else (lambda t: t - t % k)
    stale = _lag_residuals(res, lagged, eta, G)
    fresh = _lag_residuals(res, lambda t: t, eta, G)
    detected = 0
    for t in range(T):
        ok = compare(stale[:, t], 0.0)
        assert ok, f"step {t}: {ok}"
        if lagged(t) != t:
            detected += not compare(fresh[:, t], 0.0)
    assert detected >= 4, "the lag is not visible: fresh-policy residuals look unbiased"
    # control: on-policy, the fresh residual is unbiased
    on = simulate(steps=4, runs=R, group_size=G, learning_rate=eta, normalization="mean",
                  seed=9, record=("reward", "z"))
    on_res = _lag_residuals(on, lambda t: t, eta, G)
    for t in range(4):
        cmp = compare(on_res[:, t], 0.0)
        assert cmp, str(cmp)


def test_refresh_ratio_differs_from_one_inside_window():
    """With refresh k > 1 and the ratio surrogate, later steps of a window see ρ ≠ 1
    (clipping occurs); with k = 1 it never does."""
    kw = dict(steps=8, runs=2000, learning_rate=2.0, surrogate="ratio", seed=1,
              record=("clip_frac",))
    off = simulate(refresh_interval=4, **kw).mean("clip_frac")
    on = simulate(**kw).mean("clip_frac")
    assert np.all(on[:-1] == 0)
    assert off[0] == 0 and off[4] == 0 and np.all(off[[1, 2, 3, 5, 6, 7]] > 0)


# ---------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("kw,message", [
    (dict(group_size=1), "group_size must be an integer >= 2 or 'inf', got 1"),
    (dict(runs=0), "runs must be an integer >= 1, got 0"),
    (dict(learning_rate=0.0), "learning_rate must be a real number > 0, got 0.0"),
    (dict(optimizer="momentum", momentum=1.0), "momentum must be a real number in [0, 1)"),
    (dict(refresh_interval=0), "refresh_interval must be an integer >= 1, got 0"),
    (dict(p_ref=1.0), "p_ref must be a real number in (0.0, 1.0), got 1.0"),
    (dict(normalization="max"), "normalization must be one of 'std', 'mean', got 'max'"),
    (dict(kl="k1_reward", kl_coef=0.5), "normalization must be 'mean' with kl 'k1_reward'"),
    (dict(delay=2), "delay must be given only with lag_model 'delay'"),
    (dict(group_size="inf"), "group_size must be a finite integer >= 2 to simulate"),
    (dict(actions=3, correct=3), "correct must be an integer in [1, 2], got 3"),
    (dict(rewards=[0.5, 1.5]), "rewards must be rewards in [0, 1]"),
    (dict(theta0=[0.0, 1.0], p0=0.5), "p0 must be None when theta0 is given"),
    (dict(theta0=[0.0, 1.0, 2.0]), "theta0 must be an array of shape (2,) or (4, 2)"),
    (dict(record=("reward", "speed")), "record must be one of"),
    (dict(rewards=[0.5, 0.5]), "p_ref must be inside"),
])
def test_bad_input_raises_parameter_error(kw, message):
    with pytest.raises(ParameterError) as err:
        simulate(**{"steps": 2, "runs": 4, **kw})
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_the_result_carries_the_model_and_the_settings():
    model = GRPOModel(**BASE)
    a = simulate_model(model, steps=3, runs=5, seed=2)
    b = simulate_model(model.replace(group_size=4), steps=3, runs=5, seed=2)
    assert a.model is model and b.model.group_size == 4 and b.settings.seed == 2
    assert a.settings.steps == 3 and a.runs == 5 and a.steps == 3
    np.testing.assert_array_equal(a.reward, simulate(steps=3, runs=5, seed=2).reward)
    with pytest.raises(ParameterError, match="model must be a GRPOModel"):
        simulate_model({"group_size": 8}, steps=1)


def test_heavy_ball_at_zero_momentum_is_plain_sgd():
    """sgd with momentum 0 takes the buffer-free step; the increments are the same."""
    a = simulate(steps=20, runs=16, seed=4)
    kw = dict(steps=20, runs=16, seed=4, record=("z",))
    model = GRPOModel(**{**BASE, "momentum": 1e-300})
    b = simulate_model(model, **kw)
    np.testing.assert_allclose(a.z, b.z, rtol=0, atol=1e-12)


# ---------------------------------------------------------------------------
# command line
# ---------------------------------------------------------------------------

def test_cli_json_and_csv(capsys, tmp_path):
    out = tmp_path / "s.csv"
    rc = cli_main(["simulate", "--steps", "6", "--runs", "16", "--group-size", "4",
                   "--seed", "3", "--json", "--out", str(out)])
    assert rc == 0
    data = json.loads(capsys.readouterr().out)
    for key in ("mean_reward", "var_reward", "runs", "steps", "group_size", "seed",
                "mean_z", "mean_entropy", "mean_zero_var_frac", "mean_kl"):
        assert key in data
    assert data["runs"] == 16 and data["steps"] == 6 and data["group_size"] == 4
    assert data["seed"] == 3 and len(data["mean_reward"]) == 7
    ref = simulate_model(GRPOModel(group_size=4), steps=6, runs=16, seed=3)   # the defaults
    np.testing.assert_allclose(data["mean_reward"], ref.mean("reward"), rtol=1e-15)
    np.testing.assert_allclose(data["var_reward"], ref.var("reward"), rtol=1e-15)
    assert data["mean_grad_norm"][-1] is None          # NaN → null, valid JSON
    rows = list(csv.DictReader(open(out)))
    assert len(rows) == 7 and float(rows[-1]["mean_reward"]) == pytest.approx(
        ref.mean("reward")[-1], rel=1e-15)


def test_cli_human_summary_and_options(capsys):
    rc = cli_main(["simulate", "--steps", "8", "--runs", "8", "--momentum", "0.5",
                   "--lag-model", "delay", "--delay", "2", "--kl", "k3", "--kl-coef", "0.1",
                   "--surrogate", "ratio", "--actions", "3", "--prompts", "2",
                   "--difficulty-spread", "0.3"])
    assert rc == 0
    text = capsys.readouterr().out
    assert "mean reward" in text and "mu = 0.5" in text and "delay 2" in text
    assert "note: refresh_interval = 2 is not used with lag_model 'delay'" in text


@pytest.mark.parametrize("argv,name", [
    (["--group-size", "1"], "group_size"), (["--momentum", "1"], "momentum"),
    (["--learning-rate", "0"], "learning_rate"), (["--refresh-interval", "0"],
                                                  "refresh_interval"),
    (["--p-ref", "1.2"], "p_ref"), (["--runs", "0"], "runs"), (["--steps", "x"], "steps"),
])
def test_cli_bad_input_exit_code_2_one_line(capsys, argv, name):
    rc = cli_main(["simulate", *argv])
    assert rc == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith("grpo-theory simulate: error: " + name)


# ---------------------------------------------------------------------------
# divergence: detection, freezing, statistics over live runs
# ---------------------------------------------------------------------------

UNSTABLE = [
    dict(learning_rate=50.0, refresh_interval=20),
    dict(learning_rate=10.0, optimizer="momentum", momentum=0.99),
    dict(learning_rate=50.0, refresh_interval=20, surrogate="ratio", kl="k3", kl_coef=0.1),
    dict(learning_rate=50.0, refresh_interval=20, actions=3),
    dict(learning_rate=5.0, optimizer="momentum", momentum=0.99, refresh_interval=50,
         kl="k3", kl_coef=0.1, actions=3),
    dict(learning_rate=1e300, optimizer="adam"),
]


@pytest.mark.parametrize("kw", UNSTABLE)
def test_unstable_runs_complete_without_warnings_and_report_divergence(kw, recwarn):
    import warnings
    steps, runs = 300, 32
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = simulate(steps=steps, runs=runs, seed=1, **kw)
        s = res.summary()
        table = res.per_step()
        for name in res.observables:
            res.mean(name), res.var(name), res.sem(name)
    assert len(recwarn) == 0
    d = res.diverged_at
    assert d.shape == (runs,) and d.dtype.kind == "i"
    assert res.diverged.any()
    np.testing.assert_array_equal(res.diverged, d >= 0)
    assert np.all((d == -1) | ((d >= 1) & (d <= steps)))
    assert res.diverged_fraction == pytest.approx(np.mean(d >= 0))
    # raw arrays stay finite; frozen runs repeat their last accepted state
    for name in K.STATE_OBSERVABLES:
        assert np.all(np.isfinite(res[name]))
    for name in K.UPDATE_OBSERVABLES:
        assert np.all(np.isfinite(res[name][:, :-1]))
    for r in np.flatnonzero(res.diverged):
        assert np.all(res.z[r, d[r]:] == res.z[r, d[r] - 1])
    th = res.final_logits
    assert np.all(np.isfinite(th))
    assert np.all(th.max(axis=1) - th.min(axis=1) <= res.settings.divergence_bound)
    # statistics over live runs, with n_active per step
    act = res.active
    np.testing.assert_array_equal(act, res.t[None, :] < np.where(d >= 0, d, steps + 1)[:, None])
    np.testing.assert_array_equal(res.n_active, act.sum(axis=0))
    assert table["n_active"] == res.n_active.tolist()
    for t in range(0, steps + 1, 7):
        live = res.reward[act[:, t], t]
        if live.size == 0:
            assert math.isnan(res.mean("reward")[t])
            continue
        assert res.mean("reward")[t] == pytest.approx(live.mean(), rel=1e-12)
        if live.size > 1:
            assert res.var("reward")[t] == pytest.approx(live.var(ddof=1), rel=1e-9, abs=1e-20)
            assert res.sem("reward")[t] == pytest.approx(
                math.sqrt(live.var(ddof=1) / live.size), rel=1e-9, abs=1e-12)
        else:
            assert math.isnan(res.var("reward")[t])
    json.dumps(s, allow_nan=False)                    # summary is valid JSON as is
    assert s["diverged_fraction"] == res.diverged_fraction
    assert s["n_diverged"] == int(res.diverged.sum())
    assert s["final"]["reward"]["n_active"] == res.n_active[-1]


@pytest.mark.parametrize("kw", [dict(), dict(actions=3, learning_rate=0.5),
                                dict(optimizer="adam", learning_rate=0.05, steps=300)])
def test_stable_runs_report_no_divergence(kw):
    kw = {"steps": 100, **kw}
    res = simulate(runs=50, seed=2, **kw)
    assert not res.diverged.any() and np.all(res.diverged_at == -1)
    assert res.diverged_fraction == 0.0 and res.summary()["diverged_fraction"] == 0.0
    assert np.all(res.active) and np.all(res.n_active == 50)
    x = res.reward
    np.testing.assert_array_equal(res.mean("reward"), x.mean(axis=0))
    np.testing.assert_array_equal(res.var("reward"), x.var(axis=0, ddof=1))


def test_divergence_reproducible_and_kernels_agree():
    kw = dict(steps=200, runs=64, learning_rate=50.0, refresh_interval=20, seed=5)
    a, b = simulate(**kw), simulate(**kw)
    np.testing.assert_array_equal(a.diverged_at, b.diverged_at)
    for name in K.OBSERVABLES:
        np.testing.assert_array_equal(a[name], b[name])
    np.testing.assert_array_equal(a.final_logits, b.final_logits)
    g = simulate(_kernel="generic", **kw)
    np.testing.assert_array_equal(a.diverged_at, g.diverged_at)


def test_divergence_bound_option_and_validation():
    res = simulate(steps=200, runs=32, learning_rate=1.0, divergence_bound=5.0, seed=0)
    assert res.diverged.all()
    assert np.all(np.abs(res.z) <= 5.0)          # K = 2: z = θ₀ − θ₁, frozen below the bound
    for bad in (0.0, -1.0, 301.0, math.inf):
        with pytest.raises(ParameterError, match="divergence_bound"):
            simulate(steps=1, divergence_bound=bad)
    with pytest.raises(ParameterError, match="theta0"):
        simulate(steps=1, theta0=(10.0, 0.0), divergence_bound=5.0)


def test_z_stays_finite_for_saturated_policies():
    """z from log p − log(1 − p) in the log domain: finite where p rounds to 1."""
    res = simulate(steps=0, runs=2, actions=3, theta0=(100.0, 0.0, 0.0))
    assert res.z[:, 0] == pytest.approx([100.0 - math.log(2.0)] * 2, rel=1e-14)
    res = simulate(steps=0, runs=2, prompts=2, difficulty_spread=0.5, theta0=(80.0, 0.0))
    off = res.offsets[:, 0] - res.offsets[:, 1]
    miss = np.mean(np.exp(-(80.0 + off)))           # 1 − p to leading order
    assert res.z[:, 0] == pytest.approx([-math.log(miss)] * 2, rel=1e-12)


def test_cli_reports_divergence(capsys):
    argv = ["simulate", "--steps", "200", "--runs", "16", "--learning-rate", "10",
            "--momentum", "0.99"]
    assert cli_main(argv + ["--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert 0 < data["diverged_fraction"] <= 1 and data["n_diverged"] > 0
    assert len(data["n_active"]) == 201 and data["n_active"][0] == 16
    assert cli_main(argv) == 0
    text = capsys.readouterr().out
    assert "WARNING" in text and "diverged" in text
    assert cli_main(["simulate", "--steps", "10", "--runs", "8"]) == 0
    assert "WARNING" not in capsys.readouterr().out


def test_batch_reuse_repeats_the_window_batch():
    # stale surrogate, mean normalization, no KL, SGD: the update depends only on the
    # counts, so with one batch per window the k increments of a window are equal
    kw = dict(steps=12, runs=50, group_size=4, normalization="mean", learning_rate=0.3,
              refresh_interval=3, seed=4, record=("z",))
    dz = np.diff(simulate(reuse="batch", **kw).observables["z"], axis=1)
    windows = dz.reshape(50, 4, 3)
    assert np.allclose(windows, windows[:, :, :1])
    fresh = np.diff(simulate(reuse="fresh", **kw).observables["z"], axis=1).reshape(50, 4, 3)
    assert not np.allclose(fresh, fresh[:, :, :1])


def test_batch_reuse_kernels_agree():
    kw = dict(steps=40, runs=20, refresh_interval=3, reuse="batch", surrogate="ratio",
              kl="k3", kl_coef=0.2, seed=1, record=("z",))
    a = simulate(**kw).observables["z"]
    b = simulate(_kernel="generic", **kw).observables["z"]
    np.testing.assert_allclose(a, b, atol=1e-12)


@pytest.mark.parametrize("params,match", [
    (dict(kl="k3", kl_coef=-0.1), "kl_coef must be a real number >= 0"),
    (dict(lag_model="delay", delay=2, reuse="batch"), "reuse"),
    (dict(reuse="twice"), "reuse"),
])
def test_new_refusals(params, match):
    with pytest.raises(ParameterError, match=match):
        simulate(steps=2, **params)


@pytest.mark.parametrize("argv,match", [
    (["--reuse", "batch", "--lag-model", "delay", "--delay", "2"], "reuse"),
    (["--delay", "2"], "delay"),
    (["--lag-model", "delay"], "delay"),
    (["--window-batches", "2"], "window_batches"),
])
def test_cli_refusals(argv, match, capsys):
    rc = cli_main(["simulate", "--steps", "2", "--runs", "2", *argv])
    err = capsys.readouterr().err
    assert rc == 2 and match in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("argv,note", [
    (["--clip-low", "0.1"], "clip_low = 0.1 not used by the stale surrogate"),
    (["--clip-high", "0.3"], "clip_high = 0.3 not used by the stale surrogate"),
    (["--adam-beta1", "0.8"], "adam_beta1 = 0.8 not used by the optimizer sgd"),
    (["--kl", "none"], "kl_coef = 0.1 is not used (kl is 'none')"),
    (["--optimizer", "adam", "--learning-rate", "0.01"], "momentum = 0.5 is not used by Adam"),
])
def test_cli_notes_options_that_the_chosen_ones_do_not_use(argv, note, capsys):
    """An option the model's choices do not use is neither required nor refused: noted."""
    assert cli_main(["simulate", "--steps", "2", "--runs", "2", *argv]) == 0
    assert f"note: {note}" in capsys.readouterr().out


def test_cli_json_keys_and_new_options(capsys):
    rc = cli_main(["simulate", "--steps", "4", "--runs", "8", "--refresh-interval", "2",
                   "--reuse", "batch", "--kl", "k1_reward", "--kl-coef", "0.5",
                   "--normalization", "mean", "--optimizer", "adam", "--adam-beta1", "0.8",
                   "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0
    for key in ("mean_reward", "var_reward", "var_z", "n_active", "step", "reuse"):
        assert key in out
    assert out["reuse"] == "batch" and out["adam_betas"] == [0.8, 0.999]


def test_cycled_window_batches():
    # mean normalization, stale, no KL, SGD: increments depend on the counts only, so with
    # k = 4 and 2 batches the window's increments repeat with period 2; both kernels agree
    kw = dict(steps=16, runs=40, group_size=4, normalization="mean", learning_rate=0.3,
              refresh_interval=4, reuse="batch", window_batches=2, seed=6, record=("z",))
    dz = np.diff(simulate(**kw).observables["z"], axis=1).reshape(40, 4, 4)
    assert np.allclose(dz[:, :, :2], dz[:, :, 2:])
    assert not np.allclose(dz[:, :, 0], dz[:, :, 1])
    b = simulate(_kernel="generic", **kw).observables["z"]
    np.testing.assert_allclose(simulate(**kw).observables["z"], b, atol=1e-12)
    with pytest.raises(ParameterError, match="window_batches"):
        simulate(steps=2, refresh_interval=4, reuse="batch", window_batches=3)


def test_a_spread_that_makes_p_ref_unreachable_names_the_spread(capsys):
    """σ = 1e308 pins every prompt's success at 0 or 1: the refusal names difficulty_spread (the
    parameter to change), not p_ref, and the range the spread leaves."""
    assert cli_main(["simulate", "--difficulty-spread", "1e308", "--steps", "2", "--runs", "2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "difficulty_spread must be small enough that p_ref = 0.3 is reachable" in err[0]
    assert err[0].endswith("got 1e+308")
