"""``tnsai-eval store prune``: a store keeps only the replies the last pytest run used;
``--llm-record refresh`` rewrites what it refreshes instead of growing the cassette.

Real pytest runs (pytester) record against a fake OpenAI-compatible server on
127.0.0.1, then replay with the server failing every request, so any reply
missing from the store fails the run.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.llm.fake_server import FakeOpenAIServer, Step
from tnsai_eval.cli import main

# How many questions each test asks, and how they are worded, come from the
# environment, so one suite shrinks (or rewords) between runs.
SUITE = """
import os

import pytest

@pytest.mark.parametrize("topic", ["rivers", "cities"])
def test_ask(topic, llm):
    for i in range(int(os.environ["QUESTIONS"])):
        llm.chat(f"{os.environ.get('WORDING', 'Question')} {i} about {topic}?")

def test_other(llm):
    llm.chat("Anything else?")
"""


def _model(server: FakeOpenAIServer, mode: str) -> list[str]:
    return [
        f"--llm-base-url={server.base_url}",
        "--llm-model=fake",
        "--llm-store=store",
        f"--llm-record={mode}",
        "-p",
        "no:randomly",
    ]


def _replies(store: Path) -> dict[str, int]:
    """{cassette name: how many replies} for every cassette file in ``store``."""
    counts = {}
    for file in sorted(store.glob("*.json")):
        document = json.loads(file.read_text(encoding="utf-8"))
        counts[document["cassette"]] = len(document["replies"])
    return counts


RIVERS = "test_suite.py::test_ask[rivers]"
CITIES = "test_suite.py::test_ask[cities]"
OTHER = "test_suite.py::test_other"


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.delenv("CI", raising=False)
    pytester.makepyfile(test_suite=SUITE)
    return pytester


def test_prune_keeps_the_24_replies_the_last_run_used_of_120_and_replay_still_finds_them(
    suite: pytest.Pytester,
    server: FakeOpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("QUESTIONS", "120")
    suite.runpytest_inprocess(*_model(server, "record")).assert_outcomes(passed=3)
    store = suite.path / "store"
    assert _replies(store) == {RIVERS: 120, CITIES: 120, OTHER: 1}

    # The suite now asks 24 questions per topic; this run leaves test_other out.
    monkeypatch.setenv("QUESTIONS", "24")
    server.reset(default=Step.error(500))  # a reply not in the store fails the run
    replayed = suite.runpytest_inprocess(*_model(server, "replay"), "-k", "test_ask")
    replayed.assert_outcomes(passed=2, deselected=1)
    assert _replies(store) == {RIVERS: 120, CITIES: 120, OTHER: 1}  # replay changes no cassette
    capsys.readouterr()

    assert main(["store", "prune", str(store), "--dry-run"]) == 0
    assert "would remove 192 replies from 2 of the 2 cassettes" in capsys.readouterr().out
    assert _replies(store) == {RIVERS: 120, CITIES: 120, OTHER: 1}

    assert main(["store", "prune", str(store)]) == 0
    out = capsys.readouterr().out
    assert "removed 192 replies from 2 of the 2 cassettes the last run opened" in out
    assert out.count(": removed 96 of 120, kept 24") == 2
    # The cassette the last run did not open is named and left as it was.
    assert "left as they are (1, not opened by the last run):" in out
    assert _replies(store) == {RIVERS: 24, CITIES: 24, OTHER: 1}

    replayed = suite.runpytest_inprocess(*_model(server, "replay"))
    replayed.assert_outcomes(passed=3)  # no miss: every reply the suite asks for is kept
    assert server.requests == []


def test_prune_after_an_xdist_run_prunes_every_workers_cassettes(
    suite: pytest.Pytester, server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("QUESTIONS", "6")
    suite.runpytest_inprocess(*_model(server, "record")).assert_outcomes(passed=3)
    monkeypatch.setenv("QUESTIONS", "2")
    # Three tests on two workers: the workers' usage records are one run's.
    result = suite.runpytest_subprocess("-n", "2", *_model(server, "replay"))
    result.assert_outcomes(passed=3)
    assert main(["store", "prune", str(suite.path / "store")]) == 0
    assert _replies(suite.path / "store") == {RIVERS: 2, CITIES: 2, OTHER: 1}


def test_a_test_that_no_longer_calls_the_model_has_its_cassette_deleted(
    suite: pytest.Pytester,
    server: FakeOpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("QUESTIONS", "3")
    suite.runpytest_inprocess(*_model(server, "record")).assert_outcomes(passed=3)
    monkeypatch.setenv("QUESTIONS", "0")
    suite.runpytest_inprocess(*_model(server, "replay")).assert_outcomes(passed=3)
    assert main(["store", "prune", str(suite.path / "store")]) == 0
    assert "kept 0 (cassette deleted)" in capsys.readouterr().out
    assert _replies(suite.path / "store") == {OTHER: 1}


def test_prune_without_a_noted_run_is_exit_2_and_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["store", "prune", str(tmp_path / "missing")]) == 2
    assert "does not exist" in capsys.readouterr().err
    (tmp_path / "default.json").write_text('{"format": 3, "cassette": "default", "replies": {}}')
    assert main(["store", "prune", str(tmp_path)]) == 2
    assert "no run has noted which replies it used" in capsys.readouterr().err
    assert (tmp_path / "default.json").exists()


def test_refresh_rewrites_the_cassette_instead_of_growing_it(
    suite: pytest.Pytester, server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("QUESTIONS", "5")
    suite.runpytest_inprocess(*_model(server, "record")).assert_outcomes(passed=3)
    assert _replies(suite.path / "store") == {RIVERS: 5, CITIES: 5, OTHER: 1}

    # The prompts are reworded, and recorded again: the old wording's replies go.
    monkeypatch.setenv("WORDING", "Tell me about question")
    server.reset(default=Step.ok("fresh"))
    refreshed = suite.runpytest_inprocess(*_model(server, "refresh"))
    refreshed.assert_outcomes(passed=3)
    assert len(server.requests) == 11  # refresh calls the model for every request
    assert _replies(suite.path / "store") == {RIVERS: 5, CITIES: 5, OTHER: 1}
    documents = [json.loads(f.read_text()) for f in (suite.path / "store").glob("*.json")]
    texts = [r["response"]["text"] for d in documents for r in d["replies"].values()]
    assert set(texts) == {"fresh"}  # each refreshed reply replaced the old one

    server.reset(default=Step.error(500))
    suite.runpytest_inprocess(*_model(server, "replay")).assert_outcomes(passed=3)
    assert server.requests == []
