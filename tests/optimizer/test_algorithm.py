"""The original algorithm, call by call, with ScriptedLLM (concurrency=1: calls in send order)."""

from __future__ import annotations

import pytest

from tests.optimizer.conftest import REWRITE_MARK, LengthEvaluator, answer_when, echo_prompt
from tnsai_eval.errors import ConfigError, LLMConnectionError, ServerError
from tnsai_eval.optimizer import PromptOptimizer, PromptStrategy, StopReason, VariantStatus
from tnsai_eval.scoring import TestCase
from tnsai_eval.testing import ScriptedLLM

CONCISE = PromptStrategy.CONCISE.apply("P")
ANSWER_ONLY = PromptStrategy.ANSWER_ONLY.apply("P")


def optimizer(llm: ScriptedLLM, **options: object) -> PromptOptimizer:
    defaults: dict[str, object] = {
        "candidate_strategies": [PromptStrategy.CONCISE, PromptStrategy.ANSWER_ONLY],
        "concurrency": 1,
        "split": None,  # these tests follow the search on every case
    }
    return PromptOptimizer(llm, **(defaults | options))  # type: ignore[arg-type]


def test_one_round_call_by_call(four_cases: list[TestCase], answers: dict[str, str]) -> None:
    llm = ScriptedLLM(fn=answer_when("Be brief", answers))
    result = optimizer(llm).optimize("P", four_cases)

    inputs = ["q1", "q2", "q3", "q4"]
    expected_calls = (
        [f"P\n\n{q}" for q in inputs]  # round 0: the initial prompt, case by case
        + ["<rewrite>"]  # round 1: the rewrite request comes first ...
        + [f"{CONCISE}\n\n{q}" for q in inputs]  # ... then each strategy, in order
        + [f"{ANSWER_ONLY}\n\n{q}" for q in inputs]
        + [f"REWRITTEN\n\n{q}" for q in inputs]  # ... then the model's rewrite
    )
    sent = ["<rewrite>" if p.startswith(REWRITE_MARK) else p for p in llm.prompts]
    assert sent == expected_calls
    for call in llm.calls:
        # A rewrite needs room for a whole instruction: its own token budget.
        rewrite = call.messages[-1].content.startswith(REWRITE_MARK)
        assert call.params == {"temperature": 0.0, "max_tokens": 256 if rewrite else 128}

    # "no idea" vs "a1": no keyword, length 1/2, no phrase -> 0.1
    assert result.initial_score == pytest.approx(0.1)
    assert result.score == 1.0
    assert result.best_prompt == CONCISE
    # A training gain; with one case nothing is held out, so no verdict of "improved".
    assert result.training_improved
    assert not result.was_improved
    assert result.stop_reason is StopReason.TARGET_REACHED
    assert (result.rounds, result.calls, result.failed_calls) == (1, 17, 0)
    assert [(v.strategy, v.status, v.score, v.became_best) for v in result.variants] == [
        ("initial", VariantStatus.SCORED, pytest.approx(0.1), True),
        ("concise", VariantStatus.SCORED, 1.0, True),
        ("answer_only", VariantStatus.SCORED, pytest.approx(0.1), False),
        ("rewrite", VariantStatus.SCORED, pytest.approx(0.1), False),
    ]
    assert [v.parent for v in result.variants] == [None, 0, 0, 0]


def test_rewrite_request_shows_the_failing_cases_and_the_score(
    four_cases: list[TestCase], answers: dict[str, str]
) -> None:
    llm = ScriptedLLM(fn=answer_when("Be brief", answers))
    optimizer(llm).optimize("P", four_cases)
    request = next(p for p in llm.prompts if p.startswith(REWRITE_MARK))
    assert "Current instruction:\nP\n" in request
    assert "Its score (0 to 1): 0.10" in request
    for i in (1, 2, 3, 4):
        assert f"Input: q{i}\nExpected: a{i}\nGot: no idea\nScore: 0.10" in request


