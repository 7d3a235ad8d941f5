"""Fixed points, stiffness, bifurcations and the Mroueh comparison."""

import json
import math
import numpy as np

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grpo_theory.cli.main import main
from grpo_theory.model import GRPOModel
from grpo_theory.theory import fixed_points as FP
from grpo_theory.theory.derived import get
from grpo_theory.theory.drift import drift


def M(**kw):
    """The model of these tests: std, exact KL beta = 0.05, no advantage epsilon, G = 8."""
    return GRPOModel(**{**dict(p_ref=0.3, kl_coef=0.05, normalization="std", kl="exact",
                               adv_eps=0.0, group_size=8), **kw})


@pytest.mark.parametrize("name", ["fixed_points.mean_exact_location", "fixed_points.mean_exact_stiffness",
                                  "fixed_points.std_exact_condition", "fixed_points.mroueh_map",
                                  "fixed_points.mroueh_agreement", "fixed_points.stiffness_reward_invariance"])
def test_derivations_verified(name):
    assert get(name).verified


def test_mean_exact_closed_form_location_and_stiffness():
    p_ref, beta, G = 0.3, 0.5, 8
    (fp,) = FP.fixed_points(M(p_ref=p_ref, kl_coef=beta, normalization="mean", kl="exact", group_size=G))
    z_star = get("fixed_points.mean_exact_location").numeric(math.log(p_ref / (1 - p_ref)), G, beta)
    assert fp.z == pytest.approx(z_star, abs=1e-11)
    K = get("fixed_points.mean_exact_stiffness").numeric(fp.p, 1 - fp.p, 2.0, beta)
    assert fp.stiffness == pytest.approx(K, rel=1e-9)
    # and independently: finite difference of the drift
    h = 1e-6
    m = M(normalization="mean", kl="exact", group_size=G, kl_coef=beta, p_ref=p_ref)
    fd = -(drift(m, fp.z + h) - drift(m, fp.z - h)) / (2 * h)
    assert fp.stiffness == pytest.approx(fd, rel=1e-6)


@settings(max_examples=25, deadline=None)
@given(p_ref=st.floats(0.05, 0.9), beta=st.floats(0.05, 3.0), norm=st.sampled_from(["std", "mean"]),
       kl=st.sampled_from(["exact", "k3"]), G=st.sampled_from([2, 4, 8, 16, None]))
def test_fixed_points_are_zeros_of_the_drift(p_ref, beta, norm, kl, G):
    kw = dict(p_ref=p_ref, kl_coef=beta, normalization=norm, kl=kl, group_size=G)
    fps = FP.fixed_points(M(**kw))
    for fp in fps:
        assert abs(drift(M(**kw), fp.z)) < 1e-10
        assert fp.z > math.log(p_ref / (1 - p_ref))  # amplification: always above the reference
        assert fp.stable == (fp.stiffness > 0)
    # stability alternates along z for simple roots
    assert all(a.stable != b.stable for a, b in zip(fps, fps[1:]))


def test_no_kl_has_no_fixed_point_and_k3_always_has_one():
    assert FP.fixed_points(M(p_ref=0.3, kl_coef=0.0, kl="none")) == []
    for beta in (0.01, 0.1, 1.0):
        assert any(fp.stable for fp in FP.fixed_points(M(p_ref=0.3, kl_coef=beta, kl="k3", group_size=None)))


def test_saddle_node_bifurcation_counts_fixed_points():
    bifs = FP.bifurcations(M(p_ref=0.3, normalization="std", kl="exact", group_size=None))
    assert len(bifs) == 1
    beta_c = bifs[0]["kl_coef"]
    below = FP.fixed_points(M(p_ref=0.3, kl_coef=beta_c * 0.98, group_size=None))
    above = FP.fixed_points(M(p_ref=0.3, kl_coef=beta_c * 1.02, group_size=None))
    assert len(below) == 0 and len(above) == 2
    # independent check: at beta_c the fixed-point equation z - z_ref = 2 cosh(z/2)/beta is tangent
    z_ref = math.log(0.3 / 0.7)
    g = lambda z: (z - z_ref) * beta_c - 2 * math.cosh(z / 2)  # noqa: E731
    zc = bifs[0]["z"]
    assert abs(g(zc)) < 1e-8 and abs(beta_c - math.sinh(zc / 2)) < 1e-7
    # with epsilon > 0 a second bifurcation appears (three fixed points in between)
    two = FP.bifurcations(M(p_ref=0.3, group_size=None, adv_eps=0.01))
    assert len(two) == 2
    mid = 0.5 * (two[0]["kl_coef"] + two[1]["kl_coef"])
    assert len(FP.fixed_points(M(p_ref=0.3, kl_coef=mid, group_size=None, adv_eps=0.01))) == 3


