"""Execute the notebooks in place and export their README figures.

    .venv/bin/python notebooks/execute.py                 # every notebook, replaying
    TNSAI_NOTEBOOK_RECORD=record .venv/bin/python notebooks/execute.py 03_refinement_loop

Notebooks read their model replies from ``notebooks/responses/`` (a committed
``ResponseStore``); ``TNSAI_NOTEBOOK_RECORD`` (``replay`` by default) is the
``CachedLLM`` mode, so ``record`` calls the embedded model for any request not
recorded yet and stores its reply. After a notebook runs, the first PNG output
of each cell tagged ``readme-figure`` is written to
``docs/figures/<notebook>.png`` for the README.
"""

from __future__ import annotations

import argparse
import base64
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

HERE = Path(__file__).resolve().parent
FIGURES = HERE.parent / "docs" / "figures"


def execute(path: Path, *, timeout: int) -> float:
    """Run ``path`` top to bottom in a fresh kernel, in its folder; returns seconds taken."""
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(
        notebook,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
    )
    start = time.perf_counter()
    client.execute()
    elapsed = time.perf_counter() - start
    for cell in notebook.cells:
        # Timestamps would make every re-run a diff of an unchanged notebook.
        cell.get("metadata", {}).pop("execution", None)
    nbformat.write(notebook, path)
    return elapsed


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
