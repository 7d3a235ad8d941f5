"""Reader for Weights & Biases CSV exports.

An export has a ``Step`` column and one column per ``<run> - <metric>``, with
optional ``<run> - <metric>__MIN`` / ``__MAX`` companions (the min/max over the
smoothing bucket, read as ``<metric>__MIN``); several runs can share one file, and
rows are sparse (a cell is empty where that run did not log that metric).
Columns without the `` - `` separator belong to an unnamed run.
"""

from __future__ import annotations


from grpo_theory.validate import ParameterError
from grpo_theory.runs.logs.base import LogFormatError, TrainingLog, csv_rows, iter_csv_rows, records_to_metrics

__all__ = ["read_wandb_csv", "is_wandb_header"]

_STEP_NAMES = ("Step", "step", "_step", "global_step", "trainer/global_step", "train/global_step")


def is_wandb_header(header) -> bool:
    return any(h in _STEP_NAMES for h in header) and any(" - " in h for h in header)


def _split(col: str):
    if " - " in col:
        run, metric = col.split(" - ", 1)
        return run.strip(), metric.strip()
    return "", col.strip()


def read_wandb_csv(path, text: str | None = None, run: str | None = None) -> TrainingLog:
    """Read one run from a W&B CSV export (``run`` is required when there are several)."""
    rows, lines = csv_rows(path, text)
    header = rows[0]
    step_col = next((i for i, h in enumerate(header) if h.strip() in _STEP_NAMES), None)
    if step_col is None:
        raise LogFormatError(path, 1, "no 'Step' column in the W&B CSV header")
    cols = {}
    runs: list[str] = []
    for i, h in enumerate(header):
        if i == step_col or not h.strip():
            continue
        r, metric = _split(h)
        cols[i] = (r, metric)
        if r not in runs:
            runs.append(r)
    warnings: list[str] = []
    if run is None:
        chosen = runs[0] if runs else ""
        if len(runs) > 1:
            warnings.append(f"{path}: holds {len(runs)} runs ({', '.join(runs)}); using "
                            f"{chosen!r} (choose with --run)")
    else:
        if run not in runs:
            raise ParameterError("run", run, "one of " + ", ".join(repr(r) for r in runs))
        chosen = run
    records = []
    for lineno, step, row in iter_csv_rows(path, rows, lines, step_col, warnings, "Step"):
        values = {}
        for i, (r, metric) in cols.items():
            if r != chosen:
                continue
            cell = row[i].strip()
            if cell == "":
                continue
            try:
                values[metric] = float(cell)
            except ValueError:
                if cell.lower() in ("nan", "none", "null"):
                    values[metric] = float("nan")
                    continue
                raise LogFormatError(path, lineno, f"cell {header[i]!r} = {cell!r} is not a number") from None
        if values:
            records.append((step, lineno, values))
    if not records:
        raise LogFormatError(path, None, f"no value for run {chosen!r}")
    metrics = records_to_metrics(records, warnings=warnings, source=str(path))
    return TrainingLog(metrics=metrics, source=str(path), format="wandb", run=chosen or None,
                       runs=runs, warnings=warnings, default_metric=None)
