"""``llm/`` is the boundary: it imports nothing above it (no optimizer, plugin, views), at any
level of a module (top, inside functions, under ``TYPE_CHECKING``)."""

from __future__ import annotations

import ast
from pathlib import Path

import tnsai_eval.llm

# What llm/ may build on: itself and the base layer.
_ALLOWED = ("tnsai_eval.llm", "tnsai_eval.errors", "tnsai_eval._util", "tnsai_eval.settings")


def _imports(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
        elif isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
    return names


def test_llm_imports_nothing_above_it() -> None:
    folder = Path(tnsai_eval.llm.__file__).parent
    offending = {
        f"{path.name}: {name}"
        for path in sorted(folder.glob("*.py"))
        for name in _imports(path)
        if name.startswith("tnsai_eval") and not name.startswith(_ALLOWED)
    }
    assert offending == set()
