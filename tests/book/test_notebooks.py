"""Execute every teaching notebook; fail on errors and on any stderr/warning output."""

from __future__ import annotations

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NB_DIR = Path(__file__).resolve().parents[2] / "notebooks"
NOTEBOOKS = sorted(NB_DIR.glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_executes_cleanly(path, monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("GRPO_THEORY_PROGRESS", "0")
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=240, kernel_name="python3",
                                     resources={"metadata": {"path": str(NB_DIR)}})
    client.execute()
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream" and out.get("name") == "stderr":
                pytest.fail(f"{path.name}: unexpected stderr output: {out.get('text', '')[:500]}")


def test_notebooks_are_built_from_the_builder():
    import importlib.util

    spec = importlib.util.spec_from_file_location("build_notebooks", NB_DIR / "build_notebooks.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert {p.stem for p in NOTEBOOKS} == set(mod.NOTEBOOKS)
