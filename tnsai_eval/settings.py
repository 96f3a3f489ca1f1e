"""Where tnsai-eval's settings come from: the ``TNSAI_LLM_*`` variables and the record modes.

Written once here and read by ``default_llm``, ``OpenAIClient``, ``CachedLLM``,
the CLI and the pytest plugin. The module imports only the standard library, so
the plugin can read it while pytest starts without loading a client.

Each model setting comes from its explicit value (an argument, a command-line
option), else from the environment; an empty variable counts as unset.

>>> resolve_model(environ={ENV_BASE_URL: "http://127.0.0.1:8080/v1"}, model="smol")  # no key shown
ModelSettings(base_url='http://127.0.0.1:8080/v1', model='smol')
>>> resolve_model(environ={}).embedded
True
>>> RecordMode.parse("Replay")
<RecordMode.REPLAY: 'replay'>
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from tnsai_eval._util.enums import parse_member

__all__ = [
    "ENV_API_KEY",
    "ENV_BASE_URL",
    "ENV_MODEL",
    "ModelSettings",
    "RecordMode",
    "resolve_model",
]

#: The OpenAI-compatible base URL (``http://127.0.0.1:8080/v1``).
ENV_BASE_URL = "TNSAI_LLM_BASE_URL"
#: The model name on that server.
ENV_MODEL = "TNSAI_LLM_MODEL"
#: The API key; only ever read from the environment by the library itself.
ENV_API_KEY = "TNSAI_LLM_API_KEY"


class RecordMode(StrEnum):
    """How ``CachedLLM`` (and the plugin's ``--llm-record``) uses a response store."""

    OFF = "off"
    """Always call the model; the store is neither read nor written."""
    REPLAY = "replay"
    """Only the store; a request never recorded raises ``ReplayMissError``."""
    RECORD = "record"
    """Reply from the store when recorded, else call the model and record."""
    REFRESH = "refresh"
    """Always call the model and overwrite the recording."""

    @classmethod
    def parse(cls, value: RecordMode | str) -> RecordMode:
        """A mode from itself or its name in any case; anything else is a ConfigError."""
        return parse_member(cls, value, what="record mode")


@dataclass(frozen=True, slots=True)
class ModelSettings:
    """Which model to talk to: a server (``base_url`` and ``model``) or the embedded one."""

    base_url: str | None
    model: str | None
    api_key: str | None = field(default=None, repr=False)

    @property
    def embedded(self) -> bool:
        """Neither a base URL nor a model: the embedded default model."""
        return self.base_url is None and self.model is None


def resolve_model(
    *,
    base_url: str | None = None,
    model: str | None = None,
    api_key: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> ModelSettings:
    """The model settings from explicit values, else ``environ`` (default ``os.environ``)."""
    env = os.environ if environ is None else environ
    return ModelSettings(
        base_url=base_url or env.get(ENV_BASE_URL) or None,
        model=model or env.get(ENV_MODEL) or None,
        api_key=api_key or env.get(ENV_API_KEY) or None,
    )
