from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from matplotlib.colors import to_hex
from matplotlib.container import BarContainer
from matplotlib.figure import Figure

from tests.plots._axes import bars
from tnsai_eval import frames, plots
from tnsai_eval.errors import ConfigError
from tnsai_eval.optimizer import OptimizationResult


def test_score_progression_draws_one_line_per_run() -> None:
    fig = plots.plot_score_progression({"a": [0.2, 0.5, 0.9], "b": [0.4, 0.4]}, title="T")
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    lines = ax.get_lines()
    assert [line.get_label() for line in lines] == ["a", "b"]
    assert np.asarray(lines[0].get_ydata()).tolist() == [0.2, 0.5, 0.9]
    assert np.asarray(lines[1].get_xdata()).tolist() == [0, 1]
    assert ax.get_title() == "T"
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("iteration", "score")
    legend = ax.get_legend()
    assert legend is not None
    assert [t.get_text() for t in legend.get_texts()] == ["a", "b"]


def test_coinciding_runs_stay_distinguishable() -> None:
    # Notebook 02's exhaustive and racing runs end on the same scores: one line
    # must not hide the other (issue 15).
    same = [0.4, 0.7, 0.7]
    fig = plots.plot_score_progression({"exhaustive": same, "racing": same, "third": same})
    lines = fig.axes[0].get_lines()
    styles = [(ln.get_marker(), ln.get_linestyle(), ln.get_markersize()) for ln in lines]
    assert len(set(styles)) == 3
    assert len({ln.get_marker() for ln in lines}) == 3
    assert len({ln.get_linestyle() for ln in lines}) == 3
    # The first line's markers are hollow, so the smaller ones drawn over them show.
    assert lines[0].get_markerfacecolor() == "none"
    assert [ln.get_markersize() for ln in lines] == sorted(
        (ln.get_markersize() for ln in lines), reverse=True
    )


def test_score_progression_of_one_run_has_no_legend() -> None:
    fig = plots.plot_score_progression([0.1, 0.3])
    assert fig.axes[0].get_legend() is None


def test_optimizer_rounds_points_per_strategy_and_best_line(
    optimization: OptimizationResult,
) -> None:
    fig = plots.plot_optimizer_rounds(optimization)
    ax = fig.axes[0]
    points = {c.get_label(): np.asarray(c.get_offsets()).tolist() for c in ax.collections}
    # One colour per strategy and what its variants carry beyond the instruction.
    assert points == {
        "initial": [[0.0, 0.25]],
        "chain_of_thought": [[1.0, 0.75]],
        "concise [system message]": [[1.0, 0.25]],
        "concise [system message; 2 demo(s) as chat]": [[2.0, 1.0]],
    }
    (best,) = [line for line in ax.get_lines() if line.get_label() == "best so far"]
    assert np.asarray(best.get_ydata()).tolist() == [0.25, 0.75, 1.0]
    assert ax.get_xlabel() == "round"


def test_variant_case_heatmap_values_and_labels(optimization: OptimizationResult) -> None:
    fig = plots.plot_variant_case_heatmap(optimization)
    ax = fig.axes[0]
    image = ax.get_images()[0].get_array()
    assert np.asarray(image).tolist() == [[0.0, 0.5], [1.0, 0.5], [0.25, 0.25], [1.0, 1.0]]
    rows = [t.get_text() for t in ax.get_yticklabels()]
    assert rows == [
        "r0 v0 initial",
        "r1 v1 chain_of_thought",
        "r1 v2 concise [system message]",
        "r2 v3 concise [system message; 2 demo(s) as chat]",
    ]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["2+2?", "3+3?"]
    assert "0.50" in [t.get_text() for t in ax.texts]
    # The colour bar is its own axes.
    assert fig.axes[1].get_ylabel() == "score"


def test_variant_case_heatmap_filters_rounds(cases_frame: pd.DataFrame) -> None:
    fig = plots.plot_variant_case_heatmap(cases_frame, rounds=[1])
    assert np.asarray(fig.axes[0].get_images()[0].get_array()).shape == (2, 2)
    with pytest.raises(ConfigError, match="rounds=\\[9\\]"):
        plots.plot_variant_case_heatmap(cases_frame, rounds=[9])


