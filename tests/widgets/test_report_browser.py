"""``ReportBrowser`` as someone uses it (issue 34, the user journey).

Its comparison table shows deltas rounded (``-0.150``, not
``-0.15000000000000002``), and loading one more report keeps the baseline
chosen before, as long as that run is still loaded.
"""

from __future__ import annotations

from pathlib import Path

from tests.frames.conftest import save_report
from tnsai_eval.widgets import ReportBrowser


def test_deltas_are_rounded_in_the_table(tmp_path: Path) -> None:
    old = save_report(tmp_path / "main.json", {"t::a": 0.85})
    new = save_report(tmp_path / "branch.json", {"t::a": 0.7})
    browser = ReportBrowser([old, new], baseline="main")
    table = browser.table.value
    assert "<td>-0.150</td>" in table
    assert "0.15000000000000002" not in table
    assert "0.1499999" not in table


def test_loading_another_report_keeps_the_chosen_baseline(tmp_path: Path) -> None:
    main = save_report(tmp_path / "main.json", {"t::a": 0.9})
    branch = save_report(tmp_path / "branch.json", {"t::a": 0.4})
    browser = ReportBrowser([main, branch])
    browser.baseline.value = "main"
    later = save_report(tmp_path / "later.json", {"t::a": 0.5})
    browser.paths_box.value = "\n".join(map(str, (main, branch, later)))
    browser.load_button.click()
    assert browser.current_run == "later"
    assert browser.baseline.value == "main"  # was reset to "(none)"
    assert browser.comparison is not None
    assert "against <code>main</code>" in browser.status.value
    # A baseline no longer loaded is dropped, not kept by mistake.
    browser.paths_box.value = "\n".join(map(str, (branch, later)))
    browser.load_button.click()
    assert browser.baseline.value == "(none)"
