"""Bounded time and memory: deadlines, size caps, CEL work caps, no surviving children."""

from __future__ import annotations

import asyncio
import gzip
import json
import os
from pathlib import Path

import httpx
import pytest

from tests.llm.fake_server import FakeOpenAIServer, Step
from tests.processes import running
from tnsai_eval.errors import BadResponseError, ConditionError, LLMTimeoutError
from tnsai_eval.feedback import Agent
from tnsai_eval.llm import OpenAIClient
from tnsai_eval.norms import ConditionEvaluator
from tnsai_eval.refinement import CompletionCriteria, first_code_block
from tnsai_eval.testing import ScriptedLLM

# A reply that sends one byte every 50 ms: no read ever times out (timeout=1),
# but the whole body takes over 10 s.
TRICKLE = Step(trickle=0.05)


def test_a_trickling_server_ends_at_total_timeout_sync() -> None:
    with FakeOpenAIServer(default=TRICKLE) as server:
        client = OpenAIClient(
            "m", base_url=server.base_url, api_key="", timeout=1.0, total_timeout=0.5, max_retries=0
        )
        with client, pytest.raises(LLMTimeoutError, match=r"total_timeout=0\.5"):
            client.chat("hi")


def test_a_trickling_server_ends_at_total_timeout_async() -> None:
    async def call(base_url: str) -> None:
        async with OpenAIClient(
            "m", base_url=base_url, api_key="", timeout=1.0, total_timeout=0.5, max_retries=0
        ) as client:
            await client.achat("hi")

    with FakeOpenAIServer(default=TRICKLE) as server, pytest.raises(LLMTimeoutError):
        asyncio.run(call(server.base_url))


def test_retries_and_backoff_stop_at_total_timeout() -> None:
    # Every attempt fails with a retryable 503 asking for a 30 s wait.
    answer = httpx.Response(503, headers={"retry-after": "30"}, json={"error": {"message": "busy"}})
    transport = httpx.MockTransport(lambda request: answer)
    client = OpenAIClient(
        "m",
        base_url="http://models.test/v1",
        api_key="",
        transport=transport,
        total_timeout=1.0,
        max_retries=5,
    )
    with client, pytest.raises(LLMTimeoutError, match="busy"):
        client.chat("hi")


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), "300"])
def test_total_timeout_is_validated(bad: object) -> None:
    from tnsai_eval.errors import ConfigError

    with pytest.raises(ConfigError, match="total_timeout"):
        OpenAIClient("m", base_url="http://x/v1", total_timeout=bad)  # type: ignore[arg-type]


def test_a_gzip_bomb_is_a_bad_response_not_a_memory_spike() -> None:
    body = json.dumps({"choices": [{"message": {"content": "a" * 5_000_000}}]}).encode()
    bomb = gzip.compress(body)
    assert len(bomb) < 50_000
    transport = httpx.MockTransport(
        lambda request: httpx.Response(
            200, stream=httpx.ByteStream(bomb), headers={"content-encoding": "gzip"}
        )
    )
    client = OpenAIClient(
        "m",
        base_url="http://models.test/v1",
        api_key="",
        transport=transport,
        max_reply_bytes=1_000_000,
    )
    with client, pytest.raises(BadResponseError, match="max_reply_bytes=1000000"):
        client.chat("x")


def test_a_gzip_bomb_over_the_network_is_a_bad_response() -> None:
    body = json.dumps({"choices": [{"message": {"content": "a" * 3_000_000}}]}).encode()
    step = Step(body=gzip.compress(body), headers={"Content-Encoding": "gzip"})
    with FakeOpenAIServer(default=step) as server:
        client = OpenAIClient("m", base_url=server.base_url, api_key="", max_reply_bytes=100_000)
        with client, pytest.raises(BadResponseError, match="larger than"):
            client.chat("x")


# -- CEL ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("condition", "cap"),
    [
        ("xs.all(x, xs.all(y, x == y))", "max_comprehension_depth=1"),
        ("xs.map(x, xs.filter(y, y > x)).size() > 0", "max_comprehension_depth=1"),
        (" && ".join(["xs.exists(x, x > 0)"] * 5), "max_comprehensions=4"),
        ("size([" + ",".join(["1"] * 65) + "]) > 0", "max_literal_items=64"),
        ("size({" + ",".join(f"{i}: 1" for i in range(65)) + "}) > 0", "max_literal_items=64"),
    ],
)
def test_cel_work_caps_are_checked_before_evaluation(condition: str, cap: str) -> None:
    with pytest.raises(ConditionError, match=cap):
        ConditionEvaluator().check(condition)


