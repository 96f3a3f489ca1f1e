"""The slowest CEL conditions we could build under ``ConditionEvaluator``'s default caps.

The CEL binding has no cost or time limit, and its comprehensions are
quadratic, so ``ConditionEvaluator`` bounds the work before evaluating
(``max_comprehension_depth=1``, ``max_comprehensions=4``,
``max_literal_items=64``, ``max_items=100``, ``max_text_chars=4096``,
``max_length=4096``). This
script evaluates the worst cases we know under those caps, each once, and
prints the time of each and the slowest. No test asserts these times; the
figures go in bench/README.md ("CEL caps").

Run: ``.venv/bin/python bench/cel_caps.py``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != _HERE]

from tnsai_eval.norms import ConditionEvaluator  # noqa: E402

ITEMS = list(range(100))  # max_items=100
LITERAL = "[" + ",".join(str(i) for i in range(64)) + "]"  # max_literal_items
TEXT = "x" * 4000  # max_text_chars


def _chain(body: str, count: int = 4) -> str:
    return " && ".join([body] * count)


CASES: list[tuple[str, str, dict[str, object]]] = [
    ("one map over 100 items", "xs.map(x, x * 2).size() == 100", {"xs": ITEMS}),
    (
        "4 filters, membership in the body",
        _chain("xs.filter(x, x in xs).size() == 100"),
        {"xs": ITEMS},
    ),
    ("4 maps to a 64-item literal", _chain(f"xs.map(x, {LITERAL}).size() > 0"), {"xs": ITEMS}),
    (
        "4 maps concatenating a 4000-char string",
        _chain("xs.map(x, s + s).size() > 0"),
        {"xs": ITEMS, "s": TEXT},
    ),
    (
        "4 maps to a list of the state list",
        _chain("xs.map(x, [xs, xs]).size() > 0"),
        {"xs": ITEMS},
    ),
]


def main() -> None:
    evaluator = ConditionEvaluator()
    slowest = ("", 0.0)
    print(f"{'case':<44} {'chars':>6} {'seconds':>8}")
    for name, condition, state in CASES:
        assert len(condition) <= evaluator.max_length, name
        started = time.perf_counter()
        evaluator.evaluate(condition, state)
        elapsed = time.perf_counter() - started
        print(f"{name:<44} {len(condition):>6} {elapsed:>8.3f}")
        if elapsed > slowest[1]:
            slowest = (name, elapsed)
    print(f"worst case under the default caps: {slowest[0]}: {slowest[1]:.3f} s")


if __name__ == "__main__":
    main()
