"""Building the plugin's front clients (``llm.FrontClient``) from the options.

Every client is made lazily, on the first call that reaches it: in replay
mode no call ever does, so a CI run never loads the embedded model nor needs a
server's key, and a run whose tests never call the model pays nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tnsai_eval._util.secrets import redact_url
from tnsai_eval.llm import (
    OTHER_MODEL_HINT,
    FrontClient,
    ResponseStore,
    default_llm,
    embedded_model_name,
)
from tnsai_eval.pytest._options import PluginOptions
from tnsai_eval.settings import resolve_model

if TYPE_CHECKING:
    from tnsai_eval.llm import NamedModel

__all__ = ["add_hint", "build_client", "build_named_client", "describe_model"]


def describe_model(options: PluginOptions) -> tuple[str | None, str]:
    """(base URL or None for the embedded model, model name), as the client will see them.

    The URL has any credentials (``user:pass@``, ``?api_key=``) redacted: it is
    written into reports and recordings.
    """
    settings = resolve_model(base_url=options.base_url, model=options.model)
    if settings.embedded:
        return None, embedded_model_name()
    base_url = settings.base_url
    return (redact_url(base_url) if base_url else None), settings.model or ""


def build_client(options: PluginOptions, store: ResponseStore | None) -> FrontClient:
    """The ``llm`` fixture's client: the configured model behind the store.

    ``default_llm`` reads the API key from ``$TNSAI_LLM_API_KEY``; there is
    deliberately no option for it, so that it never lands in a command line,
    an ini file or a report.
    """
    server, model = describe_model(options)
    client = FrontClient(
        factory=lambda: default_llm(base_url=options.base_url, model=options.model),
        store=store,
        mode=options.record_mode,
        model=model,
        server=server,
        offers_logprobs=True,
    )
    if options.concurrency is not None:
        client.ensure_concurrency(options.concurrency)
    return client


def build_named_client(
    options: PluginOptions, named: NamedModel, store: ResponseStore | None
) -> FrontClient:
    """A named model's client (``--tnsai-model``), behind the store like ``build_client``'s.

    Its recordings are keyed by its own model name and server, so two named
    models never answer from each other's recordings.
    """
    client = named.front(store, options.record_mode)
    if options.concurrency is not None:
        client.ensure_concurrency(options.concurrency)
    return client


def add_hint(exc: Exception, options: PluginOptions) -> None:
    """A note on ``exc`` in the plugin's terms: which option to change, and why it applied.

    The store's own advice is about ``FrontClient``'s ``mode=``; a pytest user
    needs the option, and why replay was on (CI=true often is the reason).
    """
    from tnsai_eval.errors import CallBudgetExceeded, ReplayMissError

    if isinstance(exc, CallBudgetExceeded):
        exc.add_note(
            f"tnsai: --llm-max-calls {options.max_calls} is spent for this session "
            "(stored replies never count); raise it, or record with fewer calls"
        )
    elif isinstance(exc, ReplayMissError) and OTHER_MODEL_HINT not in str(exc):
        # (When the store holds the replies for another model, its message says
        # which to select; recording again is not the fix.)
        exc.add_note(
            f"tnsai: the `llm` fixture is in replay mode ({options.record_mode_source}); "
            "record the reply with `pytest --llm-record record` against a model and "
            f"commit {options.describe()['store']}"
        )
