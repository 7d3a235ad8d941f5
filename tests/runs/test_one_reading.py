"""`fit`, `diagnose` and `check-config --from-log` tell one story about one log (issue 21
item 7): one gain (`curves.reward_gain`), one decision whether the model applies
(`curves.applicability`), the regime named only where `fit` names one, and no stiffness
taken from a curve that `fit` declines."""

import re

import numpy as np
import pytest

from grpo_theory.runs import diagnostics as D
from grpo_theory.runs.check_config import check_config
from grpo_theory.runs.curves import reward_gain
from grpo_theory.runs.fitting import fit_log
from grpo_theory.runs.logs import TrainingLog, read_log

T = np.arange(1.0, 301.0)


def _csv(tmp_path, reward):
    rows = "\n".join(f"{s:g},{r:.6f},1.2,3e-6" for s, r in zip(T, reward))
    path = tmp_path / "earlier.csv"
    path.write_text("step,reward,entropy,learning_rate\n" + rows + "\n")
    return path


def _gain_in(text):
    return float(re.search(r"gain(?:ed)? ([+-][0-9.e-]+) over the run", text).group(1))


def test_a_curve_fit_declines_has_no_regime_and_no_stiffness(tmp_path):
    # a slow rise of 0.1 under step-to-step noise of sd 0.3: nothing a curve can fit
    rng = np.random.default_rng(3)
    reward = 0.4 + 0.1 * T / T[-1] + 0.3 * rng.standard_normal(T.size)
    path = _csv(tmp_path, reward)
    log = read_log(path)
    fit = fit_log(log, models=["exponential", "oscillator"])
    assert fit.applicable["fit"] is False and fit.best is None
    gain = reward_gain(reward)
    assert _gain_in(" ".join(fit.applicable["reasons"])) == pytest.approx(gain, abs=5e-4)

    di = D.dynamical_instability(log)
    assert di["damping_ratio"] is None and di["regime"].startswith("the model does not apply")
    assert _gain_in(di["evidence"]) == pytest.approx(gain, abs=5e-4)
    pc = D.policy_concentration(log)
    assert _gain_in(pc["evidence"]) == pytest.approx(gain, abs=5e-4)

    cfg = tmp_path / "c.yaml"
    cfg.write_text("training:\n  loss_type: reinforce_with_baseline\n  learning_rate: 1e-5\n")
    res = check_config(cfg, from_log=path)
    assert res.stiffness["value"] is None and res.prediction["eta_K"] is None
    assert res.prediction["regime"] is None and res.prediction["stable"] is None
    (why,) = [u for u in res.prediction["unknown"] if u.startswith("stiffness K")]
    assert "noise ceiling" in why and "as fit says" in why
    assert "stiffness K =" not in str(res)


def test_a_rise_within_a_few_steps_is_a_rise_and_both_name_the_same_regime():
    # the reward jumps in ~5 steps and rings down around its plateau: the first fifth is
    # already at the plateau, so a first-fifth gain called this curve flat
    rng = np.random.default_rng(0)
    t = T - 1
    reward = 0.9 - 0.5 * np.exp(-t / 10) * np.cos(2 * np.pi * t / 15) \
        + 0.01 * rng.standard_normal(t.size)
    log = TrainingLog(metrics={"reward": (t, reward)})
    fit = fit_log(log, models=["exponential", "oscillator"])
    assert fit.applicable["fit"] is True, fit.applicable["reasons"]
    reading = fit.models["oscillator"]["reading"]
    di = D.dynamical_instability(log)
    assert di["damping_ratio"] == pytest.approx(reading["damping_ratio"], rel=1e-12)
    assert di["regime"] == reading["regime"] == "oscillatory"
