"""What the pytest plugin costs, measured side by side in one run.

    .venv/bin/python bench/plugin.py [--tests 500] [--rounds 15] [--llm-tests 200] [--cases 400]
                                     [--record-cases 1000] [--record-rounds 5]
                                     [--only collection|replay|cases|evaluation|record]

1. Collection overhead: ``pytest --collect-only`` of a generated suite of
   ``--tests`` plain tests that never use the plugin, with the plugin (loaded
   through its entry point) and without it (``-p no:tnsai``), alternating for
   ``--rounds`` rounds. Each round gives one paired ratio (with / without, run
   back to back, so a burst of load from other processes tends to fall on
   both); the median of those ratios is the figure, with the cheapest-run
   ratio and the medians shown beside it. Target: overhead <= 5%.
2. Replay cost: ``--llm-tests`` and three times as many tests, each asking
   the ``llm`` fixture three questions and recording a score, run with ``llm``
   overridden by a ``ScriptedLLM`` and with the plugin's own ``llm``
   replaying a response store (``--llm-record replay``). In each round the
   CPU cost of one test is the slope between the two suite sizes (start-up
   cancels out; collection, run and report per test are included), and the
   figure is the median over rounds of the per-round ratio replayed /
   scripted. Also shown: the same statistic for the tests' own setup + call +
   teardown time from the ``--tnsai-report`` JSON. Target: <= 1.5.
3. Per-case storage: one test that scores a prompt on ``--cases`` (400)
   cases replayed from a store, written two ways: ``evaluate_prompt`` (every
   case recorded in the report: id, output, score, verdict, prompt hash) and
   ``score_prompt`` on the same client with only the mean recorded through
   ``tnsai_record``. Same calls, same scoring; the difference is what the
   per-case records cost. The figure is the median of per-round CPU ratios,
   and the report's size per case. Target: <= 1.2 (at most 20% more).

4. ``evaluate_prompt`` on a zero-latency OpenAI-compatible server (a local
   ``http.server`` that answers at once): a one-test suite scoring ``--cases``
   and five times as many cases through the plugin (``--llm-record off``),
   against the same requests sent by a raw ``httpx`` loop in a plain test
   under ``-p no:tnsai``. Per case: the median per-round slope between the two
   sizes, in wall time (target <= 0.8 ms for tnsai-eval). Fixed cost: a
   20-case suite with the plugin minus the raw suite (target <= 0.15 s).

5. Record mode's cost (``--only record``): the same zero-latency server, one
   test scoring ``--record-cases`` (1,000) cases with ``evaluate_prompt``, run
   with ``--llm-record record`` into a fresh store each time (every reply is a
   miss, called and recorded, and the test's cassette written when it ends)
   and with ``--llm-record off``, alternating for ``--record-rounds`` (5)
   rounds. Per case: the CPU seconds (all threads) of the pytest process from
   the start to the end of the test loop (a conftest hook writes them; start-up
   and collection, the same in both modes, are left out), divided by the
   cases; the figure is the median of the per-round ratios record / off.
   Target: <= 1.3.

Times in 1 and 2 are CPU seconds (user + system) of the pytest subprocesses, which a
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
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from xml.etree import ElementTree

from tnsai_eval.llm import CachedLLM, Message, ResponseStore
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


def _answer(messages: Sequence[Message], params: Mapping[str, object]) -> str:
    return "Answer to " + messages[-1].content


def _environment(pycache: Path) -> dict[str, str]:
    # Bytecode caches on, as on a user's machine, but kept out of the checkout:
    # with PYTHONDONTWRITEBYTECODE (set on the development machine) every run
    # would compile and assertion-rewrite every module again, the plugin's
    # included, which users do not pay and which only adds noise.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "CI": "", "PYTHONPYCACHEPREFIX": str(pycache)}


def _pytest(cwd: Path, *args: str, env: dict[str, str]) -> float:
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
        env=env,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 5):
        sys.exit(f"pytest {' '.join(args)} failed in {cwd}:\n{done.stdout}\n{done.stderr}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _ratios(numerators: list[float], denominators: list[float]) -> list[float]:
    return [n / d for n, d in zip(numerators, denominators, strict=True)]


def collection_overhead(tests: int, rounds: int, env: dict[str, str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "pytest.ini").write_text("[pytest]\n")
        for start in range(0, tests, PER_FILE):
            body = "\n".join(
                f"def test_{i}():\n    assert {i} + 1 > {i}\n"
                for i in range(start, min(start + PER_FILE, tests))
            )
            (root / f"test_mod_{start // PER_FILE:03d}.py").write_text(body)
        _pytest(root, "--collect-only", env=env)  # warm the file system and bytecode caches
        without: list[float] = []
        with_plugin: list[float] = []
        for k in range(rounds):
            # Which goes first alternates too, so neither always follows the other.
            pair = [("no", ("-p", "no:tnsai")), ("with", ())]
            for name, extra in pair if k % 2 == 0 else pair[::-1]:
                seconds = _pytest(root, "--collect-only", *extra, env=env)
                (without if name == "no" else with_plugin).append(seconds)
    paired = statistics.median(_ratios(with_plugin, without))
    cheapest = min(with_plugin) / min(without)
    print(f"collection of {tests} plain tests, CPU time, {rounds} alternating rounds:")
    for label, runs in (("-p no:tnsai", without), ("with plugin", with_plugin)):
        print(f"  {label}   median {statistics.median(runs):.3f} s   min {min(runs):.3f} s")
    print(
        f"  overhead      {100 * (paired - 1):+.1f}% median of paired ratios "
        f"({100 * (cheapest - 1):+.1f}% cheapest run of each)   (target <= 5%)"
    )


def _per_test(report: Path) -> float:
    data = json.loads(report.read_text())
    durations = [float(t["duration_s"]) for t in data["tests"]]
    return sum(durations) / len(durations)


def _suite(directory: Path, count: int, conftest: str) -> None:
    directory.mkdir()
    (directory / "pytest.ini").write_text("[pytest]\n")
    (directory / "conftest.py").write_text(conftest)
    (directory / "test_llm.py").write_text(LLM_TEST.format(count=count, questions=QUESTIONS))


def replay_cost(count: int, rounds: int, env: dict[str, str]) -> None:
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
            # Record what the replaying run will ask, as the plugin's llm would:
            # one cassette per test, named by its node id.
            store = ResponseStore(dirs["replayed", size] / "store")
            recorder = CachedLLM(ScriptedLLM(fn=_answer, model=MODEL), store)
            for n in range(size):
                recorder.cassette = f"test_llm.py::test_answer[{n}]"
                with recorder.holding():
                    for q in range(QUESTIONS):
                        recorder.chat(f"Question {q} of test {n}?")
        cpu: dict[tuple[str, int], list[float]] = {key: [] for key in dirs}
        inside: dict[str, list[float]] = {"scripted": [], "replayed": []}

        def args(name: str) -> tuple[str, ...]:
            return replay_args if name == "replayed" else ("--tnsai-report=r.json",)

        for (name, _), directory in dirs.items():
            _pytest(directory, *args(name), env=env)  # warm the bytecode caches
        for k in range(rounds):
            order = list(dirs.items())
            for (name, size), directory in order if k % 2 == 0 else order[::-1]:
                cpu[name, size].append(_pytest(directory, *args(name), env=env))
                if size == count:
                    inside[name].append(_per_test(directory / "r.json"))
        report = json.loads((dirs["replayed", count] / "r.json").read_text())
    hits = report["totals"]["cache_hits"]
    if hits != count * QUESTIONS:
        sys.exit(f"expected {count * QUESTIONS} replayed replies, got {hits}")
    span = sizes[1] - sizes[0]
    # Per round, the slope between two suite sizes: start-up cancels out, what
    # is left is the cost of one more test (collection, run and report included).
    slope = {
        name: [
            (big - small) / span
            for small, big in zip(cpu[name, sizes[0]], cpu[name, sizes[1]], strict=True)
        ]
        for name in ("scripted", "replayed")
    }
    cpu_ratio = statistics.median(_ratios(slope["replayed"], slope["scripted"]))
    own_ratio = statistics.median(_ratios(inside["replayed"], inside["scripted"]))
    print(
        f"tests with {QUESTIONS} llm calls each ({sizes[0]} and {sizes[1]} tests), "
        f"{rounds} alternating rounds, medians:"
    )
    print("                CPU per test    setup+call+teardown per test (wall)")
    for name in ("scripted", "replayed"):
        print(
            f"  {name:<12}  {1000 * statistics.median(slope[name]):8.3f} ms     "
            f"{1000 * statistics.median(inside[name]):8.3f} ms"
        )
    print(
        f"  ratio         {cpu_ratio:8.2f}x        {own_ratio:8.2f}x   "
        "(median of per-round ratios; target <= 1.5x)"
    )


CASES_TEST = """
from tnsai_eval.datasets import load_cases
from tnsai_eval.evaluation import score_prompt

