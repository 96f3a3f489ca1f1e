"""A prompt file is stored in the report relative to pytest's rootdir, never as a machine path."""

from __future__ import annotations

import pytest

from tests.plugin.conftest import SCRIPTED_CONFTEST, dedent, read_json

TEST_FILE = """
from pathlib import Path

# The natural way to name a prompt beside the test: an absolute path from __file__.
PROMPT = Path(__file__).resolve().parent / "prompts" / "capitals.txt"


def test_capitals(evaluate_prompt):
    evaluate_prompt(PROMPT, [("capital of France", "Paris")])
"""


def test_an_absolute_prompt_path_is_stored_relative_to_the_rootdir(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(SCRIPTED_CONFTEST)
    pytester.makeini("[pytest]\n")
    (pytester.path / "prompts").mkdir()
    (pytester.path / "prompts" / "capitals.txt").write_text("Name the capital.", encoding="utf-8")
    pytester.makepyfile(test_capitals=dedent(TEST_FILE))
    result = pytester.runpytest_inprocess("--tnsai-report", "report.json")
    result.assert_outcomes(passed=1)
    report = read_json(pytester.path / "report.json")
    assert report["tests"][0]["prompts"][0]["file"] == "prompts/capitals.txt"
    assert str(pytester.path) not in (pytester.path / "report.json").read_text(encoding="utf-8")
