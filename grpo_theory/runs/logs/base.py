"""The common :class:`TrainingLog` object every reader returns.

A training log is a set of *metrics*, each an increasing sequence of optimizer
steps with one value per step.  Metrics are stored separately because real logs
are sparse (validation every ten steps, evaluation entries interleaved with
training entries): a metric's steps are exactly the steps at which it was logged.

Units: steps are optimizer steps as written in the file (TRL ``global_step``,
verl ``step``); rewards in the log's own units (usually the mean of a 0/1
verifier reward, i.e. a success probability).
"""

from __future__ import annotations

import csv
import math
import os
from dataclasses import dataclass, field

import numpy as np

from grpo_theory.validate import ParameterError

__all__ = ["LogFormatError", "TrainingLog", "ROLES", "records_to_metrics", "text_lines"]


class LogFormatError(ParameterError):
    """A log file that cannot be read; the message names the file and the line.

    ``str(err)`` is one line, e.g.
    ``"log file run.jsonl line 7: not valid JSON (Expecting ',' delimiter)"``.
    The CLI turns it into exit code 2 (it is a :class:`ParameterError`).
    """

    def __init__(self, path, line, problem: str, *, what: str = "log file"):
        self.path = os.fspath(path) if path is not None else "<log>"
        self.line = line
        where = f"{what} {self.path}" + (f" line {line}" if line is not None else "")
        ValueError.__init__(self, f"{where}: {problem}")
        self.name = what
        self.value = self.path
        self.allowed = problem


#: metrics a preference-optimization trainer (TRL's DPO/IPO/ORPO...) logs: the implicit rewards
#: of the chosen and the rejected answer, not a reward a GRPO run is trained on
PREFERENCE_KEYS = ("rewards/chosen", "rewards/rejected", "rewards/margins")


class NoRewardMetric(ParameterError):
    """A log with no metric that plays the reward (an SFT or evaluation-only log, a preference
    (DPO) log, or a reward logged under a name of its own); one line naming the file and its
    metrics.  ``looks_like`` says which kind of log it seems to be."""

    def __init__(self, log):
        avail = ", ".join(log.names[:40]) + (" ..." if len(log.names) > 40 else "")
        pref = [n for n in log.names if n.endswith(PREFERENCE_KEYS)]
        self.looks_like = ("a preference (DPO) training log" if pref
                           else "an SFT or evaluation-only log")
        why = (f" ({', '.join(pref[:3])}: the implicit rewards of the chosen and the rejected "
               "answers, not a GRPO reward)" if pref else "")
        ValueError.__init__(self, f"{log.source}: no reward metric among its metrics ({avail}); "
                                  f"{self.looks_like}?{why} If one of them is the "
                                  "reward, give --metric NAME")
        self.name, self.value, self.allowed = "metric", None, "given with --metric"


# Canonical roles -> candidate metric names, most specific first.  A reader
# does not rename metrics; TrainingLog.role() finds the metric playing a role.
ROLES: dict[str, tuple[str, ...]] = {
    "reward": ("reward", "critic/score/mean", "train/reward", "critic/rewards/mean",
               "rewards/mean", "reward_mean", "score",
               "mean_reward"),        # the ensemble mean of `grpo-theory simulate --out`
    "reward_std": ("reward_std", "train/reward_std", "critic/score/std"),
    "zero_var_frac": ("frac_reward_zero_std", "train/frac_reward_zero_std", "zero_var_frac",
                      "critic/zero_var_frac", "zero_std_frac"),
    "entropy": ("entropy", "train/entropy", "actor/entropy", "actor/entropy_loss",
                "train/train_entropy", "train/token_entropy"),
    "kl": ("kl", "train/kl", "actor/kl_loss", "critic/kl", "kl_ref", "kl_divergence"),
    "clip_frac": ("clip_ratio/region_mean", "train/clip_ratio/region_mean", "clip_ratio",
                  "actor/pg_clipfrac"),
    "policy_lag_kl": ("actor/ppo_kl",),
    "grad_norm": ("grad_norm", "train/grad_norm", "actor/grad_norm", "train/train_norm"),
    "response_length": ("completions/mean_length", "train/completions/mean_length",
                        "response_length/mean", "completion_length"),
    "truncation_frac": ("completions/clipped_ratio", "train/completions/clipped_ratio",
                        "response_length/clip_ratio"),
    "val_reward": ("eval_reward", "eval/reward", "val_reward", "heldout_reward"),
}
_VAL_PREFIXES = ("val-core/", "val/", "eval_", "eval/", "test/")
_VAL_WORDS = ("score", "reward", "acc", "pass")


