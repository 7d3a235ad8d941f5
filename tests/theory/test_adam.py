"""Adam's heavy-ball reduction: the identity, the self-consistent second moment, the check."""

import pytest

from grpo_theory.crosscheck import check_adam
from grpo_theory.model import GRPOModel
from grpo_theory.theory.adam import adam_reduction, critical_learning_rate, heavy_ball_reduction
from grpo_theory.theory.derived import get
from grpo_theory.theory.fixed_points import stable_fixed_point
from grpo_theory.theory.noise import noise_at_fixed_point, stationary_variance
from grpo_theory.validate import ParameterError

BETAS = dict(beta1=0.9, beta2=0.999, eps=1e-8)


def test_momentum_form_proven():
    d = get("adam.momentum_form")
    assert d.verifications and all(v.passed and v.method == "sympy" for v in d.verifications)


def test_self_consistent_second_moment():
    eta, K, s2 = 0.01, 1.0, 0.0124
    r = heavy_ball_reduction(eta, K, s2, **BETAS)
    V = stationary_variance(eta * 0.1 / r.second_moment**0.5, 0.9, K, s2)
    assert r.second_moment == pytest.approx((s2 + K**2 * V) / 4, rel=1e-6)
    assert r.stationary_variance_z == pytest.approx(V, rel=1e-6)
    assert r.second_moment > s2 / 4 and r.effective_learning_rate < r.first_order_learning_rate


def test_adam_stays_stationary_past_the_heavy_ball_threshold():
    # first-order eta_eff beyond the L2 threshold: v grows until the step is stable again
    r = heavy_ball_reduction(5.0, 1.0, 0.0124, **BETAS)
    assert r.first_order_variance_z is None and r.stationary_variance_z is not None


def test_bad_input():
    with pytest.raises(ParameterError, match="adam_beta1"):
        GRPOModel(optimizer="adam", adam_beta1=1.0)
    with pytest.raises(ParameterError, match="stiffness"):
        heavy_ball_reduction(0.01, -1.0, 0.01, **BETAS)
    with pytest.raises(ParameterError, match="group_size"):
        adam_reduction(GRPOModel(optimizer="adam", group_size="inf"))


def test_the_model_route_is_the_reduction_at_its_fixed_point():
    model = GRPOModel(optimizer="adam", learning_rate=0.01, refresh_interval=1)
    fp = stable_fixed_point(model)
    r = heavy_ball_reduction(0.01, fp.stiffness, noise_at_fixed_point(model), **BETAS,
                             fresh_fraction=fp.fresh_fraction)
    assert adam_reduction(model) == r


def test_adam_check_within_ten_percent():
    c = check_adam()
    assert c.verdict == "pass", c.details["notes"]
    assert abs(c.details["relative_error_variance"]) < 0.10


def test_critical_step_proven_and_inverted():
    assert all(v.passed and v.method == "sympy" for v in get("adam.critical_step").verifications)
    model = GRPOModel(optimizer="adam", refresh_interval=1)
    K = stable_fixed_point(model).stiffness
    eta_c = critical_learning_rate(model)
    r = adam_reduction(model.replace(learning_rate=eta_c))
    assert r.effective_learning_rate * K == pytest.approx((1 - 0.9**0.5) ** 2, rel=1e-8)
    # independent: the heavy-ball eigenvalues at that step are a double root
    import numpy as np

    a = r.effective_learning_rate * K
    roots = np.roots([1.0, -(1.9 - a), 0.9])
    assert abs(roots[0] - roots[1]) < 1e-3


def test_adam_critical_damping_check():
    from grpo_theory.crosscheck import check_adam_critical_damping

    c = check_adam_critical_damping()
    assert c.verdict == "pass", c.details["notes"]
