"""What ``tnsai-eval report --html`` costs for a large run, before and after the scores cap,
and with every case an agent's run.

    .venv/bin/python bench/report_page.py [--tests 2500] [--cases 2] [--sign-flips 100000]
        [--steps 4] [--modes capped uncapped trajectories]

Writes one report of ``--tests`` tests (each with a score and ``--cases``
case records) and renders its HTML page, each time in a fresh subprocess of
this Python: as shipped (the scores figure draws at most 60 bars) and with
the figure uncapped (every test a bar, as before the cap). Prints, for each,
the wall time and the peak resident memory of the subprocess (its
``ru_maxrss``), and the ratios uncapped / capped.

``trajectories`` renders the same run with every case an agent's: a
trajectory of ``--steps`` tool calls (each after a model turn, with its
arguments and result, then the final answer) and two per-metric verdicts,
against a baseline in which every tenth case looked its order up first (so
those cases flipped, each shown with both runs side by side and the norm
violation gained): the page's per-case step view, filters and divergence
blocks at that size.

Also times the sign test's tail at ``--sign-flips`` discordant cases (one
call, in this process), which the old exact sum could not compute past 1,023.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_RENDER = """
import functools, resource, sys, time
from tnsai_eval import plots
from tnsai_eval.plots import _html
if sys.argv[2] == "uncapped":
    _html.plot_report_scores = functools.partial(plots.plot_report_scores, max_tests=10**9)
start = time.perf_counter()
_html.write_html(sys.argv[3], sys.argv[1], baseline=sys.argv[4] if len(sys.argv) > 4 else None)
elapsed = time.perf_counter() - start
print(elapsed, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def _trajectory(order: str, steps: int, skip: bool) -> dict[str, object]:
    """An agent's run: ``steps`` tool calls, each after a model turn, then the answer."""
    tools = ["lookup_order", "check_policy", "issue_refund", "notify_customer", "close_ticket"]
    names = [tools[k % len(tools)] for k in range(steps)]
    if skip:
        names = names[1:]
    out: list[dict[str, object]] = []
    for name in names:
        out.append({"kind": "model_turn", "text": "", "tokens": 40, "latency_s": 0.2})
        out.append({"kind": "tool_call", "name": name,
                    "arguments": f'{{"order_id": "{order}", "reason": "customer request"}}',
                    "result": f'{{"order_id": "{order}", "status": "ok", "amount": 42.5}}',
                    "error": None, "latency_s": 0.01})  # fmt: skip
    out.append({"kind": "model_turn", "text": f"Done with {order}.", "tokens": 30})
    return {"stop_reason": "answered", "calls": len(names) + 1, "tokens": 300, "steps": out}


def _report(tests: int, cases: int, steps: int = 0, head: bool = True) -> dict[str, object]:
    """A run of ``tests`` tests; with ``steps``, every case an agent's (the baseline,
    ``head=False``, looked every order up; the head skips it for every tenth case)."""
    rows = []
    for i in range(tests):
        case_rows, scores = [], []
        for j in range(cases):
            order = f"A{i}.{j}"
            skip = head and steps > 0 and (i * cases + j) % 10 == 0
            score = 0.0 if skip else float((i + j) % 2) if not steps else 1.0
            case: dict[str, object] = {
                "id": f"c{j}", "input": f"q{i}.{j}", "expected": "a", "output": "a",
                "score": score, "passed": score >= 0.5,
            }  # fmt: skip
            if steps:
                violation = ["call 1: action 'issue_refund' is prohibited"] if skip else []
                case["trajectory"] = _trajectory(order, steps, skip)
                case["metric_scores"] = {
                    "tool_calls_in_order": {"score": score, "passed": not skip, "reason": None},
                    "norms": {"score": score, "passed": not skip, "reason": None,
                              "violations": violation},
                }  # fmt: skip
            case_rows.append(case)
            scores.append(score)
        mean = sum(scores) / max(len(scores), 1)
        rows.append(
            {
                "nodeid": f"tests/test_prompts.py::test_case[{i:05d}]",
                "status": "passed" if i % 7 else "failed",
                "metrics": {"score": {"samples": [mean if steps else (i % 100) / 100]}},
                "cases": case_rows,
            }
        )
    return {"schema_version": 3, "config": {"model": "bench"}, "tests": rows}


def _render(path: Path, mode: str, out: Path, baseline: Path | None = None) -> tuple[float, float]:
    extra = [] if baseline is None else [str(baseline)]
    done = subprocess.run(
        [sys.executable, "-c", _RENDER, str(path), mode, str(out), *extra],
        capture_output=True,
        text=True,
        check=True,
    )
    seconds, rss_kib = done.stdout.split()
    return float(seconds), float(rss_kib) / 1024


MODES = ("capped", "uncapped", "trajectories")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=2500)
    parser.add_argument("--cases", type=int, default=2)
    parser.add_argument("--sign-flips", type=int, default=100_000)
    parser.add_argument("--steps", type=int, default=4, help="tool calls per agent case")
    parser.add_argument(
        "--modes", nargs="+", default=list(MODES), choices=MODES, help="which pages to render"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "report.json"
        path.write_text(json.dumps(_report(args.tests, args.cases)), encoding="utf-8")
        runs, base = Path(folder) / "agents.json", Path(folder) / "agents-base.json"
        if "trajectories" in args.modes:
            report = _report(args.tests, args.cases, args.steps)
            runs.write_text(json.dumps(report), encoding="utf-8")
            baseline = _report(args.tests, args.cases, args.steps, head=False)
            base.write_text(json.dumps(baseline), encoding="utf-8")
        results = {}
        for mode in args.modes:
            page = Path(folder) / f"{mode}.html"
            if mode == "trajectories":
                results[mode] = _render(runs, "capped", page, base)
            else:
                results[mode] = _render(path, mode, page)
            size = page.stat().st_size / 1e6
            seconds, mib = results[mode]
            print(f"{mode:>12}: {seconds:6.2f} s, peak RSS {mib:6.0f} MiB, page {size:.1f} MB")
    if "capped" in results and "uncapped" in results:
        (capped_s, capped_mib), (uncapped_s, uncapped_mib) = results["capped"], results["uncapped"]
        print(
            f"{args.tests} tests: uncapped / capped = {uncapped_s / capped_s:.1f}x time, "
            f"{uncapped_mib / capped_mib:.1f}x peak memory"
        )
    from tnsai_eval._util.stats import sign_test

    half = args.sign_flips // 2
    start = time.perf_counter()
    p = sign_test(half - 300, half + 300, alternative="less")
    elapsed = time.perf_counter() - start
    print(f"sign test at {args.sign_flips} flips: p = {p:.4g} in {elapsed * 1000:.2f} ms")


if __name__ == "__main__":
    main()
