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
- forecasts (:func:`grpo_theory.runs.forecast.forecast`) from the first 20 % and 50 % of the
  steps: how many were made, declined, or not possible (a prefix of fewer than 2 points; 2-4
  points get the level with a Student-t band), the answer rate over all runs, the median ratio
  of the forecast's held-out RMSE to each baseline's, to the better of last value and a single
  exponential (the issue's baseline) and to the best of the four baselines of each run (with
  hindsight), the coverage of the 90 %
  interval (pooled over held-out points, and the mean of the runs' coverages, which a long
  run cannot dominate), the noise floor (RMSE of the held-out points about their own smoothed
  curve) as a ratio to the best baseline, and the fraction of the gap from the best baseline
  to that floor that the forecast closes;
- the same for the lab's labelled runs (``benchmarks/lab_runs``, or ``--lab DIR``) as a
  separate table;
- how many runs ``fit`` answers (the model applies: a rise significant at 4 sd), and how many of
  the flat lab runs (:data:`FLAT_SETTINGS`, started at a stable fixed point) it answers: false
  answers;
- the coverage of the forecast's 90 % band as shipped (:func:`coverage_by_repo`; it learns
  nothing from other runs, so it is out of sample on every repository), pooled, per run and per
  repository (runs grouped by ``source.repo``, the lab one repository); beside it, for
  comparison, the band times a split-conformal scale learned leave-one-repository-out
  (:func:`conformal_loro`: each run's scale from the other repositories' runs), with points and
  with runs as the units;
- the theory's forecast where ηK and p* are facts of a lab run (:func:`theory_gain`).

Run: ``PYTHONPATH=. python benchmarks/scorecard.py [--json] [--lab DIR] [--skip-config]``.  Thresholds are the
detectors' own (from mechanisms); nothing here is tuned to these runs.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks" / "real_runs"

