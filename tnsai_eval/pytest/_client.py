"""Building the ``llm`` fixture's client from the options.

The real client is made lazily, on the first call that reaches it: in replay
mode no call ever does, so a CI run neither loads the embedded model nor needs
a server, and a run whose tests never call the model pays nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tnsai_eval._util.secrets import redact_url
from tnsai_eval.errors import LocalModelUnavailable
from tnsai_eval.llm import (
    CachedLLM,
    Completion,
    LLMClient,
    MessagesInput,
    ResponseStore,
    acall,
    default_llm,
    smollm2_gguf_path,
)
from tnsai_eval.pytest._options import PluginOptions
from tnsai_eval.settings import resolve_model

if TYPE_CHECKING:
    from tnsai_eval.llm import NamedModel

__all__ = ["LazyClient", "build_client", "build_named_client", "describe_model"]


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

    def chat(self, messages: MessagesInput, **params: Any) -> Completion:
        return self.get().chat(messages, **params)

    async def achat(self, messages: MessagesInput, **params: Any) -> Completion:
        return await acall(self.get(), messages, **params)


def describe_model(options: PluginOptions) -> tuple[str | None, str]:
    """(base URL or None for the embedded model, model name), as the client will see them.

    The URL has any credentials (``user:pass@``, ``?api_key=``) redacted: it is
    written into reports and recordings.
    """
    settings = resolve_model(base_url=options.base_url, model=options.model)
    base_url, model = settings.base_url, settings.model
    if settings.embedded:
        try:
            return None, smollm2_gguf_path().stem
        except LocalModelUnavailable:
            # Only a call that reaches the model needs it; that call will raise.
            return None, "embedded (not installed)"
    return (redact_url(base_url) if base_url else None), model or ""


def build_client(options: PluginOptions) -> LLMClient:
    """The session's client: the configured model behind ``CachedLLM`` and the store.

    ``default_llm`` reads the API key from ``$TNSAI_LLM_API_KEY``; there is
    deliberately no option for it, so that it never lands in a command line,
    an ini file or a report.
    """
    server, model = describe_model(options)
    inner = LazyClient(lambda: default_llm(base_url=options.base_url, model=options.model), model)
    if options.record_mode == "off":
        return inner
    return CachedLLM(inner, ResponseStore(options.store), mode=options.record_mode, server=server)


def build_named_client(options: PluginOptions, named: NamedModel) -> LLMClient:
    """A named model's client (``--tnsai-model``), behind the store like ``build_client``'s.

    Its recordings are keyed by its own model name and server, so two named
    models never answer from each other's recordings.
    """
    if named.embedded:
        try:
            model = smollm2_gguf_path().stem
        except LocalModelUnavailable:
            model = "embedded (not installed)"
        server = None
    else:
        model, server = named.model or "", redact_url(named.base_url or "")
    inner = LazyClient(named.client, model)
    if options.record_mode == "off":
        return inner
    return CachedLLM(inner, ResponseStore(options.store), mode=options.record_mode, server=server)
