"""The report's lab section: read from the lab's committed result files, never run; a missing
or malformed file is named instead of its numbers."""

from __future__ import annotations

import json
import shutil

import pytest

from grpo_theory.report.lab import LAB_RESULTS, lab_data, lab_markdown, lab_section, lab_summary
from grpo_theory.report.markdown import number_text


def _cite(key):
    return f"[{key}]"


@pytest.mark.skipif(not (LAB_RESULTS / "lab_refresh.json").is_file(),
                    reason="the lab's results are not in this checkout")
def test_the_section_shows_the_committed_numbers():
    raw = json.loads((LAB_RESULTS / "lab_refresh.json").read_text())
    trans = json.loads((LAB_RESULTS / "lab_transition.json").read_text())["transition"]
    s = lab_summary(lab_data())
    assert s["available"] and not s["problems"]
    title, body = lab_section(s)
    # the numbers are the files' own, not typed into the report
    assert f"{raw['stiffness']['ntk']:.4g}" in body and f"{raw['stiffness']['response']:.4g}" in body
    for sw in raw["sweeps"]:
        assert any(r["exact"] == sw["k_max_predicted"] and r["published"] == sw["k_max_published"]
                   for r in s["sweeps"])
    assert f"{trans['mu_c_observed']:.3g}" in body and f"{trans['mu_c_predicted']:.4g}" in body
    for word in ("steps_per_generation", "num_iterations", "torch"):
        assert word not in body                       # settings in words, no code names
    md = "\n".join(lab_markdown(s, _cite, number_text))
    assert "Var p ∝ G^" in md and "α = " in md and "R²" in md


def test_missing_and_malformed_files_are_named(tmp_path):
    s = lab_summary(lab_data(tmp_path))
    assert not s["available"]
    title, body = lab_section(s)
    assert "not available" in body and "lab\\_refresh.json is absent" in body
    assert "not available" in "\n".join(lab_markdown(s, _cite, number_text))
    if (LAB_RESULTS / "lab_refresh.json").is_file():
        shutil.copy(LAB_RESULTS / "lab_refresh.json", tmp_path / "lab_refresh.json")
        (tmp_path / "lab_transition.json").write_text('{\n  "transition": \n}')
        s = lab_summary(lab_data(tmp_path))
        assert s["available"] and "transition" not in s
        assert any(p.startswith("lab_transition.json, line 3") for p in s["problems"])
        assert "lab\\_transition.json, line 3" in lab_section(s)[1]


@pytest.mark.skipif(not (LAB_RESULTS / "lab_refresh.json").is_file(),
                    reason="the lab's results are not in this checkout")
def test_the_section_states_its_task_seeds_and_intervals():
    """Issue 30, section 5: the task, the seeds of every measurement and the kind of every
    uncertainty are on the page, with the counts the files hold."""
    raw = json.loads((LAB_RESULTS / "lab_refresh.json").read_text())
    group = json.loads((LAB_RESULTS / "lab_group-size.json").read_text())["group_family"]
    _, body = lab_section(lab_summary(lab_data()))
    assert "its parity (the sum modulo 2)" in body
    pairs = sorted({sw["pairs"] for sw in raw["sweeps"] + [raw["unsafe"]]})
    assert f"${pairs[0]}$ to ${pairs[-1]}$ pairs of kicked runs" in body
    assert "jackknife standard error over the pairs" in body
    n_group = len({r["seed"] for r in group["runs"]})
    assert {2: "two seeds", 3: "three seeds"}[n_group] + " per group size" in body
    assert "95~\\% confidence interval" in body and "one standard error" in body
