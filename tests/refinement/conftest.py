"""Fixtures for the refinement tests."""

from __future__ import annotations

import contextlib
import os
import shlex
import sys
import time
from pathlib import Path

import pytest

#: ``python -m py_compile $OUTPUT`` with this interpreter (quoted: paths may have spaces).
PY_COMPILE = f"{shlex.quote(sys.executable)} -m py_compile $OUTPUT"


def process_gone(pid: int, *, wait_s: float = 5.0) -> bool:
    """True once ``pid`` no longer runs (gone, or a zombie awaiting its reaper)."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state in ("Z", "X"):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    """A file that hostile outputs try to create; it must never exist."""
    return tmp_path / "pwned"


@pytest.fixture
def kill_leftovers():  # type: ignore[no-untyped-def]
    """Pids a test records; killed afterwards in case the code under test failed."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, 9)
