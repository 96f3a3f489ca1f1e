"""The committed notebooks as a viewer without a kernel meets them, and notebook 05's runs."""

from __future__ import annotations

import json
import re
import shutil
import sys
from importlib.metadata import requires
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement

from tnsai_eval.widgets import normalize_widget_ids
from tnsai_eval.widgets._snapshot import SNAPSHOT_MARK, WIDGET_STATE, WIDGET_VIEW

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
PATHS = sorted(NOTEBOOKS.glob("*.ipynb"))
# A path of the machine that executed the notebook: a checkout, a temporary folder, a home.
MACHINE_PATH = re.compile(r"(/tmp/|/work/|/root/|/home/|/Users/|[A-Z]:\\\\Users)")


def _load(path: Path) -> dict[str, Any]:
    notebook: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return notebook


@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.stem)
def test_outputs_name_no_machine_path(path: Path) -> None:
    notebook = _load(path)
    text = json.dumps([cell.get("outputs", []) for cell in notebook["cells"]])
    text += json.dumps(notebook["metadata"])
    assert not MACHINE_PATH.findall(text), f"{path.name}: {set(MACHINE_PATH.findall(text))}"


@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.stem)
def test_every_widget_has_saved_state_and_a_static_snapshot_after_it(path: Path) -> None:
    notebook = _load(path)
    state = notebook["metadata"].get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    for index, cell in enumerate(notebook["cells"]):
        outputs = cell.get("outputs", [])
        for position, output in enumerate(outputs):
            view = output.get("data", {}).get(WIDGET_VIEW)
            if view is None:
                continue
            assert view["model_id"] in state, f"{path.name} cell {index}: widget state not saved"
            assert "VBox(" not in "".join(output["data"].get("text/plain", ""))
            after = outputs[position + 1] if position + 1 < len(outputs) else {}
            assert after.get("metadata", {}).get(SNAPSHOT_MARK), (
                f"{path.name} cell {index}: no static snapshot after the widget"
            )
            assert "Static snapshot" in "".join(after["data"]["text/html"])


@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.stem)
def test_test_markers_are_cell_tags_not_visible_comments(path: Path) -> None:
    """nbval's markers live in each cell's metadata: a reader sees the code, not them."""
    notebook = _load(path)
    code = [c for c in notebook["cells"] if c["cell_type"] == "code"]
    sources = ["".join(c["source"]) for c in code]
    assert not [s.splitlines()[0] for s in sources if "NBVAL_" in s]
    tagged = [c for c in code if "nbval-check-output" in c.get("metadata", {}).get("tags", [])]
    assert tagged  # every notebook checks some outputs


@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.stem)
def test_widget_ids_are_already_normalized(path: Path) -> None:
    # execute.py renamed them; renaming again must change nothing, so that
    # re-executing an unchanged notebook leaves the file unchanged.
    notebook = _load(path)
    before = json.dumps(notebook, sort_keys=True)
    normalize_widget_ids(notebook, salt=path.stem)
    assert json.dumps(notebook, sort_keys=True) == before


def test_notebook01s_optimizer_example_says_why_it_is_shown() -> None:
    """Its pick does worse held out: the notebook says so and keeps the starting prompt."""
    cells = _load(NOTEBOOKS / "01_quickstart.ipynb")["cells"]
    index = next(i for i, c in enumerate(cells) if "optimizer.optimize(" in "".join(c["source"]))
    output = "".join(text for o in cells[index]["outputs"] for text in o.get("text", []))
    explained = "".join(cells[index - 1]["source"])
    if "improved: True" not in output:
        assert "improved: False" in output
        assert "shown for what it does *not* find" in explained
        assert "the prompt to keep is the one you started with" in explained


def test_pytest_is_a_runtime_dependency() -> None:
    # The package is a pytest plugin: `pip install tnsai-eval` must bring pytest.
    plain = [Requirement(r) for r in requires("tnsai-eval") or []]
    assert any(r.name == "pytest" and r.marker is None for r in plain)


@pytest.fixture
def notebook05(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Notebook 05's first cell run in a copy of the notebooks folder."""
    shutil.copytree(NOTEBOOKS / "ci_example", tmp_path / "ci_example")
    shutil.copytree(NOTEBOOKS / "responses", tmp_path / "responses")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TNSAI_NOTEBOOK_RECORD", "replay")
    cells = _load(NOTEBOOKS / "05_ci_reports.ipynb")["cells"]
    first = next(c for c in cells if c["cell_type"] == "code")
    source = "".join(first["source"]).replace("%matplotlib inline", "")
    namespace: dict[str, Any] = {}
    exec(compile(source, "05_ci_reports.ipynb[1]", "exec"), namespace)
    return namespace


def test_notebook05_shows_a_broken_pytest_run(notebook05: dict[str, Any]) -> None:
    # Before: a run that could not start (pytest missing, a bad option) was read
    # as "1 = some test failed", and the next cell failed on a missing report.
    with pytest.raises(RuntimeError, match=r"exited with 4 and wrote no reports/v1\.json") as info:
        notebook05["run_suite"]("v1", "--no-such-option")
    assert "no-such-option" in str(info.value)


def test_notebook05_shows_a_command_that_crashed(notebook05: dict[str, Any]) -> None:
    # A Python crash exits 1 too, like a verdict: the missing output tells them apart.
    target = Path("reports") / "page.html"
    crash = [sys.executable, "-c", "raise SystemExit('boom: no page written')"]
    with pytest.raises(RuntimeError, match=r"wrote no reports/page\.html") as info:
        notebook05["run_checked"](crash, produces=target)
    assert "boom: no page written" in str(info.value)


def test_notebook05_runs_the_suite_and_returns_its_verdict(notebook05: dict[str, Any]) -> None:
    code, summary = notebook05["run_suite"]("v1")
    assert code in (0, 1)
    assert Path("reports/v1.json").is_file()
    assert "prompt_suite.py::test_capitals" in summary
    assert not MACHINE_PATH.findall(summary)
