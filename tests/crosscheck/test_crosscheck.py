"""Cross-checks of the theory against the simulation (quick mode, run once per module)."""

import json
import math

import numpy as np
import pytest

from grpo_theory.cli import main as cli_main
from grpo_theory.crosscheck import (
    N_SIGMA,
    check_plateaus,
    check_refresh_threshold,
)


def _finite(x):
    return x is None or isinstance(x, str) or math.isfinite(float(x))


def test_report_numbers_finite_and_json_safe(report):
    d = report.to_dict()
    json.dumps(d, allow_nan=False)  # no NaN/inf anywhere
    assert [c["name"] for c in d["checks"]] == ["mean_trajectory", "group_temperature",
                                                "refresh_threshold", "damping_transition",
                                                "plateaus", "adam", "adam_critical_damping",
                                                "reuse_fresh",
                                                "reuse_batch", "collapse", "collapse_reuse",
                                                "k1_refresh_threshold"]
    for c in report.checks:
        assert c.verdict in ("pass", "fail", "info")
        assert math.isfinite(float(c.predicted))
        assert c.band["derivation"]
    assert "predicted" in report.table()


@pytest.mark.parametrize("name", ["mean_trajectory", "group_temperature", "refresh_threshold",
                                  "damping_transition", "plateaus", "adam",
                                  "adam_critical_damping", "reuse_fresh",
                                  "reuse_batch", "collapse", "collapse_reuse",
                                  "k1_refresh_threshold"])
def test_check_passes(report, name):
    c = report[name]
    assert c.verdict == "pass", c.details.get("notes")
    assert math.isfinite(c.measured)


def test_refresh_threshold_reports_all_predictions(report):
    d = report["refresh_threshold"].details
    # both splits: a KL-in-the-loss variant with fresh stiffness and an all-stale one
    fractions = [s["fresh_fraction"] for s in d["settings"]]
    assert any(f > 0.1 for f in fractions) and any(f == 0 for f in fractions)
    for s in d["settings"]:
        assert 3 <= s["k_max_L2"] <= 40
        assert s["k_max_published"] is not None
        # the empirical bracket contains the exact L2 threshold
        lo, hi = s["bracket"]
        assert lo is not None and hi is not None and lo <= s["k_max_L2"] < hi
    for row in d["rows"]:
        # the mean response to the offset follows L2 within 4 SE + the computed bias
        assert row["agreement_ratio"] <= 1.0
        # the second-order mean-field bias is below the statistical band
        assert row["bias_over_4se"] < 1.0
        assert row["status"] != "undecided" or abs(row["radius_L2"] - 1) < 0.05


def test_wrong_stiffness_is_rejected():
    c = check_refresh_threshold(quick=True, seed_seq=np.random.SeedSequence(7), stiffness_scale=2.0)
    assert c.verdict == "fail"


def test_shifted_plateau_is_rejected(report):
    # a shift of 10 standard errors of the plateau (derived from the replications)
    sem = max(r["sem"] for r in report["plateaus"].details["rows"])
    c = check_plateaus(quick=True, seed_seq=np.random.SeedSequence(8), p_shift=10 * N_SIGMA * sem)
    assert c.verdict == "fail"


def test_deterministic_given_seed(report):
    again = check_plateaus(quick=True, seed_seq=np.random.SeedSequence(0).spawn(6)[4])
    assert again.measured == report["plateaus"].measured


def test_cli_json(monkeypatch, capsys, report):
    import grpo_theory.crosscheck as cc

    monkeypatch.setattr(cc, "run_crosschecks", lambda quick, seed: report)
    code = cli_main(["crosscheck", "--quick", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert set(out) >= {"checks", "passed"}
    assert code == (0 if out["passed"] else 1)
    code = cli_main(["crosscheck", "--quick"])
    assert "overall" in capsys.readouterr().out


def test_summary_rows_show_the_reason_of_a_failure():
    from grpo_theory.crosscheck.base import Check, CrosscheckReport
    bad = Check("refresh_threshold", "d", 1.0, 2.0, 1.0, {"tolerance": 0.5}, "fail",
                {"failure_reason": "k = 9 > k_pred = 8 measured stable", "notes": []})
    text = str(CrosscheckReport(checks=[bad]))
    assert "FAIL refresh_threshold: k = 9 > k_pred = 8 measured stable" in text
    assert CrosscheckReport(checks=[bad]).exit_code == 1
