"""TrajectoryExplorer on the support desk agent's real runs, driven through its widgets."""

from __future__ import annotations

from typing import Any

import ipywidgets as w
import pandas as pd
import pytest

from tests.support_desk import desk_evaluation
from tnsai_eval.errors import ConfigError
from tnsai_eval.evaluation import TargetEvaluation, score_target
from tnsai_eval.records import ModelTurn, ToolCall, Trajectory
from tnsai_eval.reports import Report, TestStatus, TrackedTest
from tnsai_eval.scoring import TestCase, ToolCallMatch
from tnsai_eval.widgets import TrajectoryExplorer, snapshot_html
from tnsai_eval.widgets._common import table_html


@pytest.fixture(scope="module")
def desk() -> TargetEvaluation:
    return desk_evaluation()


def test_the_case_list_names_each_case_with_its_verdict(desk: TargetEvaluation) -> None:
    explorer = TrajectoryExplorer(desk)
    labels = [label for label, _ in explorer.case.options]
    assert len(labels) == 48
    assert labels[0] == "where-A1001 (pass)"
    assert "where-A1006 (fail)" in labels
    assert explorer.case.value == "where-A1001"
    assert "48 case(s), 6 passed, 134 step(s)" in explorer.widget.children[0].value


def test_stepping_through_a_looping_run(desk: TargetEvaluation) -> None:
    explorer = TrajectoryExplorer(desk, case="where-A1006")
    assert "stopped: max_steps" in explorer.header.value
    assert "tool_call_f1 0.50" in explorer.header.value
    assert "Can you tell me the status of A1006?" in explorer.header.value
    assert (explorer.slider.min, explorer.slider.max, explorer.slider.value) == (1, 7, 1)
    assert explorer.position.value == "step 1 of 7: model turn"
    assert explorer.previous_button.disabled
    assert not explorer.next_button.disabled

    explorer.next_button.click()
    assert explorer.position.value == "step 2 of 7: tool call lookup_order"
    assert "&quot;order_id&quot;: &quot;A1006&quot;" in explorer.detail.value
    assert "webcam" in explorer.detail.value  # the tool's live result
    assert explorer.table.value.count("<tr>") == 2  # the steps so far (the header has a style)

    explorer.slider.value = 6  # what dragging the slider does
    assert explorer.position.value == "step 6 of 7: tool call issue_refund"
    explorer.next_button.click()
    assert explorer.position.value == "step 7 of 7: model turn"
    assert explorer.next_button.disabled
    explorer.next_button.click()  # at the end: stays
    assert explorer.slider.value == 7


def test_choosing_another_case_starts_at_its_first_step(desk: TargetEvaluation) -> None:
    explorer = TrajectoryExplorer(desk, case="where-A1006")
    explorer.slider.value = 5
    explorer.case.value = "refund-A1002"  # what choosing it in the list does
    assert explorer.slider.max == 3
    assert explorer.position.value == "step 1 of 3: model turn"
    explorer.show("refund-A1002", step=3)
    assert "You can refund an order after looking it up" in explorer.detail.value
    assert "364 token(s)" in explorer.detail.value


def test_a_failed_tool_call_and_a_case_with_no_trajectory() -> None:
    def agent(text: str) -> Trajectory:
        if text == "boom":
            raise RuntimeError("the desk is closed")
        call = ToolCall("issue_refund", {"order_id": "A9"}, error="KeyError: 'no order A9'")
        return Trajectory(text, (ModelTurn(), call, ModelTurn("sorry")), "sorry")

    cases = [TestCase("refund A9", expected_tool_calls=[{"name": "issue_refund"}], id="a9"),
             TestCase("boom", id="boom")]  # fmt: skip
    result = score_target(agent, cases, evaluator=ToolCallMatch())
    explorer = TrajectoryExplorer(result, case="a9")
    explorer.show("a9", step=2)
    assert "error" in explorer.detail.value
    assert "KeyError: &#x27;no order A9&#x27;" in explorer.detail.value
    explorer.case.value = "boom"
    assert explorer.position.value == "<i>no steps: the case has no trajectory</i>"
    assert (explorer.slider.min, explorer.slider.max) == (0, 0)
    assert "RuntimeError: the desk is closed" in explorer.header.value
    assert explorer.previous_button.disabled
    assert explorer.next_button.disabled
    explorer.case.value = "a9"  # and back: the slider grows again
    assert (explorer.slider.min, explorer.slider.max, explorer.slider.value) == (1, 3, 1)


def test_an_unknown_case_is_named(desk: TargetEvaluation) -> None:
    with pytest.raises(ConfigError, match="no case 'nope'; the cases are where-A1001"):
        TrajectoryExplorer(desk, case="nope")


def test_the_static_snapshot_shows_the_step_shown(desk: TargetEvaluation) -> None:
    explorer = TrajectoryExplorer(desk, case="where-A1006")
    explorer.show("where-A1006", step=2)
    state: dict[str, Any] = w.Widget.get_manager_state()
    snapshot = snapshot_html(state, explorer.widget.model_id)
    assert "step 2 of 7: tool call lookup_order" in snapshot
    assert "where-A1006 (fail)" in snapshot
    assert "webcam" in snapshot


def test_a_missing_text_cell_is_blank_not_nan() -> None:
    # pandas 3 keeps a text column's missing values as NaN, which to_html wrote
    # as "NaN" before any formatter saw it (a model turn's tool and arguments).
    page = table_html(pd.DataFrame({"tool": ["lookup_order", None]}))
    assert "NaN" not in page
    assert "<td></td>" in page


def test_a_report_with_one_case_in_two_tests_names_each(desk: TargetEvaluation) -> None:
    tests = tuple(
        TrackedTest(nodeid, TestStatus.PASSED, cases=desk.cases[5:7])
        for nodeid in ("t.py::test_desk[a]", "t.py::test_desk[b]")
    )
    explorer = TrajectoryExplorer(Report(tests=tests))
    assert [value for _, value in explorer.case.options] == [
        "where-A1006 · t.py::test_desk[a] #0", "where-A1007 · t.py::test_desk[a] #0",
        "where-A1006 · t.py::test_desk[b] #0", "where-A1007 · t.py::test_desk[b] #0",
    ]  # fmt: skip
    explorer.case.value = "where-A1006 · t.py::test_desk[b] #0"
    explorer.slider.value = 6
    # The report's summary of the run: the same steps, the texts cut to 300 characters.
    assert explorer.position.value == "step 6 of 7: tool call issue_refund"
