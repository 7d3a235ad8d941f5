"""The argument checks' messages (validate.py)."""

import math

import pytest

from grpo_theory.validate import ParameterError, check_real


@pytest.mark.parametrize("value", [math.inf, "inf", -math.inf, math.nan, "nan"])
def test_a_non_finite_value_is_told_it_must_be_finite(value):
    """Issue 21 item 12: `must be a real number > 0, got inf`."""
    with pytest.raises(ParameterError) as exc:
        check_real("learning_rate", value, low=0, low_open=True)
    assert str(exc.value).startswith("learning_rate must be a finite real number > 0, got ")


def test_a_finite_value_out_of_range_keeps_the_plain_message():
    with pytest.raises(ParameterError, match=r"^momentum must be a real number in \[0, 1\), got 1$"):
        check_real("momentum", 1, low=0, high=1, high_open=True)
    with pytest.raises(ParameterError, match="must be a finite real number, got"):
        check_real("x", "inf")
