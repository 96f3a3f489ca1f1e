"""The revision prompt, and unwrapping a reply that is one fenced code block."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable, Sequence

from tnsai_eval.errors import ConfigError
from tnsai_eval.records import CheckOutcome

__all__ = [
    "REPLY_PARSERS",
    "first_code_block",
    "first_json_block",
    "resolve_reply_parser",
    "revision_prompt",
    "strip_code_fence",
]

# How many opening brackets first_json_block tries as the start of a JSON value.
_JSON_STARTS = 20

# The whole reply is one fenced block: an opening fence (``` or ~~~ with an
# optional language), the body, the same fence, and only whitespace around.
_FENCED = re.compile(
    r"\A\s*(?P<fence>`{3,}|~{3,})[\w.+#-]*[ \t]*\r?\n(?P<body>.*?)\r?\n?(?P=fence)\s*\Z", re.S
)


def strip_code_fence(reply: str) -> str:
    """The body of ``reply`` when the whole reply is one fenced block, else ``reply``.

    Small models wrap JSON or code in ```json fences even when told not to;
    the fences would fail ``valid_json`` and compilers for no real reason.

    >>> strip_code_fence('```json\\n{"a": 1}\\n```\\n')
    '{"a": 1}'
    >>> strip_code_fence('Here it is:\\n```\\nx\\n```')
    'Here it is:\\n```\\nx\\n```'
    """
    match = _FENCED.match(reply)
    if match is None:
        return reply
    body = match.group("body")
    # A line inside that starts with the fence would close it (CommonMark): the
    # reply is then several blocks, not one.
    if re.search(rf"^[ \t]*{re.escape(match.group('fence'))}", body, re.M):
        return reply
    return body


# An opening fence line (without its "\n"): ``` or ~~~ (or longer), an
# optional info string such as a language, trailing blanks.
_OPEN_LINE = re.compile(r"(?P<fence>`{3,}|~{3,})[\w.+#-]*[ \t]*\r?")


def first_code_block(reply: str) -> str:
    """The body of the first fenced block in ``reply``; ``reply`` when it has none.

    A more forgiving ``reply_parser`` for ``RefinementLoop`` when the output is
    code or data and the model cannot help chatting around it (SmolLM2-135M
    answers "```json ... ```" and then a sentence about it). Do not use it when
    the output itself is markdown that may contain code blocks.

    >>> first_code_block('```json\\n{"a": 1}\\n```\\n\\nThis JSON has the key a.')
    '{"a": 1}'
    >>> first_code_block("no block here")
    'no block here'
    """
    # Line by line in linear time (a backtracking regex was quadratic on many
    # unclosed fences: 40 KB took 15-20 s). The block is the earliest opening
    # line that some later line closes with exactly the same fence.
    lines = reply.split("\n")
    starts = list(itertools.accumulate((len(line) + 1 for line in lines[:-1]), initial=0))
    # Backward pass: for each opening line, the nearest later closing line.
    nearest: dict[str, int] = {}
    closes_at: dict[int, int] = {}
    for index in range(len(lines) - 1, -1, -1):
        line = lines[index]
        fence = _fence_of(line)
        if fence is None:
            continue
        # The last line has no "\n" after it, so it can close but not open.
        opening = index < len(lines) - 1 and _OPEN_LINE.fullmatch(line) is not None
        if opening and fence in nearest:
            closes_at[index] = nearest[fence]
        if line.rstrip(" \t") == fence:
            nearest[fence] = index
    if not closes_at:
        return reply
    first = min(closes_at)
    body = reply[starts[first + 1] : starts[closes_at[first]]]
    body = body[:-1] if body.endswith("\n") else body
    return body[:-1] if body.endswith("\r") else body


def _fence_of(line: str) -> str | None:
    """The run of 3+ backticks or tildes that starts ``line``, if any."""
    if not line.startswith(("```", "~~~")):
        return None
    return line[: len(line) - len(line.lstrip(line[0]))]


