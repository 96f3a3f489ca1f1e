"""pytest-xdist: records ship per test, a crashed worker's test is an error, --dist each merges.

Real xdist runs in subprocesses (pytester): a worker killed by SIGKILL in the
middle of the run, and every test run on every worker.
"""

from __future__ import annotations

import pytest

from tests.plugin.conftest import read_json, write_report
from tnsai_eval.cli import main
from tnsai_eval.reports import read_report

CRASHING_TESTS = """
import os
import signal

import pytest

@pytest.mark.parametrize("n", range(9))
def test_case(n, tnsai_record):
    tnsai_record("score", 0.5)
    if n == 4:
        os.kill(os.getpid(), signal.SIGKILL)  # the worker dies mid-run
"""


def test_a_crashed_workers_tests_are_kept_and_its_crash_is_an_error(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    pytester.makepyfile(test_crash=CRASHING_TESTS)
    ids = [f"test_crash.py::test_case[{n}]" for n in range(9)]
    baseline = write_report(pytester.path / "baseline.json", dict.fromkeys(ids, 0.5))
    result = pytester.runpytest_subprocess("-n", "2", "-p", "no:randomly", "--tnsai-report=r.json")
    assert result.ret != pytest.ExitCode.OK
    report = read_json(pytester.path / "r.json")
    statuses = {t["nodeid"]: t["status"] for t in report["tests"]}
    # Every test is in the report: the ones the dead worker finished before it
    # died too (they used to ship only at the worker's session end).
    assert sorted(statuses) == sorted(ids)
    assert statuses.pop("test_crash.py::test_case[4]") == "error"
    assert set(statuses.values()) == {"passed"}
    crashed = next(t for t in report["tests"] if t["nodeid"].endswith("[4]"))
    assert "crashed" in crashed["message"]
    # The stand-alone gate never passes a run whose test errored before scoring.
    code = main(["report", str(pytester.path / "r.json"), "--baseline", str(baseline)])
    assert code == 1
    assert "errored" in capsys.readouterr().out


EACH_TESTS = """
def test_one(tnsai_record):
    tnsai_record("score", 0.75)

def test_two(tnsai_record):
    tnsai_record("score", 0.25)
"""


def test_dist_each_gives_one_record_per_node_id_with_each_worker_a_sample(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_each=EACH_TESTS)
    result = pytester.runpytest_subprocess(
        "-n", "2", "--dist", "each", "--tnsai-report=r.json", "--junitxml=j.xml"
    )
    result.assert_outcomes(passed=4)  # two tests, each on both workers
    report = read_report(pytester.path / "r.json")  # used to refuse duplicate node ids
    assert [t.nodeid for t in report.tests] == ["test_each.py::test_one", "test_each.py::test_two"]
    one, two = report.tests
    assert one.samples == 2
    assert one.metrics["score"].samples == (0.75, 0.75)
    assert two.metrics["score"].samples == (0.25, 0.25)
    # The record rode on the report's user_properties: JUnit XML never sees it.
    assert "tnsai_record" not in (pytester.path / "j.xml").read_text(encoding="utf-8")
