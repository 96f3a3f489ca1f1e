"""``tnsai-eval eval`` never crashes after its calls are paid for (issue 34, fourth round).

A model name with two ``$`` (mathtext to matplotlib), a dataset line holding
``"\\ud800"``, a model name that is not UTF-8 on the command line, and a
reply holding a lone surrogate: each is refused before the first call, or
the steps after the calls (leaderboard, CSV, report, figure) take it as text.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from tests.llm.fake_server import FakeOpenAIServer, Recorded, Step, completion_body


def _reply(request: Recorded) -> bytes:
    """Reply "Paris", or a reply holding a lone surrogate (JSON allows "\\ud800") for "odd"."""
    prompt = str(request.json["messages"][-1]["content"])
    if "odd" not in prompt:
        return completion_body(request, "Paris")
    return completion_body(request, "Par\ud800is")


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(default=Step(body=_reply)) as running:
        yield running


def _eval(
    folder: Path, server: FakeOpenAIServer, *args: str | bytes
) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TNSAI_LLM_")}
    env["TNSAI_LLM_BASE_URL"] = server.base_url
    command = [sys.executable, "-m", "tnsai_eval.cli", "eval", *args]
    return subprocess.run(command, cwd=folder, env=env, capture_output=True, check=False)


def _dataset(folder: Path, *lines: str) -> None:
    (folder / "caps.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


OK = json.dumps({"input": "What is the capital of France?", "expected": "Paris"})


def test_a_model_name_with_two_dollars_is_text_in_the_figure(
    tmp_path: Path, server: FakeOpenAIServer
) -> None:
    _dataset(tmp_path, OK)
    run = _eval(tmp_path, server, "caps.jsonl", "--prompt", "p", "--model", "m$_$x", "--out", "o")
    # Was a mathtext ValueError drawing the figure, after the call was paid for.
    assert run.returncode == 0, run.stderr.decode()
    assert (tmp_path / "o" / "score_vs_cost.png").read_bytes()[:4] == b"\x89PNG"
    assert json.loads((tmp_path / "o" / "report.json").read_text())["config"]["models"] == ["m$_$x"]


def test_a_lone_surrogate_in_a_dataset_line_is_a_bad_line_before_any_call(
    tmp_path: Path, server: FakeOpenAIServer
) -> None:
    _dataset(tmp_path, OK, '{"input": "What is \\ud800?", "expected": "Paris"}')
    run = _eval(tmp_path, server, "caps.jsonl", "--prompt", "p", "--model", "m")
    assert run.returncode == 2, run.stderr.decode()
    assert "line 2: 'input' holds a lone surrogate" in run.stderr.decode()
    assert server.requests == []


def test_a_model_name_that_is_not_utf8_is_refused_before_any_call(
    tmp_path: Path, server: FakeOpenAIServer
) -> None:
    _dataset(tmp_path, OK)
    run = _eval(tmp_path, server, "caps.jsonl", "--prompt", "p", "--model", b"m\xff")
    assert run.returncode == 2, run.stderr.decode()
    assert "--model 'm\\udcff': not printable text" in run.stderr.decode()
    assert server.requests == []
    assert not (tmp_path / "eval-out").exists()


def test_a_reply_holding_a_lone_surrogate_is_written_as_text(
    tmp_path: Path, server: FakeOpenAIServer
) -> None:
    _dataset(tmp_path, OK, json.dumps({"input": "an odd one", "expected": "Paris"}))
    run = _eval(tmp_path, server, "caps.jsonl", "--prompt", "p", "--model", "m", "--out", "o")
    assert run.returncode == 0, run.stderr.decode()  # was UnicodeEncodeError writing cases.csv
    cases = pd.read_csv(tmp_path / "o" / "cases.csv")
    assert set(cases["output"]) == {"Paris", "Par\ufffdis"}
    assert (tmp_path / "o" / "report.json").is_file()
