"""Criticality of the L1 window map on its flip and Neimark-Sacker boundaries: the normal-form
coefficients against the map's own iterations and against high-precision derivatives."""

from __future__ import annotations

import dataclasses
import math

import mpmath
import numpy as np
import pytest

from grpo_theory.model import DEFAULT_MODEL, GRPOModel
from grpo_theory.theory import criticality as C
from grpo_theory.theory.atlas import discrete_boundaries
from grpo_theory.theory.discrete.refresh import monodromy, spectral_radius
from grpo_theory.validate import ParameterError

#: KL in the reward: all stiffness acts through the sampling policy (K_f = 0), so the linear
#: part of its window map is exactly the stale L2 map of the atlas
K1 = GRPOModel(normalization="mean", kl="k1_reward", kl_coef=0.5, group_size=8)
#: std normalization with the exact KL, G = 4: a fresh KL force (K_f / K = 0.63)
EXACT4 = GRPOModel(normalization="std", kl="exact", kl_coef=1.0, group_size=4, adv_eps=0.0)


@pytest.fixture(scope="module")
def ns():
    wm = C.window_map(K1, momentum=0.8, refresh_interval=4)
    return wm, C.boundary_point(wm)


def test_linear_part_is_the_L2_monodromy(ns):
    wm, pt = ns
    assert wm.stiffness_fresh == 0.0 and wm.stiffness_stale > 0
    X, V = wm.jets(pt.learning_rate)
    M = monodromy(pt.learning_rate, 0.8, 4, wm.stiffness)            # closed form, K_f = 0
    np.testing.assert_allclose(C._linear(X, V), M, rtol=1e-12, atol=1e-14)
    assert spectral_radius(pt.learning_rate, 0.8, 4, wm.stiffness) == pytest.approx(1, abs=1e-9)
    wm4 = C.window_map(EXACT4, momentum=0.8, refresh_interval=3)    # with a fresh force
    eta = 0.3 / wm4.stiffness
    np.testing.assert_allclose(C._linear(*wm4.jets(eta)),
                               monodromy(eta, 0.8, 3, wm4.stiffness, wm4.fresh_fraction),
                               rtol=1e-11, atol=1e-13)


def test_jets_agree_with_high_precision_derivatives_of_the_composed_map():
    """The quadratic and cubic Taylor coefficients of one window, from the jets (propagated
    from F's partial derivatives at the fixed point) and from mpmath differentiation of the
    whole window map composed at 30 digits (never using the jets)."""
    wm = C.window_map(EXACT4, momentum=0.8, refresh_interval=3)
    eta = 0.3 / wm.stiffness
    X, V = wm.jets(eta)
    Fm, _ = C._drift_functions("std", "exact", "stale", 4)
    with mpmath.workdps(30):
        zs = mpmath.findroot(lambda z: Fm(z, z, 0.3, 2, 1.0, 0), wm.z_star)

        def window(x, v, which):
            z0 = zs + x
            z = z0
            for _ in range(3):
                v = 0.8 * v + eta * Fm(z, z0, 0.3, 2, 1.0, 0)
                z = z + v
            return (z - zs) if which == 0 else v

        for which, jet in ((0, X), (1, V)):
            for i, j in ((2, 0), (1, 1), (0, 2), (3, 0), (2, 1), (1, 2), (0, 3)):
                d = float(mpmath.diff(lambda x, v: window(x, v, which), (0, 0), (i, j)))
                taylor = jet[i, j] * math.factorial(i) * math.factorial(j)
                assert taylor == pytest.approx(d, rel=1e-9, abs=1e-12), (which, i, j)


def test_neimark_sacker_on_the_atlas_map_is_supercritical(ns):
    wm, pt = ns
    assert pt.kind == "neimark-sacker" and 0 < pt.theta < math.pi and pt.resonance is None
    assert pt.coefficient < 0 and pt.criticality == "supercritical"
    m = C.measure_coefficient(wm, pt)
    assert m["relative_error"] < 1e-3, m
    amp = C.check_amplitude(wm, pt, offsets=(0.04, 0.02, 0.01), settle=15.0, measure=300)
    assert amp["passed"], amp
    assert amp["slope"] == pytest.approx(0.5, abs=0.03)


