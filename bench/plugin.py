"""What the pytest plugin costs, measured side by side in one run.

    .venv/bin/python bench/plugin.py [--tests 500] [--rounds 7] [--llm-tests 200]

1. Collection overhead: ``pytest --collect-only`` of a generated suite of
   ``--tests`` plain tests that never use the plugin, with the plugin
   (``-p tnsai`` is loaded through its entry point) and without it
   (``-p no:tnsai``). The two alternate for ``--rounds`` rounds so that load
   from other processes falls on both alike; the medians are compared.
   Target: overhead <= 5%.
2. Replay cost: ``--llm-tests`` tests, each asking the ``llm`` fixture three
   questions and recording a score, run once with ``llm`` overridden by a
   ``ScriptedLLM`` and once with the plugin's own ``llm`` replaying a response
   store (``--llm-record replay``). Per-test time is the sum of each test's
   setup, call and teardown durations from the ``--tnsai-report`` JSON,
   divided by the number of tests. Target: replayed / scripted <= 1.5.

Everything runs in temporary directories, in subprocesses of this Python.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tnsai_eval.llm import CachedLLM, ResponseStore
from tnsai_eval.testing import ScriptedLLM

PER_FILE = 25
MODEL = "bench-model"
QUESTIONS = 3

LLM_TEST = """
import pytest

@pytest.mark.parametrize("n", range({count}))
def test_answer(n, llm, tnsai_record):
    replies = [llm.chat(f"Question {{q}} of test {{n}}?").text for q in range({questions})]
    tnsai_record("score", sum(r.startswith("Answer") for r in replies) / len(replies))
"""

SCRIPTED_CONFTEST = """
import pytest
from tnsai_eval.testing import ScriptedLLM

@pytest.fixture(scope="session")
def llm():
    return ScriptedLLM(fn=lambda messages, params: "Answer to " + messages[-1].content,
                       model="bench-model")
"""


def _answer(messages: list, params: dict) -> str:  # type: ignore[type-arg]
    return "Answer to " + messages[-1].content


def _pytest(cwd: Path, *args: str) -> float:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "CI": ""},
    )
    elapsed = time.perf_counter() - started
    if done.returncode not in (0, 5):
        sys.exit(f"pytest {' '.join(args)} failed in {cwd}:\n{done.stdout}\n{done.stderr}")
    return elapsed


def collection_overhead(tests: int, rounds: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "pytest.ini").write_text("[pytest]\n")
        for start in range(0, tests, PER_FILE):
            body = "\n".join(
                f"def test_{i}():\n    assert {i} + 1 > {i}\n"
                for i in range(start, min(start + PER_FILE, tests))
            )
            (root / f"test_mod_{start // PER_FILE:03d}.py").write_text(body)
        _pytest(root, "--collect-only")  # warm the file system and bytecode caches
        without, with_plugin = [], []
        for _ in range(rounds):
            without.append(_pytest(root, "--collect-only", "-p", "no:tnsai"))
            with_plugin.append(_pytest(root, "--collect-only"))
    base, plugin = statistics.median(without), statistics.median(with_plugin)
    print(f"collection of {tests} plain tests, median of {rounds} alternating runs:")
    print(f"  -p no:tnsai   {base:.3f} s")
    print(f"  with plugin   {plugin:.3f} s")
    print(f"  overhead      {100 * (plugin / base - 1):+.1f}%   (target <= 5%)")


def _per_test(report: Path) -> float:
    data = json.loads(report.read_text())
    durations = [t["duration_s"] for t in data["tests"]]
    return sum(durations) / len(durations)


def replay_cost(count: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        scripted_dir, replay_dir = root / "scripted", root / "replay"
        for directory in (scripted_dir, replay_dir):
            directory.mkdir()
            (directory / "pytest.ini").write_text("[pytest]\n")
            (directory / "test_llm.py").write_text(
                LLM_TEST.format(count=count, questions=QUESTIONS)
            )
        (scripted_dir / "conftest.py").write_text(SCRIPTED_CONFTEST)
        # Record what the replaying run will ask, as the plugin's llm would.
        recorder = CachedLLM(
            ScriptedLLM(fn=_answer, model=MODEL), ResponseStore(replay_dir / "store")
        )
        for n in range(count):
            for q in range(QUESTIONS):
                recorder.chat(f"Question {q} of test {n}?")
        _pytest(scripted_dir, "--tnsai-report", "r.json")
        replay_args = (
            "--llm-record=replay",
            "--llm-store=store",
            "--llm-base-url=http://127.0.0.1:9/v1",  # never contacted in replay mode
            f"--llm-model={MODEL}",
            "--tnsai-report=r.json",
        )
        _pytest(replay_dir, *replay_args)
        scripted = _per_test(scripted_dir / "r.json")
        replayed = _per_test(replay_dir / "r.json")
        hits = json.loads((replay_dir / "r.json").read_text())["totals"]["cache_hits"]
    if hits != count * QUESTIONS:
        sys.exit(f"expected {count * QUESTIONS} replayed replies, got {hits}")
    print(f"{count} tests x {QUESTIONS} llm calls each, per test (setup + call + teardown):")
    print(f"  ScriptedLLM   {1000 * scripted:.3f} ms")
    print(f"  replayed      {1000 * replayed:.3f} ms   ({hits} store hits)")
    print(f"  ratio         {replayed / scripted:.2f}x   (target <= 1.5x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--llm-tests", type=int, default=200)
    args = parser.parse_args()
    collection_overhead(args.tests, args.rounds)
    replay_cost(args.llm_tests)


if __name__ == "__main__":
    main()
