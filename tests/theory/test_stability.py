"""Stability at a variant's fixed point: the fresh/stale split, the published rule's safety,
the one L3 lag convention, and answers that are never a scan cap or a rounding artefact."""

import json
import math

import numpy as np
import pytest

from grpo_theory.cli.main import main
from grpo_theory.model import GRPOModel
from grpo_theory.theory import discrete as D
from grpo_theory.theory.derived import get
from grpo_theory.theory.noise import fluctuation
from grpo_theory.theory.stability import stability
from grpo_theory.validate import ParameterError

# std + exact KL, p_ref = 0.3, beta = 0.5, G = 8 (the audit's case of issue 9)
AUDIT = GRPOModel(p_ref=0.3, kl_coef=0.5, normalization="std", kl="exact", group_size=8,
                  surrogate="stale", adv_eps=0.0)


def stability_at(learning_rate, momentum, refresh_interval, model=AUDIT):
    return stability(model.replace(learning_rate=learning_rate, momentum=momentum,
                                   refresh_interval=refresh_interval))


def _brute_force_stable(a, mu, k, phi, windows=4000):
    """Iterate the per-step update v' = mu v - a(phi x + (1-phi) x_s), x' = x + v' directly
    (independent of the monodromy code), renormalising each window, and return whether the
    mean log growth per window over the second half is negative."""
    x, v = 1.0, 0.3
    growth = 0.0
    for w in range(windows):
        xs = x
        for _ in range(k):
            v = mu * v - a * (phi * x + (1 - phi) * xs)
            x = x + v
        norm = math.hypot(x, v)
        if w >= windows // 2:
            growth += math.log(norm)
        x, v = x / norm, v / norm
    return growth < 0


def test_split_at_the_exact_kl_fixed_point():
    rep = stability_at(1.0, 0.0, 1)
    fp = rep.fixed_point
    assert fp.stiffness_fresh == pytest.approx(-0.0658, abs=1e-4)
    assert fp.stiffness_stale == pytest.approx(0.0817, abs=1e-4)


@pytest.mark.parametrize("mu,k_exact,k_published", [(0.0, 54, 99), (0.5, 35, 49), (0.9, 5, 9)])
def test_published_rule_unsafe_with_negative_fresh_stiffness(mu, k_exact, k_published):
    fp = stability_at(1.0, mu, 1).fixed_point
    eta = 0.01 / fp.stiffness
    res = stability_at(eta, mu, k_exact + 1).exact
    assert res.max_stable_refresh_interval == k_exact
    assert res.max_stable_refresh_interval_continuous == k_published
    assert res.published_rule_safe is False and not res.stable
    # independent: iterate the linear update itself on both sides of the threshold
    phi = fp.fresh_fraction
    assert _brute_force_stable(0.01, mu, k_exact, phi)
    assert not _brute_force_stable(0.01, mu, k_exact + 1, phi)


