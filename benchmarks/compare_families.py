"""Run ``compare`` on every family of the real-run benchmark and print the results.

    python benchmarks/compare_families.py [--root benchmarks/real_runs] [--figures docs/figures]

A family is the set of runs whose ``run.json`` has the same ``family.id``; ``family.varies``
names the knob and ``family.value`` its value.  The knob maps onto ``compare --by``
(learning rate, group size, model size; ``ppo_epochs``/``num_iterations`` onto the refresh
interval k = epochs x train_batch_size / mini_batch_size, with the logged (rollout) steps
converted to optimizer steps, k per rollout step).  The reward metric is ``run.json``'s
``reward.key``.  Families whose knob is none of these, members whose log has no reader here
or fewer than ``MIN_POINTS`` reward points, are listed with the reason instead of a result.

``csv_wide`` is read by ``read_log``'s CSV reader with its first column as the step. Three
benchmark formats that :func:`grpo_theory.runs.logs.read_log` does not read are converted
here, value for value: ``wandb_csv_long`` (``run_name,metric,step,value`` rows), ``json_lists``
(a JSON list of dicts with a step key) and ``tfevents`` (TensorBoard event files: TFRecord
framing, ``Event.step`` and the scalar ``Summary.Value.simple_value`` of the metric's tag; CRCs
not checked).
"""

from __future__ import annotations

import argparse
import csv
import json
import struct
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

from grpo_theory.runs.compare import MIN_POINTS, compare
from grpo_theory.runs.logs import TrainingLog, read_log
from grpo_theory.validate import ParameterError

READ_LOG_FORMATS = {"trl_trainer_state", "verl_console", "verl_jsonl", "wandb_csv", "csv", "jsonl"}


def _knob(varies: str) -> str | None:
    v = varies.lower()
    if v.startswith("learning_rate"):
        return "learning_rate"
    if v.startswith("group_size"):
        return "group_size"
    if v.startswith(("model_size", "model_params")):
        return "model_size"
    if "ppo_epochs" in v or "num_iterations" in v or v.startswith("refresh_interval"):
        return "refresh_interval"
    return None


def _long_csv(path: Path, metric: str) -> TrainingLog:
    steps, values = [], []
    with open(path, newline="") as fh:
        for row in csv.DictReader(fh):
            if row["metric"] == metric and row["value"] not in ("", "nan"):
                steps.append(float(row["step"]))
                values.append(float(row["value"]))
    order = np.argsort(steps, kind="stable")
    return TrainingLog(metrics={metric: (np.asarray(steps)[order], np.asarray(values)[order])},
                       source=str(path), format="wandb_csv_long", default_metric=metric)


def _json_list(path: Path, metric: str) -> TrainingLog:
    rows = json.loads(path.read_text())
    key = next(k for k in ("step", "eval_step", "global_step") if k in rows[0])
    pairs = sorted((float(r[key]), float(r[metric])) for r in rows if r.get(metric) is not None)
    steps, values = (np.array(a) for a in zip(*pairs))
    return TrainingLog(metrics={metric: (steps, values)}, source=str(path), format="json_lists",
                       default_metric=metric)


