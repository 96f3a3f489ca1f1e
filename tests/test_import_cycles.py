"""The import graph of ``tnsai_eval`` and ``pytest_plugin`` has no cycle.

Every import statement counts, wherever it is: at the top, inside a function
(a lazy import) or under ``TYPE_CHECKING``. A cycle hidden in a function or a
type-only import is still two modules that cannot be understood apart.
Importing a submodule also runs its package's ``__init__``; that implicit edge
is left out (every package would otherwise be a cycle with its own modules),
but an explicit ``from tnsai_eval.pkg import name`` inside ``pkg`` counts.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("tnsai_eval", "pytest_plugin")


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _targets(
    node: ast.AST, here: str, is_package: bool, known: Mapping[str, Path]
) -> Iterator[str]:
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name in known:
                yield alias.name
    elif isinstance(node, ast.ImportFrom):
        if node.level:
            base = here.split(".")
            base = base if is_package else base[:-1]
            base = base[: len(base) - (node.level - 1)]
            module = ".".join([*base, node.module] if node.module else base)
        else:
            module = node.module or ""
        for alias in node.names:
            submodule = f"{module}.{alias.name}"
            if submodule in known:
                yield submodule
            elif module in known:
                yield module


def import_graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports (explicitly, anywhere in its source)."""
    known = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_package = path.name == "__init__.py"
        edges = {t for node in ast.walk(tree) for t in _targets(node, name, is_package, known)}
        edges.discard(name)
        graph[name] = edges
    return graph


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(graph.get(node, ())):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def test_the_graph_sees_every_kind_of_import() -> None:
    graph = import_graph()
    assert "tnsai_eval.optimizer._engine" in graph["tnsai_eval.optimizer._scoring"]
    # `from tnsai_eval import frames` is an edge to the frames package.
    assert "tnsai_eval.frames" in graph["tnsai_eval.plots._optimizer"]
    # A lazy import inside a function counts.
    assert "tnsai_eval.datasets" in graph["tnsai_eval.pytest._fixtures"]


def test_cycles_are_found() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [["a", "b", "c"]]


def test_no_import_cycles() -> None:
    found = cycles(import_graph())
    assert found == [], "import cycles: " + "; ".join(" <-> ".join(c) for c in found)
