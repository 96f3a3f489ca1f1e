"""PromptOptimizer.optimize(prompt, cases, target=factory): a prompt optimized inside the app
(a function, an agent with that system prompt), held out, paired, bounded by its budget."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest

from tests.llm.fake_server import FakeOpenAIServer, Recorded, Step, completion_body
from tnsai_eval.agents import Agent
from tnsai_eval.errors import ConfigError
from tnsai_eval.evaluation import PromptVariant
from tnsai_eval.llm import Completion, FrontClient, OpenAIClient
from tnsai_eval.llm import ToolCall as Request
from tnsai_eval.optimizer import PromptOptimizer
from tnsai_eval.records import CaseState
from tnsai_eval.scoring import LabelEvaluator, TestCase, ToolCallMatch
from tnsai_eval.testing import ScriptedLLM

CAREFUL = "Reply with only the answer itself"  # what the ANSWER_ONLY strategy adds


def content_of(message: Any) -> str:
    return str(message["content"] if isinstance(message, Mapping) else message.content)


def role_of(message: Any) -> str:
    return str(message["role"] if isinstance(message, Mapping) else message.role)


def system_of(messages: Any) -> str:
    return content_of(messages[0])


def ticket_app(model: FrontClient) -> Callable[[str], Callable[[str], str]]:
    """``factory(prompt)``: the app's ticket router with ``prompt`` as its system prompt."""

    def factory(prompt: str) -> Callable[[str], str]:
        def route(ticket: str) -> str:
            messages = [{"role": "system", "content": prompt}, {"role": "user", "content": ticket}]
            return model.chat(messages).text

        return route

    return factory


def labelled(n: int) -> list[TestCase]:
    return [TestCase(f"ticket {i}", "billing" if i % 3 else "other") for i in range(n)]


def router_model() -> ScriptedLLM:
    """Answers the right label only when the system prompt asks for the answer alone."""

    def answer(messages: Any, params: Mapping[str, Any]) -> str:
        ticket = int(content_of(messages[-1]).split()[-1])
        right = "billing" if ticket % 3 else "other"
        return right if CAREFUL in system_of(messages) else f"I think it is {right}-ish"

    return ScriptedLLM(fn=answer)


def router_optimizer(**options: Any) -> PromptOptimizer:
    """One round of ANSWER_ONLY on the label task, no rewrite."""
    return PromptOptimizer(
        ScriptedLLM(default="x"),
        candidate_strategies=["answer_only"],
        evaluator=LabelEvaluator(["billing", "other"]),
        max_iterations=1,
        rewrite=False,
        **options,
    )


def test_a_system_prompt_inside_a_function_target_is_improved_and_held_out() -> None:
    inner = router_model()
    client = FrontClient(inner)
    optimizer = router_optimizer()
    cases = labelled(30)
    result = optimizer.optimize("Route the ticket.", cases, target=ticket_app(client))
    assert result.initial_score == 0.0
    assert result.score == 1.0
    assert CAREFUL in result.best_prompt
    # Held out: 9 of 30 cases, scored with the initial and the best prompt, paired.
    assert (result.selection_cases, result.validation_cases) == (21, 9)
    assert (result.initial_validation_score, result.validation_score) == (0.0, 1.0)
    assert result.validation_better == 9
    assert result.validation_p_value == pytest.approx(2 * 0.5**9)
    # The constant-answer check applies as for a prompt: answering 'billing' to every
    # held-out case scores 6 of 9, and 1.0 is not shown better than that on 9 cases.
    assert result.constant_baseline is not None
    assert (result.constant_baseline.label, result.constant_baseline.score) == ("billing", 6 / 9)
    assert result.chance_flag is not None
    assert (result.verdict, result.was_improved) == ("inconclusive", False)
    # Every target call went to the model, through the app, and was counted.
    assert result.calls == len(inner.calls) == 21 + 21 + 2 * 9
    rows = result.to_dataframe()
    assert set(rows["strategy"]) == {"initial", "answer_only"}


