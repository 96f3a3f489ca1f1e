"""--llm-max-calls: a spending bound on model calls, across xdist workers and shared with the
optimizer; store hits are free; a case it refuses is "not run: budget", never "unrecorded"."""

from __future__ import annotations

import pytest

from tests.llm.fake_server import FakeOpenAIServer
from tests.plugin.conftest import read_json

SIX_CASES = """
def test_capitals(evaluate_prompt):
    cases = [(f"What is the capital of France? ({i})", "Paris") for i in range(6)]
    evaluate_prompt("Answer in one word.", cases, concurrency=1)
"""


def _model(server: FakeOpenAIServer) -> list[str]:
    return [
        f"--llm-base-url={server.base_url}",
        "--llm-model=fake",
        "--llm-store=store",
        "--llm-record=record",
    ]


def test_calls_stop_at_the_bound_and_the_rest_are_not_run(
    pytester: pytest.Pytester, server: FakeOpenAIServer
) -> None:
    pytester.makepyfile(test_capitals=SIX_CASES)
    first = pytester.runpytest_inprocess(*_model(server), "--llm-max-calls", "3", "--tnsai-report",
                                         "r.json")  # fmt: skip
    first.assert_outcomes(failed=1)
    assert len(server.requests) == 3
    first.stdout.fnmatch_lines(
        [
            "*3 of 6 case(s) not run: budget (--llm-max-calls 3 spent); they are not scored*",
            "*--llm-max-calls 3: 3 model call(s) made; the bound is reached: any later call "
            "was not sent (its case is not run: budget)",
        ]
    )
    cases = read_json(pytester.path / "r.json")["tests"][0]["cases"]
    assert [c["state"] for c in cases] == ["scored"] * 3 + ["not_run"] * 3
    assert "unrecorded" not in first.stdout.str()

    # Again with the same bound: the 3 recorded replies come from the store and
    # never count, so the 3 others can now be recorded.
    second = pytester.runpytest_inprocess(*_model(server), "--llm-max-calls", "3")
    second.assert_outcomes(passed=1)
    assert len(server.requests) == 6
    second.stdout.fnmatch_lines(["*--llm-max-calls 3: 3 model call(s) made; the bound is reached*"])


def test_the_ini_twin_and_bad_values(pytester: pytest.Pytester, server: FakeOpenAIServer) -> None:
    pytester.makepyfile(test_capitals=SIX_CASES)
    pytester.makeini("[pytest]\ntnsai_llm_max_calls = 2\n")
    result = pytester.runpytest_inprocess(*_model(server))
    result.assert_outcomes(failed=1)
    assert len(server.requests) == 2
    bad = pytester.runpytest_inprocess(*_model(server), "--llm-max-calls", "-1")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    assert "--llm-max-calls: expected a finite number >= 0, got '-1'" in bad.stderr.str()


RETRYING_CONFTEST = """
import pytest
from tnsai_eval.llm import Completion


class Retrying:
    model = "retrying"
    calls = 0

    def chat(self, messages, **params):
        type(self).calls += 1
        return Completion(text="Paris", attempts=2)  # one retry per call


@pytest.fixture(scope="session")
def llm():
    return Retrying()
"""


def test_retries_count_as_calls(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(RETRYING_CONFTEST)
    pytester.makepyfile(
        test_retry=SIX_CASES.replace("range(6)", "range(4)")
        + "\n\ndef test_count():\n    from conftest import Retrying\n"
        "    assert Retrying.calls == 3\n"
    )
    # 5 attempts allowed: calls of 2 attempts each; the third takes the last
    # free attempt and its retry, the fourth is refused.
    result = pytester.runpytest_inprocess("--llm-max-calls", "5", "-p", "no:randomly")
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(["*1 of 4 case(s) not run: budget (--llm-max-calls 5 spent)*",
                                 "*--llm-max-calls 5: 6 model call(s) made*"])  # fmt: skip


XDIST_SIX = """
import pytest

@pytest.mark.parametrize("n", range(6))
def test_case(n, evaluate_prompt):
    evaluate_prompt("Answer in one word.", [(f"What is the capital of France? {n}", "Paris")])
"""


def test_the_bound_holds_across_xdist_workers(
    pytester: pytest.Pytester, server: FakeOpenAIServer
) -> None:
    pytester.makepyfile(test_dist=XDIST_SIX)
    result = pytester.runpytest_subprocess(
        "-n", "2", *_model(server), "--llm-max-calls", "4", "--tnsai-report", "r.json"
    )
    result.assert_outcomes(passed=4, failed=2)
    assert len(server.requests) == 4
    report = read_json(pytester.path / "r.json")
    states = sorted(c["state"] for t in report["tests"] for c in t["cases"])
    # Every worker's case records reached the controller's report.
    assert states == ["not_run"] * 2 + ["scored"] * 4
    result.stdout.fnmatch_lines(["*--llm-max-calls 4: 4 model call(s) made; the bound is reached*"])


SHARED = """
from tnsai_eval.optimizer import StopReason
from tnsai_eval.scoring import ContainsEvaluator, TestCase


def test_a_evaluate(evaluate_prompt):
    evaluate_prompt("Answer.", [(f"question {i}", "echo") for i in range(4)], concurrency=1)


def test_b_optimize(prompt_optimizer):
    optimizer = prompt_optimizer.with_options(
        split=None, max_iterations=1, candidate_strategies=["concise"], rewrite=False,
        concurrency=1, evaluator=ContainsEvaluator(), target_score=1.0,
    )
    result = optimizer.optimize("Say no.", [TestCase(f"q {i}", "zebra") for i in range(10)])
    # The session had 6 attempts left after test_a's 4: the initial prompt's
    # 10 cases got 6 of them, and the run says why it stopped.
    assert (result.calls, result.stop_reason) == (6, StopReason.MAX_CALLS)
"""


def test_the_optimizer_and_evaluate_prompt_share_the_session_budget(
    pytester: pytest.Pytester, server: FakeOpenAIServer
) -> None:
    pytester.makepyfile(test_shared=SHARED)
    result = pytester.runpytest_inprocess(
        *_model(server), "--llm-record=off", "--llm-max-calls", "10", "-p", "no:randomly"
    )
    result.assert_outcomes(passed=2)
    assert len(server.requests) == 10
    result.stdout.fnmatch_lines(["*--llm-max-calls 10: 10 model call(s) made; the bound is*"])
