"""Per-step overhead of the lab's harness over a bare ``GRPOTrainer.train()``.

The same TRL run (16 prompts x G = 8, one-token completions, SGD, 40 steps) is trained
alternately with the lab's observer callback (one forward pass over the prompts after every
step, the lab's keys in the log) and without it (a bare GRPOTrainer with the same
arguments); prints the median wall time per optimizer step of ``trainer.train()`` for each
and the overhead.  Goal: <= 10 %.  Measure on an idle machine (``nice`` lowers our priority
but not the others').

    PYTHONPATH=. python benchmarks/bench_lab.py [--steps 40] [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def time_lab_steps(steps: int, repeats: int):
    """Seconds per optimizer step of ``repeats`` interleaved pairs of runs of ``steps`` steps:
    a bare GRPOTrainer, and the lab's harness (observer on), same model, batch and arguments
    (16 prompts x G = 8); ``(bare, harness, observer)`` lists, the last the observer's own time
    timed inside its callback.  Also the benchmark row (h) of bench_core.py."""
    from grpo_theory.lab.engine import Lab, RunSpec
    from grpo_theory.lab.model import ModelSpec
    from grpo_theory.lab.task import TaskSpec

    lab = Lab(TaskSpec(prompts=16), ModelSpec(width=32))
    state, ref = lab.placed_state(-0.9), lab.placed_state(-2.2)
    spec = RunSpec(group_size=8, beta=2.0, learning_rate=1e-3, steps=steps)
    lab.train(spec.replace(steps=3), state=state, reference=(ref, "r"))    # warm-up
    bare, harness, observer = [], [], []
    for _ in range(repeats):
        r = lab.train(spec, state=state, reference=(ref, "r"), observe=False)
        bare.append(r.seconds / r.steps_done)
        r = lab.train(spec, state=state, reference=(ref, "r"), eval_every=5)
        harness.append(r.seconds / r.steps_done)
        observer.append(r.observer_seconds / r.steps_done)
    lab.close()
    return bare, harness, observer


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    from trl import GRPOConfig, GRPOTrainer  # noqa: F401 - the import time of the engine

    t_import = time.perf_counter() - t0
    bare, harness, observer = time_lab_steps(args.steps, args.repeats)
    b, h, o = (statistics.median(x) * 1e3 for x in (bare, harness, observer))
    diffs = sorted(1e3 * (y - x) for x, y in zip(bare, harness))
    print(f"import of TRL/transformers/torch: {t_import:.1f} s")
    print(f"bare GRPOTrainer.train():   {b:7.2f} ms/step (median of {args.repeats} runs of "
          f"{args.steps} steps)")
    print(f"lab harness (observer on):  {h:7.2f} ms/step")
    print(f"the observer's own time (timed inside the callback): {o:.2f} ms/step = "
          f"{100 * o / b:.1f} % of a bare step (goal <= 10 %)")
    print(f"wall difference harness - bare, paired runs: median {statistics.median(diffs):+.2f} "
          f"ms/step, range {diffs[0]:+.2f} .. {diffs[-1]:+.2f} (noise of the machine's load "
          "included; on a loaded machine trust the timed share)")


if __name__ == "__main__":
    main()
