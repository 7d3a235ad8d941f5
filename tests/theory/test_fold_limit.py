"""The atlas's fold curves as p_ref -> 0: they continue, and approach the predicted limits."""

from __future__ import annotations

import math

import pytest

from grpo_theory.theory.atlas import ATLAS_MODEL
from grpo_theory.theory.drift import expected_advantage
from grpo_theory.theory.fold_limit import fold_limit, limit_folds
from grpo_theory.validate import ParameterError


def test_limits_are_h_at_zero_and_at_infinity():
    lower, upper = limit_folds(64)
    # h(0) = A_G(1/2) / (1/4), from the expected advantage mass directly
    assert lower["h"] == pytest.approx(4 * float(expected_advantage(ATLAS_MODEL.replace(group_size=64), 0.5)), rel=1e-12)
    # as p -> 1 only groups with one failure remain: probability G p^(G-1) q, advantage mass
    # on the correct action (G-1)/G^2 divided by the group std sqrt((G-1)/(G(G-1))) = 1/sqrt(G);
    # h = A_G/(p q) -> G (G-1)/G^(3/2) = (G-1)/sqrt(G)
    assert upper["h"] == pytest.approx(63 / 8, rel=1e-12)


def test_folds_continue_below_the_drawing_limit_and_approach_their_limits():
    r = fold_limit(64, p_refs=(1e-8, 1e-16))
    assert r.passed
    (lo8, up8), (lo16, up16) = (row["folds"] for row in r.rows)
    # both fold betas keep falling, like 1/ln(1/p_ref)
    assert lo16["kl_coef"] < lo8["kl_coef"] and up16["kl_coef"] < up8["kl_coef"]
    # lower fold: gap O(L^-2) with a stable constant; upper fold: gap ~ h_inf / L
    assert lo8["gap"] * lo8["L"] ** 2 == pytest.approx(lo16["gap"] * lo16["L"] ** 2, rel=0.02)
    assert up16["gap"] * up16["L"] == pytest.approx(63 / 8, rel=0.01)
    # and the fold positions in reward approach 1/2 and 1
    assert abs(lo16["p"] - 0.5) < abs(lo8["p"] - 0.5) and up16["p"] > up8["p"]


def test_other_kl_forms_are_refused():
    with pytest.raises(ParameterError, match="kl must be exact"):
        limit_folds(64, ATLAS_MODEL.replace(kl="k3"))
    with pytest.raises(ParameterError, match="normalization"):
        limit_folds(64, ATLAS_MODEL.replace(normalization="mean"))
    assert math.isinf(limit_folds(8)[1]["z"])
