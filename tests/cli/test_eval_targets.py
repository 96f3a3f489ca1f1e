"""``tnsai-eval eval --target/--agent`` and ``optimize --target/--agent`` in real subprocesses:
the user's own code (a file of the test's project) on a fake OpenAI-compatible server on
127.0.0.1 that calls tools, recorded in a store and replayed with no request."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from tests.llm.fake_server import FakeOpenAIServer, Recorded, Step, completion_body

APP = '''
from tnsai_eval.agents import Agent

SYSTEM = "You are a support desk."


def lookup_order(order_id: str) -> str:
    """Look up an order by its id."""
    return "delivered"


def issue_refund(order_id: str) -> str:
    """Refund an order."""
    return "refunded " + order_id


def desk(prompt: str = SYSTEM, *, llm):
    return Agent(llm, prompt, tools=[lookup_order, issue_refund], learning=False,
                 max_steps=4, send_tool_schemas=True)


def make_agent(llm):
    return desk(llm=llm)


def route(ticket, llm):
    return llm.chat([{"role": "system", "content": SYSTEM},
                     {"role": "user", "content": ticket}]).text


def make_route(prompt, llm):
    return lambda ticket: llm.chat([{"role": "system", "content": prompt},
                                    {"role": "user", "content": ticket}]).text


def no_llm(ticket):
    return "billing"
'''


def answer(request: Recorded) -> bytes:
    """The model: a careful one ("m-careful", or any model told to think step by step)
    looks the order up before refunding it; a careless one refunds at once."""
    sent = request.json
    messages = sent["messages"]
    if "tools" not in sent:  # a plain ticket: route it
        return completion_body(request, "billing")
    careful = sent["model"] == "m-careful" or "step by step" in messages[0]["content"]
    order = re.findall(r"A\d+", messages[1]["content"])[0]
    plan = ["lookup_order", "issue_refund"] if careful else ["issue_refund"]
    done = sum(1 for m in messages if m["role"] == "tool")
    body = json.loads(completion_body(request, "Done."))
    if done < len(plan):
        arguments = json.dumps({"order_id": order})
        function = {"name": plan[done], "arguments": arguments}
        call = {"id": f"c{done}", "type": "function", "function": function}
        body["choices"][0]["message"] = {"role": "assistant", "content": None, "tool_calls": [call]}
        body["choices"][0]["finish_reason"] = "tool_calls"
    return json.dumps(body).encode()


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(default=Step(body=answer)) as running:
        yield running


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "desk_app.py").write_text(APP, encoding="utf-8")
    lines = [
        {
            "input": f"Please refund order A{i}.",
            "expected": "Done",
            "expected_tool_calls": [
                {"name": "lookup_order", "arguments": {"order_id": f"A{i}"}},
                {"name": "issue_refund", "arguments": {"order_id": f"A{i}"}},
            ],
        }
        for i in range(1, 11)
    ]
    (tmp_path / "desk.jsonl").write_text("\n".join(map(json.dumps, lines)) + "\n", "utf-8")
    tickets = [{"input": f"ticket {i}", "expected": "billing"} for i in range(3)]
    (tmp_path / "tickets.jsonl").write_text("\n".join(map(json.dumps, tickets)) + "\n", "utf-8")
    return tmp_path


def tnsai(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TNSAI_LLM_")}
    env.pop("CI", None)
    command = [sys.executable, "-m", "tnsai_eval.cli", *args]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False)


def test_eval_agent_two_models_recorded_then_replayed_with_no_request(
    project: Path, server: FakeOpenAIServer
) -> None:
    given = ["eval", "desk.jsonl", "--agent", "desk_app:make_agent", "--base-url",
             server.base_url, "--model", "m-careless", "--model", "m-careful",
             "--store", "store"]  # fmt: skip
    run = tnsai(project, *given, "--record", "record", "--out", "out")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "scored by ToolCallMatch(mode='in_order', arguments='subset')" in run.stderr
    board = re.findall(r"^\d\s+(m-\w+)\s+(\S+)", run.stdout, re.MULTILINE)
    assert board == [("m-careful", "1.000"), ("m-careless", "0.000")]
    assert "m-careful against m-careless, case by case:" in run.stdout
    # careless: 2 turns per case (refund, answer); careful: 3 (lookup, refund, answer).
    sent = len(server.requests)
    assert sent == 10 * 2 + 10 * 3
    out = project / "out"
    assert sorted(p.name for p in out.iterdir()) == [
        "cases.csv", "leaderboard.csv", "report.json", "score_vs_cost.png",
    ]  # fmt: skip
    cases = pd.read_csv(out / "cases.csv")
    assert cases.groupby("model")["score"].mean().to_dict() == {"m-careful": 1.0, "m-careless": 0.0}
    report = json.loads((out / "report.json").read_text("utf-8"))
    tests = {t["nodeid"]: t for t in report["tests"]}
    assert tests["eval::desk.jsonl[m-careful]"]["calls"] == 30

    replay = tnsai(project, *given, "--record", "replay", "--out", "again")
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert len(server.requests) == sent
    again = pd.read_csv(project / "again" / "cases.csv")
    assert again["score"].tolist() == cases["score"].tolist()
    assert again["cached"].all()


def test_eval_target_scores_the_apps_function(project: Path, server: FakeOpenAIServer) -> None:
    run = tnsai(project, "eval", "tickets.jsonl", "--target", "desk_app.py:route",
                "--base-url", server.base_url, "--model", "m-careful", "--out", "out")  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    assert re.search(r"1\s+m-careful\s+1\.000", run.stdout)
    assert [r.json["messages"][0]["content"] for r in server.requests] == [
        "You are a support desk."
    ] * 3


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            [],
            "give exactly one of --prompt TEXT|@FILE, --target MODULE:FUNCTION and --agent "
            "MODULE:FACTORY (got none)",
        ),
        (["--prompt", "p", "--agent", "desk_app:make_agent"], "(got --prompt 'p', --agent"),
        (
            ["--agent", "nowhere_app:make"],
            "--agent 'nowhere_app:make': importing 'nowhere_app' failed: ModuleNotFoundError",
        ),
        (
            ["--agent", "desk_app:missing"],
            "--agent 'desk_app:missing': 'desk_app' has no "
            "'missing' (found Agent, desk, issue_refund",
        ),
        (["--target", "desk_app"], "--target 'desk_app': expected module:function"),
        (["--target", "desk_app:SYSTEM"], "'SYSTEM' is a str, not a callable"),
        (
            ["--target", "desk_app:no_llm", "--model", "m"],
            "--model: --target 'desk_app:no_llm' takes no llm parameter",
        ),
    ],
)
def test_what_is_scored_is_checked_and_a_bad_value_named(
    project: Path, args: list[str], message: str
) -> None:
    run = tnsai(project, "eval", "tickets.jsonl", *args, "--out", "out")
    assert run.returncode == 2, run.stdout + run.stderr
    assert message in run.stderr


def test_optimize_agent_finds_the_careful_prompt_and_replays_with_no_request(
    project: Path, server: FakeOpenAIServer
) -> None:
    given = ["optimize", "desk.jsonl", "--agent", "desk_app:desk", "--base-url",
             server.base_url, "--model", "m-careless", "--strategies", "chain_of_thought",
             "--rounds", "1", "--no-rewrite", "--split", "0.5", "--no-progress",
             "--store", "store"]  # fmt: skip
    run = tnsai(project, *given, "--record", "record", "--out", "out")
    assert run.returncode == 0, run.stdout + run.stderr
    # The factory's own default prompt is where the search starts.
    assert "prompt 'You are a support desk.'" in run.stdout
    assert "prompt inside --agent desk_app:desk" in run.stdout
    assert "held-out 0.000 -> 1.000 on 5 cases" in run.stdout
    variants = json.loads((project / "out" / "variants.json").read_text("utf-8"))
    assert "step by step" in variants["variants"][1]["prompt"]
    sent = len(server.requests)
    # Selection (5 cases): initial 2 turns each, chain of thought 3; held out (5): both.
    assert sent == 5 * 2 + 5 * 3 + 5 * 2 + 5 * 3

    replay = tnsai(project, *given, "--record", "replay", "--out", "again")
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert len(server.requests) == sent
    assert "held-out 0.000 -> 1.000 on 5 cases" in replay.stdout
    assert f"1 round(s), 0 calls (0 retries, {sent} cache hits)" in replay.stdout


def test_optimize_target_with_a_number_keeps_its_old_meaning(
    project: Path, server: FakeOpenAIServer
) -> None:
    run = tnsai(project, "optimize", "tickets.jsonl", "--target", "0.5", "--base-url",
                server.base_url, "--model", "m", "--rounds", "1", "--strategies", "concise",
                "--no-rewrite", "--split", "0", "--no-progress", "--out", "out")  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    assert "--target 0.5 is read as --target-score 0.5" in run.stderr
    made = tnsai(project, "optimize", "tickets.jsonl", "--target", "desk_app:make_route",
                 "--base-url", server.base_url, "--model", "m", "--rounds", "1",
                 "--strategies", "concise", "--no-rewrite", "--split", "0", "--no-progress",
                 "--out", "out2")  # fmt: skip
    assert made.returncode == 0, made.stdout + made.stderr
    assert "prompt inside --target desk_app:make_route" in made.stdout


def test_eval_agent_on_the_committed_desk_replays_the_published_in_order_score(
    tmp_path: Path,
) -> None:
    # The desk agent on the embedded model's committed replies (bench/stores/support_desk):
    # the in_order mean bench/README.md publishes for bench/support_desk.py, no model loaded.
    root = Path(__file__).resolve().parents[2]
    run = tnsai(root, "eval", "datasets/support_desk.jsonl",
                "--agent", "datasets/make_support_desk.py:make_agent",
                "--store", "bench/stores/support_desk", "--record", "replay",
                "--out", str(tmp_path))  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    assert re.search(r"1\s+embedded\s+0\.542 \[0\.399, 0\.684\]\s+54%", run.stdout), run.stdout
    cases = pd.read_csv(tmp_path / "cases.csv")
    assert len(cases) == 48
    assert cases["cached"].all()
    assert (cases["state"] == "scored").all()