#: benchmark label -> detector that answers it (the lab's ``instability`` is the dynamical one)
LABEL_DETECTOR = {
    "collapse": "collapse",
    "divergence": "divergence",
    "instability": "dynamical_instability",
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


def _float(x, *, keep_nan=False):
    """A float, or ``None``; ``keep_nan``: a NaN/inf written in the file stays (it is evidence)."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if (keep_nan or math.isfinite(v)) else None


def _wide_csv(path, series):
    """A CSV whose first column is the step and every other column a metric."""
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    head = rows[0]
    for row in rows[1:]:
        s = _float(row[0]) if row else None
        for name, cell in zip(head[1:], row[1:]):
            v = _float(cell, keep_nan=True)
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


def noise_floor(y) -> float:
    """RMSE of held-out points about their own smoothed curve (centred moving mean over ~10 % of
    them, odd window >= 3): what no forecast of the curve can beat."""
    y = np.asarray(y, dtype=float)
    n = y.size
    if n < 5:
        return math.nan
    h = max(3, (n // 10) | 1) // 2
    sm = np.array([np.mean(y[max(0, i - h): i + h + 1]) for i in range(n)])
    return float(np.sqrt(np.mean((y - sm) ** 2)))


FRACTIONS = (0.2, 0.5)
#: lab settings that start at their configuration's fixed point, stable by the exact theory: a
#: flat reward by construction, where an answer of ``fit`` is a false answer
FLAT_SETTINGS = ("stable_refresh", "stable_momentum", "warm_hold")
LAB_REPO = "the lab (grpo_theory.lab)"


def _repo(info, bench):
    """The source repository of a run (``run.json`` -> ``source.repo``); the lab's runs are one
    repository."""
    src = info.get("source") or {}
    return src.get("repo") or (LAB_REPO if Path(bench).name == "lab_runs" else str(bench))


def conformal_quantile(records, level=0.9, weight="points"):
    """:func:`grpo_theory.runs.forecast.conformal_scale` (one definition, tested there)."""
    from grpo_theory.runs.forecast import conformal_scale

    return conformal_scale(records, level, weight=weight)


def coverage_by_repo(records_by_f, scale_for=None, weight="points"):
    """Coverage of the 90 % band by repository, pooled over all and per benchmark, with points
    and with runs as the units: a held-out point is covered where its score ``|y - forecast| /
    half-width`` is at most its repository's scale, ``scale_for(records, repo)`` (``None``: 1,
    the band as shipped, which learns nothing from other runs).  ``{"scale_all", "weight",
    "by_fraction": {f: {"by_bench": {bench or "all": {"pooled", "per_run_mean", "runs"}},
    "by_repo": {repo: (coverage, points, runs, scale)}}}}``; ``records_by_f`` maps a fraction to
    records ``{"run", "repo", "scores", "bench"}``."""
    allrec = [r for recs in records_by_f.values() for r in recs]
    repos = sorted({r["repo"] for r in allrec})
    out = {"scale_all": {f: (1.0 if scale_for is None else scale_for(recs, None))
                         for f, recs in records_by_f.items()}, "weight": weight,
           "by_fraction": {}}
    for f, recs in records_by_f.items():
        scale = {rp: 1.0 if scale_for is None else scale_for(recs, rp) for rp in repos}
        by_bench = defaultdict(lambda: {"in": 0, "n": 0, "runs": []})
        by_repo = defaultdict(lambda: [0, 0, 0])
        for r in recs:
            q = scale[r["repo"]]
            sc_ = np.asarray(r["scores"])
            if q is None or not sc_.size:
                continue
            inside = int(np.sum(sc_ <= q))
            for key in (r["bench"], "all"):
                b = by_bench[key]
                b["in"] += inside
                b["n"] += sc_.size
                b["runs"].append(inside / sc_.size)
            by_repo[r["repo"]][0] += inside
            by_repo[r["repo"]][1] += sc_.size
            by_repo[r["repo"]][2] += 1
        out["by_fraction"][f] = {
            "by_bench": {k: {"pooled": v["in"] / v["n"] if v["n"] else None,
                             "per_run_mean": float(np.mean(v["runs"])) if v["runs"] else None,
                             "runs": len(v["runs"])} for k, v in by_bench.items()},
            "by_repo": {rp: (v[0] / v[1] if v[1] else None, v[1], v[2], scale[rp])
                        for rp, v in sorted(by_repo.items())}}
    return out


def conformal_loro(records_by_f, weight="points"):
    """The comparison the shipped band was chosen by: the band scaled by a split-conformal scale
    learned leave-one-repository-out -- for every repository and prefix fraction, the quantile
    (:func:`conformal_quantile`, ``weight``: points or runs as the units) of the scores of every
    *other* repository's runs at that fraction (:func:`coverage_by_repo`'s layout; its
    ``scale_all`` is the quantile over every repository)."""
    def scale_for(recs, repo):
        return conformal_quantile([r for r in recs if r["repo"] != repo], weight=weight)

    return coverage_by_repo(records_by_f, scale_for, weight)


def _print_coverage(c, head):
    print(head)
    for f, d in c["by_fraction"].items():
        print(f"  from the first {float(f):.0%}: " + "; ".join(
            f"{b} pooled {v['pooled']:.3f}, mean over its {v['runs']} runs {v['per_run_mean']:.3f}"
            for b, v in sorted(d["by_bench"].items())))
        for rp, (cov, n, runs, q) in d["by_repo"].items():
            print(f"    {rp:<48} {cov:.3f} ({n} points, {runs} runs; scale {q:.3f})")


def score(runs, bench=BENCH):
    from grpo_theory.progress import progress
    from grpo_theory.runs.diagnostics import diagnose
    from grpo_theory.runs.fitting import fit_log
    from grpo_theory.runs.forecast import forecast
    from grpo_theory.validate import ParameterError

    tally = defaultdict(lambda: {"TP": 0, "FN": 0, "FP": 0, "TN": 0, "abstain": 0, "unread": 0})
    answered_by = {}
    flags = defaultdict(lambda: {"true": 0, "false": 0, "null": 0})
    r2 = defaultdict(list)
    ratios = {f: defaultdict(list) for f in FRACTIONS}
    gaps = {f: [] for f in FRACTIONS}
    gaps2 = {f: [] for f in FRACTIONS}
    floors = {f: [] for f in FRACTIONS}
    cover = {f: [0, 0, []] for f in FRACTIONS}
    counts = {f: {"made": 0, "declined": 0, "too_short": 0, "reasons": defaultdict(int)}
              for f in FRACTIONS}
    per_run = {}
    fit_count = {"runs": 0, "answered": 0, "trend_4sd": 0, "flat_runs": 0, "flat_answered": 0}
    conformal = {f: [] for f in FRACTIONS}
    labels_seen = list(LABEL_DETECTOR)
    for meta in progress(runs, total=len(runs), desc="scorecard"):
        run_dir = bench / Path(meta["run_json"]).parent
        info = json.loads((bench / meta["run_json"]).read_text())
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
        if log is None or info.get("labels", {}).get("kind", meta.get("kind")) != "grpo" \
                or key not in log.metrics:
            continue
        steps, values = log.series(key)
        ok = np.isfinite(values)
        steps, values = steps[ok], values[ok]
        reward, rrange = _reward_kind(info)
        try:
            rep = fit_log(log, key, reward=reward)
        except ParameterError:
            rep = None
        if rep is not None:
            fit_count["runs"] += 1
            fit_count["answered"] += bool(rep.applicable["fit"])
            g = rep.gain or {}
            fit_count["trend_4sd"] += bool(g.get("gain_sd") and g["gain"] > 4 * g["gain_sd"])
            if info.get("setting") in FLAT_SETTINGS:
                fit_count["flat_runs"] += 1
                fit_count["flat_answered"] += bool(rep.applicable["fit"])
        if rep is not None and rep.applicable["fit"]:
            for m, d in rep.models.items():
                if d["r2"] is not None:
                    r2[m].append(d["r2"])
        ent = log.role("entropy")
        models = None if reward != "dense" else ["exponential", "oscillator"]
        for f in FRACTIONS:
            try:
                # the band as shipped, from the prefix alone; a split-conformal scale learned
                # leave-one-repository-out is measured below for comparison (conformal_loro)
                fc = forecast(steps, values, f, models, reward_range=rrange,
                              entropy=log.series(ent) if ent else None)
            except ParameterError:
                counts[f]["too_short"] += 1
                continue
            base = {b: d["holdout_rmse"] for b, d in fc.baselines.items()
                    if d["holdout_rmse"] is not None and d["holdout_rmse"] > 0}
            if not fc.applicable:
                counts[f]["declined"] += 1
                for r in fc.reasons:
                    counts[f]["reasons"][_reason_kind(r)] += 1
                continue
            counts[f]["made"] += 1
            yh = fc.y_holdout
            with np.errstate(divide="ignore", invalid="ignore"):
                sc_ = np.where(fc.half > 0, np.abs(yh - fc.prediction) / fc.half,
                               np.where(np.abs(yh - fc.prediction) > 0, np.inf, 0.0))
            conformal[f].append({"run": meta["id"], "repo": _repo(info, bench),
                                 "scores": [float(x) for x in sc_]})
            ours = float(np.sqrt(np.mean((fc.prediction - yh) ** 2)))
            for b, v in base.items():
                ratios[f][b].append(ours / v)
            if not base:        # every baseline exact on the held-out points: no ratio to take
                cover[f][0] += int(np.sum((yh >= fc.band[0]) & (yh <= fc.band[1])))
                cover[f][1] += yh.size
                cover[f][2].append(float(np.mean((yh >= fc.band[0]) & (yh <= fc.band[1]))))
                continue
            best_base = min(base.values())
            ratios[f]["best baseline"].append(ours / best_base)
            two = [base[b] for b in ("last_value", "exponential") if b in base]
            better = min(two) if two else None
            if better:
                ratios[f]["better of last value, exponential"].append(ours / better)
            floor = noise_floor(yh)
            if math.isfinite(floor):
                floors[f].append(floor / best_base)
                if best_base > floor:
                    gaps[f].append((best_base - ours) / (best_base - floor))
                if better and better > floor:
                    gaps2[f].append((better - ours) / (better - floor))
            lo, hi = fc.band
            inside = int(np.sum((yh >= lo) & (yh <= hi)))
            cover[f][0] += inside
            cover[f][1] += yh.size
            cover[f][2].append(inside / yh.size)
    med = lambda v: (float(np.median(v)), len(v)) if v else (None, 0)  # noqa: E731
    return {"detectors": {lab: dict(tally[lab], detector=answered_by.get(lab, LABEL_DETECTOR[lab]))
                          for lab in labels_seen},
            "detector_flags": {k: dict(v) for k, v in flags.items()},
            "fit_r2_median": {m: med(v) for m, v in r2.items()},
            "fit_answers": fit_count,
            "forecast": {str(f): {"made": counts[f]["made"], "declined": counts[f]["declined"],
                                  "too_short": counts[f]["too_short"],
                                  "answer_rate": (counts[f]["made"] / (counts[f]["made"]
                                                                       + counts[f]["declined"]
                                                                       + counts[f]["too_short"])
                                                  if counts[f]["made"] + counts[f]["declined"]
                                                  + counts[f]["too_short"] else None),
                                  "declined_reasons": dict(counts[f]["reasons"]),
                                  "rmse_ratio_median": {b: med(v) for b, v in ratios[f].items()},
                                  "noise_floor_ratio_median": med(floors[f]),
                                  "gap_closed_median": med(gaps[f]),
                                  "gap_closed_vs_better_of_two_median": med(gaps2[f]),
                                  "interval90_coverage": (cover[f][0] / cover[f][1]
                                                          if cover[f][1] else None),
                                  "interval90_coverage_per_run_mean":
                                      float(np.mean(cover[f][2])) if cover[f][2] else None}
                         for f in FRACTIONS},
            "conformal_scores": {str(f): conformal[f] for f in FRACTIONS},
            "unread": per_run}


def theory_gain(bench, fraction=None):
    r"""Where the theory knows what the baselines cannot: the lab's runs whose stiffness and
    fixed point are facts of their construction (``facts.eta_K``, ``facts.fixed_point.p``;
    on-policy, one optimizer step per logged point).  From the first ``fraction`` of the log the
    theory's forecast is the relaxation :math:`p^* + (m - p^*)\,e^{-r (t - t_m)}` with
    :math:`r = \eta K/(1 - \mu)` (heavy ball, overdamped) and only :math:`m`, the mean of the
    prefix's last points at their mean step :math:`t_m` (the last-value baseline's window),
    read from the prefix.  Runs counted: those that still relax after the prefix (its last level
    more than 2 of its standard errors from :math:`p^*`) in a configuration the exact theory
    calls stable (the relaxation is its prediction only there).  Returns rows ``{"id", "theory",
    "last_value", "exponential"}`` of held-out RMSEs."""
    from grpo_theory.runs.forecast import _baselines, last_value
    from grpo_theory.runs.logs import read_log

    fraction = PREFIX_FRACTION if fraction is None else fraction
    rows = []
    for rj in sorted(Path(bench).glob("*/run.json")):
        info = json.loads(rj.read_text())
        facts, hp = info.get("facts") or {}, info.get("hyperparameters") or {}
        fp = (facts.get("fixed_point") or {}).get("p")
        if not facts.get("eta_K") or fp is None or not (facts.get("exact") or {}).get("stable") \
                or (hp.get("refresh_interval") or 1) != 1 \
                or (hp.get("num_iterations") or 1) != 1 or (hp.get("steps_per_generation") or 1) != 1:
            continue
        rate = facts["eta_K"] / (1.0 - float(hp.get("momentum") or 0.0))
        s, v = read_log(rj.parent / "trainer_state.json").series(info["reward"]["key"])
        ok = np.isfinite(v)
        s, v = s[ok], v[ok]
        n = int(math.ceil(fraction * s.size))
        if n < 5 or s.size - n < 5:
            continue
        tt, yt, th, yh = s[:n], v[:n], s[n:], v[n:]
        k = max(1, min(5, n // 10))
        m, tm = last_value(yt), float(np.mean(tt[-k:]))
        sd = float(np.std(np.diff(yt)) / math.sqrt(2)) if n >= 3 else 0.0
        if abs(m - fp) <= 2 * sd / math.sqrt(k):
            continue                  # at its plateau (within 2 standard errors): no relaxation left
        pred = np.clip(fp + (m - fp) * np.exp(-rate * (th - tm)), 0.0, 1.0)
        base = _baselines(tt, yt, th, yh, (0.0, 1.0), None, None)
        rows.append({"id": rj.parent.name, "theory": float(np.sqrt(np.mean((pred - yh) ** 2))),
                     "last_value": base["last_value"]["holdout_rmse"],
                     "exponential": (base.get("exponential") or {}).get("holdout_rmse")})
    return rows


def _print_theory_gain(rows):
    if not rows:
        return
    print(f"the theory's forecast where the stiffness and fixed point are known (lab runs still "
          f"relaxing after their first {PREFIX_FRACTION:.0%}: {len(rows)}): held-out RMSE ratio, "
          "theory / baseline")
    for b in ("last_value", "exponential"):
        r = [x["theory"] / x[b] for x in rows if x.get(b)]
        print(f"  vs {b:<12} median {np.median(r):.2f} ({sum(q < 1 for q in r)} of {len(r)} "
              "runs better)")
    better = [x["theory"] / min(x["last_value"], x["exponential"] or np.inf) for x in rows
              if min(x["last_value"], x["exponential"] or np.inf) > 0]
    print(f"  vs the better of the two (per run): median {np.median(better):.2f}")
    for x in rows:
        print(f"    {x['id']:<32} theory {x['theory']:.4f}  last value {x['last_value']:.4f}  "
              f"exponential {x['exponential'] if x['exponential'] is None else round(x['exponential'], 4)}")


def _p_ref_for(config_path, p_star):
    """The reference success rate that puts the config's bandit fixed point at ``p_star`` (the
    lab states p* and eta K, not p_ref): ``check_config.p_ref_for_plateau``."""
    from grpo_theory.runs.check_config import map_config, p_ref_for_plateau, read_config

    cfg, kind = read_config(config_path)
    return p_ref_for_plateau(map_config(cfg, kind), p_star)


def _config_row(run_dir, info, *, stiffness=None, from_log=None, from_log_config=None,
                metric=None, p_ref=None):
    """check-config's verdict on a run's own config: 'stable', 'unstable', 'at risk' or
    'unknown', with the reason."""
    from grpo_theory.runs.check_config import check_config
    from grpo_theory.validate import ParameterError

    cfg = (info.get("files") or {}).get("config")
    if not cfg:
        return None
    try:
        res = check_config(run_dir / cfg, stiffness=stiffness, from_log=from_log,
                           from_log_config=from_log_config, metric=metric, p_ref=p_ref)
    except (ParameterError, OSError) as exc:
        return {"verdict": "unknown", "why": f"not checked: {exc}"}
    p = res.prediction
    verdict = ("stable" if p["stable"] is True else "unstable" if p["stable"] is False
               else "at risk" if p.get("risk") else "unknown")
    why = p.get("risk") or (p["unknown"][-1] if p["unknown"] else "")
    return {"verdict": verdict, "why": why, "eta_K": p.get("eta_K"),
            "reuse": (p.get("reuse") or {}).get("verdict"),
            "K_route": (res.stiffness or {}).get("route") if (from_log is not None) else None}


def score_configs(runs, bench, *, lab=False):
    """check-config against the runs' outcome: a collapse (or a lab run labelled unstable) should
    be called unstable or at risk, a healthy run of the same family stable.  Stiffness: the lab's
    own eta K (its facts: the theory and the criteria given the right K) for lab runs; for the
    public off-policy families, K measured from the family's on-policy run (a different run)."""
    rows = []
    for meta in runs:
        run_dir = bench / Path(meta["run_json"]).parent
        info = json.loads((bench / meta["run_json"]).read_text())
        lab_ = info.get("labels", {})
        if lab:
            truth = lab_.get("stable")
            truth = None if truth not in (True, False) else (not truth)
            facts = info.get("facts") or {}
            lr = (info.get("hyperparameters") or {}).get("learning_rate")
            K = facts["eta_K"] / lr if facts.get("eta_K") and lr else None
            fp = (facts.get("fixed_point") or {}).get("p")
            cfg = (info.get("files") or {}).get("config")
            pr = _p_ref_for(run_dir / cfg, fp) if (K and fp and cfg) else None
            row = _config_row(run_dir, info, stiffness=K, p_ref=pr) if K else None
            source = "the lab's eta K and p*" + (f" (p_ref {pr:.3g})" if pr else "")
        else:
            truth = lab_.get("collapse")
            truth = truth if truth in (True, False) else None
            fam = (info.get("family") or {}).get("id") or ""
            if not meta["id"].startswith("garg_math1p5b_offpolicy"):
                continue
            ref = "garg_math1p5b_offpolicy_e1_tb256_50step"
            if meta["id"] == ref:
                ref = "garg_math1p5b_offpolicy_e1_tb128_50step"
            rinfo = json.loads((bench / ref / "run.json").read_text())
            key = rinfo["reward"]["key"]
            # the author's long-format W&B export, rewritten as a plain step,value CSV that
            # the package's readers take (values copied, nothing invented)
            rs, rv = load_run(bench / ref, rinfo).series(key)
            tmp = Path(tempfile.gettempdir()) / f"scorecard_{ref}.csv"
            tmp.write_text("step," + key + "\n" + "".join(f"{float(a):g},{float(b)!r}\n" for a, b in zip(rs, rv)))
            row = _config_row(run_dir, info, from_log=tmp,
                              from_log_config=bench / ref / rinfo["files"]["config"],
                              metric=key)
            source = f"K measured from {ref}"
            del fam
        if row is None or truth is None:
            continue
        rows.append({"id": meta["id"], "collapse_or_unstable": truth, "source": source, **row})
    return rows


