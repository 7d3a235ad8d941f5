"""Regenerate the lab's data set: the labelled failure runs, and the full lab (stiffness,
refresh sweeps, the unsafe rule, the damping transition, the families, whose members are
written as labelled healthy runs).  Run from the repository root:

    nice -n 10 python benchmarks/lab_runs/regenerate.py [--only failures|experiments] [--settings NAME ...]

Writes run directories ``benchmarks/lab_runs/<id>/`` (trainer_state.json, config.json,
run.json), ``grpo_theory/data/lab/lab_<part>.{json,txt}`` (inside the package, which ships them) and ``manifest.json``.  Progress
bars on a terminal.  Seeded: the same machine reproduces the same files.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
OUT = ROOT / "benchmarks" / "lab_runs"


def write_manifest():
    runs = []
    for d in sorted(OUT.iterdir()):
        rj = d / "run.json"
        if d.is_dir() and rj.exists():
            r = json.loads(rj.read_text())
            runs.append({"id": r["id"], "run_json": f"{d.name}/run.json", "format": r["format"],
                         "kind": r["labels"].get("kind", "grpo"), "setting": r.get("setting"),
                         "seed": r.get("seed"), "mode": r.get("mode"),
                         "family": (r.get("family") or {}).get("id"), "split": r.get("split")})
    manifest = {"description": "Labelled TRL GRPOTrainer runs of the lab (grpo_theory.lab); "
                               "labels from how each run was built - see README.md",
                "generator": "python benchmarks/lab_runs/regenerate.py", "runs": runs}
    (OUT / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return len(runs)


README_HEAD = """# Lab runs: TRL GRPOTrainer runs whose failure labels come from how they were built

Runs of TRL's own `GRPOTrainer` (CPU) on a tiny randomly initialised GPT-2 with an
answer-restricted head and a synthetic verifiable task (single-token modular arithmetic),
made by `grpo_theory.lab` (issue 22, `docs/lab.md`).  Unlike `benchmarks/real_runs/`, every
label here is part of the construction: a run is labelled reward hacking because its training
verifier was built with an exploitable shortcut, unstable because its refresh interval was set
past the exact threshold, and so on.  No label was read off a log or a detector.

Regenerate (seeded, so the same machine reproduces the same files; about 48 minutes on 2
cores shared with other work: 14 for the failures, 34 for the full lab):

    nice -n 10 python benchmarks/lab_runs/regenerate.py [--only failures|experiments]
                   [--settings NAME ...] [--parts refresh transition group-size model-size learning-rate] [--force]
    python benchmarks/lab_runs/regenerate.py --relabel    # labels/causes from the settings, no training

Two kinds of runs: the labelled failures `lab_<setting>_s<seed>` (the table below) and the
members of the lab's families `lab_family_{G,width,lr}*` (healthy by construction: std
advantages, k3 beta 0.5 to a reference at p = 0.1, SGD on-policy at eta K 0.04-0.4; `family`
{id, varies, value} as in `benchmarks/real_runs`; for G <= 4 `advantage_degeneracy` is
"unknown", such small groups are often all-equal).  `grpo_theory/data/lab/lab_<part>.{json,txt}` are the
full lab's results (docs/lab.md), the data of its tables and figures.

Each `<id>/` holds `trainer_state.json` (TRL's own file, trimmed: keys constant over the run
and the machine-dependent timings dropped, floats to 6 significant digits), `config.json`
(the run's `GRPOConfig` fields: what `check-config` maps) and `run.json` (the record below).
`manifest.json` lists the runs.

**Logged metrics.**  TRL's own (`reward`, `reward_std`, `frac_reward_zero_std`, `entropy`,
`kl` when beta > 0, `clip_ratio/*`, `grad_norm`, `loss`, `rewards/<verifier>/mean`), plus the
lab's observer: `lab/expected_reward` in every training entry (the exact expected training
reward of the policy after the step, from its answer probabilities: no sampling noise) and
an `eval_reward` entry every 5 steps (the *true* verifier's exact expected reward - for the
reward-hacking runs it differs from the training verifier).  The number of generations is
not in TRL's `trainer_state.json`; it is in `config.json` (`num_generations`) and in
`run.json` (`hyperparameters.group_size`).

