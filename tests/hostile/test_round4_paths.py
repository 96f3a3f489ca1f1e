"""Committed reports name no machine path (issue 34, fourth round).

``config.models_source`` (the plugin's models table), ``tnsai-eval eval``'s
test ids, ``config.dataset`` and its prompt file are relative to the project
root, as the plugin's prompt files already were: a baseline written on one
machine reads the same on every other.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.llm.fake_server import FakeOpenAIServer, Step
from tests.plugin.conftest import read_json


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(default=Step.ok("Paris")) as running:
        yield running


def _table(server: FakeOpenAIServer) -> str:
    return f'[tool.tnsai-eval.models.small]\nbase_url = "{server.base_url}"\nmodel = "m"\n'


def test_the_plugins_models_source_is_relative_to_the_rootdir(
    pytester: pytest.Pytester, server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CI", raising=False)
    pytester.makepyprojecttoml(_table(server))
    pytester.makepyfile(
        test_x="def test_x(evaluate_prompt):\n"
        "    evaluate_prompt('Answer.', [('Capital of France?', 'Paris')])\n"
    )
    result = pytester.runpytest_inprocess(
        "--tnsai-model=small", "--tnsai-report=r.json", "--llm-store=store"
    )
    result.assert_outcomes(passed=1)
    report = read_json(pytester.path / "r.json")
    assert report["config"]["models_source"] == "pyproject.toml [tool.tnsai-eval.models]"
    assert str(pytester.path) not in (pytester.path / "r.json").read_text(encoding="utf-8")


def test_eval_names_an_absolute_dataset_and_prompt_relative_to_the_project(
    tmp_path: Path, server: FakeOpenAIServer
) -> None:
    (tmp_path / "pyproject.toml").write_text(_table(server), encoding="utf-8")
    (tmp_path / "data").mkdir()
    dataset = tmp_path / "data" / "caps.jsonl"
    dataset.write_text('{"input": "Capital of France?", "expected": "Paris"}\n', encoding="utf-8")
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("Answer with the city only.\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TNSAI_LLM_")}
    command = [sys.executable, "-m", "tnsai_eval.cli", "eval", str(dataset),
               "--prompt", f"@{prompt}", "--model", "small", "--out", "out"]  # fmt: skip
    run = subprocess.run(command, cwd=tmp_path / "data", env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    text = (tmp_path / "data" / "out" / "report.json").read_text(encoding="utf-8")
    assert str(tmp_path) not in text  # the test id, config.dataset and the prompt file held it
    report = json.loads(text)
    assert [t["nodeid"] for t in report["tests"]] == ["eval::data/caps.jsonl[small]"]
    assert report["config"]["dataset"] == "data/caps.jsonl"
    assert report["tests"][0]["prompts"][0]["file"] == "prompt.txt"
