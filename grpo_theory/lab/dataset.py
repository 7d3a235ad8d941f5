r"""The lab's runs as a data set: TRL logs written in TRL's own format, with their records.

Each run directory holds

* ``trainer_state.json`` - TRL's ``TrainerState`` file (``log_history`` and the state
  keys), trimmed: keys that are constant over the run (completion lengths, token counts)
  and the machine-dependent timings (``step_time``, ``train_runtime``, ...) are dropped,
  floats are rounded to 6 significant digits; every reader of the project reads it
  unchanged;
* ``config.json`` - the ``GRPOConfig`` fields of the run (what ``check-config`` maps);
* ``run.json`` - the record: setting, seed, cause, labels (from the construction), the
  theory's facts about the configuration, what was observed (divergence step), versions.

:func:`write_run` writes one; :func:`failure_runs` the labelled failures.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from dataclasses import replace

from grpo_theory.results import jsonable

from ._deps import versions
from .engine import Lab
from .failures import LABEL_KEYS, SETTINGS, prepare

__all__ = ["trim_history", "write_run", "failure_runs", "DROP_KEYS"]

#: keys dropped from every log entry (machine-dependent timings)
DROP_KEYS = ("step_time", "train_runtime", "train_samples_per_second", "train_steps_per_second",
             "total_flos")


def _round(v):
    if isinstance(v, float) and math.isfinite(v) and v != 0.0:
        return float(f"{v:.6g}")
    return v


def trim_history(history) -> list:
    """Drop keys constant over the run (and timings); round floats (see the module doc)."""
    values = {}
    for e in history:
        for k, v in e.items():
            values.setdefault(k, set()).add(json.dumps(v))
    constant = {k for k, vs in values.items() if len(vs) == 1 and k not in ("step",)}
    keep_always = {"learning_rate", "reward", "eval_reward", "epoch"}
    out = []
    for e in history:
        out.append({k: _round(v) for k, v in e.items()
                    if k not in DROP_KEYS and (k not in constant or k in keep_always)})
    return out


def write_run(rec, out_dir, *, record: dict) -> dict:
    """Write ``rec`` (a :class:`~grpo_theory.lab.engine.RunRecord`) to ``out_dir``."""
    observed = {"steps": rec.steps_done, "diverged_step": rec.diverged_step,
                "diverged_reason": rec.diverged_reason or None}
    return write_dir(os.path.dirname(rec.trainer_state_path), out_dir, record=record,
                     observed=observed)


def write_dir(src_dir, out_dir, *, record: dict, observed: dict | None = None) -> dict:
    """Trim ``src_dir``'s TRL files into ``out_dir`` and write ``run.json``."""
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(src_dir, "trainer_state.json")) as fh:
        state = json.load(fh)
    state["log_history"] = trim_history(state["log_history"])
    for k in ("stateful_callbacks",):
        state.pop(k, None)
    with open(os.path.join(out_dir, "trainer_state.json"), "w") as fh:
        json.dump(state, fh, indent=1)
    with open(os.path.join(src_dir, "config.json")) as fh:
        cfg = json.load(fh)
    with open(os.path.join(out_dir, "config.json"), "w") as fh:
        json.dump(cfg, fh, indent=1, sort_keys=True)
    record = dict(record)
    record["files"] = {"log": "trainer_state.json", "config": "config.json"}
    record["format"] = "trl_trainer_state"
    record["observed"] = observed or {"steps": state.get("global_step"), "diverged_step": None,
                                      "diverged_reason": None}
    with open(os.path.join(out_dir, "run.json"), "w") as fh:
        json.dump(jsonable(record), fh, indent=1)
    return record


