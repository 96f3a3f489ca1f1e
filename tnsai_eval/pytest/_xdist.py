"""pytest-xdist support: workers ship their records, the controller merges them.

A worker has ``config.workerinput``; at the end of its session it puts every
finished record (plain JSON-able dicts, which execnet can carry) into
``config.workeroutput``. The controller receives them in
``pytest_testnodedown`` and folds them into its own session, so the terminal
summary, the JSON report and the baseline gate see the whole run.
"""

from __future__ import annotations

from typing import Any

import pytest

from tnsai_eval.pytest._session import PluginSession

__all__ = ["OUTPUT_KEY", "XdistHooks", "is_worker"]

OUTPUT_KEY = "tnsai_records"
#: What answered on the worker (the ``llm`` fixture is made there, never on
#: the controller), so that the merged report names the model.
LLM_KEY = "tnsai_llm"


def is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def ship(config: pytest.Config, session: PluginSession) -> None:
    """On a worker: hand this worker's records to the controller."""
    output: dict[str, Any] = config.workeroutput  # type: ignore[attr-defined]
    output[OUTPUT_KEY] = [test.to_dict() for test in session.finished()]
    output[LLM_KEY] = dict(session.llm_description)


class XdistHooks:
    """Registered only when xdist is active; its hook is unknown to pytest otherwise."""

    def __init__(self, session: PluginSession) -> None:
        self.session = session

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        output = getattr(node, "workeroutput", {})
        self.session.merge(output.get(OUTPUT_KEY, []))
        for key, value in output.get(LLM_KEY, {}).items():
            self.session.llm_description.setdefault(key, value)
