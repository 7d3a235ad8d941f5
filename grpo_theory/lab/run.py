"""``run_lab``: the lab's experiments in one call (quick: the CI smoke test; full: everything)."""

from __future__ import annotations

import os
import tempfile
import time

from grpo_theory.progress import progress
from grpo_theory.validate import ParameterError, check_choice, check_int, check_output_dir

from ._deps import require_lab, versions
from .adam import AdamSetup
from .experiments import Plateau, PlateauSpec, linear_response, momentum_transition, refresh_sweep
from .families import fit_r2, group_family, rate_family, size_family
from .engine import process_rank
from .parallel import make_executor
from .results import LabResult
from .stiffness import ROUTES
from .task import TaskSpec

__all__ = ["run_lab", "EXPERIMENTS", "OUT_DIRS"]

#: sub-experiments of ``grpo-theory lab``
EXPERIMENTS = ("all", "stiffness", "refresh", "transition", "group-size", "model-size",
               "learning-rate")
#: the subdirectories of ``out`` the lab writes its runs' TRL logs into (an earlier output there
#: is refused unless ``force``)
OUT_DIRS = ("group_size", "model_size", "learning_rate", "refresh", "stiffness", "transition")


def _progress(desc):
    return lambda it: progress(it, desc=desc)


def run_lab(*, quick: bool = False, experiment: str = "all", out=None, force: bool = False,
            seed: int = 0, group_size: int = 8, refresh_intervals=None, modulus: int = 2,
            threads: int = 1, model=None, kernel: str = "auto", ray=None, ray_workers: int = 2,
            device: str = "cpu"):
    """Run the lab; returns a :class:`~grpo_theory.lab.results.LabResult`.

    ``quick``: the stiffness two ways, one refresh-threshold bracket (steps_per_generation,
    heavy ball mu = 0.5, the exact k_max and k_max + 1) and one group-size pair (G = 4, 16);
    ``quick`` with ``experiment="refresh"``: the bracket alone (the smallest experiment: the
    multi-process and Ray checks run it).  ``experiment``: one of :data:`EXPERIMENTS`.
    ``model``: a Hugging Face causal LM (``from_pretrained``: a local directory or a hub name)
    instead of the built-in tiny GPT-2 (the width family then declines: the architecture is
    given).  ``kernel``: the tangent kernel's route (``auto``, ``full``, ``lanczos``:
    :func:`grpo_theory.lab.stiffness.top_mode`).  ``ray``: run the independent runs on Ray
    (``"local"``: a local instance with ``ray_workers`` CPUs; an address: that cluster);
    under ``accelerate launch`` every run is data-parallel over the processes (global batch
    unchanged).  ``device``: ``cpu`` or ``cuda``.  ``out``: a
    directory for the runs' TRL logs (``trainer_state.json``, ``config.json`` per run, under
    :data:`~grpo_theory.lab.OUT_DIRS`), checked before any work: one holding an earlier lab
    output is refused unless ``force``; a temporary directory otherwise.  ``refresh_intervals``: the k of the headline sweep (each >= 1).
    ``modulus``: the task's answers 0..m-1; the plateau experiments need the two-answer task
    (m = 2, the theory's bandit), and an answer the tokenizer cannot express is refused.
    """
    experiment = check_choice("experiment", experiment, EXPERIMENTS)
    TaskSpec(modulus=modulus)   # the tokenizer must express every answer
    if modulus != 2:
        raise ParameterError("modulus", modulus, "2 for the lab's plateau experiments (each "
                             "prompt then is the theory's two-action bandit)")
    seed = check_int("seed", seed, low=0)
    group_size = check_int("group_size", group_size, low=2)
    if refresh_intervals is not None:
        refresh_intervals = [check_int("refresh_interval", k, low=1) for k in refresh_intervals]
    kernel = check_choice("kernel", kernel, ROUTES)
    device = check_choice("device", device, ("cpu", "cuda"))
    ray_workers = check_int("ray_workers", ray_workers, low=1)
    if ray not in (None, False, True, "local", "auto") and ":" not in str(ray):
        raise ParameterError("ray", ray, "no value (a local Ray instance), auto, or a cluster "
                             "address host:port / ray://host:port (the experiment goes before "
                             "--ray)")
    if model is not None and os.path.sep in str(model) and not os.path.isdir(str(model)):
        raise ParameterError("model", model, "a directory written by save_pretrained, or a hub "
                             "name (owner/name) on a machine with the network")
    if out is not None:
        out = check_output_dir("--out", out, writes=OUT_DIRS, force=force)
    require_lab()

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
    executor = make_executor(ray, ray_workers, device=device)
    try:
        plat = Plateau(PlateauSpec(group_size=group_size, seed=seed), threads=threads,
                       source=model, kernel=kernel, executor=executor,
                       out=None if out is None else root, device=device)
        only_refresh = quick and experiment == "refresh"
        want = (lambda name: True) if (quick or experiment == "all") else (
            lambda name: name == experiment)
        stiff = {"ntk": plat.K_ntk, "response": None, "response_se": None,
                 "ntk_top_over_n": plat.mode.ntk_over_n,
                 "uniform_overlap": plat.mode.uniform_overlap,
                 "spectrum_over_n": [float(x) for x in plat.mode.spectrum[:4] / plat.spec.prompts],
                 "stiffness_bandit": plat.fp.stiffness, "kappa": 2.0,
                 "kernel_route": plat.mode.route, "kernel_iterations": plat.mode.iterations,
                 "kernel_residual": plat.mode.residual}
        if (want("stiffness") or want("refresh")) and not only_refresh:
            K, se, _ = linear_response(plat, pairs=2 if quick else 6, steps=15 if quick else 20,
                                       seed=seed + 100)
            stiff.update(response=K, response_se=se)
        sweeps = []
        unsafe = None
        if quick:
            ks = refresh_intervals or [4, 5]
            sweeps.append(refresh_sweep(plat, ks, knob="steps_per_generation", momentum=0.5,
                                        target=4, pairs=3, windows=3, seed=seed,
                                        name="steps_per_generation, SGD heavy ball mu = 0.5"))
        elif want("refresh"):
            sweeps += _full_sweeps(plat, seed, refresh_intervals, progress=_progress("sweeps"))
            unsafe = _unsafe_sweep(seed, threads, source=model, kernel=kernel, executor=executor,
                                   device=device)
        transition = None
        if not quick and want("transition"):
            transition = momentum_transition(plat, seed=seed + 500)
        gf = sf = rf = r2 = None
        fam_paths = []
        if quick and not only_refresh:
            gf = group_family(os.path.join(root, "group_size"), values=(4, 16), seeds=(seed,),
                              steps=60, start_p=0.4, variant={"bandit_lr": 0.4}, source=model,
                              executor=executor)
        elif want("group-size") and not quick:
            gf = group_family(os.path.join(root, "group_size"), seeds=(0, 1, 2),
                              progress=_progress("group-size family"), source=model,
                              executor=executor)
        if gf is not None:
            fam_paths += [m["record"].trainer_state_path for m in gf.pop("_members")]
            gf.pop("_comparisons")
        if not quick and want("model-size") and model is not None:
            notes.append("model-size family: declined, --model gives the architecture (the "
                         "family varies the built-in GPT-2's width)")
        elif not quick and want("model-size"):
            sf = size_family(os.path.join(root, "model_size"), progress=_progress("size family"),
                             executor=executor)
            fam_paths += sf.pop("_paths")
        if not quick and want("learning-rate"):
            rf = rate_family(os.path.join(root, "learning_rate"),
                             progress=_progress("learning-rate family"), source=model,
                             executor=executor)
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
        described = plat.lab.describe()
        failed = [f.to_dict() for f in plat.failures]
        for fam in (gf, sf, rf):
            failed += (fam or {}).get("failed_tasks", [])
        rank, processes = process_rank()
        plat.close()
        return LabResult(
            engine=f"trl {vers['trl']} GRPOTrainer (transformers {vers['transformers']}, "
                   f"torch {vers['torch']}, CPU)",
            quick=bool(quick), model_parameters=params, prompts=plat.spec.prompts,
            group_size=plat.spec.group_size, plateau=plateau, stiffness=stiff,
            sweeps=tuple(sweeps), transition=transition, group_family=gf, size_family=sf,
            rate_family=rf, fit_r2=r2, unsafe=unsafe, seconds=time.perf_counter() - t0,
            notes=tuple(notes), model=described, executor=executor.describe(),
            processes=processes, failed_tasks=tuple(failed))
    finally:
        executor.close()
        if tmp is not None:
            tmp.cleanup()


