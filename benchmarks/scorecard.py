"""Scorecard of the run diagnostics and forecasts on the labelled benchmark of real runs.

Reads ``benchmarks/real_runs/manifest.json`` (relative to the repository root) and,
for every run, its ``run.json`` (format, reward key, labels).  Prints

- detectors: ``grpo_theory.runs.diagnostics.diagnose(log).diagnostics[name]["flag"]``
  (true / false / null = abstain) against the labels: per label TP / FN / FP / TN of the
  detector that answers it (the preferred name in ``LABEL_DETECTOR`` if ``diagnose``
  returns it, else a detector named like the label) and its abstentions; labels
  "unknown" are not scored; then the flag counts of every detector ``diagnose`` returns;
- per fit family: the median R^2 over the runs where the model applies (the reward's
  kind, binary or dense, from ``run.json``);
- forecasts from the first 25 % and 50 % of the steps: how many were made and declined
  (the model does not apply to the prefix), the median ratio of the forecast's held-out
  RMSE to each baseline's and to the best baseline of each run, the coverage of the 90 %
  interval (pooled over held-out points, and the mean of the runs' coverages, which a long
  run cannot dominate), and the bound no forecast can beat (the held-out noise from lag-1
  differences, and the exponential/oscillator fitted on *all* the data) as a ratio to the
  best baseline.

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


def _detector_for(label: str, names) -> str | None:
    """The detector that answers ``label``: the preferred one if ``diagnose`` returns it, else
    one named like the label, else ``None`` (the label is then reported as unanswered)."""
    pref = LABEL_DETECTOR.get(label)
    if pref in names:
        return pref
    return label if label in names else None


def _reason_kind(reason: str) -> str:
    """A reason without its numbers, to count declines by kind."""
    for kind in ("half the noise ceiling", "noise ceiling", "flat or decreasing", "rolling-origin",
                 "points, need"):
        if kind in reason:
            return kind
    return reason[:40]


def _reward_kind(info: dict):
    """``(reward, reward_range)`` from a run's ``run.json``: its declared kind and range."""
    r = info.get("reward") or {}
    rng = r.get("range")
    rng = tuple(float(v) for v in rng) if isinstance(rng, list) and len(rng) == 2 else None
    if r.get("binary") is True:
        return "binary", rng or (0.0, 1.0)
    if r.get("binary") is False:
        return "dense", rng
    return "auto", "auto"


