"""Benchmark of the direct GRPO simulation (run on demand; not a test).

    python benchmarks/bench_simulate.py [--runs 10000] [--steps 1000] [--group-size 8]
                                        [--loop-runs 20] [--loop-steps 200]

Side by side, for the default GRPO update (two actions, one correct, std
normalization, stale surrogate, SGD, on-policy):

(a) a straightforward per-sample Python loop of the same update (draw the G
    actions one by one, loop over the samples for the gradient), on a small
    ensemble, scaled per run-step: (a1) with python floats and :mod:`random`,
    (a2) in the naive numpy style (a ``Generator`` call per sample);
(b) the vectorized simulator :func:`grpo_theory.simulation.simulate`, with every
    observable recorded and with only the reward recorded;
(c) RNG floors: (c1) drawing one uniform per sample, ``rng.random((R, G))`` per
    step (the goal: (b) reward only within 2x of it); (c2) numpy's binomial draw with
    the per-run success probabilities of run (b), which the simulator replaced by an
    inverse-CDF draw from one uniform per run-step (``kernels.binomial_counts``).

Reports time per run-step, the ratios (b)/(a) and (b)/(c), and peak memory
(tracemalloc: numpy allocations are traced).
"""

from __future__ import annotations

import argparse
import math
import mmap
import os
import platform
import random
import time
import tracemalloc

import numpy as np

from grpo_theory.model import GRPOModel
from grpo_theory.simulation import simulate as simulate_model


def simulate(*, group_size=8, **kw):
    """The benchmarked setting: on-policy SGD, eta = 0.1, std advantages, no KL."""
    model = GRPOModel(group_size=group_size, learning_rate=0.1, momentum=0.0, adv_eps=1e-4,
                      kl="none", kl_coef=0.0, refresh_interval=1)
    return simulate_model(model, **kw)


def loop_grpo(runs, steps, group_size, p_ref=0.3, learning_rate=0.1, adv_eps=1e-4, seed=0):
    """Per-sample reference: python floats, one action at a time (mirrors the defaults)."""
    rnd = random.Random(seed)
    u_ref = math.log(p_ref / (1 - p_ref))
    finals = []
    for _ in range(runs):
        theta = [u_ref, 0.0]
        for _ in range(steps):
            m = max(theta)
            e = [math.exp(v - m) for v in theta]
            s = sum(e)
            pi = [v / s for v in e]
            acts = [0 if rnd.random() < pi[0] else 1 for _ in range(group_size)]
            rew = [1.0 if a == 0 else 0.0 for a in acts]
            mean = sum(rew) / group_size
            std = math.sqrt(sum((r - mean) ** 2 for r in rew) / (group_size - 1))
            grad = [0.0, 0.0]
            if std > 0:
                for a, r in zip(acts, rew):
                    adv = (r - mean) / (std + adv_eps)
                    for k in range(2):
                        grad[k] -= adv * ((1.0 if k == a else 0.0) - pi[k]) / group_size
            theta = [theta[k] - learning_rate * grad[k] for k in range(2)]
        finals.append(theta)
    return finals


def loop_grpo_numpy(runs, steps, group_size, p_ref=0.3, learning_rate=0.1, adv_eps=1e-4,
                    seed=0):
    """Per-sample reference in the naive numpy style: one ``Generator`` call per sample,
    numpy vectors for θ and π (the same RNG family as the simulator)."""
    rng = np.random.default_rng(seed)
    rewards = np.array([1.0, 0.0])
    finals = []
    for _ in range(runs):
        theta = np.array([math.log(p_ref / (1 - p_ref)), 0.0])
        for _ in range(steps):
            pi = np.exp(theta - theta.max())
            pi /= pi.sum()
            acts = [int(rng.choice(2, p=pi)) for _ in range(group_size)]
            rew = rewards[acts]
            mean = rew.mean()
            std = rew.std(ddof=1)
            grad = np.zeros(2)
            if std > 0:
                for a, r in zip(acts, rew):
                    e_a = np.zeros(2)
                    e_a[a] = 1.0
                    grad -= (r - mean) / (std + adv_eps) * (e_a - pi) / group_size
            theta = theta - learning_rate * grad
        finals.append(theta)
    return finals


def rng_floor(group_size, q_rows, seed=0):
    """Only the binomial draws the simulator makes: same sizes and the same per-run
    success probabilities (row t of ``q_rows`` = the on-policy π(correct) of every run
    at step t).  Per-run probabilities matter: numpy's binomial re-does its setup
    whenever p changes, which roughly doubles the cost against a constant p."""
    rng = np.random.default_rng(seed)
    for q in q_rows:
        rng.binomial(group_size, q)


