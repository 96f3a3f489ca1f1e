"""The revision prompt, and unwrapping a reply that is one fenced code block."""

from __future__ import annotations

import re
from collections.abc import Sequence

from tnsai_eval.refinement._checks import CheckOutcome

__all__ = ["revision_prompt", "strip_code_fence"]

# The whole reply is one fenced block: ```lang? newline body newline? ```.
# The body may not contain a fence itself, otherwise the reply is several
# blocks (or prose around them) and is kept as written.
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
    fence_char = match.group("fence")[0]
    if fence_char * 3 in body:
        return reply
    return body


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
