"""evaluate_target with --tnsai-model (the app's calls through `llm` go to each named model,
one test and one record per model, --tnsai-compare-models) and --tnsai-repeat (each sample
recorded apart), recorded against fake servers on 127.0.0.1 and replayed with no live call."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from tests.llm.fake_server import FakeOpenAIServer, Recorded, Step, completion_body
from tests.plugin.conftest import read_json

# The app: its own system prompt and layout, calling the plugin's `llm`. The
# judge-like evaluator shares `llm` too: it must stay on the `llm` fixture's
# model (here a third server) whichever named model answers the app.
APP = """
def make_bot(llm):
    def classify(text):
        reply = llm.chat([{"role": "system", "content": "Answer with the number's word."},
                          {"role": "user", "content": text}], temperature=0)
        return reply.text
    return classify

CASES = [(f"question {i}", f"answer {i}") for i in range(1, 5)]

class Exact:
    def evaluate(self, actual, expected):
        return 1.0 if actual == expected else 0.0

def test_bot(evaluate_target, llm):
    evaluate_target(make_bot(llm), CASES, evaluator=Exact())
"""


def answering(wrong: set[int]) -> Step:
    """Answers "answer i" to question i, "nope" to the numbers in ``wrong``."""

    def body(request: Recorded) -> bytes:
        text = str(request.json["messages"][-1]["content"])
        number = int(re.search(r"question (\d+)", text).group(1))  # type: ignore[union-attr]
        return completion_body(request, "nope" if number in wrong else f"answer {number}")

    return Step(body=body)


@pytest.fixture
def servers() -> Iterator[tuple[FakeOpenAIServer, FakeOpenAIServer, FakeOpenAIServer]]:
    with (
        FakeOpenAIServer(default=answering(set())) as old,
        FakeOpenAIServer(default=answering({2, 3})) as new,
        FakeOpenAIServer(default=answering({1, 2, 3, 4})) as fixture_model,
    ):
        yield old, new, fixture_model


def test_each_named_model_answers_the_target_and_the_comparison_names_the_flips(
    pytester: pytest.Pytester,
    servers: tuple[FakeOpenAIServer, FakeOpenAIServer, FakeOpenAIServer],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    old, new, fixture_model = servers
    monkeypatch.delenv("CI", raising=False)
    pytester.makepyprojecttoml(
        f"""
[tool.tnsai-eval.models.old]
base_url = "{old.base_url}"
model = "m-old"

[tool.tnsai-eval.models.new]
base_url = "{new.base_url}"
model = "m-new"
"""
    )
    pytester.makepyfile(test_app=APP)
    given = [f"--llm-base-url={fixture_model.base_url}", "--llm-model=m-fixture",
             "--llm-store=store", "--tnsai-model", "old", "--tnsai-model", "new",
             "--tnsai-compare-models", "old", "new"]  # fmt: skip
    recorded = pytester.runpytest_inprocess(
        *given, "--llm-record=record", "--tnsai-report=r.json", "-v"
    )
    recorded.assert_outcomes(passed=2)
    # new breaks two cases that old gets right: a regression fails the session.
    assert recorded.ret == pytest.ExitCode.TESTS_FAILED
    recorded.stdout.fnmatch_lines(
        [
            "*test_app.py::test_bot?old? PASSED*",
            "*test_app.py::test_bot?new? PASSED*",
            "model new (B) against old (A)",
            "*test_app.py::test_bot*regressed*1.000 -> 0.500*",
            "*broken*question 2*answer 2*",
            "*model new regressed against old; this fails the session*",
        ]
    )
    # Each model was asked on its own server under its own name; the fixture's never.
    assert [r.json["model"] for r in old.requests] == ["m-old"] * 4
    assert [r.json["model"] for r in new.requests] == ["m-new"] * 4
    assert fixture_model.requests == []
    tests = {t["nodeid"]: t for t in read_json(pytester.path / "r.json")["tests"]}
    old_test, new_test = tests["test_app.py::test_bot[old]"], tests["test_app.py::test_bot[new]"]
    assert (old_test["model"], new_test["model"]) == ("old", "new")
    assert [c["output"] for c in new_test["cases"]] == ["answer 1", "nope", "nope", "answer 4"]
    assert old_test["calls"] == new_test["calls"] == 4

    # Replayed: the same verdict, with no request to any server.
    replayed = pytester.runpytest_inprocess(*given, "--llm-record=replay", "--tnsai-report=p.json")
    replayed.assert_outcomes(passed=2)
    replayed.stdout.fnmatch_lines(["*test_app.py::test_bot*regressed*1.000 -> 0.500*"])
    assert len(old.requests) == len(new.requests) == 4
    assert fixture_model.requests == []
    again = {t["nodeid"]: t for t in read_json(pytester.path / "p.json")["tests"]}
    assert [c["cached"] for c in again["test_app.py::test_bot[new]"]["cases"]] == [True] * 4


def test_a_conftest_client_cannot_be_routed_and_the_error_says_so(
    pytester: pytest.Pytester,
    servers: tuple[FakeOpenAIServer, FakeOpenAIServer, FakeOpenAIServer],
) -> None:
    old = servers[0]
    pytester.makepyprojecttoml(
        f'[tool.tnsai-eval.models.old]\nbase_url = "{old.base_url}"\nmodel = "m-old"\n'
    )
    pytester.makeconftest(
        "import pytest\nfrom tnsai_eval.testing import ScriptedLLM\n\n"
        "@pytest.fixture(scope='session')\ndef llm():\n    return ScriptedLLM(default='x')\n"
    )
    pytester.makepyfile(test_app=APP)
    done = pytester.runpytest_inprocess("--tnsai-model", "old", "--llm-record=off")
    done.assert_outcomes(errors=1)
    done.stdout.fnmatch_lines(["*--tnsai-model old: the llm fixture is ScriptedLLM*"])
    assert old.requests == []


def test_repeat_samples_each_have_a_recording_and_replay_with_no_call(
    pytester: pytest.Pytester,
) -> None:
    # The model answers the first four requests right and the next four wrong on
    # question 1: sample 1 differs from sample 0, as a sampled model's runs do.
    asked: list[int] = []

    def body(request: Recorded) -> bytes:
        asked.append(1)
        text = str(request.json["messages"][-1]["content"])
        number = int(re.search(r"question (\d+)", text).group(1))  # type: ignore[union-attr]
        wrong = len(asked) > 4 and number == 1
        return completion_body(request, "nope" if wrong else f"answer {number}")

    pytester.makepyfile(test_app=APP)
    with FakeOpenAIServer(default=Step(body=body)) as server:
        given = [f"--llm-base-url={server.base_url}", "--llm-model=m", "--llm-store=store",
                 "--tnsai-repeat", "2"]  # fmt: skip
        recorded = pytester.runpytest_inprocess(
            *given, "--llm-record=record", "--tnsai-report=r.json"
        )
        recorded.assert_outcomes(passed=1)
        assert len(server.requests) == 8
        (test,) = read_json(pytester.path / "r.json")["tests"]
        assert test["metrics"]["score"]["samples"] == [1.0, 0.75]
        replayed = pytester.runpytest_inprocess(
            *given, "--llm-record=replay", "--tnsai-report=p.json"
        )
        replayed.assert_outcomes(passed=1)
        assert len(server.requests) == 8
        (again,) = read_json(pytester.path / "p.json")["tests"]
        assert again["metrics"]["score"]["samples"] == [1.0, 0.75]
