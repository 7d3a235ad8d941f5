"""``grpo-theory check-config CONFIG``: map a TRL/verl config to the model and predict its dynamics."""

from __future__ import annotations

import json

NAME = "check-config"
HELP = ("Check a TRL GRPOConfig or verl config before launch: group size, learning rate, momentum, "
        "KL, normalization, refresh interval; with a stiffness, regime and stability limits.")


def add_arguments(parser) -> None:
    parser.add_argument("config", metavar="CONFIG", help="TRL GRPOConfig (JSON/YAML), verl config "
                        "(YAML or key=value overrides), or a launch script / verl log")
    g = parser.add_mutually_exclusive_group()
    g.add_argument("--stiffness", type=float, default=None, metavar="K",
                   help="stiffness K per unit learning rate (eta K = decay rate per step)")
    g.add_argument("--from-log", default=None, metavar="LOG",
                   help="measure K from an earlier run's log: K = 1/(tau eta) (single-exponential fit)")
    parser.add_argument("--from-log-lr", type=float, default=None, metavar="ETA",
                        help="learning rate of the earlier run (default: from its log's config)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def _f(x, spec=".4g"):
    return "n/a" if x is None else (format(x, spec) if isinstance(x, (int, float)) else str(x))


def run(args) -> int:
    from ..config_check import check_config

    res = check_config(args.config, stiffness=args.stiffness, from_log=args.from_log,
                       from_log_lr=args.from_log_lr)
    if args.json:
        print(json.dumps(res, indent=2, allow_nan=False))
        return 0
    print(f"{res['config']} ({res['kind']} config)")
    for name, p in res["parameters"].items():
        tag = " [assumed]" if p["assumed"] else ""
        print(f"  {name:<17} = {_f(p['value'])}   ({p['source']}){tag}")
    for w in res.get("warnings", []):
        print(f"  warning: {w}")
    K = res["stiffness"]
    if K is None:
        print(res["note"])
        return 0
    print(f"stiffness K = {_f(K['value'])} per unit lr ({K.get('source')})"
          + (f", tau = {_f(K.get('tau_steps'))} steps, R^2 = {_f(K.get('r2'), '.3f')}"
             if "tau_steps" in K else ""))
    pr = res["prediction"]
    print(f"prediction ({pr['source']}): eta K = {_f(pr['eta_K'])}, regime {pr['regime']}, "
          f"stable {pr['stable']}, margin {_f(pr['stability_margin'])}")
    print(f"  largest stable refresh interval {_f(pr['max_stable_refresh_interval'])}, "
          f"largest stable learning rate {_f(pr['max_stable_learning_rate'])}")
    fl = pr.get("expected_fluctuation")
    print(f"  expected reward fluctuation: {_f(fl['value']) if fl else 'n/a'}")
    print("assumptions:")
    for a in res["assumptions"]:
        print(f"  - {a}")
    for m in res["missing"]:
        print(f"  missing: {m}")
    return 0
