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

import ast
import json
import os
import re

from grpo_theory.runs.logs.base import LogFormatError, TrainingLog, records_to_metrics, text_lines

__all__ = ["read_trl", "read_trl_console", "log_from_history", "console_dicts", "write_trl_prefix"]

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


def write_trl_prefix(run_dir, fraction: float, out_dir) -> str:
    """The first ``fraction`` of a TRL run as the run had it then: its ``trainer_state.json``
    with the ``log_history`` entries up to that fraction of its last step (and ``global_step``
    set there), and its saved GRPOConfig (``config.json``) copied beside it, written to
    ``out_dir`` (created).  Returns the path of the prefix's ``trainer_state.json``: what
    ``check-config --from-log`` or ``fit`` would have read a ``fraction`` of the way in."""
    from grpo_theory.validate import check_real

    f = check_real("fraction", fraction, low=0, high=1, low_open=True)
    src = os.path.join(os.fspath(run_dir), "trainer_state.json")
    with open(src, encoding="utf-8") as fh:
        state = json.load(fh)
    last = max((e.get("step", 0) for e in state.get("log_history", [])), default=0)
    cut = f * last
    state["log_history"] = [e for e in state["log_history"] if e.get("step", 0) <= cut]
    state["global_step"] = int(cut)
    os.makedirs(out_dir, exist_ok=True)
    dst = os.path.join(os.fspath(out_dir), "trainer_state.json")
    with open(dst, "w", encoding="utf-8") as fh:
        json.dump(state, fh)
    cfg = os.path.join(os.fspath(run_dir), "config.json")
    if os.path.isfile(cfg):
        with open(cfg, encoding="utf-8") as a, open(os.path.join(os.fspath(out_dir), "config.json"),
                                                    "w", encoding="utf-8") as b:
            b.write(a.read())
    return dst


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


def log_from_history(history, source: str, *, config=None, path=None, lines=None) -> TrainingLog:
    """A :class:`TrainingLog` from a TRL ``log_history`` list (``TrainerState.log_history``);
    entries without a numeric ``step`` are skipped (warned).  ``lines``: where each entry was
    read (a file line number), for the messages; default ``"log_history entry i"``."""
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
        records.append((float(step), f"log_history entry {i}" if lines is None else lines[i], values))
    if skipped:
        warnings.append(f"{source}: {skipped} log_history entries without a numeric 'step' skipped")
    if not records:
        raise LogFormatError(path or source, None, "log_history holds no entry with a 'step'")
    text_columns: dict = {}
    metrics = records_to_metrics(records, warnings=warnings, source=source,
                                 text_columns=text_columns)
    return TrainingLog(metrics=metrics, source=source, format="trl", config=dict(config or {}),
                       warnings=warnings, default_metric="reward", text_columns=text_columns)


# -- console logs -------------------------------------------------------------------------------
# ``Trainer.log`` prints each logged dict on a line of its own (``ProgressCallback.on_log``:
# ``tqdm.write(str(logs))``): ``{'loss': 0.0123, 'reward': 0.42, ..., 'epoch': 0.01}``, values
# numbers or (newer transformers) strings, never the step.

#: keys of the train-end summary (``Trainer.train``'s metrics): not a training log entry
_SUMMARY_KEYS = ("train_runtime", "train_loss", "train_samples_per_second", "total_flos")
_STEP_KEYS = ("step", "global_step")
#: a bare nan/inf (``str`` of a float dict) and numpy/torch scalars, which literal_eval refuses
_BARE = re.compile(r"(?<=[:\[,]) *(-?(?:nan|inf))(?= *[,}\]])")
_SCALAR = re.compile(r"\b(?:np\.|numpy\.)?(?:float|int)(?:16|32|64)?\(([^()]*)\)|\btensor\(([^(),]*)(?:,[^()]*)?\)")
#: a tqdm bar's counter, ``| 5/100 [``
_BAR = re.compile(r"\|\s*(\d+)/(\d+)\s*\[")


