"""The bibliography: the data of each work and how it is printed."""

from __future__ import annotations

import re

import pytest

from grpo_theory.theory.bibliography import REFERENCES, bibtex, format_authors, format_reference


def test_the_reproduced_paper_has_its_seven_authors():
    assert REFERENCES["predictable_grpo"]["authors"] == [
        "Ghosh, Rajat", "Nimmaturi, Datta", "Singhal, Aryan", "Bhargava, Vaishnavi",
        "Wong, Henry", "George, Johnu", "Dutta, Debojyoti"]
    assert format_authors("predictable_grpo") == (
        "R. Ghosh, D. Nimmaturi, A. Singhal, V. Bhargava, H. Wong, J. George, and D. Dutta")
    assert "Anonymous" not in bibtex()


@pytest.mark.parametrize("style", ["text", "md", "tex"])
def test_printed_entries_have_formatted_authors(style):
    for key in REFERENCES:
        entry = format_reference(key, style)
        assert " and others" not in entry and "Anonymous" not in entry
        # never a raw BibTeX name list ("Family, Given and Family, Given")
        assert not re.search(r"\w, \w+ and \w+, \w", entry), entry
        assert entry.endswith(f"{REFERENCES[key]['year']}.") and ".." not in entry
        if style != "tex":
            assert "{" not in entry and "\\" not in entry, entry


def test_long_author_lists_are_cut_with_et_al():
    assert format_authors("shao2024deepseekmath") == "Z. Shao, P. Wang, Q. Zhu, et al."
    assert format_authors("kingma2015adam") == "D. P. Kingma and J. Ba"
    assert format_authors("harris2020numpy", "text") == "C. R. Harris, K. J. Millman, S. J. van der Walt, et al."
    assert format_authors("meurer2017sympy", "md").startswith("A. Meurer, C. P. Smith")


def test_bibtex_entries_are_complete():
    bib = bibtex()
    assert bib.count("@") == len(REFERENCES)
    for key, ref in REFERENCES.items():
        block = bib.split("@" + ref["type"] + "{" + key + ",", 1)[1].split("\n}", 1)[0]
        for field in ("author", "title", "year"):
            assert f"  {field} = {{" in block, (key, field)
        if "eprint" in ref:
            assert "archivePrefix = {arXiv}" in block
        assert ("and others" in block) == bool(ref.get("et_al"))
    assert "Shao, Zhihong and Wang, Peiyi" in bib        # BibTeX keeps full names


def test_unknown_style_is_refused():
    with pytest.raises(ValueError, match="style"):
        format_reference("polyak1964", "html")
