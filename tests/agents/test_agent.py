"""Agent: prompts sent, learned behaviour, tools and the tool-call loop."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tnsai_eval.agents import Agent
from tnsai_eval.errors import ConfigError, ServerError
from tnsai_eval.feedback import FeedbackType
from tnsai_eval.llm import Completion, Message
from tnsai_eval.llm._wire import completion_from_body
from tnsai_eval.testing import ScriptedLLM


def tool_call_reply(*calls: tuple[str, Any], text: str = "") -> Completion:
    """A completion asking for tools, decoded from an OpenAI chat completion body
    by the same decoder the clients use."""
    tool_calls = [
        {
            "id": f"call_{i}",
            "type": "function",
            "function": {
                "name": name,
                "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
            },
        }
        for i, (name, arguments) in enumerate(calls)
    ]
    message = {"role": "assistant", "content": text or None, "tool_calls": tool_calls}
    body = {"choices": [{"message": message, "finish_reason": "tool_calls"}]}
    return completion_from_body(body, model="scripted", latency_s=0.0)


def lookup_order(order_id: str) -> dict[str, str]:
    """Look up an order by id."""
    return {"order_id": order_id, "status": "shipped"}


def refund(order_id: str, amount: float = 0.0) -> str:
    raise RuntimeError(f"refunds for {order_id} are closed")


def roles(messages: tuple[Message, ...]) -> list[str]:
    return [m.role for m in messages]


# --- chat and the conversation ----------------------------------------------------------


def test_chat_sends_system_prompt_and_the_conversation() -> None:
    llm = ScriptedLLM(["Hi! How can I help?", "Your order shipped."])
    agent = Agent(llm, "You are a support agent.")
    assert agent.chat("hello") == "Hi! How can I help?"
    assert agent.chat("where is my order?") == "Your order shipped."
    first, second = llm.calls
    assert [(m.role, m.content) for m in first.messages] == [
        ("system", "You are a support agent."),
        ("user", "hello"),
    ]
    assert [(m.role, m.content) for m in second.messages] == [
        ("system", "You are a support agent."),
        ("user", "hello"),
        ("assistant", "Hi! How can I help?"),
        ("user", "where is my order?"),
    ]


def test_no_system_message_without_a_prompt() -> None:
    llm = ScriptedLLM(default="ok")
    Agent(llm).chat("hi")
    assert roles(llm.calls[0].messages) == ["user"]


def test_llm_params_go_with_every_call_and_no_tools_param_by_default() -> None:
    llm = ScriptedLLM(default="ok")
    agent = Agent(llm, tools=[lookup_order], llm_params={"temperature": 0, "max_tokens": 50})
    agent.chat("hi")
    assert llm.calls[0].params == {"temperature": 0, "max_tokens": 50}
    Agent(llm, llm_params={"temperature": 0}, send_tool_schemas=True).chat("no tools")
    assert llm.calls[1].params == {"temperature": 0}


def test_tool_schemas_are_sent_on_request() -> None:
    llm = ScriptedLLM(default="ok")
    Agent(llm, tools=[lookup_order], send_tool_schemas=True).chat("hi")
    assert llm.calls[0].params["tool_choice"] == "auto"
    (schema,) = llm.calls[0].params["tools"]
    assert schema == {
        "type": "function",
        "function": {
            "name": "lookup_order",
            "description": "Look up an order by id.",
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "string"}},
                "required": ["order_id"],
            },
        },
    }


def test_a_failed_call_leaves_the_conversation_as_it_was() -> None:
    llm = ScriptedLLM(["first", ServerError("boom", status=503), "third"])
    agent = Agent(llm)
    agent.chat("one")
    with pytest.raises(ServerError):
        agent.chat("two")
    assert [m["content"] for m in agent.history] == ["one", "first"]
    agent.chat("three")
    assert [m.content for m in llm.calls[-1].messages] == ["one", "first", "three"]


def test_reset_starts_a_new_conversation_keeping_feedback() -> None:
    llm = ScriptedLLM(default="ok")
    agent = Agent(llm, "base")
    agent.chat("one")
    agent.feedback_collector.record_user_feedback("preference", "Be brief.")
    agent.reset()
    agent.chat("two")
    assert [m.content for m in llm.calls[-1].messages][1:] == ["two"]
    assert "Be brief." in llm.calls[-1].system


# --- the effective system prompt --------------------------------------------------------


def test_system_prompt_with_rules_and_preferences() -> None:
    llm = ScriptedLLM()
    agent = Agent(llm, "You are a support agent.")
    collector = agent.feedback_collector
    collector.record_user_feedback(FeedbackType.CORRECTION, "Ask for the order number first.")
    collector.record_user_feedback("preference", "Use numbered steps.")
    collector.record_user_feedback("correction", "Refunds take 5-7 days.")
    collector.record_user_feedback("positive", "Great answer!")
    collector.record_user_feedback("negative", "Too slow.")
    assert agent.system_prompt == (
        "You are a support agent.\n"
        "\n"
        "# Learned Behavior\n"
        "\n"
        "## Rules\n"
        "- Ask for the order number first.\n"
        "- Refunds take 5-7 days.\n"
        "\n"
        "## Preferences\n"
        "- Use numbered steps."
    )
    assert llm.calls == []  # built without the model


def test_only_non_empty_subsections_appear() -> None:
    agent = Agent(ScriptedLLM(), "Base.")
    agent.feedback_collector.record_user_feedback("preference", "Be formal.")
    assert agent.system_prompt == "Base.\n\n# Learned Behavior\n\n## Preferences\n- Be formal."
    assert "## Rules" not in agent.system_prompt

    other = Agent(ScriptedLLM(), "Base.")
    other.feedback_collector.record_user_feedback("correction", "Say sorry.")
    assert other.system_prompt == "Base.\n\n# Learned Behavior\n\n## Rules\n- Say sorry."


def test_positive_and_negative_feedback_leave_the_prompt_alone() -> None:
    agent = Agent(ScriptedLLM(), "Base.")
    agent.feedback_collector.record_user_feedback("positive", "Nice.")
    agent.feedback_collector.record_user_feedback("negative", "Bad.")
    assert agent.system_prompt == "Base."


def test_empty_base_prompt_gives_the_section_alone() -> None:
    agent = Agent(ScriptedLLM())
    assert agent.system_prompt == ""
    agent.feedback_collector.record_user_feedback("correction", "Use the customer's name.")
    assert agent.system_prompt == "# Learned Behavior\n\n## Rules\n- Use the customer's name."


def test_chat_uses_the_effective_prompt() -> None:
    llm = ScriptedLLM(default="ok")
    agent = Agent(llm, "Base.")
    agent.chat("a")
    agent.feedback_collector.record_user_feedback("correction", "Never promise dates.")
    agent.chat("b")
    assert llm.calls[0].system == "Base."
    assert llm.calls[1].system == agent.system_prompt
    assert llm.calls[1].system.endswith("## Rules\n- Never promise dates.")


def test_learning_false_makes_the_collector_a_no_op() -> None:
    llm = ScriptedLLM(default="ok")
    agent = Agent(llm, "Base.", tools=[lookup_order], learning=False)
    agent.feedback_collector.record_user_feedback("correction", "Be polite.")
    agent.call_tool("lookup_order", order_id="1")
    assert agent.feedback_collector.feedback == []
    assert agent.feedback_collector.enabled is False
    assert agent.system_prompt == "Base."
    agent.chat("hi")
    assert llm.calls[0].system == "Base."
    assert agent.actions == ["lookup_order"]  # actions are still tracked (norms need them)


# --- tools -------------------------------------------------------------------------------


def test_call_tool_records_success_and_action() -> None:
    agent = Agent(ScriptedLLM(), "Base.", tools={"find": lookup_order})
    assert agent.call_tool("find", order_id="A1") == {"order_id": "A1", "status": "shipped"}
    (fb,) = agent.feedback_collector.feedback
    assert fb.type is FeedbackType.POSITIVE
    assert fb.metadata["tool"] == "find"
    assert agent.actions == ["find"]
    assert agent.system_prompt == "Base."  # tool calls never reach the prompt


def test_call_tool_records_failure_with_the_error_and_reraises() -> None:
    agent = Agent(ScriptedLLM(), "Base.", tools=[refund])
    with pytest.raises(RuntimeError, match="closed"):
        agent.call_tool("refund", order_id="A1")
    (fb,) = agent.feedback_collector.feedback
    assert fb.type is FeedbackType.NEGATIVE
    assert "RuntimeError: refunds for A1 are closed" in fb.content
    assert agent.actions == ["refund"]
    assert "closed" not in agent.system_prompt


def test_bad_arguments_count_as_a_failed_call() -> None:
    agent = Agent(ScriptedLLM(), tools=[lookup_order])
    with pytest.raises(TypeError):
        agent.call_tool("lookup_order", wrong="x")
    assert agent.feedback_collector.feedback[0].type is FeedbackType.NEGATIVE


def test_unknown_tool_names_it_and_the_known_ones() -> None:
    agent = Agent(ScriptedLLM(), tools=[lookup_order, refund])
    with pytest.raises(ConfigError, match=r"'cancel'.*lookup_order, refund"):
        agent.call_tool("cancel")
    assert agent.actions == []
    assert agent.feedback_collector.feedback == []


def test_actions_in_order_and_a_copy() -> None:
    agent = Agent(ScriptedLLM(), tools=[lookup_order])
    agent.call_tool("lookup_order", order_id="1")
    agent.call_tool("lookup_order", order_id="2")
    actions = agent.actions
    actions.append("tampered")
    assert agent.actions == ["lookup_order", "lookup_order"]


def test_register_tool_and_the_read_only_registry() -> None:
    agent = Agent(ScriptedLLM())
    agent.register_tool(lookup_order)
    agent.register_tool(lambda: "pong", name="ping")
    assert sorted(agent.tools) == ["lookup_order", "ping"]
    assert agent.call_tool("ping") == "pong"
    with pytest.raises(ConfigError, match="already registered"):
        agent.register_tool(lookup_order)
    with pytest.raises(TypeError):
        agent.tools["x"] = print  # type: ignore[index]


@pytest.mark.parametrize(
    ("tools", "message"),
    [
        ([lambda: 1], "pass tools as a dict"),
        ([lookup_order, lookup_order], "two tools are named 'lookup_order'"),
        ({"x": 42}, "tool 'x' must be callable"),
        ({"bad name": print}, "'bad name'"),
    ],
)
def test_bad_tool_registries(tools: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Agent(ScriptedLLM(), tools=tools)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"llm": object()}, "LLMClient"),
        ({"max_tool_rounds": -1}, "max_tool_rounds"),
        ({"max_tool_rounds": 1.5}, "max_tool_rounds"),
        ({"system_prompt": None}, "system_prompt"),
    ],
)
def test_bad_agent_options(kwargs: dict[str, Any], message: str) -> None:
    options: dict[str, Any] = {"llm": ScriptedLLM(), **kwargs}
    with pytest.raises(ConfigError, match=message):
        Agent(**options)


# --- the tool-call loop -------------------------------------------------------------------


def test_model_tool_call_is_run_and_the_conversation_continues() -> None:
    llm = ScriptedLLM([tool_call_reply(("lookup_order", {"order_id": "A1"})), "It has shipped."])
    agent = Agent(llm, "Base.", tools=[lookup_order])
    assert agent.chat("where is A1?") == "It has shipped."
    assert agent.actions == ["lookup_order"]
    assert len(llm.calls) == 2
    sent = llm.calls[1].messages
    assert roles(sent) == ["system", "user", "assistant", "tool"]
    assert json.loads(sent[3].content) == {"order_id": "A1", "status": "shipped"}
    # The history keeps the OpenAI fields that tie the result to the call.
    tool_message = agent.history[2]
    assert tool_message["tool_call_id"] == "call_0"
    assert tool_message["name"] == "lookup_order"
    assert agent.history[1]["tool_calls"][0]["function"]["name"] == "lookup_order"
    assert agent.history[-1] == {"role": "assistant", "content": "It has shipped."}


def test_several_tool_calls_in_one_reply() -> None:
    llm = ScriptedLLM(
        [
            tool_call_reply(
                ("lookup_order", {"order_id": "1"}), ("lookup_order", '{"order_id": "2"}')
            ),
            "done",
        ]
    )
    agent = Agent(llm, tools=[lookup_order])
    assert agent.chat("both?") == "done"
    assert agent.actions == ["lookup_order", "lookup_order"]
    assert roles(llm.calls[1].messages) == ["user", "assistant", "tool", "tool"]


def test_tool_rounds_are_bounded() -> None:
    always = tool_call_reply(("lookup_order", {"order_id": "1"}), text="checking")
    llm = ScriptedLLM(default="unused", fn=None)
    llm.add_replies(*[always] * 10)
    agent = Agent(llm, tools=[lookup_order], max_tool_rounds=2)
    assert agent.chat("loop") == "checking"
    assert len(llm.calls) == 3  # two rounds of tools, then the reply is returned as it is
    assert agent.actions == ["lookup_order", "lookup_order"]
    # The unexecuted request is not left dangling in the conversation.
    assert agent.history[-1] == {"role": "assistant", "content": "checking"}


def test_zero_rounds_never_runs_tools() -> None:
    llm = ScriptedLLM([tool_call_reply(("lookup_order", {"order_id": "1"}))])
    agent = Agent(llm, tools=[lookup_order], max_tool_rounds=0)
    assert agent.chat("x") == ""
    assert agent.actions == []


@pytest.mark.parametrize(
    ("call", "expected_error"),
    [
        (
            ("cancel_order", {}),
            "unknown tool 'cancel_order'; available tools: lookup_order, refund",
        ),
        (("refund", {"order_id": "9"}), "RuntimeError: refunds for 9 are closed"),
        (("lookup_order", {"wrong": 1}), "TypeError"),
    ],
)
def test_model_mistakes_go_back_to_it_as_text(call: tuple[str, Any], expected_error: str) -> None:
    llm = ScriptedLLM([tool_call_reply(call), "sorry"])
    agent = Agent(llm, tools=[lookup_order, refund])
    assert agent.chat("go") == "sorry"
    tool_message = llm.calls[1].messages[-1]
    assert tool_message.role == "tool"
    assert tool_message.content.startswith("error:")
    assert expected_error in tool_message.content


def test_failed_model_tool_call_is_recorded_as_negative_not_in_prompt() -> None:
    llm = ScriptedLLM([tool_call_reply(("refund", {"order_id": "9"})), "sorry"])
    agent = Agent(llm, "Base.", tools=[refund])
    agent.chat("refund please")
    assert [fb.type for fb in agent.feedback_collector.feedback] == [FeedbackType.NEGATIVE]
    assert agent.actions == ["refund"]
    assert llm.calls[1].system == "Base."


def test_replies_without_tool_calls_are_plain_text() -> None:
    raw = {"choices": [{"message": {"role": "assistant", "content": "plain"}}]}
    llm = ScriptedLLM([Completion(text="plain", raw=raw)])
    agent = Agent(llm, tools=[lookup_order])
    assert agent.chat("x") == "plain"
    assert len(llm.calls) == 1


def test_a_tool_call_without_id_gets_one_that_its_result_matches() -> None:
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "type": "function",
                "function": {"name": "lookup_order", "arguments": {"order_id": "7"}},
            }
        ],
    }
    reply = completion_from_body({"choices": [{"message": message}]}, model="m", latency_s=0.0)
    llm = ScriptedLLM([reply, "ok"])
    agent = Agent(llm, tools=[lookup_order])
    agent.chat("x")
    assistant, tool = agent.history[1], agent.history[2]
    assert assistant["tool_calls"][0]["id"] == tool["tool_call_id"] == "call_0"
    assert json.loads(tool["content"])["order_id"] == "7"  # arguments given as an object
