"""The collapse cross-check: simulated fraction collapsed by T within its binomial band."""

from grpo_theory.crosscheck import CHECKS, check_collapse, check_collapse_reuse


def test_collapse_check_passes():
    assert "collapse" in [n for n, _ in CHECKS]
    c = check_collapse()
    assert c.verdict == "pass", c.details["notes"]
    assert 0.05 < c.predicted < 0.5      # a measurable probability, not a trivial 0 or 1


def test_collapse_with_batch_reuse_passes():
    c = check_collapse_reuse()
    assert c.verdict == "pass", c.details["notes"]
    assert 0.05 < c.predicted < 0.95
