"""Named models: a small table of OpenAI-compatible endpoints, read from ``pyproject.toml``.

A suite that is gated across models (the cheaper one, the new version) names
them once::

    [tool.tnsai-eval.models.small]
    base_url = "http://127.0.0.1:8080/v1"
    model = "smollm2-135m"

    [tool.tnsai-eval.models.hosted]
    base_url = "https://api.example.com/v1"
    model = "big-1"
    api_key_env = "EXAMPLE_API_KEY"   # the variable's NAME: a key is never in the file
    price_in = 0.15                   # dollars per million input tokens
    price_out = 0.60                  # dollars per million output tokens
    headers = {api-version = "2024-06-01", api-key = "$AZURE_KEY"}  # "$NAME": from the environment
    params = {max_completion_tokens = 256}  # sent with every call to this model

The same table can live in a TOML file of its own (``[models.NAME]`` tables,
or the ``[tool.tnsai-eval.models]`` layout), named by the plugin's
``--tnsai-models-file``. The name ``embedded`` is built in: the local model
(no server, no key, no price). The pytest plugin and the CLI both read the
table through ``ModelTable.load``, so a name means the same thing in both.

>>> table = ModelTable.from_mapping({"fast": {"base_url": "http://127.0.0.1:1/v1",
...                                           "model": "m", "price_in": 1, "price_out": 2}})
>>> table.names
('embedded', 'fast')
>>> table.get("fast").cost(1_000_000, 500_000)
2.0
>>> table.get("slow")
Traceback (most recent call last):
...
tnsai_eval.errors.ConfigError: unknown model name 'slow': known names are embedded, fast ...
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tnsai_eval._util.plain import MAX_JSON_COUNT
from tnsai_eval._util.secrets import is_token, redact_url, remember
from tnsai_eval.errors import ConfigError

if TYPE_CHECKING:
    from tnsai_eval.llm._front import FrontClient
    from tnsai_eval.llm._store import ResponseStore
    from tnsai_eval.llm._types import LLMClient
    from tnsai_eval.settings import RecordMode

__all__ = ["EMBEDDED_MODEL", "ModelTable", "NamedModel", "embedded_model_name"]

#: The built-in name of the embedded local model.
EMBEDDED_MODEL = "embedded"

_KEYS = ("base_url", "model", "api_key_env", "price_in", "price_out", "headers", "params")
# What a model name may be: it becomes part of pytest test ids and file names.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:+]*")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# The highest price per million tokens taken (in any currency): with at most
# 2**53 tokens a cost stays a finite number, so a report can always be read
# back (1e308 made its cost inf, which JSON readers refuse).
MAX_PRICE = 1e9


def _check_key_env(key_env: object, where: str) -> None:
    """Refuse an ``api_key_env`` that is not a variable's name, without showing it.

    A key pasted here by mistake must not be echoed, and ``ghp_...``,
    ``hf_...`` or ``gsk_...`` keys are letters, digits and ``_`` like a name:
    a value shaped like a token is refused too, and masked from now on
    wherever it might surface.
    """
    if key_env is None:
        return
    if isinstance(key_env, str) and _ENV_NAME.fullmatch(key_env) and not _key_like(key_env):
        return
    if isinstance(key_env, str):
        remember(key_env)
    raise ConfigError(
        f"{where}: api_key_env must be the NAME of an environment variable (letters, digits "
        "and _, such as EXAMPLE_API_KEY), never the key itself; the value given is not "
        "shown, as it may be a key"
    )


def _key_like(value: str) -> bool:
    # A provider's token shape, or a long run of letters and digits with no
    # word break (what a random key is, and what no variable name looks like).
    return is_token(value) or (
        len(value) >= 24
        and "_" not in value
        and any(c.isdigit() for c in value)
        and any(c.isalpha() for c in value)
    )


@dataclass(frozen=True, slots=True)
class NamedModel:
    """One named model: where it is served, the variable holding its key, its prices.

    ``base_url`` and ``model`` are ``None`` only for the built-in ``embedded``
    model. Prices are in dollars (or any currency, consistently) per million
    tokens; ``None`` means not declared, and then ``cost`` is ``None`` too.
    ``headers`` are sent with every request (a value ``"$NAME"`` is read from
    that environment variable when the client is made, and is never stored or
    shown); ``params`` are call parameters sent with every call to this model,
    over the caller's (a model that needs ``max_completion_tokens``, or a
    fixed ``temperature``).
    """

    name: str
    base_url: str | None
    model: str | None
    api_key_env: str | None = None
    price_in: float | None = None
    price_out: float | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    params: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Built directly too (not only from a table): a key never becomes a field.
        _check_key_env(self.api_key_env, f"model {self.name!r}")

    @property
    def embedded(self) -> bool:
        """Whether this is the built-in local model."""
        return self.base_url is None

    @property
    def priced(self) -> bool:
        """Whether a price was declared (either one; the other then counts as 0)."""
        return self.price_in is not None or self.price_out is not None

    def cost(self, tokens_in: int, tokens_out: int) -> float | None:
        """The estimated cost of these token counts at the declared prices (None: no price)."""
        if not self.priced:
            return None
        # Counts past any real one (a client's usage of 10**400) would overflow the float.
        tokens_in, tokens_out = min(tokens_in, MAX_JSON_COUNT), min(tokens_out, MAX_JSON_COUNT)
        return (tokens_in * (self.price_in or 0.0) + tokens_out * (self.price_out or 0.0)) / 1e6

    def api_key(self, environ: Mapping[str, str] | None = None) -> str | None:
        """The key from ``$api_key_env``; an unset (or empty) variable is a ``ConfigError``."""
        if self.api_key_env is None:
            return None
        env = os.environ if environ is None else environ
        key = env.get(self.api_key_env) or None
        if key is None:
            raise ConfigError(
                f"model {self.name!r}: its key variable ${self.api_key_env} is not set "
                f"(api_key_env = {self.api_key_env!r})"
            )
        remember(key)  # masked wherever it might surface, whatever the variable's name
        return key

    def client(self, environ: Mapping[str, str] | None = None) -> LLMClient:
        """A client for this model (``LocalLLM`` for ``embedded``, else ``OpenAIClient``)."""
        if self.embedded:
            from tnsai_eval.llm._local import LocalLLM

            return LocalLLM()
        from tnsai_eval.llm._openai import OpenAIClient

        return OpenAIClient(
            self.model or "",
            base_url=self.base_url or "",
            api_key=self.api_key(environ),
            headers=self.resolved_headers(environ),
        )

    def resolved_headers(self, environ: Mapping[str, str] | None = None) -> dict[str, str]:
        """``headers`` with each ``"$NAME"`` value read from the environment (an unset or
        empty variable is a ``ConfigError`` naming it, never showing a value)."""
        env = os.environ if environ is None else environ
        resolved = {}
        for header, value in self.headers.items():
            if value.startswith("$"):
                found = env.get(value[1:]) or None
                if found is None:
                    raise ConfigError(
                        f"model {self.name!r}: header {header!r} names ${value[1:]}, which is "
                        "not set"
                    )
                remember(found)  # masked wherever it might surface
                value = found
            resolved[header] = value
        return resolved

    def front(
        self,
        store: ResponseStore | str | os.PathLike[str] | None = None,
        mode: RecordMode | str = "record",
        *,
        cassette: str = "default",
        environ: Mapping[str, str] | None = None,
    ) -> FrontClient:
        """This model's ``FrontClient``: its client made on the first call that reaches it
        (a replayed run needs no key and loads no model), behind ``store`` in ``mode``."""
        from tnsai_eval.llm._front import FrontClient

        if self.embedded:
            model, server = embedded_model_name(), None
        else:
            model, server = self.model or "", redact_url(self.base_url or "")
        return FrontClient(
            factory=lambda: self.client(environ),
            store=store,
            mode=mode,
            model=model,
            server=server,
            cassette=cassette,
            params=self.params,
            offers_logprobs=True,
        )

    def describe(self) -> dict[str, object]:
        """What a report records about this model (the URL without credentials, no key)."""
        return {
            "name": self.name,
            "base_url": None if self.base_url is None else redact_url(self.base_url),
            "model": self.model,
            "api_key_env": self.api_key_env,
            "price_in": self.price_in,
            "price_out": self.price_out,
            # Header names only: a value may be a key (given inline, or read from a variable).
            "headers": sorted(self.headers),
            "params": dict(self.params),
        }


_EMBEDDED = NamedModel(EMBEDDED_MODEL, None, None)


def embedded_model_name() -> str:
    """The embedded model's name as its recordings are keyed, whether or not it is installed.

    With ``[local]`` it is the installed GGUF file's stem; without it (a CI job
    that only replays) it is ``SMOLLM2_NAME``, the name the same package gives
    it: replay is keyed on what was recorded, not on what is installed, so a
    core install replays the embedded model's recordings. Only a call that
    reaches the model needs it installed (that call raises).

    >>> from tnsai_eval.llm import SMOLLM2_NAME
    >>> embedded_model_name() == SMOLLM2_NAME
    True
    """
    from tnsai_eval.errors import LocalModelUnavailable
    from tnsai_eval.llm._model_path import SMOLLM2_NAME, smollm2_gguf_path

    try:
        return smollm2_gguf_path().stem
    except LocalModelUnavailable:
        return SMOLLM2_NAME


@dataclass(frozen=True, slots=True)
class ModelTable:
    """Named models by name (``embedded`` always among them), and where they were read."""

    models: Mapping[str, NamedModel] = field(default_factory=lambda: {EMBEDDED_MODEL: _EMBEDDED})
    source: str = "<built in>"

    @property
    def names(self) -> tuple[str, ...]:
        """Every name, sorted."""
        return tuple(sorted(self.models))

    def get(self, name: str) -> NamedModel:
        """The model called ``name``; an unknown name is a ``ConfigError`` listing the known."""
        found = self.models.get(name)
        if found is None:
            raise ConfigError(
                f"unknown model name {name!r}: known names are {', '.join(self.names)} "
                f"(from {self.source})"
            )
        return found

    def select(self, names: Iterable[str]) -> tuple[NamedModel, ...]:
        """The models called ``names``, in order, each once (a repeated name is an error)."""
        chosen: list[NamedModel] = []
        for name in names:
            model = self.get(name)
            if model in chosen:
                raise ConfigError(f"model name {name!r} is given twice")
            chosen.append(model)
        return tuple(chosen)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], source: str = "<mapping>") -> ModelTable:
        """A table from ``{name: {base_url, model, api_key_env, price_in, price_out}}``."""
        if not isinstance(data, Mapping):
            raise ConfigError(f"{source}: the models table must be a table of tables")
        named = {name: _entry(name, entry, source) for name, entry in data.items()}
        return cls({EMBEDDED_MODEL: _EMBEDDED, **named}, source)

    @classmethod
    def load(
        cls,
        file: str | os.PathLike[str] | None = None,
        *,
        start: str | os.PathLike[str] | None = None,
    ) -> ModelTable:
        """The table from ``file`` (a TOML file), else from the nearest ``pyproject.toml``.

        ``file`` may hold ``[models.NAME]`` tables or the ``pyproject.toml``
        layout; ``start`` is where the search for ``pyproject.toml`` begins
        (default: the working directory). No file at all: ``embedded`` only.
        """
        from tnsai_eval.settings import project_settings, read_toml

        if file is not None:
            data = read_toml(file)
            tool = data.get("tool", {})
            if isinstance(tool, dict) and isinstance(tool.get("tnsai-eval"), dict):
                data = tool["tnsai-eval"]
            return cls.from_mapping(data.get("models", {}), os.fspath(file))
        project = project_settings(start)
        if project.file is None:
            return cls()
        source = f"{project.file} [tool.tnsai-eval.models]"
        return cls.from_mapping(project.table.get("models", {}), source)


def _entry(name: object, entry: object, source: str) -> NamedModel:
    where = f"{source}: model {name!r}"
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ConfigError(
            f"{source}: model name {name!r} must be letters, digits and _ . : + "
            "(it becomes part of test ids)"
        )
    if name == EMBEDDED_MODEL:
        raise ConfigError(f"{where}: the name {EMBEDDED_MODEL!r} is built in (the local model)")
    if not isinstance(entry, Mapping):
        raise ConfigError(f"{where} must be a table with base_url and model")
    unknown = sorted(set(entry) - set(_KEYS))
    if unknown:
        raise ConfigError(
            f"{where}: unknown key(s) {', '.join(map(repr, unknown))}; expected {', '.join(_KEYS)}"
        )
    base_url, model, key_env = entry.get("base_url"), entry.get("model"), entry.get("api_key_env")
    if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
        raise ConfigError(f"{where}: base_url must be an http(s) URL, got {base_url!r}")
    if not isinstance(model, str) or not model.strip():
        raise ConfigError(f"{where}: model must be a non-blank string, got {model!r}")
    _check_key_env(key_env, where)
    return NamedModel(
        name,
        base_url,
        model,
        key_env,
        _price(entry.get("price_in"), f"{where}: price_in"),
        _price(entry.get("price_out"), f"{where}: price_out"),
        _headers(entry.get("headers", {}), f"{where}: headers"),
        _params(entry.get("params", {}), f"{where}: params"),
    )


def _headers(value: object, where: str) -> dict[str, str]:
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and k.strip() and isinstance(v, str) for k, v in value.items()
    ):
        # The values are not shown: one may be a key pasted here by mistake.
        raise ConfigError(f"{where} must be a table of header names to strings")
    for header, text in value.items():
        if text.startswith("$") and not _ENV_NAME.fullmatch(text[1:]):
            raise ConfigError(
                f"{where}: header {header!r}: a value starting with $ must be $ and the NAME "
                "of an environment variable"
            )
    return dict(value)


def _params(value: object, where: str) -> dict[str, Any]:
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise ConfigError(f"{where} must be a table of call parameters, got {value!r:.80}")
    return dict(value)


def _price(value: object, where: str) -> float | None:
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not 0 <= value <= MAX_PRICE
    ):
        raise ConfigError(
            f"{where} must be a number from 0 to {MAX_PRICE:g} (per million tokens), got {value!r}"
        )
    return float(value)
