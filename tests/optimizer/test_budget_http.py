"""Truthful budgets against the fault-injecting server: ``calls`` counts HTTP
attempts (retries included), ``max_calls`` bounds what goes out, store replays
are counted apart."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator

import pytest

from tests.llm.fake_server import FakeOpenAIServer, Step
from tnsai_eval.llm import CachedLLM, OpenAIClient, ResponseStore
from tnsai_eval.optimizer import PromptOptimizer, StopReason, VariantStatus
from tnsai_eval.scoring import ContainsEvaluator, TestCase

CASES = [TestCase(f"question {i}", "zebra") for i in range(6)]


@pytest.fixture(scope="module")
def _server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture
def server(_server: FakeOpenAIServer) -> Iterator[FakeOpenAIServer]:
    _server.reset()
    # Every third request is answered 503; the retry that follows gets a reply.
    _server.script(*([Step.ok(), Step.ok(), Step.error(503)] * 40))
    yield _server
    _server.reset()


def client(server: FakeOpenAIServer) -> OpenAIClient:
    return OpenAIClient(
        "m", base_url=server.base_url, api_key="", backoff_base=0.0, backoff_max=0.0, timeout=5.0
    )


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
    # The initial prompt's six case calls reserve the whole budget when they
    # start, so the retries of requests 3 and 6 (answered 503) are refused:
    # those two cases fail instead of sending a seventh and an eighth request.
    assert len(server.requests) == result.calls == 6
    assert result.stop_reason is StopReason.MAX_CALLS
    assert (result.failed_calls, result.retries) == (2, 0)


def test_a_retry_may_use_budget_that_no_call_reserved(server: FakeOpenAIServer) -> None:
    with client(server) as llm:
        result = optimizer(llm, max_calls=7).optimize("Answer.", CASES)
    # Six reserved for the initial cases, the seventh granted to the first retry.
    assert len(server.requests) == result.calls == 7
    assert (result.failed_calls, result.retries) == (1, 1)


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