def _printed_dict(line: str):
    """The dict printed on ``line`` (a Python literal), ``None`` if the line is no printed dict,
    or ``...`` if it looks like one (``{'key': ...}``) but cannot be read."""
    s = line.strip()
    if not (s.startswith("{'") or s.startswith('{"')):
        return None
    if not s.endswith("}"):
        return ...
    s = _SCALAR.sub(lambda m: m.group(1) if m.group(1) is not None else m.group(2), s)
    s = _BARE.sub(lambda m: f" '{m.group(1)}'", s)
    try:
        d = ast.literal_eval(s)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return ...
    if isinstance(d, dict) and d and all(isinstance(k, str) for k in d):
        return d
    return None


def _kind(d: dict) -> str | None:
    """``"train"``, ``"eval"``, ``"summary"``, or ``None`` for a dict that is no trainer log
    (``Trainer.log`` adds the epoch to every dict it prints)."""
    if any(k in d for k in _SUMMARY_KEYS):
        return "summary"
    if "epoch" not in d and not any(k in d for k in _STEP_KEYS):
        return None
    names = [k for k in d if k not in ("epoch",) + _STEP_KEYS]
    if names and all(k.startswith("eval_") for k in names):
        return "eval"
    return "train" if names else None


def console_dicts(text: str):
    """``(lineno, kind, dict)`` for each trainer dict printed in a console log, and the other
    things seen: ``kind`` is ``"train"``, ``"eval"``, ``"summary"``, ``"other"`` (a printed dict
    that is no trainer log), ``"unreadable"`` (a line that looks like a printed dict and is not
    a Python literal; ``dict`` is the line) or ``"bar"`` (a tqdm counter; ``dict`` is ``(n,
    total)``), in file order and one at a time (format detection stops at the first trainer
    dict)."""
    for lineno, line in text_lines(text):
        d = _printed_dict(line)
        if d is None:
            bars = _BAR.findall(line)
            if bars:
                yield lineno, "bar", tuple(int(x) for x in bars[-1])
        elif d is ...:
            yield lineno, "unreadable", line.strip()
        else:
            yield lineno, _kind(d) or "other", d


def _number(v):
    try:
        return None if isinstance(v, bool) else float(v)
    except (TypeError, ValueError):
        return None


def _bar_steps(bars) -> int | None:
    """The logging interval, if the training bar drawn before each training dict counts its
    optimizer step: one total, steps that rise by one interval at each dict (the first gap may
    be shorter: ``logging_first_step``); else ``None`` (stdout block-buffered when redirected
    prints the dicts in bunches after the bars, which this refuses)."""
    if len(bars) < 2 or any(b is None for b in bars) or len({b[1] for b in bars}) != 1:
        return None
    ns = [b[0] for b in bars]
    gaps = {b - a for a, b in zip(ns[1:], ns[2:])} if len(ns) > 2 else {ns[1] - ns[0]}
    if len(gaps) != 1:
        return None
    (every,) = gaps
    first = ns[1] - ns[0]
    if every < 1 or ns[-1] > bars[0][1] or not (first == every or (ns[0] == 1 and 0 < first < every)):
        return None
    return every


