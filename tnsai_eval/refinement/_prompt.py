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
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line) + 1)
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
    char = line[0]
    end = 3
    while end < len(line) and line[end] == char:
        end += 1
    return line[:end]


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