def test_check_matrix_pass_fail_grid(checks_frame: pd.DataFrame) -> None:
    fig = plots.plot_check_matrix(checks_frame)
    ax = fig.axes[0]
    grid = np.asarray(ax.get_images()[0].get_array())
    assert grid.tolist() == [[0.0, 1.0, 1.0], [0.0, 0.0, 1.0]]
    skipped = checks_frame.assign(skipped=checks_frame["iteration"] == 1)
    grid = np.asarray(plots.plot_check_matrix(skipped).axes[0].get_images()[0].get_array())
    assert grid[:, 0].tolist() == [0.5, 0.5]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["valid_json", "must_contain(name)"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2", "3"]
    assert [t.get_text() for t in ax.texts].count("pass") == 3
    assert ax.get_xlabel() == "iteration"


def test_check_matrix_leaves_unrun_checks_blank(checks_frame: pd.DataFrame) -> None:
    partial = checks_frame[
        ~((checks_frame["check"] == "valid_json") & (checks_frame["iteration"] == 3))
    ]
    drawn = plots.plot_check_matrix(partial).axes[0].get_images()[0].get_array()
    assert drawn is not None
    grid = np.ma.getdata(drawn)
    assert np.isnan(grid[0, 2])
    with pytest.raises(ConfigError, match="no checked iterations"):
        plots.plot_check_matrix(checks_frame.iloc[0:0])


def _comparison() -> pd.DataFrame:
    rows = [
        ("t.py::test_bad", "score", 0.9, 0.3, 0.2, 0.4, -0.6, "regressed"),
        ("t.py::test_new", None, None, None, None, None, None, "new"),
        ("t.py::test_ok", "score", 0.8, 0.85, 0.85, 0.85, 0.05, "unchanged"),
    ]
    return pd.DataFrame(rows, columns=list(frames.COMPARISON_COLUMNS))


def test_report_comparison_highlights_regressions() -> None:
    fig = plots.plot_report_comparison(_comparison())
    ax = fig.axes[0]
    drawn = bars(ax)
    # Baseline bars for the three rows, then current bars (missing values drawn as 0).
    assert [b.get_width() for b in drawn] == pytest.approx([0.9, 0.0, 0.8, 0.3, 0.0, 0.85])
    red = plots.REGRESSION_COLOR
    assert [to_hex(b.get_facecolor()) for b in drawn[3:]] == [red, "#1f77b4", "#1f77b4"]
    labels = ax.get_yticklabels()
    assert [t.get_text() for t in labels] == ["t.py::test_bad", "t.py::test_new", "t.py::test_ok"]
    assert labels[0].get_color() == red
    assert labels[1].get_fontstyle() == "italic"
    assert ax.get_title().endswith("(1 regressed)")
    # Values are written out (a score that fell to 0 draws no bar); the new test has none.
    assert [t.get_text() for t in ax.texts] == ["0.30 (-0.60)", "0.85 (+0.05)"]
    assert ax.texts[0].get_color() == red
    # The current bars carry their 95% intervals as error bars.
    (current_bars,) = [c for c in ax.containers if isinstance(c, BarContainer) and c.errorbar]
    assert current_bars.errorbar is not None
    (segments,) = current_bars.errorbar.lines[2]
    assert segments.get_segments()[0][:, 0].tolist() == pytest.approx([0.2, 0.4])
    with pytest.raises(ConfigError, match="'kind'"):
        plots.plot_report_comparison(_comparison().drop(columns="kind"))


def test_report_trend_one_line_per_test_with_gaps() -> None:
    reports = pd.DataFrame(
        {
            "run": ["c1", "c1", "c2", "c3", "c3"],
            "nodeid": ["a", "b", "a", "a", "b"],
            "score": [0.5, 0.9, 0.6, 0.7, 0.8],
        }
    )
    ax = plots.plot_report_trend(reports).axes[0]
    lines = {line.get_label(): np.asarray(line.get_ydata()) for line in ax.get_lines()}
    assert lines["a"].tolist() == [0.5, 0.6, 0.7]
    assert np.isnan(lines["b"][1])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["c1", "c2", "c3"]
    assert ax.get_ylabel() == "score"


def test_cost_per_round_bars(optimization: OptimizationResult) -> None:
    fig = plots.plot_cost_per_round(optimization)
    calls_ax, tokens_ax = fig.axes
    # From rounds_dataframe(): what the optimizer sent, rewrite requests included.
    assert [b.get_height() for b in bars(calls_ax)] == [2, 5, 0]
    assert [b.get_height() for b in bars(tokens_ax)] == [21, 60, 0]
    assert (calls_ax.get_ylabel(), tokens_ax.get_ylabel()) == ("calls", "tokens")
    assert "7 calls, 81 tokens" in fig.get_suptitle()
    direct = plots.plot_cost_per_round(
        pd.DataFrame({"round": [1, 1, 2], "calls": [1, 2, 3], "tokens": [5, 5, 7]})
    )
    assert [b.get_height() for b in bars(direct.axes[0])] == [3, 3]
    with pytest.raises(ConfigError, match="'calls'"):
        plots.plot_cost_per_round(pd.DataFrame({"round": [1], "tokens": [5]}))


def test_to_png_is_a_png() -> None:
    assert plots.to_png(plots.plot_score_progression([0.5])).startswith(b"\x89PNG")


def test_norm_checks_matrix_counts_violations() -> None:
    rows = [
        ("delete_data", "delete_data", False, "prohibition", "delete_*", "", "", 5, "r"),
        ("drop_table", "drop_table", False, "prohibition", "drop_*", "", "", 5, "r"),
        ("read_data", "read_data", True, None, None, None, None, None, None),
        ("agent", "delete_data", False, "prohibition", "delete_*", "", "", 5, "r"),
        ("agent", "delete_data", False, "prohibition", "delete_*", "", "", 5, "r"),
        ("agent", "log_access", False, "obligation", "log_access", "", "", 1, "r"),
    ]
    checks = pd.DataFrame(rows, columns=list(frames.NORM_CHECK_COLUMNS))
    ax = plots.plot_norm_checks(checks).axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == [
        "prohibition: delete_*",
        "prohibition: drop_*",
        "obligation: log_access",
    ]
    assert [t.get_text() for t in ax.get_yticklabels()] == [
        "delete_data",
        "drop_table",
        "read_data",
        "agent",
    ]
    violated = np.asarray(ax.get_images()[0].get_array())
    assert violated.astype(int).tolist() == [[1, 0, 0], [0, 1, 0], [0, 0, 0], [1, 0, 1]]
    assert "2 violations" in [t.get_text() for t in ax.texts]
    clean = checks[checks["allowed"]]
    assert [t.get_text() for t in plots.plot_norm_checks(clean).axes[0].texts] == ["ok"]


def test_long_test_names_are_shortened_on_the_axis() -> None:
    long_id = "tests/prompts/test_support.py::test_reply_quotes_the_order[" + "x" * 60 + "]"
    report = pd.DataFrame(
        {"nodeid": [long_id, "t.py::b"], "status": ["passed", "failed"], "score": [0.9, 0.2]}
    )
    fig = plots.plot_report_scores(report)
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels[1] == "t.py::b"
    assert labels[0].startswith("…")
    assert len(labels[0]) <= 36
    assert long_id.endswith(labels[0][1:])


def test_confusion_plot_has_a_panel_per_prompt_with_counts() -> None:
    from tnsai_eval.optimizer import PromptOptimizer, TestCase
    from tnsai_eval.plots import plot_confusion
    from tnsai_eval.testing import ScriptedLLM

    labels = ["yes", "no"]
    llm = ScriptedLLM(rules=[(r"Be brief", "yes")], default="hmm")
    result = PromptOptimizer(
        llm, candidate_strategies=["concise"], rewrite=False, labels=labels
    ).optimize("Q?", [TestCase(f"q{i}", labels[i % 2]) for i in range(20)])
    fig = plot_confusion(result)
    panels = [ax for ax in fig.axes if ax.get_title()]
    assert [ax.get_title() for ax in panels] == ["initial prompt", "best prompt"]
    best = panels[1]
    assert [t.get_text() for t in best.get_xticklabels()] == ["yes", "no", "(none)"]
    counts = [t.get_text() for t in best.texts]
    assert counts == ["3", "0", "0", "3", "0", "0"]  # 6 held out, all answered "yes"
