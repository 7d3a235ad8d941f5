"""CPU time per GRPOTrainer step of the lab's refresh runs, against the model's size.

One optimizer step of the lab (16 prompts x G = 8 one-token completions, k3 KL to a reference,
SGD, one thread) is timed by a callback between TRL's ``on_step_begin`` and ``on_step_end``
(generation, the reference's and the policy's forward passes, the backward pass and the
update), as CPU time of this process (``time.process_time``: what the machine's other work
does not inflate) and as wall time, for GPT-2s of growing width written by ``save_pretrained``
and read back through ``--model``'s path.  The fit ``cpu = a + b P`` separates the fixed
per-step cost (TRL's Python, generation's loop) from the part that grows with the parameter
count P; docs/lab.md scales the latter to a 0.5B model on a GPU.

    nice -n 10 env PYTHONPATH=. python benchmarks/bench_lab_scale.py [--steps 8]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time

import numpy as np

SIZES = ((32, 2, 2), (128, 4, 4), (256, 6, 4))   # width, layers, heads


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=8)
    args = ap.parse_args(argv)

    from transformers import TrainerCallback

    from grpo_theory.lab.engine import Lab, RunSpec
    from grpo_theory.lab.model import ModelSpec, save_tiny_model
    from grpo_theory.lab.task import TaskSpec

    class Clock(TrainerCallback):
        def __init__(self):
            self.cpu, self.wall = [], []

        def on_step_begin(self, *a, **k):
            self._c, self._w = time.process_time(), time.perf_counter()

        def on_step_end(self, *a, **k):
            self.cpu.append(time.process_time() - self._c)
            self.wall.append(time.perf_counter() - self._w)

    rows = []
    for width, layers, heads in SIZES:
        d = save_tiny_model(tempfile.mkdtemp(prefix="bench_lab_scale_"),
                            ModelSpec(width=width, layers=layers, heads=heads))
        lab = Lab(TaskSpec(prompts=16), ModelSpec(width=width, layers=layers, heads=heads),
                  source=d)
        state = lab.initial_state()
        clock = Clock()
        lab.train(RunSpec(group_size=8, beta=2.0, learning_rate=1e-3, steps=args.steps),
                  state=state, reference=(state, "reference"), extra_callbacks=[clock],
                  observe=False)
        cpu, wall = clock.cpu[2:], clock.wall[2:]   # the first steps build TRL's caches
        rows.append({"width": width, "layers": layers, "parameters": lab.parameter_count(),
                     "cpu_ms_per_step": 1e3 * statistics.median(cpu),
                     "wall_ms_per_step": 1e3 * statistics.median(wall), "steps": len(cpu)})
        lab.close()
        print(f"width {width:4d}, {layers} layers, {rows[-1]['parameters']:>9,} parameters: "
              f"{rows[-1]['cpu_ms_per_step']:7.1f} ms CPU / {rows[-1]['wall_ms_per_step']:7.1f} "
              f"ms wall per step (median of {len(cpu)})", flush=True)
    P = np.array([r["parameters"] for r in rows], float)
    c = np.array([r["cpu_ms_per_step"] for r in rows])
    b, a = np.polyfit(P, c, 1)
    print(f"fit: CPU ms per step = {a:.1f} + {b * 1e6:.2f} x (parameters / 1e6)")
    print(json.dumps({"rows": rows, "fixed_ms": a, "ms_per_million_parameters": b * 1e6}))


if __name__ == "__main__":
    main()
