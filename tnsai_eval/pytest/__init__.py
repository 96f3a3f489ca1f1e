"""The tnsai-eval pytest plugin (registered through the ``pytest11`` entry point).

Fixtures: ``llm``, ``evaluate_prompt``, ``evaluate_target``, ``refine``, ``agent``,
``norm_actions``, ``norm_engine``, ``feedback_store``, ``prompt_optimizer``,
``tnsai_record``, ``tnsai_model``.
Markers: ``norm_check`` and ``refine_until``, also importable from here as
decorators::

    from tnsai_eval.pytest import norm_check, refine_until

    @refine_until(task="Return the order as JSON", valid_json=True, must_contain='"id"')
    def test_order_json(refine):
        refine('id: 7')

The hooks below are thin: the state of a run lives in a ``PluginSession``
kept in ``config.stash``; see docs/pytest-plugin.md for the options.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from tnsai_eval.pytest import _options

# The fixtures are imported so that pytest finds them as this plugin's attributes.
from tnsai_eval.pytest._fixtures import (  # noqa: F401
    NormActions,
    agent,
    evaluate_prompt,
    evaluate_target,
    feedback_store,
    llm,
    norm_actions,
    norm_engine,
    prompt_optimizer,
    refine,
    tnsai_model,
    tnsai_record,
)
from tnsai_eval.pytest._markers import MARKER_LINES, norm_check, refine_until
from tnsai_eval.pytest._session import SESSION_KEY, PluginSession

if TYPE_CHECKING:
    from tnsai_eval.evaluation import PromptEvaluation
    from tnsai_eval.records import CaseRecord

__all__ = [
    "CaseRecord",
    "NormActions",
    "PluginSession",
    "PromptEvaluation",
    "norm_check",
    "refine_until",
]


def __getattr__(name: str) -> Any:
    # Loaded on first use: a suite that never evaluates a prompt should not pay
    # for importing the scoring engine at start-up.
    if name == "CaseRecord":
        from tnsai_eval.records import CaseRecord

        return CaseRecord
    if name == "PromptEvaluation":
        from tnsai_eval.evaluation import PromptEvaluation

        return PromptEvaluation
    raise AttributeError(f"module 'tnsai_eval.pytest' has no attribute {name!r}")


def pytest_addoption(parser: pytest.Parser) -> None:
    _options.add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    for line in MARKER_LINES:
        config.addinivalue_line("markers", line)
    from tnsai_eval.pytest import _xdist
    from tnsai_eval.pytest._hooks import RepeatHooks, TnsaiHooks

    options = _options.PluginOptions.from_config(config)
    session = PluginSession(options, getattr(config, "workerinput", {}).get(_xdist.RUN_KEY))
    config.stash[SESSION_KEY] = session
    baseline = None
    if options.baseline is not None and not _xdist.is_worker(config):
        from tnsai_eval.errors import ConfigError
        from tnsai_eval.reports import read_report

        try:
            baseline = read_report(options.baseline)
        except ConfigError as exc:
            raise pytest.UsageError(f"--tnsai-baseline: {exc}") from None
    if options.max_calls is not None:
        session.budget = _xdist.call_budget(config, options.max_calls)
    config.pluginmanager.register(TnsaiHooks(config, session, baseline), "tnsai-session")
    if options.repeat > 1:
        config.pluginmanager.register(RepeatHooks(session), "tnsai-repeat")
    if config.pluginmanager.hasplugin("xdist") and not _xdist.is_worker(config):
        config.pluginmanager.register(_xdist.XdistHooks(session), "tnsai-xdist")
