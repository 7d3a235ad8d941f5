"""Run ``compare`` on every family of the real-run benchmark and print the results.

    python benchmarks/compare_families.py [--root benchmarks/real_runs] [--figures docs/figures]

A family is the set of runs whose ``run.json`` has the same ``family.id``; ``family.varies``
names the knob and ``family.value`` its value.  The knob maps onto ``compare --by``
(learning rate, group size, model size; ``ppo_epochs``/``num_iterations`` onto the refresh
interval k = epochs x train_batch_size / mini_batch_size, with the logged (rollout) steps
converted to optimizer steps, k per rollout step).  The reward metric is ``run.json``'s
``reward.key``.  Families whose knob is none of these, members whose log has no reader here
or fewer than ``MIN_POINTS`` reward points, are listed with the reason instead of a result.

Two benchmark formats that :func:`grpo_theory.runs.logs.read_log` does not read are converted
here, value for value: ``wandb_csv_long`` (``run_name,metric,step,value`` rows) and
``json_lists`` (a JSON list of dicts with a step key).
"""

from __future__ import annotations

import argparse
import csv
import json
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
    if v.startswith("model_size") or v.startswith("model_params"):
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


def load(run_dir: Path, info: dict) -> TrainingLog:
    path = run_dir / info["files"]["log"]
    metric = info["reward"]["key"]
    fmt = info["format"]
    if fmt == "wandb_csv_long":
        return _long_csv(path, metric)
    if fmt == "json_lists":
        return _json_list(path, metric)
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
