"""Execute the notebooks in place and export their README figures.

    .venv/bin/python notebooks/execute.py                 # every notebook, replaying
    TNSAI_NOTEBOOK_RECORD=record .venv/bin/python notebooks/execute.py 03_refinement_loop

Notebooks read their model replies from ``notebooks/responses/`` (a committed
``ResponseStore``); ``TNSAI_NOTEBOOK_RECORD`` (``replay`` by default) is the
``CachedLLM`` mode, so ``record`` calls the embedded model for any request not
recorded yet and stores its reply. After a notebook runs, its widget ids are
renamed to ids derived from the notebook's name (so an unchanged notebook
re-executes to an unchanged file), a static HTML snapshot of each widget, made
from the saved widget state, is put after the widget's output (what GitHub,
nbviewer offline and JupyterLab before a kernel starts show), and the first PNG
output of each cell tagged ``readme-figure`` is written to
``docs/figures/<notebook>.png`` for the README. A notebook whose outputs name
a machine path (this checkout, a temporary folder, a home) is refused.
"""

from __future__ import annotations

import argparse
import base64
import json
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient

from tnsai_eval.widgets import add_static_snapshots, normalize_widget_ids

HERE = Path(__file__).resolve().parent
FIGURES = HERE.parent / "docs" / "figures"


def execute(path: Path, *, timeout: int) -> float:
    """Run ``path`` top to bottom in a fresh kernel, in its folder; returns seconds taken."""
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(
        notebook,
        timeout=timeout,
        kernel_name="python3",
        store_widget_state=True,
        resources={"metadata": {"path": str(path.parent)}},
    )
    start = time.perf_counter()
    client.execute()
    elapsed = time.perf_counter() - start
    data: dict[str, Any] = json.loads(json.dumps(notebook))
    for cell in data["cells"]:
        # Timestamps would make every re-run a diff of an unchanged notebook.
        cell.get("metadata", {}).pop("execution", None)
    coalesce_streams(data)
    normalize_widget_ids(data, salt=path.stem)
    add_static_snapshots(data)
    leaks = machine_paths(data)
    if leaks:
        raise SystemExit(f"{path.name}: outputs name machine paths {leaks}; not written")
    nbformat.write(nbformat.from_dict(data), path)
    return elapsed


def coalesce_streams(notebook: dict[str, Any]) -> None:
    """Join consecutive stream outputs of a cell (stdout with stdout, stderr with stderr).

    How a kernel splits one print into messages depends on timing; joined, the
    same output is stored the same way on every run.
    """
    for cell in notebook["cells"]:
        joined: list[dict[str, Any]] = []
        for output in cell.get("outputs", []):
            last = joined[-1] if joined else None
            if (
                last is not None
                and output.get("output_type") == "stream"
                and last.get("output_type") == "stream"
                and last.get("name") == output.get("name")
            ):
                last["text"] = _text(last["text"]) + _text(output["text"])
                continue
            joined.append(output)
        if "outputs" in cell:
            cell["outputs"] = joined


def _text(value: str | list[str]) -> str:
    return value if isinstance(value, str) else "".join(value)


def machine_paths(notebook: dict[str, Any]) -> list[str]:
    """Paths of this machine found in the notebook's outputs and metadata (sorted, unique)."""
    roots = {str(HERE.parent), tempfile.gettempdir(), str(Path.home())}
    text = json.dumps({"cells": [c.get("outputs", []) for c in notebook["cells"]],
                       "metadata": notebook.get("metadata", {})})  # fmt: skip
    pattern = "|".join(re.escape(root) + r"[^\s\"'<]*" for root in sorted(roots) if root != "/")
    return sorted(set(re.findall(pattern, text)))


def export_figures(path: Path) -> list[Path]:
    """Write the first PNG of each ``readme-figure`` cell; returns the files written."""
    notebook = nbformat.read(path, as_version=4)
    written = []
    for cell in notebook.cells:
        if "readme-figure" not in cell.get("metadata", {}).get("tags", []):
            continue
        for output in cell.get("outputs", []):
            png = output.get("data", {}).get("image/png")
            if png:
                suffix = f"_{len(written)}" if written else ""
                target = FIGURES / f"{path.stem}{suffix}.png"
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(base64.b64decode(png))
                written.append(target)
                break
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="notebook names (default: all)")
    parser.add_argument("--timeout", type=int, default=600, help="seconds per cell")
    args = parser.parse_args(argv)
    paths = [HERE / f"{Path(n).stem}.ipynb" for n in args.names] or sorted(HERE.glob("*.ipynb"))
    for path in paths:
        seconds = execute(path, timeout=args.timeout)
        figures = export_figures(path)
        shown = ", ".join(str(f.relative_to(HERE.parent)) for f in figures) or "no figure"
        print(f"{path.name}: {seconds:.1f} s; {shown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
