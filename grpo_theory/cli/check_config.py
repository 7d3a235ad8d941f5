"""``grpo-theory check-config CONFIG``: map a TRL/verl config to the model and predict its dynamics."""

from __future__ import annotations

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


def call(args):
    from grpo_theory.runs.check_config import check_config

    return check_config(args.config, stiffness=args.stiffness, from_log=args.from_log,
                        from_log_lr=args.from_log_lr, reward_level=args.reward_level,
                        p_ref=args.p_ref)