def first_json_block(reply: str) -> str:
    """The first JSON document in ``reply``; ``reply`` when it holds none.

    The default ``reply_parser`` when the criteria ask for JSON
    (``valid_json``, ``json_schema``). Tried in order: the whole reply; the
    first fenced block whose body is JSON; the first ``{`` or ``[`` (of the
    first 20) where a JSON value starts. SmolLM2-135M asked for JSON answers
    with several fenced blocks and chatter between them; this keeps the first.

    >>> first_json_block('Sure! ```json\\n{"a": 1}\\n``` and ```json\\n{"b": 2}\\n```')
    '{"a": 1}'
    >>> first_json_block('The record is {"name": "Alice"}. Hope it helps!')
    '{"name": "Alice"}'
    >>> first_json_block("no JSON here")
    'no JSON here'
    """
    if _is_json(reply):
        return reply.strip()
    # The first few blocks, each found in linear time (first_code_block).
    rest = reply
    for _ in range(_JSON_STARTS):
        body = first_code_block(rest)
        if body is rest:
            break
        if _is_json(body):
            return body.strip()
        rest = rest[rest.find(body) + len(body) :]
    decoder = json.JSONDecoder()
    starts = (i for i, ch in enumerate(reply) if ch in "{[")
    for _, start in zip(range(_JSON_STARTS), starts, strict=False):
        try:
            _, end = decoder.raw_decode(reply, start)
        except (ValueError, RecursionError):  # RecursionError: nested past the decoder's depth
            continue
        return reply[start:end]
    return reply


#: The reply parsers that the marker, ``refine()`` and the CLI name.
REPLY_PARSERS: dict[str, Callable[[str], str] | None] = {}


def resolve_reply_parser(
    value: str | Callable[[str], str] | None,
) -> str | Callable[[str], str] | None:
    """A ``reply_parser`` option as ``RefinementLoop`` takes it.

    A callable is kept; ``None`` or ``"none"`` keeps replies verbatim;
    ``"auto"`` lets the loop choose (``first_json_block`` when the criteria ask
    for JSON, else ``strip_code_fence``); ``"first_code_block"``,
    ``"first_json_block"`` and ``"strip_code_fence"`` name those functions.

    >>> resolve_reply_parser("first_code_block") is first_code_block
    True
    """
    if value is None or callable(value) or value == "auto":
        return value
    if isinstance(value, str) and value in REPLY_PARSERS:
        return REPLY_PARSERS[value]
    names = ", ".join(["auto", *REPLY_PARSERS])
    raise ConfigError(f"reply_parser must be a function, None or one of {names}; got {value!r}")


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except (ValueError, RecursionError):  # a reply nested deeper than the decoder goes
        return False
    return True


def _bullet(outcome: CheckOutcome) -> str:
    message = outcome.message.strip()
    if not message:
        return f"- {outcome.name}"
    first, *rest = message.splitlines()
    # Indent continuation lines (a compiler's output) so each stays under its check.
    lines = [f"- {outcome.name}: {first}", *(f"    {line}" for line in rest)]
    return "\n".join(lines)


def revision_prompt(
    task: str, output: str, outcomes: Sequence[CheckOutcome], *, input: str | None = None
) -> str:
    """The one user message asking the model for a revision.

    ``input`` is what the output was made from (``refine(draft, input=...)``):
    without it, a model asked to fix "the customer as JSON" cannot know the
    customer's name.
    """
    failed = [o for o in outcomes if not o.passed]
    passed = [o for o in outcomes if o.passed]
    parts = [
        "Revise the output below so that it completes the task and passes every check.",
        "",
        "## Task",
        task.strip(),
        "",
    ]
    if input is not None and input.strip():
        parts += ["## Input", "<<<INPUT", input, "INPUT>>>", ""]
    parts += [
        "## Current output",
        "<<<OUTPUT",
        output,
        "OUTPUT>>>",
        "",
        f"## Failed checks ({len(failed)} of {len(outcomes)}): fix every one",
        *(_bullet(o) for o in failed),
    ]
    if passed:
        parts += ["", "## Passing checks: keep them passing", *(f"- {o.name}" for o in passed)]
    parts += [
        "",
        "## Reply",
        "Reply with the complete revised output and nothing else: no explanation, no "
        "preamble, no markdown code fences, no <<<OUTPUT markers.",
    ]
    return "\n".join(parts)


REPLY_PARSERS.update(
    {
        "none": None,
        "first_code_block": first_code_block,
        "first_json_block": first_json_block,
        "strip_code_fence": strip_code_fence,
    }
)