def test_cel_state_size_caps() -> None:
    evaluator = ConditionEvaluator()
    assert evaluator.evaluate("xs.all(x, x >= 0)", {"xs": list(range(100))})
    with pytest.raises(ConditionError, match="max_items=100"):
        evaluator.evaluate("xs.all(x, x >= 0)", {"xs": list(range(101))})
    with pytest.raises(ConditionError, match="max_items=100"):
        evaluator.evaluate("size(m) > 0", {"m": {str(i): [i] for i in range(60)}})
    with pytest.raises(ConditionError, match="max_text_chars=4096"):
        evaluator.evaluate("xs.map(x, s).size() > 0", {"xs": [1], "s": "x" * 5000})
    # Names the condition does not read cost nothing.
    assert evaluator.evaluate("ok", {"ok": True, "big": list(range(10_000))})


def test_cel_caps_are_configurable_and_strings_do_not_count() -> None:
    evaluator = ConditionEvaluator(max_comprehension_depth=2, max_items=5000)
    assert (evaluator.max_comprehension_depth, evaluator.max_items) == (2, 5000)
    with pytest.raises(AttributeError):
        evaluator.max_items = 10**9  # type: ignore[misc]
    assert evaluator.evaluate("xs.all(x, xs.exists(y, y == x))", {"xs": [1, 2, 3]})
    assert evaluator.evaluate('"xs.map(x, xs.map(y, y))" != ""', {})  # inside a string


# -- text, processes, prompts ---------------------------------------------------------


def test_first_code_block_on_many_unclosed_fences() -> None:
    reply = "```python\n" * 10_000 + "tail"  # 100 KB of fences that never close
    assert first_code_block(reply) == reply  # no block closes: the reply as it is
    assert first_code_block("```py\n" * 5_000 + "```\nx\n```") == "```py\n" * 4_998 + "```py"


def test_a_setsid_child_does_not_survive_its_check(tmp_path: Path) -> None:
    # Found by its unique command line: inside the check's PID namespace, $$ is
    # not a number this process could look up.
    marker = f"60.{os.getpid()}1"
    command = f"setsid sh -c 'exec sleep {marker}' & sleep 0.5; exit 0"
    criteria = CompletionCriteria.builder().compiler_check(command).build()
    (outcome,) = criteria.evaluate("x")
    assert outcome.passed
    assert running(f"sleep {marker}") == []


def test_the_host_process_is_not_a_subreaper() -> None:
    criteria = CompletionCriteria.builder().compiler_check("true").build()
    criteria.evaluate("x")
    status = Path(f"/proc/{os.getpid()}/status").read_text()
    # PR_GET_CHILD_SUBREAPER through ctypes: 0 for this process.
    import ctypes

    value = ctypes.c_int(-1)
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.prctl(37, ctypes.byref(value), 0, 0, 0) == 0
    assert value.value == 0
    assert status  # /proc is there (Linux)


def test_the_agent_prompt_keeps_the_most_recent_distinct_items() -> None:
    agent = Agent(ScriptedLLM(default="ok"), "Base.")
    for i in range(10_000):
        agent.feedback_collector.record_user_feedback("correction", f"rule {i % 50}")
    agent.feedback_collector.record_user_feedback("preference", "Be brief.")
    agent.feedback_collector.record_user_feedback("preference", "Be brief.")
    prompt = agent.system_prompt
    rules = [line for line in prompt.splitlines() if line.startswith("- rule ")]
    assert rules == [f"- rule {i}" for i in range(30, 50)]
    assert prompt.count("- Be brief.") == 1
    assert agent.system_prompt == prompt
    agent.feedback_collector.record_user_feedback("correction", "rule new")
    assert agent.system_prompt.splitlines()[-4] == "- rule new"
    small = Agent(ScriptedLLM(default="ok"), max_learned_items=2)
    for text in ("a", "b", "c"):
        small.feedback_collector.record_user_feedback("correction", text)
    assert small.system_prompt.endswith("- b\n- c")
