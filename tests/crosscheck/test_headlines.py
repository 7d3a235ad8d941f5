"""Every cross-check states its verdict as a physical comparison: a quantity with units,
the predicted and measured values and a band in the same units, and a reason in words."""

import math

import numpy as np

from grpo_theory.crosscheck import (
    N_SIGMA,
    check_plateaus,
    check_refresh_threshold,
)
from grpo_theory.crosscheck.base import Check, CrosscheckReport, band_contains, headline
from grpo_theory.report.markdown import cc_markdown_table
from grpo_theory.prose import programming_text, split_math, to_plain


def _numbers(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _inside(h):
    """Containment recomputed from the numbers (not from the stored flag)."""
    lo, hi = h["band"]
    x = h["measured"] if h["compare"] == "measured" else h["predicted"]
    if lo is None or hi is None or x is None or isinstance(x, (list, tuple)):
        return False
    return lo <= float(x) <= hi


def _assert_consistent(c):
    h = c.headline
    assert h, c.name
    for key in ("quantity", "units", "setting", "band_kind"):
        assert isinstance(h[key], str) and h[key].strip(), (c.name, key)
        split_math(h[key])                      # balanced dollars: renderable prose
    assert c.reason.strip(), c.name
    split_math(c.reason)
    assert math.isfinite(float(h["predicted"])), c.name
    assert all(math.isfinite(float(x)) for x in _numbers(h["measured"])), c.name
    lo, hi = h["band"]
    assert lo is not None and hi is not None and lo <= hi, (c.name, h["band"])
    assert h["inside"] == _inside(h), c.name
    if c.verdict in ("pass", "fail"):
        assert _inside(h) == (c.verdict == "pass"), (c.name, h, c.verdict)
    assert ("inside" in c.reason) == _inside(h), (c.name, c.reason)


def test_every_check_has_a_consistent_physical_headline(report):
    assert len(report.checks) == 12
    for c in report.checks:
        _assert_consistent(c)
        d = c.to_dict()
        # the old keys stay, the new ones are added
        assert set(d) >= {"name", "description", "predicted", "measured", "error", "band",
                          "verdict", "details", "headline", "reason"}


def _user_texts(c):
    """Every text of a check shown to users: (where, text)."""
    out = [("description", c.description), ("reason", c.reason)]
    if isinstance(c.band, dict) and c.band.get("derivation"):
        out.append(("band derivation", c.band["derivation"]))
    details = c.details or {}
    out += [(f"note {i}", n) for i, n in enumerate(details.get("notes") or [])]
    if details.get("failure_reason"):
        out.append(("failure_reason", details["failure_reason"]))
    h = c.headline or {}
    out += [(f"headline {k}", h[k]) for k in ("quantity", "setting", "band_kind") if h.get(k)]
    if h.get("statistic"):
        out.append(("statistic name", h["statistic"]["name"]))
    return out


def _prose_problems(c):
    """What is not prose in the user-facing texts of ``c``: code outside the dollars, or
    LaTeX (a backslash or a brace) left over by the terminal rendering."""
    bad = []
    for where, text in _user_texts(c):
        found = programming_text(text)
        if found:
            bad.append((c.name, where, text, found))
            continue
        plain = to_plain(text)
        if any(ch in plain for ch in "\\{}"):
            bad.append((c.name, where, text, plain))
    return bad


def test_every_user_text_is_prose(report):
    """Descriptions, band derivations, notes, reasons and headline texts are English with
    LaTeX math between dollars: no programming text, and the terminal shows no LaTeX."""
    bad = [b for c in report.checks for b in _prose_problems(c)]
    assert not bad, "\n".join(map(repr, bad))


def test_prose_lint_catches_programming_text():
    c = Check("x", "Adam runs (mu = beta1, eta_eff from v)", 1.0, 1.0, 0.0,
              {"derivation": "max |sim-L1| / (4 SEM(R=500))"}, "pass",
              {"notes": ["sigma^2 = update_variance"]},
              headline=headline("$\\eta_{eff}$", "steps", "$k = 3$", 1, 1, [1, 1], "exact"))
    assert {b[1] for b in _prose_problems(c)} == {"description", "band derivation", "note 0"}


def test_headline_units_are_physical(report):
    units = {c.name: c.headline["units"] for c in report.checks}
    assert units["group_temperature"] in ("logits²", "logits")
    assert units["reuse_fresh"] == units["reuse_batch"] == "logits²"
    assert units["plateaus"] == "reward"
    assert units["refresh_threshold"] == units["k1_refresh_threshold"] == "steps"
    # the measured threshold is a bracket of refresh intervals containing the prediction
    h = report["refresh_threshold"].headline
    assert h["compare"] == "predicted" and h["band"] == [float(x) for x in h["measured"]]


def test_wrong_stiffness_headline_is_outside():
    c = check_refresh_threshold(quick=True, seed_seq=np.random.SeedSequence(7), stiffness_scale=2.0)
    assert c.verdict == "fail"
    _assert_consistent(c)
    assert "outside" in c.reason
    assert c.details["failure_reason"]
    assert not _prose_problems(c)


def test_shifted_plateau_headline_is_outside(report):
    sem = max(r["sem"] for r in report["plateaus"].details["rows"])
    shift = 10 * N_SIGMA * sem
    c = check_plateaus(quick=True, seed_seq=np.random.SeedSequence(8), p_shift=shift)
    assert c.verdict == "fail"
    _assert_consistent(c)
    assert not _prose_problems(c)
    # the band is centred on the (shifted) prediction, in reward units
    lo, hi = c.headline["band"]
    assert abs((lo + hi) / 2 - c.headline["predicted"]) < 1e-12
    assert c.headline["measured"] < lo


def test_band_contains():
    assert band_contains([1.0, 2.0], 1.5) and band_contains([1.0, 2.0], 2.0)
    assert not band_contains([1.0, 2.0], 2.5)
    assert not band_contains([None, 2.0], 1.5)
    assert not band_contains([1.0, 2.0], None) and not band_contains([1.0, 2.0], float("nan"))


def _hand_made(verdict="fail"):
    h = headline("stationary variance of the logit $z$", "logits²", "SGD $\\eta = 0.1$, 200 runs",
                 0.030, 0.041, [0.027, 0.035], "L2 ± 4 SE")
    return Check("reuse_fresh", "d", 0.030, 0.041, 0.011, {"tolerance": 0.005, "derivation": "4 SE"},
                 verdict, {"notes": []}, headline=h,
                 reason="measured variance 0.041 is outside the band 0.027–0.035 of the "
                        "prediction 0.030")


def test_hand_made_check_renders_its_row_in_the_terminal_table():
    text = str(CrosscheckReport(checks=[_hand_made()]))
    header, _rule, row = text.splitlines()[:3]
    for col in ("check", "verdict", "predicted", "measured", "band"):
        assert col in header
    assert "error" not in header                       # no normalized column
    assert row.startswith("reuse_fresh")
    for part in ("FAIL", "0.0300 logits²", "0.0410 logits²", "0.0270 – 0.0350"):
        assert part in row, (part, row)
    block = text[text.index("[reuse_fresh]"):]
    for part in ("quantity: stationary variance of the logit z [logits²]",
                 "setting:  SGD η = 0.1, 200 runs", "0.0270 – 0.0350 (L2 ± 4 SE)",
                 "verdict:  FAIL: measured variance 0.041 is outside the band"):
        assert part in block, (part, block)
    assert "$" not in text and "\\eta" not in text     # prose rendered for the terminal
    assert max(len(line) for line in text.splitlines()) <= 100


def test_hand_made_check_renders_its_row_in_the_report_table():
    md = cc_markdown_table([_hand_made("pass")]).splitlines()
    assert md[0] == ("| check | quantity | setting | predicted | measured | band (what it tests) "
                     "| verdict |")
    # the check by its title, formulas as Unicode (a table cell holds no LaTeX), the band with
    # what it tests
    assert md[2].startswith("| variance, fresh batches | stationary variance of the logit z [logits²] | "
                            "SGD η = 0.1, 200 runs | 0.0300 | 0.0410 | 0.0270 – 0.0350 (L2 ± 4 SE)")
    assert md[2].count(" | ") == 6 and "$" not in md[2]


def test_check_without_headline_still_renders():
    bare = Check("plateaus", "d", 1.0, 2.0, 1.0, {"tolerance": 0.5}, "pass", {"notes": []})
    row = str(CrosscheckReport(checks=[bare])).splitlines()[2]
    assert row.startswith("plateaus") and "PASS" in row
