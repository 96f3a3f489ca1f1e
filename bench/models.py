"""What running a suite against N named models costs the harness, against N times one model.

    .venv/bin/python bench/models.py [--cases 400] [--rounds 5] [--models 3]

A one-test suite scores a prompt on ``--cases`` cases with ``evaluate_prompt``
through ``--tnsai-model`` names that all point at one zero-latency
OpenAI-compatible server in this process (``--llm-record off``: every case is
a real HTTP call). Each round runs, back to back, the suite with one model and
with ``--models`` models. The harness cost of a run is the CPU time (user +
system, all threads) the pytest process spends running its tests (setup, call
and teardown of each, measured in the process by a conftest hook), so
interpreter start-up and collection, the same for both, are left out; the
server's work is in this process and is not counted. The figure is the median
over rounds of

    cost(N models) / (N x cost(1 model))

(target: at most 1.10). Also shown: the same ratio for the tests' own
setup + call + teardown wall time, read from the ``--tnsai-report`` JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

# Sums the CPU time of every test's run protocol and writes it where the bench reads it.
CONFTEST = """
import os
import time

import pytest

TOTAL = [0.0]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    start = time.process_time()
    try:
        return (yield)
    finally:
        TOTAL[0] += time.process_time() - start


def pytest_sessionfinish(session):
    with open(os.environ["BENCH_CPU_FILE"], "w") as handle:
        handle.write(repr(TOTAL[0]))
"""

SUITE = """
from tnsai_eval.scoring import ExactMatchEvaluator

CASES = [(f"What is {{i}} plus one?", str(i + 1)) for i in range({cases})]

def test_arithmetic(evaluate_prompt):
    evaluate_prompt("Answer with the number only.", CASES, evaluator=ExactMatchEvaluator(),
                    min_score=0.0)
"""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        sent = json.loads(self.rfile.read(int(self.headers["content-length"])))
        prompt = str(sent["messages"][-1]["content"])
        body = json.dumps(
            {
                "id": "x",
                "object": "chat.completion",
                "model": sent.get("model", "m"),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "42"},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {
                    "prompt_tokens": len(prompt.split()),
                    "completion_tokens": 1,
                    "total_tokens": len(prompt.split()) + 1,
                },
            }
        ).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _run(folder: Path, args: list[str]) -> tuple[float, float]:
    """(CPU seconds of the pytest subprocess, summed test durations from its report)."""
    report, cpu_file = folder / "report.json", folder / "cpu.txt"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
         "--llm-record", "off", "--tnsai-report", str(report), *args],
        cwd=folder, capture_output=True, text=True, check=False,
        env={**os.environ, "BENCH_CPU_FILE": str(cpu_file)},
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"pytest failed:\n{done.stdout}\n{done.stderr}")
    duration = sum(t["duration_s"] for t in json.loads(report.read_text())["tests"])
    return float(cpu_file.read_text()), duration


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--models", type=int, default=3)
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    names = [f"m{i}" for i in range(1, args.models + 1)]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        table = "".join(
            f'[tool.tnsai-eval.models.{n}]\nbase_url = "{url}"\nmodel = "{n}"\n'
            f"price_in = 0.5\nprice_out = 1.5\n\n"
            for n in names
        )
        (folder / "pyproject.toml").write_text(table, encoding="utf-8")
        (folder / "test_suite.py").write_text(SUITE.format(cases=args.cases), encoding="utf-8")
        (folder / "conftest.py").write_text(CONFTEST, encoding="utf-8")
        many = [a for n in names for a in ("--tnsai-model", n)]
        cpu_ratios, wall_ratios = [], []
        for r in range(args.rounds):
            one, one_wall = _run(folder, ["--tnsai-model", names[0]])
            n_cpu, n_wall = _run(folder, many)
            cpu_ratio = n_cpu / (args.models * one)
            wall_ratio = n_wall / (args.models * one_wall)
            cpu_ratios.append(cpu_ratio)
            wall_ratios.append(wall_ratio)
            print(
                f"round {r + 1}: harness CPU 1 model {one:.3f}s, {args.models} models "
                f"{n_cpu:.3f}s -> ratio {cpu_ratio:.3f}; test time 1 model {one_wall:.3f}s, "
                f"{args.models} models {n_wall:.3f}s -> ratio {wall_ratio:.3f}",
                flush=True,
            )
    server.shutdown()
    median = statistics.median(cpu_ratios)
    print(
        f"\n{args.cases} cases, {args.models} models vs 1, median of {args.rounds} rounds:\n"
        f"  harness CPU  cost({args.models}) / ({args.models} x cost(1)) = {median:.3f}  "
        f"(target <= 1.10: {'met' if median <= 1.10 else 'NOT met'})\n"
        f"  test time    cost({args.models}) / ({args.models} x cost(1)) = "
        f"{statistics.median(wall_ratios):.3f}"
    )


if __name__ == "__main__":
    main()
