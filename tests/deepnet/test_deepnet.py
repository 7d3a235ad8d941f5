"""Tests of grpo_theory.deepnet: each compares against an independent reference."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
torch.set_num_threads(1)

from grpo_theory.deepnet import bandit  # noqa: E402
from grpo_theory.deepnet.analysis import ar_multiplier  # noqa: E402
from grpo_theory.deepnet.experiments import (auto_eta_K, critical_momentum,  # noqa: E402
                                             momentum_transition, observed_mu_c, refresh_sweep,
                                             run_deepnet, setup_plateau)
from grpo_theory.deepnet.grpo import (VARIANTS, NetObjective, Optimizer,  # noqa: E402
                                      OptimizerConfig, grpo_loss, grpo_step, run_ensemble,
                                      sample_batch)
from grpo_theory.deepnet.policy import Policy, TaskSpec  # noqa: E402
from grpo_theory.deepnet.stiffness import linear_response  # noqa: E402
from grpo_theory.model import GRPOModel  # noqa: E402
from grpo_theory.theory.derived import get  # noqa: E402
from grpo_theory.theory.discrete import max_stable_refresh_interval, published_k_max  # noqa: E402
from grpo_theory.validate import ParameterError  # noqa: E402

pytestmark = pytest.mark.xdist_group("deepnet")   # its module fixture is built on one worker

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def plateau():
    return setup_plateau("dr-grpo-k1", p_star=0.7)


# ----------------------------------------------------------------------------------
# the bandit enumeration vs the project's theory and the closed form it should equal
# ----------------------------------------------------------------------------------

def test_enumeration_matches_theory_drift_without_kl():
    """With beta -> 0 the enumerated mean update equals the theory's F (mean, no KL, stale)."""
    from grpo_theory.theory.drift import drift
    for p in (0.2, 0.5, 0.8):
        z = math.log(p / (1 - p))
        mean, _ = bandit.bandit_k1_reward_moments(z, z, 0.0, 8, 0.0)
        F = float(drift(GRPOModel(normalization="mean", kl="none", kl_coef=0.0, group_size=8,
                                  p_ref=0.3), z))
        assert mean == pytest.approx(F, rel=1e-10)


@pytest.mark.parametrize("G,beta,flip", [(8, 0.5, 0.0), (4, 1.0, 0.1), (16, 0.2, 0.05)])
def test_k1_reward_stiffness_enumeration(G, beta, flip):
    """Numerical derivative of the enumerated update = kappa (1 - 1/G) beta p q; all stale."""
    b = bandit.bandit_stiffness_k1_reward(0.7, G, beta, flip)
    assert b["stiffness_fresh"] == 0.0 and b["fresh_fraction"] == 0.0
    assert b["stiffness"] == pytest.approx(2 * (1 - 1 / G) * beta * 0.21, rel=1e-6)
    # the fixed point is at z_ref + (1 - 2 flip)/beta
    assert b["z"] - b["z_ref"] == pytest.approx((1 - 2 * flip) / beta, rel=1e-9)
    assert (b["noise_variance"] > 1e-20) == (flip > 0)  # rounding-level zero without flips


@pytest.mark.parametrize("G,beta", [(4, 1.0), (8, 0.5), (16, 0.2)])
def test_enumeration_matches_theory_k1_reward(G, beta):
    """The enumerated update (independent of the theory) reproduces the theory's k1-in-reward
    stiffness, split, fixed point and update variance at an exact verifier."""
    th_b = bandit.bandit_stiffness_k1_reward(0.7, G, beta, 0.0)
    assert th_b["source"].startswith("theory")
    zr, zs = th_b["z_ref"], th_b["z"]
    F = lambda z, zo: bandit.bandit_k1_reward_moments(z, zo, zr, G, beta)[0]  # noqa: E731
    h = 1e-4
    assert F(zs, zs) == pytest.approx(0.0, abs=1e-12)
    assert -(F(zs, zs + h) - F(zs, zs - h)) / (2 * h) == pytest.approx(th_b["stiffness_stale"], rel=1e-7)
    assert abs(F(zs + h, zs) - F(zs - h, zs)) < 1e-12 and th_b["stiffness_fresh"] == 0.0
    var = bandit.bandit_k1_reward_moments(zs, zs, zr, G, beta)[1]
    assert var == pytest.approx(th_b["noise_variance"], rel=1e-9, abs=1e-15)


