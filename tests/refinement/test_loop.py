"""RefinementLoop: every status, the revision prompt, tokens, records, frames."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from tnsai_eval.errors import ConfigError
from tnsai_eval.llm import Completion, Usage
from tnsai_eval.refinement import (
    CompletionCriteria,
    IterationRecord,
    RefinementLoop,
    RefinementStatus,
    StopHook,
    first_code_block,
)
from tnsai_eval.testing import ScriptedLLM

TASK = "Describe the user as a JSON object with a name field."


def json_criteria() -> CompletionCriteria:
    return CompletionCriteria.builder().valid_json().must_contain('"name"').build()


class FakeClock:
    """Monotonic seconds that only move when told to."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_success_without_a_call_when_the_draft_passes() -> None:
    llm = ScriptedLLM()
    result = RefinementLoop(TASK, json_criteria()).execute(llm, '{"name": "Ada"}')
    assert result.status is RefinementStatus.SUCCESS
    assert result.is_success
    assert (result.iteration_count, result.final_score) == (1, 1.0)
    assert result.metrics.score_progression == [1.0]
    assert llm.calls == []
    assert result.reason == "all 2 checks passed"


def test_success_after_revisions_and_the_revision_prompt() -> None:
    llm = ScriptedLLM(['{"user": "Ada"}', '{"name": "Ada"}'])
    result = RefinementLoop(TASK, json_criteria()).execute(llm, "name: Ada")
    assert result.status is RefinementStatus.SUCCESS
    assert result.final_output == '{"name": "Ada"}'
    assert result.iteration_count == 3
    assert result.metrics.score_progression == [0.0, 0.5, 1.0]
    assert result.metrics.total_iterations == 3
    first, second = (call.prompt for call in llm.calls)
    assert TASK in first
    assert "<<<OUTPUT\nname: Ada\nOUTPUT>>>" in first
    assert "## Failed checks (2 of 2)" in first
    assert "- valid_json: not valid JSON" in first
    assert "- must_contain('\"name\"'): the output does not contain" in first
    assert "Passing checks" not in first
    assert "## Failed checks (1 of 2)" in second
    assert "## Passing checks: keep them passing\n- valid_json" in second
    assert "nothing else" in second
    assert "no markdown code fences" in second


def test_max_iterations_returns_the_last_reply_unchecked() -> None:
    llm = ScriptedLLM(["{}", "still wrong", "never asked for"])
    result = RefinementLoop(TASK, json_criteria(), max_iterations=2).execute(llm, "draft")
    assert result.status is RefinementStatus.MAX_ITERATIONS
    assert not result.is_success
    assert result.final_output == "still wrong"
    assert result.iteration_count == 2
    assert len(llm.calls) == 2
    assert result.metrics.score_progression == [0.0, 0.5]
    assert result.final_score == 0.5  # of the last *checked* output
    assert (result.best_output, result.best_score) == ("{}", 0.5)
    assert result.iterations[-1].revision == "still wrong"


def test_timeout_is_checked_before_each_iteration() -> None:
    clock = FakeClock()

    def slow_reply(messages: Any, params: Any) -> str:
        clock.now += 10.0
        return f"reply at {clock.now:g}"

    llm = ScriptedLLM(fn=slow_reply)
    loop = RefinementLoop(TASK, json_criteria(), timeout=timedelta(seconds=15), clock=clock)
    result = loop.execute(llm, "draft")
    assert result.status is RefinementStatus.TIMEOUT
    # t=0 check + revise -> t=10 check + revise -> t=20: out of time.
    assert result.iteration_count == 2
    assert result.final_output == "reply at 20"
    assert result.total_duration == timedelta(seconds=20)
    assert result.metrics.total_duration_ms == 20000.0
    assert "timeout of 0:00:15" in result.reason


def test_stopped_by_a_hook_before_any_call() -> None:
    llm = ScriptedLLM()
    loop = RefinementLoop(TASK, json_criteria(), stop_hook=StopHook.on_score_above(0.5))
    result = loop.execute(llm, '{"id": 1}')
    assert result.status is RefinementStatus.STOPPED
    assert result.final_output == '{"id": 1}'
    assert result.final_score == 0.5
    assert llm.calls == []
    assert result.reason == "stop hook on_score_above(0.5) fired"


def test_error_when_the_first_call_raises_keeps_the_draft() -> None:
    boom = RuntimeError("model exploded")
    result = RefinementLoop(TASK, json_criteria()).execute(ScriptedLLM([boom]), "draft")
    assert result.status is RefinementStatus.ERROR
    assert result.final_output == "draft"
    assert result.error is boom
    assert "RuntimeError: model exploded" in result.reason
    assert result.iteration_count == 1
    assert result.iterations[0].revision is None


