"""KL in the reward (verl ``use_kl_in_reward``, k1): drift, fixed point, split, simulation.

The reference enumerates every reward vector of a group (2^G outcomes), shifts each
sample's reward by -beta (log pi_old(a) - log pi_ref(a)), forms mean-normalized
advantages with numpy and differentiates the per-group objective in z with central
finite differences.  Nothing from the package's formulas is used.
"""

import itertools
import math

import numpy as np
import pytest

from grpo_theory.model import GRPOModel
from grpo_theory.simulation import simulate
from grpo_theory.theory import drift as D
from grpo_theory.theory.derived import get
from grpo_theory.theory.fixed_points import fixed_points, stable_fixed_point
from grpo_theory.validate import ParameterError

#: KL in the reward with mean normalization (its only normalization), p_ref = 0.3
K1 = GRPOModel(normalization="mean", kl="k1_reward", p_ref=0.3, adv_eps=0.0)

SIG = lambda z: 1 / (1 + math.exp(-z))  # noqa: E731


def reference_drift(z, z_old, *, surrogate, G, beta, p_ref):
    po = SIG(z_old)
    logpo = np.array([math.log(1 - po), math.log(po)])        # index: action is correct
    logpr = np.array([math.log(1 - p_ref), math.log(p_ref)])

    def objective(zz, a, adv):
        p = SIG(zz)
        logp = np.where(a == 1, math.log(p), math.log(1 - p))
        if surrogate == "ratio":
            return np.mean(np.exp(logp - logpo[a]) * adv)
        return np.mean(logp * adv)

    total, h = 0.0, 1e-6
    for outcome in itertools.product((0, 1), repeat=G):
        a = np.array(outcome)
        n = a.sum()
        r = a - beta * (logpo[a] - logpr[a])
        adv = r - r.mean()
        grad = (objective(z + h, a, adv) - objective(z - h, a, adv)) / (2 * h)
        total += po**n * (1 - po) ** (G - n) * grad
    return 2.0 * total


def test_derivations_proven():
    for name in ("drift.kl_force_k1_reward", "fixed_points.k1_reward_location"):
        d = get(name)
        assert d.verifications and all(v.passed and v.method == "sympy" for v in d.verifications)


@pytest.mark.parametrize("surrogate", ["stale", "ratio"])
@pytest.mark.parametrize("z,z_old", [(0.3, -0.4), (1.7, 2.2), (-1.0, -1.0)])
def test_drift_matches_enumeration(surrogate, z, z_old):
    kw = dict(G=5, beta=0.4, p_ref=0.3)
    # the reference enumerates the unclipped ratio objective; the drift refuses points where
    # the clip binds unless the unclipped loss is asked for explicitly
    got = D.drift(K1.replace(surrogate=surrogate, group_size=5, kl_coef=0.4), z, z_old,
                  clip=surrogate != "ratio")
    assert got == pytest.approx(reference_drift(z, z_old, surrogate=surrogate, **kw), abs=1e-7)


def test_fixed_point_and_all_stale_split():
    beta, p_ref = 0.25, 0.3
    fps = fixed_points(K1.replace(kl_coef=beta, p_ref=p_ref, group_size=8))
    assert len(fps) == 1
    fp = fps[0]
    assert fp.z == pytest.approx(math.log(p_ref / (1 - p_ref)) + 1 / beta, abs=1e-10)
    assert fp.stiffness_fresh == 0.0
    # K = kappa beta (1 - 1/G) p q, by finite differences of the enumerated drift
    h = 1e-5
    ref = -(reference_drift(fp.z, fp.z + h, surrogate="stale", G=8, beta=beta, p_ref=p_ref)
            - reference_drift(fp.z, fp.z - h, surrogate="stale", G=8, beta=beta, p_ref=p_ref)) / (2 * h)
    assert fp.stiffness == pytest.approx(ref, rel=1e-5)


def test_std_normalization_refused():
    with pytest.raises(ParameterError, match="normalization"):
        GRPOModel(kl="k1_reward", normalization="std")
    with pytest.raises(ParameterError, match="normalization"):
        K1.replace(normalization="std")


def test_simulated_one_step_drift():
    # E[z_1 - z_0] = eta F(z_0) for SGD, stale surrogate, on-policy; band 4 standard errors
    eta, beta, p_ref, p0 = 0.1, 0.5, 0.3, 0.6
    model = K1.replace(group_size=6, p_ref=p_ref, learning_rate=eta, momentum=0.0,
                       refresh_interval=1, kl_coef=beta)
    res = simulate(model, steps=1, runs=40000, p0=p0, seed=3, record=("z",))
    dz = res.observables["z"][:, 1] - res.observables["z"][:, 0]
    z0 = math.log(p0 / (1 - p0))
    pred = eta * reference_drift(z0, z0, surrogate="stale", G=6, beta=beta, p_ref=p_ref)
    se = dz.std(ddof=1) / math.sqrt(dz.size)
    assert abs(dz.mean() - pred) < 4 * se


def test_simulation_settles_at_the_fixed_point():
    m = GRPOModel(kl="k1_reward", normalization="mean", kl_coef=0.5, learning_rate=1.0,
                  momentum=0.0, refresh_interval=1)
    res = simulate(m, steps=300, runs=64, seed=2, record=("z",))
    assert np.allclose(res.observables["z"][:, -1], stable_fixed_point(m).z, atol=1e-8)


def test_refresh_threshold_check_locates_the_all_stale_threshold():
    from grpo_theory.crosscheck import check_k1_refresh_threshold

    c = check_k1_refresh_threshold()
    assert c.verdict == "pass", c.details["notes"]
    assert c.predicted == c.measured
    assert any(r["stable"] is False for r in c.details["rows"])   # the unstable side was run
