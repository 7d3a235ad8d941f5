"""Collapse risk: the first-passage quadrature against closed forms, n/a cases, and the CLI."""

import json
import math

import numpy as np
import pytest

from grpo_theory.cli.main import main as cli_main
from grpo_theory.model import GRPOModel
from grpo_theory.theory.collapse import collapse_risk, first_passage
from grpo_theory.theory.derived import get


def test_derivation_proven():
    d = get("collapse.mean_first_passage")
    assert d.verifications and all(v.passed and v.method == "sympy" for v in d.verifications)


def test_first_passage_pure_diffusion():
    # b = 0: tau(x) = x (L - x) / (2 D)
    L, D = 3.0, 0.2
    z = np.linspace(0.0, L, 20001)
    tau, _ = first_passage(z, np.zeros_like(z), np.full_like(z, D), 1.1)
    assert tau == pytest.approx(1.1 * (L - 1.1) / (2 * D), rel=1e-6)


@pytest.mark.parametrize("b", [0.05, -0.3, 2.0])
def test_first_passage_constant_drift(b):
    # constant drift b and diffusion D on (0, L), absorbing at both ends (solved by hand):
    # tau(x) = (L (1 - e^{-b x/D}) / (1 - e^{-b L/D}) - x) / b
    L, D, x = 2.0, 0.25, 0.7
    z = np.linspace(0.0, L, 40001)
    tau, _ = first_passage(z, np.full_like(z, b), np.full_like(z, D), x)
    exact = (L * -math.expm1(-b * x / D) / -math.expm1(-b * L / D) - x) / b
    assert tau == pytest.approx(exact, rel=1e-5)


def test_not_applicable_cases():
    # G = inf is the large-group limit (probability 0 at a stable plateau), not n/a: see below
    assert collapse_risk(GRPOModel(group_size=None), steps=10).probability == 0.0
    r = collapse_risk(GRPOModel(kl="none", kl_coef=0.0), steps=10)
    assert r.probability is None and r.exit_code == 1 and "fixed point" in r.reason
    r = collapse_risk(GRPOModel(kl="k1_reward", normalization="mean", kl_coef=0.5), steps=10)
    assert r.probability is None and "KL in the reward" in r.reason


def test_more_steps_more_risk_and_knobs_sorted():
    m = GRPOModel(kl="exact", kl_coef=0.7, learning_rate=0.5, momentum=0.0, adv_eps=1e-4,
                  refresh_interval=2, reuse="batch")
    a = collapse_risk(m, steps=100, knobs=False).probability
    r = collapse_risk(m, steps=1000)
    assert 0 < a < r.probability < 1
    probs = [k["probability"] for k in r.knobs]
    assert probs == sorted(probs) and r.best_knob == r.knobs[0]["knob"]
    assert {"fresh batches (no reuse)", "refresh interval 1"} <= {k["knob"] for k in r.knobs}


def test_no_knob_is_most_effective_when_none_lowers_the_risk(capsys):
    """G = 2 over 1e6 steps: every single change leaves the probability at 1, and "most
    effective: group size x2" was printed (issue 29)."""
    assert cli_main(["collapse-risk", "--group-size", "2", "--steps", "1000000", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["probability"] == 1 and {k["probability"] for k in out["knobs"]} == {1}
    assert out["best_knob"] is None
    assert cli_main(["collapse-risk", "--group-size", "2", "--steps", "1000000"]) == 0
    assert "most effective: none (no single change lowers the risk below 1)" in \
        capsys.readouterr().out


def test_cli(capsys):
    assert cli_main(["collapse-risk", "--steps", "400", "--kl", "exact", "--kl-coef", "0.7",
                     "--adv-eps", "1e-4", "--momentum", "0", "--refresh-interval", "1",
                     "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    for key in ("probability", "mean_first_passage_steps", "basin_depth", "best_knob"):
        assert out[key] is not None
    assert cli_main(["collapse-risk", "--steps", "0"]) == 2
    err = capsys.readouterr().err
    assert "steps" in err and len(err.strip().splitlines()) == 1
    r = collapse_risk(GRPOModel(optimizer="adam"), steps=10)
    assert r.probability is None and "heavy-ball" in r.reason


def test_infinite_group_is_the_limit_of_large_groups():
    """Issue 21 item 6: `--group-size inf` was offered and then answered n/a.  G = inf is the
    limit of the finite-G risk: checked against the finite-G model itself (exact binomial
    noise), whose probability falls to 0 and whose basin depth grows without bound as G grows,
    while its fixed point converges to the G = inf one."""
    base = dict(p_ref=0.3, kl="exact", kl_coef=1.5, learning_rate=0.5)
    inf = collapse_risk(GRPOModel(**base, group_size=None), steps=1000)
    assert inf.probability == 0.0 and inf.exit_code == 0
    assert inf.mean_first_passage_steps == math.inf and inf.basin_depth == math.inf
    assert inf.basin == (0.0, 1.0) and "G = inf" in inf.reason
    finite = [collapse_risk(GRPOModel(**base, group_size=G), steps=1000, knobs=False)
              for G in (8, 32, 128, 512)]
    probs = [r.probability for r in finite]
    depths = [r.basin_depth for r in finite]
    assert probs == sorted(probs, reverse=True) and probs[0] > 0 and probs[-1] < 1e-300
    assert depths == sorted(depths) and depths[-1] > 30 * depths[0]
    gaps = [abs(r.p_star - inf.p_star) for r in finite]
    assert gaps == sorted(gaps, reverse=True) and gaps[-1] < 1e-3


def test_infinite_group_without_a_plateau_says_why(capsys):
    # below the exact-KL saddle-node (beta_c = 1.08 at p_ref = 0.3) the G = inf reward escapes
    r = collapse_risk(GRPOModel(p_ref=0.3, kl="exact", kl_coef=0.7, group_size=None), steps=10)
    assert r.probability is None and "G = inf" in r.reason and "escapes" in r.reason
    assert cli_main(["collapse-risk", "--group-size", "inf", "--kl-coef", "1.5"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("collapse risk within 1000 steps: 0\n")


@pytest.mark.parametrize("lr, level", [(0.002, 0.0), (3.0, 1.0)])
def test_no_best_change_when_none_lowers_the_risk(lr, level):
    # issue 29 item 15: `check-config --from-log` printed "collapse risk within 1000 steps: 0
    # (best change: group size x2)"; at a risk of 0, or of 1 under every change, nothing is best
    r = collapse_risk(GRPOModel(group_size=8, learning_rate=lr, p_ref=0.5, kl="exact",
                                kl_coef=1.0), steps=1000)
    assert r.probability == level and r.knobs
    assert all(k["probability"] >= r.probability for k in r.knobs)
    assert r.best_knob is None
    assert "most effective: none (no single change lowers the risk" in str(r)