**Labels** (`run.json` -> `labels`): the keys of `benchmarks/real_runs` (collapse, divergence,
entropy_collapse, entropy_explosion, reward_hacking, advantage_degeneracy, oscillation) plus
`instability` (built past the exact (L2) threshold of the configuration: the plateau cannot
hold in the linear theory) and `stable` (the exact verdict at the plateau where the theory
applies; `"unknown"` where it does not - no KL anchor, Adam, more than two answers).  A
consequence the construction does not fix (e.g. whether an unstable run ends in a limit cycle
or leaves the plateau, or that an entropy-collapsed policy also has zero-variance groups) is
`"unknown"`.  `cause` says how the run was built; `facts` hold the theory's numbers for the
configuration (fixed point, tangent-kernel scale, eta K, exact spectral radius and k_max, the
published rule's k); `observed.diverged_step` is set when the run became non-finite.

**Learning rates** of the SGD settings are given in the bandit's units (`bandit_lr`): the run
uses `eta = bandit_lr * N * kappa / lambda_max(NTK)` with the tangent kernel measured at the
run's starting state, so the same setting means the same dynamics at another width or seed.

## Settings (3 seeds each: the seed sets the model initialisation and TRL's sampling)

| setting | mode | labels true | labels unknown | cause |
|---|---|---|---|---|
"""


def write_readme():
    from grpo_theory.lab.failures import SETTINGS

    rows = []
    for st in SETTINGS:
        true = ", ".join(k for k, v in st.labels.items() if v is True) or "-"
        unk = ", ".join(k for k, v in st.labels.items() if v == "unknown") or "-"
        rows.append(f"| {st.name} | {st.mode} | {true} | {unk} | {st.cause} |")
    tail = ("\n\nAll other labels of a setting are false.  `reuse_clipped` is labelled unstable "
            "(`stable: false`) because its configuration is past the exact linear threshold; "
            "TRL's clip keeps its excursions small, which is the point of the pair "
            "`reuse_unclipped`/`reuse_clipped`.\n")
    (OUT / "README.md").write_text(README_HEAD + "\n".join(rows) + tail)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", choices=("failures", "experiments"), default=None)
    ap.add_argument("--settings", nargs="*", default=None, help="failure settings to (re)run")
    ap.add_argument("--seeds", type=int, nargs="*", default=[0, 1, 2])
    ap.add_argument("--force", action="store_true",
                    help="rerun the parts of the full lab whose results already exist")
    ap.add_argument("--parts", nargs="*", default=None,
                    help="parts of the full lab to run (default all: " + ", ".join(PARTS) + ")")
    ap.add_argument("--ray", nargs="?", const="local", default=None, metavar="ADDRESS",
                    help="run the runs as Ray tasks (a local instance, or the cluster at "
                         "ADDRESS; needs the lab-ray extra)")
    ap.add_argument("--ray-workers", type=int, default=2)
    ap.add_argument("--relabel", action="store_true",
                    help="only rewrite labels/cause of the existing failure runs from the settings")
    args = ap.parse_args(argv)
    if args.relabel:
        from grpo_theory.lab.dataset import relabel

        print(f"relabelled {relabel(str(OUT))} runs; {write_manifest()} in the manifest")
        write_readme()
        return
    from grpo_theory.lab.dataset import failure_runs
    from grpo_theory.lab.failures import SETTINGS
    from grpo_theory.progress import progress

    t0 = time.perf_counter()
    if args.only in (None, "failures"):
        settings = [s for s in SETTINGS if args.settings is None or s.name in args.settings]
        from grpo_theory.lab.parallel import make_executor

        ex = make_executor(args.ray, args.ray_workers)
        try:
            recs = failure_runs(str(OUT), settings=settings, seeds=tuple(args.seeds),
                                progress=lambda it: progress(it, desc="failure runs"),
                                executor=ex)
        finally:
            ex.close()
        for r in recs:
            print(f"{r['id']:32s} {r['mode']:22s} steps {r['observed']['steps']:4d} "
                  f"diverged {r['observed']['diverged_step']}")
    if args.only in (None, "experiments"):
        run_experiments(force=args.force, parts=args.parts, ray=args.ray,
                        ray_workers=args.ray_workers)
    n = write_manifest()
    write_readme()
    print(f"{n} runs in the manifest; {time.perf_counter() - t0:.0f} s")


#: the parts of the full lab, each saved as grpo_theory/data/lab/lab_<part>.{json,txt} when it completes
PARTS = ("refresh", "transition", "group-size", "model-size", "learning-rate")


def run_experiments(force=False, parts=None, ray=None, ray_workers=2):
    """The full lab, part by part (stiffness and sweeps incl. the unsafe rule, the damping
    transition, the three families); each part's result as ``grpo_theory/data/lab/lab_<part>.{json,txt}``
    (a finished part is kept unless ``force``), the family members as labelled runs."""
    import tempfile

    from grpo_theory.lab import run_lab
    from grpo_theory.lab._deps import versions
    from grpo_theory.lab.dataset import family_runs

    res_dir = ROOT / "grpo_theory" / "data" / "lab"     # shipped inside the package
    res_dir.mkdir(exist_ok=True)
    for part in PARTS:
        if parts is not None and part not in parts:
            continue
        target = res_dir / f"lab_{part}.json"
        if target.exists() and not force:
            print(f"{part}: kept {target.relative_to(ROOT)}")
            continue
        t = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="grpo_lab_full_") as tmp:
            res = run_lab(experiment=part, out=tmp, ray=ray, ray_workers=ray_workers)
            d = res.to_dict()
            recs = family_runs(tmp, str(OUT), d, versions=versions())
        target.write_text(json.dumps(d, indent=1) + "\n")
        (res_dir / f"lab_{part}.txt").write_text(str(res) + "\n")
        print(res)
        print(f"{part}: {time.perf_counter() - t:.0f} s, {len(recs)} family runs written")


if __name__ == "__main__":
    main()
