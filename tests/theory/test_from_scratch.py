"""minus_record: a formula derived independently (here, by hand) against the package's record."""

from __future__ import annotations

import pytest
import sympy as sp

from grpo_theory.theory.from_scratch import minus_record


def test_an_independent_derivation_gives_zero_and_a_wrong_one_does_not():
    # the AR(2) stationary variance, written by hand from the Yule-Walker solution
    eta, K, s2 = sp.symbols("eta K sigma2", positive=True)
    mu = sp.Symbol("mu", nonnegative=True)
    by_hand = eta * s2 * (1 + mu) / (K * (1 - mu) * (2 * (1 + mu) - eta * K))
    assert minus_record(by_hand, "noise.ar2_variance", {"sigma^2": s2}) == 0
    assert minus_record(2 * by_hand, "noise.ar2_variance", {"sigma^2": s2}) != 0
    # simplify=False: the difference as it is (here it cancels on its own), zero at a point
    raw = minus_record(by_hand, "noise.ar2_variance", {"sigma^2": s2}, simplify=False)
    assert raw.subs({eta: 0.3, K: 1.1, s2: 0.7, mu: 0.4}) == pytest.approx(0, abs=1e-15)
    assert minus_record(2 * by_hand, "noise.ar2_variance", {"sigma^2": s2},
                        simplify=False).subs({eta: 0.3, K: 1.1, s2: 0.7, mu: 0.4}) != pytest.approx(0, abs=1e-6)


def test_an_unmatched_argument_shows_in_the_difference_and_a_wrong_name_is_refused():
    eta, K = sp.symbols("eta K", positive=True)
    mu = sp.Symbol("mu", nonnegative=True)
    s2 = sp.Symbol("s2", positive=True)           # not named like the record's sigma^2
    by_hand = eta * s2 * (1 + mu) / (K * (1 - mu) * (2 * (1 + mu) - eta * K))
    assert minus_record(by_hand, "noise.ar2_variance") != 0
    with pytest.raises(ValueError, match="sigma_squared"):
        minus_record(by_hand, "noise.ar2_variance", {"sigma_squared": s2})
