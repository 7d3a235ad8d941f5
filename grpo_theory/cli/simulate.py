"""``grpo-theory simulate``: direct GRPO simulation of the softmax bandit (L0)."""

from __future__ import annotations

import argparse
import os

from grpo_theory.cli._common import number
from grpo_theory.simulation import simulate
from grpo_theory.simulation.config import (KL_KINDS, LAG_MODELS, NORMALIZATIONS, OPTIMIZERS,
                                           REUSE_MODES, SURROGATES)
from grpo_theory.simulation.result import EnsembleSummary
from grpo_theory.validate import ParameterError, check_int

NAME = "simulate"
HELP = ("Simulate an ensemble of GRPO runs on the softmax bandit and report the "
        "per-step ensemble mean and variance of the reward.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    a = parser.add_argument
    a("--group-size", type=number, default=8, help="G, samples per group (default 8)")
    a("--runs", type=number, default=256, help="independent runs in the ensemble (default 256)")
    a("--steps", type=number, default=200, help="optimizer steps (default 200)")
    a("--learning-rate", type=number, default=0.1, help="eta (default 0.1)")
    a("--optimizer", choices=OPTIMIZERS, default=None,
      help="sgd | momentum | adam (default sgd, or momentum when --momentum > 0)")
    a("--momentum", type=number, default=0.0, help="heavy-ball mu in [0, 1) (default 0)")
    a("--adam-beta1", type=number, default=None, help="Adam beta1 (default 0.9; adam only)")
    a("--adam-beta2", type=number, default=None, help="Adam beta2 (default 0.999; adam only)")
    a("--adam-eps", type=number, default=None, help="Adam epsilon (default 1e-8; adam only)")
    a("--lag-model", choices=LAG_MODELS, default=None,
      help="refresh | delay (default refresh, or delay when --delay > 0)")
    a("--refresh-interval", type=number, default=1,
      help="k: pi_old refreshed every k steps (default 1 = on-policy)")
    a("--reuse", choices=REUSE_MODES, default="fresh",
      help="fresh: a new batch from pi_old at every step of a refresh window (TRL "
           "steps_per_generation) | batch: one batch reused by the window's k steps (TRL "
           "num_iterations, verl ppo_epochs)")
    a("--window-batches", type=number, default=1,
      help="with --reuse batch: m batches drawn at the window's start and cycled through "
           "(verl train_batch_size/ppo_mini_batch_size; default 1)")
    a("--delay", type=number, default=0, help="d: groups drawn from the policy d steps back")
    a("--surrogate", choices=SURROGATES, default="stale",
      help="stale (ignore the ratio) | ratio (clipped PPO ratio) (default stale)")
    a("--kl", choices=KL_KINDS, default="none",
      help="none | exact | k3 (in the loss) | k1_reward (k1 in the reward, verl "
           "use_kl_in_reward) (default none)")
    a("--kl-coef", type=number, default=None, help="beta > 0, required with --kl")
    a("--normalization", choices=NORMALIZATIONS, default="std",
      help="std | mean advantages (default std)")
    a("--adv-eps", type=number, default=1e-4, help="epsilon in the std normalization")
    a("--p-ref", type=number, default=0.3, help="success probability of the reference policy")
    a("--p0", type=number, default=None, help="starting success probability (default p_ref)")
    a("--actions", type=number, default=2, help="K actions (default 2)")
    a("--correct", type=number, default=1, help="number of correct actions (default 1)")
    a("--prompts", type=number, default=1, help="B prompts per step (default 1)")
    a("--difficulty-spread", type=number, default=0.0,
      help="sigma of the per-prompt logit offset of the correct actions (default 0)")
    a("--clip-low", type=number, default=None,
      help="epsilon_low of the ratio clip (default 0.2; --surrogate ratio only)")
    a("--clip-high", type=number, default=None,
      help="epsilon_high of the ratio clip (default 0.2; --surrogate ratio only)")
    a("--divergence-bound", type=number, default=300.0,
      help="a run whose logit spread max-min exceeds this (or is not finite) counts as "
           "diverged and is frozen; in (0, 300] (default 300)")
    a("--seed", type=number, default=0, help="random seed (default 0)")
    a("--json", action="store_true", help="print machine-readable JSON")
    a("--out", metavar="FILE.csv", default=None,
      help="write per-step ensemble mean/var/sem as CSV")


def _only_with(args, names, condition, allowed):
    for name in names:
        value = getattr(args, name.replace("-", "_"))
        if value is not None and not condition:
            raise ParameterError(f"--{name}", value, allowed)


def call(args) -> EnsembleSummary:
    momentum = args.momentum
    optimizer = args.optimizer
    if optimizer is None:
        optimizer = "momentum" if isinstance(momentum, float) and momentum != 0 else "sgd"
    lag_model = args.lag_model
    if lag_model is None:
        lag_model = "delay" if isinstance(args.delay, int) and args.delay != 0 else "refresh"
    _only_with(args, ("clip-low", "clip-high"), args.surrogate == "ratio",
               "only with --surrogate ratio (the stale surrogate has no ratio to clip)")
    _only_with(args, ("adam-beta1", "adam-beta2", "adam-eps"), optimizer == "adam",
               "only with --optimizer adam")
    if args.kl != "none" and args.kl_coef is None:
        raise ParameterError("--kl-coef", None, f"a value > 0 with --kl {args.kl}")
    steps = check_int("steps", args.steps, low=1)
    if args.out and not os.path.isdir(os.path.dirname(os.path.abspath(args.out))):
        raise ParameterError("--out", args.out, "a file in an existing directory")
    extra = {}
    if args.clip_low is not None:
        extra["clip_low"] = args.clip_low
    if args.clip_high is not None:
        extra["clip_high"] = args.clip_high
    if optimizer == "adam":
        b1 = 0.9 if args.adam_beta1 is None else args.adam_beta1
        b2 = 0.999 if args.adam_beta2 is None else args.adam_beta2
        extra["adam_betas"] = (b1, b2)
        if args.adam_eps is not None:
            extra["adam_eps"] = args.adam_eps
    result = simulate(
        steps=steps, runs=args.runs, group_size=args.group_size, prompts=args.prompts,
        actions=args.actions, correct=args.correct, p_ref=args.p_ref, p0=args.p0,
        learning_rate=args.learning_rate, optimizer=optimizer, momentum=momentum,
        normalization=args.normalization, adv_eps=args.adv_eps, surrogate=args.surrogate,
        kl=args.kl, kl_coef=0.0 if args.kl_coef is None else args.kl_coef,
        lag_model=lag_model, refresh_interval=args.refresh_interval, delay=args.delay,
        reuse=args.reuse, window_batches=args.window_batches,
        difficulty_spread=args.difficulty_spread,
        divergence_bound=args.divergence_bound, seed=args.seed, **extra)
    if args.out:
        try:
            result.to_csv(args.out)
        except OSError as exc:
            raise ParameterError("--out", args.out, f"a writable file path ({exc.strerror})") \
                from None
    return EnsembleSummary(result, args.out)
