"""Concurrency as asked: evaluate_prompt(concurrency=N) gets N requests in flight (the
client's pool grows to it), --llm-concurrency (ini tnsai_llm_concurrency) sets the default
and, when given, a ceiling that is said once."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from tests.llm.fake_server import FakeOpenAIServer, Step

CASES_32 = """
def test_wide(evaluate_prompt):
    cases = [(f"What is the capital of France? ({{i}})", "Paris") for i in range(32)]
    evaluate_prompt("Answer in one word.", cases{concurrency})
"""


@pytest.fixture
def held(server: FakeOpenAIServer) -> Iterator[tuple[FakeOpenAIServer, threading.Event]]:
    """The server holds every reply until as many requests are in flight as the test wants."""
    gate = threading.Event()
    server.reset(default=Step(gate=gate, body=Step.ok("Paris").body))
    yield server, gate
    gate.set()


def _open_at(server: FakeOpenAIServer, gate: threading.Event, count: int) -> threading.Thread:
    def watch() -> None:
        # A bounded wait, then the gate opens whatever happened: the test
        # checks the most requests the server saw at once, not any time.
        deadline = time.monotonic() + 60
        while server.in_flight < count and time.monotonic() < deadline:
            time.sleep(0.01)
        gate.set()

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    return watcher


def _model(server: FakeOpenAIServer) -> list[str]:
    return [f"--llm-base-url={server.base_url}", "--llm-model=fake", "--llm-record=off"]


def test_concurrency_32_reaches_32_requests_in_flight(
    pytester: pytest.Pytester, held: tuple[FakeOpenAIServer, threading.Event]
) -> None:
    server, gate = held
    pytester.makepyfile(test_wide=CASES_32.format(concurrency=", concurrency=32"))
    watcher = _open_at(server, gate, 32)
    result = pytester.runpytest_inprocess(*_model(server))
    watcher.join()
    result.assert_outcomes(passed=1)
    # The client's default pool is 16; it grew to what the call asked.
    assert server.max_in_flight == 32
    assert len(server.requests) == 32


def test_the_option_sets_the_default_and_caps_with_one_warning(
    pytester: pytest.Pytester, held: tuple[FakeOpenAIServer, threading.Event]
) -> None:
    server, gate = held
    pytester.makepyfile(
        test_wide=CASES_32.format(concurrency=", concurrency=32")
        + "\n\ndef test_again(evaluate_prompt):\n"
        "    evaluate_prompt('Answer.', [('capital of France?', 'Paris')], concurrency=64)\n"
    )
    pytester.makeini("[pytest]\ntnsai_llm_concurrency = 8\n")
    watcher = _open_at(server, gate, 8)
    result = pytester.runpytest_inprocess(*_model(server), "-p", "no:randomly")
    watcher.join()
    result.assert_outcomes(passed=2)
    assert server.max_in_flight == 8
    text = result.stdout.str()
    assert text.count("is capped at --llm-concurrency 8") == 1
    result.stdout.fnmatch_lines(
        ["*evaluate_prompt(concurrency=32) is capped at --llm-concurrency 8*"]
    )


def test_the_option_is_the_default_of_every_call(
    pytester: pytest.Pytester, held: tuple[FakeOpenAIServer, threading.Event]
) -> None:
    server, gate = held
    pytester.makepyfile(test_wide=CASES_32.format(concurrency=""))
    watcher = _open_at(server, gate, 24)
    result = pytester.runpytest_inprocess(*_model(server), "--llm-concurrency", "24")
    watcher.join()
    result.assert_outcomes(passed=1)
    assert server.max_in_flight == 24
    bad = pytester.runpytest_inprocess(*_model(server), "--llm-concurrency", "0")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    assert "--llm-concurrency: expected a finite number >= 1, got '0'" in bad.stderr.str()
