"""Static snapshots from saved widget state, stable widget ids, content-sized images."""

from __future__ import annotations

import json
import re
from typing import Any

import ipywidgets as w
import pandas as pd
import pytest

from tnsai_eval.feedback import FeedbackStore
from tnsai_eval.optimizer import PromptOptimizer
from tnsai_eval.plots import plot_score_progression
from tnsai_eval.refinement import CompletionCriteria, RefinementLoop
from tnsai_eval.scoring import TestCase
from tnsai_eval.testing import ScriptedLLM
from tnsai_eval.widgets import (
    FeedbackPanel,
    OptimizerDashboard,
    RefinementExplorer,
    add_static_snapshots,
    normalize_widget_ids,
    snapshot_html,
)
from tnsai_eval.widgets._common import figure_png, image_widget, png_size, table_html
from tnsai_eval.widgets._snapshot import SNAPSHOT_MARK, WIDGET_STATE, WIDGET_VIEW


def _state() -> dict[str, Any]:
    """The saved state of every live widget, as a notebook's metadata holds it."""
    state: dict[str, Any] = w.Widget.get_manager_state()
    return state


@pytest.fixture
def explorer() -> RefinementExplorer:
    criteria = CompletionCriteria.builder().valid_json().must_contain('"id"').build()
    llm = ScriptedLLM(['{"name": "x"}', '{"name": "x", "id": 1}'])
    result = RefinementLoop("Emit a JSON record with an id", criteria).execute(llm, "name=x")
    view = RefinementExplorer(result)
    view.slider.value = 2
    return view


def test_snapshot_shows_what_the_explorer_shows(explorer: RefinementExplorer) -> None:
    page = snapshot_html(_state(), explorer.widget.model_id)
    assert explorer.header.value in page  # "iteration 2: score ..."
    assert 'value="2"' in page
    assert "diff with previous" in page  # the tab titles
    assert "checks" in page
    # The selected tab's content (the output), not the others'.
    assert explorer.output.value in page
    assert explorer.diff.value not in page
    # The check matrix at its own pixel width.
    width, _ = png_size(explorer.matrix.value)
    match = re.search(r'<img width="(\d+)"[^>]*src="data:image/png;base64,', page)
    assert match is not None
    assert int(match.group(1)) == width


def test_snapshot_shows_controls_as_they_were() -> None:
    llm = ScriptedLLM(default="4")
    optimizer = PromptOptimizer(llm, candidate_strategies=["answer_only"], rewrite=False)
    dashboard = OptimizerDashboard(optimizer, "Add.", [TestCase("2 + 2", "4")])
    dashboard.search.value = "racing"
    dashboard.max_calls.value = 7
    page = snapshot_html(_state(), dashboard.widget.model_id)
    assert re.search(r"font-weight: bold\">racing<", page)
    assert re.search(r'type="checkbox" disabled checked> answer_only', page)
    assert re.search(r'type="checkbox" disabled> concise', page)
    assert ">7<" in page
    assert ">Run<" in page
    assert ">Stop<" in page
    assert "<progress" in page


def test_feedback_buttons_are_words_with_icons_not_emoji() -> None:
    panel = FeedbackPanel(FeedbackStore.in_memory(), reply="Hello")
    assert (panel.thumbs_up.description, panel.thumbs_up.icon) == ("good", "thumbs-up")
    assert (panel.thumbs_down.description, panel.thumbs_down.icon) == ("bad", "thumbs-down")
    page = snapshot_html(_state(), panel.widget.model_id)
    assert ">good<" in page
    assert ">bad<" in page
    assert not re.search("[\U0001f300-\U0001faff]", page)


def _notebook(view: Any) -> dict[str, Any]:
    return {
        "cells": [
            {
                "cell_type": "code",
                "source": "view",
                "metadata": {},
                "outputs": [
                    {
                        "output_type": "display_data",
                        "metadata": {},
                        "data": {
                            WIDGET_VIEW: {"model_id": view.widget.model_id, "version_major": 2},
                            "text/plain": "view",
                        },
                    }
                ],
            }
        ],
        "metadata": {"widgets": {WIDGET_STATE: _state()}},
    }


def test_snapshots_follow_each_widget_output_once(explorer: RefinementExplorer) -> None:
    notebook = _notebook(explorer)
    assert add_static_snapshots(notebook) == 1
    assert add_static_snapshots(notebook) == 1  # replaced, not doubled
    outputs = notebook["cells"][0]["outputs"]
    assert len(outputs) == 2
    assert WIDGET_VIEW in outputs[0]["data"]
    snapshot = outputs[1]
    assert snapshot["metadata"] == {SNAPSHOT_MARK: True}
    assert "Static snapshot of the widget above" in snapshot["data"]["text/html"]
    assert explorer.header.value in snapshot["data"]["text/html"]


def test_widget_ids_are_normalized_to_the_same_ids_on_every_run(
    explorer: RefinementExplorer,
) -> None:
    first = _notebook(explorer)
    # The same notebook run again: the same widgets under other random ids.
    ids = list(first["metadata"]["widgets"][WIDGET_STATE]["state"])
    text = json.dumps(first)
    for index, old in enumerate(reversed(ids)):
        text = text.replace(old, f"{index:032x}")
    again = json.loads(text)
    assert again != first
    assert normalize_widget_ids(first, salt="nb") == len(ids)
    assert normalize_widget_ids(again, salt="nb") == len(ids)
    assert again == first
    assert not set(ids) & set(first["metadata"]["widgets"][WIDGET_STATE]["state"])


def test_image_widget_keeps_the_figure_size() -> None:
    png = figure_png(plot_score_progression([0.2, 0.5, 0.9]))
    image = image_widget(png)
    width, height = png_size(png)
    assert width > 100
    assert height > 50
    assert image.width == str(width)
    assert image.layout.align_self == "flex-start"
    assert image.layout.max_width == "100%"


def test_table_cells_shorten_long_text_with_the_whole_on_hover() -> None:
    name = "tests/test_prompts.py::test_a_very_long_test_name_" + "x" * 80
    page = table_html(pd.DataFrame({"nodeid": [name], "score": [0.5]}), max_chars=40)
    assert f'title="{name}"' in page
    assert ">tests/test_prompts.py::test_a_very_long…<" in page
    assert "0.5" in page


def test_a_plain_box_and_a_grid_box_lay_out_their_children() -> None:
    # A plain Box rendered through the box table: it once reached _box without its
    # direction and raised TypeError, losing the notebook's whole snapshot.
    label = w.Label("inside")
    for box, direction in ((w.Box([label]), "row"), (w.GridBox([label]), "row")):
        page = snapshot_html(_state(), box.model_id)
        assert f"flex-direction: {direction}" in page
        assert "<span>inside</span>" in page
