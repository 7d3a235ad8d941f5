"""The batch-reuse cross-checks run and pass at their quick size."""

from grpo_theory.crosscheck import CHECKS, check_reuse_batch, check_reuse_fresh


def test_registered():
    names = [n for n, _ in CHECKS]
    assert "reuse_fresh" in names and "reuse_batch" in names


def test_reuse_checks_pass():
    fresh, batch = check_reuse_fresh(), check_reuse_batch()
    for c in (fresh, batch):
        assert c.verdict == "pass", c.details["notes"]
    # the measured ratio is far from 1: reuse multiplies the variance
    assert batch.measured / fresh.measured > 2.5