CASES = [(f"Question {{i}}?", f"Answer {{i}}") for i in range({count})]

def test_prompt({fixtures}):
    {body}
"""
WITH_CASES = "evaluate_prompt('Answer the question.', CASES, concurrency=1)"
MEAN_ONLY = (
    "result = score_prompt(llm, 'Answer the question.', load_cases(CASES), concurrency=1)\n"
    "    tnsai_record('score', result.mean_score)"
)


def case_storage_cost(count: int, rounds: int, env: dict[str, str]) -> None:
    args = (
        "--llm-record=replay",
        "--llm-store=store",
        "--llm-base-url=http://127.0.0.1:9/v1",  # never contacted in replay mode
        f"--llm-model={MODEL}",
        "--tnsai-report=r.json",
    )
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        dirs = {"cases": root / "cases", "mean": root / "mean"}
        for name, directory in dirs.items():
            directory.mkdir()
            (directory / "pytest.ini").write_text("[pytest]\n")
            fixtures, body = (
                ("evaluate_prompt", WITH_CASES)
                if name == "cases"
                else ("llm, tnsai_record", MEAN_ONLY)
            )
            (directory / "test_prompt.py").write_text(
                CASES_TEST.format(count=count, fixtures=fixtures, body=body)
            )
            # Record what both tests will send, as evaluate_prompt sends it.
            from tnsai_eval.optimizer import DEFAULT_TEMPLATE
            from tnsai_eval.scoring import DEFAULT_CALL_PARAMS

            store = ResponseStore(directory / "store")
            recorder = CachedLLM(
                ScriptedLLM(fn=_answer, model=MODEL), store, cassette="test_prompt.py::test_prompt"
            )
            with recorder.holding():
                for i in range(count):
                    message = DEFAULT_TEMPLATE.format(
                        prompt="Answer the question.", input=f"Question {i}?"
                    )
                    recorder.chat(message, **DEFAULT_CALL_PARAMS)
        for directory in dirs.values():
            _pytest(directory, *args, env=env)  # warm the bytecode caches
        cpu: dict[str, list[float]] = {name: [] for name in dirs}
        for k in range(rounds):
            order = list(dirs.items())
            for name, directory in order if k % 2 == 0 else order[::-1]:
                cpu[name].append(_pytest(directory, *args, env=env))
        reports = {name: json.loads((d / "r.json").read_text()) for name, d in dirs.items()}
        sizes = {name: (d / "r.json").stat().st_size for name, d in dirs.items()}
    recorded = len(reports["cases"]["tests"][0]["cases"])
    if recorded != count or reports["cases"]["totals"]["cache_hits"] != count:
        sys.exit(f"expected {count} replayed, recorded cases; got {recorded}")
    ratio = statistics.median(_ratios(cpu["cases"], cpu["mean"]))
    print(f"one test scoring a prompt on {count} replayed cases, {rounds} alternating rounds:")
    for name, label in (("mean", "mean only (tnsai_record)"), ("cases", "per-case records")):
        print(f"  {label:<26} {statistics.median(cpu[name]):7.3f} s CPU   report {sizes[name]} B")
    per_case = (sizes["cases"] - sizes["mean"]) / count
    print(
        f"  ratio {ratio:.2f}x (median of per-round ratios; target <= 1.2x); "
        f"report size per case {per_case:.0f} B"
    )


# -- 4. evaluate_prompt against a zero-latency server ---------------------------------

SERVER = """
import json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

