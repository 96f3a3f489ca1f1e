"""A prompt variant beyond one user message: system message, demos and response format.

The optimizer's unit of search is a ``PromptVariant``: the instruction text
(what strategies and rewrites change), an optional system message, worked
examples (``Demo``) shown either as chat turns (a user message and the
assistant's reply per demo, before the case) or inline in the instruction,
and an optional ``response_format``. ``messages(case_input)`` is exactly what
the optimizer sends to score a case, so a winning variant can be sent as is.
A case is never shown to the model as its own demo: the demo with the case's
input is left out of that case's messages.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from tnsai_eval._util.plain import json_ready
from tnsai_eval.errors import ConfigError
from tnsai_eval.llm import Message

__all__ = [
    "DEFAULT_TEMPLATE",
    "Demo",
    "DemoStyle",
    "PromptVariant",
    "demos_text",
    "examples_block",
]

#: How a case call's user message is made from the prompt and the case's input.
DEFAULT_TEMPLATE = "{prompt}\n\n{input}"
DemoStyle = Literal["chat", "inline"]
_EXAMPLES_HEADER = "Examples:"


@dataclass(frozen=True, slots=True)
class Demo:
    """One worked example: an input and the reply the model should imitate.

    ``bootstrapped`` marks a reply the model itself gave and that scored 1.0
    (rather than the case's expected answer).

    >>> Demo("2 + 2", "4")
    Demo(input='2 + 2', output='4', bootstrapped=False)
    """

    input: str
    output: str
    bootstrapped: bool = False


def examples_block(demos: Sequence[Demo]) -> str:
    """Demos as inline text: ``Examples:`` then ``Input: ...`` / ``Output: ...`` lines.

    >>> print(examples_block([Demo("2 + 2", "4")]))
    Examples:
    Input: 2 + 2
    Output: 4
    """
    if not demos:
        return ""
    pairs = (f"Input: {d.input.strip()}\nOutput: {d.output.strip()}" for d in demos)
    return "\n".join([_EXAMPLES_HEADER, *pairs])


def demos_text(demos: Sequence[Demo], style: str | None = None) -> str:
    """Demos on one line for a table cell: ``input -> output`` pairs, ``|``-separated.

    >>> demos_text([Demo("1 + 1", "2"), Demo("2 + 2", "4", bootstrapped=True)], "chat")
    'chat: 1 + 1 -> 2 | 2 + 2 -> 4 (own reply)'
    >>> demos_text([])
    ''
    """
    if not demos:
        return ""
    pairs = " | ".join(
        f"{' '.join(d.input.split())} -> {' '.join(d.output.split())}"
        + (" (own reply)" if d.bootstrapped else "")
        for d in demos
    )
    return f"{style}: {pairs}" if style else pairs


@dataclass(frozen=True, slots=True)
class PromptVariant:
    """The full prompt of one variant, as sent for every case.

    >>> variant = PromptVariant(
    ...     "Add the numbers.", system="You are terse.", demos=(Demo("1 + 1", "2"),)
    ... )
    >>> [(m.role, m.content) for m in variant.messages("2 + 2")]  # doctest: +NORMALIZE_WHITESPACE
    [('system', 'You are terse.'), ('user', 'Add the numbers.\\n\\n1 + 1'),
     ('assistant', '2'), ('user', 'Add the numbers.\\n\\n2 + 2')]
    >>> [m.role for m in variant.messages("1 + 1")]  # never its own demo
    ['system', 'user']
    >>> print(PromptVariant("Add.", demos=(Demo("1 + 1", "2"),), demo_style="inline").prompt_text())
    Add.
    <BLANKLINE>
    Examples:
    Input: 1 + 1
    Output: 2
    """

    instruction: str
    system: str | None = None
    demos: tuple[Demo, ...] = ()
    demo_style: DemoStyle = "chat"
    response_format: Mapping[str, Any] | None = field(default=None, hash=False)

    def __post_init__(self) -> None:
        if not isinstance(self.instruction, str):
            raise ConfigError(f"instruction must be a str, got {type(self.instruction).__name__}")
        if self.system is not None and not isinstance(self.system, str):
            raise ConfigError(f"system must be a str or None, got {type(self.system).__name__}")
        if self.demo_style not in ("chat", "inline"):
            raise ConfigError(f"demo_style must be 'chat' or 'inline', got {self.demo_style!r}")
        if not all(isinstance(d, Demo) for d in self.demos):
            raise ConfigError(f"demos must be Demo records, got {self.demos!r}")
        if self.response_format is not None and not isinstance(self.response_format, Mapping):
            raise ConfigError(
                f"response_format must be a mapping or None, got {self.response_format!r}"
            )

    def _shown(self, leave_out: str | None) -> list[Demo]:
        return [d for d in self.demos if leave_out is None or d.input != leave_out]

    def prompt_text(self, *, leave_out: str | None = None) -> str:
        """The instruction, followed by the inline demos (if inline), leaving out
        the demo whose input is ``leave_out``."""
        base = self.instruction.rstrip()
        if self.demo_style != "inline":
            return self.instruction
        block = examples_block(self._shown(leave_out))
        if not block:
            return self.instruction
        return f"{base}\n\n{block}" if base else block

    def messages(self, case_input: str, *, template: str = DEFAULT_TEMPLATE) -> list[Message]:
        """The messages that ask for ``case_input``'s reply (its own demo left out)."""
        prompt = self.prompt_text(leave_out=case_input).rstrip()
        out: list[Message] = []
        if self.system:
            out.append(Message("system", self.system))
        if self.demo_style == "chat":
            for demo in self._shown(case_input):
                out.append(Message("user", template.format(prompt=prompt, input=demo.input)))
                out.append(Message("assistant", demo.output))
        out.append(Message("user", template.format(prompt=prompt, input=case_input)))
        return out

    def key(self) -> str:
        """A text that is equal for equal variants (what makes two variants duplicates)."""
        return json.dumps(
            [
                self.instruction,
                self.system,
                [[d.input, d.output] for d in self.demos],
                self.demo_style if self.demos else "",
                self.response_format,
            ],
            sort_keys=True,
            default=repr,
        )

    def to_dict(self) -> dict[str, Any]:
        """The whole variant as JSON-able data (what ``--out``'s ``variants.json`` holds).

        >>> PromptVariant("Add.", system="Be terse.", demos=(Demo("1 + 1", "2"),)).to_dict()
        ... # doctest: +NORMALIZE_WHITESPACE
        {'instruction': 'Add.', 'system': 'Be terse.',
         'demos': [{'input': '1 + 1', 'output': '2', 'bootstrapped': False}],
         'demo_style': 'chat', 'response_format': None}
        """
        return {
            "instruction": self.instruction,
            "system": self.system,
            "demos": [dataclasses.asdict(d) for d in self.demos],
            "demo_style": self.demo_style if self.demos else None,
            "response_format": (
                None if self.response_format is None else json_ready(self.response_format)
            ),
        }

    def describe(self) -> str:
        """A short summary of what the variant carries beyond its instruction.

        >>> PromptVariant("Add.", system="Be terse.", demos=(Demo("1 + 1", "2"),)).describe()
        'system message; 1 demo(s) as chat'
        """
        parts = []
        if self.system:
            parts.append("system message")
        if self.demos:
            boot = sum(d.bootstrapped for d in self.demos)
            parts.append(
                f"{len(self.demos)} demo(s) as {self.demo_style}"
                + (f", {boot} bootstrapped" if boot else "")
            )
        if self.response_format is not None:
            parts.append(f"response_format {self.response_format.get('type', '?')}")
        return "; ".join(parts)
