"""Racing against exhaustive search, budgets, validation, progress, determinism."""

from __future__ import annotations

import asyncio
import hashlib

import pytest

from tests.optimizer.conftest import REWRITE_MARK, JitteryLLM, answer_when, split_message
from tnsai_eval.llm import Usage
from tnsai_eval.optimizer import (
    EventKind,
    OptimizationResult,
    ProgressEvent,
    PromptOptimizer,
    PromptStrategy,
    StopReason,
    VariantStatus,
)
from tnsai_eval.optimizer._run import example_order
from tnsai_eval.scoring import TestCase
from tnsai_eval.testing import ScriptedLLM

S = PromptStrategy
FIVE = [
    S.CHAIN_OF_THOUGHT,
    S.CHAIN_OF_VERIFICATION,
    S.CONFIDENCE_WEIGHTED,
    S.STRUCTURED_THINKING,
    S.CONCISE,
]


def cases(n: int) -> list[TestCase]:
    return [TestCase(f"q{i}", f"a{i}") for i in range(1, n + 1)]


def test_racing_finds_the_same_best_with_fewer_calls_on_many_cases(
    answers: dict[str, str],
) -> None:
    # The initial prompt is right on the odd cases; the four reasoning
    # strategies and the rewrite on none (surely worse, once enough cases are
    # seen); CONCISE on every case (the winner).
    def reply(messages: list, params: dict) -> str:  # type: ignore[type-arg]
        text = messages[-1].content
        if text.startswith(REWRITE_MARK):
            return "REWRITTEN"
        prompt, case_input = split_message(text)
        if "Be brief" in prompt or (prompt == "P" and int(case_input[1:]) % 2):
            return f"a{case_input[1:]}"
        return "no idea"

    results = {}
    for search in ("exhaustive", "racing"):
        results[search] = PromptOptimizer(
            ScriptedLLM(fn=reply),
            split=None,
            candidate_strategies=FIVE,
            search=search,
            concurrency=1,
            max_iterations=1,
        ).optimize("P", cases(64))
    exhaustive, racing = results["exhaustive"], results["racing"]
    assert racing.best_prompt == exhaustive.best_prompt == S.CONCISE.apply("P")
    assert racing.score == exhaustive.score == 1.0
    # exhaustive: 64 initial + rewrite + 6 variants x 64
    assert exhaustive.calls == 64 + 1 + 6 * 64
    # racing: the initial prompt on the first rung (8 cases), the rewrite
    # request, the six challengers on the first rung (6 x 8). CONCISE leads
    # (1.0); the five losers are behind it on every case by the same margin
    # (the default evaluator's partial credit makes the scores continuous, so
    # "auto" takes Student's t): surely worse at 8 cases, at the level each
    # look gets (0.05 over 6 looks). The initial prompt, right on the odd cases,
    # is behind on about half of them: kept at 8 cases, dropped at 12 (+ 4).
    # The winner goes on alone: + 4 + 52.
    assert racing.calls == 8 + 1 + 6 * 8 + 4 + 4 + 52
    assert racing.calls <= 0.6 * exhaustive.calls
    dropped = [v for v in racing.variants if v.status is VariantStatus.DROPPED]
    assert [v.strategy for v in dropped] == ["initial"] + [s.value for s in FIVE[:4]] + ["rewrite"]
    assert [v.cases_scored for v in dropped] == [12] + [8] * 5
    assert all(v.score is None for v in dropped)
    assert (racing.initial_cases, exhaustive.initial_cases) == (12, 64)
    note = racing.history[1].racing_note
    assert note == (
        "racing dropped the starting prompt and 5 challenger(s) "
        "(6 surely worse than the leader by the paired t test)"
    )


def test_racing_compares_on_the_same_cases(answers: dict[str, str]) -> None:
    def reply(messages: list, params: dict) -> str:  # type: ignore[type-arg]
        text = messages[-1].content
        if text.startswith(REWRITE_MARK):
            return "REWRITTEN"
        prompt, case_input = split_message(text)
        # The best and chain of thought tie on every case: both miss q1 only.
        tied = prompt == "P" or "Think step" in prompt
        return answers[case_input] if tied and case_input != "q1" else "no idea"

    opt = PromptOptimizer(
        ScriptedLLM(fn=reply),
        split=None,
        candidate_strategies=FIVE[:2],
        search="racing",
        racing_bound="t",
        concurrency=1,
        max_iterations=1,
        target_score=1.0,
        seed=3,
    )
    result = opt.optimize("P", cases(32))
    order = example_order(32, seed=3)  # the seeded racing order
    seen = {v.strategy: v for v in result.variants}
    first_rung = {f"q{i + 1}" for i in order[:8]}
    # A tie with the best is never dropped: scored on every case.
    assert seen["chain_of_thought"].status is VariantStatus.SCORED
    assert seen["chain_of_thought"].cases_scored == 32
    # Wrong everywhere: dropped after the first rung, on the same cases as the best's.
    for strategy in ("chain_of_verification", "rewrite"):
        assert seen[strategy].status is VariantStatus.DROPPED
        rows = {r.input for r in result.case_results if r.strategy == strategy}
        assert rows == first_rung


