"""Adam's heavy-ball reduction: the identity, the self-consistent second moment, the check."""

import pytest

from grpo_theory.crosscheck import check_adam
from grpo_theory.theory.adam import adam_reduction
from grpo_theory.theory.derived import get
from grpo_theory.theory.reuse import stationary_variance
from grpo_theory.validate import ParameterError


def test_momentum_form_proven():
    d = get("adam.momentum_form")
    assert d.verifications and all(v.passed and v.method == "sympy" for v in d.verifications)


def test_self_consistent_second_moment():
    eta, K, s2 = 0.01, 1.0, 0.0124
    r = adam_reduction(eta, K, s2, betas=(0.9, 0.999))
    V = stationary_variance(eta * 0.1 / r.second_moment**0.5, 0.9, K, s2)
    assert r.second_moment == pytest.approx((s2 + K**2 * V) / 4, rel=1e-6)
    assert r.stationary_variance_z == pytest.approx(V, rel=1e-6)
    assert r.second_moment > s2 / 4 and r.effective_learning_rate < r.first_order_learning_rate


def test_adam_stays_stationary_past_the_heavy_ball_threshold():
    # first-order eta_eff beyond the L2 threshold: v grows until the step is stable again
    r = adam_reduction(5.0, 1.0, 0.0124, betas=(0.9, 0.999))
    assert r.first_order_variance_z is None and r.stationary_variance_z is not None


def test_bad_input():
    with pytest.raises(ParameterError, match="betas"):
        adam_reduction(0.01, 1.0, 0.01, betas=(0.9,))


def test_adam_check_within_ten_percent():
    c = check_adam()
    assert c.verdict == "pass", c.details["notes"]
    assert abs(c.details["relative_error_variance"]) < 0.10


def test_critical_step_proven_and_inverted():
    from grpo_theory.theory.adam import critical_learning_rate

    assert all(v.passed and v.method == "sympy" for v in get("adam.critical_step").verifications)
    eta_c = critical_learning_rate(1.0, 0.0124, betas=(0.9, 0.999))
    r = adam_reduction(eta_c, 1.0, 0.0124, betas=(0.9, 0.999))
    assert r.effective_learning_rate * 1.0 == pytest.approx((1 - 0.9**0.5) ** 2, rel=1e-8)
    # independent: the heavy-ball eigenvalues at that step are a double root
    import numpy as np

    a = r.effective_learning_rate
    roots = np.roots([1.0, -(1.9 - a), 0.9])
    assert abs(roots[0] - roots[1]) < 1e-3


def test_adam_critical_damping_check():
    from grpo_theory.crosscheck import check_adam_critical_damping

    c = check_adam_critical_damping()
    assert c.verdict == "pass", c.details["notes"]