def read_trl_console(path, text: str | None = None) -> TrainingLog:
    """Read the console output of a TRL/transformers run (the dicts ``Trainer.log`` prints).

    The same entries as ``trainer_state.json``'s ``log_history`` and read by the same
    conversion (:func:`log_from_history`), once each dict has its step: a ``step`` or
    ``global_step`` printed in every training dict; else the step the training progress bar
    (``N/M``) shows just before each dict, where those steps rise by one logging interval from
    dict to dict; else the ``logging_steps`` of a GRPOConfig saved as ``config.json`` next to the
    log; else the count of training dicts (the step unit is then log calls).  An evaluation dict
    (``eval_*`` keys) takes the step of the training dict before it (step 0 before any), where
    TRL's log_history has it; the train-end summary (``train_runtime``, ``train_loss``) and
    printed dicts that are no trainer log (no ``epoch``) are skipped, each said in the warnings.
    """
    if text is None:
        with open(path, encoding="utf-8", errors="replace", newline="") as fh:
            text = fh.read()
    warnings: list[str] = []
    config = _saved_grpo_config(path, warnings)
    seen = list(console_dicts(text))
    train = [(ln, d) for ln, k, d in seen if k == "train"]
    skipped = {k: [(ln, d) for ln, kk, d in seen if kk == k] for k in ("summary", "other", "unreadable")}
    if not train:
        what = ("only the train-end summary (" + ", ".join(list(skipped["summary"][0][1])[:4]) + ")"
                if skipped["summary"] else "no dict printed by Trainer.log")
        raise LogFormatError(path, skipped["summary"][0][0] if skipped["summary"] else None,
                             f"a TRL console log with {what}: no training log entry to read")
    # where each training dict's step comes from
    given = [_number(next((d[k] for k in _STEP_KEYS if k in d), None)) for _, d in train]
    steps, every, how = None, None, None
    if all(g is not None for g in given):
        steps, how = given, None
    else:
        bars, last = [], None
        for _, kind, d in seen:
            if kind == "bar":
                last = d
            elif kind == "train":
                bars.append(last)
        every = _bar_steps(bars)
        if every is not None:
            steps = [float(b[0]) for b in bars]
            # what trainer_state.json would say (the training bar's total is max_steps)
            config.update(logging_steps=every, max_steps=bars[0][1])
            how = (f"steps read off the training progress bar drawn before each dict "
                   f"({bars[0][0]}/{bars[0][1]} at the first; a log every {every} steps)")
        elif isinstance(config.get("logging_steps"), int) and config["logging_steps"] >= 1 \
                and not config.get("logging_first_step"):
            every = config["logging_steps"]
            steps = [float(every * (k + 1)) for k in range(len(train))]
            how = (f"steps counted in logging_steps = {every} (the GRPOConfig saved as "
                   f"config.json): the k-th training dict is step k x {every}")
        else:
            steps = [float(k + 1) for k in range(len(train))]
            how = ("steps counted: the k-th training dict is step k, so the step unit is log "
                   "calls (logging_steps is not known: no progress bar shows the step of each "
                   "dict, and no GRPOConfig is saved next to the log)")
        if any(g is not None for g in given):
            how += f"; only {sum(g is not None for g in given)} of {len(train)} dicts print a step"
    step_of = {ln: s for (ln, _), s in zip(train, steps)}
    history, lines, current = [], [], 0.0
    for ln, kind, d in seen:
        if kind == "train":
            current = step_of[ln]
        elif kind != "eval":
            continue
        own = _number(next((d[k] for k in _STEP_KEYS if k in d), None)) if how is None else None
        history.append({**{k: v for k, v in d.items() if k not in _STEP_KEYS},
                        "step": current if own is None else own})
        lines.append(ln)
    notes = [f"{path}: the printed dicts carry no step: {how}"] if how else []
    if skipped["summary"]:
        ln, d = skipped["summary"][-1]
        notes.append(f"{path} line {ln}: the train-end summary ({', '.join(list(d)[:4])}) is "
                     "not a training log entry; skipped")
    if skipped["other"]:
        ln, d = skipped["other"][0]
        notes.append(f"{path}: {len(skipped['other'])} printed dict(s) that are no trainer log "
                     f"(no 'epoch' key) skipped (first at line {ln}: {', '.join(list(d)[:3])})")
    bad = skipped["unreadable"]
    if bad and bad[-1][0] == text.count("\n") + 1 and not text.endswith("\n"):
        notes.append(f"{path} line {bad[-1][0]}: last line is cut off; skipped")
        bad = bad[:-1]
    if bad:
        notes.append(f"{path}: {len(bad)} line(s) that look like printed dicts are no Python "
                     f"literal and were skipped (first at line {bad[0][0]}: {bad[0][1][:60]!r})")
    log = log_from_history(history, str(path), config=config, path=path, lines=lines)
    log.format = "trl-console"
    log.warnings[:0] = warnings + notes
    return log
