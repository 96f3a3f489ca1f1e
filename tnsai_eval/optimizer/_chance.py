"""Chance on the page: what a constant answer scores on a label task, and when a prompt is one.

On a label task a prompt that makes the model give one label to every case
scores that label's share of the cases, with no skill at all: on a held-out
split where a third of the headlines are about sports, "answer `sports`"
scores 0.333. A held-out gain means something only beside that figure, so a
run on labelled cases (``OptimizerConfig.labels``, by default a
``LabelEvaluator``'s) reports, with no model call:

- ``ConstantBaseline``: the constant answer a prompt could learn from the
  selection cases alone (the label most often expected there; ties: the
  label listed first) and its score on the held-out cases, beside the
  held-out majority class's share (what the best constant answer chosen
  with hindsight would score);
- ``answer_counts``: how often a prompt's replies named each label, from
  which ``OptimizationResult`` flags a winner whose held-out replies are
  ``DEGENERATE_SHARE`` or more one label, or that scores no higher than the
  constant answer;
- ``confusion_frame``: expected label by answered label, per prompt.

Labels are read from replies as ``LabelEvaluator.label_of`` reads them (the
one label a reply names; ``None`` for none or several). The constant answer
is scored the same way: 1.0 for a case whose expected label it is.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tnsai_eval.records import CaseRecord
from tnsai_eval.scoring import LabelEvaluator, TestCase

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "DEGENERATE_SHARE",
    "NO_LABEL",
    "ConstantBaseline",
    "answer_counts",
    "confusion_frame",
    "constant_baseline",
    "constant_flips",
]

#: A prompt whose replies name one label this often (or more) is answering a constant.
DEGENERATE_SHARE = 0.9
#: The column of ``confusion_frame`` for replies that name no label (or several).
NO_LABEL = "(none)"


@dataclass(frozen=True, slots=True)
class ConstantBaseline:
    """What answering one label to every case scores on a label task.

    ``label`` is the constant answer chosen on the selection cases (the
    label expected most often there; ties: the first in the task's labels),
    ``selection_score`` its score there and ``score`` its score on the
    ``cases`` held-out cases: the bar a prompt's held-out score must clear
    to show any skill. ``majority_label`` is the label expected most often
    among the held-out cases and ``majority_rate`` its share (the most any
    constant answer could score there, chosen with hindsight).

    >>> labels = ("sports", "politics", "tech")
    >>> selection = [TestCase(f"s{i}", labels[i % 3]) for i in range(28)]
    >>> held_out = [TestCase(f"h{i}", labels[i % 3]) for i in range(12)]
    >>> baseline = constant_baseline(labels, selection, held_out)
    >>> baseline.label, round(baseline.selection_score, 3), baseline.score
    ('sports', 0.357, 0.3333333333333333)
    >>> baseline.describe()
    "constant answer 'sports' 0.333 (majority class 0.333)"
    """

    label: str
    selection_score: float
    score: float
    majority_label: str
    majority_rate: float
    cases: int

    def describe(self) -> str:
        """The baseline in a clause, as the headline shows it."""
        return (
            f"constant answer {self.label!r} {self.score:.3f} "
            f"(majority class {self.majority_rate:.3f})"
        )

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict of the fields."""
        return dataclasses.asdict(self)


def constant_baseline(
    labels: Sequence[str], selection: Sequence[TestCase], held_out: Sequence[TestCase]
) -> ConstantBaseline | None:
    """The constant-answer baseline of a label task (``None`` without held-out cases)."""
    if not held_out or not selection or len(labels) < 2:
        return None
    reader = LabelEvaluator(labels)

    def share(label: str, cases: Sequence[TestCase]) -> float:
        return math.fsum(reader.evaluate(label, case.expected) for case in cases) / len(cases)

    # max() keeps the first of equal scores: ties go to the label listed first.
    chosen = max(labels, key=lambda label: share(label, selection))
    majority = max(labels, key=lambda label: share(label, held_out))
    return ConstantBaseline(
        label=chosen,
        selection_score=share(chosen, selection),
        score=share(chosen, held_out),
        majority_label=majority,
        majority_rate=share(majority, held_out),
        cases=len(held_out),
    )


def constant_flips(
    labels: Sequence[str], label: str, rows: Iterable[CaseRecord]
) -> tuple[int, int]:
    """(better, worse): the rows that scored above and below answering ``label`` to each case.

    The constant answer scores a case as ``constant_baseline`` does (1.0 for
    a case whose expected label it is); rows without a score are skipped.
    This pairs a prompt with the constant answer for the sign test.

    >>> from tnsai_eval.records import CaseRecord
    >>> rows = [CaseRecord(id=str(i), input="", expected=e, output="", score=s)
    ...         for i, (e, s) in enumerate([("yes", 1.0), ("no", 1.0), ("no", 0.0), ("yes", 0.0)])]
    >>> constant_flips(["yes", "no"], "yes", rows)
    (1, 1)
    """
    reader = LabelEvaluator(labels)
    better = worse = 0
    for row in rows:
        if row.score is None:
            continue
        constant = reader.evaluate(label, row.expected)
        better += row.score > constant
        worse += row.score < constant
    return better, worse


def answer_counts(labels: Sequence[str], outputs: Iterable[str | None]) -> Counter[str]:
    """How many replies named each label (``NO_LABEL`` for none or several; failed calls skipped).

    >>> answer_counts(["yes", "no"], ["Yes.", "yes", "maybe", None])
    Counter({'yes': 2, '(none)': 1})
    """
    reader = LabelEvaluator(labels)
    return Counter(reader.label_of(output) or NO_LABEL for output in outputs if output is not None)


def confusion_frame(
    labels: Sequence[str], prompts: Sequence[tuple[str, Sequence[CaseRecord]]]
) -> pd.DataFrame:
    """Expected label by answered label, one block of rows per named prompt.

    ``prompts`` pairs a name ("initial", "best") with its rows. The frame is
    indexed by (prompt, expected) with one column per label and ``NO_LABEL``;
    each cell counts the rows that expected the row's label and answered the
    column's. Failed calls are left out.
    """
    import pandas as pd

    reader = LabelEvaluator(labels)
    columns = [*labels, NO_LABEL]
    index = []
    cells = []
    for name, rows in prompts:
        for expected in labels:
            counts: Counter[str] = Counter()
            for row in rows:
                if row.output is None or reader.evaluate(expected, row.expected) != 1.0:
                    continue
                counts[reader.label_of(row.output) or NO_LABEL] += 1
            index.append((name, expected))
            cells.append([counts[column] for column in columns])
    return pd.DataFrame(
        cells,
        index=pd.MultiIndex.from_tuples(index, names=["prompt", "expected"]),
        columns=pd.Index(columns, name="answered"),
    )
