"""The widgets, driven through their Python state: no browser, no kernel."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from tests.frames.conftest import save_report as _save
from tnsai_eval.feedback import Agent, FeedbackLearner, FeedbackStore, FeedbackType
from tnsai_eval.refinement import CompletionCriteria, RefinementLoop, RefinementResult
from tnsai_eval.testing import ScriptedLLM
from tnsai_eval.widgets import FeedbackPanel, RefinementExplorer, ReportBrowser

PNG = b"\x89PNG"


def _modules_loaded(code: str, *names: str) -> list[bool]:
    """Which of ``names`` are in sys.modules after running ``code`` in a fresh interpreter."""
    probe = f"{code}\nimport sys\nprint(*[n in sys.modules for n in {names!r}])"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return [word == "True" for word in out.stdout.split()]


def test_importing_tnsai_eval_does_not_import_ipywidgets() -> None:
    assert _modules_loaded("import tnsai_eval", "ipywidgets") == [False]


def test_widgets_package_imports_ipywidgets_only_when_a_view_is_used() -> None:
    assert _modules_loaded("import tnsai_eval.widgets", "ipywidgets") == [False]
    code = "from tnsai_eval.widgets import ReportBrowser"
    assert _modules_loaded(code, "ipywidgets") == [True]


def test_frames_and_plots_never_import_pyplot() -> None:
    code = "import tnsai_eval.frames, tnsai_eval.plots, tnsai_eval.widgets"
    assert _modules_loaded(code, "matplotlib.pyplot", "matplotlib") == [False, True]


def test_widgets_package_names_an_unknown_attribute() -> None:
    import tnsai_eval.widgets as widgets

    with pytest.raises(AttributeError, match="'Nope'"):
        _ = widgets.Nope


# -- RefinementExplorer ----------------------------------------------------------------


@pytest.fixture
def refinement() -> RefinementResult:
    criteria = CompletionCriteria.builder().valid_json().must_contain('"id"').build()
    llm = ScriptedLLM(['{"name": "x"}', '{"name": "x", "id": 1}'])
    return RefinementLoop("Emit a JSON record with an id", criteria).execute(llm, "name=x")


def test_explorer_slider_shows_output_diff_and_checks(refinement: RefinementResult) -> None:
    explorer = RefinementExplorer(refinement)
    assert (explorer.slider.min, explorer.slider.max, explorer.slider.value) == (1, 3, 1)
    assert "name=x" in explorer.output.value
    assert "nothing to compare" in explorer.diff.value
    assert "0/2 checks passed" in explorer.header.value
    assert explorer.matrix.value.tobytes().startswith(PNG)

    explorer.slider.value = 3  # what dragging the slider does
    assert "2/2 checks passed" in explorer.header.value
    assert "score 1.00" in explorer.header.value
    assert "+{&quot;name&quot;: &quot;x&quot;, &quot;id&quot;: 1}" in explorer.diff.value
    assert "-{&quot;name&quot;: &quot;x&quot;}" in explorer.diff.value
    assert "iteration 2" in explorer.diff.value
    assert "must_contain" in explorer.check_table.value

    explorer.show(2)
    assert explorer.slider.value == 2
    assert "1/2 checks passed" in explorer.header.value


def test_explorer_rejects_unknown_iterations(refinement: RefinementResult) -> None:
    explorer = RefinementExplorer(refinement)
    with pytest.raises(ValueError, match="no iteration 7"):
        explorer.show(7)


def test_explorer_names_the_columns_a_bare_frame_lacks(bare_refinement: RefinementResult) -> None:
    with pytest.raises(ValueError, match="lacks column\\(s\\) 'output'"):
        RefinementExplorer(bare_refinement)


# -- FeedbackPanel -----------------------------------------------------------------------


def test_feedback_panel_writes_to_the_store_and_updates_the_section() -> None:
    store = FeedbackStore.in_memory()
    panel = FeedbackPanel(store, session_id="s1")
    assert "nothing learned yet" in panel.prompt.value

    panel.thumbs_up.click()  # no reply yet: nothing to rate
    assert store.count() == 0
    panel.add_correction.click()  # empty text: nothing saved
    assert store.count() == 0
    assert "nothing saved" in panel.status.value

    panel.set_reply("Your order ships tomorrow.")
    panel.thumbs_up.click()
    panel.correction.value = "Quote the order id."
    panel.add_correction.click()
    panel.preference.value = "Answer in one line."
    panel.add_preference.click()

    assert [fb.type for fb in store.get_all()] == [
        FeedbackType.POSITIVE,
        FeedbackType.CORRECTION,
        FeedbackType.PREFERENCE,
    ]
    assert store.get_all()[0].content == "Your order ships tomorrow."
    assert {fb.session_id for fb in store.get_all()} == {"s1"}
    assert panel.correction.value == ""  # cleared after saving
    section = panel.prompt.value
    assert "## Rules" in section
    assert "- Quote the order id." in section
    assert "- Answer in one line." in section
    assert "Your order ships" not in section  # ratings never reach the prompt
    assert "correction" in panel.history.value
    assert "saved preference feedback" in panel.status.value


def test_feedback_panel_with_an_agent_shows_its_effective_prompt() -> None:
    agent = Agent(ScriptedLLM(default="Hello!"), "You are a support agent.")
    store = FeedbackStore.in_memory()
    panel = FeedbackPanel(store, agent=agent)
    panel.set_reply(agent.chat("hi"))
    assert panel.prompt.value.count("You are a support agent.") == 1
    panel.correction.value = "Greet by name."
    panel.add_correction.click()
    assert "Greet by name." in agent.system_prompt
    assert "# Learned Behavior" in panel.prompt.value
    assert store.count() == 1


def test_feedback_panel_learn_button_lists_what_was_learned() -> None:
    store = FeedbackStore.in_memory()
    # Each strategy keeps only the lines with its own prefix.
    llm = ScriptedLLM(default="RULE: Quote the order id.\nPREFERENCE: Be brief.")
    learner = FeedbackLearner(llm, store, min_feedback_for_learning=1)
    panel = FeedbackPanel(store, learner=learner)
    panel.correction.value = "You forgot the order id."
    panel.add_correction.click()
    panel.learn_button.click()
    assert "Quote the order id." in panel.learned.value
    assert "Be brief." in panel.learned.value
    assert "rule" in panel.learned.value


# -- ReportBrowser -----------------------------------------------------------------------


@pytest.fixture
def report_paths(tmp_path: Path) -> list[Path]:
    old = _save(tmp_path / "main.json", {"t::a": 0.9, "t::b": 0.8, "t::c": 0.5})
    new = _save(tmp_path / "branch.json", {"t::a": 0.4, "t::b": 0.8, "t::d": 1.0}, ("t::a",))
    return [old, new]


def _comparison(browser: ReportBrowser) -> pd.DataFrame | None:
    # Read through a call: mypy would keep browser.comparison narrowed to None
    # across the widget events that set it, and skip the checks after them.
    return browser.comparison


def test_report_browser_compares_with_a_baseline_and_filters(report_paths: list[Path]) -> None:
    browser = ReportBrowser(report_paths)
    assert browser.current_run == "branch"
    assert browser.baseline.options == ("(none)", "main")
    assert _comparison(browser) is None
    assert "t::d" in browser.table.value
    assert browser.plot.value.tobytes().startswith(PNG)

    browser.filter.value = "regressed"
    assert "choose a baseline" in browser.table.value

    browser.baseline.value = "main"
    assert browser.comparison is not None
    assert "1 regressed against" in browser.status.value
    assert "t::a" in browser.table.value
    assert "t::b" not in browser.table.value

    browser.filter.value = "failing"
    assert "t::a" in browser.table.value
    assert "t::d" not in browser.table.value

    browser.filter.value = "all"
    assert all(t in browser.table.value for t in ("t::a", "t::b", "t::c", "t::d"))
    assert "vanished" in browser.table.value


def test_report_browser_loads_from_its_text_box(report_paths: list[Path], tmp_path: Path) -> None:
    browser = ReportBrowser()
    assert "no reports loaded" in browser.status.value or browser.status.value == ""
    browser.paths_box.value = "\n".join(map(str, report_paths))
    browser.load_button.click()
    assert len(browser.reports) == 6
    assert browser.reports["run"].unique().tolist() == ["main", "branch"]

    browser.paths_box.value = str(tmp_path / "missing.json")
    browser.load_button.click()
    assert "error:" in browser.status.value
    assert "missing.json" in browser.status.value


def test_report_browser_takes_its_baseline_up_front(report_paths: list[Path]) -> None:
    browser = ReportBrowser(report_paths, baseline="main", tolerance=0.5)
    assert browser.baseline.value == "main"
    assert browser.comparison is not None
    # With a tolerance of 0.5 the drop of t::a (0.9 -> 0.4) is not a regression.
    assert "0 regressed against" in browser.status.value
    assert browser.comparison["kind"].tolist().count("unchanged") == 2


def test_report_browser_rejects_an_unknown_baseline(report_paths: list[Path]) -> None:
    with pytest.raises(ValueError, match="baseline 'nope'"):
        ReportBrowser(report_paths, baseline="nope")


def test_report_browser_keeps_what_it_showed_when_a_load_fails(
    report_paths: list[Path], tmp_path: Path
) -> None:
    browser = ReportBrowser(report_paths)
    shown = browser.reports.copy()
    with pytest.raises(ValueError, match="baseline 'nope'"):
        browser.load([report_paths[1], report_paths[0]], baseline="nope")
    broken = tmp_path / "broken.json"
    broken.write_text("{", encoding="utf-8")
    browser.paths_box.value = f"{report_paths[0]}\n{broken}"
    browser.load_button.click()
    assert "broken.json" in browser.status.value
    assert browser.reports.equals(shown)
    assert browser.current_run == "branch"
    assert browser.baseline.options == ("(none)", "main")
