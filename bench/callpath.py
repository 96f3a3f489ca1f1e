"""CPU per case of the call path, side by side in one run: plugin, plain API, raw httpx.

    .venv/bin/python bench/callpath.py [--small 1000] [--large 5000] [--rounds 7]

Four ways of sending the same chat requests to a zero-latency OpenAI-compatible
server (``bench/client.py``'s, in a separate process), each in a fresh
subprocess of this Python:

1. ``plugin, record off``: a pytest test calling ``evaluate_prompt`` on N cases
   (``--llm-record off``: every case reaches the server);
2. ``plugin, record``: the same with ``--llm-record record`` into an empty
   store, so every reply is also written to it;
3. ``plain API``: ``score_prompt(OpenAIClient(...), ...)`` in a script;
4. ``raw httpx``: a loop posting the same bodies with one ``httpx.Client``.

The figure is CPU (user + system) of the subprocess, per case: the slope
between ``--small`` and ``--large`` cases, so that start-up (interpreter,
pytest, imports) cancels out. The arms are interleaved in each round; the
median over ``--rounds`` rounds is printed for each, with its ratio to the raw
loop, and the median of each round's own ratio to the raw loop of that round
(paired: a slower moment of the machine slows both), each with the spread of
its middle rounds.
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from client import MODEL, _ServerProcess  # noqa: E402

_PROMPT = "Answer in one word."

_PYTEST_FILE = """
from tnsai_eval.scoring import ContainsEvaluator


def test_cases(evaluate_prompt):
    cases = [(f"What is the capital of France? ({i})", "Paris") for i in range(__N__)]
    evaluate_prompt(__PROMPT__, cases, evaluator=ContainsEvaluator())
"""

_PLAIN = """
import sys
from tnsai_eval.llm import OpenAIClient
from tnsai_eval.evaluation import score_prompt
from tnsai_eval.scoring import ContainsEvaluator, TestCase

n, url, model = int(sys.argv[1]), sys.argv[2], sys.argv[3]
cases = [TestCase(f"What is the capital of France? ({i})", "Paris") for i in range(n)]
with OpenAIClient(model, base_url=url, api_key="") as llm:
    result = score_prompt(llm, __PROMPT__, cases, evaluator=ContainsEvaluator())
assert result.calls == n, result.calls
"""

_RAW = """
import json, sys
import httpx

n, url, model = int(sys.argv[1]), sys.argv[2], sys.argv[3]
with httpx.Client() as http:
    for i in range(n):
        body = {"model": model, "temperature": 0.0, "max_tokens": 128, "messages": [
            {"role": "user", "content": __PROMPT__ + f"\\n\\nWhat is the capital of France? ({i})"}
        ]}
        reply = http.post(url + "/chat/completions", content=json.dumps(body).encode(),
                          headers={"Content-Type": "application/json"})
        reply.raise_for_status()
        json.loads(reply.content)["choices"][0]["message"]["content"]
"""


def _cpu_of(command: list[str], cwd: Path, env: dict[str, str]) -> float:
    """CPU seconds (user + system) that ``command`` took, as a child of this process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stdout}\n{done.stderr}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _arms(base_url: str, work: Path, env: dict[str, str]) -> dict[str, Callable[[int], float]]:
    python = sys.executable

    def plugin(mode: str) -> Callable[[int], float]:
        def run(n: int) -> float:
            folder = Path(tempfile.mkdtemp(dir=work))
            (folder / "test_cases.py").write_text(
                _PYTEST_FILE.replace("__N__", str(n)).replace("__PROMPT__", repr(_PROMPT))
            )
            command = [
                python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                "-p", "no:xdist", "-p", "no:nbval", "-p", "no:hypothesispytest",
                f"--llm-base-url={base_url}", f"--llm-model={MODEL}", f"--llm-record={mode}",
                f"--llm-store={folder / 'store'}", "test_cases.py",
            ]  # fmt: skip
            return _cpu_of(command, folder, env)

        return run

    def script(source: str) -> Callable[[int], float]:
        path = work / f"arm_{abs(hash(source))}.py"
        path.write_text(textwrap.dedent(source.replace("__PROMPT__", repr(_PROMPT))))

        def run(n: int) -> float:
            return _cpu_of([python, str(path), str(n), base_url, MODEL], work, env)

        return run

    return {
        "plugin, record off": plugin("off"),
        "plugin, record": plugin("record"),
        "plain API (score_prompt)": script(_PLAIN),
        "raw httpx loop": script(_RAW),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    # 1,000 -> 5,000 cases: at 200 -> 1,000 the slope's noise was a tenth of a
    # millisecond per case and single rounds swung by 2 ms; over 4,000 cases it is
    # a few percent (the spread printed beside each median says how much).
    parser.add_argument("--small", type=int, default=1000)
    parser.add_argument("--large", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"machine: {os.cpu_count()} CPUs, load average {load} (1, 5, 15 min) before the run")
    slopes: dict[str, list[float]] = {}
    with _ServerProcess(delay=0.0) as server, tempfile.TemporaryDirectory() as work:
        # Bytecode caches on (in a folder of their own), as a user has them:
        # compiling every module in every subprocess would be most of the noise.
        env = {**os.environ, "PYTHONPYCACHEPREFIX": str(Path(work) / "pycache")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env.pop("CI", None)
        arms = _arms(server.base_url, Path(work), env)
        # One unmeasured run per arm first: it fills the fresh bytecode cache, which
        # otherwise made round 1's small run dearer and its slope low (0.1-0.4 ms).
        for run in arms.values():
            run(args.small)
        for round_no in range(args.rounds):
            for name, run in arms.items():
                small, large = run(args.small), run(args.large)
                slope = (large - small) / (args.large - args.small)
                slopes.setdefault(name, []).append(slope)
            shown = ", ".join(f"{k}: {v[-1] * 1e3:.3f}" for k, v in slopes.items())
            print(f"round {round_no + 1}: ms CPU per case: {shown}", flush=True)
    raw_slopes = slopes["raw httpx loop"]
    raw = statistics.median(raw_slopes)
    print(f"CPU per case, median of {args.rounds} rounds ({args.small} -> {args.large} cases),")
    print("with the spread of the middle rounds (half the interquartile range) as +-%;")
    print("then each arm over the raw loop of the same round (machine drift cancels), median:")
    for name, values in slopes.items():
        median = statistics.median(values)
        spread = _half_iqr(values) / median if median > 0 else math.inf
        ratios = [v / r for v, r in zip(values, raw_slopes, strict=True) if r > 0]
        paired = statistics.median(ratios) if ratios else math.nan
        paired_spread = _half_iqr(ratios) / paired if ratios and paired > 0 else math.inf
        print(
            f"  {name:<26} {median * 1e3:7.3f} ms +-{spread:5.1%}   {median / raw:5.2f}x the raw"
            f" loop;  paired {paired:5.2f}x +-{paired_spread:5.1%}"
        )
    return 0


def _half_iqr(values: list[float]) -> float:
    """Half the interquartile range: how far the middle half of the rounds strays."""
    if len(values) < 4:
        return max(values) - min(values)
    low, _, high = statistics.quantiles(values, n=4)
    return (high - low) / 2


if __name__ == "__main__":
    sys.exit(main())
