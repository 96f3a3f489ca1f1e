"""Case-level comparison of two runs: which cases flipped, and whether the change is real.

A mean can hide everything: a prompt change that fixes three cases and breaks
three others keeps it exactly where it was. Comparing case by case (matched
on their stable ids) shows the flips both ways, and the flips are also what
the paired test reads: under "no difference" each flipped case is equally
likely to have gone either way, so ``sign_test`` (shared with the optimizer)
says how surprising the count of broken cases is.

Unrecorded cases (no reply in the store) and errored ones (the call failed,
or the evaluator raised) are left out of every number here and listed on
their own: a case that was never answered has no score, not 0.

>>> from tnsai_eval.reports._model import CaseRecord
>>> old = [CaseRecord("a", "q", "x", "x", 1.0, True), CaseRecord("b", "r", "y", "n", 0.0, False)]
>>> new = [CaseRecord("a", "q", "x", "n", 0.0, False), CaseRecord("b", "r", "y", "y", 1.0, True)]
>>> diff = compare_cases("t::x", "score", new, old)
>>> [c.id for c in diff.broken], [c.id for c in diff.fixed], diff.mean_delta
(['a'], ['b'], 0.0)
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from tnsai_eval._util.stats import mean_interval, sign_test
from tnsai_eval.records import TrajectorySummary
from tnsai_eval.reports._model import CaseRecord, CaseState, PromptRecord, was_run
from tnsai_eval.reports._trajectories import ToolDivergence, diverge

__all__ = [
    "CaseChange",
    "CaseComparison",
    "GateMode",
    "PromptChange",
    "aggregate_cases",
    "compare_cases",
    "runs_by_case",
]


class GateMode(StrEnum):
    """How the baseline gate decides that a score regressed.

    ``tolerance`` (default): the mean dropped by more than the tolerance.
    ``paired``: in addition, the exact one-sided sign test on the flipped
    cases has p < alpha, so a drop made of a few coin-flip cases passes.
    """

    TOLERANCE = "tolerance"
    PAIRED = "paired"


@dataclass(frozen=True, slots=True)
class _Verdict:
    """One case's outcome over its repeat samples."""

    record: CaseRecord
    score: float
    passed: bool


def aggregate_cases(
    records: Iterable[CaseRecord],
) -> tuple[dict[str, _Verdict], list[str], list[str]]:
    """Scored cases by id, the ids that were never recorded, and the ids that only errored.

    With ``--tnsai-repeat`` a case has one record per sample: its score is
    the mean of its scored samples and it passes when at least half of them
    passed. A sample that failed to run (state ``error``: the call failed or
    the evaluator raised) has no score: an outage says nothing about the
    prompt, so it is left out like an unrecorded one (the gate counts it as
    missing evidence instead).
    """
    grouped: dict[str, list[CaseRecord]] = {}
    for record in records:
        grouped.setdefault(record.id, []).append(record)
    verdicts: dict[str, _Verdict] = {}
    unrecorded: list[str] = []
    errored: list[str] = []
    for case_id, group in grouped.items():
        judged = [r for r in group if r.state is CaseState.SCORED]
        if not judged:
            (errored if any(was_run(r) for r in group) else unrecorded).append(case_id)
            continue
        scores = [0.0 if r.score is None else r.score for r in judged]
        passes = sum(r.passed is True for r in judged)
        verdicts[case_id] = _Verdict(
            record=judged[-1],
            score=math.fsum(scores) / len(scores),
            passed=2 * passes >= len(judged),
        )
    return verdicts, unrecorded, errored


