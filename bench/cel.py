"""Compare the two CEL libraries on a cached condition.

Both compile ``hasConsent == false && count > 3`` once, then evaluate it
10,000 times against the same state, the way ``ConditionEvaluator`` uses a
cached program. The state is converted to each library's values inside the
loop, as a real evaluation must. Also shown: ``ConditionEvaluator.evaluate``
itself (cache lookup, state conversion, result checks included).

Run: ``.venv/bin/python bench/cel.py [--n 10000] [--repeat 5]`` (needs the dev
extra, which installs cel-python). Prints the best of ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from collections.abc import Callable
from pathlib import Path

# This script is named cel.py and Python puts its folder first on sys.path,
# where ``import cel`` would find the script instead of the library.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != _HERE]

CONDITION = "hasConsent == false && count > 3"
STATE: dict[str, bool | int] = {"hasConsent": False, "count": 5}


def _best(fn: Callable[[], object], n: int, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, time.perf_counter() - start)
    return best


def _rust_cel() -> Callable[[], object]:
    # common-expression-language. By name: to a type checker, as to Python
    # without the sys.path fix above, ``import cel`` here is this script.
    cel = importlib.import_module("cel")
    program = cel.compile(CONDITION)
    return lambda: program.execute(dict(STATE))


def _cel_python() -> Callable[[], object]:
    import celpy  # cel-python
    from celpy.adapter import json_to_cel

    environment = celpy.Environment()
    program = environment.program(environment.compile(CONDITION))
    return lambda: program.evaluate({k: json_to_cel(v) for k, v in STATE.items()})


def _evaluator() -> Callable[[], object]:
    from tnsai_eval.norms import ConditionEvaluator

    evaluator = ConditionEvaluator()
    return lambda: evaluator.evaluate(CONDITION, STATE)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000, help="evaluations per run")
    parser.add_argument("--repeat", type=int, default=5, help="runs; the best is shown")
    args = parser.parse_args()

    rows: list[tuple[str, float]] = []
    for label, make in (
        ("common-expression-language (cel)", _rust_cel),
        ("cel-python (celpy)", _cel_python),
        ("ConditionEvaluator.evaluate", _evaluator),
    ):
        fn = make()
        # Both libraries must agree on the answer before their speed matters.
        if bool(fn()) is not True:
            raise SystemExit(f"{label} evaluated {CONDITION!r} wrongly: {fn()!r}")
        rows.append((label, _best(fn, args.n, args.repeat)))

    print(f"condition: {CONDITION}   state: {STATE}")
    print(f"{args.n:,} evaluations of the compiled condition, best of {args.repeat} runs")
    print(f"{'library':36} {'total s':>9} {'us/eval':>9}")
    for label, seconds in rows:
        print(f"{label:36} {seconds:9.4f} {seconds / args.n * 1e6:9.2f}")
    rust, python = rows[0][1], rows[1][1]
    print(f"ratio cel-python / common-expression-language: {python / rust:.0f}x")


if __name__ == "__main__":
    main()
