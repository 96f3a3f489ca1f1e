"""``--tnsai-repeat N``: run a tracked test N times and report it once.

Each sample is a full setup/call/teardown (``runtestprotocol``), so
function-scoped fixtures are fresh every time, and each sample's calls run in
``llm.sampling(n)``: the sample index is part of the store key (never of the
request or the prompt's hash), so each sample has its own recording.
pytest sees one merged result per phase: the test fails if any sample failed,
and the report says in how many.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain

import pytest

# pytest has no public way to run one item's protocol again; this private
# function is the one pytest-rerunfailures calls for the same purpose.
from _pytest.runner import runtestprotocol

from tnsai_eval.pytest._session import SAMPLES_PROPERTY, PluginSession

__all__ = ["run_samples"]


def run_samples(
    item: pytest.Item, nextitem: pytest.Item | None, session: PluginSession, count: int
) -> None:
    from tnsai_eval.llm import sampling

    ihook = item.ihook
    ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    runs: list[list[pytest.TestReport]] = []
    try:
        for sample in range(count):
            session.sample = sample
            # nextitem (not None) for every sample: only what the next test does
            # not share is torn down, so session fixtures survive between samples.
            with sampling(sample):
                runs.append(runtestprotocol(item, log=False, nextitem=nextitem))
    finally:
        session.sample = 0
    for report in _merge(runs):
        ihook.pytest_runtest_logreport(report=report)
    ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)


def _merge(runs: Sequence[Sequence[pytest.TestReport]]) -> list[pytest.TestReport]:
    by_phase: dict[str, list[pytest.TestReport]] = {"setup": [], "call": [], "teardown": []}
    for reports in runs:
        for report in reports:
            by_phase[report.when].append(report)
    setup = _pick(by_phase["setup"])
    if setup.failed:
        # A sample that could not even be set up: report that, as pytest would.
        return [setup, _pick(by_phase["teardown"])]
    merged = [setup]
    calls = by_phase["call"]
    if calls:
        call = _pick(calls)
        passed = sum(r.passed for r in calls)
        failed = [i + 1 for i, r in enumerate(calls) if r.failed]
        call.duration = sum(r.duration for r in calls)
        call.user_properties.append((SAMPLES_PROPERTY, (passed, len(runs))))
        if failed:
            call.sections.append(
                (
                    "tnsai --tnsai-repeat",
                    f"{len(failed)} of {len(runs)} samples failed (samples {failed}); "
                    f"the traceback above is sample {failed[0]}'s",
                )
            )
        merged.append(call)
    merged.append(_pick(by_phase["teardown"]))
    return merged


def _pick(reports: Sequence[pytest.TestReport]) -> pytest.TestReport:
    """The first failed report, else the first skipped one, else the last."""
    failed, skipped = (r for r in reports if r.failed), (r for r in reports if r.skipped)
    return next(chain(failed, skipped), reports[-1])
