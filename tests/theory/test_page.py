"""The theory page is generated from the code and the findings are computed, not typed."""

from pathlib import Path

from grpo_theory.render.findings import findings
from grpo_theory.render.page import README_BEGIN, README_END, findings_markdown, theory_page

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "theory.md"


def test_committed_theory_page_is_what_the_code_produces():
    assert PAGE.read_text(encoding="utf-8") == theory_page(), \
        "docs/theory.md is stale: run `python -m grpo_theory.render.page docs/theory.md README.md`"


def test_readme_findings_are_what_the_code_produces():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text[text.index(README_BEGIN) + len(README_BEGIN):text.index(README_END)]
    assert block.strip() == findings_markdown().strip(), \
        "README findings are stale: run `python -m grpo_theory.render.page docs/theory.md README.md`"


def test_threshold_finding_numbers():
    f = {x.key: x for x in findings()}
    rows = f["threshold_split"].numbers["rows"]
    # the published rule is unsafe at the KL-in-loss fixed point, conservative all-stale
    assert all(r["k_max_exact_split"] < r["k_max_published"] for r in rows)
    assert all(r["k_max_exact_all_stale"] > r["k_max_published"] for r in rows)
    assert [r["k_max_exact_split"] for r in rows] == [54, 35, 5]  # independent audit values
    stale = f["threshold_all_stale"].numbers
    assert stale["boundary_eta_K_k_mu0"] == [2.0]
    assert stale["exact_over_published_min"] >= 1.0


def test_findings_are_results():
    for x in findings():
        d = x.to_dict()
        assert d["key"] and d["title"] and d["text"] == x.text
        assert str(x).startswith("**")
