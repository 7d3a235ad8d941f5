"""What the command line says about its own options (issue 29, items 8 and 10): an option that
does nothing as given says so in a ``note:`` line (stderr, so ``--json`` stays clean, and not
when the command fails: an error stays one line); ``--help`` describes what the command does
and offers nothing it refuses."""

import json

import pytest

from grpo_theory.cli._notes import UNUSED
from grpo_theory.cli.main import build_parser, main


def _help(command):
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    return sub.choices[command].format_help()


def test_deepnet_help_offers_no_adam_option_it_refuses(capsys):
    """It named --adam-beta2 and --adam-eps, which deepnet has no option for."""
    text = _help("deepnet")
    assert "--adam-beta2" not in text and "--adam-eps" not in text and "--adam-beta1" in text
    with pytest.raises(SystemExit) as exc:
        main(["deepnet", "--adam-beta2", "0.99"])
    assert exc.value.code == 2                        # refused indeed
    capsys.readouterr()


def test_diagnose_help_names_every_detector():
    from grpo_theory.runs import diagnostics as D
    from grpo_theory.runs.logs import TrainingLog

    import numpy as np

    log = TrainingLog(metrics={"reward": (np.arange(3.0), np.zeros(3))})
    names = list(D.diagnose(log, group_size=8).diagnostics)        # the detectors that run
    text = " ".join(_help("diagnose").split())
    for name in names:
        assert name.replace("_", " ") in text, name


def test_every_option_of_watch_has_help():
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    for action in sub.choices["watch"]._actions:
        assert action.help, action.option_strings


@pytest.mark.parametrize("argv, note", [
    (["simulate", "--steps", "2", "--runs", "2", "--force", "--json"],
     "--force is not used without --out"),
    (["collapse-risk", "--steps", "10"], None),
])
def test_an_option_that_does_nothing_says_so(argv, note, capsys):
    assert main(argv) == 0
    out, err = capsys.readouterr()
    if "--json" in argv:
        json.loads(out)                                   # stdout stays machine-readable
    if note is None:
        assert "note:" not in err
    else:
        assert err.strip() == f"grpo-theory {argv[0]}: note: {note} (nothing is written)"


def test_check_config_notes_from_log_options_given_without_from_log(tmp_path, capsys):
    cfg = tmp_path / "grpo.yaml"
    cfg.write_text("num_generations: 8\nper_device_train_batch_size: 8\n")
    assert main(["check-config", str(cfg), "--from-log-lr", "1e-6", "--metric", "reward",
                 "--from-log-config", str(cfg), "--json"]) == 0
    out, err = capsys.readouterr()
    json.loads(out)
    notes = err.strip().splitlines()
    assert [n.split(": note: ")[1].split(" is not used")[0] for n in notes] == \
        ["--from-log-lr", "--from-log-config", "--metric"]
    assert all("without --from-log" in n for n in notes)


def test_no_note_on_an_error(tmp_path, capsys):
    """A refused command prints its one error line only."""
    assert main(["simulate", "--steps", "0", "--force"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_the_notes_name_real_options():
    """Every (option, option it needs) pair of the table is an option of its command."""
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    for command, rows in UNUSED.items():
        dests = {a.dest for a in sub.choices[command]._actions}
        for dest, needs, _ in rows:
            assert {dest, needs} <= dests, (command, dest, needs)


@pytest.mark.parametrize("argv, tail", [
    (["fit", "--example", "--train-fraction", "0"], "train_fraction must be a real number in "
                                                    "(0, 1), got 0"),
    (["watch", "LOG", "--interval", "-1", "--max-polls", "1"], "got -1"),
])
def test_errors_echo_numbers_as_typed(argv, tail, tmp_path, capsys):
    """`--train-fraction 0` was echoed as "got 0.0" (argparse's float())."""
    log = tmp_path / "log.jsonl"
    log.write_text('{"step": 1, "reward": 0.5}\n')
    argv = [str(log) if a == "LOG" else a for a in argv]
    assert main(argv) == 2
    assert capsys.readouterr().err.strip().endswith(tail)
