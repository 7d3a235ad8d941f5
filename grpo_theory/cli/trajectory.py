"""``grpo-theory trajectory``: closed-form x(t) of the continuous (L3) oscillator."""

from __future__ import annotations

import argparse

from grpo_theory.cli._common import number
from grpo_theory.validate import ParameterError, check_real

NAME = "trajectory"
HELP = ("Closed-form deviation x(t) of m x'' + γ x' + κ_s x = 0 at given times (steps), "
        "in every regime including exact critical damping.")


_num = number          # "0" stays 0 in an error message (float() echoed it as 0.0)


def _times(text):
    return text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    a = parser.add_argument
    a("--mass", type=_num, required=True, help="m > 0")
    a("--damping", type=_num, required=True, help="gamma (per step)")
    a("--spring", type=_num, required=True, help="spring constant κ_s > 0 (per step^2)")
    a("--x0", type=_num, required=True, help="initial deviation x(0) (logits)")
    a("--v0", type=_num, default=0.0, help="initial velocity x'(0) (logits/step, default 0)")
    a("--times", type=_times, nargs="+", required=True, metavar="T",
      help="times t >= 0 (steps), separated by spaces or commas: --times 0 10 20 or "
           "--times 0,10,20")
    a("--json", action="store_true", help="print JSON instead of a table")


def parse_times(text) -> list[float]:
    """Times from ``"0,1.5,10"`` or the words of ``--times 0 1.5 10`` (a list of strings)."""
    allowed = "finite real numbers >= 0 separated by spaces or commas, e.g. 0 1.5 10"
    if isinstance(text, (list, tuple)):
        text = ",".join(str(t).strip().strip(",") for t in text)
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


def call(args):
    from grpo_theory.theory.oscillator import trajectory_report

    return trajectory_report(parse_times(args.times), args.mass, args.damping, args.spring,
                             args.x0, args.v0)