def score(runs):
    from grpo_theory.progress import progress
    from grpo_theory.runs.diagnostics import diagnose
    from grpo_theory.runs.curves import fit_curve
    from grpo_theory.runs.fitting import fit_log
    from grpo_theory.runs.forecast import forecast, noise_sd
    from grpo_theory.validate import ParameterError

    labels_seen = [lab for lab in LABEL_DETECTOR]
    tally = defaultdict(lambda: {"TP": 0, "FN": 0, "FP": 0, "TN": 0, "abstain": 0, "unread": 0})
    answered_by = {}
    flags = defaultdict(lambda: {"true": 0, "false": 0, "null": 0})
    r2 = defaultdict(list)
    fracs = (0.25, 0.5)
    ratios = {f: defaultdict(list) for f in fracs}
    bounds = {f: defaultdict(list) for f in fracs}
    cover = {f: [0, 0, []] for f in fracs}
    counts = {f: {"made": 0, "declined": 0, "reasons": defaultdict(int)} for f in fracs}
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
        if diag is not None:
            for name, d in diag.items():
                flags[name]["null" if d.get("flag") is None else str(bool(d["flag"])).lower()] += 1
        for lab in labels_seen:
            truth = labels.get(lab)
            if truth not in (True, False):
                continue
            t = tally[lab]
            if diag is None:
                t["unread"] += 1
                continue
            det = _detector_for(lab, diag)
            if det is None:
                t["abstain"] += 1
                continue
            answered_by[lab] = det
            flag = diag[det].get("flag")
            if flag is None:
                t["abstain"] += 1
            else:
                t[("T" if bool(flag) == truth else "F") + ("P" if flag else "N")] += 1
        if log is None or meta.get("kind") != "grpo" or key not in log.metrics:
            continue
        steps, values = log.series(key)
        ok = np.isfinite(values)
        steps, values = steps[ok], values[ok]
        reward, rrange = _reward_kind(info)
        try:
            rep = fit_log(log, key, reward=reward)
        except ParameterError:
            continue
        if rep.applicable["fit"]:
            for m, d in rep.models.items():
                if d["r2"] is not None:
                    r2[m].append(d["r2"])
        ent = log.role("entropy")
        models = None if reward != "dense" else ["exponential", "oscillator"]
        for f in fracs:
            try:
                fc = forecast(steps, values, f, models, reward_range=rrange,
                              entropy=log.series(ent) if ent else None)
            except ParameterError:
                continue
            base = {b: d["holdout_rmse"] for b, d in fc.baselines.items()
                    if d["holdout_rmse"] is not None and d["holdout_rmse"] > 0}
            if not fc.applicable:
                counts[f]["declined"] += 1
                for r in fc.reasons:
                    counts[f]["reasons"][_reason_kind(r)] += 1
                continue
            counts[f]["made"] += 1
            ours = fc.holdout_rmse[fc.best]
            for b, v in base.items():
                ratios[f][b].append(ours / v)
            best_base = min(base.values())
            ratios[f]["best baseline"].append(ours / best_base)
            # what no forecast can beat: the held-out noise, and a fit made on all the data
            yh = fc.y_holdout
            floor = noise_sd(yh) if yh.size >= 3 else math.nan
            if math.isfinite(floor):
                bounds[f]["noise floor"].append(floor / best_base)
            full = []
            for m in ("exponential", "oscillator"):
                fr = fit_curve(steps, values, m)
                pred = fr.predict(fc.t_holdout - fr.t0)
                if fc.reward_range is not None:
                    pred = np.clip(pred, *fc.reward_range)
                full.append(float(np.sqrt(np.mean((pred - yh) ** 2))))
            bounds[f]["full-data fit"].append(min(full) / best_base)
            inside = round(fc.interval_coverage * fc.n_holdout)
            cover[f][0] += inside
            cover[f][1] += fc.n_holdout
            cover[f][2].append(fc.interval_coverage)
    med = lambda v: (float(np.median(v)), len(v)) if v else (None, 0)  # noqa: E731
    return {"detectors": {lab: dict(tally[lab], detector=answered_by.get(lab, LABEL_DETECTOR[lab]))
                          for lab in labels_seen},
            "detector_flags": {k: dict(v) for k, v in flags.items()},
            "fit_r2_median": {m: med(v) for m, v in r2.items()},
            "forecast": {str(f): {"made": counts[f]["made"], "declined": counts[f]["declined"],
                                  "declined_reasons": dict(counts[f]["reasons"]),
                                  "rmse_ratio_median": {b: med(v) for b, v in ratios[f].items()},
                                  "bound_ratio_median": {b: med(v) for b, v in bounds[f].items()},
                                  "interval90_coverage": (cover[f][0] / cover[f][1]
                                                          if cover[f][1] else None),
                                  "interval90_coverage_per_run_mean":
                                      float(np.mean(cover[f][2])) if cover[f][2] else None}
                         for f in fracs},
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
    print("detectors: diagnose(log).diagnostics[name]['flag'] against the labels "
          "(null = abstain; unknown labels not scored)")
    print(f"{'label':<22} {'detector':<22} {'TP':>3} {'FN':>3} {'FP':>3} {'TN':>3} {'n/a':>4} "
          f"{'unread':>6}")
    for lab, t in res["detectors"].items():
        print(f"{lab:<22} {t['detector']:<22} {t['TP']:>3} {t['FN']:>3} {t['FP']:>3} "
              f"{t['TN']:>3} {t['abstain']:>4} {t['unread']:>6}")
    print("flags per detector over the runs read (true / false / null):")
    for name, c in res["detector_flags"].items():
        print(f"  {name:<26} {c['true']:>3} / {c['false']:>3} / {c['null']:>3}")
    print("fit: median R^2 where the model applies (runs)")
    for m, (v, n) in res["fit_r2_median"].items():
        print(f"  {m:<16} {v:.3f} ({n})")
    for f, d in res["forecast"].items():
        cov, covr = d["interval90_coverage"], d["interval90_coverage_per_run_mean"]
        print(f"forecast from the first {float(f):.0%}: {d['made']} made, {d['declined']} declined "
              f"(model n/a on the prefix); 90 % interval coverage "
              f"{'n/a' if cov is None else f'{cov:.0%}'} pooled, "
              f"{'n/a' if covr is None else f'{covr:.0%}'} mean over runs")
        for r, n in d["declined_reasons"].items():
            print(f"    declined: {r} ({n})")
        print("  median RMSE ratio ours / baseline (runs)")
        for b, (v, n) in d["rmse_ratio_median"].items():
            print(f"    vs {b:<16} {'n/a' if v is None else f'{v:.2f}'} ({n})")
        print("  the bound: median ratio to the best baseline that no forecast can beat")
        for b, (v, n) in d["bound_ratio_median"].items():
            print(f"    {b:<19} {'n/a' if v is None else f'{v:.2f}'} ({n})")
    for rid, why in res["unread"].items():
        print(f"  {rid}: {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
