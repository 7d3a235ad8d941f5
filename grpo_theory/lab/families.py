r"""Families the public record lacks: group size, model width, learning rate - on the engine.

Every member starts from the same reference (the warm-started GPT-2 placed at
:math:`z_{ref}` on every prompt) and trains with TRL towards the variant's fixed point;
the members differ in one knob.  Each run's ``trainer_state.json`` is written to disk and
read back by :func:`grpo_theory.runs.compare.compare` unchanged (the project's family
analysis: G-invariance, the fluctuation exponent against the exact finite-G prediction,
the time-scale laws) and by :func:`grpo_theory.runs.fitting.fit_log` (the closed-form fit's
R^2, the paper's headline).

The theory enters through the model object only (:func:`grpo_theory.lab._theory.lab_model`):
the exact finite-G fixed point :math:`p^*(G)` of each member is compared with the plateau
``compare`` fits, and the tangent-kernel stiffness of each width gives the size exponent
independently of the reward curves.
"""

from __future__ import annotations

import math
import os
import time

import numpy as np
from scipy.stats import t as student

from grpo_theory.runs.compare import compare
from grpo_theory.runs.fitting import fit_log
from grpo_theory.runs.logs import read_log
from grpo_theory.theory.derived import get

from . import _theory as th
from .engine import Lab, RunSpec
from .model import ModelSpec
from .stiffness import top_mode
from .task import TaskSpec

__all__ = ["FAMILY_VARIANT", "run_member", "group_family", "size_family", "rate_family",
           "fit_r2"]

#: the families' variant: TRL's default advantages (group std), k3 KL beta = 0.5 to a
#: reference at p = 0.1 (p* = 0.774 at G = 8); bandit learning rate 0.2 (eta K ~ 0.09)
FAMILY_VARIANT = dict(p_ref=0.1, beta=0.5, scale_rewards="group", bandit_lr=0.2, prompts=16)


def _z(p):
    return math.log(p / (1 - p))


def run_member(lab, spec, *, p_ref, out_dir, bandit_lr=None, scale=None, start_p=None):
    """One family member from the reference (or from every prompt at ``start_p``); returns
    (record, tangent-kernel scale at the start)."""
    ref = lab.placed_state(_z(p_ref))
    start = ref if start_p is None or start_p == p_ref else lab.placed_state(_z(start_p))
    if scale is None:
        scale = top_mode(lab, start).ntk_over_n / th.KAPPA
    if bandit_lr is not None:
        spec = spec.replace(learning_rate=bandit_lr / scale)
    rec = lab.train(spec, state=start, reference=(ref, "reference"), out_dir=out_dir,
                    eval_every=5)
    return rec, scale


def run_members(lab, specs, dirs, *, p_ref, executor=None, bandit_lr=None, scale=None,
                start_p=None):
    """Several members from the same start as one batch for the executor (this process or
    Ray; :mod:`grpo_theory.lab.parallel`): ``[(record or TaskFailure)]``, the scale."""
    from .parallel import SerialExecutor, TrainTask

    ref = lab.placed_state(_z(p_ref))
    start = ref if start_p is None or start_p == p_ref else lab.placed_state(_z(start_p))
    if scale is None:
        scale = top_mode(lab, start).ntk_over_n / th.KAPPA
    tasks = []
    for spec, d in zip(specs, dirs):
        if bandit_lr is not None:
            spec = spec.replace(learning_rate=bandit_lr / scale)
        tasks.append(TrainTask(name=os.path.basename(d), spec=spec, out_dir=d, eval_every=5))
    ex = executor or SerialExecutor()
    return ex.run(lab, tasks, state=start, reference=(ref, "reference")), scale


def _ok(rec):
    return hasattr(rec, "trainer_state_path")


def _compare(paths, by, values, metric=None, normalization="std"):

    return compare(paths, by=by, values=values, metric=metric, normalization=normalization)