def test_a_failing_case_is_left_out_and_counted(answers: dict[str, str]) -> None:
    cases = [TestCase(f"q{i}", f"a{i}") for i in range(1, 5)]

    def reply(messages: list, params: dict) -> str:  # type: ignore[type-arg]
        text = messages[-1].content
        return "a1" if text.endswith("q1") else "no idea"

    llm = ScriptedLLM(rules=[(r"^P\n\nq2$", LLMConnectionError("down"))], fn=reply)
    result = optimizer(
        llm, candidate_strategies=[PromptStrategy.ANSWER_ONLY], rewrite=False, max_iterations=1
    ).optimize("P", cases)

    # q2 is left out of the mean: (1.0 + 0.1 + 0.1) / 3, not / 4
    assert result.initial_score == pytest.approx(1.2 / 3)
    assert result.failed_calls == 1
    assert result.calls == 8
    initial = result.variants[0]
    assert (initial.cases_scored, initial.cases_failed) == (3, 1)
    failed = [r for r in result.case_results if r.error is not None]
    assert [(r.variant, r.index, r.output, r.score) for r in failed] == [(0, 1, None, None)]
    assert "LLMConnectionError" in (failed[0].error or "")
    assert result.stop_reason is StopReason.MAX_ITERATIONS


def test_stop_at_max_iterations_and_duplicates_are_not_rescored(
    four_cases: list[TestCase],
) -> None:
    llm = ScriptedLLM(fn=echo_prompt)
    result = optimizer(llm, evaluator=LengthEvaluator(), max_iterations=2).optimize("P", four_cases)
    # Round 1: ANSWER_ONLY makes the longest prompt, so it wins. Round 2:
    # CONCISE on top of it wins; ANSWER_ONLY again is the best itself: a duplicate.
    assert result.stop_reason is StopReason.MAX_ITERATIONS
    assert result.rounds == 2
    assert result.best_prompt == PromptStrategy.CONCISE.apply(ANSWER_ONLY)
    statuses = [(v.id, v.round, v.strategy, v.status, v.duplicate_of) for v in result.variants]
    assert statuses == [
        (0, 0, "initial", VariantStatus.SCORED, None),
        (1, 1, "concise", VariantStatus.SCORED, None),
        (2, 1, "answer_only", VariantStatus.SCORED, None),
        (3, 2, "concise", VariantStatus.SCORED, None),
        (4, 2, "answer_only", VariantStatus.DUPLICATE, 2),
    ]
    # initial 4 + rewrite + 2 x 4 + rewrite + 4 (the duplicate costs nothing)
    assert result.calls == 18
    assert [r.best_variant for r in result.history] == [0, 2, 3]
    assert not any(r.variant == 4 for r in result.case_results)


def test_stop_when_three_round_bests_are_within_a_hundredth(four_cases: list[TestCase]) -> None:
    llm = ScriptedLLM(fn=echo_prompt)
    # Every reply is capped at the initial score, so nothing ever improves.
    result = optimizer(llm, evaluator=LengthEvaluator(cap=0.001)).optimize("P", four_cases)
    assert result.stop_reason is StopReason.CONVERGED
    assert result.rounds == 3
    assert [r.best_score for r in result.history] == [0.001] * 4
    # Rounds 2 and 3 make the same variants as round 1: duplicates, no case
    # call. Round 2's rewrite request also lists round 1's scored variants:
    # one new call (whose empty reply adds no variant); round 3's is the same
    # request again, answered from the run's cache.
    assert result.calls == 4 + 1 + 8 + 1
    assert [r.calls for r in result.history] == [4, 9, 1, 0]
    assert [v.status for v in result.variants[3:]] == [VariantStatus.DUPLICATE] * 4


def test_an_initial_prompt_at_target_runs_no_round() -> None:
    llm = ScriptedLLM(default="Paris")
    result = optimizer(llm).optimize("Capital?", [TestCase("France", "Paris")])
    assert (result.rounds, result.calls, result.stop_reason) == (0, 1, StopReason.TARGET_REACHED)
    assert not result.was_improved
    assert not result.training_improved
    assert result.best_prompt == "Capital?"


