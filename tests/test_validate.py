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


def test_memory_limit_is_a_share_of_the_available_memory(monkeypatch):
    """Issue 29 item 6: the limit the size checks use, and the one-line refusal."""
    import grpo_theory.validate as V

    limit, source = V.memory_limit()
    with open("/proc/meminfo") as fh:   # the independent reading (Linux; CI runs there)
        avail = next(int(ln.split()[1]) * 1024 for ln in fh if ln.startswith("MemAvailable:"))
    assert 0.7 * avail < limit < 0.9 * avail and "available" in source
    monkeypatch.setattr(V, "memory_limit", lambda: (1 << 30, "a test's 1 GiB"))
    V.check_memory("runs", 10, 1 << 30, "exactly the limit")
    with pytest.raises(V.ParameterError) as exc:
        V.check_memory("runs", 10**9, 10**21, "an estimate")
    assert str(exc.value) == ("runs must be small enough to fit in memory: this needs about "
                              "867 EiB (an estimate), over the limit of 1 GiB (a test's 1 GiB), "
                              "got 1000000000")