BODY = json.dumps({
    "id": "x", "object": "chat.completion", "model": "bench-model",
    "choices": [{"index": 0, "finish_reason": "stop",
                 "message": {"role": "assistant", "content": "a"}}],
    "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6},
}).encode()

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # else headers and body wait on delayed ACKs (~40 ms)
    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)
    def log_message(self, *args):
        pass

server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
"""

EVALUATE_TEST = """
def test_prompt(evaluate_prompt):
    cases = [(f"Question {{i}}?", "a") for i in range({count})]
    assert evaluate_prompt("Answer in one word.", cases).mean_score == 1.0
"""

RAW_TEST = """
import httpx

def test_prompt():
    with httpx.Client(base_url="{base_url}") as client:
        for i in range({count}):
            body = {{"model": "bench-model", "temperature": 0.0, "max_tokens": 128,
                     "messages": [{{"role": "user", "content": f"Answer. Question {{i}}?"}}]}}
            reply = client.post("/chat/completions", json=body).json()
            assert reply["choices"][0]["message"]["content"] == "a"
"""


# Third-party plugins of the dev install that neither side needs. They cost
# seconds at start-up and in the terminal summary (nbval imports jsonschema,
# which builds lark grammars; hypothesis imports itself at the summary), and on
# a loaded machine the spread of those seconds drowned the figures measured.
_UNRELATED = ("-p", "no:nbval", "-p", "no:hypothesispytest", "-p", "no:xdist")


def _run_suite(cwd: Path, *args: str, env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds of one pytest subprocess, its one test's own seconds from JUnit XML)."""
    junit = cwd / "junit.xml"
    started = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            *_UNRELATED,
            f"--junitxml={junit}",
            *args,
        ],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    wall = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"pytest {' '.join(args)} failed in {cwd}:\n{done.stdout}\n{done.stderr}")
    # JUnit's time is setup + call + teardown of the test: the per-case work
    # without the start-up that dominates (and, under load, scatters) the wall time.
    case = ElementTree.parse(junit).getroot().find(".//testcase")
    assert case is not None
    return wall, float(case.get("time", "nan"))