def test_cli_takes_the_variant_and_reports_the_split(capsys):
    assert main(["stability", "--learning-rate", "0.6288", "--momentum", "0.5",
                 "--refresh-interval", "36", "--p-ref", "0.3", "--kl-coef", "0.5",
                 "--kl", "exact", "--group-size", "8", "--adv-eps", "0", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["stiffness_fresh"] == pytest.approx(-0.0658, abs=1e-4)
    assert out["fixed_point"]["stiffness_stale"] == pytest.approx(0.0817, abs=1e-4)
    assert out["stable_exact"] is False and out["published_rule_safe"] is False
    assert out["max_stable_refresh_interval_exact"] == 35


def test_stale_surrogate_accepts_a_fresh_fraction(capsys):
    assert main(["stability", "--learning-rate", "0.01", "--momentum", "0.5", "--stiffness", "1",
                 "--fresh-fraction", "-0.5", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["inputs"]["fresh_fraction"] == -0.5
    # a variant option is refused beside a given stiffness (the stiffness replaces the variant)
    assert main(["stability", "--stiffness", "1", "--surrogate", "ratio"]) == 2
    assert "surrogate must be omitted with --stiffness" in capsys.readouterr().err
    with pytest.raises(ParameterError, match="fresh_fraction"):
        stability(AUDIT, fresh_fraction=0.2)
    with pytest.raises(ParameterError, match="optimizer"):
        stability(AUDIT.replace(optimizer="adam"), stiffness=1.0)


def test_every_refresh_interval_stable_is_said_not_capped():
    # the default model (k3 KL): K_f > K, K_s < 0
    res = stability(GRPOModel(p_ref=0.3, kl_coef=0.1, normalization="std", kl="k3", group_size=8,
                              surrogate="stale", adv_eps=1e-6, learning_rate=0.5, momentum=0.5,
                              refresh_interval=2)).exact
    assert res.fresh_fraction > 1
    assert res.max_stable_refresh_interval == math.inf and res.stable_for_every_refresh_interval
    assert res.to_dict()["max_stable_refresh_interval"] is None
    phi = res.fresh_fraction
    a = 0.5 * res.stiffness
    for k in (1, 7, 100, 5000):
        assert _brute_force_stable(a, 0.5, k, phi, windows=200 if k > 99 else 2000)


def test_on_policy_l3_has_no_lag():
    # issue 9: lag = k made L3 say "damping -0.1, unstable" while the exact map is stable
    res = D.linear_stability(0.2, 0.9, 1, 1.0)
    assert res.lag_continuous == 0
    assert res.damping == pytest.approx(0.1) and res.regime_continuous == "oscillatory"
    assert res.stable and res.spectral_radius == pytest.approx(math.sqrt(0.9))


def test_effective_lag_is_the_mean_lag():
    assert get("discrete.refresh_effective_lag").numeric(9) == pytest.approx(4.0)
    assert D.continuous_lag("refresh", 1) == 0 and D.continuous_lag("delay", delay=3) == 3


def test_effective_lag_matches_the_exact_slow_eigenvalue_to_second_order():
    """Independent of the derivation: the exact slow eigenvalue (numpy) minus the L3 window
    factor exp(k s_slow) (quadratic formula) is O(a^3) with lag (k-1)/2 and O(a^2) with lag 0."""
    mu, k = 0.5, 6
    errs = {}
    for ell in (0.0, (k - 1) / 2):
        e = []
        for a in (1e-3, 2e-3):
            lam = max(np.linalg.eigvals(D.monodromy(a, mu, k, 1.0)).real)
            m, g = (1 + mu) / 2, 1 - mu - a * ell
            s = (-g + math.sqrt(g * g - 4 * m * a)) / (2 * m)
            e.append(abs(lam - math.exp(k * s)))
        errs[ell] = math.log2(e[1] / e[0])
    assert errs[0.0] == pytest.approx(2, abs=0.1)
    assert errs[(k - 1) / 2] == pytest.approx(3, abs=0.2)


def test_tiny_learning_rate_is_stable_not_rounded_to_unstable():
    res = D.linear_stability(1e-16, 0.5, 1, 1.0)
    assert res.stable and res.discrete_regime == "overdamped"


def test_tiny_eta_k_threshold_is_not_capped():
    k = D.max_stable_refresh_interval(1e-10, 0.0, 1.0)
    assert k == 2 * 10**10 - 1 or k == 2 * 10**10      # exact: eta K k < 2 at mu = 0


def test_momentum_close_to_one_is_not_echoed_as_one(capsys):
    assert main(["stability", "--learning-rate", "0.001", "--momentum", "0.9999999",
                 "--stiffness", "1"]) == 0
    assert "momentum=0.9999999," in capsys.readouterr().out


def test_stability_json_carries_the_fluctuation_of_the_model(capsys):
    """The CLI wires the exact-L2 fluctuation of the model (tested against Monte Carlo in
    tests/theory/test_reuse.py) for the given B and reuse mode; batch reuse raises it."""
    import json

    from grpo_theory.cli import main
    from grpo_theory.model import GRPOModel

    out = {}
    for reuse in ("fresh", "batch"):
        assert main(["stability", "--learning-rate", "0.5", "--momentum", "0.5",
                     "--refresh-interval", "4", "--kl", "exact", "--kl-coef", "2",
                     "--prompts", "16", "--reuse", reuse, "--json"]) == 0
        out[reuse] = json.loads(capsys.readouterr().out)
        model = GRPOModel(kl="exact", kl_coef=2.0, learning_rate=0.5, momentum=0.5,
                          refresh_interval=4, prompts=16, reuse=reuse)
        assert out[reuse]["stationary_variance_z"] == fluctuation(model).stationary_variance_z
    assert out["batch"]["stationary_variance_z"] > out["fresh"]["stationary_variance_z"] > 0


def test_stability_k1_reward_and_adam(capsys):
    import json

    from grpo_theory.cli import main

    assert main(["stability", "--learning-rate", "0.05", "--momentum", "0.5", "--refresh-interval",
                 "4", "--kl", "k1_reward", "--normalization", "mean", "--kl-coef", "0.5",
                 "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["stiffness_fresh"] == 0 and d["stationary_variance_z"] == 0.0
    assert d["stable_for_every_refresh_interval"] is False
    assert main(["stability", "--learning-rate", "1e-3", "--momentum", "0", "--refresh-interval",
                 "2", "--optimizer", "adam", "--adam-beta1", "0.8", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    # what the user gave, and separately the effective step of Adam's heavy-ball reduction
    assert d["inputs"]["learning_rate"] == 1e-3 and d["inputs"]["optimizer"] == "adam"
    assert d["adam"]["momentum"] == 0.8 and d["effective_step"]["momentum"] == 0.8
    assert d["effective_step"]["learning_rate"] == d["adam"]["effective_learning_rate"] != 1e-3
    assert main(["stability", "--learning-rate", "0.5", "--momentum", "0.5",
                 "--stiffness", "1", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["stationary_variance_z"] is None and "variant" in d["fluctuation_reason"]
