"""Latency as a result: p50/p95 of live calls per test, none for replayed replies, and its gate.

A fake OpenAI-compatible server on 127.0.0.1 adds a known delay to every
reply. A live call can never take less than that delay, so the only timing
figures asserted are lower bounds (generous by construction); the gate tests
compare a server with no delay against one with a delay hundreds of times
longer than a local call takes.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tests.llm.fake_server import FakeOpenAIServer, Step
from tests.plugin.conftest import read_json
from tnsai_eval.reports import read_report

# Long enough that a loaded machine (a local call took 0.23 s at load average 6) cannot
# make the server without a delay look as slow as this one.
DELAY_S = 1.0

SUITE = """
from tnsai_eval.scoring import ExactMatchEvaluator

CASES = [(f"What is the capital of {c}?", "Paris") for c in ("France", "Gaul", "Lutetia", "X")]

def test_capitals(evaluate_prompt):
    evaluate_prompt("Answer with the city only.", CASES, evaluator=ExactMatchEvaluator())
"""
NODE = "test_suite.py::test_capitals"


@pytest.fixture
def slow_server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(default=Step.ok("Paris", delay=DELAY_S)) as running:
        yield running


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(test_suite=SUITE)
    return pytester


def _server_args(server: FakeOpenAIServer) -> list[str]:
    return ["--llm-base-url", server.base_url, "--llm-model", "m", "-p", "no:cacheprovider"]


def _test(report: dict[str, Any]) -> dict[str, Any]:
    return next(t for t in report["tests"] if t["nodeid"] == NODE)


def test_live_calls_have_p50_and_p95_replayed_ones_none(
    suite: pytest.Pytester, slow_server: FakeOpenAIServer
) -> None:
    args = [*_server_args(slow_server), "--llm-store", "store"]
    live = suite.runpytest_inprocess(*args, "--llm-record", "record", "--tnsai-report", "r.json")
    live.assert_outcomes(passed=1)
    record = _test(read_json(suite.path / "r.json"))
    assert record["live_calls"] == 4
    # Every call waited at least the server's delay: a lower bound, never flaky.
    assert record["latency_p50_s"] >= DELAY_S
    assert record["latency_p95_s"] >= record["latency_p50_s"]
    figures = f"{NODE}*4 *[0-9].[0-9]*/[0-9].[0-9]*"  # live calls, then p50/p95 seconds
    live.stdout.fnmatch_lines(["*live calls*latency p50/p95 s*", figures])

    slow_server.reset(default=Step.error(500))  # a live call now would fail the test
    replayed = suite.runpytest_inprocess(
        *args, "--llm-record", "replay", "--tnsai-report", "replayed.json"
    )
    replayed.assert_outcomes(passed=1)
    assert slow_server.requests == []
    record = _test(read_json(suite.path / "replayed.json"))
    # Replayed replies took no model time: not counted, and no figure at all (the
    # record keeps the fields it always had).
    assert not {"live_calls", "latency_p50_s", "latency_p95_s"} & set(record)
    assert read_report(suite.path / "replayed.json").tests[0].latency_p50_s is None
    assert not any("latency p50/p95" in line for line in replayed.outlines)


def test_latency_gate_fails_a_slower_run(
    suite: pytest.Pytester, slow_server: FakeOpenAIServer
) -> None:
    with FakeOpenAIServer(default=Step.ok("Paris")) as fast:
        baseline = suite.runpytest_inprocess(
            *_server_args(fast), "--llm-record", "off", "--tnsai-report", "baseline.json"
        )
    baseline.assert_outcomes(passed=1)
    gated = suite.runpytest_inprocess(
        *_server_args(slow_server), "--llm-record", "off", "--tnsai-report", "slow.json",
        "--tnsai-baseline", "baseline.json", "--tnsai-gate-latency", "0.5",
    )  # fmt: skip
    # The scores are equal; only the latency regressed, and that fails the session.
    assert gated.ret == pytest.ExitCode.TESTS_FAILED
    gated.stdout.fnmatch_lines(
        [
            "1 regression(s) beyond tolerance*",
            f"  {NODE}: latency p50 * s -> * s, *x, limit 1.5x (gate_latency 0.5): regressed",
        ]
    )
    # Without the option the same two runs pass: the gate is opt-in.
    ungated = suite.runpytest_inprocess(
        *_server_args(slow_server), "--llm-record", "off", "--tnsai-baseline", "baseline.json"
    )
    assert ungated.ret == pytest.ExitCode.OK
    # The report command gates the same two reports the same way.
    command = [sys.executable, "-m", "tnsai_eval.cli", "report", "slow.json"]
    command += ["--baseline", "baseline.json", "--gate-latency", "0.5"]
    cli = subprocess.run(command, cwd=suite.path, capture_output=True, text=True, check=False)
    assert cli.returncode == 1, cli.stdout + cli.stderr
    assert "limit 1.5x (gate_latency 0.5): regressed" in cli.stdout
    generous = subprocess.run(
        [*command[:-1], "1000000"], cwd=suite.path, capture_output=True, text=True, check=False
    )
    assert generous.returncode == 0, generous.stdout + generous.stderr


def test_latency_gate_is_skipped_with_a_note_when_a_run_was_replayed(
    suite: pytest.Pytester, slow_server: FakeOpenAIServer
) -> None:
    args = [*_server_args(slow_server), "--llm-store", "store"]
    suite.runpytest_inprocess(
        *args, "--llm-record", "record", "--tnsai-report", "baseline.json"
    ).assert_outcomes(passed=1)
    replayed = suite.runpytest_inprocess(
        *args, "--llm-record", "replay", "--tnsai-baseline", "baseline.json",
        "--tnsai-gate-latency", "0.1",
    )  # fmt: skip
    assert replayed.ret == pytest.ExitCode.OK
    replayed.stdout.fnmatch_lines(
        [f"note: latency gate skipped for {NODE}: no live calls in this run (replayed*"]
    )


def test_bad_gate_latency_is_a_usage_error(suite: pytest.Pytester) -> None:
    result = suite.runpytest_inprocess("--tnsai-gate-latency", "-1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--tnsai-gate-latency*-1*"])
