"""``MeteredLLM``: the ``llm`` fixture's thin adapter, counting each reply towards the running test.

It makes the session's ``--llm-max-calls`` budget (an ``llm.CallBudget``)
active for each call and hands the call to the client through
``llm.metered_call``: ``OpenAIClient`` takes each HTTP attempt from the
budget when it sends it, a reply from the response store takes nothing, and
any other client is charged one attempt before the call (plus the retries its
reply reports). It also threads the ``--tnsai-repeat`` sample index through
to a ``CachedLLM``. ``evaluate_prompt`` does not go through this adapter: it
hands the client and the budget to the core's ``score_prompt`` directly.

What it reports to is a ``Ledger``: the run's ``PluginSession`` in practice,
a protocol here so that this module and the session do not import each other.
"""

from __future__ import annotations

import time
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any, Protocol

from tnsai_eval.pytest._options import PluginOptions

# tnsai_eval is imported only once a test makes a call (see _session for why).
if TYPE_CHECKING:
    from tnsai_eval.llm import CallBudget, Completion, LLMClient, MessagesInput

__all__ = ["Ledger", "MeteredLLM", "accepts_sample", "add_hint"]


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

    #: Calls go through ``llm.metered_call``, which charges the budget once.
    meters_attempts = True

    def __init__(self, inner: LLMClient, session: Ledger) -> None:
        self.inner = inner
        self.session = session
        self._takes_sample = accepts_sample(inner)

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

    def _budget(self) -> Any:
        budget = self.session.budget
        return nullcontext() if budget is None else budget.active()

    def chat(self, messages: MessagesInput, **params: Any) -> Completion:
        """``inner.chat``, counted towards the running test."""
        from tnsai_eval.llm import metered_call

        self.session.touch()
        started = time.perf_counter()
        try:
            with self._budget():
                completion = metered_call(self.inner, messages, **self._params(params))
        except Exception as exc:
            self._hint(exc)
            raise
        self.session.record_call(completion, time.perf_counter() - started)
        return completion

    async def achat(self, messages: MessagesInput, **params: Any) -> Completion:
        """``inner.achat`` (or ``chat`` in a thread), counted towards the running test."""
        from tnsai_eval.llm import ametered_call

        self.session.touch()
        started = time.perf_counter()
        try:
            with self._budget():
                completion = await ametered_call(self.inner, messages, **self._params(params))
        except Exception as exc:
            self._hint(exc)
            raise
        self.session.record_call(completion, time.perf_counter() - started)
        return completion

    def _hint(self, exc: Exception) -> None:
        add_hint(exc, self.session.options)


def add_hint(exc: Exception, options: PluginOptions) -> None:
    """A note on ``exc`` in the plugin's terms: which option to change, and why it applied.

    The store's own advice is about ``CachedLLM``'s ``mode=``; a pytest user
    needs the option, and why replay was on (CI=true often is the reason).
    """
    from tnsai_eval.errors import CallBudgetExceeded, ReplayMissError

    if isinstance(exc, CallBudgetExceeded):
        exc.add_note(
            f"tnsai: --llm-max-calls {options.max_calls} is spent for this session "
            "(stored replies never count); raise it, or record with fewer calls"
        )
    elif isinstance(exc, ReplayMissError) and "rather than recording again" not in str(exc):
        # (When the store holds the replies for another model, its message says
        # which to select; recording again is not the fix.)
        exc.add_note(
            f"tnsai: the `llm` fixture is in replay mode ({options.record_mode_source}); "
            "record the reply with `pytest --llm-record record` against a model and "
            f"commit {options.describe()['store']}"
        )


def accepts_sample(client: object) -> bool:
    # Only CachedLLM understands `sample`; passed to a plain client it would be
    # sent to the model as a sampling parameter.
    try:
        from tnsai_eval.llm import CachedLLM  # type: ignore[attr-defined,unused-ignore]
    except ImportError:
        return False
    return isinstance(client, CachedLLM)