class Desk:
    """A scripted agent model: it looks the order up first only when told to."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, messages: Any, params: Mapping[str, Any]) -> Completion:
        self.calls += 1
        careful = "look the order up" in system_of(messages)
        done = [role_of(m) for m in messages].count("tool")
        order = content_of(messages[1]).split()[-1]
        plan = ["lookup_order", "issue_refund"] if careful else ["issue_refund"]
        if done < len(plan):
            call = Request(f"c{done}", plan[done], {"order_id": order})
            return Completion("", tool_calls=(call,))
        return Completion("Refunded.")


def lookup_order(order_id: str) -> str:
    """Look up an order by its id."""
    return "delivered"


def issue_refund(order_id: str) -> str:
    """Refund an order."""
    return f"refunded {order_id}"


def refund_cases(n: int) -> list[TestCase]:
    return [
        TestCase(
            f"Refund order A{i}",
            expected_tool_calls=[
                {"name": "lookup_order", "arguments": {"order_id": f"A{i}"}},
                {"name": "issue_refund", "arguments": {"order_id": f"A{i}"}},
            ],
        )
        for i in range(n)
    ]


def desk_factory(model: FrontClient) -> Callable[[str], Callable[[], Agent]]:
    def factory(prompt: str) -> Callable[[], Agent]:
        return lambda: Agent(
            model, prompt, tools=[lookup_order, issue_refund], learning=False, max_steps=4
        )

    return factory


def rewriter() -> ScriptedLLM:
    return ScriptedLLM(default="You are a support desk. Always look the order up first.")


def test_an_agents_system_prompt_is_optimized_on_its_tool_calls() -> None:
    script = Desk()
    optimizer = PromptOptimizer(
        rewriter(),
        candidate_strategies=["concise"],
        evaluator=ToolCallMatch("in_order", "subset"),
        max_iterations=1,
    )
    result = optimizer.optimize(
        "You are a support desk.",
        refund_cases(10),
        target=desk_factory(FrontClient(ScriptedLLM(fn=script))),
    )
    assert result.initial_score == 0.0
    assert result.score == 1.0
    assert "look the order up" in result.best_prompt
    assert (result.initial_validation_score, result.validation_score) == (0.0, 1.0)
    # Agent turns: 2 per case for the careless prompt, 3 for the careful one, plus
    # the rewrite request; all counted as the run's calls.
    assert result.calls == script.calls + 1
    held_out = [r for r in result.case_results if r.split == "validation"]
    assert len(held_out) == 2 * result.validation_cases


@pytest.mark.parametrize("max_calls", [12, 25, 40])
def test_the_call_cap_is_never_exceeded_with_several_calls_per_case(max_calls: int) -> None:
    script, rewrites = Desk(), rewriter()
    model = FrontClient(ScriptedLLM(fn=script))
    optimizer = PromptOptimizer(
        rewrites,
        candidate_strategies=["concise", "answer_only"],
        evaluator=ToolCallMatch("in_order", "subset"),
        max_iterations=3,
        max_calls=max_calls,
        split=0.2,
    )
    result = optimizer.optimize(
        "You are a support desk.", refund_cases(10), target=desk_factory(model)
    )
    # The agent's turns and the rewrite requests together.
    assert script.calls + len(rewrites.calls) <= max_calls
    assert result.calls <= max_calls
    # Cases the budget cut short are not scored: no row is a budget's 0.
    assert all(r.state is not CaseState.NOT_RUN for r in result.case_results)


def test_a_held_out_reserve_counts_the_agents_calls_per_case() -> None:
    # Each careless case takes 2 calls: a reserve of one call per held-out case would
    # leave the held-out check short. The search stops where the check still fits.
    script = Desk()
    optimizer = PromptOptimizer(
        rewriter(),
        candidate_strategies=["concise", "answer_only"],
        evaluator=ToolCallMatch("in_order", "subset"),
        max_iterations=3,
        max_calls=50,
        split=0.3,
        concurrency=1,
    )
    result = optimizer.optimize(
        "You are a support desk.",
        refund_cases(10),
        target=desk_factory(FrontClient(ScriptedLLM(fn=script))),
    )
    assert result.validation_skipped is None
    assert result.validation_scored == result.validation_cases == 3
    assert script.calls + 1 <= 50


def test_a_target_over_http_counts_each_attempt() -> None:
    # The app calls a real server on 127.0.0.1 that fails its first request: the
    # retry is an attempt of the run's, as for a prompt's calls.
    def body(request: Recorded) -> bytes:
        system = str(request.json["messages"][0]["content"])
        ticket = int(str(request.json["messages"][-1]["content"]).split()[-1])
        right = "billing" if ticket % 3 else "other"
        return completion_body(request, right if CAREFUL in system else "no idea")

    with (
        FakeOpenAIServer(default=Step(body=body)) as server,
        OpenAIClient("m", base_url=server.base_url, max_retries=2) as http,
    ):
        server.script(Step.error(503))
        optimizer = router_optimizer(concurrency=1)
        result = optimizer.optimize("Route.", labelled(10), target=ticket_app(FrontClient(http)))
        assert len(server.requests) == result.calls == 1 + 7 + 7 + 2 * 3
    assert result.retries == 1
    assert result.validation_score == 1.0


def test_a_raising_factory_or_target_is_an_errored_case_not_a_crash() -> None:
    def factory(prompt: str) -> Callable[[str], str]:
        if CAREFUL in prompt:
            raise RuntimeError("cannot build the app with this prompt")

        def route(ticket: str) -> str:
            if ticket.endswith("3"):
                raise ValueError("the app failed on ticket 3")
            return "billing"

        return route

    optimizer = router_optimizer(split=None)
    result = optimizer.optimize("Route.", labelled(6), target=factory)
    initial, variant = result.variants[0], result.variants[1]
    errors = [r.error for r in result.case_results if r.variant == initial.id and r.error]
    assert errors == ["ValueError: the app failed on ticket 3"]
    failed = [r for r in result.case_results if r.variant == variant.id]
    assert {r.error_type for r in failed} == {"RuntimeError"}
    assert all(str(r.error).startswith("target factory RuntimeError:") for r in failed)
    assert result.best_prompt == "Route."


@pytest.mark.parametrize(
    ("options", "prompt", "target", "message"),
    [
        ({"evaluator": ToolCallMatch()}, "p", None, "scores trajectories, not replies"),
        ({}, "p", "not callable", "target must be a factory"),
        ({"demo_sets": 1}, "p", lambda p: p, "demo_sets=1"),
        ({}, PromptVariant("p", system="s"), lambda p: p, "instruction only"),
    ],
)
def test_what_a_target_needs_is_checked_before_any_call(
    options: dict[str, Any], prompt: str | PromptVariant, target: Any, message: str
) -> None:
    llm = ScriptedLLM()
    with pytest.raises(ConfigError, match=message):
        PromptOptimizer(llm, **options).optimize(prompt, labelled(4), target=target)
    assert llm.calls == []