#: the plateau where the published rule is unsafe on the engine: std advantages, k3 KL with
#: beta = 3 to a reference at p = 0.005, G = 16 (p* = 0.069, fresh fraction -2.2)
UNSAFE = dict(p_ref=0.005, beta=3.0, group_size=16, kick=0.2)


def _full_sweeps(plat, seed, ks=None, progress=None):
    jobs = [
        dict(ks=ks or range(4, 9), knob="steps_per_generation", target=6, pairs=6, windows=4,
             name="steps_per_generation, SGD (clip off)"),
        dict(ks=ks or range(4, 9), knob="num_iterations", target=6, pairs=10, windows=4,
             name="num_iterations, SGD (clip off)"),
        dict(ks=ks or range(2, 7), knob="steps_per_generation", momentum=0.5, target=4, pairs=6,
             windows=5, name="steps_per_generation, SGD heavy ball mu = 0.5 (clip off)"),
        dict(ks=ks or range(5, 9), knob="steps_per_generation", target=6, epsilon=0.2, pairs=4,
             windows=4, name="steps_per_generation, SGD, TRL's clip epsilon = 0.2"),
        dict(ks=ks or range(3, 7), knob="steps_per_generation", target=4, adam=True, pairs=6,
             windows=5, name="steps_per_generation, AdamW beta1 = 0.5 (clip off)"),
    ]
    out = []
    adam = None
    for i, job in enumerate(progress(jobs) if progress else jobs):
        job = dict(job)
        if job.pop("adam", False):
            adam = adam or AdamSetup.measure(plat, beta1=0.5)
            job["adam"] = adam
        out.append(refresh_sweep(plat, job.pop("ks"), seed=seed + 10 * i, **job))
    return out


def _unsafe_sweep(seed, threads=1, **kw):
    plat = Plateau(PlateauSpec(seed=seed, **UNSAFE), threads=threads, **kw)
    try:
        sw = refresh_sweep(plat, (7, 8, 9), eta_K=0.12, pairs=8, windows=4, seed=seed + 77,
                           name=f"published rule unsafe: k3 beta = {UNSAFE['beta']:g} to p_ref = "
                                f"{UNSAFE['p_ref']:g}, G = {UNSAFE['group_size']} (p* = "
                                f"{plat.fp.p:.3f}, fresh fraction {plat.phi:.2f}), SGD, clip off")
    finally:
        plat.close()
    return sw
