"""The quick cross-check run, shared by the cross-check test modules (computed once per
test process)."""

import pytest

from grpo_theory.crosscheck import run_crosschecks


@pytest.fixture(scope="session")
def report():
    return run_crosschecks(quick=True, seed=0, progress=False)
