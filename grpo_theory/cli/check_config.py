"""``grpo-theory check-config CONFIG``: what the theory says about a TRL/verl config before launch."""

from __future__ import annotations

from grpo_theory.cli._common import number
from grpo_theory.cli.model_options import add_model_options, model_from_options, model_options_given

NAME = "check-config"
HELP = ("Check a TRL GRPOConfig, a verl config or launch script, or a CS336 config before "
        "launch: the variant, refresh window and reuse, which thresholds exist and where they "
        "lie in eta K; with --stiffness or --from-log (a different run), the verdict.")


def add_arguments(parser) -> None:
    parser.add_argument("config", metavar="CONFIG", help="TRL GRPOConfig (JSON/YAML), verl config "
                        "(YAML, key=value overrides, a launch script or a verl log), CS336 YAML")
    g = parser.add_mutually_exclusive_group()
    g.add_argument("--stiffness", type=number, default=None, metavar="K",
                   help="stiffness K per unit learning rate (eta K = decay rate per step)")
    g.add_argument("--from-log", default=None, metavar="LOG",
                   help="measure K (with its interval) from an earlier, different run's log: "
                        "from its reward's relaxation, or, where the reward shows none (a run "
                        "at its plateau), from the per-step fluctuations of its entropy or KL")
    parser.add_argument("--from-log-lr", type=number, default=None, metavar="ETA",
                        help="learning rate of the earlier run (default: logged, or its config)")
    parser.add_argument("--from-log-config", default=None, metavar="CONFIG",
                        help="config of the earlier run (its learning rate, momentum, refresh "
                             "window and passes), where its log holds none")
    parser.add_argument("--metric", default=None, help="reward metric of the --from-log log")
    add_model_options(parser, ("variant",), fields=("p_ref",),
                      defaults="a grid of values; with --from-log the fit's initial reward, or "
                               "the p_ref that puts the fixed point at the log's plateau")
    parser.add_argument("--steps", type=number, default=None, metavar="N",
                        help="horizon of the collapse risk (default: the config's, else 1000)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def call(args):
    from grpo_theory.runs.check_config import check_config

    p_ref = model_from_options(args).p_ref if model_options_given(args) else None
    return check_config(args.config, stiffness=args.stiffness, from_log=args.from_log,
                        from_log_lr=args.from_log_lr, metric=args.metric, p_ref=p_ref,
                        steps=args.steps, from_log_config=args.from_log_config)
