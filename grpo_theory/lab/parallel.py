r"""The independent runs of an experiment as tasks: in this process, or on Ray.

An experiment (a refresh sweep's k x pairs x signs, a family's members) hands a batch of
:class:`TrainTask` to an executor together with what the batch shares (the starting state,
the reference, the kick direction); the executor returns, in the tasks' order, a
:class:`~grpo_theory.lab.engine.RunRecord` per task or a :class:`TaskFailure`.

* :class:`SerialExecutor` runs them one after the other in this process (the default).
* :class:`RayExecutor` runs them as Ray tasks (``grpo-theory lab --ray`` starts a local Ray
  instance with ``--ray-workers`` CPUs; ``--ray ADDRESS`` joins an existing cluster, whose
  nodes must have this package installed and, with ``--out``, see the same filesystem).  Each
  worker rebuilds the lab once from :meth:`Lab.config` (the task, the model spec or the
  ``from_pretrained`` source) and keeps it; the shared states go through the object store once
  per batch.  Ray is the optional extra ``lab-ray``: ``pip install 'grpo-theory[lab-ray]'``.

Both executors give the same answer: a run is ``GRPOTrainer.train()`` seeded by its
``RunSpec.seed``, single-threaded, from the same tensors, so a task's record does not depend
on the process that ran it (``tests/lab/test_distributed.py`` compares them bit for bit).

Failures: a task that raises (or whose worker dies) is run once more; if it fails again it is
returned as a :class:`TaskFailure` (name, attempts, both errors) and the experiment reports it
(``LabResult.failed_tasks``, exit code 1) - never silently dropped.  A run that diverges is
not a failure: the engine records its step (:class:`~grpo_theory.lab.engine.RunRecord`).

With an output directory each task writes its TRL log (``trainer_state.json``,
``config.json``) and a ``run.json`` (the task's name, knobs, attempts, what was observed).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field

from grpo_theory.results import jsonable
from grpo_theory.validate import ParameterError, check_int

__all__ = ["TrainTask", "TaskFailure", "SerialExecutor", "RayExecutor", "make_executor",
           "RAY_MESSAGE", "ATTEMPTS"]

# Two shapes of task: ``run`` (a batch of TrainTask on one lab, the shared states sent once)
# and ``map`` (any picklable module-level function over items, for jobs that build their own
# lab, e.g. the labelled failures of grpo_theory.lab.dataset); the same retry rule for both.

#: attempts per task (the first and one retry)
ATTEMPTS = 2
RAY_MESSAGE = "--ray needs Ray: pip install 'grpo-theory[lab-ray]'"


@dataclass(frozen=True)
class TrainTask:
    """One run: ``spec`` (TRL's knobs and seed), ``kick``: the multiple of the batch's shared
    direction added to the starting parameters (None: no kick), ``out_dir``: where the run
    writes its TRL log and ``run.json`` (None: nothing written), ``record``: extra fields of
    ``run.json``."""

    name: str
    spec: object
    kick: float | None = None
    out_dir: str | None = None
    eval_every: int = 0
    record: dict = field(default_factory=dict)


@dataclass(frozen=True)
class TaskFailure:
    """A task that failed every attempt (it is reported, never dropped)."""

    name: str
    attempts: int
    errors: tuple

    def __str__(self):
        return f"{self.name}: failed {self.attempts} times ({self.errors[-1]})"

    def to_dict(self) -> dict:
        return {"name": self.name, "attempts": self.attempts, "errors": list(self.errors)}


def state_digest(state) -> str:
    """Content hash of a state dict (the reference's key in a worker, whose lab outlives one
    experiment: two references never share a directory)."""
    h = hashlib.sha1()
    for k in sorted(state):
        h.update(k.encode())
        h.update(state[k].detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


def execute(lab, task: TrainTask, state, reference, direction, *, attempt=1, worker="local"):
    """Run ``task`` on ``lab`` (see :class:`TrainTask`); writes ``run.json`` with an out_dir."""
    kick = None if task.kick is None else [task.kick * d for d in direction]
    rec = lab.train(task.spec, state=state, reference=reference, kick=kick, out_dir=task.out_dir,
                    eval_every=task.eval_every)
    if task.out_dir is not None and rec.trainer_state_path is not None:
        run = {"id": task.name, "spec": asdict(task.spec), "kick": task.kick,
               "attempts": attempt, "worker": worker,
               "observed": {"steps": rec.steps_done, "diverged_step": rec.diverged_step,
                            "diverged_reason": rec.diverged_reason or None},
               "files": {"log": "trainer_state.json", "config": "config.json"},
               "format": "trl_trainer_state", **task.record}
        with open(os.path.join(task.out_dir, "run.json"), "w") as fh:
            json.dump(jsonable(run), fh, indent=1)
    return rec


class SerialExecutor:
    """The tasks one after the other in this process (each retried once on an exception)."""

    name = "serial"
    workers = 1

    def run(self, lab, tasks, *, state, reference, direction=None) -> list:
        out = []
        for t in tasks:
            errors = []
            for attempt in range(1, ATTEMPTS + 1):
                try:
                    out.append(execute(lab, t, state, reference, direction, attempt=attempt))
                    break
                except Exception as exc:   # noqa: BLE001 - reported below, never dropped
                    errors.append(f"{type(exc).__name__}: {str(exc)[:200]}")
            else:
                out.append(TaskFailure(t.name, ATTEMPTS, tuple(errors)))
        return out

    def map(self, fn, items, names=None) -> list:
        """``[fn(item)]`` in order, each retried once; a TaskFailure for one that fails twice."""
        out = []
        for i, item in enumerate(items):
            errors = []
            for _ in range(ATTEMPTS):
                try:
                    out.append(fn(item))
                    break
                except Exception as exc:   # noqa: BLE001 - reported below, never dropped
                    errors.append(f"{type(exc).__name__}: {str(exc)[:200]}")
            else:
                out.append(TaskFailure(names[i] if names else str(item), ATTEMPTS, tuple(errors)))
        return out

    def close(self):
        pass

    def describe(self) -> str:
        return "serial (this process)"


_WORKER_LABS = {}


class RemoteError(RuntimeError):
    """An exception of a Ray task, as its type and message (the project's ``ParameterError``
    and others with their own constructors do not survive Ray's pickling)."""


def _portable(fn):
    def wrapped(*args):
        try:
            return fn(*args)
        except Exception as exc:   # noqa: BLE001 - re-raised as a picklable one
            raise RemoteError(f"{type(exc).__name__}: {str(exc)[:300]}") from None

    wrapped.__name__ = fn.__name__
    return wrapped


def _remote_task(config, shared, task, attempt):
    """The body of a Ray task: the worker's lab (built once per configuration), one run."""
    from .engine import Lab

    key = json.dumps(jsonable(config), sort_keys=True)
    lab = _WORKER_LABS.get(key)
    if lab is None:
        lab = _WORKER_LABS[key] = Lab.from_config(config)
    state, reference, direction = shared
    rec = execute(lab, task, state, reference, direction, attempt=attempt,
                  worker=f"ray pid {os.getpid()}")
    rec.extra.pop("final_state", None)   # the driver does not need it; it may be large
    return rec


def _remote_call(fn, item):
    return fn(item)


_remote_task_portable = _portable(_remote_task)
_remote_call_portable = _portable(_remote_call)


class RayExecutor:
    """The tasks on Ray (a local instance with ``workers`` CPUs, or the cluster at
    ``address``); see the module docstring."""

    name = "ray"

    def __init__(self, address=None, workers: int = 2, *, gpus_per_task: float = 0.0):
        try:
            import ray
        except ImportError as exc:
            raise ParameterError("ray", address or "local", RAY_MESSAGE) from exc
        self.ray = ray
        self.workers = check_int("ray_workers", workers, low=1)
        self.address = address
        self._started = False
        if not ray.is_initialized():
            import grpo_theory

            pkg_root = os.path.dirname(os.path.dirname(os.path.abspath(grpo_theory.__file__)))
            env = {"GRPO_THEORY_PROGRESS": "0", "OMP_NUM_THREADS": "1",
                   "TOKENIZERS_PARALLELISM": "false"}
            kw = dict(include_dashboard=False, log_to_driver=False, logging_level="ERROR",
                      configure_logging=True)
            if address is None:
                # this checkout first on the workers' path (a local instance runs this code)
                env["PYTHONPATH"] = os.pathsep.join(
                    [pkg_root] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                                  if p])
                kw.update(num_cpus=self.workers, num_gpus=0 if not gpus_per_task else None)
            ray.init(address=address, runtime_env={"env_vars": env}, **kw)
            self._started = True
        self._fn = ray.remote(num_cpus=1, num_gpus=gpus_per_task,
                              max_retries=0)(_remote_task_portable)
        self._call = ray.remote(num_cpus=1, num_gpus=gpus_per_task,
                                max_retries=0)(_remote_call_portable)

    def _gather(self, submit, n, names):
        """Submit ``submit(i)`` for i < n, retry each failed one once, return in order."""
        ray = self.ray
        pending = {submit(i): (i, 1, []) for i in range(n)}
        out = [None] * n
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            i, attempt, errors = pending.pop(done[0])
            try:
                out[i] = ray.get(done[0])
            except Exception as exc:   # noqa: BLE001 - a task error or a dead worker
                cause = getattr(exc, "cause", None) or exc
                text = str(cause).splitlines()[0][:300] if str(cause) else ""
                errors = errors + [text if isinstance(cause, RemoteError)
                                   else f"{type(cause).__name__}: {text}"]
                if attempt < ATTEMPTS:
                    pending[submit(i, attempt + 1)] = (i, attempt + 1, errors)
                else:
                    out[i] = TaskFailure(names[i], attempt, tuple(errors))
        return out

    def map(self, fn, items, names=None) -> list:
        """``[fn(item)]`` as Ray tasks, in order; each retried once, then a TaskFailure."""
        items = list(items)
        return self._gather(lambda i, attempt=1: self._call.remote(fn, items[i]), len(items),
                            names or [str(x) for x in items])

    def run(self, lab, tasks, *, state, reference, direction=None) -> list:
        ray = self.ray
        ref_state, key = reference
        reference = (ref_state, f"{key}-{state_digest(ref_state)}")
        shared = ray.put((state, reference, direction))
        cfg = lab.config()
        return self._gather(lambda i, attempt=1: self._fn.remote(cfg, shared, tasks[i], attempt),
                            len(tasks), [t.name for t in tasks])

    def close(self):
        if self._started:
            self.ray.shutdown()
            self._started = False

    def describe(self) -> str:
        return (f"Ray ({'local, ' + str(self.workers) + ' workers' if self.address is None else self.address})")


def make_executor(ray=None, workers: int = 2, *, device="cpu"):
    """``ray=None``: :class:`SerialExecutor`; ``"local"`` or ``True``: a local Ray instance
    with ``workers`` CPUs; any other string: the address of an existing Ray cluster."""
    if ray is None or ray is False:
        return SerialExecutor()
    address = None if ray in (True, "local") else str(ray)
    return RayExecutor(address, workers, gpus_per_task=1.0 if device == "cuda" else 0.0)

