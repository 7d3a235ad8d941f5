"""Every command takes the model's options from one generator: same names, help, defaults
(the model's) and validation."""

import argparse

import pytest

from grpo_theory.cli.main import build_parser, main
from grpo_theory.cli.model_options import option
from grpo_theory.model import DEFAULT_MODEL, DEFAULTS, FIELD_GROUPS, GRPOModel

FULL = ("stability", "simulate", "collapse-risk")       # variant, optimizer and lag
VARIANT_ONLY = ("fixed-points",)


def _subparsers():
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices


def _model_actions(p):
    """{field: (option strings, help, metavar, default)} of a command's model options."""
    return {a.dest: (tuple(a.option_strings), a.help, a.metavar, a.default)
            for a in p._actions if a.dest in DEFAULTS}


def test_variant_optimizer_and_lag_options_are_identical_across_commands():
    subs = _subparsers()
    ref = _model_actions(subs["stability"])
    assert set(ref) == set(DEFAULTS)
    for name in FULL:
        assert _model_actions(subs[name]) == ref, name
    for name in VARIANT_ONLY:
        got = _model_actions(subs[name])
        assert set(got) == set(FIELD_GROUPS["variant"])
        assert got == {k: v for k, v in ref.items() if k in FIELD_GROUPS["variant"]}


def test_options_show_the_model_defaults_and_are_not_given_by_default():
    ref = _model_actions(_subparsers()["simulate"])
    for field, (opts, help_, _metavar, default) in ref.items():
        assert opts == (option(field),)
        assert default is argparse.SUPPRESS        # not given unless typed
        value = DEFAULTS[field]
        shown = "none" if value is None else f"{value:g}" if isinstance(value, float) else str(value)
        assert help_.endswith(f"(default: {shown})"), (field, help_)
    assert GRPOModel() == DEFAULT_MODEL


@pytest.mark.parametrize("command", ["stability", "fixed-points", "simulate", "collapse-risk"])
def test_the_same_bad_value_gives_the_same_line(command, capsys):
    argv = [command, "--normalization", "typo"] + (["--steps", "2"] if command == "simulate" else [])
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"grpo-theory {command}: error: normalization must be one of 'std', 'mean', "
                   f"got 'typo'"]


@pytest.mark.parametrize("command", ["stability", "simulate", "fixed-points", "collapse-risk"])
def test_k1_reward_needs_mean_normalization_in_every_command(command, capsys):
    """Issue 21 item 8: `simulate --kl k1_reward` ran with std normalization (exit 0) while
    the other commands refused it: the same one line, exit 2, nothing printed."""
    assert main([command, "--kl", "k1_reward", "--kl-coef", "0.5"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == (f"grpo-theory {command}: error: normalization must be 'mean' "
                                 "with kl 'k1_reward' (KL in the reward), got 'std'\n")
    assert main([command, "--kl", "k1_reward", "--kl-coef", "0.5", "--normalization", "mean"]
                + {"simulate": ["--steps", "2", "--runs", "4"]}.get(command, [])) in (0, 1)
    assert capsys.readouterr().err == ""


def test_adam_takes_the_same_arguments_in_simulate_and_stability(capsys):
    adam = ["--optimizer", "adam", "--learning-rate", "0.01", "--adam-beta1", "0.8",
            "--adam-beta2", "0.99", "--adam-eps", "1e-7", "--momentum", "0.3"]
    assert main(["stability", *adam, "--json"]) == 0
    out = capsys.readouterr().out
    assert '"optimizer": "adam"' in out and '"learning_rate": 0.01' in out
    assert "momentum = 0.3 is not used by Adam" in out
    assert main(["simulate", *adam, "--steps", "3", "--runs", "4"]) == 0
    out = capsys.readouterr().out
    assert "adam (eta = 0.01, betas = 0.8/0.99, eps = 1e-07)" in out
    assert "momentum = 0.3 is not used by Adam" in out


def test_every_command_taking_a_model_field_takes_the_generated_option():
    """A command that takes some of the model's fields (deepnet, lab, compare, check-config,
    ...) takes them from the one generator: the field's option string, help text and metavar,
    not given by default; only the shown default may be the command's own, and the allowed
    values only where the command takes fewer (the lab: a finite G, said so; deepnet: Adam's
    beta1 only, said so)."""
    subs = _subparsers()
    ref = _model_actions(subs["stability"])
    seen = set()
    for name, p in subs.items():
        for field, (opts, help_, metavar, default) in _model_actions(p).items():
            r_opts, r_help, r_metavar, r_default = ref[field]
            assert (opts, metavar, default) == (r_opts, r_metavar, r_default), (name, field)
            if (name, field) == ("lab", "group_size"):
                assert "integer >= 2" in help_ and "'inf'" not in help_, help_
            elif (name, field) == ("deepnet", "optimizer"):     # no --adam-beta2/--adam-eps
                assert "--adam-beta1" in help_ and "--adam-eps" not in help_, help_
            else:
                assert help_.split(" (default: ")[0] == r_help.split(" (default: ")[0], (name, field)
            seen.add(name)
    assert {"lab", "deepnet", "compare", "check-config"} <= seen
