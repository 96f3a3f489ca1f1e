"""TrajectoryJudge against a real server on 127.0.0.1: the log-probability judge reads the
"Yes"/"No" alternatives an OpenAI-compatible server returns for the rendered trajectory."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator

import pytest

from tests.llm.fake_server import FakeOpenAIServer, Recorded, Step
from tnsai_eval.evaluation import score_target
from tnsai_eval.llm import OpenAIClient
from tnsai_eval.records import ToolCall, Trajectory
from tnsai_eval.scoring import JudgeMethod, TestCase, TrajectoryJudge

RUBRIC = "Did the agent look the order up before it issued a refund?"


def judging(request: Recorded) -> bytes:
    """A server that answers the rubric as a careful grader would, with its alternatives.

    P(Yes) is 0.8 when the rendered trajectory looks the order up before the
    refund and 0.1 otherwise (the rest on "No" and "Maybe").
    """
    shown = str(request.json["messages"][-1]["content"])
    lookup, refund = shown.find("lookup_order("), shown.find("issue_refund(")
    p_yes = 0.8 if 0 <= lookup < refund else 0.1
    top = [
        {"token": "Yes", "logprob": math.log(p_yes)},
        {"token": "No", "logprob": math.log(0.95 - p_yes)},
        {"token": "Maybe", "logprob": math.log(0.05)},
    ]
    first = "Yes" if p_yes > 0.5 else "No"
    body = {
        "id": "chatcmpl-judge",
        "object": "chat.completion",
        "model": request.json["model"],
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": first},
                "finish_reason": "length",
                "logprobs": {
                    "content": [
                        {
                            "token": first,
                            "logprob": next(t["logprob"] for t in top if t["token"] == first),
                            "top_logprobs": top,
                        }
                    ]
                },
            }
        ],
        "usage": {"prompt_tokens": 40, "completion_tokens": 1, "total_tokens": 41},
    }
    return json.dumps(body).encode()


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(default=Step(body=judging)) as running:
        yield running


def run(order: list[str]) -> Trajectory:
    steps = tuple(ToolCall(name, {"order_id": "A1"}, result="ok") for name in order)
    return Trajectory("Refund order A1, please.", steps=steps, output="Refunded.")


def test_the_judge_scores_each_trajectory_by_the_servers_yes_share(
    server: FakeOpenAIServer,
) -> None:
    trajectories = {
        "careful": run(["lookup_order", "issue_refund"]),
        "careless": run(["issue_refund", "lookup_order"]),
    }
    with OpenAIClient("judge-model", base_url=server.base_url) as llm:
        judge = TrajectoryJudge(llm, RUBRIC)
        assert judge.judge.methods[0] is JudgeMethod.LOGPROBS
        result = score_target(
            lambda text: trajectories[text],
            [TestCase("careful"), TestCase("careless")],
            evaluator=judge,
            concurrency=1,
        )
    careful, careless = result.cases
    assert careful.score == pytest.approx(0.8 / 0.95)
    assert careless.score == pytest.approx(0.1 / 0.95)
    assert "(logprobs)" in str(careful.reason)
    # One judge call per case, asking for one token and its alternatives; the
    # rubric comes after the trajectory, which the request carries in full.
    assert len(server.requests) == 2
    sent = server.requests[0].json
    assert (sent["logprobs"], sent["top_logprobs"], sent["max_tokens"]) == (True, 20, 1)
    shown = sent["messages"][-1]["content"]
    assert shown.endswith(RUBRIC)
    assert '1. lookup_order(order_id="A1") -> ok' in shown
    assert "Final answer: Refunded." in shown
