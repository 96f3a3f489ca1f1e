"""Truthful budgets against the fault-injecting server: ``calls`` counts HTTP
attempts (retries included), ``max_calls`` bounds what goes out, store replays
are counted apart."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator

import pytest

from tests.llm.fake_server import FakeOpenAIServer, Step
from tests.optimizer.conftest import http_client
from tnsai_eval.errors import ConfigError
from tnsai_eval.llm import CachedLLM, CallBudget, ResponseStore
from tnsai_eval.optimizer import PromptOptimizer, StopReason, VariantStatus
from tnsai_eval.scoring import ContainsEvaluator, TestCase

CASES = [TestCase(f"question {i}", "zebra") for i in range(6)]


@pytest.fixture
def server(fake_server: FakeOpenAIServer) -> Iterator[FakeOpenAIServer]:
    _server = fake_server
    _server.reset()
    # Every third request is answered 503; the retry that follows gets a reply.
    _server.script(*([Step.ok(), Step.ok(), Step.error(503)] * 40))
    yield _server
    _server.reset()


client = http_client


def optimizer(llm: object, **options: object) -> PromptOptimizer:
    settings: dict[str, object] = {
        "candidate_strategies": ["answer_only", "concise"],
        "rewrite": False,
        "max_iterations": 1,
        "concurrency": 1,
        "evaluator": ContainsEvaluator(),
        "split": None,
    }
    settings.update(options)
    return PromptOptimizer(llm, **settings)  # type: ignore[arg-type]


def test_calls_count_every_request_retries_included(server: FakeOpenAIServer) -> None:
    with client(server) as llm:
        result = optimizer(llm).optimize("Answer.", CASES)
    sent = len(server.requests)
    # 18 case calls; after the first, every second one meets a 503 and retries.
    assert result.calls == sent == 18 + 8
    assert result.retries == sent - 18
    assert (result.failed_calls, result.cache_hits) == (0, 0)
    assert sum(v.calls for v in result.variants) == sent
    assert sum(r.calls for r in result.history) == sent


def test_max_calls_bounds_the_requests_that_go_out(server: FakeOpenAIServer) -> None:
    with client(server) as llm:
        result = optimizer(llm, max_calls=6).optimize("Answer.", CASES)
    # An attempt is taken when it is sent, retries included: requests 1, 2 ok,
    # 3 answered 503 and retried (4), 5 ok, 6 answered 503 with no attempt
    # left for its retry (that case fails), and the sixth case is not run.
    assert len(server.requests) == result.calls == 6
    assert result.stop_reason is StopReason.MAX_CALLS
    assert (result.failed_calls, result.retries) == (1, 1)
    initial = result.variants[0]
    assert (initial.status, initial.cases_scored, initial.cases_failed) == (
        VariantStatus.INCOMPLETE,
        4,
        1,
    )


def test_a_retry_takes_an_attempt_of_its_own(server: FakeOpenAIServer) -> None:
    with client(server) as llm:
        result = optimizer(llm, max_calls=7).optimize("Answer.", CASES)
    # As above, and the seventh attempt is the retry of request 6.
    assert len(server.requests) == result.calls == 7
    assert (result.failed_calls, result.retries) == (0, 2)


def test_replayed_replies_are_cache_hits_not_calls(server: FakeOpenAIServer) -> None:
    store = ResponseStore(tempfile.mkdtemp())
    with client(server) as llm:
        first = optimizer(CachedLLM(llm, store)).optimize("Answer.", CASES)
        sent = len(server.requests)
        again = optimizer(CachedLLM(llm, store, mode="replay"), max_calls=1).optimize(
            "Answer.", CASES
        )
    assert first.calls == sent
    assert len(server.requests) == sent  # nothing new went out
    assert (again.calls, again.retries, again.cache_hits) == (0, 0, 18)
    assert again.stop_reason is not StopReason.MAX_CALLS
    assert again.score == first.score


def test_racing_counts_every_request_when_it_drops_the_starting_prompt(
    server: FakeOpenAIServer,
) -> None:
    # The server echoes each request, and the expected text is in CONCISE's
    # prompt only: CONCISE scores 1.0 on every case, the starting prompt and
    # ANSWER_ONLY 0.0. Racing scores the starting prompt on the first rung
    # (8 cases), drops it and ANSWER_ONLY there (behind on 8 of 8 flips), and
    # scores CONCISE on the other 12: 36 case calls, each third request
    # answered 503 and retried.
    cases = [TestCase(f"question {i}", "Be brief") for i in range(20)]
    with client(server) as llm:
        result = optimizer(llm, search="racing").optimize("Answer.", cases)
    sent = len(server.requests)
    assert [(v.strategy, v.status, v.cases_scored) for v in result.variants] == [
        ("initial", VariantStatus.DROPPED, 8),
        ("answer_only", VariantStatus.DROPPED, 8),
        ("concise", VariantStatus.SCORED, 20),
    ]
    assert result.calls == sent > 36
    assert result.retries == sent - 36
    assert sum(v.calls for v in result.variants) == sent
    assert sum(r.calls for r in result.history) == sent


# -- an async client spends the budget, and the held-out check always runs --------


@pytest.fixture
def echo(fake_server: FakeOpenAIServer) -> Iterator[FakeOpenAIServer]:
    fake_server.reset()  # every request answered: the echo of its prompt
    yield fake_server
    fake_server.reset()


@pytest.mark.parametrize("concurrency", [1, 4])
def test_an_async_client_spends_most_of_max_calls_and_the_held_out_check_completes(
    echo: FakeOpenAIServer, concurrency: int
) -> None:
    # 20 cases: 14 for selection, 6 held out (12 calls set aside first). The
    # initial prompt takes 14 calls; round 1 has 4 x 14 = 56 to make and 34
    # left, so the budget cuts it, and the held-out check then runs on what
    # was set aside. (When each task reserved its call on creation, before
    # the concurrency wait, round 1's queued tasks took every slot, the first
    # refusal stopped the run, and the round made a handful of calls, with no
    # held-out score at the end.)
    cases = [TestCase(f"question {i}", "zebra") for i in range(20)]
    with client(echo) as llm:
        result = PromptOptimizer(
            llm,
            candidate_strategies=["answer_only", "concise", "chain_of_thought", "role"],
            rewrite=False,
            concurrency=concurrency,
            evaluator=ContainsEvaluator(),
            max_calls=60,
        ).optimize("Answer.", cases)
    assert result.validation_score is not None
    assert result.initial_validation_score is not None
    assert result.validation_p_value is not None
    assert "incomplete" not in result.headline
    assert result.calls == len(echo.requests)
    assert 48 <= result.calls <= 60  # most of the budget (the best is the initial prompt)
    assert result.stop_reason is StopReason.MAX_CALLS
    assert (result.selection_cases, result.validation_cases) == (14, 6)
    statuses = [v.status for v in result.variants[1:]]
    assert VariantStatus.INCOMPLETE in statuses  # the round the budget cut


def test_a_cap_below_the_held_out_check_refuses_the_run_at_start(echo: FakeOpenAIServer) -> None:
    cases = [TestCase(f"question {i}", "zebra") for i in range(20)]
    with client(echo) as llm, pytest.raises(ConfigError) as refused:
        PromptOptimizer(llm, max_calls=11, evaluator=ContainsEvaluator()).optimize("Answer.", cases)
    assert len(echo.requests) == 0
    message = str(refused.value)
    assert "max_calls" in message
    assert "11" in message
    assert "held-out check needs 12" in message


def test_the_optimizer_draws_on_a_shared_budget_too(echo: FakeOpenAIServer) -> None:
    shared = CallBudget(5)
    with client(echo) as llm:
        result = optimizer(llm, budget=shared, max_calls=100).optimize("Answer.", CASES)
    assert shared.spent == result.calls == len(echo.requests) == 5
    assert result.stop_reason is StopReason.MAX_CALLS
