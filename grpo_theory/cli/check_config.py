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
    parser.add_argument("--reward-level", type=float, default=None, metavar="P",
                        help="plateau reward in (0, 1) for the expected fluctuation (default: "
                             "the --from-log fit's plateau, else the model's fixed point if a KL is set)")
    parser.add_argument("--p-ref", type=float, default=None, metavar="P",
                        help="reward of the reference policy (k3 KL noise and the model's fixed "
                             "point; default: the --from-log fit's initial reward)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def _f(x, spec=".4g"):
    return "n/a" if x is None else (format(x, spec) if isinstance(x, (int, float)) else str(x))


def run(args) -> int:
    from grpo_theory.runs.check_config import check_config

    res = check_config(args.config, stiffness=args.stiffness, from_log=args.from_log,
                       from_log_lr=args.from_log_lr, reward_level=args.reward_level,
                       p_ref=args.p_ref)
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
        _print_fluctuation(res["expected_fluctuation"])
        return 0
    print(f"stiffness K = {_f(K['value'])} per unit lr ({K.get('source')})"
          + (f", tau = {_f(K.get('tau_steps'))} steps, R^2 = {_f(K.get('r2'), '.3f')}"
             if "tau_steps" in K else ""))
    pr = res["prediction"]
    print(f"prediction ({pr['source']}): eta K = {_f(pr['eta_K'])}, regime {pr['regime']}, "
          f"stable {pr['stable']}, margin {_f(pr['stability_margin'])}")
    print(f"  largest stable refresh interval {_f(pr['max_stable_refresh_interval'])}, "
          f"largest stable learning rate {_f(pr['max_stable_learning_rate'])}")
    _print_fluctuation(pr.get("expected_fluctuation"))
    print("assumptions:")
    for a in res["assumptions"]:
        print(f"  - {a}")
    for m in res["missing"]:
        print(f"  missing: {m}")
    return 0


def _print_fluctuation(fl) -> None:
    if not fl:
        return
    if fl.get("reward_std") is None:
        print("expected reward fluctuation: not computed (" + "; ".join(fl["needed"]) + ")")
        return
    print(f"expected reward fluctuation (bandit noise model, exact L2): sd p = "
          f"{_f(fl['reward_std'])} at p = {_f(fl['reward_level'])} ({fl['reward_level_source']})")
    print(f"  sigma^2 = {_f(fl['noise_variance'])} per lr^2 (G = {fl['group_size']}, "
          f"B = {_f(fl['prompts_per_step'], 'g')}), Var z = {_f(fl['var_z'])}, "
          f"K = {_f(fl['stiffness'])}")
    gm = fl.get("gain_matched") or {}
    if gm.get("reward_std") is not None:
        print(f"  gain-matched reading (c = K/K_bandit = {_f(gm['gain'])}): sd p = "
              f"{_f(gm['reward_std'])}")
    if fl.get("measurement_floor_std") is not None:
        print(f"  sampling floor of a logged batch mean: {_f(fl['measurement_floor_std'])}")
    obs = fl.get("observed") or {}
    if obs.get("std") is not None:
        print(f"  observed (earlier log, {obs['definition']}): {_f(obs['std'])}")
        print(f"  observed / predicted = {_f(fl['ratio_observed_over_predicted'])}"
              + (f"; observed / gain-matched = {_f(gm.get('ratio_observed_over_predicted'))}"
                 if gm.get("reward_std") is not None else ""))
