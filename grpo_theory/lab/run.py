"""``run_lab``: the lab's experiments in one call (quick: the CI smoke test; full: everything)."""

from __future__ import annotations

import math
import os
import tempfile
import time

from grpo_theory.validate import ParameterError, check_choice, check_int

__all__ = ["run_lab", "EXPERIMENTS"]

#: sub-experiments of ``grpo-theory lab``
EXPERIMENTS = ("all", "stiffness", "refresh", "transition", "group-size", "model-size",
               "learning-rate")


def _progress(desc):
    from grpo_theory.progress import progress

    return lambda it: progress(it, desc=desc)


def run_lab(*, quick: bool = False, experiment: str = "all", out=None, seed: int = 0,
            group_size: int = 8, refresh_intervals=None, modulus: int = 2, threads: int = 1):
    """Run the lab; returns a :class:`~grpo_theory.lab.results.LabResult`.

    ``quick``: the stiffness two ways, one refresh-threshold bracket (steps_per_generation,
    heavy ball mu = 0.5, the exact k_max and k_max + 1) and one group-size pair (G = 4, 16).
    ``experiment``: one of :data:`EXPERIMENTS` (ignored with ``quick``).  ``out``: a
    directory for the runs' TRL logs (``trainer_state.json``, ``config.json`` per run); a
    temporary one otherwise.  ``refresh_intervals``: the k of the headline sweep (each >= 1).
    ``modulus``: the task's answers 0..m-1; the plateau experiments need the two-answer task
    (m = 2, the theory's bandit), and an answer the tokenizer cannot express is refused.
    """
    from ._deps import require_lab, versions

    from .task import TaskSpec

    experiment = check_choice("experiment", experiment, EXPERIMENTS)
    TaskSpec(modulus=modulus)   # the tokenizer must express every answer
    if modulus != 2:
        raise ParameterError("modulus", modulus, "2 for the lab's plateau experiments (each "
                             "prompt then is the theory's two-action bandit)")
    seed = check_int("seed", seed, low=0)
    group_size = check_int("group_size", group_size, low=2)
    if refresh_intervals is not None:
        refresh_intervals = [check_int("refresh_interval", k, low=1) for k in refresh_intervals]
    if out is not None:
        from grpo_theory.validate import check_output_dir

        out = check_output_dir("out", out)
    require_lab()
    from .experiments import Plateau, PlateauSpec, linear_response, momentum_transition, refresh_sweep
    from .families import fit_r2, group_family, rate_family, size_family
    from .results import LabResult

    t0 = time.perf_counter()
    vers = versions()
    tmp = None
    if out is None:
        tmp = tempfile.TemporaryDirectory(prefix="grpo_lab_runs_")
        root = tmp.name
    else:
        root = str(out)
        os.makedirs(root, exist_ok=True)
    notes = []
    try:
        plat = Plateau(PlateauSpec(group_size=group_size, seed=seed), threads=threads)
        want = (lambda name: True) if (quick or experiment == "all") else (
            lambda name: name == experiment)
        stiff = {"ntk": plat.K_ntk, "response": None, "response_se": None,
                 "ntk_top_over_n": plat.mode.ntk_over_n,
                 "uniform_overlap": plat.mode.uniform_overlap,
                 "spectrum_over_n": [float(x) for x in plat.mode.spectrum[:4] / plat.spec.prompts],
                 "stiffness_bandit": plat.fp.stiffness, "kappa": 2.0}
        if want("stiffness") or want("refresh"):
            K, se, _ = linear_response(plat, pairs=2 if quick else 6, steps=15 if quick else 20,
                                       seed=seed + 100)
            stiff.update(response=K, response_se=se)
        sweeps = []
        if quick:
            ks = refresh_intervals or [4, 5]
            sweeps.append(refresh_sweep(plat, ks, knob="steps_per_generation", momentum=0.5,
                                        target=4, pairs=2, windows=5, seed=seed,
                                        name="steps_per_generation, SGD heavy ball mu = 0.5"))
        elif want("refresh"):
            sweeps += _full_sweeps(plat, seed, refresh_intervals)
        transition = None
        if not quick and want("transition"):
            transition = momentum_transition(plat, seed=seed + 500)
        gf = sf = rf = r2 = None
        fam_paths = []
        if quick:
            gf = group_family(os.path.join(root, "group_size"), values=(4, 16), seeds=(seed,),
                              steps=60, start_p=0.4, variant={"bandit_lr": 0.4})
        elif want("group-size"):
            gf = group_family(os.path.join(root, "group_size"), seeds=(0, 1, 2),
                              progress=_progress("group-size family"))
        if gf is not None:
            fam_paths += [m["record"].trainer_state_path for m in gf.pop("_members")]
            gf.pop("_comparisons")
        if not quick and want("model-size"):
            sf = size_family(os.path.join(root, "model_size"), progress=_progress("size family"))
            fam_paths += sf.pop("_paths")
        if not quick and want("learning-rate"):
            rf = rate_family(os.path.join(root, "learning_rate"),
                             progress=_progress("learning-rate family"))
            fam_paths += rf.pop("_paths")
        if fam_paths:
            r2 = fit_r2(fam_paths)
        fp = plat.fp
        plateau = {"variant": f"TRL scale_rewards='{plat.spec.scale_rewards}', k3 KL beta = "
                              f"{plat.spec.beta:g} in the loss, clipped ratio (theory: std, k3, "
                              "ratio)",
                   "p_ref": plat.spec.p_ref, "beta": plat.spec.beta, "p_star": fp.p, "z_star": fp.z,
                   "stiffness_bandit": fp.stiffness, "fresh_fraction": fp.fresh_fraction,
                   "stiffness_fresh": fp.stiffness_fresh, "stiffness_stale": fp.stiffness_stale,
                   "width": plat.spec.width, "layers": plat.spec.layers,
                   "warm_start_mse": plat.lab.pretrain_loss}
        notes.append("stiffness: K_top = K_bandit/kappa * lambda_max(NTK)/N, kappa = 2; linear "
                     "response from +-kicks along the top mode with common random numbers (same "
                     "TRL seed for both signs)")
        params = plat.parameter_count()
        plat.close()
        return LabResult(
            engine=f"trl {vers['trl']} GRPOTrainer (transformers {vers['transformers']}, "
                   f"torch {vers['torch']}, CPU)",
            quick=bool(quick), model_parameters=params, prompts=plat.spec.prompts,
            group_size=plat.spec.group_size, plateau=plateau, stiffness=stiff,
            sweeps=tuple(sweeps), transition=transition, group_family=gf, size_family=sf,
            rate_family=rf, fit_r2=r2, seconds=time.perf_counter() - t0, notes=tuple(notes))
    finally:
        if tmp is not None:
            tmp.cleanup()


def _full_sweeps(plat, seed, ks=None):
    from .experiments import refresh_sweep

    out = []
    out.append(refresh_sweep(plat, ks or range(4, 9), knob="steps_per_generation", target=6,
                             pairs=4, windows=6, seed=seed,
                             name="steps_per_generation, SGD"))
    out.append(refresh_sweep(plat, ks or range(4, 9), knob="num_iterations", target=6,
                             pairs=4, windows=6, seed=seed + 1,
                             name="num_iterations, SGD"))
    out.append(refresh_sweep(plat, ks or range(2, 7), knob="steps_per_generation", momentum=0.5,
                             target=4, pairs=4, windows=6, seed=seed + 2,
                             name="steps_per_generation, SGD heavy ball mu = 0.5"))
    return out