@pytest.mark.parametrize("norm, beta_flat", [("std", 2.474867), ("mean", 0.875)])
def test_no_spurious_folds_where_the_level_set_is_flat(norm, beta_flat, capsys):
    """p_ref = 1e-50 (issue 29): the level set B is flat to rounding over tens of logits
    (its asymptote), B' changes sign in the noise, and 12 (std) / 33 (mean) identical
    "bifurcations" at that flat value were printed.  No fixed point is born or lost there:
    the count on either side of the flat value is the same."""
    import warnings

    model = GRPOModel(p_ref=1e-50, normalization=norm, kl="k3", kl_coef=0.1, group_size=8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")                   # no RuntimeWarning leaks either
        assert FP.bifurcations(model) == []
        below = FP.fixed_points(model.replace(kl_coef=beta_flat * 0.99))
        above = FP.fixed_points(model.replace(kl_coef=beta_flat * 1.01))
    assert len(below) == len(above)
    assert main(["fixed-points", "--p-ref", "1e-50", "--normalization", norm]) == 0
    assert "bifurcation" not in capsys.readouterr().out


def test_bifurcation_in_adv_eps_is_where_beta_c_crosses_beta():
    (b,) = FP.bifurcations_in_adv_eps(M(p_ref=0.3, kl_coef=2.0, group_size=None))
    assert (b["count_below"], b["count_above"], b["kind"]) == (3, 1, "death")
    eps_c = b["adv_eps"]
    # independently: just below eps_c there are three roots, just above one
    assert len(FP.fixed_points(M(p_ref=0.3, kl_coef=2.0, group_size=None, adv_eps=eps_c * 0.99))) == 3
    assert len(FP.fixed_points(M(p_ref=0.3, kl_coef=2.0, group_size=None, adv_eps=eps_c * 1.01))) == 1
    # and at eps_c the fixed-point equation h(z) = (z - z_ref)(sqrt(pq) + eps) = 1/beta has a
    # double root: h rises, peaks, dips and rises again; h grows with eps, so the two upper roots
    # merge and vanish where the local MINIMUM of h reaches 1/beta = 0.5
    import numpy as np

    z_ref = math.log(0.3 / 0.7)
    z = z_ref + np.linspace(1e-3, 40, 400_001)
    h = (z - z_ref) * (np.sqrt(1 / (2 + 2 * np.cosh(z))) + eps_c)
    i = np.nonzero((h[1:-1] < h[:-2]) & (h[1:-1] < h[2:]))[0]
    assert len(i) == 1 and h[i[0] + 1] == pytest.approx(0.5, rel=1e-6)


def test_mroueh_matches_std_exact_large_G_only():
    rows = FP.compare_with_mroueh(M(p_ref=0.3, kl_coef=2.0, group_size=8))
    by = {(r["variant"], r["group_size"]): r for r in rows}
    assert abs(by[("std+exact", "inf")]["difference"]) < 1e-9
    for key, r in by.items():
        if key != ("std+exact", "inf") and r["difference"] is not None:
            assert abs(r["difference"]) > 1e-3
    # independently iterate Mroueh's recurrence from p_ref: it converges to the same point
    p = 0.3
    for _ in range(2000):
        p = float(FP.mroueh_map(M(kl_coef=2.0), p))
    assert p == pytest.approx(by[("std+exact", "inf")]["mroueh_p_star"], abs=1e-9)


def test_cli_fixed_points_json_and_errors(capsys):
    assert main(["fixed-points", "--p-ref", "0.3", "--kl-coef", "0.5", "--normalization", "mean",
                 "--kl", "exact", "--group-size", "8", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    (fp,) = out["fixed_points"]
    assert set(fp) >= {"p", "z", "stable", "stiffness"} and fp["stable"] is True
    assert fp["z"] == pytest.approx(math.log(0.3 / 0.7) + (1 - 1 / 8) / 0.5, abs=1e-10)
    assert main(["fixed-points", "--group-size", "inf", "--kl", "exact", "--adv-eps", "0",
                 "--kl-coef", "0.5", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["fixed_points"] == [] and out["escapes_to_one"] is True
    assert main(["fixed-points", "--group-size", "inf", "--kl", "exact", "--adv-eps", "0",
                 "--kl-coef", "2", "--eps-bifurcations", "--json"]) == 0
    (eb,) = json.loads(capsys.readouterr().out)["adv_eps_bifurcations"]
    assert eb["kind"] == "death" and 0.03 < eb["adv_eps"] < 0.05
    for bad, name in ((["--group-size", "1"], "group_size"), (["--p-ref", "0"], "p_ref"),
                      (["--kl", "bogus"], "kl")):
        assert main(["fixed-points", *bad]) == 2
        err = capsys.readouterr().err.strip()
        assert name in err and len(err.splitlines()) == 1


def test_fixed_point_beyond_the_old_search_window():
    # issue 9: the window z_ref + [-30, 60] missed z* = 77.9 (1 - p* ~ 1e-34)
    fps = FP.fixed_points(M(p_ref=0.3, kl_coef=0.1, normalization="std", kl="exact", group_size=64))
    assert len(fps) == 1 and fps[0].stable
    assert fps[0].z == pytest.approx(77.9, abs=0.05)
    # independent: the drift changes sign across z* (F > 0 below, < 0 above)
    kw = dict(p_ref=0.3, kl_coef=0.1, normalization="std", kl="exact", group_size=64)
    assert drift(M(**kw), fps[0].z - 0.5) > 0 > drift(M(**kw), fps[0].z + 0.5)


def test_upper_bound_holds_on_the_drift():
    for kw in (dict(kl="exact", kl_coef=0.1, group_size=64), dict(kl="exact", kl_coef=1.0, group_size=8),
               dict(kl="k3", kl_coef=0.1, group_size=8), dict(kl="exact", kl_coef=0.5, group_size=8,
                                                              normalization="mean")):
        full = M(**kw)
        bound = FP._upper_bound(full)
        z_ref = math.log(0.3 / 0.7)
        zs = z_ref + bound + np.array([0.0, 1.0, 10.0])
        zs = zs[zs < 690]
        assert np.all(drift(full, zs) < 0)


def test_cli_reports_bistability_and_tiny_failure_probability(capsys):
    assert main(["fixed-points", "--p-ref", "0.3", "--kl-coef", "1.15", "--kl", "exact",
                 "--adv-eps", "0", "--group-size", "64", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["bistable"] and "bistable" in out["summary"]
    ps = [fp["p"] for fp in out["fixed_points"]]
    assert ps == pytest.approx([0.759, 0.956, 0.996], abs=1e-3)
    assert main(["fixed-points", "--p-ref", "0.3", "--kl-coef", "0.05", "--kl", "exact",
                 "--adv-eps", "0", "--group-size", "8", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["fixed_points"][0]["failure_probability"] == pytest.approx(7e-22, rel=0.1)
    assert not out["escapes_to_one"]


def test_huge_group_answers_quickly_and_says_when_p_star_is_beyond_doubles(capsys):
    # issue 9: --group-size 100000 ran for minutes; z* ~ sqrt(G)/beta = 3162 > 700
    assert main(["fixed-points", "--p-ref", "0.3", "--kl-coef", "0.1", "--kl", "exact",
                 "--adv-eps", "0", "--group-size", "100000", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["fixed_points"] == [] and not out["escapes_to_one"]
    assert "beyond double precision" in out["summary"] and out["z_bound"] > 700
    # at beta = 10 the lowest fixed point is near the large-G condition
    # z - z_ref = 1/(beta sqrt(p q)) (independent closed form, Mroueh's at epsilon = 0)
    fps = FP.fixed_points(M(p_ref=0.3, kl_coef=10.0, normalization="std", kl="exact",
                          group_size=100000))
    p = fps[0].p
    assert fps[0].z - math.log(0.3 / 0.7) == pytest.approx(1 / (10 * math.sqrt(p * (1 - p))),
                                                           rel=2e-2)


def test_windowed_binomial_sum_equals_the_full_sum(monkeypatch):
    from grpo_theory.theory import drift as Dr
    z = np.linspace(-3, 8, 9)
    m = M(kl_coef=0.1, group_size=6000)
    windowed = Dr.drift_components(m, z)
    monkeypatch.setattr(Dr, "_FULL_SUM_MAX_G", 10**9)
    full = Dr.drift_components(m, z)
    for key in ("F", "dF_dz", "dF_dzold"):
        np.testing.assert_allclose(windowed[key], full[key], rtol=1e-13, atol=1e-300)


def test_an_exactly_zero_fresh_stiffness_prints_as_0_not_minus_0(capsys):
    """Issue 21 item 12: KL in the reward has K_fresh = 0 exactly, shown as `fresh -0`."""
    model = GRPOModel(p_ref=0.3, kl_coef=0.5, normalization="mean", kl="k1_reward")
    (fp,) = [f for f in FP.fixed_points(model) if f.stable]
    assert fp.stiffness_fresh == 0 and math.copysign(1.0, fp.stiffness_fresh) == 1.0
    assert main(["fixed-points", "--kl", "k1_reward", "--normalization", "mean", "--kl-coef", "0.5"]) == 0
    out = capsys.readouterr().out
    assert "(fresh 0," in out and "-0" not in out.replace("e-0", "")


def test_huge_kl_coef_prints_no_numpy_warning(capsys):
    """β = 1e308 overflows Mroueh's bracketing function to +inf; its sign is all the search uses,
    so the command answers without a RuntimeWarning on stderr."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        assert main(["fixed-points", "--kl-coef", "1e308"]) == 0
    assert capsys.readouterr().err == ""
