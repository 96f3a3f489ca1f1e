"""One prompt, template, cases and model score the same through ``tnsai-eval eval``,
``compare_models`` and pytest's ``evaluate_prompt``, replayed from one store with no live call.

The issue this holds: the same prompt scored 0.167 through ``eval`` and
``compare_models`` and 0.375 in pytest, because only pytest took a template
and a store.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.capital_servers import RIGHT, capital_servers
from tests.llm.fake_server import Step
from tests.plugin.conftest import read_json
from tnsai_eval.cli import main
from tnsai_eval.frames import compare_models
from tnsai_eval.llm import OpenAIClient

TEMPLATE = "Question: {input}\nInstructions: {prompt}"
SUITE = f"""
from pathlib import Path

def test_capitals(evaluate_prompt):
    evaluate_prompt(Path("prompt.txt"), "caps.jsonl", template={TEMPLATE!r})
"""


def _scores(cases: list[dict[str, object]]) -> list[object]:
    return [case["score"] for case in cases]


def test_eval_compare_models_and_pytest_score_alike_from_one_store(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.chdir(pytester.path)
    lines = [json.dumps({"input": f"Name the capital of {c}.", "expected": a})
             for c, a in {**RIGHT, "Peru": "Lima"}.items()]  # fmt: skip
    Path("caps.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    Path("caps.meta.json").write_text('{"evaluator": "exact"}', encoding="utf-8")
    Path("prompt.txt").write_text("Answer with the city only.\n", encoding="utf-8")
    pytester.makepyfile(test_suite=SUITE)
    with capital_servers() as (big, _):
        where = ["--model", "m", "--base-url", big.base_url, "--template", TEMPLATE]
        base = ["eval", "caps.jsonl", "--prompt", "@prompt.txt", *where, "--store", "store"]
        assert main([*base, "--record", "record", "--out", "recorded"]) == 0
        assert len(big.requests) == 5
        assert big.requests[0].json["messages"][0]["content"].startswith("Question: Name")
        big.reset(default=Step(status=500))  # any live call now fails

        assert main([*base, "--record", "replay", "--out", "replayed"]) == 0
        frame = compare_models(
            Path("prompt.txt"), "caps.jsonl", {"m": OpenAIClient("m", base_url=big.base_url)},
            template=TEMPLATE, store="store", record_mode="replay", progress=False,
        )  # fmt: skip
        run = pytester.runpytest_inprocess(
            "--llm-base-url", big.base_url, "--llm-model", "m", "--llm-store", "store",
            "--llm-record", "replay", "--tnsai-report", "pytest.json",
        )  # fmt: skip
        assert big.requests == []
    recorded = read_json(Path("recorded/report.json"))["tests"][0]
    replayed = read_json(Path("replayed/report.json"))["tests"][0]
    (tested,) = read_json(Path("pytest.json"))["tests"]
    expected = [1.0, 1.0, 1.0, 1.0, 0.0]
    assert _scores(recorded["cases"]) == _scores(replayed["cases"]) == expected
    assert _scores(tested["cases"]) == expected
    assert frame["score"].tolist() == expected
    assert replayed["cache_hits"] == 5
    assert tested["prompts"][0]["hash"] == recorded["prompts"][0]["hash"]
    run.assert_outcomes(passed=1)
