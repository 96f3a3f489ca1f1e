"""pytest-xdist support: workers ship their records, the controller merges them.

A worker has ``config.workerinput``. Each tracked test's finished record (a
plain JSON-able dict, which execnet carries) rides on the test's teardown
report, in its ``user_properties``, the one per-test channel xdist already
serializes: so a worker that crashes later loses nothing it finished. The
controller takes the record off the report before any other plugin sees it
(JUnit XML would write it out as a property) and folds it into its own
session, so the terminal summary, the JSON report and the baseline gate see
the whole run. Whatever a worker still holds at its session end (a test
interrupted before its teardown) goes in ``config.workeroutput``, received in
``pytest_testnodedown``.

A test whose worker crashed while running it (xdist's
``pytest_handlecrashitem``) gets an ``error`` record saying so: never a
silently vanished test. Under ``--dist each`` every worker runs every test;
the records of one node id are merged as samples of one test (see
``PluginSession.merge``).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tnsai_eval.pytest._session import PluginSession

if TYPE_CHECKING:
    from tnsai_eval.llm import CallBudget

__all__ = ["OUTPUT_KEY", "RECORD_PROPERTY", "XdistHooks", "attach", "call_budget", "is_worker"]

OUTPUT_KEY = "tnsai_records"
#: user_properties key of the record a worker attaches to a test's teardown report.
RECORD_PROPERTY = "tnsai_record"
#: What answered on the worker (the ``llm`` fixture is made there, never on
#: the controller), so that the merged report names the model.
LLM_KEY = "tnsai_llm"
#: workerinput key naming the file in which every worker counts --llm-max-calls.
CALLS_FILE_KEY = "tnsai_calls_file"
#: workerinput key of the run's id, so that the store's usage records name one run.
RUN_KEY = "tnsai_run"


def is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def call_budget(config: pytest.Config, limit: int) -> CallBudget:
    """The session's ``--llm-max-calls`` budget, shared by every xdist worker.

    The controller makes the counting file (in a fresh temporary folder) and
    names it in each worker's ``workerinput``; without xdist the count stays
    in memory.
    """
    # Imported only when --llm-max-calls is given: it loads the HTTP client.
    from tnsai_eval.llm import CallBudget

    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        shared = workerinput.get(CALLS_FILE_KEY)
        return CallBudget(limit, shared=None if shared is None else Path(shared))
    if not config.pluginmanager.hasplugin("xdist"):
        return CallBudget(limit)
    folder = Path(tempfile.mkdtemp(prefix="tnsai-calls-"))
    config.add_cleanup(lambda: shutil.rmtree(folder))
    return CallBudget(limit, shared=folder / "calls")


def attach(report: pytest.TestReport, session: PluginSession) -> None:
    """On a worker, at a test's teardown report: ship its finished record with it."""
    record = session.take_finished(report.nodeid)
    if record is not None:
        report.user_properties.append((RECORD_PROPERTY, record.to_dict()))


def ship(config: pytest.Config, session: PluginSession) -> None:
    """On a worker: hand the records no teardown report carried to the controller."""
    output: dict[str, Any] = config.workeroutput  # type: ignore[attr-defined]
    output[OUTPUT_KEY] = [test.to_dict() for test in session.finished()]
    output[LLM_KEY] = dict(session.llm_description)


class XdistHooks:
    """Registered only when xdist is active; its hook is unknown to pytest otherwise."""

    def __init__(self, session: PluginSession) -> None:
        self.session = session

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[RUN_KEY] = self.session.run
        budget = self.session.budget
        if budget is not None and budget.shared is not None:
            node.workerinput[CALLS_FILE_KEY] = str(budget.shared)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # First, so that no other plugin (JUnit XML) sees the record as a property.
        records: list[Any] = [
            value for key, value in report.user_properties if key == RECORD_PROPERTY
        ]
        if records:
            report.user_properties = [
                (key, value) for key, value in report.user_properties if key != RECORD_PROPERTY
            ]
            self.session.merge(records)

    @pytest.hookimpl(optionalhook=True)
    def pytest_handlecrashitem(self, crashitem: str, report: pytest.TestReport, sched: Any) -> None:
        self.session.record_crash(crashitem, report.longreprtext)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        output = getattr(node, "workeroutput", {})
        self.session.merge(output.get(OUTPUT_KEY, []))
        for key, value in output.get(LLM_KEY, {}).items():
            self.session.llm_description.setdefault(key, value)
