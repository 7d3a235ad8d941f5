"""``grpo-theory simulate``: direct GRPO simulation of the softmax bandit (L0)."""

from __future__ import annotations

import argparse
import json
import math
import os

import numpy as np

from grpo_theory.simulation import simulate
from grpo_theory.simulation.config import KL_KINDS, LAG_MODELS, NORMALIZATIONS, OPTIMIZERS, SURROGATES
from grpo_theory.validate import ParameterError, check_int
from grpo_theory.cli._common import number

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
    a("--lag-model", choices=LAG_MODELS, default=None,
      help="refresh | delay (default refresh, or delay when --delay > 0)")
    a("--refresh-interval", type=number, default=1,
      help="k: pi_old refreshed every k steps (default 1 = on-policy)")
    a("--delay", type=number, default=0, help="d: groups drawn from the policy d steps back")
    a("--surrogate", choices=SURROGATES, default="stale",
      help="stale (ignore the ratio) | ratio (clipped PPO ratio) (default stale)")
    a("--kl", choices=KL_KINDS, default="none", help="none | exact | k3 (default none)")
    a("--kl-coef", type=number, default=0.0, help="beta (default 0)")
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
    a("--clip-low", type=number, default=0.2, help="epsilon_low of the ratio clip")
    a("--clip-high", type=number, default=0.2, help="epsilon_high of the ratio clip")
    a("--divergence-bound", type=number, default=300.0,
      help="a run whose logit spread max-min exceeds this (or is not finite) counts as "
           "diverged and is frozen; in (0, 300] (default 300)")
    a("--seed", type=number, default=0, help="random seed (default 0)")
    a("--json", action="store_true", help="print machine-readable JSON")
    a("--out", metavar="FILE.csv", default=None,
      help="write per-step ensemble mean/var/sem as CSV")


def _fmt(v, width, digits=4):
    """``v`` with ``digits`` decimals, or ``n/a`` when undefined (no live runs)."""
    return f"{v:{width}.{digits}f}" if math.isfinite(v) else f"{'n/a':>{width}s}"


def _clean(values):
    return [None if (isinstance(v, float) and not math.isfinite(v)) else v for v in values]


def run(args) -> int:
    momentum = args.momentum
    optimizer = args.optimizer
    if optimizer is None:
        optimizer = "momentum" if isinstance(momentum, float) and momentum != 0 else "sgd"
    lag_model = args.lag_model
    if lag_model is None:
        lag_model = "delay" if isinstance(args.delay, int) and args.delay != 0 else "refresh"
    steps = check_int("steps", args.steps, low=1)
    if args.out and not os.path.isdir(os.path.dirname(os.path.abspath(args.out))):
        raise ParameterError("--out", args.out, "a file in an existing directory")
    result = simulate(
        steps=steps, runs=args.runs, group_size=args.group_size, prompts=args.prompts,
        actions=args.actions, correct=args.correct, p_ref=args.p_ref, p0=args.p0,
        learning_rate=args.learning_rate, optimizer=optimizer, momentum=momentum,
        normalization=args.normalization, adv_eps=args.adv_eps, surrogate=args.surrogate,
        clip_low=args.clip_low, clip_high=args.clip_high, kl=args.kl, kl_coef=args.kl_coef,
        lag_model=lag_model, refresh_interval=args.refresh_interval, delay=args.delay,
        difficulty_spread=args.difficulty_spread, divergence_bound=args.divergence_bound,
        seed=args.seed)
    if args.out:
        try:
            result.to_csv(args.out)
        except OSError as exc:
            raise ParameterError("--out", args.out, f"a writable file path ({exc.strerror})") \
                from None
    cfg = result.config
    if args.json:
        payload = {"runs": cfg.runs, "steps": cfg.steps, "group_size": cfg.group_size,
                   "seed": cfg.seed, "learning_rate": cfg.learning_rate,
                   "optimizer": cfg.optimizer, "momentum": cfg.momentum,
                   "normalization": cfg.normalization, "surrogate": cfg.surrogate,
                   "kl": cfg.kl, "kl_coef": cfg.kl_coef, "lag_model": cfg.lag_model,
                   "refresh_interval": cfg.refresh_interval, "delay": cfg.delay,
                   "p_ref": cfg.p_ref, "divergence_bound": cfg.divergence_bound,
                   "n_diverged": int(result.diverged.sum()),
                   "diverged_fraction": result.diverged_fraction,
                   "step": result.t.tolist(), "n_active": result.n_active.tolist()}
        for name in result.observables:
            payload[f"mean_{name}"] = _clean(result.mean(name).tolist())
            payload[f"var_{name}"] = _clean(result.var(name).tolist())
        print(json.dumps(payload, allow_nan=False))
        return 0
    mean_r, var_r = result.mean("reward"), result.var("reward")
    lines = [f"GRPO softmax-bandit simulation: {cfg.runs} runs x {cfg.steps} steps, "
             f"G = {cfg.group_size}, K = {cfg.actions}, B = {cfg.prompts}, seed {cfg.seed}",
             f"  {cfg.optimizer} (eta = {cfg.learning_rate:g}"
             + (f", mu = {cfg.momentum:g}" if cfg.optimizer == "momentum" else "") + "), "
             f"{cfg.normalization} advantages, {cfg.surrogate} surrogate, KL {cfg.kl}"
             + (f" (beta = {cfg.kl_coef:g})" if cfg.kl != "none" else "") + ", "
             + (f"refresh every {cfg.refresh_interval}" if cfg.lag_model == "refresh"
                else f"delay {cfg.delay}"),
             f"{'step':>8s} {'mean reward':>12s} {'sd across runs':>15s} {'sem':>10s}"]
    T = cfg.steps
    shown = sorted({0, T // 4, T // 2, (3 * T) // 4, T})
    sem = result.sem("reward")
    for t in shown:
        sd = math.sqrt(var_r[t]) if math.isfinite(var_r[t]) else float("nan")
        lines.append(f"{t:8d} {_fmt(mean_r[t], 12)} {_fmt(sd, 15)} {_fmt(sem[t], 10)}")
    zv = result.mean("zero_var_frac")[:-1]
    zv = zv[~np.isnan(zv)]
    lines.append(f"zero-variance groups: {_fmt(zv.mean() if zv.size else math.nan, 0, 3)} "
                 f"of all groups; final KL to reference {_fmt(result.mean('kl')[T], 0)}; "
                 f"final entropy {_fmt(result.mean('entropy')[T], 0)}")
    if result.any_diverged:
        d = result.diverged_at[result.diverged]
        lines.append(f"WARNING: {d.size} of {cfg.runs} runs ({100 * d.size / cfg.runs:.1f}%) "
                     f"diverged (logit spread > {cfg.divergence_bound:g}), first at step "
                     f"{d.min()}, median {int(np.median(d))}; they are frozen and excluded "
                     f"from the statistics above ({result.n_active[T]} runs left at the end)")
    if args.out:
        lines.append(f"per-step summary written to {args.out}")
    print("\n".join(lines))
    return 0
