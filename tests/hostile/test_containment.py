"""One failure fails one case: any Exception is contained, never a BaseException."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tnsai_eval.errors import BadResponseError
from tnsai_eval.llm import Completion, MessagesInput, OpenAIClient
from tnsai_eval.optimizer import PromptOptimizer
from tnsai_eval.scoring import TestCase

NESTED = "[" * 100_000 + "]" * 100_000


class HostileClient:
    """Answers "4", except: a RuntimeError for one input, a bracket bomb for another."""

    model = "hostile"

    def chat(self, messages: MessagesInput, **params: Any) -> Completion:
        text = messages if isinstance(messages, str) else str(messages[-1])
        if "boom" in text:
            raise RuntimeError("the client broke")
        if "nest" in text:
            return Completion(NESTED)
        return Completion("4")


class JsonEvaluator:
    """Parses the reply as JSON (a RecursionError on the bracket bomb)."""

    def evaluate(self, actual: str, expected: str) -> float:
        json.loads(actual)
        return 1.0 if actual.strip() == expected else 0.0


CASES = [
    TestCase("2+2", "4"),
    TestCase("boom", "4"),
    TestCase("nest", "4"),
    TestCase("1+3", "4"),
]


def test_an_optimizer_run_survives_any_exception_per_case() -> None:
    optimizer = PromptOptimizer(
        HostileClient(), max_iterations=1, rewrite=False, evaluator=JsonEvaluator()
    )
    result = optimizer.optimize("Add.", CASES)
    frame = result.to_dataframe()
    initial = frame[frame["round"] == 0]
    errors = dict(zip(initial["input"], initial["error"].fillna(""), strict=True))
    assert errors["2+2"] == ""
    assert errors["1+3"] == ""
    assert "RuntimeError: the client broke" in errors["boom"]
    assert "RecursionError" in errors["nest"]
    assert result.initial_score == 1.0  # the mean of the cases that could be scored
    assert result.failed_calls >= 1


def test_a_lone_surrogate_in_a_case_fails_only_that_case() -> None:
    transport = httpx.MockTransport(
        lambda request: httpx.Response(
            200, json={"choices": [{"message": {"role": "assistant", "content": "4"}}]}
        )
    )
    client = OpenAIClient("m", base_url="http://models.test/v1", api_key="", transport=transport)
    with client:
        result = PromptOptimizer(client, max_iterations=1, rewrite=False, split=None).optimize(
            "Add.", [TestCase("2+2", "4"), TestCase("bad \udc80 text", "4")]
        )
    frame = result.to_dataframe()
    initial = frame[frame["round"] == 0]
    assert initial["error"].notna().sum() == 1
    assert result.initial_score == 1.0


def test_base_exceptions_still_stop_the_run() -> None:
    class Interrupting(HostileClient):
        def chat(self, messages: MessagesInput, **params: Any) -> Completion:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        PromptOptimizer(Interrupting(), max_iterations=1, rewrite=False).optimize("Add.", CASES)


@pytest.mark.parametrize(
    "body",
    [
        NESTED.encode(),
        b'{"choices": [{"message": {"content": "x", "tool_calls": [{"function": '
        b'{"name": "f", "arguments": "{bad"}}]}}]}',
        b'{"choices": [{"message": {"content": "x", "tool_calls": "no"}}]}',
        b'{"choices": [{"message": {"content": "x"}, "finish_reason": 3}]}',
        b'{"choices": [{"message": {"content": "x"}, "logprobs": {"content": '
        b'[{"token": "x", "logprob": "hi"}]}}]}',
    ],
)
def test_replies_that_cannot_be_decoded_are_bad_responses(body: bytes) -> None:
    transport = httpx.MockTransport(lambda request: httpx.Response(200, content=body))
    client = OpenAIClient("m", base_url="http://models.test/v1", api_key="", transport=transport)
    with client, pytest.raises(BadResponseError):
        client.chat("x")


def test_evaluate_prompt_min_score_is_validated(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        "import pytest\nfrom tnsai_eval.testing import ScriptedLLM\n\n"
        "@pytest.fixture(scope='session')\ndef llm():\n    return ScriptedLLM(default='4')\n"
    )
    pytester.makepyfile(
        test_x="""
import pytest

@pytest.mark.parametrize("bad", [float("nan"), "0.5", 1.5, True])
def test_bad(evaluate_prompt, bad):
    evaluate_prompt("Add.", [("2+2", "4")], min_score=bad)

def test_good(evaluate_prompt):
    evaluate_prompt("Add.", [("2+2", "4")], min_score=0.5)
"""
    )
    # In a subprocess: in process, under an xdist worker's deep stack, CPython
    # 3.11.7's ast.parse (pytest showing a failure's source) can raise
    # "SystemError: AST constructor recursion depth mismatch" (a CPython bug).
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=4)
    out = result.stdout.str()
    assert "min_score must be a number in [0, 1] or None, got nan" in out
    assert "got '0.5'" in out
