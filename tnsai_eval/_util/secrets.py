"""Secrets never travel: the one place that knows what a secret is and hides it.

Three jobs, each done once here and called from ``llm/``, ``refinement/``,
the CLI and the plugin:

* ``mask(text)`` replaces every *known secret* in ``text`` by ``***``. Known
  secrets are the API keys given to clients in this process (``remember``)
  and the value of every environment variable whose name contains ``KEY``,
  ``TOKEN``, ``SECRET``, ``PASSWORD`` or ``AUTH`` in any case (read at each
  call, so a variable set later is still masked). Values shorter than
  ``MIN_SECRET_CHARS`` are left alone: masking ``"1"`` everywhere would
  destroy the text without protecting anything. ``mask_then_cut`` masks
  *before* shortening, so a secret straddling the cut cannot leak its start;
  ``mask_then_keep_end`` does the same for the end of a text, and for a tail
  already cut from a stream. Every path that shortens text that may hold a
  secret goes through one of the two.
* ``drop_credentials(mapping)`` removes, case-insensitively and at any depth
  (``extra_body``, ``default_headers``...), every entry whose name says it is
  a credential (``api_key``, ``API_KEY``, ``apiKey``, ``Authorization``,
  ``x-api-key``, ``access_token``, ``password``...), before parameters are
  recorded.
* ``redact_url(url)`` hides ``user:password@`` and the values of query
  parameters named like credentials (``?api_key=...``, ``?token=...``) in a
  URL that is about to be stored or printed.
* ``is_token(value)`` and ``mask_tokens(text)`` recognise a value shaped like
  a provider's API token (``sk-...``, ``ghp_...``, ``hf_...``, ``gsk_...``)
  whether or not this process knows it: for a token pasted where a name was
  expected, and for names that end up in committed files.

>>> import os
>>> os.environ["DEMO_SERVICE_TOKEN"] = "tok-1234567890"
>>> mask("the server said tok-1234567890")
'the server said ***'
>>> redact_url("https://me:pw@host/v1?api_key=abc&v=2")
'https://***@host/v1?api_key=***&v=2'
>>> drop_credentials({"temperature": 0, "extra_body": {"API_KEY": "x", "top_k": 3}})
{'temperature': 0, 'extra_body': {'top_k': 3}}
>>> del os.environ["DEMO_SERVICE_TOKEN"]
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from collections.abc import Iterable, Iterator, Mapping
from typing import Any
from urllib.parse import parse_qsl, quote, urlsplit, urlunsplit

__all__ = [
    "MIN_SECRET_CHARS",
    "REDACTED",
    "SECRET_NAME_PARTS",
    "drop_credentials",
    "frozen_secrets",
    "is_credential_name",
    "is_secret_env_name",
    "is_token",
    "known_secrets",
    "mask",
    "mask_deep",
    "mask_then_cut",
    "mask_then_keep_end",
    "mask_tokens",
    "redact_url",
    "remember",
]

REDACTED = "***"
# Shorter values are not masked: they occur in ordinary text by chance.
MIN_SECRET_CHARS = 6
# An environment variable whose upper-cased name contains one of these holds a secret.
SECRET_NAME_PARTS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "AUTH")

# Parameter and header names (lower-cased, with '-' and '_' removed) that are
# credentials or say where to connect. Matched exactly, not by substring, so
# that ``max_tokens`` or ``top_logprobs`` are kept.
_CREDENTIAL_NAMES = frozenset(
    {
        "apikey",
        "xapikey",
        "apitoken",
        "accesstoken",
        "authtoken",
        "bearertoken",
        "idtoken",
        "refreshtoken",
        "token",
        "authorization",
        "proxyauthorization",
        "auth",
        "password",
        "passwd",
        "secret",
        "clientsecret",
        "secretkey",
        "privatekey",
        "cookie",
        "setcookie",
        "credentials",
        "organization",
        "apibase",
        "baseurl",
        "headers",
        "extraheaders",
        "defaultheaders",
        "timeout",
    }
)
# Query parameters whose values are hidden in URLs (same normalisation).
_SECRET_QUERY_PARTS = ("key", "token", "secret", "password", "passwd", "auth", "sig", "credential")

# scheme://user:password@ (the userinfo part of a URL written in free text).
_USERINFO = re.compile(r"([a-zA-Z][a-zA-Z0-9+.-]*://)[^/\s@]+@")

# The shapes of the API tokens most often pasted by mistake: a provider's prefix,
# then a long run of token characters (no word character just before it, so
# "risk-..." or "task_..." never match).
_TOKEN = re.compile(
    r"(?<![A-Za-z0-9])(?:"
    r"(?:sk|pk|rk)-[A-Za-z0-9_-]{16,}"  # OpenAI, Anthropic (sk-ant-...), Stripe
    r"|gh[pousr]_[A-Za-z0-9]{20,}"  # GitHub
    r"|github_pat_[A-Za-z0-9_]{20,}"
    r"|hf_[A-Za-z0-9]{20,}"  # Hugging Face
    r"|gsk_[A-Za-z0-9]{20,}"  # Groq
    r"|xox[abeprs]-[A-Za-z0-9-]{10,}"  # Slack
    r"|glpat-[A-Za-z0-9_-]{20,}"  # GitLab
    r"|AKIA[0-9A-Z]{16}"  # AWS access key id
    r"|AIza[0-9A-Za-z_-]{35}"  # Google
    r")"
)

_remembered: set[str] = set()
_lock = threading.Lock()


def remember(secret: str | None) -> None:
    """Add ``secret`` (an API key given to a client) to the known secrets of this process.

    >>> remember("sk-remembered-123")
    >>> mask("key: sk-remembered-123")
    'key: ***'
    """
    if secret and len(secret) >= MIN_SECRET_CHARS:
        with _lock:
            _remembered.add(secret)


def is_secret_env_name(name: str) -> bool:
    """Whether an environment variable called ``name`` holds a secret.

    >>> is_secret_env_name("TNSAI_LLM_API_KEY"), is_secret_env_name("github_token")
    (True, True)
    >>> is_secret_env_name("PATH")
    False
    """
    upper = name.upper()
    return any(part in upper for part in SECRET_NAME_PARTS)


# The secrets a thread read once for a bulk output (see frozen_secrets).
_frozen = threading.local()


@contextlib.contextmanager
def frozen_secrets() -> Iterator[list[str]]:
    """Within the block, this thread's ``mask`` calls read the known secrets once.

    Reading them means walking the environment (each name decoded and
    checked): once per ``mask`` call, that was 85% of the time of an HTML page
    for 2,500 tests. A bulk output (a report, a page, a CSV) is one moment:
    it reads the secrets when it starts. Blocks nest; the outermost reads.
    As a decorator (``@frozen_secrets()``), each call of the function is one block.

    >>> with frozen_secrets() as secrets:
    ...     isinstance(secrets, list)
    True
    """
    outer: list[str] | None = getattr(_frozen, "secrets", None)
    if outer is not None:
        yield outer
        return
    _frozen.secrets = known_secrets()
    try:
        yield _frozen.secrets
    finally:
        _frozen.secrets = None


def known_secrets(environ: Mapping[str, str] | None = None) -> list[str]:
    """Every known secret, longest first (so a key containing another is masked whole)."""
    if environ is None:
        frozen: list[str] | None = getattr(_frozen, "secrets", None)
        if frozen is not None:
            return frozen
    env = os.environ if environ is None else environ
    found = {value for name, value in env.items() if is_secret_env_name(name)}
    with _lock:
        found |= _remembered
    return sorted((s for s in found if len(s) >= MIN_SECRET_CHARS), key=len, reverse=True)


def mask(text: str, extra: Iterable[str | None] = ()) -> str:
    """``text`` with every known secret (and each of ``extra``) replaced by ``***``,
    and the ``user:password@`` of any URL in it hidden.

    >>> mask("see http://bob:hunter22@example.com/x")
    'see http://***@example.com/x'
    """
    secrets = known_secrets()
    more = [s for s in extra if s and len(s) >= MIN_SECRET_CHARS]
    if more:
        secrets = sorted(set(secrets) | set(more), key=len, reverse=True)
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, REDACTED)
    # user:password@ in any URL inside the text.
    return _USERINFO.sub(r"\1" + REDACTED + "@", text) if "@" in text else text


def is_token(value: object) -> bool:
    """Whether ``value`` is shaped like an API token (see the module docstring).

    >>> is_token("ghp_" + "a1B2" * 9), is_token("hf_" + "x9" * 17), is_token("OPENAI_API_KEY")
    (True, True, False)
    """
    return isinstance(value, str) and _TOKEN.fullmatch(value.strip()) is not None


def mask_tokens(text: str) -> str:
    """``text`` with every token-shaped run (``is_token``) replaced by ``***``.

    >>> mask_tokens("test_call[gsk_" + "Q7" * 26 + "]")
    'test_call[***]'
    """
    return _TOKEN.sub(REDACTED, text)


def mask_deep(value: Any) -> Any:
    """``value`` (JSON-like: mappings, lists, strings) with every string masked, keys too.

    >>> remember("sk-deep-secret-1")
    >>> mask_deep({"run": ["sk-deep-secret-1", 1]})
    {'run': ['***', 1]}
    """
    if isinstance(value, str):
        return mask(value)
    if isinstance(value, Mapping):
        return {mask_deep(k): mask_deep(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [mask_deep(item) for item in value]
    return value


def mask_then_cut(text: str, limit: int, extra: Iterable[str | None] = ()) -> str:
    """Mask, then keep at most ``limit`` characters (``...`` marks a cut).

    >>> mask_then_cut("k=sk-abcdefghij tail", 6, extra=["sk-abcdefghij"])
    'k=***...'
    """
    text = mask(text, extra)
    return text if len(text) <= limit else text[:limit] + "..."


def mask_then_keep_end(
    text: str, limit: int, extra: Iterable[str | None] = (), *, truncated: bool = False
) -> str:
    """Mask, then keep at most the last ``limit`` characters (``...`` marks a cut).

    ``truncated`` says ``text`` is itself the end of something longer (the tail
    a reader kept of a command's output): a secret that straddled that earlier
    cut lost its start, so no mask can recognise the rest. Such a remnant can
    only sit in the first ``len(longest secret) - 1`` characters, and masking
    never moves them (nothing before them is replaced), so those characters
    are dropped after masking.

    >>> mask_then_keep_end("head sk-abcdefghij", 6, extra=["sk-abcdefghij"])
    '...ad ***'
    """
    secrets = [s for s in extra if s and len(s) >= MIN_SECRET_CHARS]
    text = mask(text, secrets)
    cut = truncated
    if truncated:
        longest = max((len(s) for s in [*known_secrets(), *secrets]), default=0)
        text = text[max(longest - 1, 0) :]
    if len(text) > limit:
        text, cut = text[len(text) - limit :], True
    return "..." + text if cut else text


def _normal(name: str) -> str:
    return name.lower().replace("-", "").replace("_", "")


def is_credential_name(name: object) -> bool:
    """Whether a parameter or header called ``name`` is a credential (or connection detail).

    >>> [is_credential_name(n) for n in ("API_KEY", "apiKey", "x-api-key", "max_tokens")]
    [True, True, True, False]
    """
    return isinstance(name, str) and _normal(name) in _CREDENTIAL_NAMES


def drop_credentials(value: Any) -> Any:
    """``value`` with credential-named entries removed from every mapping, at any depth."""
    if isinstance(value, Mapping):
        return {k: drop_credentials(v) for k, v in value.items() if not is_credential_name(k)}
    if isinstance(value, list | tuple):
        return [drop_credentials(item) for item in value]
    return value


def redact_url(url: str) -> str:
    """``url`` without credentials: ``user:pass@`` and secret-named query values become ``***``.

    A string that does not parse as a URL is masked as text instead.

    >>> redact_url("http://127.0.0.1:8080/v1")
    'http://127.0.0.1:8080/v1'
    """
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return mask(url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = REDACTED + "@" + netloc.rsplit("@", 1)[1]
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = "&".join(
            f"{quote(k, safe='')}={REDACTED if _secret_query(k) else quote(v, safe='')}"
            for k, v in pairs
        )
    del host, port  # parsed only to reject malformed netlocs above
    return mask(urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment)))


def _secret_query(name: str) -> bool:
    normal = _normal(name)
    return any(part in normal for part in _SECRET_QUERY_PARTS)
