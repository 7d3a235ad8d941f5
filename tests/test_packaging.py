"""The wheel is the product: what it ships, what it declares, and that nothing in the package
reads a path relative to the checkout. The report built from the installed wheel is checked
in tests/report/test_report.py (its fixture runs ``grpo-theory report`` from it)."""

from __future__ import annotations

import ast
import importlib.metadata
import json
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from installed import CHECKOUT

pytestmark = pytest.mark.xdist_group("report")     # shares the built wheel with the report

PACKAGE = CHECKOUT / "grpo_theory"
#: directories of the repository that are not in the package
CHECKOUT_DIRS = ("benchmarks", "book", "tests", "docs", ".ci")


def _tracked_package_files() -> set[str]:
    out = subprocess.run(["git", "ls-files", "grpo_theory"], cwd=CHECKOUT, capture_output=True,
                         text=True)
    if out.returncode:
        pytest.skip("not a git checkout")
    return {f for f in out.stdout.split() if "__pycache__" not in f}


def test_twine_passes_the_sdist_and_the_wheel(installed):
    assert installed.twine.count("PASSED") == 2, installed.twine
    assert "WARNING" not in installed.twine, installed.twine


def test_the_wheel_and_the_sdist_ship_every_file_of_the_package(installed):
    """Every tracked file of the package (code and the data the commands read: the lab's
    results, the example log, the trainers' keys) is in the wheel and in the sdist."""
    tracked = _tracked_package_files()
    assert {"grpo_theory/data/lab/lab_refresh.json",
            "grpo_theory/data/verl_grpo_deepseek7b_gsm8k_trimmed.log",
            "grpo_theory/data/config_keys.json"} <= tracked
    wheel = set(zipfile.ZipFile(installed.wheel).namelist())
    assert not tracked - wheel, sorted(tracked - wheel)
    with tarfile.open(installed.sdist) as tar:
        sdist = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    assert not tracked - sdist, sorted(tracked - sdist)
    assert "README.md" in sdist and "pyproject.toml" in sdist


def test_the_installed_package_is_the_wheel_not_the_checkout(installed, tmp_path):
    code = ("import json, sys, grpo_theory\n"
            "from grpo_theory.data import example_log, lab_results_dir\n"
            "print(json.dumps({'file': grpo_theory.__file__, 'path': sys.path,"
            " 'lab': sorted(p.name for p in lab_results_dir().glob('lab_*.json')),"
            " 'log': example_log().is_file()}))")
    r = installed.python_c(code, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    venv = installed.python.parent.parent
    assert Path(got["file"]).is_relative_to(venv), got["file"]
    assert not [p for p in got["path"] if p and Path(p).resolve().is_relative_to(CHECKOUT)]
    assert got["lab"] == sorted(f"lab_{p}.json" for p in
                                ("refresh", "transition", "group-size", "model-size", "learning-rate"))
    assert got["log"]


def test_fit_example_runs_from_the_wheel(installed, tmp_path):
    r = installed.run("fit", "--example", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert Path(out["source"]).is_relative_to(installed.python.parent.parent), out["source"]


def _imports(tree) -> set[str]:
    """Top-level names of the absolute imports of a module (anywhere in it)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


#: modules used only through an optional extra (imported lazily by the base package)
OPTIONAL = ("grpo_theory/deepnet/", "grpo_theory/lab/", "grpo_theory/runs/trl_callback",
            "grpo_theory/runs/logs/tensorboard")


def _requirement_names(reqs) -> tuple[set[str], set[str]]:
    base, extra = set(), set()
    for r in reqs:
        name = re.match(r"[A-Za-z0-9_.\-]+", r).group(0).lower().replace("_", "-")
        (extra if "extra ==" in r else base).add(name)
    return base, extra


def test_the_wheel_declares_every_distribution_the_package_imports(installed):
    """Each third-party module the package imports belongs to a distribution the wheel's
    metadata requires: the base install for the base package, an extra for the optional
    parts (so a fresh ``pip install`` of the wheel brings what the commands import)."""
    with zipfile.ZipFile(installed.wheel) as z:
        meta = z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))).decode()
    base, extra = _requirement_names(re.findall(r"^Requires-Dist: (.+)$", meta, flags=re.M))
    dists = importlib.metadata.packages_distributions()
    stdlib = set(sys.stdlib_module_names)
    missing = {}
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(CHECKOUT).as_posix()
        allowed = base | extra if rel.startswith(OPTIONAL) else base
        for mod in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            if mod in stdlib or mod == "grpo_theory" or mod.startswith("_"):
                continue
            names = {d.lower().replace("_", "-") for d in dists.get(mod, [mod])}
            if not names & allowed:
                missing.setdefault(mod, rel)
    assert not missing, missing


def _checkout_paths(tree) -> list[str]:
    """Path arithmetic that leaves the package: ``.parents[...]``, ``.parent.parent``, and a
    repository directory joined to a path (``/ "benchmarks"``, ``Path("book/...")``,
    ``os.path.join(..., "tests")``)."""
    bad = []

    def is_repo_dir(node):
        return (isinstance(node, ast.Constant) and isinstance(node.value, str)
                and node.value.strip("/").split("/")[0] in CHECKOUT_DIRS)

    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) \
                and node.value.attr == "parents":
            bad.append(f"line {node.lineno}: .parents[...]")
        elif isinstance(node, ast.Attribute) and node.attr == "parent" \
                and isinstance(node.value, ast.Attribute) and node.value.attr == "parent":
            bad.append(f"line {node.lineno}: .parent.parent")
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) \
                and (is_repo_dir(node.left) or is_repo_dir(node.right)):
            bad.append(f"line {node.lineno}: / {ast.unparse(node.right)}")
        elif isinstance(node, ast.Call) and any(is_repo_dir(a) for a in node.args):
            f = ast.unparse(node.func)
            if f.endswith(("Path", "join", "joinpath", "open")):
                bad.append(f"line {node.lineno}: {f}(...)")
    return bad


def test_nothing_in_the_package_reads_a_path_of_the_checkout():
    found = {}
    for path in PACKAGE.rglob("*.py"):
        bad = _checkout_paths(ast.parse(path.read_text(encoding="utf-8")))
        if bad:
            found[path.relative_to(CHECKOUT).as_posix()] = bad
    assert not found, found


@pytest.mark.parametrize("code", [
    'LAB = Path(__file__).resolve().parents[2] / "benchmarks" / "lab_runs"',
    'ROOT = Path(__file__).parent.parent',
    'data = here / "book" / "figures"',
    'p = os.path.join(root, "tests", "data.json")',
    'p = Path("benchmarks/real_runs")',
])
def test_the_path_check_catches_each_form(code):
    assert _checkout_paths(ast.parse(code))
