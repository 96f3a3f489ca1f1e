"""``evaluate_prompt`` in a user's journey: cases without ``expected``, and a progress bar.

A long ``evaluate_prompt`` shows a tqdm bar under the running test on a
terminal (here a real pseudo-terminal around a pytest subprocess), past
pytest's capturing, as ``tnsai-eval eval`` and ``optimize`` do on stderr; a
run whose output is not a terminal (CI logs, pytester) shows none.
"""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
from pathlib import Path

import pytest

from tests.plugin.conftest import SCRIPTED_CONFTEST

SUITE = """
class Short:
    # Scores the reply's length alone: it never reads an expected answer.
    def evaluate(self, actual, expected):
        return float(len(actual.split()) <= 5)

CASES = [{"input": f"Write a haiku about autumn, number {i}."} for i in range(6)]

def test_haiku(evaluate_prompt):
    result = evaluate_prompt("Be brief.", CASES, evaluator=Short(), min_score=1.0)
    assert [c.expected for c in result.cases] == [""] * 6

def test_needs_expected(evaluate_prompt):
    evaluate_prompt("Be brief.", CASES)
"""


def _suite(folder: Path) -> None:
    (folder / "conftest.py").write_text(SCRIPTED_CONFTEST, encoding="utf-8")
    (folder / "test_journey.py").write_text(SUITE, encoding="utf-8")


def _in_a_terminal(folder: Path, *args: str) -> tuple[int, str]:
    """Run pytest with its stdout and stderr on a pseudo-terminal; its exit code and output."""
    leader, follower = pty.openpty()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TNSAI_", "PYTEST_"))}
    env.update(COLUMNS="120", TERM="xterm")
    process = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", *args],
        cwd=folder, env=env, stdin=subprocess.DEVNULL, stdout=follower, stderr=follower,
    )  # fmt: skip
    os.close(follower)
    chunks: list[bytes] = []
    while True:
        ready, _, _ = select.select([leader], [], [], 60)
        if not ready:
            process.kill()
            break
        try:
            data = os.read(leader, 65536)
        except OSError:  # the follower side closed: the process ended
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    return process.wait(timeout=60), b"".join(chunks).decode("utf-8", "replace")


def test_a_terminal_shows_a_bar_per_evaluate_prompt(tmp_path: Path) -> None:
    _suite(tmp_path)
    code, output = _in_a_terminal(tmp_path, "test_journey.py::test_haiku")
    assert code == 0, output
    assert "test_haiku: score:" in output  # the bar's label: the test and its metric
    assert "0/6" in output
    assert "case" in output


def test_no_terminal_no_bar_and_cases_without_expected_score(scripted: pytest.Pytester) -> None:
    scripted.makepyfile(test_journey=SUITE)
    result = scripted.runpytest_inprocess("-rA")
    result.assert_outcomes(passed=1, failed=1)
    output = result.stdout.str() + result.stderr.str()
    assert "test_haiku: score" not in output  # pytester's output is not a terminal
    # An evaluator that compares with the expected answer refuses the cases up front.
    result.stdout.fnmatch_lines(["*6 case(s) have no expected answer*DefaultPromptEvaluator()*"])
