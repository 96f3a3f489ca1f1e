from __future__ import annotations

import base64
import re
from pathlib import Path

import numpy as np
import pytest

from tests.frames.conftest import save_report
from tests.plots._axes import bars
from tnsai_eval import plots
from tnsai_eval.cli import main
from tnsai_eval.plots import render_html
from tnsai_eval.reports import load_report


def _save(path: Path, scores: dict[str, float], failed: tuple[str, ...] = ()) -> Path:
    config = {"model": "smollm2"}
    return save_report(path, scores, failed, config=config, calls=3, tokens=120)


def _images(page: str) -> list[bytes]:
    return [base64.b64decode(m) for m in re.findall(r'src="data:image/png;base64,([^"]+)"', page)]


def test_cli_report_html_with_a_baseline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = _save(tmp_path / "old.json", {"t.py::test_a": 0.9, "t.py::test_b": 0.5})
    new = _save(
        tmp_path / "new.json", {"t.py::test_a": 0.2, "t.py::test_b": 0.5}, ("t.py::test_a",)
    )
    out = tmp_path / "site" / "report.html"
    code = main(["report", str(new), "--baseline", str(old), "--html", str(out)])
    assert code == 1  # the regression still fails the command
    assert f"wrote {out}" in capsys.readouterr().out
    page = out.read_text(encoding="utf-8")
    images = _images(page)
    assert len(images) == 2  # baseline vs current, and scores by test
    assert all(image.startswith(b"\x89PNG") for image in images)
    assert "1 regression(s)" in page
    assert re.search(r'<tr class="regressed"><td>t\.py::test_a</td>', page)
    assert re.search(r'<tr class="failed"><td>t\.py::test_a</td>', page)
    assert "model: smollm2" in page
    # Self-contained: nothing is fetched from elsewhere.
    assert not re.search(r'(src|href)="(?!data:)', page)


def test_html_without_a_baseline_escapes_test_names(tmp_path: Path) -> None:
    report = _save(tmp_path / "r.json", {"t.py::test_x[<script>]": 0.75})
    page = render_html(report)
    assert "test_x[<script>]" not in page
    assert "test_x[&lt;script&gt;]" in page
    assert "Against the baseline" not in page
    assert len(_images(page)) == 1
    assert "1 test(s), 0 failed · 3 call(s), 120 token(s)" in page


def test_report_scores_plot_bars_and_failures(tmp_path: Path) -> None:
    path = _save(tmp_path / "r.json", {"a": 0.25, "b": 1.0}, failed=("a",))
    ax = plots.plot_report_scores(load_report(path)).axes[0]
    assert [bar.get_width() for bar in bars(ax)] == [0.25, 1.0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "b"]
    assert ax.get_yticklabels()[0].get_color() == plots.REGRESSION_COLOR
    assert np.allclose(ax.patches[0].get_facecolor()[:3], (214 / 255, 39 / 255, 40 / 255))
    assert ax.get_title().endswith("(1 failing)")
