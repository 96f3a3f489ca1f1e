"""What the pytest plugin costs, measured side by side in one run.

    .venv/bin/python bench/plugin.py [--tests 500] [--rounds 7] [--llm-tests 200]

1. Collection overhead: ``pytest --collect-only`` of a generated suite of
   ``--tests`` plain tests that never use the plugin, with the plugin (loaded
   through its entry point) and without it (``-p no:tnsai``). The two
   alternate for ``--rounds`` rounds so that load from other processes falls
   on both alike; the cheapest run of each is compared (on a shared machine the
   minimum is the run least disturbed by others). Target: overhead <= 5%.
2. Replay cost: ``--llm-tests`` tests, each asking the ``llm`` fixture three
   questions and recording a score, run with ``llm`` overridden by a
   ``ScriptedLLM`` and with the plugin's own ``llm`` replaying a response store
   (``--llm-record replay``), alternating for ``--rounds`` rounds. Time per
   test is the CPU time of the run minus that of ``--collect-only`` on the
   same suite (start-up and collection), divided by the number of tests; the
   cheapest round of each counts. Also shown: the tests' own setup + call +
   teardown time from the ``--tnsai-report`` JSON. Target: replayed /
   scripted <= 1.5.

Times are CPU seconds (user + system) of the pytest subprocesses, which a
busy machine disturbs far less than wall time. Everything runs in temporary
directories, in subprocesses of this Python.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
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
    """CPU seconds (user + system) of one pytest subprocess.

    CPU time rather than wall time: on a shared machine, waiting for a core
    would otherwise be counted as the plugin's cost.
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "CI": ""},
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 5):
        sys.exit(f"pytest {' '.join(args)} failed in {cwd}:\n{done.stdout}\n{done.stderr}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


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
    base, plugin = min(without), min(with_plugin)
    print(
        f"collection of {tests} plain tests, CPU time, cheapest of {rounds} alternating runs "
        f"(medians {statistics.median(without):.3f} s / {statistics.median(with_plugin):.3f} s):"
    )
    print(f"  -p no:tnsai   {base:.3f} s")
    print(f"  with plugin   {plugin:.3f} s")
    print(f"  overhead      {100 * (plugin / base - 1):+.1f}%   (target <= 5%)")


def _per_test(report: Path) -> float:
    data = json.loads(report.read_text())
    durations = [t["duration_s"] for t in data["tests"]]
    return sum(durations) / len(durations)


def _suite(directory: Path, count: int, conftest: str) -> None:
    directory.mkdir()
    (directory / "pytest.ini").write_text("[pytest]\n")
    (directory / "conftest.py").write_text(conftest)
    (directory / "test_llm.py").write_text(LLM_TEST.format(count=count, questions=QUESTIONS))


def replay_cost(count: int, rounds: int) -> None:
    sizes = (count, 3 * count)
    replay_args = (
        "--llm-record=replay",
        "--llm-store=store",
        "--llm-base-url=http://127.0.0.1:9/v1",  # never contacted in replay mode
        f"--llm-model={MODEL}",
        "--tnsai-report=r.json",
    )
    # The same imports in both suites: the scripted conftest imports tnsai_eval
    # while collecting, so the replaying one does too.
    replay_conftest = "import tnsai_eval.testing  # noqa: F401\n"
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        dirs: dict[tuple[str, int], Path] = {}
        for size in sizes:
            dirs["scripted", size] = root / f"scripted{size}"
            dirs["replayed", size] = root / f"replayed{size}"
            _suite(dirs["scripted", size], size, SCRIPTED_CONFTEST)
            _suite(dirs["replayed", size], size, replay_conftest)
            # Record what the replaying run will ask, as the plugin's llm would.
            store = ResponseStore(dirs["replayed", size] / "store")
            recorder = CachedLLM(ScriptedLLM(fn=_answer, model=MODEL), store)
            for n in range(size):
                for q in range(QUESTIONS):
                    recorder.chat(f"Question {q} of test {n}?")
        cpu: dict[tuple[str, int], list[float]] = {key: [] for key in dirs}
        inside: dict[str, list[float]] = {"scripted": [], "replayed": []}
        for _ in range(rounds):
            for (name, size), directory in dirs.items():
                args = replay_args if name == "replayed" else ("--tnsai-report=r.json",)
                cpu[name, size].append(_pytest(directory, *args))
                if size == count:
                    inside[name].append(_per_test(directory / "r.json"))
        report = json.loads((dirs["replayed", count] / "r.json").read_text())
    hits = report["totals"]["cache_hits"]
    if hits != count * QUESTIONS:
        sys.exit(f"expected {count * QUESTIONS} replayed replies, got {hits}")
    # The slope between two suite sizes: start-up cancels out, what is left is
    # the cost of one more test (collection, run and report included).
    per_test = {
        name: (min(cpu[name, sizes[1]]) - min(cpu[name, sizes[0]])) / (sizes[1] - sizes[0])
        for name in ("scripted", "replayed")
    }
    own = {name: min(inside[name]) for name in inside}
    print(
        f"tests with {QUESTIONS} llm calls each ({sizes[0]} and {sizes[1]} tests), "
        f"cheapest of {rounds} alternating rounds:"
    )
    print("                CPU per test    setup+call+teardown per test (wall)")
    for name in ("scripted", "replayed"):
        print(f"  {name:<12}  {1000 * per_test[name]:8.3f} ms     {1000 * own[name]:8.3f} ms")
    ratio = per_test["replayed"] / per_test["scripted"]
    inner = own["replayed"] / own["scripted"]
    print(f"  ratio         {ratio:8.2f}x        {inner:8.2f}x   (target <= 1.5x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--llm-tests", type=int, default=200)
    args = parser.parse_args()
    collection_overhead(args.tests, args.rounds)
    replay_cost(args.llm_tests, args.rounds)


if __name__ == "__main__":
    main()
