"""``default_llm()``: the client a user gets without configuring anything."""

from __future__ import annotations

from collections.abc import Mapping

from tnsai_eval._util.secrets import redact_url
from tnsai_eval.errors import ConfigError
from tnsai_eval.llm._local import LocalLLM
from tnsai_eval.llm._types import LLMClient
from tnsai_eval.settings import ENV_API_KEY, ENV_BASE_URL, ENV_MODEL, resolve_model

__all__ = ["ENV_API_KEY", "ENV_BASE_URL", "ENV_MODEL", "default_llm"]


def default_llm(
    *,
    base_url: str | None = None,
    model: str | None = None,
    api_key: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> LLMClient:
    """An OpenAI-compatible server when one is configured, else the embedded model.

    Each setting comes from its argument, else from the environment
    (``TNSAI_LLM_BASE_URL``, ``TNSAI_LLM_MODEL``, ``TNSAI_LLM_API_KEY``; an
    empty variable counts as unset). With a base URL and a model the result is
    an ``OpenAIClient``; with neither, a ``LocalLLM``; with only one of them, a
    ``ConfigError`` names the one that is missing. ``environ`` replaces
    ``os.environ`` (for tests and embedding).

    >>> default_llm(base_url="http://127.0.0.1:8080/v1", model="smol")  # doctest: +SKIP
    OpenAIClient(model='smol', base_url='http://127.0.0.1:8080/v1', api_key=None)
    >>> default_llm()  # with no TNSAI_LLM_* variables set  # doctest: +SKIP
    LocalLLM(model='SmolLM2-135M-Instruct.Q4_1', n_ctx=2048, seed=0)
    """
    settings = resolve_model(base_url=base_url, model=model, api_key=api_key, environ=environ)
    url, name, key = settings.base_url, settings.model, settings.api_key

    if url is None and name is None:
        return LocalLLM()
    if url is None:
        raise ConfigError(
            f"model {name!r} was given but no base URL: pass base_url= (--base-url) or "
            f"set {ENV_BASE_URL}, e.g. http://127.0.0.1:8080/v1"
        )
    if name is None:
        raise ConfigError(
            f"base URL {redact_url(url)!r} was given but no model name: pass model= (--model) or "
            f"set {ENV_MODEL}"
        )
    # Imported here: users of the embedded model never need the HTTP client.
    from tnsai_eval.llm._openai import OpenAIClient

    return OpenAIClient(name, base_url=url, api_key=key)
