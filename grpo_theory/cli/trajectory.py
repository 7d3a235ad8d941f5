"""``grpo-theory trajectory``: closed-form x(t) of the continuous (L3) oscillator."""

from __future__ import annotations

import argparse
import json

import numpy as np

from grpo_theory.validate import ParameterError, check_real

NAME = "trajectory"
HELP = ("Closed-form deviation x(t) of m x'' + gamma x' + k x = 0 at given times (steps), "
        "in every regime including exact critical damping.")


def _num(text):
    try:
        return float(text)
    except ValueError:
        return text


def _times(text):
    return text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    a = parser.add_argument
    a("--mass", type=_num, required=True, help="m > 0")
    a("--damping", type=_num, required=True, help="gamma (per step)")
    a("--spring", type=_num, required=True, help="k > 0 (per step^2)")
    a("--x0", type=_num, required=True, help="initial deviation x(0) (logits)")
    a("--v0", type=_num, default=0.0, help="initial velocity x'(0) (logits/step, default 0)")
    a("--times", type=_times, required=True, help="comma-separated times t >= 0 (steps)")
    a("--json", action="store_true", help="print JSON instead of a table")


def parse_times(text) -> list[float]:
    allowed = "a comma-separated list of finite real numbers >= 0, e.g. 0,1.5,10"
    parts = [p.strip() for p in str(text).split(",")]
    if not parts or any(p == "" for p in parts):
        raise ParameterError("times", text, allowed)
    out = []
    for p in parts:
        try:
            out.append(check_real("times", p, low=0))
        except ParameterError:
            raise ParameterError("times", text, allowed) from None
    return out


def run(args) -> int:
    from grpo_theory.theory import oscillator

    times = parse_times(args.times)
    m = check_real("mass", args.mass, low=0, low_open=True)
    g = check_real("damping", args.damping)
    k = check_real("spring", args.spring, low=0, low_open=True)
    x = oscillator.trajectory(np.array(times), m, g, k, args.x0, args.v0)
    zeta = float(oscillator.damping_ratio(m, g, k))
    out = {"inputs": {"mass": m, "damping": g, "spring": k, "x0": float(args.x0),
                      "v0": float(args.v0)},
           "times": times, "x": [float(v) for v in np.atleast_1d(x)],
           "regime": oscillator.regime(m, g, k), "damping_ratio": zeta}
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"regime: {out['regime']}  damping ratio: {zeta:.6g}")
    print(f"{'t':>12}  {'x(t)':>16}")
    for tt, xv in zip(times, out["x"]):
        print(f"{tt:>12.6g}  {xv:>16.10g}")
    return 0
