"""``atomic_write_text``: the one atomic file write (reports and response stores use it)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from tnsai_eval._util.files import atomic_write_text
from tnsai_eval.reports import Report


def test_writes_replace_whole_files_with_shared_permissions(tmp_path: Path) -> None:
    target = atomic_write_text(tmp_path / "sub" / "a.json", "first")
    atomic_write_text(target, "second")
    assert target.read_text(encoding="utf-8") == "second"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert sorted(p.name for p in target.parent.iterdir()) == ["a.json"]


def test_a_failed_write_leaves_no_temp_file(tmp_path: Path) -> None:
    blocked = tmp_path / "report.json"
    blocked.mkdir()  # os.replace cannot put a file over a directory
    with pytest.raises(IsADirectoryError):
        atomic_write_text(blocked, "{}")
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]


def test_report_save_leaves_no_temp_file_on_failure(tmp_path: Path) -> None:
    # Report.save used to write .report.json.tmp<pid> and leave it behind when
    # the final rename failed.
    blocked = tmp_path / "report.json"
    blocked.mkdir()
    with pytest.raises(IsADirectoryError):
        Report().save(blocked)
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]
