"""Untrusted text made safe to show: masked, on one line, encodable, and inert in Markdown.

Node ids, case ids, metric names, config values, inputs, replies and prompts
come from users' tests, datasets and models, and end up in terminals, JSON,
HTML and pull-request comments. This module is the one escaper for all of them:

* ``one_line(text)`` turns every line break Python knows (``\\n``, ``\\r``,
  ``\\v``, ``\\f``, ``\\x1c``-``\\x1e``, ``\\x85``, ``\\u2028``, ``\\u2029``), tab and
  other C0/C1 control character into a space, so a value cannot start a line
  of its own (a forged heading or table row) or drive a terminal (ESC);
* ``no_surrogates(text)`` replaces lone surrogates (``"\\ud800"``, which JSON
  accepts and no UTF-8 encoder does) by U+FFFD, so writing the text never raises;
* ``shown_label(text)`` is what a value goes through before a terminal shows
  it: masked for secrets (``_util.secrets``), then on one line and encodable;
  ``shown_line`` does the same for one line of a longer text (a diff line),
  masked before it is cut;
* ``code_span(text)`` shows a value in Markdown as code (a tool's name, its
  arguments): masked before it is cut, on one line, encodable, between
  backtick fences longer than any backtick run inside, so nothing in it can
  close the span (inside a span nothing else is Markdown, and GitHub links no
  mention there);
* ``escape_markdown(text)`` is what a value goes through before Markdown
  shows it (a pull-request comment, a job summary, ``report --format
  markdown``): masked *before* it is cut (``limit``), on one line, encodable,
  every character that means something in GitHub-flavoured Markdown
  backslash-escaped (`````, ``*``, ``_``, ``#``, ``|``, ``[``, ``<``...), and
  what GitHub turns into a live link or a notification after rendering
  broken by a zero-width space: ``@user`` and ``@org/team`` mentions, bare
  ``https://`` and ``www.`` links, ``#123`` references. A backslash alone
  cannot do that last part: GitHub finds mentions and bare links in the
  rendered text, where the backslash is gone.

The same value thus reads the same everywhere, and nothing in it can add a
line, a heading, a table cell, an HTML tag, a link or a mention.

>>> print(escape_markdown("a\\n### tnsai-eval PASS `x` | y"))
a \\#\\#\\# tnsai-eval PASS \\`x\\` \\| y
>>> print(escape_markdown("ask @org/team at https://x.io"))
ask @&#8203;org/team at https&#8203;://x.io
"""

from __future__ import annotations

import re

from tnsai_eval._util.secrets import mask, mask_then_cut

__all__ = [
    "code_span",
    "escape_markdown",
    "no_surrogates",
    "one_line",
    "shown_label",
    "shown_line",
]

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
# What GitHub links after rendering, in the text the backslashes no longer
# guard: a mention (@user, @org/team) and an e-mail address share the "@";
# bare links start with a scheme or "www."; "#12" (escaped as "\#12") refers
# to an issue. A zero-width space (as an entity: the Markdown source stays
# ASCII) right after the trigger breaks each; the text reads the same.
_LIVE = re.compile(
    r"@|(?<![A-Za-z0-9])(?:(?:https?|ftp|mailto|xmpp)(?=:)|www(?=\.))|\\#(?=\d)", re.IGNORECASE
)
_ZERO_WIDTH = "&#8203;"


def one_line(text: str) -> str:
    """``text`` with every line break and control character turned into a space.

    >>> one_line("a\\r\\nb\\u2028c\\td\\x1b[31m")
    'a  b c d [31m'
    """
    return _CONTROL.sub(" ", text)


def no_surrogates(text: str) -> str:
    """``text`` with lone surrogates (unencodable in UTF-8) replaced by U+FFFD.

    >>> no_surrogates("a\\ud800b") == "a\\ufffdb"
    True
    """
    return _SURROGATE.sub("\ufffd", text)


def escape_markdown(text: str, *, inline: bool = False, limit: int | None = None) -> str:
    """``text`` masked, cut, on one line, encodable, inert in GitHub-flavoured Markdown.

    Secrets are masked first, then the text is cut to ``limit`` characters
    ("..." marks a cut), so a key straddling the cut cannot leave its start.
    The result renders as the original text (flattened) in a paragraph, a
    heading, a list item or a table cell; it can never add a line, a heading,
    a table cell, a link, a mention, a code span or an HTML tag.
    ``inline=True`` says the text never starts a line (it follows other text,
    or fills a table cell), so what only means something at a line's start
    (``-``, ``+``, ``=``, ``1.``) is left as it is: ``-1.00`` stays readable
    in the Markdown source.

    >>> print(escape_markdown("test_a[x|y]"), escape_markdown("1. - b"))
    test\\_a\\[x\\|y\\] 1\\. - b
    >>> print(escape_markdown("-1.00", inline=True))
    -1.00
    >>> print(escape_markdown("see www.x.io, #12"))
    see www&#8203;.x.io, \\#&#8203;12
    >>> print(escape_markdown("@bob said *a lot*", limit=11))
    @&#8203;bob said \\*...
    """
    shown = mask(text) if limit is None else mask_then_cut(text, limit)
    escaped = _MARKDOWN_SPECIAL.sub(r"\\\1", no_surrogates(one_line(shown)))
    start = None if inline else _LINE_START.match(escaped)
    if start is not None:
        if start.group(2).isdigit():  # "1." -> "1\.": the marker is the punctuation after it
            end = start.end()
            escaped = escaped[:end] + "\\" + escaped[end:]
        else:
            escaped = escaped[: start.start(2)] + "\\" + escaped[start.start(2) :]
    return _LIVE.sub(lambda m: m.group(0) + _ZERO_WIDTH, escaped)


def code_span(text: str, *, limit: int | None = None) -> str:
    """``text`` masked, cut to ``limit``, on one line and encodable, as a Markdown code span
    that nothing in it can close.

    >>> print(code_span("lookup_order"), code_span("a`b"), code_span("`x", limit=1))
    `lookup_order` ``a`b`` `` `... ``
    """
    shown = no_surrogates(one_line(mask(text) if limit is None else mask_then_cut(text, limit)))
    longest = max((len(run) for run in re.findall("`+", shown)), default=0)
    fence = "`" * (longest + 1)
    # A span that starts or ends with a backtick needs a space inside the fence.
    pad = " " if shown.startswith("`") or shown.endswith("`") else ""
    return f"{fence}{pad}{shown}{pad}{fence}"


def shown_label(text: str) -> str:
    """An id, a name or a config value as output shows it: masked, on one line,
    encodable; never cut (an id must stay whole to be found again).

    >>> shown_label("test_a[x\\ny]")
    'test_a[x y]'
    """
    return no_surrogates(one_line(mask(text)))


def shown_line(text: str, limit: int | None = None) -> str:
    """One line of a longer text (a diff line) as output shows it: masked, then cut to
    ``limit`` ("..." marks a cut), control characters (ESC) made spaces, encodable.

    Unlike ``shown_label`` it keeps tabs (a diff's indentation).

    >>> shown_line("+\\tkeep\\x1b[2J", 9)
    '+\\tkeep [2...'
    """
    shown = mask(text) if limit is None else mask_then_cut(text, limit)
    return no_surrogates(_CONTROL.sub(lambda m: m.group(0) if m.group(0) == "\t" else " ", shown))
