"""The import graph of ``tnsai_eval`` and ``pytest_plugin``: no cycle, no reach inside.

Between modules, every import statement counts, wherever it is: at the top,
inside a function (a lazy import) or under ``TYPE_CHECKING``. A cycle hidden in
a function or a type-only import is still two modules that cannot be understood
apart. Importing a submodule also runs its package's ``__init__``; that implicit
edge is left out (every package would otherwise be a cycle with its own
modules), but an explicit ``from tnsai_eval.pkg import name`` inside ``pkg`` counts.

Between packages (``llm``, ``scoring``, ``reports``... and each loose module
such as ``datasets``), the module graph is folded so that a loop through
several modules of different packages shows: ``reports`` drawing a page with
``plots`` while ``plots`` reads ``reports`` is a loop no module cycle reveals.
Here imports under ``TYPE_CHECKING`` are left out: a type named in an
annotation does not make one package run the other.

And no module imports another package's private module or private name: a
package's surface is its ``__init__``'s ``__all__``. ``tnsai_eval._util``
(private helpers shared by the core) is the one exception.

Names resolved by string at run time (the top-level package's and
``tnsai_eval.llm``'s lazy, deprecated aliases) are not imports and are not
seen here; each is listed in its module.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("tnsai_eval", "pytest_plugin")
# Private helpers every package may use (the one exception to "no private imports").
HELPERS = "tnsai_eval._util"


def _modules(root: Path | None = None) -> dict[str, Path]:
    root = ROOT if root is None else root
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _absolute(node: ast.ImportFrom, here: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = here.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _targets(
    node: ast.AST, here: str, is_package: bool, known: Mapping[str, Path]
) -> Iterator[str]:
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name in known:
                yield alias.name
    elif isinstance(node, ast.ImportFrom):
        module = _absolute(node, here, is_package)
        for alias in node.names:
            submodule = f"{module}.{alias.name}"
            if submodule in known:
                yield submodule
            elif module in known:
                yield module


def _is_type_checking(node: ast.AST) -> bool:
    test = node.test if isinstance(node, ast.If) else None
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST, *, type_checking: bool) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement in ``tree``; those under ``if TYPE_CHECKING:`` only when asked."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif _is_type_checking(node) and not type_checking:
            assert isinstance(node, ast.If)
            stack.extend(node.orelse)  # the else branch runs
            continue
        stack.extend(ast.iter_child_nodes(node))


def import_graph(root: Path | None = None, *, type_checking: bool = True) -> dict[str, set[str]]:
    """Module -> the project modules it imports (explicitly, anywhere in its source)."""
    known = _modules(root)
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_package = path.name == "__init__.py"
        edges = {
            t
            for node in _imports(tree, type_checking=type_checking)
            for t in _targets(node, name, is_package, known)
        }
        edges.discard(name)
        graph[name] = edges
    return graph


def package_of(module: str) -> str:
    """The unit a module belongs to: ``tnsai_eval.llm._types`` -> ``tnsai_eval.llm``.

    Each subpackage and each loose module of ``tnsai_eval`` (``datasets``,
    ``errors``...) is one unit; ``tnsai_eval`` itself is its ``__init__``.
    """
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "tnsai_eval" else parts[0]


def package_graph(root: Path | None = None) -> dict[str, set[str]]:
    """Package -> the other packages its modules import (not under ``TYPE_CHECKING``)."""
    graph: dict[str, set[str]] = {}
    for module, targets in import_graph(root, type_checking=False).items():
        here = package_of(module)
        graph.setdefault(here, set()).update(package_of(t) for t in targets)
    for here, targets in graph.items():
        targets.discard(here)
    return graph


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_imports(root: Path | None = None) -> list[str]:
    """Each import of another package's private module or private name, as ``where: what``."""
    found = []
    for name, path in _modules(root).items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_package = path.name == "__init__.py"
        here = package_of(name)
        for node in _imports(tree, type_checking=True):
            pairs: list[tuple[str, str | None]]
            if isinstance(node, ast.Import):
                pairs = [(alias.name, None) for alias in node.names]
            else:
                module = _absolute(node, name, is_package)
                pairs = [(module, alias.name) for alias in node.names]
            for module, item in pairs:
                if not module.startswith(PACKAGES) or package_of(module) in (here, HELPERS):
                    continue
                inside = module.split(".")[2:] if module.startswith("tnsai_eval.") else []
                if any(_is_private(part) for part in inside) or (item and _is_private(item)):
                    what = module if item is None else f"{module}.{item}"
                    found.append(f"{name} (line {node.lineno}): {what}")
    return sorted(found)


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
    assert "tnsai_eval.evaluation._engine" in graph["tnsai_eval.evaluation._scoring"]
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


