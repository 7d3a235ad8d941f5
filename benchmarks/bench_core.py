"""Core benchmarks (prints figures; not a test).

(a) the full derivation chain, cold (fresh disk cache) and cached, in subprocesses;
(b) lambdified numerics vs sympy ``evalf`` on 10^5 points (evalf timed on a sample, scaled);
(c) the exact stability phase diagram on a 256 x 256 grid;
(d) ``grpo-theory report`` on the default model, cold (fresh disk cache) and warm, in
    subprocesses (the goal is a cold report under a minute on 2 cores);
(f) K from the per-step fluctuations (``runs.policy_response``): one state-space fit on 48 and
    96 steps of a simulated window, side by side, and ``check_config`` with ``--from-log`` on
    the first fifth of a committed lab run (the route with the split weighed over the plateau);
(e) the test suite, the README's command ``python -m pytest -q`` with ``CI=true`` and a
    fresh derivation cache (the goal is at most 180 s on 2 cores), printed last next to the
    cold chain and the cold report.

Run:  python benchmarks/bench_core.py [--only chain,lambdify,phase,report,fluctuations,suite]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

CHAIN = """
import sys
from grpo_theory.theory.derived import all_names, get
failed = []
for n in all_names():
    try:
        get(n)
    except Exception as exc:  # another module's derivation may be mid-development
        failed.append(f"{n}: {type(exc).__name__}")
from grpo_theory.theory.derived import timings
by = {}
for n, sec in timings().items():
    by[n.split(".")[0]] = by.get(n.split(".")[0], 0.0) + sec
print("    per module: " + ", ".join(f"{m} {v:.1f}s" for m, v in sorted(by.items())))
print(len(all_names()), len(failed), *failed, sep="\\n", file=sys.stderr)
"""


ROOT = Path(__file__).resolve().parents[1]
#: wall times of the cold runs, printed together at the end
COLD: dict[str, float] = {}


def bench_chain() -> None:
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, GRPO_THEORY_CACHE=cache)
        for label in ("cold", "cached"):
            t0 = time.perf_counter()
            proc = subprocess.run([sys.executable, "-c", CHAIN], env=env, check=True,
                                  capture_output=True, text=True)
            dt = time.perf_counter() - t0
            if label == "cold":
                COLD["derivation chain"] = dt
            total, nfail, *failed = proc.stderr.strip().splitlines()[-1:] and \
                proc.stderr.strip().split("\n")
            goal = 30.0 if label == "cold" else 2.0
            print(f"(a) derivation chain {label:6s}: {dt:7.2f} s for {total} derivations "
                  f"(goal < {goal:g} s); {nfail} failed" + (f": {', '.join(failed)}" if failed else ""))
            print(proc.stdout.rstrip())


def bench_lambdify(n_points: int = 100_000, n_evalf: int = 200) -> None:
    from grpo_theory.theory.derived import get

    rng = np.random.default_rng(0)
    mu = rng.uniform(0, 0.99, n_points)
    k = rng.integers(1, 65, n_points).astype(float)
    a = rng.uniform(1e-3, 1, n_points)
    cases = {
        "discrete.refresh_flip_threshold": (mu, k),
        "discrete.refresh_complex_threshold": (mu, np.maximum(k, 2)),
        "discrete.refresh_determinant": (a, mu, k),
        "noise.ar2_variance": (a, mu, np.ones(n_points), np.ones(n_points)),
    }
    for name, args in cases.items():
        d = get(name)
        fn = d.numeric
        fn(*(x[:10] for x in args))                      # warm-up
        t0 = time.perf_counter()
        fn(*args)
        t_lam = time.perf_counter() - t0
        t0 = time.perf_counter()
        for i in range(n_evalf):
            d.expr.evalf(subs={s: float(x[i]) for s, x in zip(d.args, args)})
        t_evalf = (time.perf_counter() - t0) / n_evalf * n_points
        print(f"(b) {name:38s} lambdified {t_lam * 1e3:7.2f} ms, evalf {t_evalf:7.1f} s "
              f"(scaled from {n_evalf}) -> {t_evalf / t_lam:9.0f}x  (goal >= 1000x)")


def bench_phase_diagram() -> None:
    from grpo_theory.theory.discrete import phase_diagram, spectral_radius

    a = np.geomspace(1e-3, 3, 256)
    k = np.arange(1, 257)
    phase_diagram(a[:4], k[:4], momentum=0.9)           # warm-up (lambdify)
    t0 = time.perf_counter()
    pd = phase_diagram(a, k, momentum=0.9)
    dt = time.perf_counter() - t0
    print(f"(c) exact phase diagram 256x256 (stale, closed form): {dt * 1e3:7.1f} ms (goal < 1 s); "
          f"unstable fraction {np.mean(pd.regime_code == 3):.3f}")
    t0 = time.perf_counter()
    spectral_radius(a[:, None], 0.9, k[None, :], 1.0, fresh_fraction=0.3)
    dt = time.perf_counter() - t0
    print(f"(c) spectral radius 256x256 with fresh stiffness (numeric products): {dt * 1e3:7.1f} ms")


def bench_report() -> None:
    with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as out:
        env = dict(os.environ, GRPO_THEORY_CACHE=cache, CI="true")
        for label in ("cold", "warm"):
            t0 = time.perf_counter()
            proc = subprocess.run([sys.executable, "-m", "grpo_theory", "report", "--out", out, "--force"],
                                  env=env, capture_output=True, text=True)
            dt = time.perf_counter() - t0
            if label == "cold":
                COLD["report"] = dt
            status = "ok" if proc.returncode == 0 else f"exit {proc.returncode}"
            print(f"(d) report {label:4s}: {dt:7.2f} s wall ({status}; goal for cold < 60 s)")


def bench_suite() -> None:
    """The README's test command, cold: a fresh derivation cache, CI=true."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, GRPO_THEORY_CACHE=cache, CI="true",
                   PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
                              cwd=ROOT, env=env, capture_output=True, text=True)
        dt = time.perf_counter() - t0
        COLD["test suite"] = dt
        tail = [ln for ln in proc.stdout.strip().splitlines() if re.search(r"\d+ (passed|failed)", ln)]
        print(f"(e) test suite cold: {dt:7.2f} s wall ({tail[-1] if tail else 'no summary'}; "
              f"exit {proc.returncode}; goal <= 180 s on 2 cores)")


