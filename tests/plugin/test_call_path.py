"""The plugin calls models through one front client per model, and observes its calls.

A probe records the class of every object whose ``chat``/``achat`` a test's
model call enters: the ``llm`` fixture, ``evaluate_prompt`` and ``refine``,
with and without ``--tnsai-model``, each cross two (``FrontClient``, then
``OpenAIClient``). Before, a named-model ``refine`` crossed five.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.llm.fake_server import FakeOpenAIServer, Step
from tests.llm.test_call_path import ClientProbe
from tests.plugin.conftest import read_json

SUITE = """
import json
from pathlib import Path

import pytest

from tnsai_eval.scoring import ContainsEvaluator

CASES = [("What is the capital of France?", "Paris"), ("And of Italy?", "Rome")]


def test_evaluate(evaluate_prompt):
    evaluate_prompt("Answer.", CASES, evaluator=ContainsEvaluator())


def test_fixture(llm):
    assert llm.chat("Capital of France?").text == "Paris"


@pytest.mark.refine_until(task="Name the capital.", must_contain=["Paris"], max_iterations=2)
def test_refine(refine):
    refine("no idea", input="Capital of France?")
"""


@pytest.fixture
def paris(fake_server_module: FakeOpenAIServer) -> FakeOpenAIServer:
    fake_server_module.reset(default=Step.ok("Paris"))
    return fake_server_module


@pytest.fixture(scope="module")
def fake_server_module() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


@pytest.mark.parametrize("named", [False, True], ids=["llm", "named"])
@pytest.mark.parametrize("test", ["test_evaluate", "test_fixture", "test_refine"])
def test_each_call_enters_two_client_classes(
    pytester: pytest.Pytester, paris: FakeOpenAIServer, test: str, named: bool
) -> None:
    pytester.makepyfile(test_suite=SUITE)
    # The `llm` fixture is the configured model, named models or not.
    where = ["--llm-base-url", paris.base_url, "--llm-model", "m"]
    if named:
        pytester.makepyprojecttoml(
            f'[tool.tnsai-eval.models.fake]\nbase_url = "{paris.base_url}"\nmodel = "named"\n'
        )
        where += ["--tnsai-model", "fake"]
    with ClientProbe() as probe:
        result = pytester.runpytest_inprocess(
            f"test_suite.py::{test}", *where, "--llm-record", "off", "-p", "no:cacheprovider"
        )
    result.assert_outcomes(passed=1)
    models = {r.json["model"] for r in paris.requests}
    assert models == {"named" if named and test != "test_fixture" else "m"}
    assert probe.classes == {"FrontClient", "OpenAIClient"}


REPEATED = """
from tnsai_eval.scoring import ContainsEvaluator

def test_capitals(evaluate_prompt):
    evaluate_prompt("Answer.", [("Capital of France?", "Paris")], evaluator=ContainsEvaluator())
"""


def test_repeat_samples_leave_the_prompt_hash_alone(
    pytester: pytest.Pytester, paris: FakeOpenAIServer
) -> None:
    pytester.makepyfile(test_suite=REPEATED)
    where = ["--llm-base-url", paris.base_url, "--llm-model", "m", "--llm-store", "store"]
    pytester.runpytest_inprocess(*where, "--llm-record", "record", "--tnsai-report", "base.json")
    repeated = pytester.runpytest_inprocess(
        *where, "--llm-record", "record", "--tnsai-repeat", "2",
        "--tnsai-baseline", "base.json", "--tnsai-report", "new.json",
    )  # fmt: skip
    repeated.assert_outcomes(passed=1)
    (base,) = read_json(pytester.path / "base.json")["tests"]
    (new,) = read_json(pytester.path / "new.json")["tests"]
    assert new["prompts"][0]["hash"] == base["prompts"][0]["hash"]
    assert "changed (" not in repeated.stdout.str()
    # The second sample has a recording of its own; the request sent is the same.
    sent = [json.loads(r.raw) for r in paris.requests]
    assert len(sent) == 2
    assert sent[0] == sent[1]
    assert "sample" not in sent[1]
    cassette = next(Path(pytester.path / "store").glob("*capitals*.json"))
    replies = json.loads(cassette.read_text())["replies"].values()
    samples = {entry["request"]["sample"] for entry in replies}
    assert samples == {0, 1}
