"""The plugin's response store: a cassette per test, written when the test ends."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.llm.fake_server import FakeOpenAIServer, Step
from tnsai_eval.cli import main
from tnsai_eval.llm import ResponseStore, StoredRequest

# Each test checks, while it runs, that its own cassette is not written (or
# rewritten) yet and that the test before it has been written.
CAPITALS = """
import pytest
from pathlib import Path
from tnsai_eval.llm import ResponseStore

STORE = ResponseStore(Path(__file__).parent / "store")
ORDER = ["test_capitals.py::test_capital[France]", "test_capitals.py::test_capital[Italy]"]

def _state(path):
    return path.stat().st_mtime_ns if path.exists() else None

@pytest.mark.parametrize("country", ["France", "Italy"])
def test_capital(country, llm, request):
    own = STORE.cassette_path(request.node.nodeid)
    before = _state(own)
    for question in ("capital", "largest city", "river"):
        llm.chat(f"What is the {question} of {country}?")
        assert _state(own) == before  # written when the test ends, not per reply
    index = ORDER.index(request.node.nodeid)
    if index:
        assert STORE.cassette_path(ORDER[index - 1]).exists()
"""


# The same questions without the checks: under --dist each, the other worker
# writes a cassette while this one runs the same test.
EACH = """
import pytest

@pytest.mark.parametrize("country", ["France", "Italy"])
def test_capital(country, llm):
    for question in ("capital", "largest city", "river"):
        llm.chat(f"What is the {question} of {country}?")
"""


def _model(server: FakeOpenAIServer, mode: str = "record") -> list[str]:
    return [
        f"--llm-base-url={server.base_url}",
        "--llm-model=fake",
        "--llm-store=store",
        f"--llm-record={mode}",
    ]


def _cassettes(store: Path) -> dict[str, dict[str, object]]:
    """{cassette name: its replies} for every cassette file in ``store``."""
    found = {}
    for file in sorted(store.glob("*.json")):
        document = json.loads(file.read_text(encoding="utf-8"))
        found[document["cassette"]] = document["replies"]
    return found


def test_each_test_records_one_cassette_named_by_its_node_id(
    pytester: pytest.Pytester, server: FakeOpenAIServer
) -> None:
    pytester.makepyfile(test_capitals=CAPITALS)
    pytester.runpytest_inprocess(*_model(server)).assert_outcomes(passed=2)
    assert len(server.requests) == 6
    cassettes = _cassettes(pytester.path / "store")
    assert {name: len(replies) for name, replies in cassettes.items()} == {
        "test_capitals.py::test_capital[France]": 3,
        "test_capitals.py::test_capital[Italy]": 3,
    }
    # Six replies, two files: not one file per reply.
    assert len(list((pytester.path / "store").rglob("*.json"))) == 2

    server.reset(default=Step.error(500))  # a model call now would fail the run
    pytester.runpytest_inprocess(*_model(server, "replay")).assert_outcomes(passed=2)
    assert server.requests == []


def test_under_dist_each_every_worker_writes_the_same_cassettes(
    pytester: pytest.Pytester, server: FakeOpenAIServer
) -> None:
    pytester.makepyfile(test_capitals=EACH)
    result = pytester.runpytest_subprocess("-n", "2", "--dist", "each", *_model(server))
    result.assert_outcomes(passed=4)  # each test on both workers
    cassettes = _cassettes(pytester.path / "store")
    assert sorted(cassettes) == [
        "test_capitals.py::test_capital[France]",
        "test_capitals.py::test_capital[Italy]",
    ]
    # Both workers recorded the same three requests per test: one entry each.
    assert [len(replies) for replies in cassettes.values()] == [3, 3]
    assert not list((pytester.path / "store").glob(".*.tmp"))

    server.reset(default=Step.error(500))
    replayed = pytester.runpytest_subprocess("-n", "2", "--dist", "each", *_model(server, "replay"))
    replayed.assert_outcomes(passed=4)
    assert server.requests == []


ECHO_KEY = "sk-plugin-echo-0123456789abcdef"

ASK = """
def test_ask(llm):
    llm.chat("What is my key?")
"""


def test_a_key_echoed_by_the_server_never_reaches_the_default_store(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TNSAI_LLM_API_KEY", ECHO_KEY)
    pytester.makepyfile(test_ask=ASK)
    with FakeOpenAIServer(default=Step.ok(f"Your key is {ECHO_KEY}.")) as echo:
        result = pytester.runpytest_inprocess(
            f"--llm-base-url={echo.base_url}", "--llm-model=fake", "--llm-record=record"
        )
        result.assert_outcomes(passed=1)
        assert echo.requests[0].headers["authorization"] == f"Bearer {ECHO_KEY}"
    files = list((pytester.path / "tests" / "llm-responses").rglob("*.json"))
    assert len(files) == 1
    text = files[0].read_text(encoding="utf-8")
    assert "Your key is ***." in text
    assert ECHO_KEY not in text
    assert ECHO_KEY[:10] not in text


def _old_layout(store: Path, model: str, prompt: str, reply: str) -> None:
    request = StoredRequest.build(model, prompt)
    key = request.format2_key
    (store / key[:2]).mkdir(parents=True, exist_ok=True)
    entry = {
        "format": 2,
        "key": key,
        "request": request.to_dict(),
        "response": {"text": reply, "model": model, "usage": {}, "tool_calls": []},
        "server": None,
    }
    (store / key[:2] / f"{key}.json").write_text(json.dumps(entry, indent=2))


OLD = """
def test_old(llm):
    assert llm.chat("What is the capital of France?").text == "Paris (recorded long ago)"
"""


def test_a_store_in_the_old_layout_replays_migrates_and_files_replies_per_test(
    pytester: pytest.Pytester, server: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    store = pytester.path / "store"
    _old_layout(store, "fake", "What is the capital of France?", "Paris (recorded long ago)")
    pytester.makepyfile(test_old=OLD)
    server.reset(default=Step.error(500))
    pytester.runpytest_inprocess(*_model(server, "replay")).assert_outcomes(passed=1)

    assert main(["store", "migrate", str(store)]) == 0
    assert "moved 1 replies into" in capsys.readouterr().out
    assert [p.name for p in store.iterdir()] == ["default.json"]
    pytester.runpytest_inprocess(*_model(server, "replay")).assert_outcomes(passed=1)

    # One run in record mode files the reply under the test that uses it.
    pytester.runpytest_inprocess(*_model(server, "record")).assert_outcomes(passed=1)
    assert server.requests == []
    assert sorted(_cassettes(store)) == ["default", "test_old.py::test_old"]
    (store / "default.json").unlink()
    pytester.runpytest_inprocess(*_model(server, "replay")).assert_outcomes(passed=1)
    assert len(ResponseStore(store)) == 1
