"""Mask, then cut: no path that shortens text leaves a piece of a key behind.

Each test drives one real path (a check's output tail, a test's failure
message in the report, a model's bad tool-call arguments) with a key placed
where the old order of operations (cut, then mask) leaked part of it.
"""

from __future__ import annotations

import pytest

from tests.hostile.conftest import API_KEY
from tnsai_eval._util.secrets import mask_then_cut, mask_then_keep_end

pytestmark = pytest.mark.usefixtures("secret_env")


def test_a_tail_cut_from_a_stream_keeps_no_remnant_of_a_straddling_key() -> None:
    # The reader kept only the end of the output: the key's start is gone.
    tail = API_KEY[10:] + " done " + API_KEY + " end"
    shown = mask_then_keep_end(tail, 4096, [API_KEY], truncated=True)
    assert API_KEY[10:] not in shown
    assert API_KEY[-8:] not in shown
    assert shown.endswith(" end")


def test_mask_then_cut_never_leaves_a_prefix_of_a_key() -> None:
    for limit in range(1, 60):
        shown = mask_then_cut("x" * 20 + API_KEY, limit, [API_KEY])
        assert API_KEY[:6] not in shown


# A key long enough to straddle every cut, named like a secret in the environment.
LONG_KEY = "sk-long-" + "k" * 40 + "0123456789" * 11 + "-end"


def _fragments(key: str, size: int = 12) -> list[str]:
    """Every piece of ``key`` long enough to matter, for "no part of it shows"."""
    return [key[i : i + size] for i in range(0, len(key) - size + 1)]


def assert_no_part_of(key: str, text: str) -> None:
    leaked = [piece for piece in _fragments(key) if piece in text]
    assert not leaked, f"{len(leaked)} pieces of the key leaked, e.g. {leaked[0]!r}"


def test_a_failed_tests_message_is_masked_before_it_is_cut(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LONG_SERVICE_TOKEN", LONG_KEY)
    # The key starts before the message's 200-character cut and ends after it.
    pytester.makepyfile(
        test_leak=f"""
        def test_leak(tnsai_record):
            tnsai_record("score", 0.5)
            raise RuntimeError("x" * 150 + {LONG_KEY!r})
        """
    )
    pytester.runpytest_inprocess("--tnsai-report=r.json", "--junitxml=j.xml")
    report = (pytester.path / "r.json").read_text(encoding="utf-8")
    assert '"status": "failed"' in report
    assert_no_part_of(LONG_KEY, report)


def test_bad_tool_call_arguments_are_masked_before_they_are_quoted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The decoder every reply goes through (the HTTP client's and the embedded
    # model's): its message quotes the arguments, which every caller masks.
    from tnsai_eval._util.secrets import mask
    from tnsai_eval.llm._wire import ReplyProblem, completion_from_body

    monkeypatch.setenv("LONG_SERVICE_TOKEN", LONG_KEY)
    # The key straddles the quote's 200-character cut.
    function = {"name": "f", "arguments": "{" + "y" * 140 + LONG_KEY + " not json"}
    message = {"role": "assistant", "content": None, "tool_calls": [{"function": function}]}
    body = {"choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}]}
    with pytest.raises(ReplyProblem) as caught:
        completion_from_body(body, model="m", latency_s=0.0)
    shown = mask(str(caught.value))
    assert "arguments is not valid JSON" in shown
    assert_no_part_of(LONG_KEY, shown)


def test_a_check_tail_of_multibyte_output_keeps_no_key_suffix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tnsai_eval.refinement import CompletionCriteria

    # The check's own env= marks the key a secret. 3-byte characters make the
    # reader's byte window hold fewer characters than the shown tail, so the
    # window's start (inside the key: 162 + 8,112 bytes, 8,192 kept) used to be
    # shown unmasked.
    command = (
        "printf '%s' \"$LONG_SERVICE_TOKEN\"; "
        "i=0; while [ $i -lt 676 ]; do printf '\\342\\202\\254\\342\\202\\254\\342\\202\\254"
        "\\342\\202\\254'; i=$((i+1)); done; exit 1"
    )
    check = CompletionCriteria.builder().compiler_check(
        command, env={"LONG_SERVICE_TOKEN": LONG_KEY}
    )
    (outcome,) = check.build().evaluate("x")
    assert "\u20ac" in outcome.message
    assert_no_part_of(LONG_KEY, outcome.message)