def test_error_later_keeps_the_last_output() -> None:
    llm = ScriptedLLM(["{}", ConnectionError("gone")])
    result = RefinementLoop(TASK, json_criteria()).execute(llm, "draft")
    assert result.status is RefinementStatus.ERROR
    assert result.final_output == "{}"
    assert result.metrics.score_progression == [0.0, 0.5]


def test_a_chat_that_returns_neither_text_nor_completion_is_an_error() -> None:
    class Weird:
        def chat(self, message: str) -> int:
            return 42

    result = RefinementLoop(TASK, json_criteria()).execute(Weird(), "draft")
    assert result.status is RefinementStatus.ERROR
    assert "returned int; expected a Completion" in result.reason


def test_an_agent_returning_text_works_and_its_tokens_are_estimated() -> None:
    class EchoAgent:
        """Agent-shaped: chat(message) -> str, no parameters."""

        def __init__(self) -> None:
            self.messages: list[str] = []

        def chat(self, message: str) -> str:
            self.messages.append(message)
            return '{"name": "Ada"}'

    agent = EchoAgent()
    result = RefinementLoop(TASK, json_criteria()).execute(agent, "draft")
    assert result.status is RefinementStatus.SUCCESS
    assert len(agent.messages) == 1
    assert TASK in agent.messages[0]
    record = result.iterations[0]
    assert record.tokens_estimated
    assert record.tokens == result.metrics.total_tokens > 0
    assert result.metrics.tokens_estimated


def test_reported_usage_is_used_when_nonzero() -> None:
    llm = ScriptedLLM([Completion('{"name": 1}', usage=Usage(120, 8))])
    result = RefinementLoop(TASK, json_criteria()).execute(llm, "draft")
    assert result.metrics.total_tokens == 128
    assert not result.metrics.tokens_estimated
    zero = ScriptedLLM([Completion('{"name": 1}', usage=Usage())])
    estimated = RefinementLoop(TASK, json_criteria()).execute(zero, "draft")
    assert estimated.metrics.tokens_estimated
    assert estimated.metrics.total_tokens > 0


def test_judge_tokens_count_towards_the_total() -> None:
    judge = ScriptedLLM([Completion("fine\nSCORE: 90", usage=Usage(40, 2))])
    criteria = CompletionCriteria.builder().with_llm(judge).llm_check("Polite?").build()
    result = RefinementLoop(TASK, criteria).execute(ScriptedLLM(), "Thank you.")
    assert result.status is RefinementStatus.SUCCESS
    assert result.metrics.total_tokens == 42
    assert result.iterations[0].checks[0].score == 0.9


def test_chat_params_go_to_llm_clients() -> None:
    llm = ScriptedLLM(['{"name": 1}'])
    RefinementLoop(TASK, json_criteria(), chat_params={"max_tokens": 64}).execute(llm, "d")
    assert llm.calls[0].params == {"max_tokens": 64}


def test_a_reply_that_is_one_fenced_block_is_unwrapped() -> None:
    fenced = '```json\n{"name": "Ada"}\n```\n'
    result = RefinementLoop(TASK, json_criteria()).execute(ScriptedLLM([fenced]), "draft")
    assert result.status is RefinementStatus.SUCCESS
    assert result.final_output == '{"name": "Ada"}'
    kept = RefinementLoop(TASK, json_criteria(), max_iterations=2, reply_parser=None)
    raw = kept.execute(ScriptedLLM([fenced, fenced]), "draft")
    assert raw.status is RefinementStatus.MAX_ITERATIONS
    assert raw.iterations[1].output == fenced


def test_chatter_around_a_block_is_kept_unless_the_parser_says_otherwise() -> None:
    chatty = '```json\n{"name": "Ada"}\n```\n\nThis JSON has a name.'
    verbatim = RefinementLoop(TASK, json_criteria(), max_iterations=1, reply_parser=None)
    assert verbatim.execute(ScriptedLLM([chatty]), "draft").final_output == chatty
    lenient = RefinementLoop(TASK, json_criteria(), reply_parser=first_code_block)
    result = lenient.execute(ScriptedLLM([chatty]), "draft")
    assert result.status is RefinementStatus.SUCCESS
    assert result.final_output == '{"name": "Ada"}'
    upper = RefinementLoop(TASK, json_criteria(), max_iterations=1, reply_parser=str.upper)
    assert upper.execute(ScriptedLLM(["abc"]), "draft").final_output == "ABC"


def test_reply_parser_must_be_callable() -> None:
    with pytest.raises(ConfigError, match="reply_parser must be a function"):
        RefinementLoop(TASK, json_criteria(), reply_parser="strip")


