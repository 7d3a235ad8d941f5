"""Read real GRPO training logs into one :class:`TrainingLog` object.

Formats (auto-detected from the content, or forced with ``format=``):

===============  ============================================================
``trl``          TRL ``trainer_state.json`` (``log_history``)
``trl-console``  TRL/transformers console output (the dicts ``Trainer.log`` prints)
``verl``         verl console log (``step:N - key:value - ...`` lines)
``verl-jsonl``   verl JSONL file logger (``{"step": N, "data": {...}}``)
``wandb``        W&B CSV export (``Step``, ``<run> - <metric>`` columns)
``csv``          generic CSV with a step column
``jsonl``        generic JSONL with a step key (or a JSON array of such objects)
``step-kv``      text lines ``step:N | key=value | ...`` (a custom logger's, e.g. Monarch's)
``tensorboard``  TensorBoard event files (optional extra)
===============  ============================================================

Malformed files raise :class:`LogFormatError` (a
:class:`~grpo_theory.validate.ParameterError`) naming the file and line; what
can be tolerated (NaN, missing keys, duplicated steps, a cut-off last line) is
tolerated and recorded in ``TrainingLog.warnings``.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import os
import re

import numpy as np

from grpo_theory.validate import ParameterError, check_choice
from grpo_theory.runs.logs.base import ROLES, LogFormatError, TrainingLog, records_to_metrics, text_lines
from grpo_theory.runs.logs.generic import STEP_KV_LINE, read_csv, read_jsonl, read_step_kv
from grpo_theory.runs.logs.trl import console_dicts, read_trl, read_trl_console
from grpo_theory.runs.logs.verl import (STEP_LINE, parse_overrides, read_verl_console, read_verl_jsonl,
                                        strip_ansi)
from grpo_theory.runs.logs.wandb import is_wandb_header, read_wandb_csv

__all__ = ["FORMATS", "LogFormatError", "ROLES", "TrainingLog", "detect_format", "from_simulation",
           "parse_overrides", "read_log", "records_to_metrics"]

FORMATS = ("trl", "trl-console", "verl", "verl-jsonl", "wandb", "csv", "jsonl", "tensorboard",
           "step-kv")


def trainer_state_path(folder) -> str:
    """``trainer_state.json`` of a TRL checkpoint folder, or of the latest ``checkpoint-N``
    of a TRL output directory (largest N)."""
    folder = os.fspath(folder)
    cand = os.path.join(folder, "trainer_state.json")
    if os.path.exists(cand):
        return cand
    ckpts = []
    for name in os.listdir(folder):
        head, _, num = name.partition("-")
        if head == "checkpoint" and num.isdigit() and os.path.exists(
                os.path.join(folder, name, "trainer_state.json")):
            ckpts.append((int(num), name))
    if not ckpts:
        raise ParameterError("log file", folder, "a file, a TRL checkpoint folder with "
                             "trainer_state.json, or a TRL output directory with checkpoint-N")
    return os.path.join(folder, max(ckpts)[1], "trainer_state.json")


def _read_text(path) -> str:
    path = os.fspath(path)
    if not os.path.exists(path):
        raise ParameterError("log file", path, "an existing file")
    if os.path.isdir(path):
        path = trainer_state_path(path)
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8-sig", errors="replace", newline="") as fh:
            return strip_ansi(fh.read())        # no colour code reaches a reader or a message
    except OSError as exc:
        raise LogFormatError(path, None, f"cannot be read ({exc})") from None


#: a line that opens like a printed dict (``{'loss': ...``), at a line start or after a ``\r``
_DICT_LINE = re.compile(r"(?:^|[\r\n])[ \t]*\{'")


#: what only a verl console log holds: its launch module, ray's worker prefixes around its
#: trainer, its printed config
_VERL_SIGN = re.compile(r"-m verl\.trainer\.main_|^\((?:TaskRunner|main_task) pid=\d+|"
                        r"^(?:\(\w+ pid=\d+[^)]*\) ?)?\{'actor_rollout_ref': ", re.M)

#: a line of Python's logging module with its default time stamp (``%(asctime)s``: milliseconds
#: after a comma)
_LOGGING_LINE = re.compile(r"^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2},\d{3}\b")


def detect_format(path, text: str | None = None) -> str:
    """Guess the format from the content (extension only breaks ties)."""
    if text is None:
        text = _read_text(path)
    head = text.lstrip()[:200000]
    name = os.fspath(path).lower().removesuffix(".gz")
    lines = text_lines(head)
    first_line = lines[0][1]
    if head.startswith("{") and not first_line.lstrip().startswith("{'"):
        try:
            first = json.loads(first_line.strip())
        except json.JSONDecodeError:
            first = None
        several = any(line.strip() for _, line in lines[1:])
        if isinstance(first, dict) and several and not name.endswith(".json"):
            if isinstance(first.get("data"), dict) and "step" in first:
                return "verl-jsonl"
            return "jsonl"
        if '"log_history"' in head or name.endswith("trainer_state.json"):
            return "trl"
        if isinstance(first, dict):
            if isinstance(first.get("data"), dict) and "step" in first:
                return "verl-jsonl"
            return "jsonl"
        return "trl"
    array = _json_array_format(head) if head.startswith("[") else None
    if array:
        return array
    for _, line in lines[:5000]:
        if STEP_LINE.search(line):
            return "verl"
    for _, line in lines[:5000]:
        if STEP_KV_LINE.search(line):
            return "step-kv"
    # the printed dicts up to the first trainer dict: that one decides (the reader parses them all)
    seen = []
    for item in (console_dicts(text) if _DICT_LINE.search(text) else ()):
        if item[1] in ("train", "eval", "summary"):
            return "trl-console"
        seen.append(item)
    if _VERL_SIGN.search(head):
        return "verl"            # a verl run's console before its first step line (said so)
    if _LOGGING_LINE.match(first_line) and not seen:
        # Python logging lines ("2026-04-19 08:31:23,419 [INFO] ...": a comma in the time stamp),
        # as a TRL run prints before its first Trainer.log dict: not a CSV header
        engine = "verl" if re.search(r"\bverl\.", head) else "TRL"
        raise LogFormatError(path, None, f"{engine} console output with no training record yet: "
                                         "Python logging lines, but no printed Trainer.log dict "
                                         "({'loss': ..., 'epoch': ...}) and no verl 'step:N' line "
                                         "(a run that has not logged its first step; `watch` "
                                         "reads it again as it grows)")
    if "," in first_line or name.endswith(".csv"):
        import csv

        header = next(csv.reader([first_line]), [])
        return "wandb" if is_wandb_header([h.strip() for h in header]) else "csv"
    dicts = [(ln, d) for ln, kind, d in seen if kind in ("other", "unreadable")]
    if dicts:
        ln, d = dicts[0]
        what = ("keys " + ", ".join(list(d)[:4])) if isinstance(d, dict) else repr(d[:50])
        raise LogFormatError(path, ln, f"format not recognized: {len(dicts)} line(s) look like "
                                       f"printed Python dicts ({what}), but none is a "
                                       "transformers/TRL Trainer.log entry (a dict with an "
                                       "'epoch' and the logged metrics)")
    shown = first_line.strip()
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    raise LogFormatError(path, None, f"format not recognized: no reader accepts it (its first "
                                     f"line: {shown!r}; expected TRL "
                                     "trainer_state.json or console output, a verl console log, "
                                     "'step:N | key=value' lines, verl/generic JSONL or a JSON "
                                     "array of per-step objects, a W&B/generic CSV or a "
                                     "TensorBoard event file)")


def _json_array_format(head: str) -> str | None:
    """``jsonl`` (or ``verl-jsonl``) for a JSON array, read like JSONL (the reader names an
    element that is not a step's record); ``None`` for text that opens with ``[`` and is no JSON
    (``[INFO] ...``, ``[rank0]: ...``)."""
    body = head[head.index("[") + 1:]
    start = len(body) - len(body.lstrip())
    if body[start:start + 1] == "]":
        return "jsonl"                                       # an empty array: said by the reader
    try:
        first, _ = json.JSONDecoder().raw_decode(body, start)
    except json.JSONDecodeError:
        return None
    if isinstance(first, dict) and isinstance(first.get("data"), dict) and "step" in first:
        return "verl-jsonl"
    return "jsonl"


def read_log(path, format: str | None = None, *, run: str | None = None,
             step_column: str | None = None, rename: dict | None = None) -> TrainingLog:
    """Read a training log.

    Parameters
    ----------
    path : file (``.gz`` allowed) or a TRL checkpoint folder.
    format : one of :data:`FORMATS`, or ``None``/``"auto"`` to detect.
    run : run name in multi-run files (W&B CSV).
    step_column, rename : for the generic CSV/JSONL readers.

    TensorBoard event files (``events.out.tfevents.*``, or ``--format tensorboard``)
    need the optional extra ``grpo-theory[tensorboard]``.
    """
    from grpo_theory.runs.logs.tensorboard import is_event_file, read_tensorboard

    p = os.fspath(path)
    has_events = os.path.isdir(p) and any(is_event_file(f) for f in os.listdir(p))
    if format == "tensorboard" or (format in (None, "auto") and (is_event_file(p) or has_events)):
        if not os.path.exists(p):
            raise ParameterError("log file", p, "an existing file")
        log = read_tensorboard(p)
        if rename:
            log.metrics = {rename.get(k, k): v for k, v in log.metrics.items()}
        return log
    text = _read_text(path)
    if os.path.isdir(p):
        p = trainer_state_path(p)
    if format in (None, "auto"):
        format = detect_format(p, text)
    check_choice("format", format, FORMATS + ("auto",))
    if run is not None and format not in ("wandb", "csv"):
        raise ParameterError("run", run, f"omitted: the {format} format holds a single run")
    if format == "trl":
        log = read_trl(p, text)
    elif format == "trl-console":
        log = read_trl_console(p, text)
    elif format == "verl":
        log = read_verl_console(p, text)
    elif format == "verl-jsonl":
        log = read_verl_jsonl(p, text)
    elif format == "wandb":
        log = read_wandb_csv(p, text, run=run)
    elif format == "csv":
        log = read_csv(p, text, step_column=step_column, rename=rename, run=run)
    elif format == "step-kv":
        log = read_step_kv(p, text)
    else:
        log = read_jsonl(p, text, step_column=step_column, rename=rename)
    if rename and format not in ("csv", "jsonl"):
        log.metrics = {rename.get(k, k): v for k, v in log.metrics.items()}
    return log


# Simulation result attribute -> metric name in the TrainingLog (TRL names, so
# the detectors' role lookup finds them).
_SIM_NAMES = {"reward": "reward", "entropy": "entropy", "zero_var_frac": "frac_reward_zero_std",
              "kl": "kl", "heldout_reward": "eval_reward", "val_reward": "eval_reward",
              "grad_norm": "grad_norm", "clip_frac": "clip_ratio/region_mean"}
_SIM_CONFIG = ("group_size", "learning_rate", "optimizer", "momentum", "kl", "kl_coef",
               "refresh_interval", "lag_model", "difficulty_spread", "seed", "normalization",
               "steps", "batch_size", "num_prompts")


def from_simulation(result, run: int = 0, *, extra: dict | None = None) -> TrainingLog:
    """Convert one run of a simulation result into a :class:`TrainingLog`.

    ``result`` has per-run arrays (``reward``, ``entropy``, ``zero_var_frac``,
    ``kl``, ...) of shape ``(runs, steps + 1)`` (or ``(steps + 1,)``) and
    optionally ``t``/``steps`` and the configuration as attributes, a
    ``config``/``params`` dict, or the ``model`` and ``settings`` of a
    :class:`~grpo_theory.simulation.SimulationResult`.  Index ``i`` is step ``i`` (step 0 = initial
    policy).  ``extra`` adds arrays, e.g. a held-out reward.
    """
    def get(name):
        if isinstance(result, dict):
            return result.get(name)
        return getattr(result, name, None)

    metrics = {}
    n_runs = None
    for attr, name in _SIM_NAMES.items():
        arr = get(attr)
        if arr is None or name in metrics:
            continue
        arr = np.asarray(arr, dtype=float)
        if arr.ndim == 2:
            n_runs = arr.shape[0]
            if not 0 <= run < arr.shape[0]:
                raise ParameterError("run", run, f"an integer in [0, {arr.shape[0] - 1}]")
            arr = arr[run]
        elif arr.ndim != 1:
            continue
        metrics[name] = (np.arange(arr.size, dtype=float), arr.copy())
    for name, arr in (extra or {}).items():
        arr = np.asarray(arr, dtype=float)
        metrics[name] = (np.arange(arr.size, dtype=float), arr)
    if "reward" not in metrics:
        raise ParameterError("result", type(result).__name__, "a simulation result with a 'reward' array")
    config = {}
    for src in (get("config"), get("params"), get("model"), get("settings")):
        if dataclasses.is_dataclass(src) and not isinstance(src, type):
            src = {f.name: getattr(src, f.name) for f in dataclasses.fields(src)}
        if isinstance(src, dict):
            config.update({k: v for k, v in src.items() if isinstance(v, (int, float, str, bool))})
    for key in _SIM_CONFIG:
        v = get(key)
        if isinstance(v, (int, float, str, bool, np.integer, np.floating)):
            config.setdefault(key, v.item() if hasattr(v, "item") else v)
    return TrainingLog(metrics=metrics, source=f"simulation run {run}", format="simulation",
                       run=str(run), runs=[str(i) for i in range(n_runs or 1)], config=config,
                       default_metric="reward")
