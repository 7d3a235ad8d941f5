"""Reader for TRL's ``trainer_state.json`` (the ``log_history`` list).

Each ``log_history`` entry is a dict with ``step`` and the metrics logged at that
step: training entries (``reward``, ``reward_std``, ``frac_reward_zero_std``,
``entropy``, ``kl``, ``clip_ratio/*``, ``completions/mean_length``, ...) and
evaluation entries (``eval_*``) interleave at the same step with disjoint keys.

The trainer state holds no training hyper-parameter (no ``num_generations``, ``beta``,
``learning_rate`` schedule settings): TRL keeps the ``GRPOConfig`` in ``training_args.bin``, a
pickle, which is not read.  A ``GRPOConfig`` saved as JSON next to the state as
``config.json`` (``GRPOConfig.to_dict()``; the lab's runs in ``benchmarks/lab_runs``) is read
into the log's config, so ``diagnose`` knows G and ``check-config --from-log`` the earlier
run's optimizer and window.  A checkpoint's own ``config.json`` is the *model's*
configuration; it has no GRPO key and is left alone.
"""

from __future__ import annotations

import json
import os

from grpo_theory.runs.logs.base import LogFormatError, TrainingLog, records_to_metrics

__all__ = ["read_trl", "log_from_history"]

_STATE_KEYS = ("global_step", "max_steps", "num_train_epochs", "train_batch_size",
               "logging_steps", "eval_steps", "save_steps")
#: a JSON object next to the state with this key is a saved GRPOConfig (a model's has none)
_GRPO_CONFIG_KEY = "num_generations"


def read_trl(path, text: str | None = None) -> TrainingLog:
    """Read a TRL ``trainer_state.json``; entries without ``step`` are skipped (warned)."""
    if text is None:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    try:
        state = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LogFormatError(path, exc.lineno, f"not valid JSON ({exc.msg}, column {exc.colno})") from None
    if not isinstance(state, dict) or not isinstance(state.get("log_history"), list):
        raise LogFormatError(path, 1, "a TRL trainer_state.json must be an object with a "
                                      "'log_history' list")
    config = {k: state[k] for k in _STATE_KEYS if k in state}
    warnings: list[str] = []
    config = {**_saved_grpo_config(path, warnings), **config}
    log = log_from_history(state["log_history"], str(path), config=config, path=path)
    log.warnings[:0] = warnings
    return log


def _saved_grpo_config(path, warnings) -> dict:
    """The GRPOConfig saved as ``config.json`` next to the state (see the module docstring),
    or ``{}``; a file that cannot be read is named in ``warnings``, never silently skipped."""
    if path is None:
        return {}
    p = os.path.join(os.path.dirname(os.fspath(path)), "config.json")
    if not os.path.isfile(p):
        return {}
    try:
        with open(p, encoding="utf-8") as fh:
            cfg = json.load(fh)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        warnings.append(f"{p}: not read as the run's GRPOConfig ({type(exc).__name__})")
        return {}
    if not isinstance(cfg, dict) or _GRPO_CONFIG_KEY not in cfg:
        return {}                                # a model's config.json
    return cfg


def log_from_history(history, source: str, *, config=None, path=None) -> TrainingLog:
    """A :class:`TrainingLog` from a TRL ``log_history`` list (``TrainerState.log_history``);
    entries without a numeric ``step`` are skipped (warned)."""
    warnings: list[str] = []
    records = []
    skipped = 0
    for i, entry in enumerate(history):
        if not isinstance(entry, dict):
            raise LogFormatError(path or source, None, f"log_history entry {i} is not an object")
        step = entry.get("step")
        if not isinstance(step, (int, float)) or isinstance(step, bool):
            skipped += 1
            continue
        values = {k: v for k, v in entry.items() if k != "step"}
        records.append((float(step), f"log_history entry {i}", values))
    if skipped:
        warnings.append(f"{source}: {skipped} log_history entries without a numeric 'step' skipped")
    if not records:
        raise LogFormatError(path or source, None, "log_history holds no entry with a 'step'")
    text_columns: dict = {}
    metrics = records_to_metrics(records, warnings=warnings, source=source,
                                 text_columns=text_columns)
    return TrainingLog(metrics=metrics, source=source, format="trl", config=dict(config or {}),
                       warnings=warnings, default_metric="reward", text_columns=text_columns)
