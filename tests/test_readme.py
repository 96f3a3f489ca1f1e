"""The README's tour runs as written and prints what it shows.

Each ```python block runs in one shared namespace, in order; when a ```text
block follows it, the block's output must equal that text.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
_BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.DOTALL)


def _blocks() -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in _BLOCK.finditer(README.read_text("utf-8"))]


def test_the_tour_has_examples_with_outputs() -> None:
    kinds = [kind for kind, _ in _blocks()]
    assert kinds.count("python") >= 5
    assert kinds.count("text") >= 4


def test_readme_examples_print_what_they_show() -> None:
    namespace: dict[str, object] = {"__name__": "readme"}
    blocks = _blocks()
    for index, (kind, code) in enumerate(blocks):
        if kind != "python":
            continue
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, f"README.md python block {index}", "exec"), namespace)
        following = blocks[index + 1] if index + 1 < len(blocks) else None
        if following is not None and following[0] == "text":
            printed = out.getvalue()
            assert printed == following[1], f"README block {index} printed:\n{printed}"
