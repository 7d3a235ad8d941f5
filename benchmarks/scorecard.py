"""Scorecard of the run diagnostics and forecasts on the labelled benchmark of real runs.

Reads ``benchmarks/real_runs/manifest.json`` (relative to the repository root) and,
for every run, its ``run.json`` (format, reward key, labels).  Prints

- per detector: TP / FN / FP / TN against the labels, and abstentions (the detector
  answered n/a, or the log could not be read); labels "unknown" are not scored;
- per fit family: the median R^2 over the runs where the model applies;
- forecasts from the first 25 % and 50 % of the steps: the median ratio of the
  forecast's held-out RMSE to each baseline's, and the coverage of the 90 % interval.

Run: ``PYTHONPATH=. python benchmarks/scorecard.py [--json]``.  Thresholds are the
detectors' own (from mechanisms); nothing here is tuned to these runs.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks" / "real_runs"

#: benchmark label -> detector that answers it
LABEL_DETECTOR = {
    "collapse": "dynamical_instability",
    "divergence": "dynamical_instability",
    "oscillation": "dynamical_instability",
    "entropy_collapse": "policy_concentration",
    "entropy_explosion": "entropy_explosion",
    "reward_hacking": "reward_hacking",
    "advantage_degeneracy": "advantage_degeneracy",
}
READERS = {"trl_trainer_state": "trl", "verl_console": "verl", "verl_jsonl": "verl-jsonl",
           "tfevents": "tensorboard"}


def _series_log(series: dict, source: str):
    from grpo_theory.runs.logs import TrainingLog

    metrics = {}
    for name, pairs in series.items():
        acc = defaultdict(list)
        for s, v in pairs:
            acc[s].append(v)
        steps = np.array(sorted(acc), dtype=float)
        # repeated steps (several optimizer steps per rollout step): their mean
        metrics[name] = (steps, np.array([np.mean(acc[s]) for s in sorted(acc)], dtype=float))
    return TrainingLog(metrics=metrics, source=source, format="benchmark")


def _float(x):
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _wide_csv(path, series):
    """A CSV whose first column is the step and every other column a metric."""
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    head = rows[0]
    for row in rows[1:]:
        s = _float(row[0]) if row else None
        for name, cell in zip(head[1:], row[1:]):
            v = _float(cell)
            if s is not None and v is not None:
                series[name].append((s, v))


def load_run(run_dir: Path, meta: dict):
    """A :class:`TrainingLog` of one benchmark run; raises ``LookupError`` if no reader fits."""
    from grpo_theory.runs.logs import read_log

    fmt = meta["format"]
    log_path = run_dir / meta["files"]["log"]
    extras = [run_dir / e for e in meta["files"].get("extra") or []]
    if fmt in READERS:
        return read_log(log_path, READERS[fmt])
    series = defaultdict(list)
    if fmt == "wandb_csv_long":
        with open(log_path, newline="") as fh:
            for row in csv.DictReader(fh):
                v = _float(row["value"])
                if v is not None:
                    series[row["metric"]].append((float(row["step"]), v))
    elif fmt == "csv_wide":
        for path in [log_path, *extras]:
            _wide_csv(path, series)
    elif fmt == "json_lists":
        for rec in json.loads(log_path.read_text()):
            step = rec.get("eval_step", rec.get("step"))
            for k, v in rec.items():
                if k not in ("eval_step", "step") and _float(v) is not None:
                    series[k].append((float(step), float(v)))
        for path in extras:
            if path.suffix == ".csv":
                _wide_csv(path, series)
                continue
            values = json.loads(path.read_text())
            name = {"train_token_ent_log": "entropy", "train_loss_log": "loss"}.get(path.stem, path.stem)
            series[name] = [(float(i), float(v)) for i, v in enumerate(values) if _float(v) is not None]
    else:
        raise LookupError(f"no reader for format {fmt!r} in this checkout")
    return _series_log(series, str(log_path))


def score(runs):
    from grpo_theory.runs.diagnostics import diagnose
    from grpo_theory.runs.fitting import fit_log, forecast
    from grpo_theory.progress import progress
    from grpo_theory.validate import ParameterError

    tally = {lab: {"TP": 0, "FN": 0, "FP": 0, "TN": 0, "abstain": 0} for lab in LABEL_DETECTOR}
    r2 = defaultdict(list)
    ratios = {f: defaultdict(list) for f in (0.25, 0.5)}
    cover = {f: [0, 0] for f in (0.25, 0.5)}
    per_run = {}
    for meta in progress(runs, total=len(runs), desc="scorecard"):
        run_dir = BENCH / Path(meta["run_json"]).parent
        info = json.loads((BENCH / meta["run_json"]).read_text())
        labels = info.get("labels", {})
        key = (info.get("reward") or {}).get("key")
        try:
            log = load_run(run_dir, info)
            diag = diagnose(log, key if key in log.metrics else None).diagnostics
        except (LookupError, ParameterError, OSError) as exc:
            diag, log = None, None
            per_run[meta["id"]] = f"not read: {exc}"
        for lab, det in LABEL_DETECTOR.items():
            truth = labels.get(lab)
            if truth not in (True, False):
                continue
            flag = None if diag is None else diag[det]["flag"]
            t = tally[lab]
            if flag is None:
                t["abstain"] += 1
            else:
                t[("T" if flag == truth else "F") + ("P" if flag else "N")] += 1
        if log is None or meta.get("kind") != "grpo" or key not in log.metrics:
            continue
        steps, values = log.series(key)
        ok = np.isfinite(values)
        steps, values = steps[ok], values[ok]
        try:
            rep = fit_log(log, key)
        except ParameterError:
            continue
        if rep.applicable["fit"]:
            for m, d in rep.models.items():
                if d["r2"] is not None:
                    r2[m].append(d["r2"])
        ent = log.role("entropy")
        for f in ratios:
            try:
                fc = forecast(steps, values, f, entropy=log.series(ent) if ent else None)
            except ParameterError:
                continue
            ours = fc.holdout_rmse[fc.best]
            for b, d in fc.baselines.items():
                if d["holdout_rmse"] > 0:
                    ratios[f][b].append(ours / d["holdout_rmse"])
            cover[f][0] += round(fc.interval_coverage * fc.n_holdout)
            cover[f][1] += fc.n_holdout
    return {"detectors": tally,
            "fit_r2_median": {m: (float(np.median(v)), len(v)) for m, v in r2.items()},
            "forecast": {str(f): {"rmse_ratio_median": {b: (float(np.median(v)), len(v))
                                                        for b, v in ratios[f].items()},
                                  "interval90_coverage": (cover[f][0] / cover[f][1]
                                                          if cover[f][1] else None)}
                         for f in ratios},
            "unread": per_run}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    manifest = json.loads((BENCH / "manifest.json").read_text())
    res = score(manifest["runs"])
    if args.json:
        print(json.dumps(res, indent=2))
        return 0
    print(f"benchmark: {len(manifest['runs'])} runs ({BENCH})")
    print(f"{'label':<22} {'detector':<22} {'TP':>3} {'FN':>3} {'FP':>3} {'TN':>3} {'n/a':>4}")
    for lab, t in res["detectors"].items():
        print(f"{lab:<22} {LABEL_DETECTOR[lab]:<22} {t['TP']:>3} {t['FN']:>3} {t['FP']:>3} "
              f"{t['TN']:>3} {t['abstain']:>4}")
    print("fit: median R^2 where the model applies (runs)")
    for m, (v, n) in res["fit_r2_median"].items():
        print(f"  {m:<16} {v:.3f} ({n})")
    for f, d in res["forecast"].items():
        cov = d["interval90_coverage"]
        print(f"forecast from the first {float(f):.0%}: median RMSE ratio ours / baseline (runs); "
              f"90 % interval coverage {'n/a' if cov is None else f'{cov:.0%}'}")
        for b, (v, n) in d["rmse_ratio_median"].items():
            print(f"  vs {b:<16} {v:.2f} ({n})")
    for rid, why in res["unread"].items():
        print(f"  {rid}: {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
