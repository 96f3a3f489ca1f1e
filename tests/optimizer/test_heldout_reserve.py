"""Every optimizer run ends with a held-out verdict: each budget keeps what the check needs.

Against the fault-injecting server: 503s on a quarter of the requests (the
retries must come out of the search's share, not the check's), and
``max_tokens`` / ``max_seconds`` below what the unbounded run spends (the
search must stop early enough for the check). The clock of the
``max_seconds`` test is the test's own: the server moves it one second per
request, so nothing depends on how fast this machine is.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest

from tests.llm.fake_server import FakeOpenAIServer, Recorded, Step, completion_body
from tests.optimizer.conftest import http_client
from tnsai_eval.llm import CallBudget
from tnsai_eval.optimizer import OptimizationResult, PromptOptimizer, StopReason
from tnsai_eval.scoring import ContainsEvaluator, TestCase

# The server echoes each request; "Be brief" is in CONCISE's prompt only, so
# CONCISE scores 1.0 on every case and every other prompt 0.0.
CASES = [TestCase(f"question {i}", "Be brief") for i in range(40)]
STRATEGIES = ["concise", "answer_only", "chain_of_thought", "role"]


@pytest.fixture
def server(fake_server: FakeOpenAIServer) -> Iterator[FakeOpenAIServer]:
    fake_server.reset()
    yield fake_server
    fake_server.reset()


client = http_client


def optimize(server: FakeOpenAIServer, **options: Any) -> OptimizationResult:
    settings: dict[str, Any] = {
        "candidate_strategies": STRATEGIES,
        "rewrite": False,
        "max_iterations": 1,
        "concurrency": 1,
        "evaluator": ContainsEvaluator(),
    }
    settings.update(options)
    with client(server) as llm:
        return PromptOptimizer(llm, **settings).optimize("Answer.", CASES)


def assert_full_verdict(result: OptimizationResult) -> None:
    """Both prompts scored on every held-out case, and the headline says so."""
    assert result.validation_cases == 12
    assert result.validation_skipped is None
    assert result.validation_scored == 12
    assert result.validation_score is not None
    assert result.initial_validation_score is not None
    for variant in {0, result.best_variant}:
        rows = [r for r in result.case_results if r.split == "validation" and r.variant == variant]
        assert sorted(r.index for r in rows) == list(range(12))
        assert all(r.score is not None for r in rows)
    assert "on 12 cases:" in result.headline
    assert "incomplete" not in result.headline


def test_retries_come_out_of_the_search_and_the_held_out_check_completes(
    server: FakeOpenAIServer,
) -> None:
    # Every fourth request is answered 503 (the retry gets a reply): about
    # 4/3 attempts per call. The search alone would send 28 + 4 x 28 = 140
    # calls (about 187 attempts); the cap of 120 cuts round 1, and the check
    # needs 2 x 12 calls, about 32 attempts. When the run set aside 24 (two
    # calls per held-out case, no retry), the check's retries had no attempt
    # left and it ended "held-out incomplete (budget)".
    server.script(*([Step.ok(), Step.ok(), Step.ok(), Step.error(503)] * 60))
    result = optimize(server, max_calls=120)
    assert len(server.requests) == result.calls <= 120
    assert result.retries > 0
    assert result.stop_reason is StopReason.MAX_CALLS
    assert result.variants[result.best_variant].strategy == "concise"
    assert_full_verdict(result)
    assert (result.validation_better, result.validation_worse) == (12, 0)
    assert result.was_improved


def unbounded(server: FakeOpenAIServer) -> OptimizationResult:
    server.reset()
    result = optimize(server)
    assert result.stop_reason is StopReason.TARGET_REACHED  # CONCISE scored 1.0
    assert_full_verdict(result)
    return result


def test_max_tokens_below_the_unbounded_total_leaves_the_check_its_tokens(
    server: FakeOpenAIServer,
) -> None:
    total = unbounded(server).tokens
    server.reset()
    result = optimize(server, max_tokens=total * 2 // 3)
    assert result.stop_reason is StopReason.MAX_TOKENS  # the search was cut...
    assert_full_verdict(result)  # ...early enough for the check
    assert result.tokens <= total * 2 // 3


class Ticks:
    """A clock the server moves: one second per request it answers."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def answer(self, request: Recorded) -> bytes:
        self.now += 1.0
        return completion_body(request)


def test_max_seconds_below_the_unbounded_total_leaves_the_check_its_time(
    server: FakeOpenAIServer,
) -> None:
    clock = Ticks()
    server.reset(default=Step(body=clock.answer))
    whole = optimize(server, clock=clock)
    assert whole.elapsed_s == len(server.requests) == 140 + 24
    server.reset(default=Step(body=(clock := Ticks()).answer))
    result = optimize(server, clock=clock, max_seconds=100.0)
    assert result.stop_reason is StopReason.MAX_SECONDS
    assert_full_verdict(result)
    assert result.elapsed_s <= 100.0


def test_a_check_that_cannot_finish_is_not_started_and_the_headline_says_why(
    server: FakeOpenAIServer,
) -> None:
    # A run sharing its budget with another process (a pytest session's
    # count file): the other one's calls use up what this run set aside, so
    # what is left cannot pay for the check.
    shared = CallBudget(200)
    spent = itertools.count()

    def spend_elsewhere(request: Recorded) -> bytes:
        if next(spent) == 60:  # the other process's calls, counted mid-run
            shared.add(shared.left)
        return completion_body(request)

    server.reset(default=Step(body=spend_elsewhere))
    result = optimize(server, budget=shared)
    assert result.validation_skipped is not None
    assert result.validation_skipped.startswith("max_calls has 0 attempt(s) left")
    assert result.headline.startswith("held-out check not run: max_calls has 0 attempt(s) left")
    assert not any(r.split == "validation" for r in result.case_results)
    assert result.verdict == "inconclusive"


def test_when_the_starting_prompt_wins_the_unused_reserve_goes_back_to_the_search(
    server: FakeOpenAIServer,
) -> None:
    # Nothing scores ("zebra" is never echoed): the starting prompt stays the
    # best, so the check scores it alone (12 calls), and the 12 set aside for
    # a better prompt's check are spent on the round the cap cut.
    cases = [TestCase(f"question {i}", "zebra") for i in range(40)]
    with client(server) as llm:
        result = PromptOptimizer(
            llm,
            candidate_strategies=STRATEGIES,
            rewrite=False,
            concurrency=1,
            evaluator=ContainsEvaluator(),
            max_calls=100,
        ).optimize("Answer.", cases)
    assert result.best_variant == 0
    assert result.calls == len(server.requests) == 100
    assert sum(r.calls for r in result.history) == 100 - 12
    assert result.validation_scored == 12
    assert result.verdict == "unchanged"
