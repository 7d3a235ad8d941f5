"""Readers for generic CSV and JSONL logs with a ``step`` column, and for ``step:N | key=value``
text logs (:func:`read_step_kv`).

The step column is found by name (``step``, ``Step``, ``global_step``, ``_step``,
``iteration``, ``iter``) or given explicitly; ``rename`` maps file column names to
the names used downstream (e.g. ``{"acc": "reward"}``).
"""

from __future__ import annotations

import re

from grpo_theory.runs.logs.base import LogFormatError, TrainingLog, flatten, csv_rows, iter_csv_rows, records_to_metrics
from grpo_theory.validate import ParameterError
from grpo_theory.runs.logs.verl import iter_jsonl

__all__ = ["read_csv", "read_jsonl", "read_step_kv", "STEP_KV_LINE", "STEP_NAMES"]

STEP_NAMES = ("step", "Step", "global_step", "_step", "iteration", "iter", "trainer/global_step")


def _find_step(keys, step_column, path, lineno):
    if step_column is not None:
        if step_column not in keys:
            raise LogFormatError(path, lineno, f"step column {step_column!r} not found "
                                               f"(columns: {', '.join(list(keys)[:20])})")
        return step_column
    for name in STEP_NAMES:
        if name in keys:
            return name
    shown = ", ".join(list(keys)[:8]) + (" ..." if len(keys) > 8 else "")
    raise LogFormatError(path, lineno, f"no step column among {shown} (expected one of "
                                       f"{', '.join(STEP_NAMES)}; or give --step-column)")


#: a "long" (tidy) CSV has one row per (step, metric): these name the metric column, the value
#: column and, optionally, the run column (W&B and pandas exports: run_name,metric,step,value)
LONG_NAME = ("metric", "key", "tag", "name")
LONG_RUN = ("run_name", "run", "run_id")


def read_csv(path, text: str | None = None, *, step_column: str | None = None,
             rename: dict | None = None, run: str | None = None) -> TrainingLog:
    """Read a CSV file whose rows are steps; empty cells are missing values.

    A long CSV (one row per step and metric, columns ``metric`` and ``value``, e.g.
    ``run_name,metric,step,value``) is read too; with a run column, ``run`` chooses the run
    (default: the first, with a warning when there are several)."""
    rows, lines = csv_rows(path, text)
    header = [h.strip() for h in rows[0]]
    rename = dict(rename or {})
    step_name = _find_step(header, step_column, path, 1)
    step_col = header.index(step_name)
    warnings: list[str] = []
    name_col = next((header.index(c) for c in LONG_NAME if c in header), None)
    if "value" in header and name_col is not None:
        return _read_long_csv(path, rows, lines, header, step_col, step_name, name_col, rename,
                              run, warnings)
    if run is not None:
        raise ParameterError("run", run, "omitted: this CSV holds a single run")
    records = []
    for lineno, step, row in iter_csv_rows(path, rows, lines, step_col, warnings, step_name):
        values = {}
        for i, h in enumerate(header):
            if i == step_col or not h:
                continue
            cell = row[i].strip()
            if cell != "":
                values[rename.get(h, h)] = cell     # numbers parsed, text counted, by the caller
        records.append((step, lineno, values))
    if not records:
        raise LogFormatError(path, None, "no data rows")
    text_columns: dict = {}
    metrics = records_to_metrics(records, warnings=warnings, source=str(path),
                                 text_columns=text_columns)
    return TrainingLog(metrics=metrics, source=str(path), format="csv", warnings=warnings,
                       default_metric="reward" if "reward" in metrics else None,
                       text_columns=text_columns)


def _read_long_csv(path, rows, lines, header, step_col, step_name, name_col, rename, run, warnings):
    value_col = header.index("value")
    run_col = next((header.index(c) for c in LONG_RUN if c in header), None)
    runs = [] if run_col is None else list(dict.fromkeys(r[run_col].strip() for r in rows[1:]
                                                          if len(r) > run_col and r[run_col].strip()))
    if run is not None and run not in runs:
        raise ParameterError("run", run, "one of " + ", ".join(repr(r) for r in runs) if runs
                             else "omitted: this CSV has no run column")
    chosen = run if run is not None else (runs[0] if runs else None)
    if run is None and len(runs) > 1:
        warnings.append(f"{path}: holds {len(runs)} runs ({', '.join(runs)}); using {chosen!r} "
                        "(choose with --run)")
    records = []
    for lineno, step, row in iter_csv_rows(path, rows, lines, step_col, warnings, step_name):
        if chosen is not None and row[run_col].strip() != chosen:
            continue
        name, cell = row[name_col].strip(), row[value_col].strip()
        if name and cell != "":
            records.append((step, lineno, {rename.get(name, name): cell}))
    if not records:
        raise LogFormatError(path, None, "no data rows")
    text_columns: dict = {}
    metrics = records_to_metrics(records, warnings=warnings, source=str(path),
                                 text_columns=text_columns)
    return TrainingLog(metrics=metrics, source=str(path), format="csv", run=chosen, runs=runs,
                       warnings=warnings, default_metric="reward" if "reward" in metrics else None,
                       text_columns=text_columns)