@dataclass
class TrainingLog:
    """Metrics of one training run, read from a file or converted from a simulation.

    Attributes
    ----------
    metrics : dict name -> (steps, values), both 1-D float arrays, steps strictly
        increasing, values possibly NaN (a NaN that was in the file).
    source : file the log was read from (or a description).
    format : reader that produced it (``"trl"``, ``"verl"``, ``"verl-jsonl"``,
        ``"wandb"``, ``"csv"``, ``"jsonl"``, ``"simulation"``).
    run : run name for multi-run files, else ``None``; ``runs`` lists all runs.
    config : hyperparameters found in the file (verl launch script, TRL state).
    warnings : what the reader tolerated (duplicated steps, truncated lines, text dropped
        from a numeric column, ...).
    default_metric : the reward metric for this format.
    text_columns : columns that hold text only (name -> (line, first value)): not metrics.
    """

    metrics: dict
    source: str = "<log>"
    format: str = "unknown"
    run: str | None = None
    runs: list = field(default_factory=list)
    config: dict = field(default_factory=dict)
    warnings: list = field(default_factory=list)
    default_metric: str | None = None
    text_columns: dict = field(default_factory=dict)

    # -- access ------------------------------------------------------------------
    @property
    def names(self) -> list[str]:
        return sorted(self.metrics)

    def has(self, name: str) -> bool:
        if name not in self.metrics:
            return False
        return bool(np.any(np.isfinite(self.metrics[name][1])))

    def series(self, name: str, *, dropna: bool = True):
        """``(steps, values)`` of a metric; NaN entries dropped unless ``dropna=False``.

        Raises :class:`ParameterError` naming the available metrics if absent.
        """
        if name not in self.metrics:
            self._refuse_text(name)
            avail = ", ".join(self.names[:40]) + (" ..." if len(self.names) > 40 else "")
            raise ParameterError("metric", name, f"a metric in {self.source} ({avail})")
        steps, values = self.metrics[name]
        if dropna:
            ok = np.isfinite(values)
            return steps[ok], values[ok]
        return steps, values

    def role(self, role: str) -> str | None:
        """Name of the metric that plays ``role`` (see :data:`ROLES`), or ``None``."""
        if role == "reward" and self.default_metric and self.has(self.default_metric):
            return self.default_metric
        for cand in ROLES.get(role, ()):
            if self.has(cand):
                return cand
        if role == "val_reward":
            hits = [n for n in self.names
                    if n.startswith(_VAL_PREFIXES) and any(w in n.lower() for w in _VAL_WORDS)
                    and self.has(n)]
            if hits:
                return hits[0]
        return None

    def reward_metric(self, metric: str | None = None) -> str:
        """The reward metric: ``metric`` if given (must exist), else the format default."""
        if metric is not None:
            if not self.has(metric):
                self.series(metric)  # raises with the list of metrics
                raise ParameterError("metric", metric,
                                     f"a metric with finite values in {self.source}")
            return metric
        name = self.role("reward")
        if name is None:
            for cand in (self.default_metric,) + ROLES["reward"]:
                if cand:
                    self._refuse_text(cand)
            raise NoRewardMetric(self)
        return name

    def _refuse_text(self, name: str) -> None:
        """A column that holds text only is named with its first value, not called absent."""
        if name in self.text_columns:
            line, first = self.text_columns[name]
            raise LogFormatError(self.source, line if isinstance(line, int) else None,
                                 f"column {name!r} holds text, not numbers (first value "
                                 f"{first!r}" + ("" if isinstance(line, int) or line is None
                                                 else f", {line}") + ")")

    def to_dict(self) -> dict:
        """JSON-ready summary (no arrays)."""
        return {"source": self.source, "format": self.format, "run": self.run,
                "runs": list(self.runs), "n_metrics": len(self.metrics),
                "metrics": self.names, "config": self.config, "warnings": list(self.warnings)}