def _hyper(spec, cfg) -> dict:
    return {"group_size": spec.group_size, "learning_rate": spec.learning_rate,
            "beta": spec.beta, "num_iterations": spec.num_iterations,
            "steps_per_generation": spec.steps_per_generation, "ppo_epochs": None,
            "train_batch_size": None, "ppo_mini_batch_size": None, "loss_type": spec.loss_type,
            "scale_rewards": spec.scale_rewards, "epsilon": spec.epsilon,
            "epsilon_high": spec.epsilon_high, "use_kl_in_reward": False,
            "kl_loss_type": "k3" if spec.beta > 0 else None,
            "optimizer": "sgd" if spec.optimizer == "sgd" else "adamw",
            "momentum": spec.momentum if spec.optimizer == "sgd" else None,
            "max_steps": spec.steps}


def failure_runs(root, *, settings=None, seeds=(0, 1, 2), progress=None, keep_going=True,
                 executor=None):
    """Run every failure setting with every seed and write the run directories under
    ``root``; returns the list of records (one per run).  ``executor``: where the runs go
    (:mod:`grpo_theory.lab.parallel`; default this process); a run that fails twice is
    reported by a ``RuntimeError`` naming it, after every other run was written."""
    from .parallel import SerialExecutor, TaskFailure

    settings = SETTINGS if settings is None else settings
    vers = versions()
    jobs = [(str(root), s, seed, vers) for s in settings for seed in seeds]
    names = [f"lab_{s.name}_s{seed}" for _, s, seed, _ in jobs]
    ex = executor or SerialExecutor()
    if isinstance(ex, SerialExecutor):   # one by one, with the progress bar
        out = [ex.map(failure_run, [job], [name])[0]
               for job, name in (progress(list(zip(jobs, names))) if progress
                                 else zip(jobs, names))]
    else:
        out = ex.map(failure_run, jobs, names)
    failed = [r for r in out if isinstance(r, TaskFailure)]
    if failed and not keep_going:
        raise RuntimeError("; ".join(str(f) for f in failed))
    if failed:
        raise RuntimeError(f"{len(failed)} failure run(s) failed twice (the others are "
                           "written): " + "; ".join(str(f) for f in failed))
    return out


def failure_run(job) -> dict:
    """One labelled failure run, ``job = (root, setting, seed, versions)``: trains it and
    writes its directory; returns its record (a module-level function: a Ray task)."""
    root, setting, seed, vers = job
    lab = Lab(setting.task, replace(setting.model, seed=seed))
    try:
        lab_, ref, start, spec, facts = prepare(setting, seed, lab=lab)
        tmp = tempfile.mkdtemp(dir=lab.workdir)
        rec = lab.train(spec, state=start, reference=(ref, "reference"), out_dir=tmp,
                        eval_every=5)
        rid = f"lab_{setting.name}_s{seed}"
        record = {
            "id": rid, "setting": setting.name, "seed": seed, "mode": setting.mode,
            "cause": setting.cause, "framework": f"TRL {vers['trl']} GRPOTrainer (CPU)",
            "task": (f"single-token arithmetic '(a + b) mod {setting.task.modulus}', "
                     f"{setting.task.prompts} prompts"
                     + (f", training verifier also accepts '{setting.task.shortcut}'"
                        if setting.task.shortcut else "")),
            "model": (f"GPT-2 (random init, width {lab.model_spec.width}, "
                      f"{lab.model_spec.layers} layers), answer-restricted head, "
                      "supervised warm start"),
            "model_parameters": lab.parameter_count(),
            "model_params_billion": lab.parameter_count() / 1e9,
            "hyperparameters": _hyper(spec, None),
            "reward": {"key": "reward", "binary": True, "range": [0, 1],
                       "note": "TRL's batch mean of the training verifier's 0/1 reward; "
                               "lab/expected_reward is its exact expectation after the "
                               "step, eval_reward the true verifier's exact expected reward "
                               "(every 5 steps)"},
            "labels": {**setting.labels, "kind": "grpo"},
            "evidence": {k: f"by construction: {setting.cause}"
                         for k, v in setting.labels.items() if v is True},
            "facts": facts, "family": None, "split": "dev", "versions": vers,
            "generator": "python benchmarks/lab_runs/regenerate.py",
        }
        return write_run(rec, os.path.join(root, rid), record=record)
    finally:
        lab.close()