#: the prefix of a lab run's own log from which check-config --from-log measures K (issue 22)
PREFIX_FRACTION = 0.2


def _prefix_log(run_dir, fraction, tmp):
    """The first ``fraction`` of a lab run's TRL log with its saved ``GRPOConfig``, written to
    ``tmp`` (``runs.logs.trl.write_trl_prefix``): what a practitioner has ``fraction`` of the way
    into the run.  Returns the path of the prefix's ``trainer_state.json``."""
    from grpo_theory.runs.logs.trl import write_trl_prefix

    return Path(write_trl_prefix(run_dir, fraction, tmp))


def score_configs_from_prefix(runs, bench, fraction=PREFIX_FRACTION):
    """check-config on each lab run's own config with K measured (``--from-log``) from the first
    ``fraction`` of the run's own log and its saved GRPOConfig -- nothing from the lab's facts
    (issue 22): from the reward's relaxation, or, where the prefix shows none, from the per-step
    fluctuations of TRL's entropy (``row["K_route"]``).  Where neither route measures K the
    verdict is what needs no K, and the healthy sibling's K is tried as a second, labelled route."""
    rows = []
    base = Path(tempfile.mkdtemp(prefix="scorecard_prefix_"))
    for meta in runs:
        run_dir = bench / Path(meta["run_json"]).parent
        info = json.loads((bench / meta["run_json"]).read_text())
        truth = info.get("labels", {}).get("stable")
        if truth not in (True, False) or not (run_dir / "config.json").exists():
            continue
        prefix = _prefix_log(run_dir, fraction, base / meta["id"])
        key = (info.get("reward") or {}).get("key")
        row = _config_row(run_dir, info, from_log=prefix, metric=key)
        route = {"relaxation": "the reward's relaxation", "fluctuations": "the entropy's "
                 "fluctuations"}.get(row.get("K_route"), "K not measured")
        row = {"id": meta["id"], "collapse_or_unstable": not truth,
               "source": f"K from the first {fraction:.0%} of its own log: {route}", **row}
        if row["verdict"] == "unknown" and (row["why"].startswith("not checked")
                                            or row.get("K_route") is None):
            row["sibling"] = _sibling_row(run_dir, info, bench, prefix, key)
        rows.append(row)
    return rows


