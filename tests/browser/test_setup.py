"""Without Chromium the browser test fails and says what to install; it never skips."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_missing_chromium_fails_the_browser_test_with_what_to_install(tmp_path: Path) -> None:
    missing = tmp_path / "no-chromium-here"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:xdist",
            "-p",
            "no:cacheprovider",
            "-q",
            "tests/browser/test_notebooks.py::test_notebook_runs_and_its_widgets_respond[01_quickstart]",
        ],
        cwd=ROOT,
        env={**os.environ, "TNSAI_CHROMIUM": str(missing)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1, done.stdout[-2000:]
    assert f"Chromium not found at {missing}" in done.stdout
    assert "apt-get install chromium" in done.stdout
    assert "1 error" in done.stdout
    assert "skipped" not in done.stdout
