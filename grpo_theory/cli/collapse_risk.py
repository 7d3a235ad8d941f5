"""``grpo-theory collapse-risk``: probability of collapse to a degenerate policy within N steps."""

from __future__ import annotations

import argparse

from grpo_theory.cli._common import number
from grpo_theory.model import KL_KINDS, NORMALIZATIONS, REUSE_MODES, SURROGATES, GRPOModel
from grpo_theory.theory.collapse import CollapseRisk, collapse_risk

NAME = "collapse-risk"
HELP = ("Probability that a GRPO configuration reaches a degenerate policy (every group "
        "zero-variance) within N steps, the mean first-passage time, the basin depth, and "
        "the single change that lowers the risk most.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    a = parser.add_argument
    a("--p-ref", type=number, default=0.3, help="success probability of the reference policy")
    a("--normalization", choices=NORMALIZATIONS, default="std", help="std | mean advantages")
    a("--kl", choices=KL_KINDS, default="exact",
      help="none | exact | k3 (in the loss) | k1_reward (in the reward)")
    a("--kl-coef", type=number, default=0.7, help="beta")
    a("--adv-eps", type=number, default=1e-4, help="epsilon of the std normalization")
    a("--surrogate", choices=SURROGATES, default="stale", help="stale | ratio")
    a("--learning-rate", type=number, default=0.5, help="eta")
    a("--momentum", type=number, default=0.0, help="heavy-ball mu in [0, 1)")
    a("--group-size", type=number, default=8, help="G")
    a("--prompts", type=number, default=1, help="B prompts per step")
    a("--refresh-interval", type=number, default=1, help="k steps per sampling policy")
    a("--reuse", choices=REUSE_MODES, default="fresh",
      help="fresh batches per step | one batch reused by the window's k steps")
    a("--window-batches", type=number, default=1,
      help="with --reuse batch: batches per window, cycled through (default 1)")
    a("--steps", type=number, default=1000, help="horizon N in optimizer steps")
    a("--degenerate-level", type=number, default=None,
      help="delta: collapsed once p < delta or p > 1 - delta (default 1/(10 G))")
    a("--json", action="store_true", help="print JSON")


def call(args) -> CollapseRisk:
    model = GRPOModel(p_ref=args.p_ref, normalization=args.normalization, kl=args.kl,
                      kl_coef=args.kl_coef, adv_eps=args.adv_eps, surrogate=args.surrogate,
                      learning_rate=args.learning_rate, momentum=args.momentum,
                      group_size=args.group_size, prompts=args.prompts,
                      refresh_interval=args.refresh_interval, reuse=args.reuse,
                      window_batches=args.window_batches)
    return collapse_risk(model, steps=args.steps, degenerate_level=args.degenerate_level)
