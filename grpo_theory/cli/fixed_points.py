"""``grpo-theory fixed-points``: interior fixed points, their stability and stiffness, bifurcations in beta."""

from __future__ import annotations

import json

NAME = "fixed-points"
HELP = ("Fixed points of the exact mean-field drift for a GRPO variant: reward p*, logit z*, "
        "stability, stiffness K = -F'(z*) split into fresh/stale parts, the beta bifurcations, "
        "and Mroueh's fixed point for comparison.")


def _group(value: str):
    return value if value.lower() in {"inf", "infinity"} else value


def add_arguments(p):
    a = p.add_argument
    a("--p-ref", type=float, default=0.3, help="success probability of the reference policy, in (0, 1)")
    a("--kl-coef", type=float, default=0.05, help="KL coefficient beta >= 0")
    a("--normalization", default="std", help="std (mean and Bessel std + eps) | mean (Dr. GRPO)")
    a("--kl", default="exact", help="none | exact (analytic KL) | k3 (TRL/verl estimator)")
    a("--surrogate", default="stale", help="stale (ratio ignored) | ratio (importance ratio)")
    a("--adv-eps", type=float, default=0.0, help="advantage epsilon >= 0 (TRL 1e-4, verl 1e-6)")
    a("--group-size", type=_group, default="8", help="G >= 2, or 'inf' for the large-G limit")
    a("--actions", type=int, default=2, help="number of actions K >= 2")
    a("--correct", type=int, default=1, help="number of correct actions c in [1, K-1]")
    a("--eps-bifurcations", action="store_true",
      help="also locate the advantage-epsilon values where fixed points are born or vanish "
           "(scan of epsilon in [1e-6, 1]; a few seconds)")
    a("--json", action="store_true", help="print JSON")


def run(args) -> int:
    from grpo_theory.theory.drift import check_group_size
    from grpo_theory.theory.fixed_points import (bifurcations, bifurcations_in_adv_eps, fixed_points,
                                mroueh_fixed_point)

    G = check_group_size(args.group_size)
    kw = dict(p_ref=args.p_ref, kl_coef=args.kl_coef, normalization=args.normalization, kl=args.kl,
              surrogate=args.surrogate, adv_eps=args.adv_eps, group_size=G,
              actions=args.actions, correct=args.correct)
    fps = fixed_points(**kw)
    bifs = bifurcations(**{k: v for k, v in kw.items() if k not in {"kl_coef", "surrogate"}})
    mroueh = mroueh_fixed_point(p_ref=args.p_ref, kl_coef=args.kl_coef, adv_eps=args.adv_eps) \
        if args.kl_coef > 0 else None
    from grpo_theory.theory.drift import drift
    import math

    z_top = math.log(args.p_ref / (1 - args.p_ref)) + 60.0
    escapes = bool(drift(z_top, **kw) > 0)
    eps_bifs = None
    if args.eps_bifurcations and args.kl != "none":
        eps_bifs = bifurcations_in_adv_eps(**{k: v for k, v in kw.items()
                                              if k not in {"adv_eps", "surrogate"}})
    out = {
        "inputs": {**kw, "group_size": "inf" if G is None else G},
        "fixed_points": [fp.to_dict() for fp in fps],
        "escapes_to_one": escapes,
        "bifurcations": bifs,
        "adv_eps_bifurcations": eps_bifs,
        "mroueh_fixed_point": mroueh,
        "notes": "stiffness per unit learning rate (the spring constant is eta*K); "
                 "stable means K > 0 (small steps); see `grpo-theory stability` for the discrete "
                 "threshold with lag and momentum; fresh_fraction feeds --fresh-fraction there.",
    }
    if args.json:
        print(json.dumps(out, indent=1))
        return 0
    print(f"variant: normalization={args.normalization} kl={args.kl} surrogate={args.surrogate} "
          f"G={out['inputs']['group_size']} beta={args.kl_coef} p_ref={args.p_ref} eps={args.adv_eps}")
    if not fps:
        print("no interior fixed point" + (" -- the reward escapes to p = 1" if escapes else ""))
    for fp in fps:
        print(f"  p* = {fp.p:.6f}  z* = {fp.z:+.6f}  {'stable  ' if fp.stable else 'unstable'}  "
              f"K = {fp.stiffness:.6g} (fresh {fp.stiffness_fresh:.4g}, stale {fp.stiffness_stale:.4g})")
    if escapes and fps:
        print("  (above the largest fixed point the reward escapes to p = 1)")
    for b in bifs:
        print(f"  bifurcation ({b['kind']}) at beta = {b['kl_coef']:.6g}, p = {b['p']:.6f}")
    for b in eps_bifs or []:
        print(f"  at adv_eps = {b['adv_eps']:.6g} fixed points: {b['count_below']} -> {b['count_above']} "
              f"({b['kind']} as epsilon grows)")
    if mroueh is not None:
        print(f"  Mroueh's recurrence: lowest interior fixed point p = {mroueh:.6f}")
    return 0