def test_flip_on_the_atlas_map_is_supercritical():
    wm = C.window_map(K1, momentum=0.5, refresh_interval=4)
    pt = C.boundary_point(wm)
    assert pt.kind == "flip" and pt.coefficient > 0
    assert C.measure_coefficient(wm, pt)["relative_error"] < 1e-2
    assert C.check_amplitude(wm, pt, offsets=(0.02, 0.01, 0.005))["passed"]


def test_subcritical_boundaries_are_measured_subcritical():
    wm = C.window_map(EXACT4, momentum=0.5, refresh_interval=6)      # Neimark-Sacker, d > 0
    pt = C.boundary_point(wm)
    assert pt.kind == "neimark-sacker" and pt.criticality == "subcritical"
    m = C.measure_coefficient(wm, pt)
    assert m["measured"] > 0 and m["relative_error"] < 0.02, m
    with pytest.raises(ParameterError, match="supercritical"):
        C.check_amplitude(wm, pt)
    wm = C.window_map(EXACT4, momentum=0.3, refresh_interval=21)     # flip, c < 0
    pt = C.boundary_point(wm)
    assert pt.kind == "flip" and pt.criticality == "subcritical"
    m = C.measure_coefficient(wm, pt)
    assert m["measured"] < 0 and m["relative_error"] < 0.02, m


def test_a_wrong_cubic_term_is_caught(ns):
    """The measurement uses the map, not its Taylor coefficients: change F's third and
    second z_old derivatives in the prediction and the two disagree."""
    wm, _ = ns
    f = [list(r) for r in wm.partials]
    f[0][3] *= 1.5
    f[0][2] *= 0.5
    bad = dataclasses.replace(wm, partials=tuple(tuple(r) for r in f))
    pt = C.boundary_point(bad)
    assert C.measure_coefficient(wm, pt)["relative_error"] > 0.1


def test_codimension_two_points_are_one_to_two_resonances():

    b = discrete_boundaries(points=60)
    for mu, k in [(0.8, c["refresh_interval"]) for c in b["codim2_k"]] + \
                 [(c["momentum"], 4.0) for c in b["codim2_mu"]]:
        r = C.one_to_two_resonance(mu, k)
        assert r["eta_K_flip"] == pytest.approx(r["eta_K_complex"], rel=1e-9)
        np.testing.assert_allclose(r["eigenvalues"], [-1, -1], atol=1e-6)
        assert r["norm_M_plus_I"] > 0.1                # a Jordan block, not M = -I


def test_a_multiplier_at_plus_one_is_refused_with_its_reason():
    wm = C.window_map(DEFAULT_MODEL, momentum=0.5, refresh_interval=2)
    assert wm.fresh_fraction > 1
    with pytest.raises(ParameterError, match=r"crosses \+1: at eta K_f = 2\(1 \+ mu\) = 3"):
        C.boundary_point(wm)


def test_scan_reports_kind_criticality_and_measurement():
    r = C.criticality(K1, momenta=(0.8,), refresh_intervals=(2, 3))
    assert r.passed and r.exit_code == 0
    assert [(row["kind"], row["criticality"]) for row in r.rows] == \
        [("neimark-sacker", "supercritical")] * 2
    d = r.to_dict()
    assert d["rows"][0]["measured"] == pytest.approx(d["rows"][0]["coefficient"], rel=2e-2)
    assert "supercritical" in str(r)
    r = C.criticality(DEFAULT_MODEL, momenta=(0.5,), refresh_intervals=(2,))
    assert r.rows[0]["kind"] is None and "+1" in r.rows[0]["reason"]
    assert not r.passed                               # nothing measured is not a pass
