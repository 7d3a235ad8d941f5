"""``grpo-theory fixed-points``: interior fixed points, their stability and stiffness, bifurcations in beta."""

from __future__ import annotations

NAME = "fixed-points"
HELP = ("Fixed points of the exact mean-field drift for a GRPO variant: reward p*, logit z*, "
        "stability, stiffness K = -F'(z*) split into fresh/stale parts, the beta bifurcations, "
        "and Mroueh's fixed point for comparison.")


def add_arguments(p):
    a = p.add_argument
    a("--p-ref", type=float, default=0.3, help="success probability of the reference policy, in (0, 1)")
    a("--kl-coef", type=float, default=0.05, help="KL coefficient beta >= 0")
    a("--normalization", default="std", help="std (mean and Bessel std + eps) | mean (Dr. GRPO)")
    a("--kl", default="exact", help="none | exact (analytic KL) | k3 (TRL/verl estimator)")
    a("--surrogate", default="stale", help="stale (ratio ignored) | ratio (importance ratio)")
    a("--adv-eps", type=float, default=0.0, help="advantage epsilon >= 0 (TRL 1e-4, verl 1e-6)")
    a("--group-size", default="8", help="G >= 2, or 'inf' for the large-G limit")
    a("--actions", type=int, default=2, help="number of actions K >= 2")
    a("--correct", type=int, default=1, help="number of correct actions c in [1, K-1]")
    a("--eps-bifurcations", action="store_true",
      help="also locate the advantage-epsilon values where fixed points are born or vanish "
           "(scan of epsilon in [1e-6, 1]; a few seconds)")
    a("--json", action="store_true", help="print JSON")


def call(args):
    from grpo_theory.theory.fixed_points import fixed_point_report

    return fixed_point_report(p_ref=args.p_ref, kl_coef=args.kl_coef,
                              normalization=args.normalization, kl=args.kl,
                              surrogate=args.surrogate, adv_eps=args.adv_eps,
                              group_size=args.group_size, actions=args.actions,
                              correct=args.correct, eps_bifurcations=args.eps_bifurcations)
