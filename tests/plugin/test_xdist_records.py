"""pytest-xdist: records ship per test, a crashed worker's test is an error, --dist each merges.

Real xdist runs in subprocesses (pytester): a worker killed by SIGKILL in the
middle of the run, and every test run on every worker.
"""

from __future__ import annotations

import dataclasses

import pytest

from tests.llm.fake_server import FakeOpenAIServer, Step
from tests.plugin.conftest import read_json, write_report
from tnsai_eval.cli import main
from tnsai_eval.reports import MERGE, MergeRule, TestStatus, TrackedTest, read_report

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


PRICED = """
from tnsai_eval.scoring import ContainsEvaluator

def test_priced(evaluate_prompt):
    evaluate_prompt("Answer.", [("Capital of France?", "Paris")], evaluator=ContainsEvaluator())
"""


def test_dist_each_keeps_every_workers_tokens_cost_and_live_calls(
    pytester: pytest.Pytester,
) -> None:
    with FakeOpenAIServer(default=Step.ok("Paris")) as server:
        pytester.makepyprojecttoml(
            f'[tool.tnsai-eval.models.priced]\nbase_url = "{server.base_url}"\nmodel = "m"\n'
            "price_in = 1000000.0\nprice_out = 2000000.0\n"
        )
        pytester.makepyfile(test_priced=PRICED)
        result = pytester.runpytest_subprocess(
            "-n", "2", "--dist", "each", "--tnsai-model", "priced", "--llm-record", "off",
            "--tnsai-report=r.json",
        )  # fmt: skip
        result.assert_outcomes(passed=2)
        assert len(server.requests) == 2
    (test,) = read_report(pytester.path / "r.json").tests
    # Both workers made the same call: the merged record holds twice its tokens.
    assert (test.calls, test.live_calls) == (2, 2)
    assert test.tokens_in > 0
    assert test.tokens_in % 2 == 0
    assert test.tokens_out % 2 == 0
    assert test.cost == pytest.approx(test.tokens_in * 1.0 + test.tokens_out * 2.0)
    assert test.latency_p50_s is not None


def test_every_field_of_a_test_record_declares_its_merge_rule() -> None:
    rules = {f.name: f.metadata.get(MERGE) for f in dataclasses.fields(TrackedTest)}
    assert all(isinstance(rule, MergeRule) for rule in rules.values()), rules
    first = TrackedTest("t", TestStatus.PASSED, tokens_in=3, tokens_out=1, cost=0.5, live_calls=1,
                        latency_p50_s=0.2, message="")  # fmt: skip
    second = TrackedTest("t", TestStatus.FAILED, tokens_in=4, tokens_out=2, cost=None,
                         live_calls=2, latency_p50_s=0.1, message="boom")  # fmt: skip
    merged = first.merge(second)
    assert (merged.tokens_in, merged.tokens_out, merged.cost, merged.live_calls) == (7, 3, 0.5, 3)
    assert (merged.status, merged.latency_p50_s, merged.message) == (TestStatus.FAILED, 0.2, "boom")
    assert merged.samples == 2


# Run twice: as two repeat samples in one process, and once on each of two
# workers. Its second run skips, after scoring two prompts under two names.
TWICE = """
import os

import pytest
from tnsai_eval.llm import current_sample
from tnsai_eval.scoring import ContainsEvaluator

def test_twice(evaluate_prompt):
    for name, prompt, case in [("france", "Answer.", ("capital of France?", "Paris")),
                               ("italy", "Reply.", ("capital of Italy?", "Rome"))]:
        evaluate_prompt(prompt, [case], evaluator=ContainsEvaluator(), name=name)
    if current_sample() == 1 or os.environ.get("PYTEST_XDIST_WORKER") == "gw1":
        pytest.skip("the second run gives no verdict")
"""


def test_a_tests_own_record_and_the_xdist_merge_follow_the_same_rules(
    scripted: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    scripted.makepyfile(test_twice=TWICE)
    # The in-process run must not see this test's own xdist worker name (under
    # `make test` it may be gw1, which would skip its first sample too).
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    repeated = scripted.runpytest_inprocess("--tnsai-repeat", "2", "--tnsai-report=repeat.json")
    repeated.assert_outcomes(skipped=1)
    spread = scripted.runpytest_subprocess(
        "-n", "2", "--dist", "each", "--tnsai-report=each.json"
    )  # fmt: skip
    spread.assert_outcomes(passed=1, skipped=1)
    (alone,) = read_report(scripted.path / "repeat.json").tests
    (merged,) = read_report(scripted.path / "each.json").tests

    def shape(test: TrackedTest) -> tuple[object, ...]:
        return (
            test.status,
            test.samples,
            test.passed_samples,
            test.calls,
            test.tokens,
            {name: m.samples for name, m in test.metrics.items()},
            [(c.metric, c.sample, c.output) for c in test.cases],
            [p.metric for p in test.prompts],
        )

    # A skipped run is worse than a passed one, in a test's own record as in the merge.
    assert alone.status is TestStatus.SKIPPED
    assert shape(alone) == shape(merged)
    assert [p.metric for p in alone.prompts] == ["france", "italy"]  # each name's prompt
    assert alone.calls == 4
    assert {c.sample for c in alone.cases} == {0, 1}
