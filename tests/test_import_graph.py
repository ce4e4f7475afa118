"""The product's import graph, read from the source: no cycles between files, no import from a
lower layer up to a higher one, nothing from `tests/` or `benchmarks/`.

Layers, lowest first: ontology -> h3_runtime -> resources -> assets -> pipelines. A module may
import its own layer and the layers below it. Imports inside functions count (a lazy import is
still a dependency, and a cycle through one only waits for the first call to bite); imports
under `if TYPE_CHECKING:` do not (they never run).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# folder -> the module prefix it is imported under
PACKAGES = {"ontology": "h3.ontology", "h3_runtime": "h3_runtime", "resources": "h3.resources",
            "assets": "h3.assets", "pipelines": "h3.pipelines"}
LAYERS = ["h3.ontology", "h3_runtime", "h3.resources", "h3.assets", "h3.pipelines"]
FORBIDDEN = ("benchmarks", "tests")


def product_modules() -> dict[str, Path]:
    """Module name -> file, for every .py file of the product."""
    modules = {}
    for folder, prefix in PACKAGES.items():
        for path in sorted((REPO / folder).rglob("*.py")):
            parts = path.relative_to(REPO / folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join((prefix, *parts))] = path
    return modules


def _type_checking_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def imported_names(path: Path, module: str) -> set[str]:
    """Every module name `path` imports (absolute, relative ones resolved), TYPE_CHECKING aside."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _type_checking_lines(tree)
    is_package = path.name == "__init__.py"
    names: set[str] = set()
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".") if is_package else module.split(".")[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)  # submodules, if any
    return names


def import_graph() -> dict[str, set[str]]:
    """Product module -> the product modules it imports (edges between files)."""
    modules = product_modules()
    return {name: {n for n in imported_names(path, name) if n in modules and n != name}
            for name, path in modules.items()}


def _layer(module: str) -> int:
    return next(i for i, prefix in enumerate(LAYERS) if module == prefix or module.startswith(prefix + "."))


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one file (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_graph_reader_sees_a_cycle_and_an_upward_import() -> None:
    """The checks below can fail: a made-up graph with both defects is caught."""
    graph = {"h3.resources.a": {"h3.resources.b"}, "h3.resources.b": {"h3.resources.a"},
             "h3_runtime.x": {"h3.assets.y"}, "h3.assets.y": set()}
    assert cycles(graph) == [["h3.resources.a", "h3.resources.b"]]
    assert _layer("h3_runtime.x") < _layer("h3.assets.y")


def test_no_import_cycles_between_product_files() -> None:
    assert cycles(import_graph()) == []


def test_no_import_runs_up_a_layer() -> None:
    upward = sorted(f"{src} -> {dst}" for src, dsts in import_graph().items() for dst in dsts
                    if _layer(dst) > _layer(src))
    assert upward == []


@pytest.mark.parametrize("forbidden", FORBIDDEN)
def test_the_product_imports_nothing_from(forbidden: str) -> None:
    offenders = sorted(f"{name} imports {n}" for name, path in product_modules().items()
                       for n in imported_names(path, name)
                       if n == forbidden or n.startswith(forbidden + "."))
    assert offenders == []


def test_only_namespaced_imports_of_the_product() -> None:
    """`import resources...` instead of `h3.resources...` would load a second copy of a module
    (and fail in an installed package, where only the h3.* names exist)."""
    bare = sorted(f"{name} imports {n}" for name, path in product_modules().items()
                  for n in imported_names(path, name)
                  if n.split(".")[0] in PACKAGES and n.split(".")[0] != "h3_runtime")
    assert bare == []
