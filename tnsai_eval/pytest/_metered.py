"""``MeteredLLM``: the plugin's wrapper that counts each model call towards the running test.

It also applies ``--llm-max-calls`` (a stored reply is free; a real call reserves
an attempt first, and its retries are counted when it returns) and threads the
``--tnsai-repeat`` sample index through to a ``CachedLLM``. What it reports to
is a ``Ledger``: the run's ``PluginSession`` in practice, a protocol here so
that this module and the session do not import each other.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Protocol

from tnsai_eval.pytest._budget import CallBudget
from tnsai_eval.pytest._options import PluginOptions

# tnsai_eval is imported only once a test makes a call (see _session for why).
if TYPE_CHECKING:
    from tnsai_eval.llm import Completion, LLMClient, MessagesInput

__all__ = ["Ledger", "MeteredLLM"]


class Ledger(Protocol):
    """What a ``MeteredLLM`` reports to (``PluginSession``)."""

    @property
    def sample(self) -> int: ...
    @property
    def budget(self) -> CallBudget | None: ...
    @property
    def options(self) -> PluginOptions: ...
    def touch(self) -> None: ...
    def record_call(self, completion: Completion, wall_s: float = ...) -> None: ...


class MeteredLLM:
    """Forwards to ``inner`` and counts every reply towards the running test.

    Also threads the repeat sample index through to a ``CachedLLM`` (its
    ``sample=`` keyword), so that with ``--tnsai-repeat`` each sample is a
    distinct recording rather than N replays of the first.
    """

    def __init__(self, inner: LLMClient, session: Ledger) -> None:
        self.inner = inner
        self.session = session
        self._takes_sample = _accepts_sample(inner)
        self._replay: Any = None  # a store-only view of `inner`, made on first need

    @property
    def model(self) -> str:
        return str(getattr(self.inner, "model", "") or "")

    def __repr__(self) -> str:
        return f"MeteredLLM({self.inner!r})"

    def __getattr__(self, name: str) -> Any:
        # Transparent: a test that overrides `llm` with a ScriptedLLM still reaches
        # its `calls`, `add_replies`... through the metered wrapper. (`inner` itself
        # is refused so that a half-built copy cannot recurse forever.)
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    def _params(self, params: dict[str, Any]) -> dict[str, Any]:
        if self._takes_sample and "sample" not in params:
            params["sample"] = self.session.sample
        return params

    def chat(self, messages: MessagesInput, **params: Any) -> Completion:
        """``inner.chat``, counted towards the running test."""
        params, budget = self._begin(params)
        started = time.perf_counter()
        try:
            completion = self._stored_or_reserve(messages, params, budget)
            if completion is None:
                completion = self._spent(budget, self.inner.chat(messages, **params))
        except Exception as exc:
            self._failed(budget, exc)
            raise
        self.session.record_call(completion, time.perf_counter() - started)
        return completion

    async def achat(self, messages: MessagesInput, **params: Any) -> Completion:
        """``inner.achat`` (or ``chat`` in a thread), counted towards the running test."""
        from tnsai_eval.llm import acall

        params, budget = self._begin(params)
        started = time.perf_counter()
        try:
            completion = self._stored_or_reserve(messages, params, budget)
            if completion is None:
                completion = self._spent(budget, await acall(self.inner, messages, **params))
        except Exception as exc:
            self._failed(budget, exc)
            raise
        self.session.record_call(completion, time.perf_counter() - started)
        return completion

    def _begin(self, params: dict[str, Any]) -> tuple[dict[str, Any], CallBudget | None]:
        self.session.touch()
        return self._params(params), self.session.budget

    # -- --llm-max-calls ---------------------------------------------------------
    def _stored(
        self, messages: MessagesInput, params: dict[str, Any], budget: CallBudget
    ) -> Completion | None:
        """The recorded reply when the store has one (a hit never counts), else None."""
        from tnsai_eval.errors import ReplayMissError
        from tnsai_eval.llm import CachedLLM, RecordMode

        inner = self.inner
        if not isinstance(inner, CachedLLM) or inner.mode in (RecordMode.OFF, RecordMode.REFRESH):
            return None  # every call reaches the model
        if inner.mode is RecordMode.REPLAY:
            return None  # never calls: nothing to bound (a miss raises in inner.chat)
        if self._replay is None:
            self._replay = CachedLLM(inner.inner, inner.store, mode=RecordMode.REPLAY)
        try:
            completion: Completion = self._replay.chat(messages, **params)
        except ReplayMissError:
            return None
        with inner._lock:  # the hit is the recording client's, for its counters
            inner.hits += 1
        return completion

    def _reserve(self, budget: CallBudget) -> None:
        from tnsai_eval.errors import ReplayMissError
        from tnsai_eval.llm import CachedLLM, RecordMode

        if isinstance(self.inner, CachedLLM) and self.inner.mode is RecordMode.REPLAY:
            return  # replay never calls the model: nothing to take from the budget
        if not budget.reserve():
            raise ReplayMissError(
                f"--llm-max-calls {budget.limit}: the session's model calls are spent, so "
                "this request was not sent",
                model=self.model,
            )

    def _stored_or_reserve(
        self, messages: MessagesInput, params: dict[str, Any], budget: CallBudget | None
    ) -> Completion | None:
        """A stored reply (free), or None once an attempt is reserved for a real call."""
        if budget is None:
            return None
        stored = self._stored(messages, params, budget)
        if stored is None:
            self._reserve(budget)
        return stored

    @staticmethod
    def _spent(budget: CallBudget | None, completion: Completion) -> Completion:
        # One attempt was reserved; retries are counted now. A reply that came
        # from a store after all (another worker recorded it) costs nothing more.
        if budget is not None and not completion.cached:
            budget.add(max(completion.attempts, 1) - 1)
        return completion

    def _failed(self, budget: CallBudget | None, exc: Exception) -> None:
        from tnsai_eval.errors import LLMError, ReplayMissError

        if (
            budget is not None
            and isinstance(exc, LLMError)
            and not isinstance(exc, ReplayMissError)
        ):
            budget.add(max(exc.attempts, 1) - 1)
        self._hint(exc)

    def _hint(self, exc: Exception) -> None:
        # The store's own advice is about CachedLLM's `mode=`; a pytest user
        # needs the option, and why replay was on (CI=true often is the reason).
        from tnsai_eval.errors import ReplayMissError

        if not isinstance(exc, ReplayMissError) or "--llm-max-calls" in str(exc):
            return
        options = self.session.options
        exc.add_note(
            f"tnsai: the `llm` fixture is in replay mode ({options.record_mode_source}); "
            "record the reply with `pytest --llm-record record` against a model and "
            f"commit {options.describe()['store']}"
        )


def _accepts_sample(client: object) -> bool:
    # Only CachedLLM understands `sample`; passed to a plain client it would be
    # sent to the model as a sampling parameter.
    try:
        from tnsai_eval.llm import CachedLLM  # type: ignore[attr-defined,unused-ignore]
    except ImportError:
        return False
    return isinstance(client, CachedLLM)
