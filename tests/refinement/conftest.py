"""Fixtures for the refinement tests."""

from __future__ import annotations

import contextlib
import os
import shlex
import sys
from pathlib import Path

import pytest

#: ``python -m py_compile $OUTPUT`` with this interpreter (quoted: paths may have spaces).
PY_COMPILE = f"{shlex.quote(sys.executable)} -m py_compile $OUTPUT"


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
