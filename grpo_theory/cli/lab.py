"""``grpo-theory lab``: the theory tested on TRL's own GRPOTrainer (a tiny GPT-2 on CPU).

One library call, :func:`grpo_theory.lab.run_lab`; the group size is the model's option
(:mod:`grpo_theory.cli.model_options`); the CLI core prints ``str(result)`` or
``result.to_dict()`` as JSON and exits with ``result.exit_code`` (1 when a refresh interval is
misclassified beyond its standard error).  Without the ``lab`` extra the call raises a
``ParameterError`` whose message is the install hint (exit 2).  TRL, transformers and torch
are imported lazily, inside the library call.
"""

from __future__ import annotations

import argparse
import os
import sys

from grpo_theory.cli._common import number
from grpo_theory.cli.model_options import add_model_options, model_from_options, model_options_given
from grpo_theory.lab import run_lab

#: the model fields the lab takes (its plateau's variant is fixed: docs/lab.md)
EXPERIMENT_FIELDS = ("group_size",)

NAME = "lab"
HELP = ("The theory on a real engine: TRL's GRPOTrainer trains a tiny randomly initialized "
        "GPT-2 on a synthetic verifiable task on CPU; stiffness measured two ways, refresh "
        "thresholds in TRL's knobs (steps_per_generation, num_iterations) against the exact "
        "prediction and the published rule, the damping transition, and families of runs "
        "(group size, width, learning rate) read back by `compare`.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    a = parser.add_argument
    a("experiment", nargs="?", default="all",
      help="all | stiffness | refresh | transition | group-size | model-size | learning-rate "
           "(ignored with --quick)")
    a("--quick", action="store_true",
      help="the CI run: stiffness two ways, one refresh-threshold bracket (exact k_max and "
           "k_max + 1) and one group-size pair (G = 4, 16); under a minute on 2 idle cores; "
           "`--quick refresh`: the bracket alone")
    a("--refresh-intervals", type=number, nargs="+", default=None,
      help="refresh intervals k (>= 1) of the headline sweep (default: around the exact k_max)")
    add_model_options(parser, ("variant",), fields=EXPERIMENT_FIELDS,
                      defaults={"group_size": "8, of the plateau experiments; the group-size "
                                              "family sweeps its own"},
                      texts={"group_size": "G samples per group: an integer >= 2 (TRL's "
                                           "num_generations; the engine has no large-G limit)"})
    a("--modulus", type=number, default=2,
      help="answers of the task, 0..m-1 (single digit tokens); the plateau experiments need 2")
    a("--seed", type=number, default=0, help="seed of the model and of TRL's sampling")
    a("--out", default=None, metavar="DIR",
      help="write every run's TRL logs (trainer_state.json, config.json) under DIR, one "
           "subdirectory per family (group_size, model_size, learning_rate)")
    a("--force", action="store_true",
      help="write into DIR although it holds an earlier lab output (refused otherwise)")
    a("--model", default=None, metavar="NAME_OR_PATH",
      help="a Hugging Face causal LM and its tokenizer (from_pretrained: a local directory, or a "
           "hub name on a machine with the network) instead of the built-in tiny GPT-2; its head "
           "is restricted to the answer tokens, which must be single tokens")
    a("--kernel", default="auto",
      help="the tangent kernel's top eigenpair: full (build J, eigh), lanczos (J-vector "
           "products, no J: a large model), auto (full while J fits in 256 MB)")
    a("--ray", nargs="?", const="local", default=None, metavar="ADDRESS",
      help="run the independent runs as Ray tasks: alone, a local Ray instance with "
           "--ray-workers CPUs; with ADDRESS, that cluster (needs the lab-ray extra)")
    a("--ray-workers", type=number, default=2,
      help="CPUs of the local Ray instance (default 2)")
    a("--device", default="cpu",
      help="where TRL trains: cpu, or cuda (one GPU per process under accelerate launch, "
           "one per task with --ray)")
    a("--json", action="store_true", help="print JSON instead of a table")


def call(args):
    """Exactly one library call; returns a :class:`grpo_theory.lab.LabResult`.

    Under ``accelerate launch`` every process makes the call (each run is data-parallel over
    them); only the first prints (the others' standard output goes to the null device)."""
    given = model_options_given(args)
    model_from_options(args)                   # validates the given options
    if os.environ.get("RANK", "0") != "0":
        sys.stdout = open(os.devnull, "w")
    return run_lab(quick=args.quick, experiment=args.experiment, out=args.out, force=args.force,
                   seed=args.seed, group_size=given.get("group_size", 8),
                   refresh_intervals=args.refresh_intervals, modulus=args.modulus,
                   model=args.model, kernel=args.kernel, ray=args.ray,
                   ray_workers=args.ray_workers, device=args.device)
