"""evaluate_target in pytest: an app's own function scored per case against a server on
127.0.0.1, gated against a baseline with its flips and the diff of the system prompt it sent,
recorded per test and replayed with no live call."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from tests.llm.fake_server import FakeOpenAIServer, Recorded, Step, completion_body
from tests.plugin.conftest import read_json

# The app under test: its own system prompt, read from a file as an app would.
APP = """
from pathlib import Path

def make_bot(llm):
    def classify(text):
        system = Path("system.txt").read_text().strip()
        reply = llm.chat([{"role": "system", "content": system},
                          {"role": "user", "content": text}], temperature=0)
        return reply.text
    return classify

CASES = [(f"question {i}", f"answer {i}") for i in range(1, 7)]

class Exact:
    def evaluate(self, actual, expected):
        return 1.0 if actual == expected else 0.0

def test_bot(evaluate_target, llm):
    evaluate_target(make_bot(llm), CASES, evaluator=Exact())
"""


class Answers:
    """Answers question i with "answer i", except the ones listed for the system prompt sent."""

    def __init__(self) -> None:
        self.wrong: dict[str, set[int]] = {}

    def __call__(self, request: Recorded) -> bytes:
        messages = request.json["messages"]
        system = messages[0]["content"]
        number = int(re.search(r"question (\d+)", messages[-1]["content"]).group(1))  # type: ignore[union-attr]
        text = "nope" if number in self.wrong.get(system, set()) else f"answer {number}"
        return completion_body(request, text)


@pytest.fixture
def answers() -> Iterator[tuple[FakeOpenAIServer, Answers]]:
    script = Answers()
    with FakeOpenAIServer(default=Step(body=script)) as server:
        yield server, script


def test_a_function_target_is_gated_with_flips_and_the_system_prompt_diff(
    pytester: pytest.Pytester, answers: tuple[FakeOpenAIServer, Answers]
) -> None:
    server, script = answers
    pytester.makepyfile(test_app=APP)
    (pytester.path / "system.txt").write_text("Answer exactly. v1\n")
    script.wrong = {"Answer exactly. v1": {4, 5, 6}, "Answer exactly. v2": {1, 2, 3}}
    options = [f"--llm-base-url={server.base_url}", "--llm-model=m", "--llm-record=record"]
    base = pytester.runpytest_inprocess(*options, "--tnsai-report", "base.json")
    base.assert_outcomes(passed=1)
    test = read_json(pytester.path / "base.json")["tests"][0]
    assert [c["passed"] for c in test["cases"]] == [True] * 3 + [False] * 3
    assert all(c["tokens"] > 0 for c in test["cases"])
    (prompt,) = test["prompts"]
    assert prompt["text"].startswith("Answer exactly. v1")
    assert '{"temperature": 0}' in prompt["text"]
    assert len(server.requests) == 6

    (pytester.path / "system.txt").write_text("Answer exactly. v2\n")
    new = pytester.runpytest_inprocess(
        *options, "--tnsai-baseline", "base.json", "--tnsai-report", "new.json"
    )
    assert new.ret == pytest.ExitCode.OK  # same mean: flips alone never fail
    new_hash = read_json(pytester.path / "new.json")["tests"][0]["prompts"][0]["hash"]
    assert new_hash != prompt["hash"]
    new.stdout.fnmatch_lines(
        [
            "flipped cases: 6 (3 broken, 3 fixed); flips alone never fail the run",
            f"*prompt*changed ({prompt['hash']} -> {new_hash}): 3 case(s) fixed, 3 broken",
            "*broken*question 1*answer 1*",
        ]
    )

    # The recorded replies replay with no request to the server.
    sent = len(server.requests)
    replayed = pytester.runpytest_inprocess(
        f"--llm-base-url={server.base_url}", "--llm-model=m", "--llm-record=replay"
    )
    replayed.assert_outcomes(passed=1)
    assert len(server.requests) == sent
