"""``tnsai-eval eval`` end to end: two named models on fake servers, in a real subprocess.

"big" answers every capital of the dataset; "small" gets Spain and Japan
wrong, is cheaper, and takes a known delay per reply. The run writes its four
files, the leaderboard ranks the models, ``--min-score`` decides the exit
status, and ``tnsai-eval report`` reads (and gates) the report it wrote.
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

from tests.capital_servers import DELAY_S, RIGHT, capital_servers
from tests.llm.fake_server import FakeOpenAIServer

KEY = "sk-big-secret-key-424242"


@pytest.fixture
def servers() -> Iterator[tuple[FakeOpenAIServer, FakeOpenAIServer]]:
    with capital_servers() as pair:
        yield pair


@pytest.fixture
def project(tmp_path: Path, servers: tuple[FakeOpenAIServer, FakeOpenAIServer]) -> Path:
    big, small = servers
    (tmp_path / "pyproject.toml").write_text(
        f"""
[tool.tnsai-eval.models.big]
base_url = "{big.base_url}"
model = "m-big"
api_key_env = "BIG_MODEL_KEY"
price_in = 10.0
price_out = 30.0

[tool.tnsai-eval.models.small]
base_url = "{small.base_url}"
model = "m-small"
price_in = 0.1
price_out = 0.2
""",
        encoding="utf-8",
    )
    lines = [json.dumps({"input": f"What is the capital of {c}?", "expected": a})
             for c, a in RIGHT.items()]  # fmt: skip
    (tmp_path / "caps.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "caps.meta.json").write_text('{"evaluator": "exact"}', encoding="utf-8")
    (tmp_path / "prompt.txt").write_text("Answer with the city only.\n", encoding="utf-8")
    return tmp_path


def tnsai(cwd: Path, *args: str, key: bool = True) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TNSAI_LLM_")}
    env.pop("BIG_MODEL_KEY", None)
    if key:
        env["BIG_MODEL_KEY"] = KEY
    command = [sys.executable, "-m", "tnsai_eval.cli", *args]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False)


EVAL = ("eval", "caps.jsonl", "--prompt", "@prompt.txt", "--model", "small", "--model", "big")


def test_two_models_leaderboard_files_and_a_report_the_gate_reads(
    project: Path, servers: tuple[FakeOpenAIServer, FakeOpenAIServer]
) -> None:
    run = tnsai(project, *EVAL, "--out", "out")
    assert run.returncode == 0, run.stdout + run.stderr
    # Best first, whatever the order given: big 1.000, small 0.500.
    board = [line.split() for line in run.stdout.splitlines() if line[:2] in ("1 ", "2 ")]
    assert [(row[1], row[2]) for row in board] == [("big", "1.000"), ("small", "0.500")]
    assert "p50 s" in run.stdout
    # Two models: the paired verdict of each against the first, as pytest gives it.
    assert "big against small, case by case:" in run.stdout
    big, small = servers
    assert (len(big.requests), len(small.requests)) == (4, 4)
    assert big.requests[0].headers["authorization"] == f"Bearer {KEY}"
    assert {r.json["model"] for r in small.requests} == {"m-small"}

    out = project / "out"
    assert sorted(p.name for p in out.iterdir()) == [
        "cases.csv", "leaderboard.csv", "report.json", "score_vs_cost.png",
    ]  # fmt: skip
    cases = pd.read_csv(out / "cases.csv")
    assert len(cases) == 8
    assert cases[cases["model"] == "small"]["output"].tolist() == [
        "Paris", "Rome", "Lisbon", "Kyoto",
    ]  # fmt: skip
    rows = {r["model"]: r for r in pd.read_csv(out / "leaderboard.csv").to_dict("records")}
    assert float(rows["small"]["latency_p50_s"]) >= DELAY_S  # a lower bound: never flaky
    assert float(rows["small"]["cost"]) < float(rows["big"]["cost"])
    assert (out / "score_vs_cost.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    text = (out / "report.json").read_text(encoding="utf-8")
    assert KEY not in text
    report = json.loads(text)
    tests = {t["nodeid"]: t for t in report["tests"]}
    assert sorted(tests) == ["eval::caps.jsonl[big]", "eval::caps.jsonl[small]"]
    assert tests["eval::caps.jsonl[small]"]["live_calls"] == 4
    assert tests["eval::caps.jsonl[big]"]["cost"] > 0

    # The gate reads it: as a run, and model against model.
    summary = tnsai(project, "report", "out/report.json")
    assert summary.returncode == 0, summary.stderr
    assert "eval::caps.jsonl[small]" in summary.stdout
    verdict = tnsai(project, "report", "out/report.json", "--compare-models", "big", "small")
    assert verdict.returncode == 1, verdict.stdout + verdict.stderr  # small regressed on 2 cases


def test_min_score_fails_the_run_below_it(project: Path) -> None:
    below = tnsai(project, *EVAL, "--out", "out", "--min-score", "0.75")
    assert below.returncode == 1, below.stdout + below.stderr
    assert "small: score 0.500 < --min-score 0.75" in below.stdout
    report = json.loads((project / "out" / "report.json").read_text(encoding="utf-8"))
    statuses = {t["model"]: t["status"] for t in report["tests"]}
    assert statuses == {"small": "failed", "big": "passed"}
    assert tnsai(project, *EVAL, "--out", "out", "--min-score", "0.5").returncode == 0


@pytest.mark.parametrize(
    ("args", "key", "message"),
    [
        (("eval", "no_such_set", "--prompt", "x", "--model", "small"), True, "no_such_set"),
        (EVAL, False, "$BIG_MODEL_KEY is not set"),
        (("eval", "caps.jsonl", "--prompt", "x", "--model", "huge"), True, "'huge' is not in"),
        (("eval", "caps.jsonl", "--prompt", "@nope.txt", "--model", "small"), True, "nope.txt"),
        ((*EVAL, "--min-score", "1.5"), True, "--min-score must be in [0, 1]"),
        (("eval", "caps.jsonl", "--model", "small"), True, "--prompt"),
    ],
)
def test_bad_arguments_exit_2_before_any_call(
    project: Path,
    servers: tuple[FakeOpenAIServer, FakeOpenAIServer],
    args: tuple[str, ...],
    key: bool,
    message: str,
) -> None:
    run = tnsai(project, *args, key=key)
    assert run.returncode == 2, run.stdout + run.stderr
    assert message in run.stderr
    assert [len(s.requests) for s in servers] == [0, 0]
    assert not (project / "eval-out").exists()
