"""Untrusted text made safe to show: on one line, encodable, and inert in Markdown.

Node ids, case ids, metric names, config values and replies come from users'
tests, datasets and models, and end up in terminals, JSON, HTML and pull-request
comments. Three helpers, each written once here:

* ``one_line(text)`` turns every line break Python knows (``\\n``, ``\\r``,
  ``\\v``, ``\\f``, ``\\x1c``-``\\x1e``, ``\\x85``, ``\\u2028``, ``\\u2029``), tab and
  other C0/C1 control character into a space, so a value cannot start a line
  of its own (a forged heading or table row);
* ``no_surrogates(text)`` replaces lone surrogates (``"\\ud800"``, which JSON
  accepts and no UTF-8 encoder does) by U+FFFD, so writing the text never raises;
* ``escape_markdown(text)`` does both, then backslash-escapes every character
  that means something in GitHub-flavoured Markdown (`````, ``*``, ``_``,
  ``#``, ``|``, ``[``, ``<``...), so the text renders as itself: a backtick
  cannot open a code span, ``|`` cannot add a table cell and ``<`` cannot open
  an HTML tag.

``shown_label(text)`` is what a test id, case id, metric name or config value
goes through before any output: masked (``_util.secrets``), then on one line
and encodable; Markdown output escapes it on top. Text that is cut is masked
before the cut (``mask_then_cut``).

>>> print(escape_markdown("a\\n### tnsai-eval PASS `x` | y"))
a \\#\\#\\# tnsai-eval PASS \\`x\\` \\| y
"""

from __future__ import annotations

import re

from tnsai_eval._util.secrets import mask

__all__ = ["escape_markdown", "no_surrogates", "one_line", "shown_label"]

# Control characters (C0 and C1, DEL) and the Unicode line/paragraph separators.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_SURROGATE = re.compile("[\ud800-\udfff]")
# ASCII punctuation that means something anywhere in a line of GitHub-flavoured
# Markdown (emphasis, code, links, images, HTML, entities, tables, strikethrough,
# math, headings); CommonMark lets a backslash escape any ASCII punctuation.
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]<>#|~!&$])")
# What means something only at the start of a line: a list item (``-``, ``+``,
# ``1.``, ``1)``), a setext underline or thematic break (``=``, ``-``).
_LINE_START = re.compile(r"^(\s*)([-+=]|\d+(?=[.)]))")


def one_line(text: str) -> str:
    """``text`` with every line break and control character turned into a space.

    >>> one_line("a\\r\\nb\\u2028c\\td")
    'a  b c d'
    """
    return _CONTROL.sub(" ", text)


def no_surrogates(text: str) -> str:
    """``text`` with lone surrogates (unencodable in UTF-8) replaced by U+FFFD.

    >>> no_surrogates("a\\ud800b") == "a\\ufffdb"
    True
    """
    return _SURROGATE.sub("\ufffd", text)


def escape_markdown(text: str, *, inline: bool = False) -> str:
    """``text`` on one line, encodable, every Markdown special character escaped.

    It renders as the original text (flattened) in a paragraph, a heading, a
    list item or a table cell; it can never add a line, a heading, a table
    cell, a link, a code span or an HTML tag. ``inline=True`` says the text
    never starts a line (it follows other text, or fills a table cell), so
    what only means something at a line's start (``-``, ``+``, ``=``, ``1.``)
    is left as it is: ``-1.00`` stays readable in the Markdown source.

    >>> print(escape_markdown("test_a[x|y]"), escape_markdown("1. - b"))
    test\\_a\\[x\\|y\\] 1\\. - b
    >>> print(escape_markdown("-1.00", inline=True))
    -1.00
    """
    escaped = _MARKDOWN_SPECIAL.sub(r"\\\1", no_surrogates(one_line(text)))
    start = None if inline else _LINE_START.match(escaped)
    if start is None:
        return escaped
    if start.group(2).isdigit():  # "1." -> "1\.": the marker is the punctuation after it
        end = start.end()
        return escaped[:end] + "\\" + escaped[end:]
    return escaped[: start.start(2)] + "\\" + escaped[start.start(2) :]


def shown_label(text: str) -> str:
    """An id, a name or a config value as output shows it: masked, on one line,
    encodable; never cut (an id must stay whole to be found again).

    >>> shown_label("test_a[x\\ny]")
    'test_a[x y]'
    """
    return no_surrogates(one_line(mask(text)))