def test_max_calls_stops_mid_round(four_cases: list[TestCase], answers: dict[str, str]) -> None:
    llm = ScriptedLLM(fn=answer_when("Be brief", answers))
    result = PromptOptimizer(
        llm,
        split=None,
        candidate_strategies=[S.CONCISE, S.ANSWER_ONLY],
        concurrency=1,
        max_calls=6,
    ).optimize("P", four_cases)
    assert result.stop_reason is StopReason.MAX_CALLS
    assert result.calls == 6 == len(llm.calls)
    assert result.rounds == 1
    # CONCISE scored 1.0 on its one case, but an incomplete variant cannot win.
    assert not result.was_improved
    assert [(v.strategy, v.status, v.partial_score) for v in result.variants[1:]] == [
        ("concise", VariantStatus.INCOMPLETE, 1.0),
        ("answer_only", VariantStatus.INCOMPLETE, None),
        ("rewrite", VariantStatus.INCOMPLETE, None),
    ]


def test_max_tokens_stops_before_the_next_call(four_cases: list[TestCase]) -> None:
    llm = ScriptedLLM(default="no idea", usage=Usage(7, 3))
    result = PromptOptimizer(llm, split=None, concurrency=1, max_tokens=25).optimize(
        "P", four_cases
    )
    # 0, 10 and 20 tokens used before calls 1-3; 30 >= 25 before call 4.
    assert (result.stop_reason, result.calls, result.tokens) == (StopReason.MAX_TOKENS, 3, 30)
    assert result.rounds == 0
    assert result.variants[0].status is VariantStatus.INCOMPLETE
    assert result.initial_score == pytest.approx(0.1)


def test_max_seconds_uses_the_clock(four_cases: list[TestCase]) -> None:
    now = [0.0]

    def reply(messages: list, params: dict) -> str:  # type: ignore[type-arg]
        now[0] += 1.0  # every call takes one second of the fake clock
        return "no idea"

    result = PromptOptimizer(
        ScriptedLLM(fn=reply), concurrency=1, max_seconds=2.5, clock=lambda: now[0], split=None
    ).optimize("P", four_cases)
    assert (result.stop_reason, result.calls) == (StopReason.MAX_SECONDS, 3)
    assert result.elapsed_s == 3.0


def test_validation_reports_the_chosen_prompt_on_other_cases(
    four_cases: list[TestCase], answers: dict[str, str]
) -> None:
    llm = ScriptedLLM(fn=answer_when("Be brief", answers))
    validation = [TestCase("q5", "a5"), TestCase("q6", "a6")]
    result = PromptOptimizer(
        llm, candidate_strategies=[S.CONCISE, S.ANSWER_ONLY], concurrency=1
    ).optimize("P", four_cases, validation_cases=validation)
    assert result.validation_score == 1.0
    assert result.initial_validation_score == pytest.approx(0.1)
    assert result.calls == 17 + 4
    rows = [r for r in result.case_results if r.split == "validation"]
    assert [(r.variant, r.input) for r in rows] == [(0, "q5"), (0, "q6"), (1, "q5"), (1, "q6")]
    assert llm.prompts[-2:] == [f"{S.CONCISE.apply('P')}\n\nq5", f"{S.CONCISE.apply('P')}\n\nq6"]
    frame = result.to_dataframe()
    assert list(frame["split"]).count("validation") == 4


def test_progress_events_per_case_and_per_round(
    four_cases: list[TestCase], answers: dict[str, str]
) -> None:
    events: list[ProgressEvent] = []
    llm = ScriptedLLM(fn=answer_when("Be brief", answers))
    result = PromptOptimizer(
        llm, candidate_strategies=[S.CONCISE], concurrency=1, progress=events.append, split=None
    ).optimize("P", four_cases)
    kinds = [e.kind for e in events]
    assert kinds == [EventKind.CASE] * 4 + [EventKind.ROUND] + [EventKind.CASE] * 8 + [
        EventKind.ROUND
    ]
    assert [e.calls for e in events if e.kind is EventKind.CASE][:4] == [1, 2, 3, 4]
    rounds = [e.round_record for e in events if e.round_record is not None]
    assert rounds == list(result.history)
    assert events[-1].best_score == 1.0


