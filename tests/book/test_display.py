"""How the lectures show a derived record: a labelled equation and a proof-log table."""

from __future__ import annotations

import re

import pytest

from grpo_theory import get
from grpo_theory.theory.derived import Derived, Verification


def test_a_record_displays_as_its_labelled_equation():
    record = get("oscillator.mass")
    shown = record._repr_latex_()
    assert shown == (r"\begin{equation}" + record.latex()
                     + r"\label{eq:oscillator:mass}\end{equation}")


def test_the_proof_log_has_one_row_per_verified_claim():
    record = get("oscillator.damping")
    table = record.proof_log()._repr_markdown_().splitlines()
    rows = [line for line in table if line.startswith("| ") and not line.startswith("| claim")]
    assert len(rows) == len(record.verifications) > 0
    assert all(f"{v.method} ✓" in row for v, row in zip(record.verifications, rows))


@pytest.mark.parametrize("claim", ["|grad z|^2 = K/(c(K-c))", "x_0 * y_1 <= 2", "`code` [link] <b>"])
def test_proof_log_claims_are_escaped_so_they_render_verbatim(claim):
    record = Derived("demo.x", get("oscillator.mass").expr, (), "x", "demo",
                     verifications=[Verification(claim, "sympy", True)])
    row = record.proof_log()._repr_markdown_().splitlines()[-1]
    cells = re.split(r"(?<!\\)\|", row)[1:-1]            # a table row splits on unescaped pipes
    assert len(cells) == 3
    assert re.sub(r"\\(.)", r"\1", cells[0].strip()) == claim


def test_the_proof_log_is_text_and_needs_no_ipython(monkeypatch):
    """Issue 21 item 10: the README's ``print(d.proof_log())`` raised ModuleNotFoundError on a
    plain install and printed ``<IPython.core.display.Markdown object>`` with IPython."""
    import builtins

    real_import = builtins.__import__

    def no_ipython(name, *args, **kwargs):
        if name == "IPython" or name.startswith("IPython."):
            raise ModuleNotFoundError("No module named 'IPython'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ipython)
    record = get("oscillator.damping")
    log = record.proof_log()
    assert isinstance(log, str) and str(log).startswith("proof log of oscillator.damping:")
    lines = str(log).splitlines()[1:]
    assert len(lines) == len(record.verifications)
    assert all(f"[ok  ] ({v.method})" in ln for v, ln in zip(record.verifications, lines))
    assert "object at" not in str(log) and "|" not in lines[0][:4]