def uniform_floor(group_size, runs, steps, seed=0):
    """One uniform per sample: ``rng.random((R, G))`` at every step."""
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        rng.random((runs, group_size))


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def peak_memory(fn):
    """Peak of numpy/python allocations (tracemalloc) plus the recorded arrays,
    which are mmap-backed for large sizes and therefore invisible to tracemalloc."""
    tracemalloc.start()
    res = fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    mapped = sum(a.nbytes for a in res.observables.values() if _is_mapped(a))
    return peak, mapped


def _is_mapped(a):
    while isinstance(a, np.ndarray):
        a = a.base
    return isinstance(a, (mmap.mmap, memoryview))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10_000)
    ap.add_argument("--steps", type=int, default=1_000)
    ap.add_argument("--group-size", type=int, default=8)
    ap.add_argument("--loop-runs", type=int, default=20)
    ap.add_argument("--loop-steps", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3, help="best of N timings")
    args = ap.parse_args(argv)
    R, T, G = args.runs, args.steps, args.group_size
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"python {platform.python_version()}, numpy {np.__version__}")
    print(f"R = {R} runs, T = {T} steps, G = {G}")

    def best(fn):
        return min(timed(fn)[0] for _ in range(args.repeat))

    simulate(steps=5, runs=10)        # warm imports
    t_loop = best(lambda: loop_grpo(args.loop_runs, args.loop_steps, G))
    per_loop = t_loop / (args.loop_runs * args.loop_steps)
    np_runs, np_steps = max(1, args.loop_runs // 4), max(1, args.loop_steps // 4)
    t_loop_np = best(lambda: loop_grpo_numpy(np_runs, np_steps, G))
    per_loop_np = t_loop_np / (np_runs * np_steps)
    t_full, res = timed(lambda: simulate(steps=T, runs=R, group_size=G, progress=False))
    t_full = min(t_full, best(lambda: simulate(steps=T, runs=R, group_size=G, progress=False)))
    t_reward = best(lambda: simulate(steps=T, runs=R, group_size=G, record=("reward",),
                                     progress=False))
    q_rows = np.ascontiguousarray(res.reward.T[:-1])     # (T, R) on-policy π(correct)
    t_floor = best(lambda: rng_floor(G, q_rows))
    t_uniform = best(lambda: uniform_floor(G, R, T))
    per = lambda t: t / (R * T)  # noqa: E731

    mem_full = peak_memory(lambda: simulate(steps=T, runs=R, group_size=G, progress=False))
    mem_reward = peak_memory(lambda: simulate(steps=T, runs=R, group_size=G,
                                              record=("reward",), progress=False))
    print()
    print(f"{'':38s}{'time/run-step':>16s}{'total':>10s}")
    print(f"{'(a1) per-sample loop, python floats':38s}{per_loop * 1e9:13.0f} ns"
          f"{'':>10s}  ({args.loop_runs} runs x {args.loop_steps} steps: {t_loop:.2f} s)")
    print(f"{'(a2) per-sample loop, numpy calls':38s}{per_loop_np * 1e9:13.0f} ns"
          f"{'':>10s}  ({np_runs} runs x {np_steps} steps: {t_loop_np:.2f} s)")
    print(f"{'(b) simulate, all 7 observables':38s}{per(t_full) * 1e9:13.1f} ns{t_full:9.2f} s")
    print(f"{'(b) simulate, reward only':38s}{per(t_reward) * 1e9:13.1f} ns{t_reward:9.2f} s")
    print(f"{'(c1) uniforms rng.random((R, G))':38s}{per(t_uniform) * 1e9:13.1f} ns"
          f"{t_uniform:9.2f} s")
    print(f"{'(c2) numpy binomial draws only':38s}{per(t_floor) * 1e9:13.1f} ns"
          f"{t_floor:9.2f} s")
    print()
    for label, ref in (("(a1)", per_loop), ("(a2)", per_loop_np)):
        print(f"speed-up {label}/(b): all observables {ref / per(t_full):7.0f}x, "
              f"reward only {ref / per(t_reward):7.0f}x   (goal >= 100x)")
    print(f"(b)/(c1):          all observables {t_full / t_uniform:7.2f}x, "
          f"reward only {t_reward / t_uniform:7.2f}x   (goal: reward only <= 2x)")
    print(f"(b)/(c2):          all observables {t_full / t_floor:7.2f}x, "
          f"reward only {t_reward / t_floor:7.2f}x")
    print(f"peak memory: all observables {sum(mem_full) / 2**20:.0f} MiB, "
          f"reward only {sum(mem_reward) / 2**20:.0f} MiB "
          f"(recorded arrays: 8 B x R x (T+1) = {8 * R * (T + 1) / 2**20:.0f} MiB each; "
          f"working set {mem_full[0] / 2**20:.1f} MiB)")


if __name__ == "__main__":
    main()