# ----------------------------------------------------------------------------------
# the GRPO step: finite differences, per-run loop vs batch, theory at k = 1
# ----------------------------------------------------------------------------------

def _small_policy(dtype=torch.float64):
    return Policy(TaskSpec(prompts=6, embed_dim=3, hidden=4, seed=1), 0.4, -1.0, dtype=dtype)


@pytest.mark.parametrize("name", ["dr-grpo-k1", "trl-default"])
def test_loss_gradient_finite_difference(name):
    pol = _small_policy()
    cfg = NetObjective(VARIANTS[name])
    gen = torch.Generator().manual_seed(0)
    params = pol.replicate(1)
    with torch.no_grad():  # move off theta_0 so the ratio, clip and k3 terms are not trivial
        for p in params:
            p.add_(0.05 * torch.randn(p.shape, generator=gen, dtype=p.dtype))
        logp_old = pol.log_probs(pol.replicate(1))
    u = torch.rand((1, 6, cfg.group_size), generator=gen, dtype=torch.float64)
    batch = sample_batch(pol, logp_old, cfg, u)
    for p in params:
        p.requires_grad_(True)
    loss = grpo_loss(pol.log_probs(params), batch, cfg).sum()
    grads = torch.autograd.grad(loss, params)
    h = 1e-6
    with torch.no_grad():
        for p, g in zip(params, grads):
            flat, gflat = p.view(-1), g.reshape(-1)
            for i in range(0, flat.numel(), max(1, flat.numel() // 5)):
                old = float(flat[i])
                flat[i] = old + h
                lp = float(grpo_loss(pol.log_probs(params), batch, cfg).sum())
                flat[i] = old - h
                lm = float(grpo_loss(pol.log_probs(params), batch, cfg).sum())
                flat[i] = old
                assert (lp - lm) / (2 * h) == pytest.approx(float(gflat[i]), abs=1e-7, rel=1e-5)


@pytest.mark.parametrize("opt_name,mu", [("sgd", 0.5), ("adam", 0.9)])
def test_batched_step_equals_per_run_loop(opt_name, mu):
    pol = Policy(TaskSpec(prompts=8, embed_dim=4, hidden=8, seed=2), 0.8, -1.0,
                 dtype=torch.float32)
    cfg = NetObjective(VARIANTS["dr-grpo-k1"], flip_probability=0.1)
    ocfg = OptimizerConfig(opt_name, 0.05, mu if opt_name == "sgd" else 0.0,
                           betas=(mu, 0.999))
    R, G, steps, k = 3, cfg.group_size, 6, 2
    gen = torch.Generator().manual_seed(5)
    us = [(torch.rand((R, 8, G), generator=gen), torch.rand((R, 8, G), generator=gen))
          for _ in range(steps)]
    kick = [0.1 * torch.randn(p.shape, generator=gen) for p in pol.params0]

    def run(idx):
        params = pol.replicate(len(idx))
        with torch.no_grad():
            for p, d in zip(params, kick):
                scale = torch.tensor([float(i + 1) for i in idx]).reshape((-1,) + (1,) * d.dim())
                p.add_(scale * d)
        opt = Optimizer(ocfg, params)
        for t in range(steps):
            if t % k == 0:
                with torch.no_grad():
                    logp_old = pol.log_probs(params)
            grpo_step(pol, params, opt, cfg, None, logp_old, us[t][0][idx], us[t][1][idx])
        return params

    batched = run(list(range(R)))
    for r in range(R):
        single = run([r])
        for pb, ps in zip(batched, single):
            assert torch.allclose(pb[r], ps[0], atol=1e-5, rtol=1e-5)


def test_plateau_is_a_fixed_point_and_noise_free(plateau):
    """At theta_0 the deterministic-verifier update is exactly zero (shaped reward constant)."""
    rec = run_ensemble(plateau.policy, plateau.cfg, OptimizerConfig("sgd", 0.5), steps=5, runs=4,
                       observe=plateau.mode.eigenvector)
    assert np.max(np.abs(rec.x)) < 1e-4
    assert np.allclose(rec.reward, 0.7, atol=1e-4)


# ----------------------------------------------------------------------------------
# stiffness two ways; threshold; transition; control
# ----------------------------------------------------------------------------------

def test_ntk_stiffness_matches_linear_response(plateau):
    K_ntk = plateau.network_stiffness()
    K, se, c, _ = linear_response(plateau.policy, plateau.cfg, plateau.mode,
                                  learning_rate=0.05 / K_ntk, steps=40, pairs=16, seed=1)
    assert abs(K / K_ntk - 1) < 0.05
    assert abs(K - K_ntk) < 4 * se + 0.01 * K_ntk


def test_ntk_stiffness_reuse_lag_same_expectation(plateau):
    """With one batch reused (k = 1 here is the same as fresh) the response still matches."""
    K_ntk = plateau.network_stiffness()
    K, se, _, _ = linear_response(plateau.policy, plateau.cfg, plateau.mode,
                                  learning_rate=0.05 / K_ntk, steps=30, pairs=8, seed=2,
                                  reuse="batch")
    assert abs(K / K_ntk - 1) < 0.05


@pytest.mark.parametrize("mu", [0.0, 0.5])
def test_refresh_threshold(plateau, mu):
    """k_max - 1 stable and k_max + 1 unstable, multipliers within 0.03 of the exact theory."""
    K = plateau.network_stiffness()
    a = auto_eta_K(mu)
    eta = a / K
    k_max = max_stable_refresh_interval(eta, mu, K)
    assert k_max == 10
    assert published_k_max(mu, eta, K) < k_max       # the published rule is too strict
    rows, _, _ = refresh_sweep(plateau, OptimizerConfig("sgd", eta, mu), [k_max - 1, k_max + 1],
                               K=K, phi=0.0, lr_eff=eta, mu_eff=mu, pairs=12, windows=8,
                               seed=3)
    lo, hi = rows
    assert lo.stable_observed and lo.stable_predicted
    assert (not hi.stable_observed) and (not hi.stable_predicted)
    for r in rows:
        assert abs(r.multiplier - r.predicted) < 0.03
        assert abs(r.multiplier - 1) > 2 * r.se          # the verdicts are significant


def test_lag_reuse_threshold(plateau):
    """Batch reuse has the same window map (expectation) and crosses at the same k."""
    K = plateau.network_stiffness()
    eta = auto_eta_K(0.0) / K
    rows, _, _ = refresh_sweep(plateau, OptimizerConfig("sgd", eta, 0.0), [9, 11], K=K, phi=0.0,
                               lr_eff=eta, mu_eff=0.0, pairs=16, windows=8, seed=4, reuse="batch")
    assert rows[0].stable_observed and not rows[1].stable_observed
    # the reused batch correlates the noise within a window: wider SE, same expectation
    assert all(abs(r.multiplier - r.predicted) < 3 * r.se + 0.01 for r in rows)


def test_momentum_transition(plateau):
    """Overdamped at mu_c - 0.05, oscillatory at mu_c + 0.05 (exact discrete mu_c, not L3)."""
    mu_c = critical_momentum(0.05)
    assert mu_c == pytest.approx((1 - math.sqrt(0.05)) ** 2, abs=1e-9)  # k = 1 heavy ball
    rows, _, _ = momentum_transition(plateau, plateau.network_stiffness(),
                                     [mu_c - 0.05, mu_c + 0.05], eta_K=0.05, pairs=12, seed=9)
    below, above = rows
    assert below.discriminant > 2 * below.discriminant_se and not below.oscillatory_observed
    assert above.discriminant < -2 * above.discriminant_se and above.oscillatory_observed
    assert below.overshoot < 1e-3
    assert above.overshoot == pytest.approx(above.overshoot_predicted, abs=2e-3)
    mu_obs = observed_mu_c(rows)
    assert abs(mu_obs - mu_c) < 0.05
    # the continuous L3 value with the lag of k = 1, (k - 1)/2 = 0, lies just below the exact one
    # (the difference is second order in eta K: 0.0028 at eta K = 0.05)
    mu_l3 = float(get("oscillator.critical_momentum").numeric(0.05, 1.0, 0.0))
    assert 0.001 < mu_c - mu_l3 < 0.005


def test_negative_control_has_no_threshold():
    """TRL default objective: the theory predicts no refresh threshold; none at k = 16."""
    plat = setup_plateau("trl-default")
    K = plat.network_stiffness()
    assert plat.phi > 1                                  # k3 in the loss: the fresh part dominates
    eta = auto_eta_K(0.0) / K
    assert math.isinf(max_stable_refresh_interval(eta, 0.0, K, fresh_fraction=plat.phi))
    assert published_k_max(0.0, eta, K) == 5          # the published rule predicts one
    rows, _, _ = refresh_sweep(plat, OptimizerConfig("sgd", eta, 0.0), [16], K=K, phi=plat.phi,
                               lr_eff=eta, mu_eff=0.0, pairs=8, windows=6, seed=5)
    (r,) = rows
    assert r.stable_observed and r.stable_predicted and r.multiplier < 0.8
    assert abs(r.multiplier - r.predicted) < 0.05


# ----------------------------------------------------------------------------------
# estimators, result object, CLI module, validation
# ----------------------------------------------------------------------------------

def test_ar2_estimator_recovers_known_process():
    rng = np.random.default_rng(0)
    c1, c2 = 1.2, -0.8                                     # complex roots, radius sqrt(0.8)
    x = np.zeros((30, 20))
    x[0], x[1] = 1.0, 1.0
    for t in range(2, 30):
        x[t] = c1 * x[t - 1] + c2 * x[t - 2] + 0.01 * rng.standard_normal(20)
    est = ar_multiplier(x, 2)
    assert abs(est["multiplier"] - math.sqrt(0.8)) < 4 * est["se"] + 1e-3
    assert est["discriminant"] < 0


def test_validation_errors():
    with pytest.raises(ParameterError):
        GRPOModel(kl="k2")
    with pytest.raises(ParameterError, match="kl"):
        NetObjective(GRPOModel(kl="exact"))        # a sampled step has no exact KL
    with pytest.raises(ParameterError, match="group_size"):
        NetObjective(GRPOModel(group_size="inf"))
    with pytest.raises(ParameterError):
        OptimizerConfig("rmsprop")
    with pytest.raises(ParameterError):
        run_deepnet(variant="nope")
    with pytest.raises(ParameterError):
        run_deepnet(optimizer="adam", flip_probability=0.0)


def test_cli_quick_json(tmp_path, capsys):
    from grpo_theory.cli import main

    code = main(["deepnet", "--quick", "--refresh-intervals", "9", "11", "--no-transition",
                 "--json", "--out", str(tmp_path)])
    d = json.loads(capsys.readouterr().out)
    for key in ("stiffness_ntk", "stiffness_response", "k_max_predicted", "k_max_published",
                "k_max_observed", "per_k", "mu_c_predicted", "mu_c_observed"):
        assert key in d
    assert d["k_max_predicted"] == 10 and d["k_max_published"] == 5
    assert set(d["per_k"][0]) >= {"k", "multiplier", "se", "predicted", "stable_observed",
                                  "stable_predicted"}
    assert code == 0 and d["exit_code"] == 0
    assert (tmp_path / "result.json").exists()


def test_import_without_torch_and_message():
    code = ("import sys\n"
            "class Block:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name == 'torch' or name.startswith('torch.'):\n"
            "            raise ImportError('blocked')\n"
            "sys.meta_path.insert(0, Block())\n"
            "import grpo_theory, grpo_theory.deepnet as d\n"
            "assert 'torch' not in sys.modules\n"
            "from grpo_theory.validate import ParameterError\n"
            "try:\n    d.run_deepnet(quick=True)\nexcept ParameterError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ("deepnet needs PyTorch: pip install 'grpo-theory[deepnet]' "
                                  "(torch 2.13.0, the CPU build)")