#: the healthy sibling of a lab run: the on-policy SGD control of the same model and task
SIBLING_SETTING = "healthy_sgd"


def _sibling_row(run_dir, info, bench, prefix, key):
    """Where the run's own prefix gives no K (it starts at its plateau: no relaxation to fit),
    what a practitioner has instead: K measured on a finished healthy run of the same model and
    task (the on-policy SGD control, same seed; check-config carries the kernel scale over and
    recomputes the bandit factor for this variant), and p_ref solved from the plateau level seen
    in the run's own prefix (the mean reward of the prefix = the config's fixed point).  Nothing
    from the lab's facts.  ``None`` where no sibling of the same model and task exists."""
    from grpo_theory.runs.logs import read_log

    sib = bench / f"lab_{SIBLING_SETTING}_s{info.get('seed')}"
    if not (sib / "run.json").exists():
        return None
    sinfo = json.loads((sib / "run.json").read_text())
    if (sinfo.get("model_parameters"), sinfo.get("task")) != (info.get("model_parameters"),
                                                             info.get("task")):
        return None
    _, rv = read_log(prefix).series(key)
    rv = rv[np.isfinite(rv)]
    if not rv.size:
        return None
    plateau = float(np.mean(rv))
    pr = _p_ref_for(run_dir / "config.json", plateau)
    row = _config_row(run_dir, info, from_log=sib / "trainer_state.json", metric=key, p_ref=pr)
    row["source"] = (f"K from {sib.name} (healthy sibling, full log), p_ref "
                     + (f"{pr:.3g}" if pr is not None else "unknown")
                     + f" from the prefix's plateau {plateau:.3g}")
    return row


