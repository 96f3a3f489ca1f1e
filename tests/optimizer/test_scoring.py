"""``score_prompt``: one prompt on a set of cases, on the optimizer's own engine."""

from __future__ import annotations

import asyncio

import pytest

from tnsai_eval.errors import ConfigError, LLMConnectionError
from tnsai_eval.evaluation import score_prompt
from tnsai_eval.optimizer import CaseRecord, PromptOptimizer, PromptStrategy, StopReason
from tnsai_eval.scoring import ExactMatchEvaluator, TestCase
from tnsai_eval.testing import ScriptedLLM

CASES = [TestCase("France", "Paris"), TestCase("Italy", "Rome"), TestCase("Spain", "Madrid")]
RULES = [(r"France", "Paris"), (r"Italy", "Rome"), (r"Spain", "Lisbon")]


class RaisesOn:
    """An evaluator that raises on one expected answer and matches exactly otherwise."""

    def __init__(self, expected: str) -> None:
        self.expected = expected

    def evaluate(self, actual: str, expected: str) -> float:
        if expected == self.expected:
            raise ValueError(f"cannot judge {expected}")
        return 1.0 if actual == expected else 0.0


def test_scores_are_the_optimizers_scores() -> None:
    # The same engine, template and parameters: the initial prompt's score in an
    # optimizer run is what score_prompt says of it.
    evaluator = ExactMatchEvaluator()
    result = score_prompt(ScriptedLLM(rules=RULES), "Capital?", CASES, evaluator=evaluator)
    optimizer = PromptOptimizer(
        ScriptedLLM(rules=RULES),
        evaluator=evaluator,
        candidate_strategies=[PromptStrategy.CONCISE],
        rewrite=False,
        max_iterations=1,
        split=None,  # score_prompt scores every case: so must the optimizer here
    )
    run = optimizer.optimize("Capital?", CASES)
    assert result.scores == (1.0, 1.0, 0.0)
    assert result.mean_score == pytest.approx(run.initial_score)
    initial = [row for row in run.case_results if row.variant == 0]
    assert [c.output for c in result.cases] == [row.output for row in initial]


def test_an_evaluator_raising_on_one_case_is_recorded_for_that_case() -> None:
    result = score_prompt(ScriptedLLM(rules=RULES), "Capital?", CASES, evaluator=RaisesOn("Rome"))
    paris, rome, madrid = result.cases
    assert (paris.state, paris.score) == ("scored", 1.0)
    assert (rome.state, rome.score, rome.output) == ("error", None, "Rome")
    assert rome.error_type == "ValueError"
    assert rome.error == "evaluator ValueError: cannot judge Rome"
    assert (madrid.state, madrid.score) == ("scored", 0.0)
    assert result.errors == (rome,)


def test_an_evaluator_out_of_range_is_an_error_of_that_case() -> None:
    class TooHigh:
        def evaluate(self, actual: str, expected: str) -> float:
            return 2.0

    (case,) = score_prompt(ScriptedLLM(default="x"), "p", CASES[:1], evaluator=TooHigh()).cases
    assert case.error_type == "ConfigError"
    assert case.error is not None
    assert "returned 2.0" in case.error


def test_a_failed_call_is_recorded_with_its_type() -> None:
    llm = ScriptedLLM(rules=RULES)
    llm.add_replies(LLMConnectionError("refused"))
    result = score_prompt(llm, "Capital?", CASES, concurrency=1)
    first = result.cases[0]
    assert (first.state, first.output, first.error_type) == ("error", None, "LLMConnectionError")
    assert first.error is not None
    assert first.error.startswith("LLMConnectionError: refused")
    assert result.cases[1].score == 1.0


