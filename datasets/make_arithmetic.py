"""Write arithmetic.jsonl (20 cases), arithmetic_large.jsonl (200) and
arithmetic_heldout.jsonl (100): sums and differences with their answers.

Run from anywhere: ``python datasets/make_arithmetic.py``. The seeds are fixed,
so the files it writes are always the same; re-running it must leave
``git diff`` empty. The small file is for the demo, README and notebooks; the
large one, whose questions never repeat, is big enough for a held-out split
to tell a better prompt from luck (``bench/optimizer.py``). The held-out one
shares no question with either: ``bench/optimizer.py --held-out`` scores the
prompts chosen on ``arithmetic_large`` on it, 100 cases nothing was chosen on.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

SEED = 20240611
COUNT = 20
OUT = Path(__file__).with_name("arithmetic.jsonl")
LARGE_SEED = 20261130
LARGE_COUNT = 200
LARGE_OUT = Path(__file__).with_name("arithmetic_large.jsonl")
HELDOUT_SEED = 20261201
HELDOUT_COUNT = 100
HELDOUT_OUT = Path(__file__).with_name("arithmetic_heldout.jsonl")


def make_cases(seed: int = SEED, count: int = COUNT) -> list[dict[str, str]]:
    """``count`` questions like "What is 17 + 5?", answers as digit strings."""
    rng = random.Random(seed)
    cases = []
    for _ in range(count):
        a, b = rng.randint(2, 30), rng.randint(2, 20)
        if rng.random() < 0.5:
            question, answer = f"What is {a} + {b}?", a + b
        else:
            a, b = max(a, b), min(a, b)  # keep answers non-negative
            question, answer = f"What is {a} - {b}?", a - b
        cases.append({"input": question, "expected": str(answer)})
    return cases


def make_distinct_cases(
    seed: int = LARGE_SEED, count: int = LARGE_COUNT, *, avoid: frozenset[str] = frozenset()
) -> list[dict[str, str]]:
    """Like ``make_cases`` but no question twice (a repeat would sit on both sides of a split),
    and none of ``avoid`` (the questions of another set)."""
    rng = random.Random(seed)
    seen: set[str] = set(avoid)
    cases: list[dict[str, str]] = []
    while len(cases) < count:
        (case,) = make_cases(rng.randrange(2**32), 1)
        if case["input"] not in seen:
            seen.add(case["input"])
            cases.append(case)
    return cases


def write(path: Path, cases: list[dict[str, str]]) -> None:
    lines = [json.dumps(case, ensure_ascii=False) for case in cases]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {len(lines)} cases to {path}")


def main() -> None:
    # No options; parsing anyway makes ``--help`` print this instead of writing the file.
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    write(OUT, make_cases())
    large = make_distinct_cases()
    write(LARGE_OUT, large)
    small = make_cases()
    avoid = frozenset(case["input"] for case in [*small, *large])
    write(HELDOUT_OUT, make_distinct_cases(HELDOUT_SEED, HELDOUT_COUNT, avoid=avoid))


if __name__ == "__main__":
    main()