def evaluation_cost(small: int, big: int, rounds: int, env: dict[str, str]) -> None:
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert server.stdout is not None
        base_url = f"http://127.0.0.1:{server.stdout.readline().strip()}/v1"
        plugin_args = (
            f"--llm-base-url={base_url}",
            "--llm-model=bench-model",
            "--llm-record=off",
        )
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            suites: dict[tuple[str, int], Path] = {}
            for count in (20, small, big):
                for name, body in (("plugin", EVALUATE_TEST), ("bare", RAW_TEST)):
                    directory = root / f"{name}{count}"
                    directory.mkdir()
                    (directory / "pytest.ini").write_text("[pytest]\n")
                    text = body.format(count=count, base_url=base_url)
                    (directory / "test_prompt.py").write_text(text)
                    suites[name, count] = directory

            def run(name: str, count: int) -> tuple[float, float]:
                if name == "plugin":
                    return _run_suite(suites[name, count], *plugin_args, env=env)
                return _run_suite(suites[name, count], "-p", "no:tnsai", env=env)

            for key in suites:
                run(*key)  # warm the bytecode caches
            wall: dict[tuple[str, int], list[float]] = {key: [] for key in suites}
            own: dict[tuple[str, int], list[float]] = {key: [] for key in suites}
            for k in range(rounds):
                keys = list(suites)
                for key in keys if k % 2 == 0 else keys[::-1]:
                    total, test = run(*key)
                    wall[key].append(total)
                    own[key].append(test)
    finally:
        server.terminate()
        server.wait()
    span = big - small
    per_case = {
        name: statistics.median(
            (b - s) / span for s, b in zip(own[name, small], own[name, big], strict=True)
        )
        for name in ("plugin", "bare")
    }
    fixed = statistics.median(
        p - b for p, b in zip(wall["plugin", 20], wall["bare", 20], strict=True)
    )
    print(
        f"evaluate_prompt on a zero-latency server ({small} and {big} cases, {rounds} "
        "alternating rounds, medians):"
    )
    print(
        f"  per case (the test's own time, JUnit)   tnsai-eval {1000 * per_case['plugin']:.2f} ms"
        f"   raw httpx loop {1000 * per_case['bare']:.2f} ms   (target: tnsai-eval <= 0.8 ms)"
    )
    print(
        f"  20-case suite, wall time, with the plugin minus bare pytest (raw httpx, "
        f"-p no:tnsai): {fixed:+.3f} s   (target <= 0.15 s)"
    )


