"""What the plugin stores and says: prompt paths relative to the rootdir, a dropped score."""

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


DROPPING = """
import os

import pytest

from tnsai_eval.scoring import LabelEvaluator
from tnsai_eval.testing import ScriptedLLM

VERSION = os.environ.get("PROMPT_VERSION", "v1")
RIGHT = {"v1": "[0-6]", "v2": "[0-3]"}  # v2 breaks tickets 4, 5 and 6


@pytest.fixture(scope="session")
def llm():
    return ScriptedLLM(rules=[(rf"\\[{VERSION}\\][\\s\\S]*ticket {RIGHT[VERSION]}$", "billing")],
                       default="shipping")


def test_labels(evaluate_prompt):
    evaluate_prompt(f"Label the ticket. [{VERSION}]",
                    [(f"ticket {i}", "billing") for i in range(12)],
                    evaluator=LabelEvaluator(["billing", "shipping"]))
"""


def test_the_plugin_says_dropped_and_what_the_suite_can_see(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_dropping=DROPPING)
    base = pytester.runpytest_inprocess("--tnsai-report", "base.json")
    base.assert_outcomes(passed=1)
    monkeypatch.setenv("PROMPT_VERSION", "v2")
    result = pytester.runpytest_inprocess("--tnsai-baseline", "base.json", "--tnsai-gate", "paired")
    assert result.ret == pytest.ExitCode.OK  # 3 broken, 0 fixed: p = 0.125, not a regression
    result.stdout.fnmatch_lines(
        [
            "no regressions beyond tolerance 0.05 (gate: paired, alpha 0.05); "
            "1 dropped score(s), not significant",
            "1 dropped score(s): the mean fell beyond the tolerance, but the sign test is not "
            "significant at 0.05 (not failing):",
            "*test_dropping.py::test_labels*score*0.583*0.333*-0.250*0.125",
            "*test_dropping.py::test_labels (score) dropped: 3 flip(s): no split of 3 flips is "
            "significant at alpha 0.05 (it takes at least 5 flips); at the observed rates "
            "(3 broken, 0 fixed of 12) the suite would need 18 common cases",
        ]
    )