def test_the_package_graph_folds_modules_and_skips_type_checking() -> None:
    graph = package_graph()
    assert "tnsai_eval.llm" in graph["tnsai_eval.scoring"]
    assert package_of("tnsai_eval.llm._types") == "tnsai_eval.llm"
    assert package_of("tnsai_eval.datasets") == "tnsai_eval.datasets"
    assert package_of("pytest_plugin") == "pytest_plugin"
    # frames names refinement's results in annotations only: no package edge.
    assert "tnsai_eval.refinement" in import_graph()["tnsai_eval.frames._optimizer"]
    assert "tnsai_eval.refinement" not in graph["tnsai_eval.frames"]


def _write(root: Path, files: Mapping[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for package in PACKAGES:
        (root / package).mkdir(exist_ok=True)
    return root


def test_a_loop_through_modules_of_three_packages_is_found(tmp_path: Path) -> None:
    # Today's shape before the HTML page moved: reports' page imports plots,
    # plots imports frames and reports, frames imports reports. No module cycle.
    root = _write(
        tmp_path,
        {
            "tnsai_eval/__init__.py": "",
            "tnsai_eval/reports/__init__.py": "from tnsai_eval.reports._model import Report\n",
            "tnsai_eval/reports/_model.py": "Report = 1\n",
            "tnsai_eval/reports/_html.py": "def page():\n    from tnsai_eval import plots\n",
            "tnsai_eval/plots/__init__.py": "from tnsai_eval.plots._a import draw\n",
            "tnsai_eval/plots/_a.py": (
                "from tnsai_eval import frames\nfrom tnsai_eval.reports import Report\n"
            ),
            "tnsai_eval/frames/__init__.py": "from tnsai_eval.reports import Report\n",
            "tnsai_eval/widgets/__init__.py": (
                "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import tnsai_eval.plots\n"
            ),
        },
    )
    assert cycles(import_graph(root)) == []
    assert cycles(package_graph(root)) == [
        ["tnsai_eval.frames", "tnsai_eval.plots", "tnsai_eval.reports"]
    ]
    assert package_graph(root)["tnsai_eval.widgets"] == set()


def test_no_package_loops() -> None:
    found = cycles(package_graph())
    assert found == [], "package loops: " + "; ".join(" <-> ".join(c) for c in found)


def test_private_imports_are_found(tmp_path: Path) -> None:
    root = _write(
        tmp_path,
        {
            "tnsai_eval/__init__.py": "",
            "tnsai_eval/testing.py": "from tnsai_eval.llm._types import Completion\n",
            "tnsai_eval/llm/__init__.py": "from tnsai_eval.llm._types import Completion\n",
            "tnsai_eval/llm/_types.py": "from tnsai_eval._util.files import write\nC = 1\n",
            "tnsai_eval/plots/_a.py": "def f():\n    from tnsai_eval.frames import _PARTIAL\n",
            "tnsai_eval/cli/_r.py": (
                "import tnsai_eval.reports._html\nfrom ..reports import _junit\n"
            ),
        },
    )
    assert private_imports(root) == [
        "tnsai_eval.cli._r (line 1): tnsai_eval.reports._html",
        "tnsai_eval.cli._r (line 2): tnsai_eval.reports._junit",
        "tnsai_eval.plots._a (line 2): tnsai_eval.frames._PARTIAL",
        "tnsai_eval.testing (line 1): tnsai_eval.llm._types.Completion",
    ]


def test_no_private_cross_package_imports() -> None:
    found = private_imports()
    assert found == [], "imports of another package's private parts:\n" + "\n".join(found)


def test_layers_named_in_the_design_hold() -> None:
    graph = package_graph()
    views = {"tnsai_eval.frames", "tnsai_eval.plots", "tnsai_eval.widgets"}
    assert not graph["tnsai_eval.reports"] & views, "reports imports no view package"
    assert "tnsai_eval.optimizer" not in graph["tnsai_eval.datasets"]
    # Scoring a prompt is below the search: the plugin, eval and frames need no optimizer.
    assert "tnsai_eval.optimizer" not in graph["tnsai_eval.evaluation"]
    for scorer in ("tnsai_eval.frames", "tnsai_eval.pytest", "tnsai_eval.cli"):
        assert "tnsai_eval.evaluation" in graph[scorer]
    assert "tnsai_eval.scoring" not in graph["tnsai_eval.llm"], "llm keeps only IO"
    above = {
        "tnsai_eval.optimizer", "tnsai_eval.refinement", "tnsai_eval.pytest",
        "tnsai_eval.datasets", "tnsai_eval.reports", "tnsai_eval.cli", *views,
    }  # fmt: skip
    assert not graph["tnsai_eval.scoring"] & above


# docs/architecture.md's rows, top to bottom, split where one package of a row
# imports another: a package imports only packages in rows below its own.
ROWS = (
    ("pytest_plugin",),
    ("cli", "pytest"),
    ("tnsai_eval",),  # the top-level names, resolved lazily
    ("widgets",),
    ("plots",),
    ("frames",),
    ("agents",),
    ("feedback", "refinement", "optimizer", "datasets", "testing"),
    ("evaluation",),
    ("scoring",),
    ("norms",),
    ("reports",),
    ("records",),
    ("llm",),
    ("settings",),
    ("_util",),
    ("errors",),
)


def _row(package: str) -> int:
    name = package.removeprefix("tnsai_eval.")
    return next(i for i, row in enumerate(ROWS) if name in row)


def test_every_package_imports_only_rows_below_its_own() -> None:
    graph = package_graph()
    placed = {name for row in ROWS for name in row}
    unplaced = sorted(p for p in graph if p.removeprefix("tnsai_eval.") not in placed)
    assert not unplaced, f"place these packages in ROWS (and the architecture page): {unplaced}"
    upward = sorted(
        f"{here} -> {there}"
        for here, targets in graph.items()
        for there in targets
        if _row(there) <= _row(here)
    )
    assert not upward, "imports that go up or sideways: " + "; ".join(upward)


# What a client wrapper does: forward a call to another client, from its own chat.
_FORWARDS = {"chat", "achat", "metered_call", "ametered_call", "acall"}


def client_wrappers(root: Path | None = None) -> list[str]:
    """Classes outside ``llm/`` that wrap a client: their ``chat(messages, ...)`` or
    ``achat`` forwards to another client, or they keep one as ``inner``.

    ``testing.py``'s fakes are models, not wrappers. Anything that needs to
    know about calls subscribes to the ``llm.FrontClient`` instead.
    """
    found = []
    for name, path in _modules(root).items():
        if name.startswith("tnsai_eval.llm") or name == "tnsai_eval.testing":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
            for node in ast.walk(cls):
                if (
                    isinstance(node, ast.Attribute)
                    and node.attr in ("inner", "_inner")
                    and isinstance(node.value, ast.Name)
                    and node.value.id == "self"
                ):
                    found.append(f"{name}.{cls.name}: keeps a client as self.{node.attr}")
                    break
            for method in cls.body:
                if not isinstance(method, ast.FunctionDef | ast.AsyncFunctionDef):
                    continue
                args = [a.arg for a in method.args.args]
                if method.name not in ("chat", "achat") or args[1:2] != ["messages"]:
                    continue
                calls = {
                    c.func.attr if isinstance(c.func, ast.Attribute) else getattr(c.func, "id", "")
                    for c in ast.walk(method)
                    if isinstance(c, ast.Call)
                }
                if calls & _FORWARDS:
                    found.append(f"{name}.{cls.name}.{method.name} forwards to another client")
    return sorted(set(found))


def test_client_wrappers_are_found(tmp_path: Path) -> None:
    root = _write(
        tmp_path,
        {
            "tnsai_eval/__init__.py": "",
            "tnsai_eval/plugin.py": (
                "class Tap:\n"
                "    def __init__(self, inner):\n        self.inner = inner\n"
                "class Counted:\n"
                "    async def achat(self, messages, **params):\n"
                "        return await acall(self.client, messages)\n"
                "class Agent:\n    def chat(self, message):\n"
                "        return self.llm.chat(message)\n"
            ),
            "tnsai_eval/llm/_front.py": (
                "class Front:\n    def chat(self, messages):\n"
                "        return self.inner.chat(messages)\n"
            ),
        },
    )
    assert client_wrappers(root) == [
        "tnsai_eval.plugin.Counted.achat forwards to another client",
        "tnsai_eval.plugin.Tap: keeps a client as self.inner",
    ]


def test_no_client_wrappers_outside_llm() -> None:
    found = client_wrappers()
    assert found == [], "subscribe to llm.FrontClient instead of wrapping a client:\n" + "\n".join(
        found
    )


ARCHITECTURE = ROOT / "docs" / "architecture.md"


def _map_blocks() -> dict[str, str]:
    """The module map of docs/architecture.md: each package's entry, by its folder name."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    start = text.index("```\ntnsai_eval/\n")
    body = text[start : text.index("```", start + 4)]
    blocks: dict[str, str] = {}
    current = None
    for line in body.splitlines():
        head = line[2:].split(" ", 1)[0] if line.startswith("  ") and line[2] != " " else ""
        if head.endswith("/"):
            current = head.rstrip("/")
            blocks[current] = line
        elif current is not None and line.startswith("   "):
            blocks[current] += " " + line.strip()
        else:
            current = None
    return blocks


def test_the_architecture_page_maps_every_module_and_subcommand() -> None:
    from tnsai_eval.cli import SUBCOMMANDS

    blocks = _map_blocks()
    package_root = ROOT / "tnsai_eval"
    missing = []
    for folder in sorted(p for p in package_root.iterdir() if (p / "__init__.py").exists()):
        block = blocks.get(folder.name)
        if block is None:
            missing.append(f"{folder.name}/ (the whole package)")
            continue
        for module in sorted(folder.glob("*.py")):
            name = module.stem
            if name == "__init__" or re.search(rf"(?<!\w){re.escape(name)}(?!\w)", block):
                continue
            missing.append(f"{folder.name}/{module.name}")
    missing += [f"cli: subcommand {name}" for name in SUBCOMMANDS if name not in blocks["cli"]]
    assert missing == [], "docs/architecture.md's module map misses: " + ", ".join(missing)
