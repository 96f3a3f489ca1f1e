"""What ``tnsai-eval report --html`` costs for a large run, before and after the scores cap.

    .venv/bin/python bench/report_page.py [--tests 2500] [--cases 2] [--sign-flips 100000]

Writes one report of ``--tests`` tests (each with a score and ``--cases``
case records) and renders its HTML page twice, each in a fresh subprocess of
this Python: as shipped (the scores figure draws at most 60 bars) and with
the figure uncapped (every test a bar, as before the cap). Prints, for each,
the wall time and the peak resident memory of the subprocess (its
``ru_maxrss``), and the ratios uncapped / capped.

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
_html.write_html(sys.argv[3], sys.argv[1])
elapsed = time.perf_counter() - start
print(elapsed, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def _report(tests: int, cases: int) -> dict[str, object]:
    rows = []
    for i in range(tests):
        case_rows = [
            {"id": f"c{j}", "input": f"q{i}.{j}", "expected": "a", "output": "a",
             "score": float((i + j) % 2), "passed": bool((i + j) % 2)}
            for j in range(cases)
        ]  # fmt: skip
        rows.append(
            {
                "nodeid": f"tests/test_prompts.py::test_case[{i:05d}]",
                "status": "passed" if i % 7 else "failed",
                "metrics": {"score": {"samples": [(i % 100) / 100]}},
                "cases": case_rows,
            }
        )
    return {"schema_version": 2, "config": {"model": "bench"}, "tests": rows}


def _render(path: Path, mode: str, out: Path) -> tuple[float, float]:
    done = subprocess.run(
        [sys.executable, "-c", _RENDER, str(path), mode, str(out)],
        capture_output=True,
        text=True,
        check=True,
    )
    seconds, rss_kib = done.stdout.split()
    return float(seconds), float(rss_kib) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=2500)
    parser.add_argument("--cases", type=int, default=2)
    parser.add_argument("--sign-flips", type=int, default=100_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "report.json"
        path.write_text(json.dumps(_report(args.tests, args.cases)), encoding="utf-8")
        results = {}
        for mode in ("capped", "uncapped"):
            results[mode] = _render(path, mode, Path(folder) / f"{mode}.html")
            size = (Path(folder) / f"{mode}.html").stat().st_size / 1e6
            seconds, mib = results[mode]
            print(f"{mode:>8}: {seconds:6.2f} s, peak RSS {mib:6.0f} MiB, page {size:.1f} MB")
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
