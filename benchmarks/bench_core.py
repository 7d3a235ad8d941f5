"""Core benchmarks (prints figures; not a test).

(a) the full derivation chain, cold (fresh disk cache) and cached, in subprocesses;
(b) lambdified numerics vs sympy ``evalf`` on 10^5 points (evalf timed on a sample, scaled);
(c) the exact stability phase diagram on a 256 x 256 grid;
(d) ``grpo-theory report`` on the default model, cold (fresh disk cache) and warm, in
    subprocesses (the goal is a cold report under a minute on 2 cores).

Run:  python benchmarks/bench_core.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

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


def bench_chain() -> None:
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, GRPO_THEORY_CACHE=cache)
        for label in ("cold", "cached"):
            t0 = time.perf_counter()
            proc = subprocess.run([sys.executable, "-c", CHAIN], env=env, check=True,
                                  capture_output=True, text=True)
            dt = time.perf_counter() - t0
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
            status = "ok" if proc.returncode == 0 else f"exit {proc.returncode}"
            print(f"(d) report {label:4s}: {dt:7.2f} s wall ({status}; goal for cold < 60 s)")


if __name__ == "__main__":
    bench_chain()
    bench_lambdify()
    bench_phase_diagram()
    bench_report()