def test_ties_keep_the_earlier_variant(four_cases: list[TestCase], answers: dict[str, str]) -> None:
    llm = ScriptedLLM(fn=answer_when("answer", answers))  # both suffixes contain "answer"
    result = optimizer(llm, rewrite=False).optimize("P", four_cases)
    assert result.best_prompt == CONCISE
    assert [v.became_best for v in result.variants] == [True, True, False]


def test_same_input_twice_is_sent_once(answers: dict[str, str]) -> None:
    cases = [TestCase("q1", "a1"), TestCase("q1", "a1"), TestCase("q2", "a2")]
    llm = ScriptedLLM(fn=answer_when("never", answers), usage="estimate")
    result = optimizer(llm, max_iterations=1, rewrite=False).optimize("P", cases)
    initial_rows = [r for r in result.case_results if r.variant == 0]
    assert [r.cached for r in initial_rows] == [False, True, False]
    assert initial_rows[1].tokens == 0
    assert initial_rows[0].tokens > 0
    assert result.calls == 2 + 2 + 2
    assert llm.prompts.count("P\n\nq1") == 1


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_iterations": 0}, "max_iterations"),
        ({"target_score": 1.5}, "target_score"),
        ({"search": "greedy"}, "search"),
        ({"concurrency": 0}, "concurrency"),
        ({"max_calls": -1}, "max_calls"),
        ({"max_seconds": 0}, "max_seconds"),
        ({"template": "{prompt}"}, "template"),
        ({"candidate_strategies": ["telepathy"]}, "telepathy"),
        ({"template": "{prompt} {lang}: {input}"}, r"\{lang\}"),
        ({"few_shot_examples": -1}, "few_shot_examples must be >= 0, got -1"),
        ({"call_params": [("temperature", 0)]}, "call_params must be a mapping"),
        ({"candidate_strategies": [], "rewrite": False}, "nothing to try"),
    ],
)
def test_bad_options_name_the_value(options: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        PromptOptimizer(ScriptedLLM(), **options)  # type: ignore[arg-type]


def test_bad_cases_are_rejected() -> None:
    opt = PromptOptimizer(ScriptedLLM(default="x"), split=None)
    with pytest.raises(ConfigError, match="at least one"):
        opt.optimize("P", [])
    with pytest.raises(ConfigError, match=r"cases\[1\] must be a TestCase"):
        opt.optimize("P", [TestCase("a", "b"), ("c", "d")])  # type: ignore[list-item]


def test_an_evaluator_out_of_range_fails_its_case_and_the_run_stops(
    four_cases: list[TestCase],
) -> None:
    class Broken:
        def evaluate(self, actual: str, expected: str) -> float:
            return 2.0

    llm = ScriptedLLM(default="x")
    result = PromptOptimizer(llm, split=None, evaluator=Broken()).optimize("P", four_cases)
    assert result.stop_reason is StopReason.ALL_CASES_FAILED
    assert len(llm.calls) == 4  # the initial prompt only: nothing left to improve on
    errors = result.to_dataframe()["error"].tolist()
    assert len(errors) == 4
    assert all("returned 2.0" in e and "expected a float in [0, 1]" in e for e in errors)


def test_an_evaluator_that_raises_on_one_case_loses_only_that_case(
    four_cases: list[TestCase],
) -> None:
    class Picky:
        def evaluate(self, actual: str, expected: str) -> float:
            if expected == four_cases[1].expected:
                raise ValueError("cannot grade this one")
            return 1.0 if actual == expected else 0.0

    answers = {c.input: c.expected for c in four_cases}
    llm = ScriptedLLM(fn=lambda messages, params: answers[messages[-1].content.split("\n\n")[-1]])
    result = PromptOptimizer(llm, split=None, evaluator=Picky(), max_iterations=1).optimize(
        "P", four_cases
    )
    initial = result.to_dataframe().query("round == 0")
    assert initial["score"].isna().sum() == 1
    assert "ValueError: cannot grade this one" in initial["error"].dropna().iloc[0]
    assert result.initial_score == 1.0  # the three graded cases keep their scores


def test_every_call_failing_stops_after_the_initial_prompt(four_cases: list[TestCase]) -> None:
    llm = ScriptedLLM(rules=[(r"", ServerError("down", status=503))])  # every call fails
    result = PromptOptimizer(llm, split=None).optimize("P", four_cases)
    assert result.stop_reason is StopReason.ALL_CASES_FAILED
    assert len(llm.calls) == 4


def test_estimate_calls_is_the_full_run(four_cases: list[TestCase]) -> None:
    opt = optimizer(ScriptedLLM())
    # 4 initial + round 1 (2 strategies x 4 + rewrite + its 4) + 4 more such rounds
    assert opt.estimate_calls("P", four_cases) == 4 + (8 + 5) * 5
    assert opt.estimate_calls("P", four_cases, validation_cases=four_cases[:2]) == 69 + 4
    # a strategy already applied costs nothing in round 1
    assert opt.estimate_calls(CONCISE, four_cases) == 69 - 4
    assert optimizer(ScriptedLLM(), max_calls=10).estimate_calls("P", four_cases) == 10
    no_rewrite = optimizer(ScriptedLLM(), rewrite=False, max_iterations=1)
    assert no_rewrite.estimate_calls("P", [*four_cases, four_cases[0]]) == 4 + 8


def test_suggest_strategies_table() -> None:
    s = PromptStrategy
    assert PromptOptimizer.suggest_strategies("Analyze the logs") == [
        s.CHAIN_OF_THOUGHT,
        s.STRUCTURED_THINKING,
    ]
    assert PromptOptimizer.suggest_strategies("classify sentiment, briefly") == [
        s.FEW_SHOT,
        s.CONCISE,  # "briefly" starts with "brief"
        s.ANSWER_ONLY,
    ]
    assert PromptOptimizer.suggest_strategies("Verify the math") == [
        s.CHAIN_OF_THOUGHT,
        s.CHAIN_OF_VERIFICATION,
        s.CONFIDENCE_WEIGHTED,
    ]
    assert PromptOptimizer.suggest_strategies("say hello") == [s.CHAIN_OF_THOUGHT]


def test_a_judge_scores_cases_and_its_failures_are_left_out() -> None:
    from tnsai_eval.scoring import LLMJudgeEvaluator

    judge_llm = ScriptedLLM(
        rules=[(r"Answer: wrong-2", LLMConnectionError("judge down"))], default="SCORE: 40"
    )
    model = ScriptedLLM(fn=lambda messages, params: f"wrong-{messages[-1].content[-1]}")
    cases = [TestCase(f"q{i}", f"a{i}") for i in range(1, 4)]
    result = PromptOptimizer(
        model,
        split=None,
        evaluator=LLMJudgeEvaluator(judge_llm),
        candidate_strategies=[PromptStrategy.CONCISE],
        rewrite=False,
        max_iterations=1,
        concurrency=1,
    ).optimize("P", cases)
    initial = [r for r in result.case_results if r.variant == 0]
    assert [r.score for r in initial] == [0.4, None, 0.4]
    assert "evaluator LLMConnectionError" in (initial[1].error or "")
    assert initial[1].output == "wrong-2"
    assert result.initial_score == pytest.approx(0.4)
    # The model's calls all succeeded: only the judge failed.
    assert result.failed_calls == 0
    assert result.variants[0].cases_failed == 1


def test_pytest_does_not_collect_test_case(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        from tnsai_eval.optimizer import TestCase

        def test_uses_cases():
            assert TestCase("a", "b").expected == "b"
        """
    )
    result = pytester.runpytest("-W", "error::pytest.PytestCollectionWarning")
    result.assert_outcomes(passed=1)


def test_options_after_llm_are_keyword_only() -> None:
    with pytest.raises(TypeError, match="positional"):
        PromptOptimizer(ScriptedLLM(), 5)  # type: ignore[call-arg, arg-type]


def test_suggest_strategies_names_a_non_string() -> None:
    with pytest.raises(ConfigError, match="task_description must be a str, got NoneType"):
        PromptOptimizer.suggest_strategies(None)  # type: ignore[arg-type]
