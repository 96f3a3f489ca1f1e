"""API.md statements (LLM boundary, Feedback, Norms, Refinement loop) not pinned elsewhere.

Each test names the statement it holds the code to. Statements already pinned
by the area tests (tests/llm, tests/feedback/test_api_examples.py,
tests/norms/test_api_examples.py, tests/refinement) are not repeated here.
Names are imported from the top level, where API.md says they live.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import threading
from datetime import timedelta
from typing import Any

import httpx
import pytest

import tnsai_eval
from tnsai_eval import (
    Agent,
    Completion,
    CompletionCriteria,
    ConditionError,
    ConditionEvaluator,
    ConfigError,
    FeedbackLearner,
    FeedbackStore,
    LLMClient,
    LLMError,
    Message,
    OpenAIClient,
    RefinementLoop,
    RefinementResult,
    RefinementStatus,
    ReplayMissError,
    ServerError,
    StopHook,
    TnsaiError,
    Usage,
)
from tnsai_eval.llm import acall, normalize_messages
from tnsai_eval.testing import ScriptedLLM


class PlainClient:
    """Nothing but ``chat``: no base class, no ``achat``."""

    def __init__(self, reply: str) -> None:
        self.reply = reply
        self.threads: list[str] = []
        self.prompts: list[str] = []

    def chat(self, messages: Any, **params: Any) -> Completion:
        self.threads.append(threading.current_thread().name)
        self.prompts.append(normalize_messages(messages)[-1].content)
        return Completion(text=self.reply)


# -- LLM boundary -------------------------------------------------------------------------


def test_completion_is_constructible_from_text_alone_with_documented_defaults() -> None:
    # "Completion(text, usage=Usage(), model="", latency_s=0.0, cached=False, raw=None)"
    completion = Completion(text="hi")
    assert (completion.usage, completion.model, completion.latency_s) == (Usage(), "", 0.0)
    assert (completion.cached, completion.raw) == (False, None)


def test_usage_defaults_to_zero_and_totals_both_counts() -> None:
    assert Usage().total_tokens == 0
    assert Usage(prompt_tokens=7, completion_tokens=5).total_tokens == 12


def test_message_takes_role_then_content() -> None:
    message = Message("system", "be brief")
    assert (message.role, message.content) == ("system", "be brief")


def test_messages_may_be_a_str_or_a_mix_of_messages_and_mappings() -> None:
    assert normalize_messages("hello") == [Message("user", "hello")]
    mixed: list[Message | dict[str, str]] = [
        Message("system", "s"),
        {"role": "user", "content": "u"},
    ]
    assert normalize_messages(mixed) == [Message("system", "s"), Message("user", "u")]


def test_any_object_with_chat_is_an_llm_client_and_every_component_takes_it() -> None:
    client = PlainClient('{"ok": true}')
    assert isinstance(client, LLMClient)
    criteria = CompletionCriteria.builder().valid_json().build()
    assert RefinementLoop("Write JSON.", criteria).execute(client, "nope").is_success
    assert Agent(client).chat("hi") == '{"ok": true}'
    learner = FeedbackLearner(client, FeedbackStore.in_memory(), min_feedback_for_learning=1)
    learner.record_feedback(tnsai_eval.Feedback.correction("Say the name."))
    assert learner.learn().feedback_analyzed == 1


def test_acall_runs_a_sync_only_client_in_a_worker_thread() -> None:
    # "otherwise the library runs chat in worker threads"
    client = PlainClient("x")
    reply = asyncio.run(acall(client, "q"))
    assert reply.text == "x"
    assert client.threads != [threading.main_thread().name]


def test_acall_uses_achat_when_the_client_has_it() -> None:
    class AsyncClient(PlainClient):
        async def achat(self, messages: Any, **params: Any) -> Completion:
            return Completion(text="from achat")

    client = AsyncClient("from chat")
    assert asyncio.run(acall(client, "q")).text == "from achat"
    assert client.threads == []


def test_openai_client_retries_twice_by_default() -> None:
    # "max_retries=2": three attempts in all, then the typed error.
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        return httpx.Response(503, json={"error": {"message": "busy"}})

    transport = httpx.MockTransport(handler)
    with (
        OpenAIClient(
            "m", base_url="http://127.0.0.1:9/v1", backoff_base=0.001, transport=transport
        ) as llm,
        pytest.raises(ServerError) as caught,
    ):
        llm.chat("q")
    assert caught.value.attempts == 3
    assert seen == ["http://127.0.0.1:9/v1/chat/completions"] * 3


def test_error_tree_has_one_root_and_config_errors_are_value_errors() -> None:
    # "one root TnsaiError"; "configuration and input errors are ValueError subclasses"
    assert issubclass(LLMError, TnsaiError)
    assert issubclass(ReplayMissError, LLMError)
    assert issubclass(ConfigError, ValueError)
    assert issubclass(ConditionError, ValueError)
    error = LLMError("boom", status=503, model="m", attempts=3, retryable=True, retry_after=2.0)
    assert (error.status, error.model, error.attempts, error.retry_after) == (503, "m", 3, 2.0)
    assert "model='m'" in str(error)


# -- Norms ----------------------------------------------------------------------------------


def test_condition_evaluator_never_uses_python_eval() -> None:
    # "safe (never Python eval)": Python-only syntax is not CEL and is refused.
    with pytest.raises(ConditionError, match="__import__"):
        ConditionEvaluator().evaluate("__import__('os').system('true') == 0", {})


# -- Refinement loop ------------------------------------------------------------------------


def run_to_success() -> RefinementResult:
    criteria = CompletionCriteria.builder().must_contain("a", "b").build()
    return RefinementLoop("Say a and b.", criteria).execute(ScriptedLLM(["a", "a b"]), "none")


def test_score_progression_is_a_list_of_floats_one_per_checked_iteration() -> None:
    result = run_to_success()
    progression = result.metrics.score_progression
    assert type(progression) is list
    assert progression == [0.0, 0.5, 1.0]
    progression.append(9.0)  # a copy: the record stays as it was
    assert result.metrics.score_progression == [0.0, 0.5, 1.0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.metrics.total_tokens = 0  # type: ignore[misc]


def test_metrics_expose_the_documented_totals() -> None:
    result = run_to_success()
    metrics = result.metrics
    assert metrics.total_iterations == result.iteration_count == 3
    assert metrics.final_score == result.final_score == 1.0
    # timedelta keeps microseconds: equal to within 1 µs.
    seconds = result.total_duration.total_seconds()
    assert metrics.total_duration_ms == pytest.approx(seconds * 1000, abs=1e-3)
    assert metrics.total_tokens > 0


def test_result_fields_in_documented_order() -> None:
    # "RefinementResult(final_output, iteration_count, status, total_duration, metrics)"
    result = run_to_success()
    rebuilt = RefinementResult(
        result.final_output,
        result.iteration_count,
        result.status,
        result.total_duration,
        result.metrics,
    )
    assert rebuilt.is_success
    assert rebuilt.final_score == 1.0
    assert [f.name for f in dataclasses.fields(RefinementResult)][:5] == [
        "final_output",
        "iteration_count",
        "status",
        "total_duration",
        "metrics",
    ]


def test_loop_defaults_are_ten_iterations_and_thirty_minutes() -> None:
    loop = RefinementLoop("t", CompletionCriteria.builder().valid_json().build())
    assert (loop.max_iterations, loop.timeout, loop.stop_hook) == (
        10,
        timedelta(minutes=30),
        None,
    )


def test_command_checks_fail_after_thirty_seconds_by_default() -> None:
    builder = CompletionCriteria.builder()
    for method in (builder.compiler_check, builder.test_command, builder.lint_check):
        assert inspect.signature(method).parameters["timeout_s"].default == 30


def test_evaluate_returns_a_list_and_score_is_the_share_passed() -> None:
    criteria = CompletionCriteria.builder().must_contain("a", "b", "c", "d").build()
    outcomes = criteria.evaluate("a b c")
    assert isinstance(outcomes, list)
    assert [o.passed for o in outcomes] == [True] * 3 + [False]
    assert criteria.score(outcomes) == criteria.score("a b c") == 0.75


def test_on_score_above_fires_at_the_threshold_itself() -> None:
    # Documented deviation: "above" is inclusive (>=), so that
    # on_score_above(1.0) can fire at all.
    criteria = CompletionCriteria.builder().must_contain("a", "b").build()
    loop = RefinementLoop("t", criteria, stop_hook=StopHook.on_score_above(0.5))
    result = loop.execute(ScriptedLLM([]), "a")
    assert result.status is RefinementStatus.STOPPED
    assert result.metrics.score_progression == [0.5]