def _print_configs(rows, title=None):
    if not rows:
        return
    print(title or "check-config on the runs' own configs (collapse / unstable should be called "
          "unstable or at risk; healthy runs stable):")
    hit = sum(r["collapse_or_unstable"] and r["verdict"] in ("unstable", "at risk") for r in rows)
    pos = sum(r["collapse_or_unstable"] for r in rows)
    ok = sum((not r["collapse_or_unstable"]) and r["verdict"] == "stable" for r in rows)
    neg = sum(not r["collapse_or_unstable"] for r in rows)
    unk = sum(r["verdict"] == "unknown" for r in rows)
    wrong = sum((r["collapse_or_unstable"] and r["verdict"] == "stable")
                or (not r["collapse_or_unstable"] and r["verdict"] in ("unstable", "at risk"))
                for r in rows)
    print(f"  unstable/collapse called unstable or at risk: {hit}/{pos}; healthy called stable: "
          f"{ok}/{neg}; unknown {unk}, wrong {wrong}")
    for r in rows:
        print(f"  {r['id']:<44} {'bad' if r['collapse_or_unstable'] else 'ok ':<4} -> "
              f"{r['verdict']:<9} (reuse {r.get('reuse')}; {r['source']}) {r['why'][:90]}")
    sib = [r for r in rows if r.get("sibling")]
    if sib:
        hit = sum(r["collapse_or_unstable"] and r["sibling"]["verdict"] in ("unstable", "at risk")
                  for r in sib)
        pos = sum(r["collapse_or_unstable"] for r in sib)
        ok = sum((not r["collapse_or_unstable"]) and r["sibling"]["verdict"] == "stable" for r in sib)
        unk = sum(r["sibling"]["verdict"] == "unknown" for r in sib)
        wrong = sum((r["collapse_or_unstable"] and r["sibling"]["verdict"] == "stable")
                    or (not r["collapse_or_unstable"]
                        and r["sibling"]["verdict"] in ("unstable", "at risk")) for r in sib)
        print(f"  where the own prefix gives no K ({len(sib)} runs), K from a healthy sibling "
              f"(labelled route): unstable called unstable or at risk {hit}/{pos}; healthy "
              f"called stable {ok}/{len(sib) - pos}; unknown {unk}, wrong {wrong}")
        for r in sib:
            q = r["sibling"]
            print(f"    {r['id']:<42} {'bad' if r['collapse_or_unstable'] else 'ok ':<4} -> "
                  f"{q['verdict']:<9} eta K {q.get('eta_K') or float('nan'):.3g} (reuse "
                  f"{q.get('reuse')}; {q['source']}) {q['why'][:80]}")


