"""Demo search: candidate demo sets from the selection cases, bootstrapped ones first.

Fixed worked examples often do worse than none on a small model; what works
(as DSPy's bootstrapped few-shot found) is *searching* demo sets, partly made
of the model's own replies that scored 1.0 (they show the model an answer in
its own words and format). Each round, ``demo_candidates`` draws
``demo_sets`` sets of ``few_shot_examples`` demos from the selection cases
only (held-out cases never reach the run), alternating a set of bootstrapped
replies and a set of expected answers, and alternating chat turns and inline
text; the optimizer scores each set on the current best instruction like any
other variant. A case is never scored with itself as a demo
(``PromptVariant.messages`` leaves it out).
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence

from tnsai_eval.evaluation import Demo, DemoStyle, PromptVariant
from tnsai_eval.scoring import TestCase

__all__ = ["BOOTSTRAP_SCORE", "bootstrap_pool", "demo_candidates"]

#: A reply is a bootstrapped demo when it scored at least this.
BOOTSTRAP_SCORE = 1.0


def bootstrap_pool(
    cases: Sequence[TestCase],
    scores: dict[int, float | None],
    outputs: dict[int, str | None],
) -> list[Demo]:
    """The model's own replies that scored ``BOOTSTRAP_SCORE``, as demos (case order).

    >>> cases = [TestCase("1 + 1", "2"), TestCase("2 + 2", "4")]
    >>> bootstrap_pool(cases, {0: 1.0, 1: 0.0}, {0: "2", 1: "five"})
    [Demo(input='1 + 1', output='2', bootstrapped=True)]
    """
    pool = []
    for index, case in enumerate(cases):
        score, output = scores.get(index), outputs.get(index)
        if score is not None and score >= BOOTSTRAP_SCORE and output and output.strip():
            pool.append(Demo(case.input, output.strip(), bootstrapped=True))
    return pool


def demo_candidates(
    base: PromptVariant,
    cases: Sequence[TestCase],
    bootstrapped: Sequence[Demo],
    *,
    sets: int,
    size: int,
    seed: int,
) -> list[tuple[str, PromptVariant]]:
    """``sets`` ``(strategy name, variant)`` pairs: ``base`` with a drawn demo set each.

    Even-numbered sets draw from ``bootstrapped`` when it holds enough demos
    (else from the expected answers); odd ones from the expected answers. Sets
    alternate chat turns and inline text in pairs, so each draw is tried both
    ways when ``sets`` allows.

    >>> cases = [TestCase(f"{i} + 1", str(i + 1)) for i in range(6)]
    >>> found = demo_candidates(PromptVariant("Add."), cases, [], sets=2, size=2, seed=0)
    >>> [(name, v.demo_style, len(v.demos)) for name, v in found]
    [('demos', 'chat', 2), ('demos_inline', 'inline', 2)]
    """
    if sets <= 0 or size <= 0 or not cases:
        return []
    labelled = [Demo(c.input, c.expected) for c in cases]
    rng = random.Random(seed)
    out: list[tuple[str, PromptVariant]] = []
    draws: list[tuple[Demo, ...]] = []
    for index in range(sets):
        pair, style_index = divmod(index, 2)
        if style_index == 0:
            pool = bootstrapped if pair % 2 == 0 and len(bootstrapped) >= size else labelled
            draws.append(tuple(rng.sample(list(pool), min(size, len(pool)))))
        style: DemoStyle = "chat" if style_index == 0 else "inline"
        name = "demos" if style == "chat" else "demos_inline"
        out.append((name, dataclasses.replace(base, demos=draws[pair], demo_style=style)))
    return out
