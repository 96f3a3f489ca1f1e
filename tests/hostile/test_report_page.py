"""``tnsai-eval report --html`` on hostile reports: a page every time, nothing leaked.

Two ``$`` in a test id (matplotlib's mathtext), a score outside its own
interval (a negative error bar), a lone surrogate in a case, keys in ids and
the configuration, and a run of 2,500 tests (the scores figure is capped).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from matplotlib.patches import Rectangle

from tests.hostile.conftest import API_KEY
from tnsai_eval.cli import main
from tnsai_eval.frames import load_report
from tnsai_eval.plots import plot_report_scores, render_html
from tnsai_eval.reports import CaseRecord, MetricStats, Report, TestStatus, TrackedTest

pytestmark = pytest.mark.usefixtures("secret_env")


def _test(
    nodeid: str, score: float, case_scores: tuple[float, ...] = (), text: str = "in"
) -> TrackedTest:
    cases = tuple(
        CaseRecord(f"c{i}", text, "out", output=text, score=s, passed=s >= 0.5)
        for i, s in enumerate(case_scores)
    )
    return TrackedTest(
        nodeid=nodeid,
        status=TestStatus.PASSED,
        metrics={"score": MetricStats("score", (score,))},
        cases=cases,
    )


def _page(tmp_path: Path, report: Report, capsys: pytest.CaptureFixture[str]) -> str:
    path = tmp_path / "r.json"
    path.write_text(report.to_json(), encoding="utf-8")
    code = main(["report", str(path), "--html", str(tmp_path / "page.html")])
    assert code == 0, capsys.readouterr().err
    return (tmp_path / "page.html").read_text(encoding="utf-8")


def test_dollars_in_a_test_id_are_not_mathtext(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = _page(tmp_path, Report(tests=(_test("t.py::test_env[$A_$B]", 0.5),)), capsys)
    assert "test_env[$A_$B]" in page  # in the table, as written


def test_a_score_outside_its_interval_draws(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The test recorded its own score (0.0) after cases that all scored 1.0.
    report = Report(tests=(_test("t.py::test_own", 0.0, (1.0, 1.0, 1.0)),))
    assert "t.py::test_own" in _page(tmp_path, report, capsys)


def test_a_lone_surrogate_in_a_case_does_not_break_the_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = Report(tests=(_test("t.py::test_s", 0.5, (0.0, 1.0), text="bad \ud800 text"),))
    assert "bad \ufffd text" in _page(tmp_path, report, capsys)


def test_keys_in_ids_and_config_never_reach_the_page() -> None:
    report = Report(
        tests=(_test(f"t.py::test[{API_KEY}]", 0.5, (1.0, 0.0)),),
        config={"model": API_KEY},
    )
    page = render_html(report)
    assert API_KEY not in page
    assert "t.py::test[***]" in page


def test_the_scores_figure_of_2500_tests_draws_at_most_60_bars() -> None:
    tests = tuple(_test(f"t.py::test_{i:04d}", (i % 100) / 100) for i in range(2500))
    frame = load_report(Report(tests=tests))
    figure = plot_report_scores(frame)
    (axes,) = figure.axes
    assert len(axes.patches) == 60
    assert "60 of 2500" in axes.get_title()
    # The lowest scores are the ones drawn: 25 tests each at 0.00 and 0.01, 10 at 0.02.
    widths = [patch.get_width() for patch in axes.patches if isinstance(patch, Rectangle)]
    assert max(widths) == pytest.approx(0.02)