def _print(res, title, n_runs, bench):
    print(f"{title}: {n_runs} runs ({bench})")
    print("detectors: diagnose(log).diagnostics[name]['flag'] against the labels "
          "(null = abstain; unknown labels not scored)")
    print(f"{'label':<22} {'detector':<22} {'TP':>3} {'FN':>3} {'FP':>3} {'TN':>3} {'n/a':>4} "
          f"{'unread':>6} {'recall':>6} {'FA rate':>7}")
    for lab, t in res["detectors"].items():
        pos, neg = t["TP"] + t["FN"], t["FP"] + t["TN"]
        rec = f"{t['TP'] / pos:.2f}" if pos else "n/a"
        fa = f"{t['FP'] / neg:.2f}" if neg else "n/a"
        print(f"{lab:<22} {t['detector']:<22} {t['TP']:>3} {t['FN']:>3} {t['FP']:>3} "
              f"{t['TN']:>3} {t['abstain']:>4} {t['unread']:>6} {rec:>6} {fa:>7}")
    print("flags per detector over the runs read (true / false / null):")
    for name, c in res["detector_flags"].items():
        print(f"  {name:<26} {c['true']:>3} / {c['false']:>3} / {c['null']:>3}")
    fa = res["fit_answers"]
    print(f"fit answers {fa['answered']} of {fa['runs']} GRPO runs (a rise significant at 4 sd: "
          f"{fa['trend_4sd']}); on the flat runs (started at a stable fixed point: "
          f"{', '.join(FLAT_SETTINGS)}) {fa['flat_answered']} of {fa['flat_runs']}")
    print("fit: median R^2 where the model applies (runs)")
    for m, (v, n) in res["fit_r2_median"].items():
        print(f"  {m:<16} {v:.3f} ({n})")
    for f, d in res["forecast"].items():
        cov, covr, ar = (d["interval90_coverage"], d["interval90_coverage_per_run_mean"],
                         d["answer_rate"])
        print(f"forecast from the first {float(f):.0%}: {d['made']} made, {d['declined']} declined "
              f"(answer rate over all runs {'n/a' if ar is None else f'{ar:.0%}'}), {d['too_short']} "
              f"with a prefix of < 2 points; 90 % band (as shipped: from the prefix alone) covers "
              f"{'n/a' if cov is None else f'{cov:.3f}'} pooled, "
              f"{'n/a' if covr is None else f'{covr:.3f}'} mean over runs")
        for r, n in d["declined_reasons"].items():
            print(f"    declined: {r} ({n})")
        print("  median RMSE ratio ours / baseline (runs)")
        for b, (v, n) in d["rmse_ratio_median"].items():
            print(f"    vs {b:<16} {'n/a' if v is None else f'{v:.2f}'} ({n})")
        fl, nf = d["noise_floor_ratio_median"]
        g, ng = d["gap_closed_median"]
        g2, ng2 = d["gap_closed_vs_better_of_two_median"]
        print(f"  noise floor / best baseline (median): {'n/a' if fl is None else f'{fl:.2f}'} "
              f"({nf}); fraction of the gap best baseline -> floor closed (median): "
              f"{'n/a' if g is None else f'{g:.2f}'} ({ng}); of the gap better of last value "
              f"and exponential -> floor: {'n/a' if g2 is None else f'{g2:.2f}'} ({ng2})")
    for rid, why in res["unread"].items():
        print(f"  {rid}: {why}")
    _print_configs(res.get("check_config"))
    if res.get("check_config_prefix"):
        _print_configs(res["check_config_prefix"],
                       f"check-config with --from-log from the first {PREFIX_FRACTION:.0%} of each "
                       "run's own log and its saved GRPOConfig (nothing from the lab's facts):")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--lab", default=str(ROOT / "benchmarks" / "lab_runs"),
                    help="directory of the lab's labelled runs (scored as a separate table)")
    ap.add_argument("--skip-config", action="store_true",
                    help="leave out the check-config rows (the slow part)")
    args = ap.parse_args(argv)
    manifest = json.loads((BENCH / "manifest.json").read_text())
    out = {"public": score(manifest["runs"])}
    if not args.skip_config:
        out["public"]["check_config"] = score_configs(manifest["runs"], BENCH)
    lab = Path(args.lab)
    lab_runs = sorted(p for p in lab.glob("*/run.json")) if lab.is_dir() else []
    if lab_runs:
        metas = [{"id": p.parent.name, "run_json": f"{p.parent.name}/run.json",
                  "kind": json.loads(p.read_text()).get("labels", {}).get("kind", "grpo")}
                 for p in lab_runs]
        out["lab"] = score(metas, bench=lab)
        if not args.skip_config:
            out["lab"]["check_config"] = score_configs(metas, lab, lab=True)
            out["lab"]["check_config_prefix"] = score_configs_from_prefix(metas, lab)
        out["lab"]["theory_gain"] = theory_gain(lab)
    recs = {f: [dict(r, bench=b) for b in out for r in out[b]["conformal_scores"][f]]
            for f in out["public"]["conformal_scores"]}
    out["coverage"] = coverage_by_repo(recs)
    out["conformal"] = conformal_loro(recs)
    out["conformal_runs_as_units"] = conformal_loro(recs, weight="runs")
    if args.json:
        for b in ("public", "lab"):
            if b in out:
                out[b].pop("conformal_scores", None)
        print(json.dumps(out, indent=2))
        return 0
    _print(out["public"], "public benchmark", len(manifest["runs"]), BENCH)
    if "lab" in out:
        print()
        _print(out["lab"], "lab runs (separate table: the cause of each is known)", len(lab_runs), lab)
    print()
    _print_coverage(out["coverage"], "forecast band as shipped (it learns nothing from other runs, "
                    "so it is out of sample on every repository): coverage of the 90 % band")
    for key, units in (("conformal", "points"), ("conformal_runs_as_units", "runs")):
        c = out[key]
        _print_coverage(c, "for comparison, not shipped: the band times a split-conformal scale "
                        f"learned leave-one-repository-out ({units} as the units; the scale from "
                        "every repository "
                        + ", ".join(f"{float(f):.0%} {q:.3f}" for f, q in c["scale_all"].items())
                        + "), each run's scale from the other repositories' runs only:")
    if "lab" in out:
        print()
        _print_theory_gain(out["lab"].get("theory_gain"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