def _reg(r):
    if r is None:
        return None
    return {"slope": r.slope, "interval": list(r.interval), "chi2_per_dof": r.birge ** 2, "n": r.n}


def group_family(root, *, values=(2, 4, 8, 16, 32), seeds=(0, 1, 2), steps=150, width=32,
                 progress=None, variant=None, start_p=0.4, source=None, executor=None) -> dict:
    """G family at equal prompts per step; ``compare --by group_size`` on TRL's reward and on
    the exact expected reward, and the exact finite-G plateaus.  Every member starts with
    every prompt at ``start_p`` (the reference stays at p_ref), so that most of the run is
    the plateau the fluctuation is measured on."""
    v = dict(FAMILY_VARIANT, **(variant or {}))
    t0 = time.perf_counter()
    lab = Lab(TaskSpec(modulus=2, prompts=v["prompts"]), ModelSpec(width=width, seed=0),
              source=source)
    paths, vals, members = [], [], []
    jobs = [(G, s) for G in values for s in seeds]
    specs = [RunSpec(group_size=G, beta=v["beta"], scale_rewards=v["scale_rewards"],
                     steps=steps, seed=seed) for G, seed in jobs]
    dirs = [os.path.join(root, f"lab_family_G{G}_s{seed}") for G, seed in jobs]
    recs, scale = run_members(lab, specs, dirs, p_ref=v["p_ref"], executor=executor,
                              bandit_lr=v["bandit_lr"], start_p=start_p)
    failed = [r for r in recs if not _ok(r)]
    for (G, seed), d, rec in zip((progress(jobs) if progress else jobs), dirs, recs):
        if not _ok(rec):
            continue
        spec = rec.spec
        fp = th.fixed_point_of(th.lab_model(spec, p_ref=v["p_ref"], prompts=v["prompts"]))
        paths.append(rec.trainer_state_path)
        vals.append(G)
        late = rec.p_correct[len(rec.p_correct) * 2 // 3:].mean(1)
        members.append({"G": G, "seed": seed, "path": d, "p_star_exact": fp.p,
                        "stiffness_bandit": fp.stiffness, "spec": spec, "record": rec,
                        "late_expected": float(late.mean()),
                        "late_expected_sd": float(late.std(ddof=1))})
    lab.close()
    norm = "std" if v["scale_rewards"] == "group" else "mean"
    res = _compare(paths, "group_size", vals, normalization=norm)
    res_exp = _compare(paths, "group_size", vals, metric="lab/expected_reward",
                       normalization=norm)
    out = _group_summary(res, res_exp, members, v)
    out["seconds"] = time.perf_counter() - t0
    out["runs"] = [{"G": m["G"], "seed": m["seed"], "dir": os.path.basename(m["path"]),
                    "p_star_exact": m["p_star_exact"], "late_expected": m["late_expected"]}
                   for m in members]
    out["failed_tasks"] = [f.to_dict() for f in failed]
    out["_members"] = members
    out["_comparisons"] = (res, res_exp)
    return out


def _group_summary(res, res_exp, members, v) -> dict:
    a, b = res.analysis, res_exp.analysis
    by_G = {}
    for f, m in zip(res.runs, members):
        by_G.setdefault(m["G"], []).append((f.plateau, m["p_star_exact"], m["late_expected"]))
    def fitted_mean(xs):     # None where compare fitted no run of this G (e.g. `fit` declines them)
        xs = [x for x in xs if math.isfinite(x)]
        return float(np.mean(xs)) if xs else None

    plateaus = [{"G": G, "fitted_plateau_mean": fitted_mean([x for x, _, _ in rows]),
                 "late_expected_reward_mean": float(np.mean([e for _, _, e in rows])),
                 "late_expected_reward_se": float(np.std([e for _, _, e in rows], ddof=1)
                                                  / math.sqrt(len(rows))) if len(rows) > 1
                 else None,
                 "p_star_exact": rows[0][1]} for G, rows in sorted(by_G.items())]
    out = {
        "values": sorted({m["G"] for m in members}),
        "variant": v,
        "invariant": a.invariant, "p_value": a.p_value, "chi2": a.chi2, "chi2_dof": a.chi2_dof,
        "exponent": None if a.exponent is None else a.exponent.slope,
        "exponent_interval": None if a.exponent is None else list(a.exponent.interval),
        "predicted_exponent": a.predicted_exponent, "agrees": a.agrees,
        "declined": a.declined,
        "expected_reward": {
            "invariant": b.invariant, "p_value": b.p_value,
            "exponent": None if b.exponent is None else b.exponent.slope,
            "exponent_interval": None if b.exponent is None else list(b.exponent.interval),
            "predicted_exponent": b.predicted_exponent, "agrees": b.agrees,
            "declined": b.declined},
        "plateaus": plateaus,
    }
    ex = out["exponent"]
    out["summary"] = (
        f"G = {out['values']}: invariance {'not rejected' if a.invariant else 'rejected'} "
        f"(p = {a.p_value:.2g}); TRL reward fluctuation ~ G^{ex:.2f} "
        f"[{out['exponent_interval'][0]:.2f}, {out['exponent_interval'][1]:.2f}] vs exact "
        f"finite-G {a.predicted_exponent:.2f}; exact plateau p*(G) "
        + ", ".join(f"{p['p_star_exact']:.3f}" for p in plateaus) + " vs the engine's late "
        "expected reward " + ", ".join(f"{p['late_expected_reward_mean']:.3f}" for p in plateaus)
        if ex is not None and a.p_value is not None else "declined: " + "; ".join(
            f"{k}: {v}" for k, v in a.declined.items()))
    return out


def size_family(root, *, widths=(24, 32, 48, 64), seeds=(0, 1), steps=150, group_size=8,
                eta_K_max=0.15, progress=None, executor=None) -> dict:
    """Width family at one TRL learning rate (set so that the stiffest member has eta K =
    ``eta_K_max``): ``compare --by model_size`` gives alpha from the reward curves; the
    tangent-kernel stiffness of each member gives it independently."""
    v = FAMILY_VARIANT
    t0 = time.perf_counter()
    labs = {}
    scales = {}
    for w in widths:
        for s in seeds:
            lab = Lab(TaskSpec(modulus=2, prompts=v["prompts"]), ModelSpec(width=w, seed=s))
            ref = lab.placed_state(_z(v["p_ref"]))
            scales[(w, s)] = top_mode(lab, ref).ntk_over_n / th.KAPPA
            labs[(w, s)] = lab
    spec0 = RunSpec(group_size=group_size, beta=v["beta"], scale_rewards=v["scale_rewards"],
                    steps=steps)
    fp = th.fixed_point_of(th.lab_model(spec0, p_ref=v["p_ref"], prompts=v["prompts"]))
    eta = eta_K_max / (fp.stiffness * max(scales.values()))
    paths, vals, rows = [], [], []
    jobs = list(labs)
    from .parallel import RayExecutor

    if isinstance(executor, RayExecutor):   # every member at once: one lab per member
        import concurrent.futures as cf

        with cf.ThreadPoolExecutor(len(jobs)) as pool:
            futs = [pool.submit(run_members, labs[j], [spec0.replace(learning_rate=eta,
                                                                     seed=j[1])],
                                [os.path.join(root, f"lab_family_width{j[0]}_s{j[1]}")],
                                p_ref=v["p_ref"], executor=executor, scale=scales[j])
                    for j in jobs]
            done = {j: f.result()[0][0] for j, f in zip(jobs, futs)}
    else:
        done = {}
    failed = []
    for (w, s) in (progress(jobs) if progress else jobs):
        lab = labs[(w, s)]
        d = os.path.join(root, f"lab_family_width{w}_s{s}")
        rec = done.get((w, s))
        if rec is None:
            rec = run_members(lab, [spec0.replace(learning_rate=eta, seed=s)], [d],
                              p_ref=v["p_ref"], executor=executor, scale=scales[(w, s)])[0][0]
        if not _ok(rec):
            failed.append(rec)
            lab.close()
            continue
        n = lab.parameter_count()
        paths.append(rec.trainer_state_path)
        vals.append(n)
        rows.append({"width": w, "seed": s, "parameters": n, "dir": os.path.basename(d),
                     "learning_rate": eta,
                     "K_top": fp.stiffness * scales[(w, s)],
                     "eta_K": eta * fp.stiffness * scales[(w, s)]})
        lab.close()
    res = _compare(paths, "model_size", vals)
    a = res.analysis
    x = np.log([r["parameters"] for r in rows])
    y = np.log([r["K_top"] for r in rows])
    A = np.vstack([x, np.ones_like(x)]).T
    coef, *_ = np.linalg.lstsq(A, y, rcond=None)
    resid = y - A @ coef
    se = math.sqrt(np.sum(resid ** 2) / max(len(x) - 2, 1) / np.sum((x - x.mean()) ** 2))
    q = student.ppf(0.975, max(len(x) - 2, 1))
    reg = a.regression
    alpha = None if reg is None else _alpha(reg)
    # run by run: the fitted time scale against the kernel's prediction 1/(eta K_top)
    pairs = [(f.tau, 1.0 / r["eta_K"]) for f, r in zip(res.runs, rows) if f.identified]
    tau_vs_kernel = None
    if len(pairs) >= 3:
        xt = np.log([p_[1] for p_ in pairs])
        yt = np.log([p_[0] for p_ in pairs])
        At = np.vstack([xt, np.ones_like(xt)]).T
        ct, *_ = np.linalg.lstsq(At, yt, rcond=None)
        rt = yt - At @ ct
        st = math.sqrt(np.sum(rt ** 2) / max(len(xt) - 2, 1) / np.sum((xt - xt.mean()) ** 2))
        qt = student.ppf(0.975, max(len(xt) - 2, 1)) if len(xt) > 2 else float("nan")
        tau_vs_kernel = {"slope": float(ct[0]), "interval": [float(ct[0] - qt * st),
                                                              float(ct[0] + qt * st)],
                         "runs": len(pairs), "K_top_range": [float(min(r["K_top"] for r in rows)),
                                                             float(max(r["K_top"] for r in rows))]}
        for f, r in zip(res.runs, rows):
            r["tau"] = float(f.tau) if f.identified else None
    out = {"widths": list(widths), "learning_rate": eta, "runs": rows,
           "alpha": None if alpha is None else alpha[0],
           "alpha_interval": None if alpha is None else [alpha[1], alpha[2]],
           "tau_regression": _reg(reg), "reading": a.reading, "declined": a.declined,
           "tau_vs_kernel": tau_vs_kernel,
           "alpha_kernel": float(coef[0]),
           "alpha_kernel_interval": [float(coef[0] - q * se), float(coef[0] + q * se)],
           "seconds": time.perf_counter() - t0, "failed_tasks": [f.to_dict() for f in failed]}
    out["summary"] = (
        f"widths {list(widths)}: alpha from the reward curves "
        + (f"{out['alpha']:.3g} [{out['alpha_interval'][0]:.3g}, {out['alpha_interval'][1]:.3g}]"
           if alpha else "declined")
        + f"; from the tangent kernel (K_top ~ N^alpha) {out['alpha_kernel']:.3g} "
          f"[{out['alpha_kernel_interval'][0]:.3g}, {out['alpha_kernel_interval'][1]:.3g}]"
        + ("" if tau_vs_kernel is None else
           f"; run by run, log tau against log 1/(eta K_top): slope {tau_vs_kernel['slope']:.3g} "
           f"[{tau_vs_kernel['interval'][0]:.3g}, {tau_vs_kernel['interval'][1]:.3g}] over K_top "
           f"{tau_vs_kernel['K_top_range'][0]:.3g}-{tau_vs_kernel['K_top_range'][1]:.3g}"))
    out["_paths"] = paths
    return out


def _alpha(reg):
    per_alpha = float(get("oscillator.scaling_exponent").numeric(1.0, 0.0, 1.0, 1.0, 0.0))
    lo, hi = sorted((reg.interval[0] / per_alpha, reg.interval[1] / per_alpha))
    return reg.slope / per_alpha, lo, hi


def rate_family(root, *, bandit_lrs=(0.1, 0.2, 0.4, 0.8), seeds=(0, 1), steps=150, width=32,
                group_size=8, progress=None, source=None, executor=None) -> dict:
    """Learning-rate family: ``compare --by learning_rate`` (tau ~ 1/eta without lag)."""
    v = FAMILY_VARIANT
    t0 = time.perf_counter()
    lab = Lab(TaskSpec(modulus=2, prompts=v["prompts"]), ModelSpec(width=width, seed=0),
              source=source)
    ref = lab.placed_state(_z(v["p_ref"]))
    scale = top_mode(lab, ref).ntk_over_n / th.KAPPA
    paths, vals, rows = [], [], []
    jobs = [(b, s) for b in bandit_lrs for s in seeds]
    specs = [RunSpec(group_size=group_size, beta=v["beta"], scale_rewards=v["scale_rewards"],
                     steps=steps, seed=s, learning_rate=blr / scale) for blr, s in jobs]
    dirs = [os.path.join(root, f"lab_family_lr{blr:g}_s{s}") for blr, s in jobs]
    recs, _ = run_members(lab, specs, dirs, p_ref=v["p_ref"], executor=executor, scale=scale)
    failed = [r for r in recs if not _ok(r)]
    for (blr, s), d, rec in zip((progress(jobs) if progress else jobs), dirs, recs):
        if not _ok(rec):
            continue
        paths.append(rec.trainer_state_path)
        vals.append(rec.spec.learning_rate)
        rows.append({"bandit_lr": blr, "learning_rate": rec.spec.learning_rate, "seed": s,
                     "dir": os.path.basename(d)})
    lab.close()
    res = _compare(paths, "learning_rate", vals)
    a = res.analysis
    reg = a.regression
    out = {"bandit_lrs": list(bandit_lrs), "runs": rows, "exponent": None if reg is None else reg.slope,
           "exponent_interval": None if reg is None else list(reg.interval),
           "expected": a.expected, "agrees": a.agrees, "reading": a.reading,
           "declined": a.declined, "seconds": time.perf_counter() - t0,
           "failed_tasks": [f.to_dict() for f in failed]}
    out["summary"] = (f"bandit learning rates {list(bandit_lrs)}: tau ~ eta^"
                      + (f"{reg.slope:.3g} [{reg.interval[0]:.3g}, {reg.interval[1]:.3g}]"
                         if reg else "declined") + f", theory {a.expected}")
    out["_paths"] = paths
    return out


def fit_r2(paths) -> dict:
    """R^2 of the closed-form fits on each run's TRL reward curve: the single exponential (the
    paper's law) and every family ``fit_log`` knows, with the signal share of each curve."""

    per_model, ceilings = {}, []
    for p in paths:
        rep = fit_log(read_log(p))
        ceilings.append(float(rep.applicable["signal_share"]))
        for name, m in rep.models.items():
            if m.get("r2") is not None:
                per_model.setdefault(name, []).append(float(m["r2"]))
    if "exponential" not in per_model:
        return None
    vals = per_model["exponential"]
    return {"median": float(np.median(vals)), "min": float(np.min(vals)),
            "max": float(np.max(vals)), "runs": len(vals), "values": vals,
            "noise_ceiling_median": float(np.median(ceilings)),
            "by_model": {k: {"median": float(np.median(v)), "min": float(np.min(v)),
                             "fraction_at_least_0.91": float(np.mean(np.array(v) >= 0.91))}
                         for k, v in per_model.items()}}
