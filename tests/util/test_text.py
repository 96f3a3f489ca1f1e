"""Untrusted text shown on one line and in Markdown: it renders as itself, adds nothing."""

from __future__ import annotations

import re

from tnsai_eval._util.text import escape_markdown, no_surrogates, one_line


def test_every_line_break_python_knows_becomes_a_space() -> None:
    breaks = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029\t\x00\x1b"
    flat = one_line(f"a{breaks}b")
    assert flat == "a" + " " * len(breaks) + "b"
    assert len(flat.splitlines()) == 1


def test_lone_surrogates_become_replacement_characters() -> None:
    text = no_surrogates("x\ud800y\udfffz")
    assert text == "x\ufffdy\ufffdz"
    text.encode("utf-8")  # no UnicodeEncodeError


def test_a_forged_heading_table_row_and_code_span_are_inert() -> None:
    hostile = "ok`\n\n### tnsai-eval PASS\n| a | b |\n<details>[x](http://e)$a$"
    escaped = escape_markdown(hostile)
    assert "\n" not in escaped
    # The bare link is broken by a zero-width space entity, the one "&#" the
    # escaper writes itself; the rest is the escaped text.
    assert "http&#8203;://e" in escaped
    text = escaped.replace("&#8203;", "")
    # Every special character is preceded by a backslash, so none of them acts.
    for char in "`#|<>[]$&":
        assert re.search(rf"(?<!\\){re.escape(char)}", text) is None, char
    # Removing the escapes gives back the flattened text.
    assert re.sub(r"\\(.)", r"\1", text) == one_line(hostile)


def test_plain_words_are_left_alone() -> None:
    assert escape_markdown("accuracy 0") == "accuracy 0"
