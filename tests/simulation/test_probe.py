"""Tests of the stiffness probe against exhaustive binomial enumeration.

The reference drift F(z) (expected Δz per unit learning rate, two actions, action
0 correct) is enumerated here from a per-sample gradient written in the test.  The
probe's estimator is a central difference with half-width δ, so its expectation is
exactly −(F(z*+δ) − F(z*−δ))/(2δ): that is the reference (no O(δ²) bias to argue
about).  For mean normalization + exact KL the enumeration is also checked
against the closed form F(z) = 2[(1 − 1/G) p(1 − p) − β p(1 − p)(z − z_ref)].
"""

from __future__ import annotations

import math

import pytest
from scipy.special import comb, expit

from grpo_theory.model import GRPOModel
from grpo_theory.simulation.probe import StiffnessMeasurement, measure_drift, measure_stiffness
from grpo_theory.validate import ParameterError


def M(**kw):
    """The probed model: TRL's advantage epsilon 1e-4, no KL unless given, eta = 0.1."""
    return GRPOModel(**{**dict(adv_eps=1e-4, kl="none", kl_coef=0.0, learning_rate=0.1), **kw})


def drift(z, *, G, normalization, kl, beta, z_ref, adv_eps=1e-4):
    """E[Δz]/η of one on-policy SGD step at logit z, by enumeration of the count n."""
    p = expit(z)
    q_ref = expit(z_ref)
    total = 0.0
    for n in range(G + 1):
        w = comb(G, n, exact=True) * p ** n * (1 - p) ** (G - n)
        r = [1.0] * n + [0.0] * (G - n)
        mean = n / G
        if n in (0, G):
            adv = [0.0] * G
        elif normalization == "std":
            sd = math.sqrt(sum((x - mean) ** 2 for x in r) / (G - 1))
            adv = [(x - mean) / (sd + adv_eps) for x in r]
        else:
            adv = [x - mean for x in r]
        pi = (p, 1 - p)
        pref = (q_ref, 1 - q_ref)
        g = [0.0, 0.0]
        for i in range(G):
            a = 0 if i < n else 1
            coef = -adv[i] / G
            if kl == "k3":
                coef += beta * (1 - pref[a] / pi[a]) / G
            for k in range(2):
                g[k] += coef * ((1.0 if k == a else 0.0) - pi[k])
        if kl == "exact":
            lr = [math.log(pi[k] / pref[k]) for k in range(2)]
            klv = sum(pi[k] * lr[k] for k in range(2))
            for k in range(2):
                g[k] += beta * pi[k] * (lr[k] - klv)
        total += w * -(g[0] - g[1])
    return total


def test_enumerated_drift_matches_closed_form_mean_exact_kl():
    G, beta, z_ref = 8, 0.5, math.log(0.3 / 0.7)
    for z in (-1.0, 0.2, 1.3):
        p = expit(z)
        closed = 2 * ((1 - 1 / G) * p * (1 - p) - beta * p * (1 - p) * (z - z_ref))
        assert drift(z, G=G, normalization="mean", kl="exact", beta=beta,
                     z_ref=z_ref) == pytest.approx(closed, rel=1e-12)


@pytest.mark.parametrize("normalization,kl,beta", [
    ("mean", "exact", 0.5),
    ("std", "k3", 0.8),
    ("std", "exact", 1.2),
])
def test_stiffness_matches_enumeration(normalization, kl, beta):
    G, p_ref, delta, runs = 8, 0.3, 0.15, 60_000
    z_ref = math.log(p_ref / (1 - p_ref))
    if normalization == "mean" and kl == "exact":
        z_star = z_ref + (1 - 1 / G) / beta        # root of the closed form above
    else:                                         # a point near the fixed point will do
        z_star = z_ref + 1.0
    F = lambda z: drift(z, G=G, normalization=normalization, kl=kl, beta=beta,  # noqa: E731
                        z_ref=z_ref)
    expected = -(F(z_star + delta) - F(z_star - delta)) / (2 * delta)
    model = M(learning_rate=0.05, group_size=G, normalization=normalization, kl=kl,
              kl_coef=beta, p_ref=p_ref)
    m = measure_stiffness(model, z_star, delta=delta, runs=runs, seed=3)
    assert isinstance(m, StiffnessMeasurement)
    cmp = m.compare(expected)
    assert cmp, str(cmp)
    assert m.runs == runs and m.delta == delta and m.z_star == z_star
    for side, value, se in ((+1, m.drift_plus, m.drift_plus_stderr),
                            (-1, m.drift_minus, m.drift_minus_stderr)):
        ref = F(z_star + side * delta)
        assert abs(value - ref) <= 4 * se, (side, value, ref, se)
    assert m.stderr == pytest.approx(math.hypot(m.drift_plus_stderr, m.drift_minus_stderr)
                                     / (2 * delta))
    if normalization == "mean" and kl == "exact":
        assert abs(m.drift_at_fixed_point - 0.5 * (F(z_star + delta) + F(z_star - delta))) \
            <= 4 * math.hypot(m.drift_plus_stderr, m.drift_minus_stderr) / 2


def test_probe_rejects_wrong_stiffness_and_reproduces():
    G, beta, z_ref = 8, 0.5, math.log(0.3 / 0.7)
    z_star = z_ref + (1 - 1 / G) / beta
    kw = dict(delta=0.15, runs=60_000, seed=5)
    model = M(group_size=G, normalization="mean", kl="exact", kl_coef=beta)
    m = measure_stiffness(model, z_star, **kw)
    p = expit(z_star)
    assert m.compare(2 * beta * p * (1 - p))                 # K = 2βp(1−p) at z*
    assert not m.compare(2 * 2 * beta * p * (1 - p))          # a factor-2 error is caught
    assert measure_stiffness(model, z_star, **kw) == m
    # the probe takes one on-policy SGD step whatever the model's optimizer and lag
    other = model.replace(optimizer="adam", refresh_interval=4, momentum=0.9)
    assert measure_stiffness(other, z_star, **kw) == m


def test_measure_drift_matches_enumeration():
    G, z_ref = 8, math.log(0.3 / 0.7)
    mean, se = measure_drift(M(group_size=G, normalization="std"), 0.4, runs=60_000, seed=1)
    ref = drift(0.4, G=G, normalization="std", kl="none", beta=0.0, z_ref=z_ref)
    assert abs(mean - ref) <= 4 * se


@pytest.mark.parametrize("call,name", [
    (lambda: measure_stiffness(M(), 0.0, delta=0.0), "delta"),
    (lambda: measure_stiffness(M(), 0.0, runs=1), "runs"),
    (lambda: measure_stiffness(M(), float("nan")), "z_star"),
    (lambda: measure_stiffness({"learning_rate": 0.1}, 0.0), "model"),
    (lambda: M(learning_rate=-1.0), "learning_rate"),
])
def test_probe_bad_input(call, name):
    with pytest.raises(ParameterError) as err:
        call()
    assert str(err.value).startswith(name)
