"""The package's import graph has no circle, and the model sits at the ground floor.

The imports are read from the source with ``ast`` (no third-party tool): every
``import``/``from ... import`` statement of every module, including those inside functions
(a lazy import is still a dependency).  ``from package import name`` is an edge to the
submodule ``package.name`` when that is a module, else to ``package`` itself.
"""

import ast
import functools
from pathlib import Path

import grpo_theory

ROOT = Path(grpo_theory.__file__).parent
PKG = "grpo_theory"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


@functools.cache
def import_graph() -> dict[str, set[str]]:
    """module -> the package modules it imports (anywhere in its source); parsed once per
    process (three tests read it; about 1.2 s of CPU each time)."""
    files = {_module_name(f): f for f in ROOT.rglob("*.py")}
    graph = {}
    for mod, file in files.items():
        is_pkg = file.name == "__init__.py"
        deps = set()
        for node in ast.walk(ast.parse(file.read_text(), str(file))):
            if isinstance(node, ast.Import):
                deps.update(a.name for a in node.names if a.name.startswith(PKG))
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
                    base = base[:len(base) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                if not target.startswith(PKG):
                    continue
                subs = {f"{target}.{a.name}" for a in node.names} & set(files)
                deps.update(subs)
                if len(subs) < len(node.names):
                    deps.add(target)
        graph[mod] = {d for d in deps if d in files and d != mod}
    return graph


def cycles(graph) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_import_graph_has_no_circle():
    assert cycles(import_graph()) == []


def test_the_detector_finds_a_circle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_model_is_the_ground_floor():
    graph = import_graph()
    allowed = {"grpo_theory.validate"}
    assert graph["grpo_theory.model"] <= allowed
    assert graph["grpo_theory.validate"] == set()
    assert graph["grpo_theory.results"] == set()
    assert graph["grpo_theory.prose"] == set()


def test_theory_never_imports_the_layers_above():
    above = ("grpo_theory.render", "grpo_theory.simulation", "grpo_theory.crosscheck",
             "grpo_theory.runs", "grpo_theory.report", "grpo_theory.cli", "grpo_theory.deepnet")
    graph = import_graph()
    bad = {m: sorted(d for d in deps if d.startswith(above))
           for m, deps in graph.items() if m.startswith("grpo_theory.theory.")
           and m != "grpo_theory.theory.__main__"}
    assert {m: d for m, d in bad.items() if d} == {}
