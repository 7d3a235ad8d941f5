"""The lab beyond one process: accelerate (2 CPU processes, gloo) and Ray (2 workers).

Both are checked against the quick run of tests/lab/test_lab.py (the serial, single-process
reference, made once per session, on this file's xdist worker):

* ``accelerate launch --num_processes 2`` runs the quick refresh bracket (``lab --quick
  refresh``: the exact k_max and k_max + 1, the smallest experiment that has a k_max), each run
  data-parallel with the global batch unchanged, so the sampling differs: the per-window
  multipliers agree within two combined standard errors and k_max is the same;
* on Ray (one local instance with 2 workers, started once for this file, in this process) the
  bracket's k = k_max runs (6 tasks: 3 pairs x 2 signs) are the same seeded single-threaded
  ``GRPOTrainer.train()`` in other processes: the multiplier, its SE and the written TRL logs
  are the serial run's, bit for bit; and a task that fails on its worker is run twice, then
  reported.

All are in the default suite (Ray, the core package, is in the ``test`` extra; one local
instance without a dashboard).  The two-process test (marker ``distributed``) is the costliest:
its launcher and two processes importing torch and TRL cost about 45 s of CPU (``-m 'not
distributed'`` leaves it out of a local run).  All are in the ``lab`` xdist group (the quick
run's), so a run makes each once, on one worker.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("trl")
pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.xdist_group("lab")

BRACKET = ["lab", "--quick", "refresh", "--json", "--kernel", "lanczos"]


@pytest.fixture(scope="module")
def ray_local():
    """One local Ray instance with 2 workers for the file (the workers keep their lab)."""
    pytest.importorskip("ray", reason="pip install 'grpo-theory[lab-ray]'")
    from grpo_theory.lab.parallel import RayExecutor

    ex = RayExecutor(workers=2)
    yield ex
    ex.close()


def _run(cmd, timeout=900):
    env = dict(os.environ, PYTHONPATH=str(ROOT), GRPO_THEORY_PROGRESS="0")
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, timeout=timeout)
    assert p.returncode in (0, 1), p.stderr[-3000:]
    return json.loads(p.stdout), p


@pytest.mark.distributed
def test_two_processes_agree_with_one(quick, tiny_model_dir):
    """accelerate launch --num_processes 2 (CPU: gloo): per-window multipliers within two
    combined standard errors of the single-process run, the same observed k_max."""
    acc = shutil.which("accelerate")
    if acc is None:
        pytest.skip("accelerate's launcher is not on PATH")
    d, p = _run([acc, "launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
                 "--mixed_precision", "no", "--dynamo_backend", "no", "-m", "grpo_theory",
                 *BRACKET, "--model", tiny_model_dir])
    one = quick[0]
    for run, rows in (("1 process", one), ("2 processes", d)):   # shown by pytest -rP
        print(run, "k_max", rows["k_max_observed"],
              [(r["k"], round(r["multiplier"], 3), round(r["se"], 3)) for r in rows["per_k"]])
    assert d["processes"] == 2 and p.stdout.count('"engine"') == 1   # one process printed
    assert d["k_max_observed"] == one["k_max_observed"] is not None
    assert d["k_max_predicted"] == one["k_max_predicted"]
    for a, b in zip(d["per_k"], one["per_k"]):
        assert a["k"] == b["k"]
        assert abs(a["multiplier"] - b["multiplier"]) <= 2 * math.hypot(a["se"], b["se"]), (a, b)
        assert a["stable_observed"] == b["stable_observed"]


def test_ray_is_the_serial_run(ray_local, quick, tiny_model_dir, tmp_path):
    """``run_lab(..., ray="local")`` on the running instance (what ``lab --ray`` calls), the
    bracket's k = 4 alone (the same seeds as in the bracket): the serial quick run's
    multiplier and SE bit for bit, every task's TRL log and run.json written by a Ray worker,
    and the logs identical."""
    from grpo_theory.lab import run_lab

    out = tmp_path / "ray"
    res = run_lab(quick=True, experiment="refresh", refresh_intervals=[4], model=tiny_model_dir,
                  kernel="lanczos", ray="local", ray_workers=2, out=out)
    d = json.loads(res.to_json())
    one = quick[0]
    assert d["executor"] == "Ray (local, 2 workers)" and d["failed_tasks"] == []
    assert d["stiffness"]["ntk"] == one["stiffness"]["ntk"]
    serial = {r["k"]: r for r in one["per_k"]}
    print("serial", [(r["k"], r["multiplier"], r["se"]) for r in one["per_k"]],   # pytest -rP
          "Ray", [(r["k"], r["multiplier"], r["se"]) for r in d["per_k"]])
    assert [r["k"] for r in d["per_k"]] == [4] and 4 in serial
    for a in d["per_k"]:
        b = serial[a["k"]]
        for key in ("k", "multiplier", "se", "multiplier_all", "se_all", "predicted"):
            assert a[key] == b[key] or (a[key] != a[key] and b[key] != b[key]), key
    runs = sorted((out / "refresh").rglob("run.json"))
    assert len(runs) == 6
    serial_root = Path(quick[1])
    workers = set()
    for r in runs:
        rec = json.loads(r.read_text())
        assert rec["attempts"] == 1 and rec["worker"].startswith("ray pid")
        workers.add(rec["worker"])
        twin = serial_root / r.parent.relative_to(out) / "trainer_state.json"
        got = json.loads((r.parent / "trainer_state.json").read_text())["log_history"]
        want = json.loads(twin.read_text())["log_history"]
        drop = ("step_time", "train_runtime", "train_samples_per_second",
                "train_steps_per_second")
        assert [{k: v for k, v in e.items() if k not in drop} for e in got] == \
            [{k: v for k, v in e.items() if k not in drop} for e in want]
    assert str(os.getpid()) not in {w.split()[-1] for w in workers}   # not this process


def test_ray_reports_a_task_that_fails_twice(ray_local):
    """A task whose worker cannot build its lab (a model directory that does not exist there)
    is run twice and then returned as a TaskFailure with both errors - never dropped."""
    from grpo_theory.lab.engine import RunSpec
    from grpo_theory.lab.model import ModelSpec
    from grpo_theory.lab.parallel import TaskFailure, TrainTask
    from grpo_theory.lab.task import TaskSpec

    class Remote:   # what the executor reads of a lab: its configuration
        def config(self):
            return {"task": TaskSpec(), "model": ModelSpec(), "threads": 1,
                    "source": "/nonexistent/grpo-lab-model", "device": "cpu"}

    ex = ray_local
    out = ex.run(Remote(), [TrainTask("doomed", RunSpec(steps=1))], state={},
                 reference=({}, "reference"))
    mapped = ex.map(int, ["3", "x"], ["three", "x"])   # the call-level tasks: same rule
    assert mapped[0] == 3 and isinstance(mapped[1], TaskFailure) and mapped[1].attempts == 2
    assert isinstance(out[0], TaskFailure) and out[0].attempts == 2 and len(out[0].errors) == 2
    assert all("model" in e for e in out[0].errors)
