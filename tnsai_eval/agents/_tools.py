"""Plain Python callables as agent tools: registry and OpenAI-style schemas."""

from __future__ import annotations

import inspect
import json
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeAlias

from tnsai_eval.errors import ConfigError

__all__ = [
    "Tool",
    "ToolsInput",
    "build_registry",
    "tool_result_text",
    "tool_schema",
]

Tool: TypeAlias = Callable[..., Any]
ToolsInput: TypeAlias = Mapping[str, Tool] | Iterable[Tool] | None

_JSON_TYPES: dict[Any, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    list: "array",
    tuple: "array",
    dict: "object",
}


def build_registry(tools: ToolsInput) -> dict[str, Tool]:
    """Name -> callable from a mapping, or from callables named by ``__name__``."""
    if tools is None:
        return {}
    if isinstance(tools, Mapping):
        pairs = list(tools.items())
    else:
        pairs = [(getattr(tool, "__name__", ""), tool) for tool in tools]
    registry: dict[str, Tool] = {}
    for name, tool in pairs:
        if not callable(tool):
            raise ConfigError(f"tool {name!r} must be callable, got {type(tool).__name__}")
        if not isinstance(name, str) or not name.isidentifier():
            raise ConfigError(
                f"tool name {name!r} is not usable; pass tools as a dict "
                "{'name': callable} to name lambdas and callable objects"
            )
        if name in registry:
            raise ConfigError(f"two tools are named {name!r}; pass a dict to rename one")
        registry[name] = tool
    return registry


def tool_schema(name: str, tool: Tool) -> dict[str, Any]:
    """The OpenAI ``tools`` entry for ``tool``, from its signature and docstring."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    try:
        signature = inspect.signature(tool)
    except (TypeError, ValueError):  # some builtins have no signature
        signature = None
    try:
        hints = typing.get_type_hints(tool)
    except Exception:  # unresolvable annotations only cost the types
        hints = {}
    if signature is not None:
        for parameter in signature.parameters.values():
            if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
                continue
            hint = typing.get_origin(hints.get(parameter.name)) or hints.get(parameter.name)
            kind = _JSON_TYPES.get(hint)
            properties[parameter.name] = {"type": kind} if kind else {}
            if parameter.default is parameter.empty:
                required.append(parameter.name)
    doc = inspect.getdoc(tool) or ""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": doc.strip().splitlines()[0] if doc.strip() else name,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


def tool_result_text(result: Any) -> str:
    """What the model is shown as a tool's result."""
    if isinstance(result, str):
        return result
    try:
        return json.dumps(result, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(result)