def test_dataframes(four_cases: list[TestCase], answers: dict[str, str]) -> None:
    llm = ScriptedLLM(fn=answer_when("Be brief", answers), usage="estimate")
    result = PromptOptimizer(
        llm, candidate_strategies=[S.CONCISE, S.ANSWER_ONLY], concurrency=3, split=None
    ).optimize("P", four_cases)
    frame = result.to_dataframe()
    for column in (
        "round", "variant", "strategy", "case", "input", "expected",
        "output", "score", "tokens", "latency", "cached",
    ):  # fmt: skip
        assert column in frame.columns
    assert len(frame) == 16
    assert list(frame["variant"]) == [0] * 4 + [1] * 4 + [2] * 4 + [3] * 4
    assert list(frame["case"]) == [0, 1, 2, 3] * 4
    assert frame.loc[frame["variant"] == 1, "score"].tolist() == [1.0] * 4
    assert (frame["tokens"] > 0).all()
    rounds = result.rounds_dataframe()
    assert list(rounds["round"]) == [0, 1]
    assert list(rounds["best_score"]) == [pytest.approx(0.1), 1.0]
    assert rounds["calls"].sum() == result.calls == 17
    variants = result.variants_dataframe()
    assert list(variants["status"]) == ["scored"] * 4
    assert next(v.strategy for v in result.leaderboard()) == "concise"


def _signature(result: OptimizationResult) -> object:
    return (
        result.best_prompt,
        result.score,
        result.calls,
        result.stop_reason,
        [(v.id, v.prompt, v.status, v.score, v.calls) for v in result.variants],
        [
            (r.round, r.variant, r.index, r.output, r.score, r.cached, r.split)
            for r in result.case_results
        ],
        [(r.best_score, r.best_variant, r.calls) for r in result.history],
    )


def _hash_reply(text: str) -> str:
    if text.startswith(REWRITE_MARK):
        return "Answer briefly."
    _prompt, case_input = split_message(text)
    digest = int(hashlib.sha256(text.encode()).hexdigest(), 16)
    return f"a{case_input[1:]}" if digest % 3 == 0 else "the answer is unknown"


@pytest.mark.parametrize("search", ["exhaustive", "racing"])
def test_same_inputs_same_result_whatever_the_reply_order(search: str) -> None:
    signatures = []
    for concurrency in (1, 8, 8):
        llm = JitteryLLM(_hash_reply)
        opt = PromptOptimizer(
            llm,
            split=None,
            candidate_strategies=[*FIVE, S.FEW_SHOT],
            search=search,
            concurrency=concurrency,
            seed=7,
        )
        result = opt.optimize("P", cases(12), validation_cases=cases(14)[12:])
        signatures.append(_signature(result))
        assert result.calls == len(llm.sent)
    assert signatures[0] == signatures[1] == signatures[2]


def test_the_seed_changes_few_shot_examples() -> None:
    prompts = set()
    for seed in (0, 1):
        opt = PromptOptimizer(
            ScriptedLLM(default="x"),
            candidate_strategies=[S.FEW_SHOT],
            seed=seed,
            rewrite=False,
            split=None,
        )
        result = opt.optimize("P", cases(12))
        prompts.add(result.variants[1].prompt)
    assert len(prompts) == 2


def test_optimize_works_inside_a_running_event_loop(four_cases: list[TestCase]) -> None:
    async def notebook_cell() -> OptimizationResult:
        return PromptOptimizer(ScriptedLLM(default="a1"), split=None, max_iterations=1).optimize(
            "P", four_cases[:1]
        )

    assert asyncio.run(notebook_cell()).score == 1.0


def test_aoptimize(four_cases: list[TestCase]) -> None:
    opt = PromptOptimizer(ScriptedLLM(default="a1"), split=None)
    assert asyncio.run(opt.aoptimize("P", four_cases[:1])).calls == 1


def test_few_shot_examples_come_from_the_end_of_the_racing_order() -> None:
    opt = PromptOptimizer(
        ScriptedLLM(default="x"),
        candidate_strategies=[S.FEW_SHOT],
        rewrite=False,
        seed=5,
        split=None,
    )
    result = opt.optimize("P", cases(16))
    prompt = result.variants[1].prompt
    order = example_order(16, seed=5)
    shown = [f"Input: q{i + 1}\n" for i in reversed(order[-3:])]
    assert all(example in prompt for example in shown)
    first_rung = [f"Input: q{i + 1}\n" for i in order[:4]]
    assert not any(example in prompt for example in first_rung)
