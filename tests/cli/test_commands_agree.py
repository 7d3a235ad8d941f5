"""Issue 21, item 7: on one log, ``fit``, ``diagnose`` and ``check-config --from-log`` read the
reward curve once and tell the same story (gain, applicability, regime).

Before the one curve reading they did not: on one log ``fit`` said "gain +0.0156 ... no regime
is named", ``diagnose`` "gained +0.322" and "zeta = 0.0543 (oscillatory)", and check-config took
a stiffness from a curve fit had declined."""

import json


from grpo_theory.cli.main import main
from grpo_theory.data import example_log


def _json(capsys, *argv):
    assert main([*argv, "--json"]) in (0, None)
    return json.loads(capsys.readouterr().out)


def test_fit_diagnose_and_check_config_read_one_curve(tmp_path, capsys):
    log = str(example_log())
    cfg = tmp_path / "next_run.yaml"
    cfg.write_text("learning_rate: 1.0e-6\nnum_generations: 8\nbeta: 0.04\n")
    fit = _json(capsys, "fit", log)
    diag = _json(capsys, "diagnose", log)
    check = _json(capsys, "check-config", str(cfg), "--from-log", log)
    assert fit["gain"] == diag["curve"]["gain"] == check["stiffness"]["gain"]
    assert fit["applicable"]["fit"] is diag["curve"]["applicable"] is True
    assert fit["regime"] == diag["curve"]["regime"]
    assert fit["regime"] in ("overdamped", "underdamped", "critically damped")