def _varint(buf: bytes, i: int):
    value = shift = 0
    while True:
        byte = buf[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, i


def _proto_fields(buf: bytes):
    """(field number, payload) of a protobuf message (varints as ints, other types as bytes)."""
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        wire = key & 7
        if wire == 0:
            value, i = _varint(buf, i)
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            value, i = buf[i:i + size], i + size
        elif wire == 2:
            size, i = _varint(buf, i)
            value, i = buf[i:i + size], i + size
        else:
            raise ParameterError("tfevents wire type", wire, "0, 1, 2 or 5")
        yield key >> 3, value


def _tfevents(path: Path, metric: str) -> TrainingLog:
    data = path.read_bytes()
    points, i = {}, 0
    while i + 12 <= len(data):
        (size,) = struct.unpack("<Q", data[i:i + 8])
        record, i = data[i + 12:i + 12 + size], i + 12 + size + 4
        fields = list(_proto_fields(record))
        step = next((v for f, v in fields if f == 2), None)          # Event.step
        for summary in (v for f, v in fields if f == 5):             # Event.summary
            for value in (v for f, v in _proto_fields(summary) if f == 1):
                parts = dict(_proto_fields(value))                   # tag = 1, simple_value = 2
                if parts.get(1, b"").decode() == metric and isinstance(parts.get(2), bytes):
                    points[float(step)] = struct.unpack("<f", parts[2])[0]
    steps = np.array(sorted(points))
    return TrainingLog(metrics={metric: (steps, np.array([points[s] for s in steps]))},
                       source=str(path), format="tfevents", default_metric=metric)


def load(run_dir: Path, info: dict) -> TrainingLog:
    path = run_dir / info["files"]["log"]
    metric = info["reward"]["key"]
    fmt = info["format"]
    if fmt == "wandb_csv_long":
        return _long_csv(path, metric)
    if fmt == "json_lists":
        return _json_list(path, metric)
    if fmt == "tfevents":
        return _tfevents(path, metric)
    if fmt == "csv_wide":  # one row per step, the step in the first column
        with open(path, newline="") as fh:
            step_column = next(csv.reader(fh))[0]
        return read_log(path, "csv", step_column=step_column)
    if fmt in READ_LOG_FORMATS:
        return read_log(path)
    raise ParameterError("format", fmt, "a log format with a reader (no reader for it here)")


def refresh_interval(info: dict) -> int | None:
    hp = info["hyperparameters"]
    epochs = hp.get("ppo_epochs") or hp.get("num_iterations")
    batch, mini = hp.get("train_batch_size"), hp.get("ppo_mini_batch_size")
    if epochs is None or batch is None or mini is None:
        return None
    return int(epochs * batch // mini)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", default="benchmarks/real_runs")
    parser.add_argument("--figures", default="docs/figures")
    args = parser.parse_args(argv)
    root = Path(args.root)
    manifest = json.loads((root / "manifest.json").read_text())
    families = defaultdict(list)
    for entry in manifest["runs"]:
        info = json.loads((root / entry["run_json"]).read_text())
        if info.get("family"):
            families[info["family"]["id"]].append((root / entry["run_json"]).parent)
    Path(args.figures).mkdir(parents=True, exist_ok=True)
    for fam_id in sorted(families):
        infos = [(d, json.loads((d / "run.json").read_text())) for d in families[fam_id]]
        varies = infos[0][1]["family"]["varies"]
        by = _knob(varies)
        print(f"## {fam_id} ({len(infos)} runs; varies: {varies})")
        if by is None:
            print(f"declined: the knob '{varies}' is not one compare answers "
                  "(group_size, model_size, learning_rate, refresh_interval)\n")
            continue
        logs, values = [], []
        for d, info in infos:
            try:
                log = load(d, info)
            except ParameterError as exc:
                print(f"  excluded {d.name}: {exc}")
                continue
            metric = info["reward"]["key"]
            n = log.series(metric)[0].size if log.has(metric) else 0
            if n < MIN_POINTS:
                print(f"  excluded {d.name}: {n} points of {metric} (need {MIN_POINTS})")
                continue
            value = info["family"]["value"]
            if by == "refresh_interval":
                value = refresh_interval(info)
                if value is None:
                    print(f"  excluded {d.name}: epochs or batch sizes not recorded")
                    continue
                steps, vals = log.series(metric)
                log = TrainingLog(metrics={metric: (steps * value, vals)}, source=log.source,
                                  format=log.format, default_metric=metric)
            logs.append(log)
            values.append(value)
        if len(logs) < 2:
            print(f"declined: {len(logs)} usable run(s) (need 2)\n")
            continue
        scale = str(infos[0][1]["hyperparameters"].get("scale_rewards")).lower()
        norm = "mean" if scale in ("none", "false", "no") else "std"
        fig = Path(args.figures) / f"compare_{fam_id}.png"
        try:
            res = compare(logs, by=by, values=values, metric=infos[0][1]["reward"]["key"],
                          normalization=norm, plot=str(fig))
        except ParameterError as exc:
            print(f"declined: {exc}\n")
            continue
        print(res)
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
