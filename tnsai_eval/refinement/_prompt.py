"""The revision prompt, and unwrapping a reply that is one fenced code block."""

from __future__ import annotations

import re
from collections.abc import Sequence

from tnsai_eval.refinement._checks import CheckOutcome

__all__ = ["first_code_block", "revision_prompt", "strip_code_fence"]

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


# Any fenced block: opening fence with optional info string, body, same fence.
_ANY_BLOCK = re.compile(
    r"^(?P<fence>`{3,}|~{3,})[\w.+#-]*[ \t]*\r?\n(?P<body>.*?)\r?\n?^(?P=fence)[ \t]*$",
    re.S | re.M,
)


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
    match = _ANY_BLOCK.search(reply)
    return reply if match is None else match.group("body")


def _bullet(outcome: CheckOutcome) -> str:
    message = outcome.message.strip()
    if not message:
        return f"- {outcome.name}"
    first, *rest = message.splitlines()
    # Indent continuation lines (a compiler's output) so each stays under its check.
    lines = [f"- {outcome.name}: {first}", *(f"    {line}" for line in rest)]
    return "\n".join(lines)


def revision_prompt(task: str, output: str, outcomes: Sequence[CheckOutcome]) -> str:
    """The one user message asking the model for a revision."""
    failed = [o for o in outcomes if not o.passed]
    passed = [o for o in outcomes if o.passed]
    parts = [
        "Revise the output below so that it completes the task and passes every check.",
        "",
        "## Task",
        task.strip(),
        "",
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