def _to_float(value):
    """A float for numbers and numeric strings, ``None`` for anything else."""
    if value is None or isinstance(value, bool):
        return None if value is None else float(value)
    if isinstance(value, (int, float, np.integer, np.floating)):
        return float(value)
    if isinstance(value, str):
        s = value.strip()
        if s == "":
            return None
        try:
            return float(s)
        except ValueError:
            return math.nan if s.lower() in ("none", "null", "na", "n/a") else None
    return None


def _is_text(value) -> bool:
    """A non-empty string that is not a number nor a missing-value word ("nan", "none", ...)."""
    return isinstance(value, str) and value.strip() != "" and _to_float(value) is None


def _where(line) -> str:
    return f"line {line}" if isinstance(line, int) else str(line)


def _steps_text(steps) -> str:
    return ", ".join(str(int(s)) if float(s).is_integer() else str(s) for s in steps)


def _same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def records_to_metrics(records, *, warnings: list, source: str = "<log>",
                       text_columns: dict | None = None):
    """Turn ``[(step, line, {name: value})]`` into the metrics dict of :class:`TrainingLog`.

    A step logged more than once with different values (the same value again is no conflict:
    TRL's train-end entry repeats the epoch) follows one rule, per metric, reported in
    ``warnings``: where the metric's steps never go back and every step (but a last one still
    being written) is logged more than once -- one row per micro-batch or prompt group -- a
    step's value is the mean of its rows (NaN rows left out); otherwise -- the steps go back, as
    a resumed or restarted run logs them again, or a step repeats here and there -- the *last*
    value logged is kept.  Text where a number belongs is never
    dropped silently: a column with numbers *and* text keeps its numbers, and one warning
    says how many rows were dropped and where the first is (``line`` is the file's line
    number, or a description such as ``"log_history entry 7"``); a column with text only
    (run names, tags) is not a metric, and is recorded in ``text_columns`` (name ->
    ``(line, first value)``) so that asking for it as a metric can say why it is not one.
    """
    rows: dict[str, list] = {}           # name -> [(step, value, record index)], file order
    text: dict[str, list] = {}           # name -> [count, first line, first value]
    lines = []
    for idx, (step, line, values) in enumerate(records):
        lines.append(line)
        for name, raw in values.items():
            v = _to_float(raw)
            if v is None:
                if _is_text(raw):
                    t = text.setdefault(name, [0, line, raw.strip()])
                    t[0] += 1
                continue
            rows.setdefault(name, []).append((step, v, idx))
    metrics = {}
    last_kept: set = set()               # steps whose conflicting values were decided by "last"
    back_at = None                       # first record at which a metric's steps go back
    averaged: dict[str, tuple] = {}      # name -> (fewest, most rows a step)
    for name, seq in rows.items():
        by_step: dict[float, list] = {}
        for step, v, _ in seq:
            by_step.setdefault(step, []).append(v)
        steps = sorted(by_step)
        back = next((b[2] for a, b in zip(seq, seq[1:]) if b[0] < a[0]), None)
        conflict = [st for st in steps if any(not _same(v, by_step[st][0]) for v in by_step[st])]
        grouped = back is None and all(len(by_step[st]) > 1 for st in steps[:-1])
        if grouped:
            vals = []
            for st in steps:
                finite = [v for v in by_step[st] if math.isfinite(v)]
                vals.append(math.fsum(finite) / len(finite) if finite else math.nan)
            if conflict:
                counts = [len(by_step[st]) for st in steps]
                averaged[name] = (min(counts), max(counts))
        else:
            vals = [by_step[st][-1] for st in steps]
            last_kept.update(conflict)
            if conflict and back is not None and (back_at is None or back < back_at):
                back_at = back
        metrics[name] = (np.array(steps, dtype=float), np.array(vals, dtype=float))
    if averaged:
        lo = min(c[0] for c in averaged.values())
        hi = max(c[1] for c in averaged.values())
        names = sorted(averaged)
        per_step = f"{lo}" if lo == hi else f"{lo}-{hi}"
        warnings.append(f"{source}: every step is logged several times, in step order ({per_step} "
                        "rows a step: one row per micro-batch or prompt group?); a step's value "
                        f"is the mean of its rows ({', '.join(names[:5])}"
                        f"{' ...' if len(names) > 5 else ''})")
    if last_kept:
        why = ("" if back_at is None else
               f"; the steps go back at {_where(lines[back_at])} (a resumed or restarted run "
               "logs them again)")
        warnings.append(f"{source}: {len(last_kept)} duplicated step(s) (e.g. "
                        f"{_steps_text(sorted(last_kept)[:5])}){why}: kept the last value "
                        "logged for each")
    for name, (count, line, first) in text.items():
        if name in metrics:
            n = count + len(rows[name])
            warnings.append(f"{source}: {name}: {count} of {n} values are text, not numbers, and "
                            f"were dropped (first at {_where(line)}: {first!r})")
        elif text_columns is not None:
            text_columns[name] = (line, first)
    return metrics


