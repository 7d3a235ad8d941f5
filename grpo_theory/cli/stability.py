"""``grpo-theory stability``: exact (L2) stability at a fixed point, with its fresh/stale split."""

from __future__ import annotations

import argparse

from grpo_theory.cli._common import number
from grpo_theory.validate import ParameterError

NAME = "stability"
HELP = ("Exact discrete (L2) stability at the fixed point of a GRPO variant (its stiffness and "
        "fresh/stale split computed here) or at a given --stiffness: spectral radius of the "
        "refresh-window monodromy (or delay recurrence), binding Jury condition, exact "
        "thresholds, the published rule and whether it is safe, and the continuous (L3) "
        "approximation with its error.")

#: the variant options and their defaults (those of grpo_theory.model.GRPOModel)
_VARIANT = {"p_ref": 0.3, "kl_coef": 0.1, "normalization": "std", "kl": "k3", "group_size": 8,
            "surrogate": "stale", "adv_eps": 1e-6}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    a = parser.add_argument
    a("--learning-rate", type=number, required=True, help="eta > 0 (per step)")
    a("--momentum", type=number, required=True, help="heavy-ball mu in [0, 1)")
    a("--refresh-interval", type=number, default=1,
      help="k >= 1: pi_old refreshed every k steps (default 1 = on-policy)")
    a("--lag-model", choices=("refresh", "delay"), default="refresh",
      help="refresh (lag cycles 0..k-1) | delay (constant staleness d) (default refresh)")
    a("--delay", type=number, default=None, help="d >= 0 steps (required with --lag-model delay)")
    v = parser.add_argument_group(
        "variant (default: the stiffness and its split come from the variant's stable fixed "
        "point; defaults p_ref 0.3, beta 0.1, std, k3, G 8, stale surrogate, adv_eps 1e-6)")
    v.add_argument("--p-ref", type=number, default=None, help="reference success probability")
    v.add_argument("--kl-coef", type=number, default=None, help="KL coefficient beta >= 0")
    v.add_argument("--normalization", default=None, help="std | mean")
    v.add_argument("--kl", default=None,
                   help="none | exact | k3 (KL in the loss) | k1_reward (KL in the reward, "
                        "verl use_kl_in_reward; mean normalization)")
    v.add_argument("--group-size", default=None, help="G >= 2 or 'inf'")
    v.add_argument("--adv-eps", type=number, default=None, help="advantage epsilon >= 0")
    a("--surrogate", choices=("stale", "ratio"), default=None,
      help="stale (no importance ratio) | ratio (default stale)")
    s = parser.add_argument_group("given stiffness (instead of a variant)")
    s.add_argument("--stiffness", type=number, default=None,
                   help="K > 0, -F'(z*) per unit learning rate")
    s.add_argument("--fresh-fraction", type=number, default=None,
                   help="phi = K_f/K, the part of K acting on the current iterate (any real; "
                        "negative where the exact-KL force is destabilising; `fixed-points` "
                        "reports it). Default 0: all stale, whatever the surrogate")
    n = parser.add_argument_group(
        "noise and optimizer (variant route): the stationary fluctuation and Adam")
    n.add_argument("--prompts", type=number, default=1, help="prompts B per optimizer step")
    n.add_argument("--reuse", choices=("fresh", "batch"), default="fresh",
                   help="fresh: k batches from the stale policy (TRL steps_per_generation) | "
                        "batch: one batch reused by the window's k steps (TRL num_iterations, "
                        "verl ppo_epochs)")
    n.add_argument("--window-batches", type=number, default=1,
                   help="batches cycled within a window with --reuse batch (verl ppo_epochs over "
                        "mini-batches)")
    n.add_argument("--optimizer", choices=("sgd", "adam"), default="sgd",
                   help="sgd (heavy ball with --momentum) | adam (--momentum ignored; analysed "
                        "through Adam's self-consistent heavy-ball reduction)")
    n.add_argument("--adam-beta1", type=number, default=0.9, help="Adam beta1")
    n.add_argument("--adam-beta2", type=number, default=0.999, help="Adam beta2")
    n.add_argument("--adam-eps", type=number, default=1e-8, help="Adam epsilon")
    a("--json", action="store_true", help="print JSON instead of a table")


def call(args):
    from grpo_theory.theory.stability import stability_at_fixed_point, stability_report

    given = {name: getattr(args, name) for name in _VARIANT if name != "surrogate"
             and getattr(args, name) is not None}
    lag = dict(lag_model=args.lag_model, delay=args.delay)
    surrogate = args.surrogate or "stale"
    if args.stiffness is not None:
        if given:
            name = sorted(given)[0]
            raise ParameterError(name, given[name], "omitted with --stiffness (give either a "
                                 "variant or a stiffness with its --fresh-fraction)")
        return stability_report(args.learning_rate, args.momentum, args.refresh_interval,
                                args.stiffness, fresh_fraction=args.fresh_fraction or 0.0,
                                surrogate=surrogate, **lag)
    if args.fresh_fraction is not None:
        raise ParameterError("fresh_fraction", args.fresh_fraction,
                             "given only with --stiffness (a variant's split is computed)")
    variant = {**_VARIANT, **given, "surrogate": surrogate}
    if variant["kl"] == "none" and "kl_coef" not in given:
        variant["kl_coef"] = 0.0
    return stability_at_fixed_point(args.learning_rate, args.momentum, args.refresh_interval,
                                    **lag, **variant, prompts=args.prompts, reuse=args.reuse,
                                    window_batches=args.window_batches, optimizer=args.optimizer,
                                    adam_betas=(args.adam_beta1, args.adam_beta2),
                                    adam_eps=args.adam_eps)
