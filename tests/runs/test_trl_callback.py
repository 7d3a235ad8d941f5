"""The TRL callback, driven by a real transformers TrainerState/TrainingArguments."""

import warnings

import numpy as np
import pytest

transformers = pytest.importorskip("transformers")

from grpo_theory.runs.trl_callback import GRPOTheoryCallback, GRPOTheoryWarning  # noqa: E402


LOGGING_STEPS = 4   # a log every fourth step (TRL's GRPOConfig logs every 10)


def _drive(rewards, tmp_path, **cb_kw):
    """Train for len(rewards) steps; the trainer logs (and the callback runs) every LOGGING_STEPS."""
    args = transformers.TrainingArguments(output_dir=str(tmp_path), learning_rate=1e-6,
                                          report_to=[], logging_steps=LOGGING_STEPS)
    state, control = transformers.TrainerState(), transformers.TrainerControl()
    cb = GRPOTheoryCallback(**cb_kw)
    cb.on_train_begin(args, state, control)
    logged = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for step, r in enumerate(rewards, start=1):
            if step % LOGGING_STEPS:
                continue
            entry = {"step": step, "reward": float(r), "loss": 0.0}
            state.log_history.append(entry)
            state.global_step = step
            logs = {"reward": float(r)}
            cb.on_log(args, state, control, logs=logs)
            logged.append((step, logs))
    return cb, logged, [w for w in caught if issubclass(w.category, GRPOTheoryWarning)]


def test_collapse_fires_once_during_training(tmp_path):
    rng = np.random.default_rng(0)
    t = np.arange(120)
    rise = 0.1 + 0.34 * (1 - np.exp(-t / 15))                  # rises to about 0.44 ...
    fall = np.where(t > 70, np.maximum(0.0, 0.44 - 0.02 * (t - 70)), 0.0)
    rewards = np.clip(np.where(t > 70, fall, rise) + 0.01 * rng.standard_normal(t.size), 0, 1)
    cb, logged, caught = _drive(rewards, tmp_path)
    names = [w.detector for w in cb.warnings]
    assert "dynamical_instability" in names and names.count("dynamical_instability") == 1
    w = next(w for w in cb.warnings if w.detector == "dynamical_instability")
    assert 70 < w.last_step <= 120                               # fired during the fall
    step_flagged = [step for step, logs in logged if "grpo_theory/dynamical_instability" in logs]
    assert step_flagged == [w.last_step]                         # logged once, at that step
    assert any("dynamical_instability" in str(c.message) for c in caught)
    # the pre-launch check ran on the trainer's arguments (or says why it could not)
    assert cb.config_check is not None or cb.config_check_error


def test_healthy_run_stays_quiet(tmp_path):
    rng = np.random.default_rng(1)
    t = np.arange(120)
    rewards = np.clip(0.2 + 0.6 * (1 - np.exp(-t / 25)) + 0.02 * rng.standard_normal(t.size), 0, 1)
    cb, logged, caught = _drive(rewards, tmp_path)
    assert "dynamical_instability" not in [w.detector for w in cb.warnings]
