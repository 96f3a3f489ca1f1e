"""Agents: a model with tools and feedback, and what it did for each input (its trajectory).

``Agent.run(input)`` returns a ``Trajectory``: every model turn and tool call
(name, arguments, result or error, latency), the final output, the calls and
tokens it took and why it stopped (``StopReason``). The records are defined in
``tnsai_eval.records`` (scoring and reports read them too) and exported here.

>>> from tnsai_eval.agents import Agent
>>> from tnsai_eval.testing import ScriptedLLM
>>> Agent(ScriptedLLM(default="Hello!")).run("hi").output
'Hello!'
"""

from tnsai_eval.agents._agent import Agent
from tnsai_eval.agents._tools import Tool, ToolsInput, build_registry, tool_schema
from tnsai_eval.records import ModelTurn, Step, StopReason, ToolCall, Trajectory

__all__ = [
    "Agent",
    "ModelTurn",
    "Step",
    "StopReason",
    "Tool",
    "ToolCall",
    "ToolsInput",
    "Trajectory",
    "build_registry",
    "tool_schema",
]
