"""A progress bar under the running test while ``evaluate_prompt`` scores its cases.

``tnsai-eval eval`` and ``optimize`` show a tqdm.auto bar on stderr; inside
pytest, stderr is captured while a test runs, so a bar written there would
only appear with the test's output after it ended. This one is written to the
terminal itself, with pytest's capturing suspended for each write (the
capture manager's ``global_and_fixture_disabled``, as pytest's own live
logging does), on a line of its own below the test's, and cleared when the
cases are done. It is shown only where someone watches: pytest's terminal is
a TTY, the run is not quiet (``-q``) and not an xdist worker; in CI logs, in
pytester runs and in captured output there is no bar at all.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, Protocol

import pytest

from tnsai_eval._util.text import shown_label

__all__ = ["case_progress"]


class _Capture(Protocol):
    def global_and_fixture_disabled(self) -> AbstractContextManager[None]: ...


class _Terminal:
    """A file for tqdm: each write reaches the terminal past pytest's capturing."""

    def __init__(self, capture: _Capture | None) -> None:
        self._capture = capture
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        # The engine may report cases from its own thread: one write at a time.
        with self._lock, self._suspended():
            sys.stdout.write(text)
            sys.stdout.flush()
        return len(text)

    def flush(self) -> None:
        """Every write is flushed already."""

    def _suspended(self) -> AbstractContextManager[None]:
        return (
            nullcontext() if self._capture is None else self._capture.global_and_fixture_disabled()
        )


def _watched(config: pytest.Config) -> bool:
    terminal: Any = config.pluginmanager.get_plugin("terminalreporter")
    return (
        terminal is not None
        and bool(terminal.isatty())
        and config.get_verbosity() >= 0
        and not hasattr(config, "workerinput")  # an xdist worker: its output is not a terminal
    )


@contextmanager
def case_progress(config: pytest.Config, total: int, label: str) -> Iterator[Callable[[], None]]:
    """A callable to call once per finished case; a bar of ``total`` cases while it is open."""
    if total < 2 or not _watched(config):
        yield lambda: None
        return
    from tqdm.auto import tqdm

    capture: _Capture | None = config.pluginmanager.get_plugin("capturemanager")
    terminal = _Terminal(capture)
    terminal.write("\n")  # below the test's line, which the bar's "\r" would overwrite
    bar = tqdm(total=total, unit="case", desc=shown_label(label), file=terminal, leave=False,
               ncols=100, mininterval=0.2)  # fmt: skip
    lock = threading.Lock()

    def step() -> None:
        with lock:
            bar.update(1)

    try:
        yield step
    finally:
        bar.close()
