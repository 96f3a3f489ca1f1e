"""The gate's one verdict on a run: the same words in every output, the same exit status.

A comparison says what moved; the verdict is what the gate decides from it,
together with what the comparison cannot see: pytest's exit status (a
collection error, an interrupted run, no tests), tests that failed (a
``min_score``), gate settings a pull request changed, and what its accept
label lets through. The pytest plugin (exit status and its last line),
``tnsai-eval report``, ``tnsai-eval ci comment`` (the comment's first line,
the job summary, JUnit's ``tnsai gate`` testcases) all print this one
``GateVerdict``, so they cannot disagree.

``PASS`` needs evidence: nothing regressed, no evidence is missing, no test
failed and pytest exited 0. A pull request that accepts a new baseline leads
with what it gives up: ``ACCEPTS A NEW BASELINE: 9 cases given up, 0 gained
(0.375 -> 0.000)``.

>>> from tnsai_eval.reports._model import MetricStats, Report, TestStatus, TrackedTest
>>> score = {"score": MetricStats("score", (1.0,))}
>>> run = Report((TrackedTest("t.py::a", TestStatus.PASSED, score),))
>>> gate_verdict(run, None).headline
'PASS: nothing to gate (no baseline)'
>>> gate_verdict(run, None, exit_status=2).headline
'FAIL: pytest exited 2 (interrupted: a collection error, or stopped)'
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tnsai_eval.reports._compare import (
    ChangeKind,
    Comparison,
    EvidenceKind,
    Shortfall,
    count_labels,
)
from tnsai_eval.reports._gate import GateSettings, SettingChange
from tnsai_eval.reports._model import Report, TestStatus
from tnsai_eval.settings import ACCEPT_LABEL

__all__ = [
    "ACCEPT_LABEL",
    "EXIT_MEANINGS",
    "PR_GATE_KEY",
    "GateCheck",
    "GateVerdict",
    "PullRequestGate",
    "describe_missing",
    "gate_verdict",
]

#: The key of a gate baseline's ``config`` that carries ``PullRequestGate``.
PR_GATE_KEY = "pr_gate"
#: What pytest's exit statuses mean (``pytest.ExitCode``), for the verdict.
EXIT_MEANINGS = {
    1: "a test failed",
    2: "interrupted: a collection error, or stopped",
    3: "an internal error",
    4: "a usage error",
    5: "no tests collected",
}


@dataclass(frozen=True, slots=True)
class PullRequestGate:
    """What ``tnsai-eval ci baseline`` decided for a pull request, carried with its baseline.

    ``mode``: ``unchanged`` (the PR leaves the baseline alone), ``rewritten``
    (it changes it without the label: gated against the base's anyway),
    ``accepted`` (it changes it and carries the label: gated against its
    own), ``first`` (the base has no baseline yet: nothing to gate).
    ``settings`` are the gate settings of the base commit's configuration;
    ``labelled`` says whether the PR carries ``label``.
    """

    mode: str
    base: str
    label: str = ACCEPT_LABEL
    labelled: bool = False
    settings: GateSettings = field(default_factory=GateSettings)

    def to_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "base": self.base,
            "label": self.label,
            "labelled": self.labelled,
            "settings": self.settings.to_dict(),
        }

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> PullRequestGate | None:
        """The decision a gate baseline's ``config`` carries (``None``: not a PR gate's)."""
        data = config.get(PR_GATE_KEY)
        if not isinstance(data, Mapping):
            return None
        settings = GateSettings.from_dict(data.get("settings"))
        mode, base = data.get("mode"), data.get("base")
        if settings is None or not isinstance(mode, str) or not isinstance(base, str):
            return None
        return cls(
            mode=mode,
            base=base,
            label=str(data.get("label") or ACCEPT_LABEL),
            labelled=data.get("labelled") is True,
            settings=settings,
        )

    def judge_with(self, run: GateSettings) -> tuple[GateSettings, tuple[SettingChange, ...]]:
        """The settings a run with its own ``run`` settings is judged by, and what it changed.

        The base's, unless the PR carries the label: then its own, accepted.
        """
        changes = self.settings.changes(run)
        return (run if self.labelled else self.settings), changes


@dataclass(frozen=True, slots=True)
class GateCheck:
    """One gated score (or a test's status) and the gate's verdict on it.

    ``reason`` is empty when it passed, else what failed it: ``regressed:
    ...``, ``missing evidence: ...``, ``failed test: ...``.
    """

    nodeid: str
    metric: str
    passed: bool
    reason: str = ""

    @property
    def name(self) -> str:
        """Its JUnit testcase name: ``tnsai gate: <test> (<metric>)``."""
        return f"tnsai gate: {self.nodeid} ({self.metric})"


@dataclass(frozen=True, slots=True)
class GateVerdict:
    """The gate's decision on one run, in the words every output uses.

    ``headline``: one line, ``PASS: ...``, ``FAIL: ...`` or ``ACCEPTS ...``;
    ``checks``: one per gated score (and per failed test without one);
    ``problems``: what fails the run as a whole (pytest's exit status,
    changed gate settings); ``accepted``: what the accept label let through.
    """

    passed: bool
    headline: str
    checks: tuple[GateCheck, ...] = ()
    problems: tuple[str, ...] = ()
    accepted: tuple[str, ...] = ()

    @property
    def failing(self) -> tuple[GateCheck, ...]:
        """The checks that failed."""
        return tuple(c for c in self.checks if not c.passed)


def gate_verdict(
    report: Report,
    comparison: Comparison | None,
    *,
    exit_status: int | None = None,
    pr: PullRequestGate | None = None,
    settings_changes: Sequence[SettingChange] = (),
    old_new: Comparison | None = None,
    problems: Sequence[str] = (),
) -> GateVerdict:
    """The gate's verdict on ``report`` (judged as ``comparison`` says; ``None``: no baseline).

    ``exit_status`` is pytest's (``None``: unknown, as for ``tnsai-eval
    report`` on a saved report); 2 to 5 never pass. ``pr`` is the pull
    request's decision, ``settings_changes`` what its run changed against the
    base's gate settings, ``old_new`` the PR's new baseline against the old
    one (accept mode): what it gives up leads the headline. ``problems`` are
    other reasons the run proves nothing (``pytest wrote no report``).
    """
    labelled = pr is not None and pr.labelled
    shortfalls = () if comparison is None else comparison.shortfalls
    # The label accepts scores that no longer run (a test removed on purpose)
    # and new gate settings; never unrun, errored or inconclusive cases.
    accepted_gone = [s for s in shortfalls if labelled and s.kind is EvidenceKind.ABSENT]
    missing = [s for s in shortfalls if s not in accepted_gone]
    checks = _checks(report, comparison, missing)
    failed_tests = [t for t in report.tests if t.status is TestStatus.FAILED]
    phrases: list[str] = list(problems)
    problems = list(problems)
    if comparison is not None and comparison.regressions:
        phrases.append(f"{len(comparison.regressions)} regression(s)")
    if missing:
        phrases.append("missing evidence: " + describe_missing(missing))
    if failed_tests:
        phrases.append(f"{len(failed_tests)} failed test(s)")
    if settings_changes and not labelled:
        label = pr.label if pr is not None else ACCEPT_LABEL
        phrases.append("gate settings changed")
        problems.append(
            "gate settings changed: "
            + "; ".join(str(c) for c in settings_changes)
            + f"; the base's apply (the label {label} accepts the change)"
        )
    # Exit 1 is accounted for by a failed test or the gate's own finding;
    # any other status (a collection error, no tests) is a failure of its own.
    explained = exit_status == 1 and bool(phrases)
    if exit_status not in (None, 0) and not explained:
        meaning = EXIT_MEANINGS.get(exit_status, "failed")
        phrases.append(f"pytest exited {exit_status} ({meaning})")
        problems.append(f"pytest exited {exit_status} ({meaning}): the run proved nothing")
    accepted = [str(s) for s in accepted_gone]
    if labelled:
        accepted.extend(f"gate setting {c}" for c in settings_changes)
    if phrases:
        headline = "FAIL: " + "; ".join(phrases)
    else:
        headline = _passing_headline(comparison, pr, old_new, accepted_gone, settings_changes)
    return GateVerdict(not phrases, headline, tuple(checks), tuple(problems), tuple(accepted))


def describe_missing(shortfalls: Sequence[Shortfall]) -> str:
    """Missing evidence summed up by kind: ``2 errored (ServerError HTTP 500)``.

    >>> describe_missing([Shortfall("t", "score", "x", EvidenceKind.ERRORED, 2,
    ...                             ("ServerError HTTP 500", "ServerError HTTP 500"))])
    '2 errored (ServerError HTTP 500)'
    """
    parts: list[str] = []
    for kind, phrase in _MISSING.items():
        found = [s for s in shortfalls if s.kind is kind]
        if found:
            cases, scores = sum(s.cases for s in found), len(found)
            labels = count_labels(label for s in found for label in s.errors)
            parts.append(phrase.format(cases=cases, scores=scores, labels=labels))
    return ", ".join(parts)


#: How each kind of missing evidence is summed up, in ``EvidenceKind``'s order.
_MISSING = {
    EvidenceKind.NOT_RUN: "{cases} case(s) not run",
    EvidenceKind.ERRORED: "{cases} errored ({labels})",
    EvidenceKind.INCONCLUSIVE: "{scores} inconclusive score(s)",
    EvidenceKind.ABSENT: "{scores} gated score(s) did not run",
    EvidenceKind.TEST_ERROR: "{scores} score(s) of errored test(s)",
}


def _passing_headline(
    comparison: Comparison | None,
    pr: PullRequestGate | None,
    old_new: Comparison | None,
    accepted_gone: Sequence[Shortfall],
    settings_changes: Sequence[SettingChange],
) -> str:
    labelled = pr is not None and pr.labelled
    if labelled and old_new is not None:
        return "ACCEPTS A NEW BASELINE: " + _given_up(old_new)
    if labelled and (accepted_gone or settings_changes):
        parts = []
        if accepted_gone:
            parts.append(f"{len(accepted_gone)} gated score(s) that no longer run")
        if settings_changes:
            parts.append("new gate settings (" + "; ".join(str(c) for c in settings_changes) + ")")
        return "ACCEPTS " + ", ".join(parts)
    if comparison is None:
        return "PASS: nothing to gate (no baseline)"
    if pr is not None and pr.mode == "first" and not comparison.judged:
        return "PASS: nothing to gate (the base branch has no baseline yet)"
    if comparison.dropped:
        return f"PASS: no regressions; {len(comparison.dropped)} dropped score(s) not significant"
    return "PASS: no regressions"


def _given_up(old_new: Comparison) -> str:
    """``9 cases given up, 0 gained (0.375 -> 0.000)``: the new baseline against the old."""
    changes = [c for cmp in old_new.cases for c in cmp.changes]
    broken = sum(len(cmp.broken) for cmp in old_new.cases)
    fixed = sum(len(cmp.fixed) for cmp in old_new.cases)
    text = f"{broken} case(s) given up, {fixed} gained"
    if changes:
        before = math.fsum(c.baseline_score for c in changes) / len(changes)
        after = math.fsum(c.current_score for c in changes) / len(changes)
        return f"{text} ({before:.3f} -> {after:.3f})"
    moved = [c for c in old_new.judged if c.kind is not ChangeKind.UNCHANGED]
    if len(moved) == 1:
        return f"{text} ({moved[0].baseline:.3f} -> {moved[0].current:.3f})"
    return text


def _checks(
    report: Report, comparison: Comparison | None, missing: Sequence[Shortfall]
) -> list[GateCheck]:
    """One check per gated score of either run (and per failed test without one)."""
    reasons: dict[tuple[str, str], list[str]] = {}

    def key(nodeid: str, metric: str) -> list[str]:
        return reasons.setdefault((nodeid, metric), [])

    for test in report.tests:
        for name, metric in test.metrics.items():
            if metric.gate:
                key(test.nodeid, name)
    if comparison is not None:
        for change in comparison.judged:
            found = key(change.nodeid, change.metric)
            if change.kind is ChangeKind.REGRESSED:
                found.append(
                    f"regressed: {change.baseline:.3f} -> {change.current:.3f} "
                    f"(allowed drop {change.allowed:g})"
                )
    for s in missing:
        key(s.nodeid, s.metric).append(f"missing evidence: {s.reason}")
    for test in report.tests:
        if test.status is TestStatus.FAILED:
            own = [k for k in reasons if k[0] == test.nodeid] or [(test.nodeid, "status")]
            for k in own:
                key(*k).append(f"failed test: {test.message or 'failed'}")
    return [
        GateCheck(nodeid, metric, not found, "; ".join(found))
        for (nodeid, metric), found in reasons.items()
    ]