# -- 5. record mode against off, on the same server ----------------------------------

# Writes the CPU seconds (all threads) the process spent running the tests: the
# start-up, collection and summary that both modes share are left out, so their
# noise does not swamp the per-case difference.
CPU_CONFTEST = """
import os, time
import pytest

@pytest.hookimpl(wrapper=True)
def pytest_runtestloop(session):
    start = time.process_time()
    try:
        return (yield)
    finally:
        with open(os.environ["TNSAI_BENCH_CPU"], "w") as handle:
            handle.write(repr(time.process_time() - start))
"""


def record_cost(cases: int, rounds: int, env: dict[str, str]) -> None:
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert server.stdout is not None
        base_url = f"http://127.0.0.1:{server.stdout.readline().strip()}/v1"
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            suite = root / "suite"
            suite.mkdir()
            (suite / "pytest.ini").write_text("[pytest]\n")
            (suite / "conftest.py").write_text(CPU_CONFTEST)
            (suite / "test_prompt.py").write_text(EVALUATE_TEST.format(count=cases))
            model = (f"--llm-base-url={base_url}", "--llm-model=bench-model", *_UNRELATED)
            runs = 0

            def run(mode: str) -> float:
                nonlocal runs
                runs += 1
                # A fresh store per run: every reply is a miss, called and recorded.
                store = root / f"store{runs}"
                cpu_file = root / f"cpu{runs}"
                _pytest(
                    suite,
                    *model,
                    f"--llm-record={mode}",
                    f"--llm-store={store}",
                    env={**env, "TNSAI_BENCH_CPU": str(cpu_file)},
                )
                if mode == "record":
                    files = list(store.glob("*.json"))
                    if len(files) != 1:
                        sys.exit(f"expected one cassette file in {store}, got {len(files)}")
                return float(cpu_file.read_text())

            for mode in ("record", "off"):
                run(mode)  # warm the bytecode caches
            cpu: dict[str, list[float]] = {"record": [], "off": []}
            for k in range(rounds):
                order = ["record", "off"] if k % 2 == 0 else ["off", "record"]
                for mode in order:
                    cpu[mode].append(run(mode))
    finally:
        server.terminate()
        server.wait()
    ratio = statistics.median(_ratios(cpu["record"], cpu["off"]))
    print(
        f"evaluate_prompt on {cases} cases against a zero-latency server, {rounds} "
        "alternating rounds, CPU of the pytest process while the test runs, medians:"
    )
    for mode in ("off", "record"):
        print(
            f"  --llm-record {mode:<7} {1000 * statistics.median(cpu[mode]) / cases:6.3f} ms "
            f"per case   (runs: {', '.join(f'{c:.2f}' for c in cpu[mode])} s)"
        )
    print(f"  ratio record / off {ratio:.2f}x (median of per-round ratios; target <= 1.3x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--llm-tests", type=int, default=200)
    parser.add_argument("--cases", type=int, default=400)
    parser.add_argument(
        "--eval-cases", type=int, default=50, help="smaller evaluate_prompt suite (section 4)"
    )
    parser.add_argument(
        "--only",
        choices=("collection", "replay", "cases", "evaluation", "record"),
        help="run one section only",
    )
    parser.add_argument(
        "--record-cases", type=int, default=1000, help="the larger suite of section 5"
    )
    parser.add_argument(
        "--record-rounds", type=int, default=5, help="alternating rounds of section 5"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as pycache:
        env = _environment(Path(pycache))
        if args.only in (None, "collection"):
            collection_overhead(args.tests, args.rounds, env)
        if args.only in (None, "replay"):
            replay_cost(args.llm_tests, args.rounds, env)
        if args.only in (None, "cases"):
            case_storage_cost(args.cases, args.rounds, env)
        if args.only in (None, "evaluation"):
            evaluation_cost(args.eval_cases, 5 * args.eval_cases, args.rounds, env)
        if args.only in (None, "record"):
            record_cost(args.record_cases, args.record_rounds, env)


if __name__ == "__main__":
    main()
