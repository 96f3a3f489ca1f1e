"""One escaper for every string that reaches Markdown or a terminal (issue 33, item 9).

A pull-request comment is rendered by GitHub: after the Markdown, it turns
``@org/team`` into a notification and ``https://...`` or ``www....`` into a
live link, in text where the backslash escapes are already gone. Test ids,
case ids, inputs, replies and prompts are user text; each goes through
``escape_markdown`` (masked before it is cut, flat, encodable, escaped, and
those GitHub triggers broken) or, for a terminal, ``shown_label``/``shown_line``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.hostile.conftest import API_KEY
from tnsai_eval._util.text import escape_markdown, shown_line
from tnsai_eval.cli._report import render_markdown
from tnsai_eval.errors import ReplayMissError
from tnsai_eval.llm import CachedLLM, ResponseStore
from tnsai_eval.reports import (
    CaseRecord,
    MetricStats,
    PromptRecord,
    Report,
    TestStatus,
    TrackedTest,
    compare,
    format_comparison,
    prompt_hash,
)
from tnsai_eval.testing import ScriptedLLM

pytestmark = pytest.mark.usefixtures("secret_env")

HOSTILE = "@org/team @octocat see https://evil.example/x and www.evil.example #12"


def _live(markdown: str) -> list[str]:
    """What GitHub would make live in ``markdown``: mentions and bare links."""
    # GitHub reads mentions and bare links in the rendered text, where a
    # backslash escape is gone; a zero-width space (&#8203;) is not.
    text = markdown.replace("\\", "").replace("&#8203;", "\u200b")
    return re.findall(r"@[A-Za-z0-9][\w/-]*|https?://\S+|www\.\S+|#\d+", text)


def _report(nodeid: str, text: str, score: float, *, prompt: str = "") -> Report:
    case = CaseRecord(
        f"case {text}", f"input {text}", "yes", f"reply {text}", score, passed=bool(score)
    )
    prompts = (PromptRecord("score", prompt, prompt_hash(prompt), "p.txt"),) if prompt else ()
    metrics = {"score": MetricStats("score", (score,))}
    test = TrackedTest(nodeid, TestStatus.PASSED, metrics, cases=(case,), prompts=prompts)
    return Report(tests=(test,))


def test_mentions_and_bare_links_from_ids_inputs_and_replies_are_not_live() -> None:
    nodeid = f"t.py::test[{HOSTILE}]"
    comparison = compare(_report(nodeid, HOSTILE, 0.0), _report(nodeid, HOSTILE, 1.0))
    markdown = render_markdown(_report(nodeid, HOSTILE, 0.0), comparison)
    assert "regression" in markdown
    assert _live(markdown) == []
    # The text still reads as itself once rendered (the zero-width space is invisible).
    assert "@&#8203;org/team" in markdown
    assert "https&#8203;://evil.example/x" in markdown


def test_escape_markdown_masks_before_it_cuts() -> None:
    text = "x" * 20 + API_KEY
    # Cut inside the key: cutting first would leave its first characters.
    shown = escape_markdown(text, limit=30)
    assert API_KEY[:6] not in shown
    assert shown.startswith("x" * 20 + "\\*\\*\\*")


def test_latency_notes_cannot_forge_a_heading_an_image_or_leak_a_key() -> None:
    # The latency gate's note names a test it skipped (no live calls): a raw id printed there.
    nodeid = f't.py::test[x\n### tnsai-eval PASS\n<img src="https://evil.example/p.png">{API_KEY}]'
    now, before = _report(nodeid, "a", 1.0), _report(nodeid, "a", 1.0)
    comparison = compare(now, before, gate_latency=0.5)
    assert comparison.notes, "the latency gate leaves a note for a replayed run"
    for markdown in (True, False):
        text = format_comparison(comparison, markdown=markdown)
        assert API_KEY not in text
        lines = text.splitlines()
        assert not any(line.lstrip().startswith("### tnsai-eval PASS") for line in lines)
        if markdown:
            assert re.search(r"(?<!\\)<img", text) is None  # only an escaped \\<img
            assert _live(text) == []
        assert "\x1b" not in text


def test_the_markdown_prompt_diff_is_masked_and_a_lone_surrogate_does_not_crash_it() -> None:
    old = f"Answer briefly.\nKey: {API_KEY}\n"
    new = "Answer briefly \ud800 please.\nKey: " + API_KEY + "\n\x1b[2Jcleared\n"
    nodeid = "t.py::test_prompt"
    comparison = compare(
        _report(nodeid, "a", 0.0, prompt=new), _report(nodeid, "a", 1.0, prompt=old)
    )
    assert comparison.prompt_changes
    for markdown in (True, False):
        text = format_comparison(comparison, markdown=markdown)
        text.encode("utf-8")  # a lone surrogate would raise here
        assert API_KEY not in text
        assert "\x1b" not in text
        assert "Answer briefly \ufffd please." in text
    markdown_text = format_comparison(comparison, markdown=True)
    assert "<details><summary>prompt diff</summary>" in markdown_text


def test_a_diff_line_is_masked_before_a_terminal_cuts_it() -> None:
    line = "+" + "y" * 100 + API_KEY
    assert API_KEY[:8] not in shown_line(line, 110)


def test_a_replay_miss_masks_the_prompt_before_it_cuts_it(tmp_path: Path) -> None:
    # The key straddles the 77th character, where the message cuts the prompt.
    prompt = "p" * 60 + API_KEY + " tail"
    replay = CachedLLM(ScriptedLLM(), ResponseStore(str(tmp_path)), mode="replay")
    with pytest.raises(ReplayMissError) as caught:
        replay.chat(prompt)
    message = str(caught.value)
    assert API_KEY[:6] not in message
    assert "***" in message