def read_jsonl(path, text: str | None = None, *, step_column: str | None = None,
               rename: dict | None = None) -> TrainingLog:
    """Read a JSONL file of flat objects, one per step (nested dicts are flattened with '/'); a JSON
    array of such objects is the same data and is read the same way."""
    if text is None:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    rename = dict(rename or {})
    warnings: list[str] = []
    records = []
    for lineno, obj in iter_jsonl(path, text, warnings):
        flat = flatten(obj)
        key = _find_step(flat, step_column, path, lineno)
        step = flat.pop(key)
        if not isinstance(step, (int, float)) or isinstance(step, bool):
            try:
                step = float(step)
            except (TypeError, ValueError):
                raise LogFormatError(path, lineno, f"step {step!r} is not a number") from None
        records.append((float(step), lineno, {rename.get(k, k): v for k, v in flat.items()}))
    if not records:
        raise LogFormatError(path, None, "an empty JSON array" if text.strip().startswith("[")
                             else "no JSON object found")
    text_columns: dict = {}
    metrics = records_to_metrics(records, warnings=warnings, source=str(path),
                                 text_columns=text_columns)
    return TrainingLog(metrics=metrics, source=str(path), format="jsonl", warnings=warnings,
                       default_metric="reward" if "reward" in metrics else None,
                       text_columns=text_columns)




#: a ``step:N | key=value | key=value`` line (a custom logger's, e.g. Monarch's): ``step:N`` (or
#: ``step=N``) at a line start or behind a prefix, then entries ``key=value`` split by one
#: separator, ``|``, ``;``, ``,`` or a tab (verl's ``step:N - key:value`` has its own reader)
STEP_KV_LINE = re.compile(r"(?:^|[\s)\]])step[:=]\s*(\d+)\s*([|;,\t])\s*([^\s=|;,\t]+=.*)$")


def read_step_kv(path, text: str) -> TrainingLog:
    """Read a log of ``step:N | key=value | ...`` lines (:data:`STEP_KV_LINE`); every other line
    (start-up text, progress bars) is ignored.  An entry that is not ``key=number`` raises
    :class:`LogFormatError` naming the line; a cut-off last line loses its incomplete last entry
    (with a warning)."""
    from grpo_theory.runs.logs.base import _to_float, text_lines

    lines = text_lines(text)
    ends_with_newline = text.endswith("\n")
    if ends_with_newline:
        lines = lines[:-1]
    warnings: list[str] = []
    records = []
    last_idx = len(lines) - 1
    for idx, (lineno, line) in enumerate(lines):
        m = STEP_KV_LINE.search(line)
        if not m:
            continue
        step, sep = float(m.group(1)), m.group(2)
        pairs = m.group(3).rstrip().split(sep)
        values = {}
        for j, pair in enumerate(pairs):
            if idx == last_idx and not ends_with_newline and j == len(pairs) - 1:
                warnings.append(f"{path} line {lineno}: last line is cut off; dropped its "
                                f"incomplete last entry {pair.strip()!r}")
                break
            key, eq, raw = pair.partition("=")
            key = key.strip()
            v = _to_float(raw) if eq and key else None
            if v is None:
                raise LogFormatError(path, lineno, f"step {int(step)}: entry {pair.strip()!r} is "
                                                   "not of the form key=number")
            values[key] = v
        records.append((step, lineno, values))
    if not records:
        raise LogFormatError(path, None, "no line of the form 'step:N | key=value | ...' found")
    metrics = records_to_metrics(records, warnings=warnings, source=str(path))
    return TrainingLog(metrics=metrics, source=str(path), format="step-kv", warnings=warnings)
