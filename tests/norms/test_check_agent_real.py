"""check_agent on the real Agent, driven by ScriptedLLM through OpenAI-style tool calls."""

from __future__ import annotations

import json

from tnsai_eval.agents import Agent
from tnsai_eval.llm import Completion
from tnsai_eval.llm._wire import completion_from_body
from tnsai_eval.norms import NormEngine, NormType, norm
from tnsai_eval.testing import ScriptedLLM


def _tool_call(name: str, **arguments: object) -> Completion:
    """A completion asking for one tool call, decoded from the body an OpenAI server sends."""
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": f"call_{name}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
        ],
    }
    return completion_from_body({"choices": [{"message": message}]}, model="m", latency_s=0.0)


@norm(
    type=NormType.PROHIBITION,
    action="delete_user",
    condition="hasConsent == false",
    description="Never delete a user without their consent",
)
@norm(type=NormType.OBLIGATION, action="log_access", description="Log every data access")
class SupportAgent(Agent):
    pass


def lookup_user(user_id: str) -> str:
    return f"user {user_id}: Ada"


def delete_user(user_id: str) -> str:
    return f"deleted {user_id}"


def log_access(user_id: str) -> str:
    return f"logged {user_id}"


def test_tool_calls_the_model_made_are_checked() -> None:
    llm = ScriptedLLM(
        [
            _tool_call("lookup_user", user_id="u1"),
            _tool_call("delete_user", user_id="u1"),
            "Done: the account is gone.",
        ]
    )
    agent = SupportAgent(llm, "You are a support agent.", tools=[lookup_user, delete_user])
    assert agent.chat("Please delete my account") == "Done: the account is gone."
    assert agent.actions == ["lookup_user", "delete_user"]

    engine = NormEngine.from_class(SupportAgent)
    result = engine.check_agent(agent, state={"hasConsent": False})
    assert str(result) == "\n".join(
        [
            "2 norm violations:",
            "- action 'delete_user' is prohibited: Never delete a user without their consent; "
            "its condition `hasConsent == false` holds with hasConsent=False",
            "- obligatory action 'log_access' was not performed: Log every data access; "
            "it always applies (no condition)",
        ]
    )
    # With consent, only the missing log remains.
    with_consent = engine.check_agent(agent, state={"hasConsent": True})
    assert [v.action for v in with_consent.violations] == ["log_access"]


def test_direct_tool_calls_count_too() -> None:
    agent = SupportAgent(ScriptedLLM(default="ok"), tools=[lookup_user, log_access])
    agent.call_tool("lookup_user", user_id="u2")
    agent.call_tool("log_access", user_id="u2")
    result = NormEngine.from_class(agent).check_agent(agent, lambda condition: True)
    assert result.is_allowed
