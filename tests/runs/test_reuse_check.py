"""The reuse-collapse criterion: structure from the config, the self push measured from a log."""

import math

import numpy as np
import pytest

from grpo_theory.runs.logs import TrainingLog
from grpo_theory.runs.reuse_check import _clip_fraction_model, reuse_check, self_push_from_log
from grpo_theory.validate import ParameterError


def test_one_pass_is_stable_whatever_the_window():
    for clip in (None, (0.2, 0.2)):
        r = reuse_check(1, clip=clip)
        assert r["verdict"] == "stable" and r["trust_region_number"] == 0.0


def test_revisits_without_a_measured_push():
    assert reuse_check(4, clip=(0.2, 0.2))["verdict"] is None            # clip: unknown
    r = reuse_check(4, clip=None)
    assert r["verdict"] == "at risk" and "nothing bounds" in r["reason"]
    assert reuse_check(2, surrogate="stale", clip=(0.2, 0.2))["verdict"] == "at risk"
    with pytest.raises(ParameterError, match="passes"):
        reuse_check(0)


def test_trust_region_number_decides():
    c = math.log1p(0.2)
    inside = reuse_check(3, clip=(0.2, 0.2), self_push=0.4 * c / 2)
    outside = reuse_check(3, clip=(0.2, 0.2), self_push=1.5 * c / 2)
    free = reuse_check(3, clip=None, self_push=1.5 * c / 2)
    assert inside["verdict"] == "stable" and inside["trust_region_number"] == pytest.approx(0.4)
    assert outside["verdict"] == "at risk" and free["verdict"] == "unstable"
    straddle = reuse_check(3, clip=(0.2, 0.2), self_push=c / 2,
                           self_push_interval=(0.5 * c / 2, 1.5 * c / 2))
    assert straddle["verdict"] is None and "straddles" in straddle["reason"]


def _log(metric, values):
    steps = np.arange(1.0, len(values) + 1)
    return TrainingLog(metrics={"reward": (steps, np.linspace(0.2, 0.6, len(values))),
                                metric: (steps, np.asarray(values, dtype=float))})


def test_self_push_from_the_kl_on_the_batch():
    # log-ratios (p - 1) x at pass p with x ~ N(0, delta^2): the window's mean KL (k1 ~ x^2/2)
    # simulated directly, then inverted
    rng = np.random.default_rng(0)
    delta, P = 0.05, 4
    x = rng.normal(0.0, delta, (200, 4096))
    kl = np.mean([np.mean(((p - 1) * x) ** 2 / 2, axis=1) for p in range(1, P + 1)], axis=0)
    est = self_push_from_log(_log("actor/ppo_kl", kl), P)
    assert est["value"] == pytest.approx(delta, rel=0.02)
    assert est["interval"][0] <= est["value"] <= est["interval"][1]
    assert self_push_from_log(_log("actor/ppo_kl", kl), 1) is None


def test_self_push_from_the_clipped_fraction():
    rng = np.random.default_rng(1)
    delta, P, eps = 0.12, 3, 0.2
    x = rng.normal(0.0, delta, (100, 8192))
    frac = np.mean([np.mean(np.abs((p - 1) * x) > math.log1p(eps), axis=1)
                    for p in range(1, P + 1)], axis=0)
    assert np.mean(frac) == pytest.approx(_clip_fraction_model(delta, P, eps), rel=0.05)
    # one mean fraction per window (logged every P steps): the distribution is inverted
    steps = P * np.arange(1.0, frac.size + 1)
    log = TrainingLog(metrics={"reward": (steps, np.linspace(0.2, 0.6, frac.size)),
                               "clip_ratio/region_mean": (steps, frac)})
    est = self_push_from_log(log, P, clip=eps)
    assert est["value"] == pytest.approx(delta, rel=0.03) and "inverted" in est["method"]
    assert self_push_from_log(_log("loss", frac), P) is None


def test_self_push_from_the_first_clipped_pass():
    # P = 4 passes over one batch per window, clipping first appears at pass 3 in every window:
    # the samples crossed log(1.2) within 2 passes
    P, windows = 4, 10
    steps = np.arange(1.0, P * windows + 1)
    frac = np.array([0.0 if (int(s - 1) % P) + 1 < 3 else 0.2 for s in steps])
    est = self_push_from_log(_log("clip_ratio/region_mean", frac), P, clip=0.2)
    assert est["value"] == pytest.approx(math.log1p(0.2) / 2)
    assert "first clipped pass" in est["method"]
    never = self_push_from_log(_log("clip_ratio/region_mean", np.zeros(P * windows)), P, clip=0.2)
    assert never["value"] == pytest.approx(math.log1p(0.2) / (P - 1))     # the censoring bound
    assert reuse_check(P, clip=(0.2, 0.2), self_push=est["value"])["verdict"] == "at risk"
