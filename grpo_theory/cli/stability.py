"""``grpo-theory stability``: exact (L2) stability of the linearised update next to the L3 model."""

from __future__ import annotations

import argparse
import json
import math

from grpo_theory.validate import ParameterError, check_real
from grpo_theory.cli._common import number

NAME = "stability"
HELP = ("Exact discrete (L2) stability at a fixed point: spectral radius of the refresh-window "
        "monodromy (or delay recurrence), binding Jury condition, exact thresholds, and the "
        "continuous (L3) oscillator with the published first-order threshold.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    a = parser.add_argument
    a("--learning-rate", type=number, required=True, help="eta > 0 (per step)")
    a("--momentum", type=number, required=True, help="heavy-ball mu in [0, 1)")
    a("--refresh-interval", type=number, default=1,
      help="k >= 1: pi_old refreshed every k steps (default 1 = on-policy)")
    a("--stiffness", type=number, required=True, help="K > 0, -F'(z*) per unit learning rate")
    a("--lag-model", choices=("refresh", "delay"), default="refresh",
      help="refresh (lag cycles 0..k-1) | delay (constant staleness d) (default refresh)")
    a("--delay", type=number, default=None, help="d >= 0 steps (required with --lag-model delay)")
    a("--surrogate", choices=("stale", "ratio"), default="stale",
      help="stale: all stiffness acts through pi_old | ratio: the fraction --fresh-fraction "
           "acts on the current iterate (default stale)")
    a("--fresh-fraction", type=number, default=None,
      help="phi = K_f/K, required with --surrogate ratio (usually in [0, 1]; negative where the "
           "force on the current iterate is destabilising, as `fixed-points` can report)")
    a("--json", action="store_true", help="print JSON instead of a table")


def _fresh_fraction(args) -> float:
    if args.surrogate == "ratio":
        if args.fresh_fraction is None:
            raise ParameterError(
                "fresh_fraction", None,
                "a finite real number with --surrogate ratio (K_f/K, the part of the stiffness "
                "acting on the current iterate; `grpo-theory fixed-points` reports it)")
        return check_real("fresh_fraction", args.fresh_fraction)
    if args.fresh_fraction not in (None, 0, 0.0):
        raise ParameterError("fresh_fraction", args.fresh_fraction,
                             "0 (or omitted) with --surrogate stale; use --surrogate ratio")
    return 0.0


def report(args) -> dict:
    from grpo_theory.theory.discrete import stability

    phi = _fresh_fraction(args)
    res = stability(args.learning_rate, args.momentum, args.refresh_interval, args.stiffness,
                    lag_model=args.lag_model, delay=args.delay, fresh_fraction=phi)
    d = res.to_dict()
    return {
        "inputs": {"learning_rate": res.learning_rate, "momentum": res.momentum,
                   "refresh_interval": res.refresh_interval, "stiffness": res.stiffness,
                   "lag_model": res.lag_model, "delay": res.delay, "surrogate": args.surrogate,
                   "fresh_fraction": res.fresh_fraction},
        "spectral_radius_exact": d["spectral_radius"],
        "stable_exact": d["stable"],
        "binding_condition_exact": d["binding_condition"],
        "max_stable_learning_rate_exact": d["max_stable_learning_rate"],
        "max_stable_refresh_interval_exact": d["max_stable_refresh_interval"],
        "max_stable_refresh_interval_continuous": d["max_stable_refresh_interval_continuous"],
        "critical_learning_rate_discrete": d["critical_learning_rate_discrete"],
        "discrete_regime": d["discrete_regime"],
        "alternating": d["alternating"],
        "eigenvalues": d["eigenvalues"],
        "mass": d["mass"],
        "damping": d["damping"],
        "spring": d["spring"],
        "damping_ratio": d["damping_ratio"],
        "regime": d["regime"],
        "notes": d["notes"] + [
            "spectral radius per refresh window" if res.lag_model == "refresh"
            else "spectral radius per step (delay recurrence)",
            "continuous columns: first-order-in-lag oscillator with lag = "
            + ("refresh interval" if res.lag_model == "refresh" else "delay"),
        ],
    }


def _fmt(v):
    if isinstance(v, float):
        return f"{v:.6g}" if math.isfinite(v) else str(v)
    return str(v)


def run(args) -> int:
    out = report(args)
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    rows = [("exact (L2)", ""),
            ("  spectral radius", out["spectral_radius_exact"]),
            ("  stable", out["stable_exact"]),
            ("  discrete regime", out["discrete_regime"]),
            ("  binding condition", out["binding_condition_exact"]),
            ("  max stable learning rate", out["max_stable_learning_rate_exact"]),
            ("  max stable refresh interval", out["max_stable_refresh_interval_exact"]),
            ("  critical learning rate (real->complex)", out["critical_learning_rate_discrete"]),
            ("continuous (L3)", ""),
            ("  mass", out["mass"]), ("  damping", out["damping"]), ("  spring", out["spring"]),
            ("  damping ratio", out["damping_ratio"]), ("  regime", out["regime"]),
            ("  max stable refresh interval (published)",
             out["max_stable_refresh_interval_continuous"])]
    width = max(len(r[0]) for r in rows)
    print("inputs: " + ", ".join(f"{k}={_fmt(v)}" for k, v in out["inputs"].items() if v is not None))
    for label, val in rows:
        print(f"{label:<{width}}  {_fmt(val)}")
    for note in out["notes"]:
        print(f"note: {note}")
    return 0
