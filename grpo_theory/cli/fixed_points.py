"""``grpo-theory fixed-points``: interior fixed points, their stability and stiffness, bifurcations in beta."""

from __future__ import annotations

from grpo_theory.cli.model_options import add_model_options, model_from_options

NAME = "fixed-points"
HELP = ("Fixed points of the exact mean-field drift for a GRPO variant: reward p*, logit z*, "
        "stability, stiffness K = -F'(z*) split into fresh/stale parts, the beta bifurcations, "
        "and Mroueh's fixed point for comparison.")


def add_arguments(p):
    add_model_options(p, ("variant",))
    p.add_argument("--eps-bifurcations", action="store_true",
                   help="also locate the advantage-epsilon values where fixed points are born or "
                        "vanish (scan of epsilon in [1e-6, 1]; a few seconds)")
    p.add_argument("--json", action="store_true", help="print JSON")


def call(args):
    from grpo_theory.theory.fixed_points import fixed_point_report

    return fixed_point_report(model_from_options(args), eps_bifurcations=args.eps_bifurcations)
