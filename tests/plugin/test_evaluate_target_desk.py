"""The support desk data set end to end through pytest: evaluate_target with an agent factory
on the embedded model's committed replies (bench/stores/support_desk), the tools live, no call
to the model; the metrics match bench/README.md's table."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.plugin.conftest import read_json

REPO = Path(__file__).resolve().parents[2]

DESK_TEST = f"""
import sys
sys.path.insert(0, {str(REPO / "datasets")!r})
import make_support_desk as desk
from tnsai_eval.agents import Agent
from tnsai_eval.scoring import NormCompliance, ToolCallMatch

MODES = ("strict", "in_order", "any_order", "superset", "subset")


def test_desk(evaluate_target, llm):
    def factory():
        return Agent(llm, desk.SYSTEM_PROMPT, tools=desk.TOOLS, max_steps=4, learning=False,
                     llm_params={{"temperature": 0.0, "max_tokens": 96}}, send_tool_schemas=True)

    result = evaluate_target(
        factory,
        {str(REPO / "datasets" / "support_desk.jsonl")!r},
        evaluator=[*(ToolCallMatch(mode, "subset") for mode in MODES),
                   NormCompliance(desk.SupportDesk)],
    )
    means = {{name: sum(c.score for c in cases) / len(cases)
              for name, cases in result.metric_cases.items()}}
    print("MEANS", {{name: round(value, 3) for name, value in means.items()}})
    assert result.calls == 0
"""


def test_the_desk_replays_through_evaluate_target(pytester: pytest.Pytester) -> None:
    shutil.copytree(REPO / "bench" / "stores" / "support_desk", pytester.path / "store")
    pytester.makepyfile(test_desk=DESK_TEST)
    done = pytester.runpytest_inprocess(
        "--llm-store=store", "--llm-record=replay", "--tnsai-report=report.json", "-s"
    )
    done.assert_outcomes(passed=1)
    done.stdout.fnmatch_lines(
        [
            "*MEANS {'tool_calls_strict': 0.354, 'tool_calls_in_order': 0.542, "
            "'tool_calls_any_order': 0.354, 'tool_calls_superset': 0.542, "
            "'tool_calls_subset': 0.792, 'norms': 0.875}"
        ]
    )
    test = read_json(pytester.path / "report.json")["tests"][0]
    metrics = {case["metric"] for case in test["cases"]}
    assert metrics == {"score", "score.tool_calls_strict", "score.tool_calls_in_order",
                       "score.tool_calls_any_order", "score.tool_calls_superset",
                       "score.tool_calls_subset", "score.norms"}  # fmt: skip
    assert len(test["cases"]) == 48 * 7
    assert all(case["cached"] for case in test["cases"])
