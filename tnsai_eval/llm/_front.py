"""The one client a caller holds per model: the store, the model client, budgets, listeners.

``FrontClient`` is what the pytest plugin, ``score_prompt``, model comparison
and named models hand to everything above ``llm/``. It holds, for one model:

* the response store and the record mode (recorded replies make CI runs free
  and deterministic: record once, commit the store, replay with
  ``mode="replay"``, where a request never recorded fails loudly);
* the model client, or a factory that makes it on the first call that reaches
  it (a replayed run never loads the embedded model nor needs a key);
* the call budgets its calls draw on (besides any active around the call);
* listeners: each completed, replayed or failed call emits one frozen
  ``CallEvent``. Whoever needs to know about calls (the plugin's per-test
  counts, a model comparison's tokens and latencies) subscribes; nothing wraps
  a client to watch it.

Two things about a call are context, not parameters: the repeat *sample*
(``with client.sample(n):``, read by the store key and never sent) and the
*case* it belongs to (``with running_case(case_id):``, set by the scoring
engine around each case, so that a call made anywhere inside user code under
a running case is attributed to it: ``CallEvent.case_id``). Both travel in
context variables, into ``asyncio`` tasks and worker threads.

>>> import tempfile
>>> from tnsai_eval.testing import ScriptedLLM
>>> store = ResponseStore(tempfile.mkdtemp())
>>> client = FrontClient(ScriptedLLM(["Paris"]), store)
>>> seen = []
>>> with client.subscribe(seen.append):
...     client.chat("Capital of France?").text
'Paris'
>>> replay = FrontClient(ScriptedLLM(), store, mode="replay")
>>> reply = replay.chat("Capital of France?")
>>> reply.text, reply.cached, reply.attempts, replay.hits
('Paris', True, 0, 1)
>>> seen[0].cached, seen[0].attempts, seen[0].case_id
(False, 1, None)

Budgets: any other client (``ScriptedLLM``, ``LocalLLM``, a user's own) is
charged one attempt by ``metered_call`` just before the call, plus the
retries its reply reports; ``OpenAIClient`` takes each HTTP attempt itself
when it sends it, and a stored reply takes nothing.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, nullcontext
from contextvars import ContextVar
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeAlias, TypeVar

from tnsai_eval._util.secrets import redact_url
from tnsai_eval.errors import (
    ConfigError,
    LLMError,
    OldStoreKeyWarning,
    ReplayMissError,
    ServerMismatchWarning,
)
from tnsai_eval.llm._budget import (
    CallBudget,
    add_attempts,
    budget_exceeded,
    only_budgets,
    refund_attempt,
    reserve_attempt,
)
from tnsai_eval.llm._local import LocalLLM
from tnsai_eval.llm._openai import OpenAIClient
from tnsai_eval.llm._store import (
    DEFAULT_CASSETTE,
    Recording,
    ResponseStore,
    StoredRequest,
    check_sample,
)
from tnsai_eval.llm._types import (
    Completion,
    LLMClient,
    MessagesInput,
    Usage,
    acall,
    call_usage,
)
from tnsai_eval.llm._wire import check_params
from tnsai_eval.settings import RecordMode

__all__ = [
    "CachedLLM",
    "CallEvent",
    "CallListener",
    "FrontClient",
    "Subscription",
    "ametered_call",
    "current_case",
    "current_sample",
    "metered_call",
    "observing",
    "routing",
    "running_case",
    "sampling",
]


@dataclasses.dataclass(frozen=True, slots=True)
class CallEvent:
    """One call through a ``FrontClient``: completed, replayed from the store, or failed.

    ``attempts`` are the HTTP attempts made (0: the store answered, or
    nothing was sent); ``latency_s`` is the model's time (0.0 for a stored
    reply); the tokens follow ``call_usage``'s one rule (the reply's reported
    usage, else an estimate; a stored reply counts what its recording paid).
    ``sample`` and ``case_id`` are the context the call ran in; ``error`` is
    the exception a failed call raised (it is raised to the caller as well).
    ``system`` is the call's system message ('' without one) and ``params``
    its call parameters (read-only): what an evaluation of an app's own code
    path shows as the prompt that changed.
    """

    model: str
    cached: bool
    attempts: int
    latency_s: float
    prompt_tokens: int = 0
    completion_tokens: int = 0
    sample: int = 0
    case_id: str | None = None
    error: Exception | None = None
    system: str = ""
    params: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def live(self) -> bool:
        """Whether the call reached the model and returned a reply (it took model time)."""
        return self.error is None and not self.cached


CallListener: TypeAlias = Callable[[CallEvent], object]

_T = TypeVar("_T")
_V = TypeVar("_V")
_SAMPLE: ContextVar[int] = ContextVar("tnsai_eval_sample", default=0)
# Listeners of every FrontClient's calls made in a context (``observing``).
_OBSERVERS: ContextVar[tuple[CallListener, ...]] = ContextVar("tnsai_eval_observers", default=())
_CASE: ContextVar[str | None] = ContextVar("tnsai_eval_case", default=None)
# Front clients whose calls another answers, in a context (``routing``).
_ROUTES: ContextVar[Mapping[FrontClient, FrontClient]] = ContextVar(
    "tnsai_eval_routes", default=MappingProxyType({})
)


@contextmanager
def _context(var: ContextVar[_V], change: Callable[[_V], _V], given: _T) -> Iterator[_T]:
    """``var`` set to ``change(its value)`` inside the block, which is given ``given``."""
    token = var.set(change(var.get()))
    try:
        yield given
    finally:
        var.reset(token)


def sampling(sample: int) -> contextlib.AbstractContextManager[int]:
    """Calls inside the block are repeat sample ``sample`` (``FrontClient.sample`` does this).

    The sample is part of the store key, so each sample has its own recorded
    reply; it is never sent to the model and is no part of a prompt's hash.
    """
    check_sample(sample)
    return _context(_SAMPLE, lambda _: sample, sample)


def current_sample() -> int:
    """The repeat sample of the calls made here (0 outside ``sampling``)."""
    return _SAMPLE.get()


def running_case(case_id: str) -> contextlib.AbstractContextManager[str]:
    """Calls inside the block belong to case ``case_id`` (their ``CallEvent.case_id``).

    >>> with running_case("fr"):
    ...     current_case()
    'fr'
    >>> current_case() is None
    True
    """
    if not isinstance(case_id, str) or not case_id:
        raise ConfigError(f"case_id must be a non-empty str, got {case_id!r}")
    return _context(_CASE, lambda _: case_id, case_id)


def observing(listener: CallListener) -> contextlib.AbstractContextManager[CallListener]:
    """Calls made inside the block, through any ``FrontClient``, are also reported to
    ``listener`` (after the client's own listeners).

    The scoring of a target uses it around each case: the calls an app makes
    wherever in its own code are counted for the case running, whichever
    client made them. Like the case, it travels into tasks and worker threads.

    >>> from tnsai_eval.testing import ScriptedLLM
    >>> seen = []
    >>> with observing(seen.append):
    ...     FrontClient(ScriptedLLM(default="hi")).chat("hello").text
    'hi'
    >>> len(seen)
    1
    """
    return _context(_OBSERVERS, lambda now: (*now, listener), listener)


def routing(routes: Mapping[FrontClient, FrontClient]) -> contextlib.AbstractContextManager[None]:
    """Calls made inside the block through each key of ``routes`` are answered by its value.

    The app under test holds one client (pytest's ``llm`` fixture) in its own
    code; to run that code against another model (``--tnsai-model``), the
    scoring of a target routes the client's calls to that model's client,
    around the target only, so that an evaluator sharing the client is not
    moved. The answering client does everything a call does (its store, its
    budget, its listeners and events); the routed one is not touched. Like
    the case, routes travel into tasks and worker threads.

    >>> from tnsai_eval.testing import ScriptedLLM
    >>> app, other = FrontClient(ScriptedLLM(default="a")), FrontClient(ScriptedLLM(default="b"))
    >>> with routing({app: other}):
    ...     app.chat("hi").text
    'b'
    >>> app.chat("hi").text, other.hits + other.misses
    ('a', 1)
    """
    for source, target in routes.items():
        if not isinstance(source, FrontClient) or not isinstance(target, FrontClient):
            raise ConfigError(
                f"routing maps FrontClients to FrontClients, got {source!r}: {target!r}"
            )
    return _context(_ROUTES, lambda now: MappingProxyType({**now, **routes}), None)


def current_case() -> str | None:
    """The id of the case running here (``running_case``), or ``None``."""
    return _CASE.get()


class Subscription:
    """A listener's subscription: ``close()`` (or the end of a ``with`` block) ends it."""

    def __init__(self, client: FrontClient, listener: CallListener) -> None:
        self._client = client
        self.listener = listener

    def close(self) -> None:
        self._client.unsubscribe(self.listener)

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class FrontClient:
    """The one client per model: ``client`` (or ``factory``) behind an optional store.

    ``store`` (a ``ResponseStore`` or its folder) and ``mode`` (``off``,
    ``replay``: the store only, a miss raises ``ReplayMissError``;
    ``record``: reuse hits, call and store misses; ``refresh``: always call,
    overwrite) decide where replies come from; without a store every call
    reaches the model. The store key covers the model name, the messages,
    the call's parameters and the repeat sample. Replies from the store have
    ``cached=True`` and ``attempts=0``.

    ``factory`` makes the model client on the first call that reaches it;
    ``model`` (the name recordings are keyed by) must then be given.
    ``budget`` is an ``llm.CallBudget`` every call of this client draws on,
    besides the budgets active around the call. ``params`` are this model's
    own call parameters (a named model's ``params``): each call sends them
    over its own, and the store key holds them. ``offers_logprobs`` says
    whether the model can return log-probabilities (a judge reads them);
    by default it is known from the client (``LocalLLM``, ``OpenAIClient``).

    Each recording holds the address of the server that answered (credentials
    redacted; ``server=`` names it when the client has no ``base_url``). A
    reply recorded against another server than this client's is replayed with
    a ``ServerMismatchWarning``, once per client and pair of addresses.

    Replies are recorded in the cassette named ``cassette`` (one JSON file
    of the store; see ``ResponseStore``), for example one per notebook:
    ``FrontClient(inner, store, cassette="02_prompt_optimizer")``. Each new
    reply is written at once; inside ``with client.holding():`` the cassette
    is written once, when the block ends (the pytest plugin does this per
    test, with the test's node id as the cassette). A reply is looked up in
    the cassette, then in ``fallback`` (the unparametrized test's cassette),
    then in ``default``, then in a store of formats 1 and 2; in record mode a
    reply found elsewhere is copied into the cassette.

    Attributes:
        hits: requests answered from the store.
        misses: requests not answered from the store (the model was called,
            or replay mode raised ``ReplayMissError``).
    """

    def __init__(
        self,
        client: LLMClient | None = None,
        store: ResponseStore | str | os.PathLike[str] | None = None,
        mode: RecordMode | str = RecordMode.RECORD,
        *,
        factory: Callable[[], LLMClient] | None = None,
        model: str | None = None,
        server: str | None = None,
        cassette: str = DEFAULT_CASSETTE,
        budget: CallBudget | None = None,
        params: Mapping[str, Any] | None = None,
        offers_logprobs: bool | None = None,
    ) -> None:
        if (client is None) == (factory is None):
            raise ConfigError("FrontClient takes a client or a factory= that makes one (not both)")
        if client is not None and not callable(getattr(client, "chat", None)):
            raise ConfigError(f"client must have chat(messages, **params), got {client!r}")
        if factory is not None and model is None:
            raise ConfigError("FrontClient(factory=...) needs model= (recordings are keyed by it)")
        if budget is not None and not isinstance(budget, CallBudget):
            raise ConfigError(f"budget must be an llm.CallBudget or None, got {budget!r}")
        self._client = client
        self._factory = factory
        self._model = str(model if model is not None else getattr(client, "model", "") or "")
        if store is not None and not isinstance(store, ResponseStore):
            store = ResponseStore(store)
        self.store = store
        self.mode = RecordMode.OFF if store is None else RecordMode.parse(mode)
        if store is not None:
            store.cassette_path(cassette)  # a bad name fails here, not at the first call
        #: The cassette replies are recorded in and looked up first (the plugin
        #: sets it to the running test's node id).
        self.cassette = cassette
        #: A cassette looked up after ``cassette`` (the plugin: the test's id
        #: without its model parameter, where replies recorded before it was
        #: parametrized are).
        self.fallback: str | None = None
        if server is None:
            server = getattr(client, "base_url", None)
        self.server = redact_url(server) if isinstance(server, str) and server else None
        self.budget = budget
        #: Call parameters of this model, sent with (and over) every call's own.
        self.params = dict(params or {})
        self._offers_logprobs = offers_logprobs
        self.hits = 0
        self.misses = 0
        self._listeners: tuple[CallListener, ...] = ()
        self._concurrency = 0
        self._warned: set[str] = set()
        # Counters and the lazily made client are touched from worker threads.
        self._lock = threading.Lock()

    @property
    def model(self) -> str:
        """The model name recordings are keyed by."""
        return self._model

    @property
    def client(self) -> LLMClient:
        """The model client (made by the factory now if it was not made yet)."""
        with self._lock:
            if self._client is None:
                assert self._factory is not None
                made = self._factory()
                grow = getattr(made, "ensure_concurrency", None)
                if self._concurrency and callable(grow):
                    grow(self._concurrency)
                self._client = made
            return self._client

    @property
    def made(self) -> bool:
        """Whether the model client exists (a replayed run may never make it)."""
        return self._client is not None

    @property
    def offers_logprobs(self) -> bool:
        """Whether the model returns log-probabilities when asked (``LocalLLM``, a server)."""
        if self._offers_logprobs is not None:
            return self._offers_logprobs
        return isinstance(self._client, LocalLLM | OpenAIClient)

    def __repr__(self) -> str:
        inner = repr(self._client) if self._client is not None else "not made yet"
        return (
            f"FrontClient({inner}, model={self._model!r}, store={self.store!r}, "
            f"mode={self.mode.value!r}, cassette={self.cassette!r}, hits={self.hits}, "
            f"misses={self.misses})"
        )

    # -- listeners, context ---------------------------------------------------------
    def subscribe(self, listener: CallListener) -> Subscription:
        """Call ``listener(event)`` after every call; the subscription (a context manager)
        ends it."""
        if not callable(listener):
            raise ConfigError(f"listener must be callable, got {listener!r}")
        with self._lock:
            self._listeners = (*self._listeners, listener)
        return Subscription(self, listener)

    def unsubscribe(self, listener: CallListener) -> None:
        """Stop calling ``listener`` (one subscription of it; nothing if it has none)."""
        with self._lock:
            listeners = list(self._listeners)
            if listener in listeners:
                listeners.remove(listener)
            self._listeners = tuple(listeners)

    @staticmethod
    def sample(sample: int) -> contextlib.AbstractContextManager[int]:
        """``with client.sample(n):``: the calls inside are repeat sample ``n`` (``sampling``)."""
        return sampling(sample)

    def ensure_concurrency(self, concurrency: int) -> int:
        """Let the model client have ``concurrency`` requests in flight (now, or once made)."""
        with self._lock:
            self._concurrency = max(self._concurrency, concurrency)
            client = self._client
        grow = getattr(client, "ensure_concurrency", None)
        return int(grow(concurrency)) if callable(grow) else concurrency

    # -- the store ------------------------------------------------------------------
    def holding(self) -> contextlib.AbstractContextManager[None]:
        """Keep the cassette's new replies in memory for the block; write them once at its end."""
        return nullcontext() if self.store is None else self.store.holding(self.cassette)

    def flush(self) -> list[Path]:
        """Write every reply recorded but not written yet (held ones too); the files written."""
        return [] if self.store is None else self.store.save()

    def is_stored(
        self, messages: MessagesInput, *, sample: int | None = None, **params: Any
    ) -> bool:
        """Whether ``chat(messages, **params)`` would be answered from the store.

        Asks the store only: nothing is sent and no counter moves. Always
        ``False`` in ``off`` and ``refresh`` modes, which never answer from it.
        """
        if self.store is None or self.mode in (RecordMode.OFF, RecordMode.REFRESH):
            return False
        request = StoredRequest.build(
            self.model, messages, {**params, **self.params}, sample=_sample(sample)
        )
        return self._find(request) is not None

    # -- calls ----------------------------------------------------------------------
    def chat(
        self, messages: MessagesInput, *, sample: int | None = None, **params: Any
    ) -> Completion:
        """One completion, from the store or the model as ``mode`` says.

        ``sample`` (default: the context's, see ``sample``) tells apart several
        recorded replies to the same request; it is not sent to the model.
        """
        if (route := self._route()) is not None:
            return route.chat(messages, sample=sample, **params)
        with self._call(messages, params, sample) as call:
            if call.reply is None:
                call.reply = metered_call(self.client, messages, **call.params)
        return call.done()

    async def achat(
        self, messages: MessagesInput, *, sample: int | None = None, **params: Any
    ) -> Completion:
        """Like ``chat``, using the model client's ``achat`` when it has one."""
        if (route := self._route()) is not None:
            return await route.achat(messages, sample=sample, **params)
        with self._call(messages, params, sample) as call:
            if call.reply is None:
                call.reply = await ametered_call(self.client, messages, **call.params)
        return call.done()

    def _route(self) -> FrontClient | None:
        """The client that answers this one's calls here (``routing``), if another does."""
        route = _ROUTES.get().get(self)
        return None if route is self else route

    @contextmanager
    def _call(
        self, messages: MessagesInput, params: dict[str, Any], sample: int | None
    ) -> Iterator[_Call]:
        started = time.perf_counter()
        params = {**params, **self.params} if self.params else params
        call = _Call(self, messages, params, _sample(sample), started)
        try:
            with nullcontext() if self.budget is None else self.budget.active():
                call.request = self._request(messages, params, call.sample)
                call.reply = self._from_store(call.request)
                call.cached = call.reply is not None
                yield call
        except Exception as exc:
            self._emit(call.event(None, exc))
            raise

    def _request(
        self, messages: MessagesInput, params: dict[str, Any], sample: int
    ) -> StoredRequest | None:
        check_params(params)  # a cyclic or absurdly deep schema: ConfigError, not RecursionError
        if self.mode is RecordMode.OFF:
            return None
        # Built before the model is called, so a parameter that cannot be
        # recorded fails at once rather than after a paid-for call.
        return StoredRequest.build(self.model, messages, params, sample=sample)

    def _find(self, request: StoredRequest) -> Recording | None:
        assert self.store is not None
        found = self.store.find(request, self.cassette)
        if found is None and self.fallback is not None and self.fallback != self.cassette:
            found = self.store.find(request, self.fallback)
        return found

    def _from_store(self, request: StoredRequest | None) -> Completion | None:
        if request is None or self.store is None or self.mode is RecordMode.REFRESH:
            self._count(hit=False)
            return None
        cassette = self.cassette
        found = self._find(request)
        self._count(hit=found is not None)
        if found is None:
            if self.mode is RecordMode.REPLAY:
                raise ReplayMissError(
                    f"no recorded response for model {request.model!r} and prompt "
                    f"{request.prompt_start!r} (sample {request.sample}, key {request.key[:12]}) "
                    f"in cassette {cassette!r} of {str(self.store.path)!r}; "
                    f"{self.store.miss_hint(request, cassette)}",
                    model=request.model,
                    attempts=0,
                )
            return None
        self._check_server(found.server)
        if found.old_key:
            self._warn_old_key(request, found)
        elif self.mode is RecordMode.RECORD and found.cassette != cassette:
            # File the reply under this cassette too, so the cassette alone replays it.
            self.store.put(request, found.completion, server=found.server, cassette=cassette)
        return dataclasses.replace(found.completion, attempts=0)

    def _record(self, request: StoredRequest | None, reply: Completion) -> None:
        if (
            request is not None
            and self.store is not None
            and self.mode in (RecordMode.RECORD, RecordMode.REFRESH)
        ):
            self.store.put(
                request,
                reply,
                server=self.server,
                cassette=self.cassette,
                refresh=self.mode is RecordMode.REFRESH,
            )

    def _emit(self, event: CallEvent) -> None:
        for listener in self._listeners:
            listener(event)
        for observer in _OBSERVERS.get():
            observer(event)

    def _warn_old_key(self, request: StoredRequest, found: Recording) -> None:
        assert self.store is not None
        if not self._first_time(request.key):
            return
        where = "a format-1/2 file" if found.cassette is None else f"cassette {found.cassette!r}"
        warnings.warn(
            f"replaying the reply to {request.prompt_start!r} recorded under its older store "
            f"key (in {where} of {str(self.store.path)!r}): that key ignored credential-like "
            "names (token, password, timeout...) inside schemas, so it may belong to a "
            "request that differs there; re-record it with mode='refresh'",
            OldStoreKeyWarning,
            stacklevel=6,
        )

    def _check_server(self, recorded: str | None) -> None:
        if recorded is None or self.server is None or recorded == self.server:
            return
        if not self._first_time(recorded):
            return
        warnings.warn(
            f"replaying recordings made against {recorded} while the configured server "
            f"is {self.server} (same model name {self.model!r}); re-record with "
            "mode='refresh' if the servers differ",
            ServerMismatchWarning,
            stacklevel=6,
        )

    def _first_time(self, warning: str) -> bool:
        """Whether ``warning`` (a key, an address) is seen for the first time by this client."""
        with self._lock:
            first = warning not in self._warned
            self._warned.add(warning)
        return first

    def _count(self, *, hit: bool) -> None:
        with self._lock:
            if hit:
                self.hits += 1
            else:
                self.misses += 1


#: The name this class was first published under (a client behind a response store).
CachedLLM = FrontClient


def _system(messages: MessagesInput) -> str:
    """The system message of a call ('' without one), read without normalizing the rest."""
    if isinstance(messages, str):
        return ""
    for message in messages:
        role = message.get("role") if isinstance(message, Mapping) else getattr(message, "role", "")
        if role == "system":
            content = message.get("content") if isinstance(message, Mapping) else message.content
            return content if isinstance(content, str) else ""
    return ""


def _sample(given: int | None) -> int:
    return current_sample() if given is None else given


@dataclasses.dataclass(slots=True, eq=False)
class _Call:
    """One call in progress: its request, its reply once known, and its event."""

    front: FrontClient
    messages: MessagesInput
    params: dict[str, Any]
    sample: int
    started: float
    request: StoredRequest | None = None
    reply: Completion | None = None
    cached: bool = False

    def event(self, reply: Completion | None, error: Exception | None) -> CallEvent:
        if reply is None:
            usage, latency = Usage(), 0.0
            attempts = _attempts(error.attempts) if isinstance(error, LLMError) else 0
        else:
            usage, attempts = call_usage(reply, self.messages), _attempts(reply.attempts)
            latency = 0.0 if self.cached else reply.latency_s or time.perf_counter() - self.started
        return CallEvent(
            model=self.front.model,
            cached=self.cached,
            attempts=0 if self.cached else attempts,
            latency_s=latency,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            sample=self.sample,
            case_id=current_case(),
            error=error,
            system=_system(self.messages),
            params=MappingProxyType(dict(self.params)),
        )

    def done(self) -> Completion:
        reply = self.reply
        assert reply is not None
        if not self.cached:
            self.front._record(self.request, reply)
        self.front._emit(self.event(reply, None))
        return reply


def _attempts(value: object) -> int:
    return value if isinstance(value, int) and value >= 0 else 1


# -- charging a client that does not take its own attempts ---------------------------


@contextmanager
def _metering(client: object) -> Iterator[bool]:
    """One attempt reserved for a client that does not take its own (``OpenAIClient`` and
    ``FrontClient`` do), the call run with no budget active then, and the retries of its
    failure counted; the block gets whether an attempt was reserved."""
    reserved = not isinstance(client, OpenAIClient | FrontClient)
    if reserved and not reserve_attempt():
        model = getattr(client, "model", "") or type(client).__name__
        raise budget_exceeded(f"a call to {model!r}")
    try:
        with only_budgets() if reserved else nullcontext():
            yield reserved
    except Exception as exc:
        if reserved and isinstance(exc, LLMError):
            add_attempts(max(exc.attempts, 1) - 1)
        raise


def _settled(reserved: bool, reply: Completion) -> Completion:
    if reserved:
        attempts = _attempts(reply.attempts)
        if attempts == 0:
            refund_attempt()  # the client answered from a store: nothing was sent
        else:
            add_attempts(attempts - 1)
    return reply


def metered_call(client: LLMClient, messages: MessagesInput, **params: Any) -> Completion:
    """``client.chat``, with one attempt reserved first unless the client meters itself.

    A client that does not (anything but ``OpenAIClient`` and ``FrontClient``)
    runs with no budget active inside, so that an ``OpenAIClient`` a user's
    wrapper holds is not charged the same attempts again. Raises
    ``CallBudgetExceeded`` (nothing sent) when an active budget is spent.
    """
    with _metering(client) as reserved:
        reply = client.chat(messages, **params)
    return _settled(reserved, reply)


async def ametered_call(client: LLMClient, messages: MessagesInput, **params: Any) -> Completion:
    """``metered_call`` for async callers (the client's ``achat``, else ``chat`` in a thread)."""
    with _metering(client) as reserved:
        reply = await acall(client, messages, **params)
    return _settled(reserved, reply)
