"""The bifurcation atlas: folds, cusp and L2 codimension-two points against independent references."""

from __future__ import annotations

import warnings

import pytest

from grpo_theory.theory import atlas as A
from grpo_theory.theory.discrete import refresh_thresholds
from grpo_theory.theory.fixed_points import fixed_points

pytestmark = pytest.mark.xdist_group("atlas")   # its module fixture is built on one worker

warnings.filterwarnings("ignore", category=RuntimeWarning)


def fps_at(**kw):
    return fixed_points(A.ATLAS_MODEL.replace(**kw))


@pytest.fixture(scope="module")
def curve():
    return A.continue_folds(64)


def test_bistable_plateau_between_the_folds():
    # the fixed-point root finder (sign changes of F) sees three fixed points at beta = 1.15 ...
    fps = fps_at(p_ref=0.3, kl_coef=1.15, group_size=64)
    assert [round(f.p, 3) for f in fps] == [0.759, 0.956, 0.996]
    assert [f.stable for f in fps] == [True, False, True]
    # ... and the atlas's folds bracket that beta; outside the bracket there is one
    lo, hi = A.folds_at(0.3, 64)
    assert lo["kl_coef"] < 1.15 < hi["kl_coef"]
    for beta in (lo["kl_coef"] - 1e-3, hi["kl_coef"] + 1e-3):
        assert len(fps_at(p_ref=0.3, kl_coef=beta, group_size=64)) == 1


def test_folds_pass_the_root_count_check(curve):
    for i in (0, curve.p_ref.size // 3, curve.p_ref.size - 1):
        f = {"group_size": 64, "p_ref": float(curve.p_ref[i]), "z": float(curve.z[i]),
             "kl_coef": float(curve.kl_coef[i])}
        res = A.check_fold(f)
        assert res["passed"], res
        assert sorted(res["root_counts_minus_plus"]) == [0, 2]


def test_fold_check_can_fail():
    lo = A.folds_at(0.3, 64)[0]
    wrong = {**lo, "kl_coef": lo["kl_coef"] + 1e-6}
    assert not A.check_fold(wrong)["passed"]


def test_cusp_matches_independent_solution_to_1e8(curve):
    c = curve.cusp
    res = A.check_cusp(c)
    assert res["passed"] and max(res["abs_diff"]["p_ref"], res["abs_diff"]["kl_coef"]) < 1e-8
    # the cusp ends the bistable range: two folds just below it, none just above
    assert len(A.folds_at(c["p_ref"] - 1e-3, 64)) == 2
    assert len(A.folds_at(c["p_ref"] + 1e-3, 64)) == 0
    assert c["p_ref"] == pytest.approx(curve.p_ref.max(), abs=1e-4)


def test_bistability_onset_in_group_size():
    rows = A.folds_in_group_size([29, 30])
    assert [len(r["folds"]) for r in rows] == [0, 2]


def test_codimension_two_points_are_where_flip_meets_complex():
    d = A.discrete_boundaries(momentum=0.8, refresh_interval=4)
    assert d["codim2_k"] and d["codim2_mu"]
    for pt in d["codim2_k"]:
        f, c, _ = refresh_thresholds(0.8, pt["refresh_interval"])
        assert float(f) == pytest.approx(float(c), rel=1e-9)
    for pt in d["codim2_mu"]:
        f, c, _ = refresh_thresholds(pt["momentum"], 4.0)
        assert float(f) == pytest.approx(float(c), rel=1e-9)
        # on either side the binding boundary differs
        fl, cl, _ = refresh_thresholds(pt["momentum"] - 0.01, 4.0)
        fr, cr, _ = refresh_thresholds(pt["momentum"] + 0.01, 4.0)
        assert (fl < cl) != (fr < cr)