def text_lines(text: str) -> list[tuple[int, str]]:
    """``(lineno, line)`` for each line of a text log.

    Lines end at ``\n`` (a ``\r\n`` ending is one line end); a bare ``\r`` inside a line (a
    tqdm progress bar redrawn in place, as every TRL/tqdm console log has) also ends a line,
    and what follows it is a line of its own that keeps the number of the file's line it sits
    on (``grep -n``'s and an editor's numbering), so messages name the line a user can find."""
    out = []
    for lineno, line in enumerate(text.split("\n"), start=1):
        if line.endswith("\r"):
            line = line[:-1]
        out.extend((lineno, part) for part in line.split("\r"))
    return out


def csv_rows(path, text: str | None = None) -> tuple[list[list[str]], list[int]]:
    """The parsed rows of a CSV file (``text`` if given, else the file; a UTF-8 BOM is
    dropped) and the file line each row starts on.  A bare ``\r`` ends a row (see
    :func:`text_lines`); whatever the csv module refuses is a :class:`LogFormatError` naming
    the line, as is an empty file (at line 1)."""
    if text is None:
        with open(path, encoding="utf-8-sig", errors="replace", newline="") as fh:
            text = fh.read()
    lines = text_lines(text)
    reader = csv.reader(part + "\n" for _, part in lines)
    rows: list[list[str]] = []
    starts: list[int] = []
    while True:
        start = reader.line_num
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            lineno = lines[min(max(reader.line_num, 1), len(lines)) - 1][0]
            raise LogFormatError(path, lineno, f"not readable as CSV ({exc})") from None
        rows.append(row)
        starts.append(lines[start][0])
    if not rows or not any(c.strip() for row in rows for c in row):
        raise LogFormatError(path, 1, "empty CSV file")
    return rows, starts


def iter_csv_rows(path, rows, lines, step_col: int, warnings: list, step_name: str = "step"):
    """Yield ``(lineno, step, row)`` for the data rows of a parsed CSV (``rows[0]`` is the
    header, ``lines`` the file line of each row, as :func:`csv_rows` returns them).

    Blank rows are skipped; a short *last* row (a file cut off while being written) is
    skipped with a note in ``warnings``; any other row whose width differs from the
    header's, or whose step is not a number, raises :class:`LogFormatError` naming the line.
    """
    ncol = len(rows[0])
    last = max((i for i, row in enumerate(rows) if any(c.strip() for c in row)), default=0)
    for idx, row in enumerate(rows[1:], start=1):
        lineno = lines[idx]
        if not any(c.strip() for c in row):
            continue
        if len(row) != ncol:
            if idx == last and len(row) < ncol:
                warnings.append(f"{path} line {lineno}: last row is cut off "
                                f"({len(row)} of {ncol} cells); skipped")
                continue
            raise LogFormatError(path, lineno, f"{len(row)} cells, the header has {ncol}")
        try:
            step = float(row[step_col])
        except ValueError:
            raise LogFormatError(path, lineno, f"{step_name} {row[step_col]!r} is not a number") from None
        yield lineno, step, row


def finite_number(x):
    """``float(x)`` where it is a finite number, ``None`` for none, text or a non-finite value."""
    if x is None:
        return None
    try:
        x = float(x)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def step_number(x):
    """A logged step for output: an int where it is whole (JSON ``7``, not ``7.0``), a float
    otherwise (a fractional epoch), ``None`` for none or a non-finite value."""
    x = finite_number(x)
    return int(x) if x is not None and x.is_integer() else x


def flatten(d: dict, sep: str = "/", prefix: str = "") -> dict:
    """Nested dicts to one level: ``{"a": {"b": 1}}`` -> ``{"a<sep>b": 1}``."""
    out = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flatten(v, sep, key + sep))
        else:
            out[key] = v
    return out