def test_each_case_carries_what_a_report_needs() -> None:
    seen: list[CaseRecord] = []
    llm = ScriptedLLM(rules=RULES, usage="estimate")
    result = score_prompt(llm, "Capital?", CASES, on_case=seen.append)
    assert sorted(c.index for c in seen) == [0, 1, 2]
    assert [c.index for c in result.cases] == [0, 1, 2]
    case = result.cases[0]
    assert (case.input, case.expected, case.output) == ("France", "Paris", "Paris")
    assert case.tokens > 0
    assert case.latency_s >= 0.0
    assert case.cached is False
    assert result.tokens == sum(c.tokens for c in result.cases)


def test_a_repeated_case_reuses_the_first_reply() -> None:
    llm = ScriptedLLM(rules=RULES)
    result = score_prompt(llm, "Capital?", [CASES[0], CASES[0]])
    assert result.calls == 1
    assert len(llm.calls) == 1
    assert [c.cached for c in result.cases] == [False, True]
    assert result.scores == (1.0, 1.0)


def test_max_calls_leaves_the_other_cases_not_run() -> None:
    result = score_prompt(ScriptedLLM(rules=RULES), "Capital?", CASES, max_calls=1, concurrency=1)
    # Not run (budget), never "unrecorded": the store has nothing to do with it.
    assert [c.state for c in result.cases] == ["scored", "not_run", "not_run"]
    assert (len(result.not_run), result.unrecorded) == (2, ())
    assert result.calls == 1
    assert result.stop_reason is StopReason.MAX_CALLS
    assert result.errors == ()
    assert result.scores == (1.0,)


def test_a_replay_miss_is_unrecorded_by_its_type_not_its_name() -> None:
    class ReplayMissError(Exception):  # same name, another class: an ordinary error
        pass

    class Missing:
        def chat(self, messages: object, **params: object) -> None:
            raise ReplayMissError("not the store's")

    from tnsai_eval.errors import ReplayMissError as Real

    class Store:
        def chat(self, messages: object, **params: object) -> None:
            raise Real("no recorded response", model="m", attempts=0)

    impostor = score_prompt(Missing(), "Capital?", CASES[:1])  # type: ignore[arg-type]
    real = score_prompt(Store(), "Capital?", CASES[:1])  # type: ignore[arg-type]
    assert [c.state for c in impostor.cases] == ["error"]
    assert [c.state for c in real.cases] == ["unrecorded"]


def test_a_shared_budget_bounds_the_calls_too() -> None:
    from tnsai_eval.llm import CallBudget

    shared = CallBudget(2)
    llm = ScriptedLLM(rules=RULES)
    result = score_prompt(llm, "Capital?", CASES, budget=shared, concurrency=3)
    assert [c.state.value for c in result.cases].count("not_run") == 1
    assert shared.spent == result.calls == len(llm.calls) == 2


def test_works_inside_a_running_event_loop() -> None:
    async def in_a_notebook() -> float:
        return score_prompt(ScriptedLLM(rules=RULES), "Capital?", CASES[:1]).mean_score

    assert asyncio.run(in_a_notebook()) == 1.0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"prompt": "  "}, "prompt must be a non-empty str, got '  '"),
        ({"cases": []}, "cases must hold at least one TestCase, got none"),
        ({"cases": [("a", "b")]}, "cases[0] must be a TestCase, got tuple"),
        ({"template": "{prompt}"}, "template must contain {prompt} and {input}"),
        ({"concurrency": 0}, "concurrency must be an int >= 1, got 0"),
        ({"max_calls": -1}, "max_calls must be an int >= 0 or None, got -1"),
        # A str crashed with TypeError (comparing it with 0) before the one check.
        ({"max_calls": "3"}, "max_calls must be an int >= 0 or None, got '3'"),
        ({"evaluator": object()}, "evaluator must have evaluate(actual, expected)"),
    ],
)
def test_bad_arguments_are_named(kwargs: dict[str, object], message: str) -> None:
    arguments: dict[str, object] = {"prompt": "Capital?", "cases": CASES[:1], **kwargs}
    with pytest.raises(ConfigError) as info:
        score_prompt(ScriptedLLM(default="x"), **arguments)  # type: ignore[arg-type]
    assert message in str(info.value)
