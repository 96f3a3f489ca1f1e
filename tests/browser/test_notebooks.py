"""Each notebook as a person sees it: opened in JupyterLab in Chromium, "Run All", used.

For every notebook: all cells run with no error output, every widget renders
(no "Error displaying widget", no "Loading widget..." left), nothing is logged
as an error in the browser console, each widget's key controls are there, and
one interaction per widget changes what is shown. Then each
committed notebook is rendered by ``jupyter nbconvert --to html`` and that page
is opened offline: the static snapshot of every widget must be on it.
Screenshots go to ``browser-artifacts/`` (git-ignored).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import NOTEBOOKS, Lab

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]

WIDGETS_SETTLED = 60_000  # ms for "Loading widget..." to go once the cells ran
_CODE_CELL_OUTPUTS = """
() => {
  const panel = window.jupyterapp.shell.currentWidget;
  return panel.content.widgets
    .filter((cell) => cell.model.type === "code")
    .map((cell) => ({
      count: cell.model.executionCount,
      outputs: cell.model.outputs.toJSON(),
    }));
}
"""


def _widget_outputs(stem: str) -> int:
    """How many widget outputs the committed notebook ``stem`` holds."""
    notebook = json.loads((NOTEBOOKS / f"{stem}.ipynb").read_text(encoding="utf-8"))
    return sum(
        "application/vnd.jupyter.widget-view+json" in output.get("data", {})
        for cell in notebook["cells"]
        for output in cell.get("outputs", [])
    )


def _static_snapshots_shown(page: Any, name: str) -> None:
    # Opened, before any cell runs: JupyterLab cannot draw the saved widgets yet
    # (jupyterlab#15361), so the static snapshot under each must be what shows.
    expected = _widget_outputs(Path(name).stem)
    shown = page.get_by_text("Static snapshot of the widget above")
    if expected:
        shown.first.wait_for()
    assert shown.count() == expected, f"{name}: {expected} widgets, {shown.count()} snapshots"
    # The figures inside them survive JupyterLab's sanitizer (the notebook is untrusted).
    notebook = (NOTEBOOKS / name).read_text(encoding="utf-8")
    figures = page.locator(".jp-OutputArea-output img[alt='figure']")
    assert figures.count() == notebook.count('alt=\\"figure\\"'), name
    for image in figures.all():
        image.scroll_into_view_if_needed()
        assert image.evaluate("(img) => img.complete && img.naturalWidth > 0"), name


def _open_and_run_all(
    page: Any, lab: Lab, name: str, *, before_run: Callable[[Any, str], None]
) -> list[dict[str, Any]]:
    """Open ``name``, wait for its kernel, run every cell; returns each code cell's outputs.

    ``before_run(page, name)`` checks the notebook as opened, before Run All.
    """
    page.goto(lab.notebook_url(name))
    page.wait_for_function(
        """(name) => {
          const app = window.jupyterapp;
          const panel = app && app.shell.currentWidget;
          return panel && panel.context && panel.context.path.endsWith(name)
            && panel.sessionContext && panel.sessionContext.session
            && panel.sessionContext.session.kernel
            && panel.sessionContext.session.kernel.status === "idle";
        }""",
        arg=name,
        timeout=120_000,
    )
    before_run(page, name)
    # The command's promise settles once the last cell has run.
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    page.wait_for_function(
        """() => {
          const panel = window.jupyterapp.shell.currentWidget;
          const cells = panel.content.widgets.filter((c) => c.model.type === "code");
          return panel.sessionContext.session.kernel.status === "idle"
            && cells.every((c) => c.model.executionCount !== null
                                 && !c.promptNode.textContent.includes("*"));
        }""",
        timeout=180_000,
    )
    cells: list[dict[str, Any]] = page.evaluate(_CODE_CELL_OUTPUTS)
    return cells


def _assert_ran_cleanly(page: Any, cells: list[dict[str, Any]], name: str) -> None:
    errors = [
        f"cell {index}: {output.get('ename')}: {output.get('evalue')}"
        for index, cell in enumerate(cells)
        for output in cell["outputs"]
        if output.get("output_type") == "error"
    ]
    assert not errors, f"{name}: cells failed: {errors}"
    assert all(cell["count"] is not None for cell in cells), f"{name}: a cell did not run"
    page.wait_for_function(
        "() => !document.body.innerText.includes('Loading widget...')",
        timeout=WIDGETS_SETTLED,
    )
    text = page.inner_text("body")
    assert "Error displaying widget" not in text, f"{name}: a widget failed to render"


def _screenshot(page: Any, artifacts: Path, stem: str) -> Path:
    """The whole notebook after Run All, in one image (JPEG: the notebooks are long)."""
    page.evaluate("() => window.jupyterapp.shell.collapseLeft()")
    height = page.evaluate(
        """() => {
          const panel = window.jupyterapp.shell.currentWidget.node;
          const outer = panel.querySelector('.jp-WindowedPanel-outer');
          return outer ? outer.scrollHeight : 900;
        }"""
    )
    page.set_viewport_size({"width": 1280, "height": min(max(int(height) + 160, 900), 14_000)})
    page.evaluate(
        """() => {
          const outer = window.jupyterapp.shell.currentWidget.node
            .querySelector('.jp-WindowedPanel-outer');
          if (outer) outer.scrollTop = 0;
        }"""
    )
    page.wait_for_timeout(500)  # one layout pass at the new size
    target = artifacts / f"{stem}.jpg"
    page.screenshot(path=str(target), type="jpeg", quality=70)
    return target


def _widget_output(page: Any, contains: str) -> Any:
    """The rendered widget output area whose text contains ``contains``."""
    areas = page.locator(".jp-OutputArea-output .jupyter-widgets").filter(has_text=contains)
    areas.first.wait_for()
    return areas.first


def _wait_text(locator: Any, pattern: str, timeout: int = 60_000) -> None:
    locator.filter(has_text=re.compile(pattern)).first.wait_for(timeout=timeout)


# -- one test per notebook: Run All, then one interaction per widget ---------------------


def _quickstart(page: Any) -> None:
    # No widget: the figures and tables must be there.
    assert page.locator(".jp-OutputArea-output img").count() >= 1
    assert page.locator(".jp-OutputArea-output table").count() >= 1


def _optimizer(page: Any) -> None:
    # The replayed dashboard finished its run.
    first = _widget_output(page, "Leaderboard")
    assert re.search(r"done: \d+ round", first.inner_text())
    # The playground dashboard (ScriptedLLM): controls, then Run and Stop.
    playground = page.locator(".jp-Cell").last.locator(".jupyter-widgets").first
    playground.wait_for()
    for strategy in ("few_shot", "answer_only", "concise", "chain_of_thought"):
        assert playground.get_by_text(strategy, exact=True).count() == 1
    for search in ("exhaustive", "racing", "halving"):
        assert playground.get_by_role("button", name=search).count() == 1
    assert playground.get_by_text("max calls").count() == 1
    assert playground.get_by_text("max seconds").count() == 1
    assert playground.locator(".progress").count() >= 1
    run = playground.get_by_role("button", name="Run")
    stop = playground.get_by_role("button", name="Stop")
    assert stop.is_disabled()
    playground.get_by_role("button", name="racing").click()
    run.click()
    _wait_text(playground.locator(".widget-html"), r"round 0 · \d+ call")
    assert stop.is_enabled()
    stop.click()
    _wait_text(playground.locator(".widget-html"), r"stop reason: stopped")
    _wait_text(playground.locator(".widget-html"), r"Leaderboard")
    assert run.is_enabled()


def _refinement(page: Any) -> None:
    explorer = _widget_output(page, "Refinement")
    header = explorer.locator(".widget-html").filter(has_text=re.compile(r"^iteration \d+:"))
    assert re.match(r"iteration 2:", header.first.inner_text())
    assert explorer.locator(".widget-slider").count() == 1
    for tab in ("output", "diff with previous", "checks"):
        assert explorer.get_by_role("tab", name=tab).count() == 1
    image = explorer.locator("img").first
    natural, shown = image.evaluate("(img) => [img.naturalWidth, img.clientWidth]")
    assert 0 < shown <= natural, f"check matrix stretched: {shown}px shown for {natural}px"
    explorer.locator(".noUi-handle").first.focus()
    # The run has two iterations (the loop stops on a repeated output); the
    # notebook shows the second, so the key moves back to the first.
    explorer.locator(".noUi-handle").first.press("ArrowLeft")
    _wait_text(explorer.locator(".widget-html"), r"^iteration 1:")
    explorer.get_by_role("tab", name="checks").click()
    assert explorer.locator("table").first.is_visible()


def _feedback(page: Any) -> None:
    panel = _widget_output(page, "Feedback so far")
    for button in ("good", "bad", "add correction", "add preference"):
        assert panel.get_by_role("button", name=button).count() == 1
    assert "saved preference feedback" in panel.inner_text()
    rows = panel.locator("table tbody tr").count()
    panel.get_by_role("button", name="good").click()
    _wait_text(panel.locator(".widget-html"), r"saved positive feedback")
    panel.locator("table tbody tr").nth(rows).wait_for()


def _reports(page: Any) -> None:
    browser = _widget_output(page, "baseline")
    for control in ("all", "failing", "regressed", "load"):
        assert browser.get_by_role("button", name=control).count() == 1
    assert browser.locator("textarea").count() == 1
    assert browser.locator("select").count() == 1
    assert browser.locator("table").count() == 1
    browser.get_by_role("button", name="regressed").click()
    _wait_text(browser.locator(".widget-html"), r"no tests match|regressed")
    browser.locator("textarea").fill("reports/no-such-report.json")
    browser.get_by_role("button", name="load").click()
    _wait_text(browser.locator(".widget-html"), r"error:.*no-such-report")


def _models(page: Any) -> None:
    # No widget: the tidy frame, its summary, the score/cost figure and the disagreements.
    assert page.locator(".jp-OutputArea-output table").count() >= 3
    figure = page.locator(".jp-OutputArea-output img").first
    figure.scroll_into_view_if_needed()
    assert figure.evaluate("(img) => img.complete && img.naturalWidth > 0")
    text = page.inner_text("body")
    assert "served, 2 tokens" in text
    assert re.search(r"\d+ of 20 reviews scored differently", text)


def _agents(page: Any) -> None:
    # The frames and the three charts, then the explorer: choose a case, step through it.
    assert page.locator(".jp-OutputArea-output table").count() >= 5
    explorer = _widget_output(page, "Trajectories")
    assert "step 6 of 7: tool call issue_refund" in explorer.inner_text()
    assert explorer.locator("select").count() == 1
    assert explorer.locator(".widget-slider").count() == 1
    previous = explorer.get_by_role("button", name="previous")
    following = explorer.get_by_role("button", name="next")
    following.click()
    _wait_text(explorer.locator(".widget-html"), r"^step 7 of 7: model turn")
    assert following.is_disabled()
    explorer.locator("select").select_option(label="refund-A1002 (fail)")
    _wait_text(explorer.locator(".widget-html"), r"^step 1 of 3: model turn")
    assert previous.is_disabled()
    following.click()
    _wait_text(explorer.locator(".widget-html"), r"^step 2 of 3: tool call lookup_order")
    _wait_text(explorer.locator(".widget-html"), r"office chair")  # the tool's result
    assert explorer.locator("table tbody tr").count() == 2  # the steps so far


CHECKS: dict[str, Callable[[Any], None]] = {
    "01_quickstart": _quickstart,
    "02_prompt_optimizer": _optimizer,
    "03_refinement_loop": _refinement,
    "04_feedback_and_norms": _feedback,
    "05_ci_reports": _reports,
    "06_model_comparison": _models,
    "07_agents": _agents,
}


def test_every_notebook_is_checked() -> None:
    assert sorted(CHECKS) == sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb"))


@pytest.mark.parametrize("stem", sorted(CHECKS))
def test_notebook_runs_and_its_widgets_respond(
    page: Any, lab: Lab, artifacts: Path, stem: str
) -> None:
    uncaught: list[str] = []
    console: list[tuple[str, str]] = []
    page.on("pageerror", lambda exc: uncaught.append(str(exc)))
    page.on("console", lambda msg: console.append((msg.type, msg.text)))
    cells = _open_and_run_all(page, lab, f"{stem}.ipynb", before_run=_static_snapshots_shown)
    _assert_ran_cleanly(page, cells, stem)
    CHECKS[stem](page)
    _screenshot(page, artifacts, stem)
    (artifacts / f"{stem}.console.txt").write_text("\n".join(f"{k}: {t}" for k, t in console))
    assert not uncaught, f"{stem}: uncaught errors in the page: {uncaught}"
    errors = [text for kind, text in console if kind == "error"]
    assert not errors, f"{stem}: errors in the browser console: {errors}"


# -- the committed notebooks without a kernel: nbconvert's HTML -------------------------


@pytest.fixture(scope="module")
def html_pages(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every committed notebook rendered by ``jupyter nbconvert --to html`` (one process)."""
    folder = tmp_path_factory.mktemp("nbconvert")
    done = subprocess.run(
        [sys.executable, "-m", "nbconvert", "--to", "html", "--output-dir", str(folder),
         *map(str, sorted(NOTEBOOKS.glob("*.ipynb")))],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return folder


@pytest.mark.parametrize("stem", sorted(CHECKS))
def test_committed_notebook_as_html_shows_each_widget(
    page: Any, html_pages: Path, artifacts: Path, stem: str
) -> None:
    page_file = html_pages / f"{stem}.html"
    markup = page_file.read_text()
    views = _widget_outputs(stem)
    if views:
        # The saved widget state is embedded for viewers that can run the widgets'
        # JavaScript (nbviewer); this page is opened offline, where they cannot.
        assert 'type="application/vnd.jupyter.widget-state+json"' in markup
    page.goto(page_file.as_uri())
    snapshots = page.locator(".tnsai-widget-snapshot")
    assert snapshots.count() == views, f"{stem}: {views} widgets, {snapshots.count()} snapshots"
    text = page.inner_text("body")
    assert "VBox(children" not in text
    for index in range(views):
        snapshot = snapshots.nth(index)
        assert snapshot.is_visible()
        assert len(snapshot.inner_text().strip()) > 80, f"{stem}: snapshot {index} is empty"
    expected = {
        "02_prompt_optimizer": ["Leaderboard", "Run", "Stop", "racing"],
        "03_refinement_loop": ["iteration 2:", "diff with previous"],
        "04_feedback_and_norms": ["saved preference feedback", "good", "bad"],
        "05_ci_reports": ["run v3", "baseline"],
        "07_agents": ["where-A1006 (fail)", "step 6 of 7: tool call issue_refund"],
    }.get(stem, [])
    for words in expected:
        assert words in text, f"{stem}: {words!r} missing from the page without a kernel"
    for image in page.locator(".tnsai-widget-snapshot img").all():
        assert image.evaluate("(img) => img.complete && img.naturalWidth > 0")
    page.screenshot(path=str(artifacts / f"{stem}.nbconvert.jpg"), type="jpeg", quality=70)
