"""Write arithmetic.jsonl: small sums and differences with their answers.

Run from anywhere: ``python datasets/make_arithmetic.py``. The seed is fixed,
so the file it writes is always the same; re-running it must leave
``git diff`` empty.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

SEED = 20240611
COUNT = 20
OUT = Path(__file__).with_name("arithmetic.jsonl")


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


def main() -> None:
    # No options; parsing anyway makes ``--help`` print this instead of writing the file.
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    lines = [json.dumps(case, ensure_ascii=False) for case in make_cases()]
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {len(lines)} cases to {OUT}")


if __name__ == "__main__":
    main()
