"""``grpo-theory deepnet``: the exact stability theory tested on a neural policy (real GRPO, CPU).

One library call, :func:`grpo_theory.deepnet.run_deepnet`; the optimizer options are the
model's (:mod:`grpo_theory.cli.model_options`), with the experiment's own defaults; the CLI core prints
``str(result)`` or ``result.to_dict()`` as JSON and exits with ``result.exit_code``
(1 when any refresh interval is misclassified outside its standard error).  Without
PyTorch the call raises a ``ParameterError`` whose message is the install hint
(exit 2).  Torch is imported lazily, inside the library call.
"""

from __future__ import annotations

import argparse

from grpo_theory.cli._common import number
from grpo_theory.cli.model_options import add_model_options, model_from_options, model_options_given

#: the model fields the experiment takes (the variant is --variant, the refresh interval swept)
EXPERIMENT_FIELDS = ("optimizer", "learning_rate", "momentum", "adam_beta1", "reuse")

NAME = "deepnet"
HELP = ("Test the exact discrete stability theory (largest stable refresh interval, critical "
        "momentum) on a small MLP policy trained with real sampled GRPO on CPU: stiffness "
        "measured two ways (NTK x bandit theory, linear response), per-k window multipliers "
        "against the exact prediction and the published rule.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    a = parser.add_argument
    a("--quick", action="store_true",
      help="small sweep: k_max - 1, k_max, k_max + 1 and mu_c +- 0.05 (under a minute)")
    a("--variant", default="dr-grpo-k1",
      help="dr-grpo-k1 (mean advantages, KL in the reward, k1; the theory's case) | "
           "trl-default (std advantages, clipped ratio, k3 KL in the loss: TRL's objective with "
           "beta > 0, TRL's own default being beta = 0; the negative control)")
    a("--refresh-intervals", type=number, nargs="+", default=None,
      help="refresh intervals k to test (default: around the exact k_max)")
    add_model_options(parser, ("optimizer", "lag"), fields=EXPERIMENT_FIELDS,
                      defaults={"learning_rate": "eta K between the exact thresholds of "
                                                 "k = 10 and 11", "momentum": "0"},
                      texts={"optimizer": "sgd (heavy ball with --momentum; 0 is plain SGD) | "
                                          "adam (with --adam-beta1; beta2 = 0.999 and eps = 1e-8 "
                                          "fixed; --momentum is not used)"})
    a("--flip-probability", type=number, default=None,
      help="noisy verifier: reward flip probability (Adam default 0.1, else 0)")
    a("--seed", type=number, default=0, help="seed of the sampling noise")
    a("--no-transition", action="store_true", help="skip the k = 1 momentum transition")
    a("--json", action="store_true", help="print JSON instead of a table")
    a("--out", default=None, metavar="DIR",
      help="also write result.json and result.txt to this directory")
    a("--force", action="store_true",
      help="overwrite an earlier result.json/result.txt in DIR (refused otherwise)")


def call(args):
    """Exactly one library call; returns a :class:`grpo_theory.deepnet.DeepnetResult`."""
    from grpo_theory.deepnet import run_deepnet

    given = model_options_given(args)
    model = model_from_options(args)           # validates the given options
    momentum = given.get("adam_beta1" if model.optimizer == "adam" else "momentum")
    return run_deepnet(quick=args.quick, variant=args.variant, momentum=momentum,
                       learning_rate=given.get("learning_rate"),
                       refresh_intervals=args.refresh_intervals, optimizer=model.optimizer,
                       reuse=model.reuse, flip_probability=args.flip_probability, seed=args.seed,
                       transition=not args.no_transition, out=args.out, force=args.force)
