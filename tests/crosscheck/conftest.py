"""The quick cross-check run, shared by the cross-check test modules (computed once per test
run, see tests/conftest.py)."""

import pytest


@pytest.fixture(scope="session")
def report(quick_crosschecks):
    return quick_crosschecks