def relabel(root) -> int:
    """Rewrite the labels, cause and evidence of the failure runs under ``root`` from the
    current :data:`~grpo_theory.lab.failures.SETTINGS` (no training); returns the count."""
    by_name = {s.name: s for s in SETTINGS}
    n = 0
    for d in sorted(os.listdir(root)):
        p = os.path.join(root, d, "run.json")
        if not os.path.isfile(p):
            continue
        with open(p) as fh:
            r = json.load(fh)
        s = by_name.get(r.get("setting"))
        if s is None:
            continue
        r["labels"] = {**s.labels, "kind": "grpo"}
        r["cause"] = s.cause
        r["mode"] = s.mode
        r["evidence"] = {k: f"by construction: {s.cause}" for k, v in s.labels.items() if v is True}
        with open(p, "w") as fh:
            json.dump(jsonable(r), fh, indent=1)
        n += 1
    return n


def family_runs(src_root, root, result: dict, *, versions: dict) -> list:
    """The family members of a full lab run (``run_lab(out=src_root)``) as labelled healthy
    runs under ``root`` (``lab_family_*``); ``result`` is the lab result's ``to_dict()``."""
    fams = {"group_size": result.get("group_family"), "model_size": result.get("size_family"),
            "learning_rate": result.get("rate_family")}
    records = []
    for varies, fam in fams.items():
        if not fam:
            continue
        for run in fam["runs"]:
            src = os.path.join(src_root, varies, run["dir"])
            with open(os.path.join(src, "config.json")) as fh:
                cfg = json.load(fh)
            value = {"group_size": run.get("G"), "model_size": run.get("parameters"),
                     "learning_rate": run.get("learning_rate")}[varies]
            labels = {k: False for k in LABEL_KEYS}
            labels["stable"] = True
            if varies == "group_size" and run["G"] <= 4:
                labels["advantage_degeneracy"] = "unknown"
            cause = ("family member (healthy by construction): std advantages, k3 KL beta "
                     f"{cfg['beta']:g} to a reference at p = 0.1, SGD on-policy (k = 1) at eta K "
                     "0.04-0.4 (exact theory: stable below 2), trained towards the fixed point; "
                     f"the family varies {varies}")
            rec = {"id": run["dir"], "setting": f"family_{varies}", "seed": run.get("seed"),
                   "mode": "healthy", "cause": cause,
                   "framework": f"TRL {versions['trl']} GRPOTrainer (CPU)",
                   "task": "single-token arithmetic '(a + b) mod 2', 16 prompts",
                   "model": f"GPT-2 (random init, width {run.get('width', 32)}, 2 layers), "
                            "answer-restricted head, supervised warm start",
                   "hyperparameters": {"group_size": cfg["num_generations"],
                                       "learning_rate": cfg["learning_rate"], "beta": cfg["beta"],
                                       "num_iterations": cfg["num_iterations"],
                                       "steps_per_generation": cfg["steps_per_generation"],
                                       "loss_type": cfg["loss_type"],
                                       "scale_rewards": cfg["scale_rewards"],
                                       "epsilon": cfg["epsilon"], "optimizer": cfg["optim"],
                                       "max_steps": cfg["max_steps"]},
                   "reward": {"key": "reward", "binary": True, "range": [0, 1]},
                   "labels": {**labels, "kind": "grpo"}, "evidence": {},
                   "facts": {k: v for k, v in run.items() if k not in ("dir",)},
                   "family": {"id": f"lab-{varies.replace('_', '-')}", "varies": varies,
                              "value": value},
                   "split": "dev", "versions": versions,
                   "generator": "python benchmarks/lab_runs/regenerate.py --only experiments"}
            records.append(write_dir(src, os.path.join(root, run["dir"]), record=rec))
    return records
