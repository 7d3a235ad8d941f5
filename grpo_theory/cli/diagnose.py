"""``grpo-theory diagnose LOG``: collapse, oscillation, concentration, hacking and degeneracy checks."""

from __future__ import annotations

from grpo_theory.cli.fit import add_log_arguments, load_log
from grpo_theory.cli.model_options import add_model_options, model_from_options, model_options_given

#: where the group size comes from when --group-size is not given
GROUP_SIZE_DEFAULT = ("from the log's config: TRL num_generations (in the config.json next to a "
                      "trainer_state.json), verl rollout.n")

NAME = "diagnose"
HELP = ("Diagnose a training log: advantage degeneracy, policy concentration, "
        "entropy explosion, reward hacking, divergence (a run-away growth of the entropy, "
        "KL, gradient norm or response length), dynamical instability, collapse (the reward "
        "falling back below where it started); n/a where a check cannot run.")


def add_arguments(parser) -> None:
    add_log_arguments(parser)
    add_model_options(parser, ("variant",), fields=("group_size",),
                      defaults={"group_size": GROUP_SIZE_DEFAULT})


def call(args):
    from grpo_theory.runs.diagnostics import diagnose

    model_from_options(args)                   # validates a given group size
    return diagnose(load_log(args), args.metric, model_options_given(args).get("group_size"))