@dataclass(frozen=True, slots=True)
class CaseChange:
    """A case present (and recorded) in both runs, with both outcomes.

    For a target's case, each run's trajectory summary and the norms it
    violated (``divergence``: where the tool calls parted).
    """

    nodeid: str
    metric: str
    id: str
    input: str
    expected: str
    baseline_score: float
    current_score: float
    baseline_passed: bool
    current_passed: bool
    baseline_output: str | None
    current_output: str | None
    baseline_trajectory: TrajectorySummary | None = None
    current_trajectory: TrajectorySummary | None = None
    baseline_violations: tuple[str, ...] = ()
    current_violations: tuple[str, ...] = ()

    @property
    def divergence(self) -> ToolDivergence | None:
        """Both runs' tool calls aligned and their first divergence (``None`` unless both
        runs kept a trajectory)."""
        if self.baseline_trajectory is None or self.current_trajectory is None:
            return None
        return diverge(self.baseline_trajectory, self.current_trajectory)

    @property
    def violations_gained(self) -> tuple[str, ...]:
        """Norm violations of this run that the baseline's run did not have."""
        return tuple(v for v in self.current_violations if v not in self.baseline_violations)

    @property
    def violations_lost(self) -> tuple[str, ...]:
        """Norm violations of the baseline's run that this run no longer has."""
        return tuple(v for v in self.baseline_violations if v not in self.current_violations)

    @property
    def delta(self) -> float:
        """current - baseline score."""
        return self.current_score - self.baseline_score

    @property
    def flip(self) -> str:
        """``"broken"`` (pass -> fail), ``"fixed"`` (fail -> pass) or ``""``."""
        if self.baseline_passed and not self.current_passed:
            return "broken"
        if self.current_passed and not self.baseline_passed:
            return "fixed"
        return ""


@dataclass(frozen=True, slots=True)
class PromptChange:
    r"""A prompt whose hash changed between the runs (text, template or call settings).

    ``baseline_text`` and ``current_text`` are the prompts as the reports hold
    them (already masked for secrets); ``diff()`` is their unified diff, empty
    when only the template or the call settings changed.

    >>> change = PromptChange("t::x", "score", "p.txt", "a", "b", "Be brief.\n", "Be terse.\n")
    >>> change.diff()[2:]
    ['@@ -1 +1 @@', '-Be brief.', '+Be terse.']
    """

    nodeid: str
    metric: str
    name: str
    baseline_hash: str
    current_hash: str
    baseline_text: str = ""
    current_text: str = ""

    def diff(self, *, context: int = 3) -> list[str]:
        """The unified diff (baseline -> current) of the prompt text, line by line."""
        return [
            line.rstrip("\n")
            for line in difflib.unified_diff(
                self.baseline_text.splitlines(),
                self.current_text.splitlines(),
                fromfile=f"{self.name} ({self.baseline_hash})",
                tofile=f"{self.name} ({self.current_hash})",
                n=context,
                lineterm="",
            )
        ]


@dataclass(frozen=True, slots=True)
class CaseComparison:
    """The cases of one ``evaluate_prompt`` call (one test, one metric) in both runs."""

    nodeid: str
    metric: str
    changes: tuple[CaseChange, ...]
    new: tuple[str, ...]
    vanished: tuple[str, ...]
    unrecorded: tuple[str, ...]
    prompt_change: PromptChange | None = None
    #: Case ids this run did not run (no recorded reply, or refused by the call budget).
    not_run: tuple[str, ...] = ()
    #: Case ids that failed to run in this run (state ``error``).
    errored: tuple[str, ...] = ()
    #: Distinct case ids the baseline holds for this metric, run or not.
    baseline_count: int = 0

    @property
    def common(self) -> int:
        """How many cases both runs ran: the evidence every number here rests on."""
        return len(self.changes)

    @property
    def broken(self) -> tuple[CaseChange, ...]:
        """Cases that passed in the baseline and fail now, worst drop first."""
        return tuple(sorted((c for c in self.changes if c.flip == "broken"), key=lambda c: c.delta))

    @property
    def fixed(self) -> tuple[CaseChange, ...]:
        """Cases that failed in the baseline and pass now, largest gain first."""
        return tuple(sorted((c for c in self.changes if c.flip == "fixed"), key=lambda c: -c.delta))

    @property
    def flipped(self) -> tuple[CaseChange, ...]:
        """Every flipped case, broken ones (worst first) before fixed ones."""
        return self.broken + self.fixed

    @property
    def baseline_mean(self) -> float:
        """Mean baseline score over the cases both runs recorded."""
        return _mean([c.baseline_score for c in self.changes])

    @property
    def current_mean(self) -> float:
        """Mean current score over the cases both runs recorded."""
        return _mean([c.current_score for c in self.changes])

    @property
    def mean_delta(self) -> float:
        """Mean paired difference (current - baseline) over the common cases."""
        return _mean([c.delta for c in self.changes])

    @property
    def delta_interval(self) -> tuple[float, float]:
        """95% interval (Student's t) of the mean paired difference."""
        if not self.changes:
            return 0.0, 0.0
        _, low, high = mean_interval([c.delta for c in self.changes])
        return max(low, -1.0), min(high, 1.0)  # a score change cannot leave [-1, 1]

    @property
    def p_worse(self) -> float:
        """One-sided exact sign test: how likely this many broken cases are by chance."""
        return sign_test(len(self.fixed), len(self.broken), alternative="less")

    @property
    def p_better(self) -> float:
        """One-sided exact sign test in the other direction (for improvements)."""
        return sign_test(len(self.fixed), len(self.broken), alternative="greater")


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values) if values else 0.0


