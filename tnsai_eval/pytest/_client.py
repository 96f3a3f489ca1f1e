"""Building the ``llm`` fixture's client from the options.

A server's client (``OpenAIClient``) is made at once: making it opens nothing
(its connections are opened by the first request). The embedded model is made
lazily, on the first call that reaches it (``LazyClient``): in replay mode no
call ever does, so a CI run never loads it, and a run whose tests never call
the model pays nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tnsai_eval._util.secrets import redact_url
from tnsai_eval.llm import (
    CachedLLM,
    Completion,
    LLMClient,
    MessagesInput,
    OpenAIClient,
    ResponseStore,
    ametered_call,
    default_llm,
    embedded_model_name,
    metered_call,
)
from tnsai_eval.pytest._options import PluginOptions
from tnsai_eval.settings import resolve_model

if TYPE_CHECKING:
    from tnsai_eval.llm import NamedModel

__all__ = ["LazyClient", "UsageTap", "build_client", "build_named_client", "describe_model"]


class LazyClient:
    """Makes its client with ``factory`` on first use; ``model`` is known up front.

    ``model`` must be known without making the client because ``CachedLLM``
    keys recordings by it, and a replayed run must find them without a model.
    """

    def __init__(self, factory: Callable[[], LLMClient], model: str) -> None:
        self._factory = factory
        self._client: LLMClient | None = None
        self._lock = threading.Lock()
        self.model = model

    def __repr__(self) -> str:
        state = "made" if self._client is not None else "not made yet"
        return f"LazyClient(model={self.model!r}, {state})"

    def get(self) -> LLMClient:
        with self._lock:
            if self._client is None:
                self._client = self._factory()
            return self._client

    #: Calls go through ``llm.metered_call``: the made client is charged once.
    meters_attempts = True

    def chat(self, messages: MessagesInput, **params: Any) -> Completion:
        return metered_call(self.get(), messages, **params)

    async def achat(self, messages: MessagesInput, **params: Any) -> Completion:
        return await ametered_call(self.get(), messages, **params)


def describe_model(options: PluginOptions) -> tuple[str | None, str]:
    """(base URL or None for the embedded model, model name), as the client will see them.

    The URL has any credentials (``user:pass@``, ``?api_key=``) redacted: it is
    written into reports and recordings.
    """
    settings = resolve_model(base_url=options.base_url, model=options.model)
    base_url, model = settings.base_url, settings.model
    if settings.embedded:
        # Known without the model installed: a replaying core install finds its
        # recordings; only a call that reaches the model needs [local].
        return None, embedded_model_name()
    return (redact_url(base_url) if base_url else None), model or ""


def build_client(options: PluginOptions) -> tuple[LLMClient, OpenAIClient | None]:
    """The session's client (the configured model behind ``CachedLLM`` and the store),
    and the ``OpenAIClient`` in it when the model is a server's.

    ``default_llm`` reads the API key from ``$TNSAI_LLM_API_KEY``; there is
    deliberately no option for it, so that it never lands in a command line,
    an ini file or a report. ``--llm-concurrency`` sizes the client's pool.
    """
    server, model = describe_model(options)
    inner: LLMClient
    http: OpenAIClient | None = None
    if server is not None:
        # A server's client: two layers from the test to the transport (the
        # store, then OpenAIClient), not three.
        inner = default_llm(base_url=options.base_url, model=options.model)
        if isinstance(inner, OpenAIClient):
            http = inner
            if options.concurrency is not None:
                http.ensure_concurrency(options.concurrency)
    else:
        inner = LazyClient(
            lambda: default_llm(base_url=options.base_url, model=options.model), model
        )
    if options.record_mode == "off":
        return inner, http
    store = ResponseStore(options.store)
    return CachedLLM(inner, store, mode=options.record_mode, server=server), http


def build_named_client(
    options: PluginOptions,
    named: NamedModel,
    on_usage: Callable[[int, int], None],
    on_made: Callable[[OpenAIClient], None],
) -> UsageTap:
    """A named model's client (``--tnsai-model``), behind the store like ``build_client``'s.

    Its recordings are keyed by its own model name and server, so two named
    models never answer from each other's recordings. The model's client is
    made on the first call that reaches it (a replaying run needs no key);
    ``on_made`` then gets it when it is an ``OpenAIClient`` (to size its pool).
    ``on_usage(prompt_tokens, completion_tokens)`` hears every reply, stored
    ones included, so that a replayed run reports the cost the recording paid.
    """
    if named.embedded:
        model, server = embedded_model_name(), None
    else:
        model, server = named.model or "", redact_url(named.base_url or "")

    def make() -> LLMClient:
        client = named.client()
        if isinstance(client, OpenAIClient):
            if options.concurrency is not None:
                client.ensure_concurrency(options.concurrency)
            on_made(client)
        return client

    inner: LLMClient = LazyClient(make, model)
    if options.record_mode != "off":
        inner = CachedLLM(
            inner, ResponseStore(options.store), mode=options.record_mode, server=server
        )
    return UsageTap(inner, on_usage)


class UsageTap:
    """Forwards to ``inner`` and hands each reply's input and output tokens to ``on_usage``."""

    #: Calls go through ``llm.metered_call``: the client inside is charged once.
    meters_attempts = True

    def __init__(self, inner: LLMClient, on_usage: Callable[[int, int], None]) -> None:
        self.inner = inner
        self._on_usage = on_usage

    @property
    def model(self) -> str:
        return str(getattr(self.inner, "model", "") or "")

    def __repr__(self) -> str:
        return f"UsageTap({self.inner!r})"

    def __getattr__(self, name: str) -> Any:
        # Transparent to what the store offers (is_stored...); `inner` itself is
        # refused so that a half-built copy cannot recurse forever.
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    def _heard(self, reply: Completion) -> Completion:
        self._on_usage(reply.usage.prompt_tokens, reply.usage.completion_tokens)
        return reply

    def chat(self, messages: MessagesInput, **params: Any) -> Completion:
        return self._heard(metered_call(self.inner, messages, **params))

    async def achat(self, messages: MessagesInput, **params: Any) -> Completion:
        return self._heard(await ametered_call(self.inner, messages, **params))