def test_a_repeated_output_stops_the_loop_at_once() -> None:
    # Issue 13: SmolLM2 spent 7 of 10 iterations repeating an earlier output.
    # A flaky check passes on its third run: re-checking the repeat would
    # count it as progress, so the repeat is not checked at all.
    runs: list[str] = []

    def flaky(text: str) -> bool:
        runs.append(text)
        return len(runs) == 3

    criteria = (
        CompletionCriteria.builder().must_contain("never").custom_check("flaky", flaky).build()
    )
    llm = ScriptedLLM(["B", "A", "C", "D"])
    result = RefinementLoop(TASK, criteria, max_iterations=10).execute(llm, "A")
    assert result.status is RefinementStatus.STOPPED
    assert "revision 2 repeats the output checked at iteration 1" in result.reason
    assert result.final_output == "A"
    assert result.metrics.score_progression == [0.0, 0.0]
    assert runs == ["A", "B"]
    assert len(llm.calls) == 2


def test_progress_callback_sees_each_record_in_order() -> None:
    seen: list[IterationRecord] = []
    llm = ScriptedLLM(["{}", '{"name": 2}'])
    result = RefinementLoop(TASK, json_criteria(), progress=seen.append).execute(llm, "x")
    assert [r.iteration for r in seen] == [1, 2, 3]
    assert [r.revision for r in seen] == ["{}", '{"name": 2}', None]
    assert tuple(seen) == result.iterations


def test_dataframes_have_one_row_per_iteration_and_per_check() -> None:
    llm = ScriptedLLM(["{}", '{"name": 2}'])
    result = RefinementLoop(TASK, json_criteria()).execute(llm, "x")
    frame = result.to_dataframe()
    assert list(frame["iteration"]) == [1, 2, 3]
    assert list(frame["score"]) == [0.0, 0.5, 1.0]
    assert list(frame["failed_checks"])[1] == "must_contain('\"name\"')"
    assert list(frame["output"]) == ["x", "{}", '{"name": 2}']
    checks = result.checks_dataframe()
    assert len(checks) == 6
    assert list(checks.columns[:5]) == ["iteration", "check", "kind", "source", "passed"]
    assert list(checks[checks["iteration"] == 2]["passed"]) == [True, False]
    assert set(checks["kind"]) == {"deterministic"}
    # Records are plain data: a run survives a round trip through JSON.
    json.dumps(checks.to_dict(orient="records"))


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"max_iterations": 0}, "max_iterations must be an int >= 1, got 0"),
        ({"max_iterations": True}, "max_iterations must be an int >= 1"),
        ({"timeout": timedelta(0)}, "timeout must be a positive"),
        ({"timeout": -5}, "timeout must be a positive"),
        ({"stop_hook": "on_score_above"}, "stop_hook must be a StopHook"),
        ({"task": "  "}, "non-empty task"),
        ({"completion_criteria": ["valid_json"]}, "must be a CompletionCriteria"),
    ],
)
def test_loop_configuration_errors(kwargs: dict[str, Any], fragment: str) -> None:
    arguments: dict[str, Any] = {"task": TASK, "completion_criteria": json_criteria(), **kwargs}
    with pytest.raises(ConfigError, match=fragment):
        RefinementLoop(**arguments)


def test_execute_rejects_what_cannot_chat() -> None:
    loop = RefinementLoop(TASK, json_criteria())
    with pytest.raises(ConfigError, match="agent with chat"):
        loop.execute(object(), "draft")
    with pytest.raises(ConfigError, match="draft must be a str"):
        loop.execute(ScriptedLLM(), None)  # type: ignore[arg-type]


def test_timeout_accepts_seconds() -> None:
    assert RefinementLoop(TASK, json_criteria(), timeout=90).timeout == timedelta(seconds=90)


def test_the_feedback_agent_drives_the_loop() -> None:
    from tnsai_eval.feedback import Agent

    llm = ScriptedLLM(["{}", '{"name": "Ada"}'])
    agent = Agent(llm, system_prompt="You write compact JSON.")
    result = RefinementLoop(TASK, json_criteria()).execute(agent, "Ada")
    assert result.status is RefinementStatus.SUCCESS
    assert result.final_output == '{"name": "Ada"}'
    assert [call.system for call in llm.calls] == ["You write compact JSON."] * 2
    assert "must_contain" in llm.calls[1].prompt
    assert result.metrics.tokens_estimated  # an agent reports text only


def test_an_agent_whose_model_fails_ends_in_error() -> None:
    from tnsai_eval.feedback import Agent

    agent = Agent(ScriptedLLM([TimeoutError("slow")]))
    result = RefinementLoop(TASK, json_criteria()).execute(agent, "Ada")
    assert result.status is RefinementStatus.ERROR
    assert result.final_output == "Ada"
    assert "TimeoutError: slow" in result.reason