def bench_fluctuations() -> None:
    from grpo_theory.runs.check_config import check_config
    from grpo_theory.runs.logs.trl import write_trl_prefix
    from grpo_theory.runs.policy_response import stiffness_from_fluctuations
    from grpo_theory.theory.discrete import step_matrix

    rng = np.random.default_rng(0)
    A = step_matrix(0.45, 0.0, 1.0, 0.31)
    s, ys = np.zeros(3), []
    for t in range(96):
        if t % 4 == 0:
            s[2] = s[0]
        ys.append(s[0] + 0.7 * rng.normal())
        s = A @ s
        xi = rng.normal()
        s[0] += xi
        s[1] += xi
    for n in (48, 96):
        t0 = time.perf_counter()
        r = stiffness_from_fluctuations(np.arange(1, n + 1), np.array(ys[:n]), learning_rate=1.0,
                                        refresh_interval=4, fresh_fraction=0.31)
        dt = time.perf_counter() - t0
        print(f"(f) state-space fit, {n:3d} steps (k = 4): {dt * 1e3:7.1f} ms "
              f"(eta K {r['eta_K']:.3f} [{r['eta_K_interval'][0]:.3f}, {r['eta_K_interval'][1]:.3f}], true 0.45)")
    lab = Path(__file__).resolve().parents[1] / "benchmarks" / "lab_runs" / "lab_stable_refresh_s0"
    prefix = write_trl_prefix(lab, 0.2, Path(tempfile.mkdtemp()))
    t0 = time.perf_counter()
    res = check_config(lab / "config.json", from_log=prefix)
    dt = time.perf_counter() - t0
    print(f"(f) check-config --from-log, first fifth of lab_stable_refresh_s0 (fluctuations, "
          f"{len(res.stiffness['candidates'])} splits kept): {dt:6.2f} s")


STAGES = {"chain": bench_chain, "lambdify": bench_lambdify, "phase": bench_phase_diagram,
          "report": bench_report, "fluctuations": bench_fluctuations, "suite": bench_suite}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=",".join(STAGES), help="comma-separated subset of "
                    + ", ".join(STAGES))
    args = ap.parse_args()
    for name in args.only.split(","):
        STAGES[name.strip()]()
    if COLD:
        print(f"cold wall times on {os.cpu_count()} cores: "
              + "; ".join(f"{k} {v:.1f} s" for k, v in COLD.items()))
