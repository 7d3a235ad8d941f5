"""Readers for generic CSV and JSONL logs with a ``step`` column.

The step column is found by name (``step``, ``Step``, ``global_step``, ``_step``,
``iteration``, ``iter``) or given explicitly; ``rename`` maps file column names to
the names used downstream (e.g. ``{"acc": "reward"}``).
"""

from __future__ import annotations

import csv
import io

from grpo_theory.runs.logs.base import LogFormatError, TrainingLog, flatten, iter_csv_rows, records_to_metrics
from grpo_theory.runs.logs.verl import iter_jsonl

__all__ = ["read_csv", "read_jsonl", "STEP_NAMES"]

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
    raise LogFormatError(path, lineno, "no step column (expected one of "
                                       f"{', '.join(STEP_NAMES)}; or give --step-column)")


def read_csv(path, text: str | None = None, *, step_column: str | None = None,
             rename: dict | None = None) -> TrainingLog:
    """Read a CSV file whose rows are steps; empty cells are missing values."""
    if text is None:
        with open(path, encoding="utf-8-sig", errors="replace", newline="") as fh:
            text = fh.read()
    rows = list(csv.reader(io.StringIO(text)))
    if not rows:
        raise LogFormatError(path, 1, "empty CSV file")
    header = [h.strip() for h in rows[0]]
    rename = dict(rename or {})
    step_name = _find_step(header, step_column, path, 1)
    step_col = header.index(step_name)
    warnings: list[str] = []
    records = []
    for lineno, step, row in iter_csv_rows(path, rows, step_col, warnings, step_name):
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


def read_jsonl(path, text: str | None = None, *, step_column: str | None = None,
               rename: dict | None = None) -> TrainingLog:
    """Read a JSONL file of flat objects, one per step (nested dicts are flattened with '/')."""
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
        raise LogFormatError(path, None, "no JSON object lines found")
    text_columns: dict = {}
    metrics = records_to_metrics(records, warnings=warnings, source=str(path),
                                 text_columns=text_columns)
    return TrainingLog(metrics=metrics, source=str(path), format="jsonl", warnings=warnings,
                       default_metric="reward" if "reward" in metrics else None,
                       text_columns=text_columns)