def compare_cases(
    nodeid: str,
    metric: str,
    current: Iterable[CaseRecord],
    baseline: Iterable[CaseRecord],
    *,
    current_prompts: Sequence[PromptRecord] = (),
    baseline_prompts: Sequence[PromptRecord] = (),
    current_runs: Mapping[str, CaseRecord] | None = None,
    baseline_runs: Mapping[str, CaseRecord] | None = None,
) -> CaseComparison:
    """Match the two runs' cases of one metric on their ids.

    ``current_runs``/``baseline_runs`` map a case id to the record that keeps
    its trajectory when this metric's records do not (each metric of a target
    with several has records of its own; the case's headline record keeps the
    run); by default each case's own record is read.
    """
    current_records = list(current)
    now, now_unrecorded, now_errored = aggregate_cases(current_records)
    before, before_unrecorded, before_errored = aggregate_cases(baseline)
    now_runs = current_runs or {}
    before_runs = baseline_runs or {}
    changes = []
    for case_id, verdict in now.items():
        if case_id not in before:
            continue
        was, run = (
            before_runs.get(case_id, before[case_id].record),
            now_runs.get(case_id, verdict.record),
        )
        changes.append(
            CaseChange(
                nodeid=nodeid,
                metric=metric,
                id=case_id,
                input=verdict.record.input,
                expected=verdict.record.expected,
                baseline_score=before[case_id].score,
                current_score=verdict.score,
                baseline_passed=before[case_id].passed,
                current_passed=verdict.passed,
                baseline_output=before[case_id].record.output,
                current_output=verdict.record.output,
                baseline_trajectory=was.trajectory,
                current_trajectory=run.trajectory,
                baseline_violations=was.violations,
                current_violations=run.violations,
            )
        )
    unrecorded = list(dict.fromkeys([*now_unrecorded, *before_unrecorded]))
    known_before = set(before) | set(before_unrecorded) | set(before_errored)
    known_now = set(now) | set(now_unrecorded) | set(now_errored)
    return CaseComparison(
        nodeid=nodeid,
        metric=metric,
        changes=tuple(changes),
        new=tuple(i for i in now if i not in known_before),
        vanished=tuple(i for i in before if i not in known_now),
        unrecorded=tuple(unrecorded),
        prompt_change=_prompt_change(nodeid, metric, current_prompts, baseline_prompts),
        not_run=tuple(now_unrecorded),
        errored=tuple(dict.fromkeys(r.id for r in current_records if r.state is CaseState.ERROR)),
        baseline_count=len(known_before),
    )


def runs_by_case(records: Iterable[CaseRecord], metric: str) -> dict[str, CaseRecord]:
    """The records that keep the runs of ``metric``'s cases, by case id.

    A case's run is kept on its headline record (metric ``score``); each
    metric of a target with several (``score.norms``) reads it there. The
    last sample's stands, as ``aggregate_cases`` reads the last scored one.
    """
    return {
        r.id: r
        for r in records
        if r.trajectory is not None and (r.metric == metric or metric.startswith(r.metric + "."))
    }


def _prompt_change(
    nodeid: str,
    metric: str,
    current: Sequence[PromptRecord],
    baseline: Sequence[PromptRecord],
) -> PromptChange | None:
    now = next((p for p in current if p.metric == metric), None)
    before = next((p for p in baseline if p.metric == metric), None)
    if now is None or before is None or now.hash == before.hash:
        return None
    return PromptChange(
        nodeid=nodeid,
        metric=metric,
        name=now.file or before.file or f"{nodeid} ({metric})",
        baseline_hash=before.hash,
        current_hash=now.hash,
        baseline_text=before.text,
        current_text=now.text,
    )
