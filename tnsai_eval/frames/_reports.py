"""The pytest-report frames of ``tnsai_eval.frames`` (re-exported there)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import pandas as pd

from tnsai_eval.errors import ConfigError
from tnsai_eval.frames._base import PathLike, call_frame, require_columns
from tnsai_eval.reports import (
    COMPARISON_COLUMNS,
    Comparison,
    Report,
    compare,
    load_report,
    masked,
    read_report,
)

__all__ = [
    "CASE_DELTA_COLUMNS",
    "COMPARISON_COLUMNS",
    "REPORT_CASE_COLUMNS",
    "case_deltas",
    "compare_reports",
    "comparison_frame",
    "load_report",
    "load_reports",
    "report_cases",
]

#: The columns of ``report_cases``: one row per case record of every report
#: (``error`` and ``error_type`` say why a case in state ``error`` failed).
REPORT_CASE_COLUMNS = (
    "report", "nodeid", "metric", "case_id", "sample", "state", "score", "passed",
    "input", "expected", "output", "tokens", "cached", "latency_s", "reason",
    "error", "error_type",
)  # fmt: skip

#: The columns of ``case_deltas``: one row per case both runs recorded.
CASE_DELTA_COLUMNS = (
    "nodeid", "metric", "case_id", "input", "baseline", "current", "delta", "flip",
)  # fmt: skip


def load_reports(
    paths: Iterable[PathLike] | Mapping[str, PathLike], *, runs: Sequence[str] | None = None
) -> pd.DataFrame:
    """Several pytest JSON reports in one frame, with a leading ``run`` column.

    Each report is read with ``load_report``; ``run`` is the mapping's key, the
    matching item of ``runs``, or else the file's stem (e.g. the commit it was
    written for), so that trends across commits are one ``groupby("run")`` away.
    """
    if isinstance(paths, Mapping):
        named = [(str(k), Path(v)) for k, v in paths.items()]
    else:
        files = [Path(p) for p in paths]
        if runs is None:
            names = [f.stem for f in files]
        elif len(runs) != len(files):
            raise ConfigError(f"runs has {len(runs)} names for {len(files)} report paths")
        else:
            names = [str(r) for r in runs]
        named = list(zip(names, files, strict=True))
    if not named:
        raise ConfigError("load_reports needs at least one report path")
    frames = [load_report(path).assign(run=name) for name, path in named]
    out = pd.concat(frames, ignore_index=True)
    return out.loc[:, ["run", *[c for c in out.columns if c != "run"]]]


def comparison_frame(comparison: Comparison | pd.DataFrame) -> pd.DataFrame:
    """A ``reports.Comparison`` as one row per (test, metric) (``COMPARISON_COLUMNS``).

    ``baseline`` is the baseline's mean, ``current`` this run's mean with its
    95% interval (``current_low``, ``current_high``), ``delta`` = current -
    baseline; the list of columns is ``reports.COMPARISON_COLUMNS``, re-exported.

    Gated metrics present in both runs keep the comparison's ``kind``
    (``regressed``, ``inconclusive``, ``dropped``, ``improved``, ``unchanged``);
    tests and metrics that appeared or vanished get ``kind`` ``new`` or
    ``vanished`` and NaN values.
    Regressions come first, worst first. A frame that already has the columns
    is returned as is.
    """
    if isinstance(comparison, pd.DataFrame):
        require_columns(comparison, COMPARISON_COLUMNS, what="comparison frame")
        return comparison
    changes = call_frame(comparison, "to_dataframe", what="a reports.Comparison")
    listed = [
        (*_split_test_metric(name), kind)
        for kind in ("new", "vanished")
        for name in getattr(comparison, kind, ())
    ]
    extra = pd.DataFrame(listed, columns=["nodeid", "metric", "kind"])
    parts = [frame for frame in (changes, extra) if not frame.empty]
    out = pd.concat(parts, ignore_index=True) if parts else changes
    # Every column, even when only new or vanished tests were found (no deltas).
    out = out.reindex(columns=list(COMPARISON_COLUMNS))
    order = {"regressed": 0, "inconclusive": 1, "dropped": 2, "new": 3, "vanished": 4,
             "improved": 5, "unchanged": 6}  # fmt: skip
    out = out.assign(_order=out["kind"].map(order)).sort_values(
        ["_order", "delta"], kind="stable", na_position="last"
    )
    return out.drop(columns="_order").reset_index(drop=True)


def _split_test_metric(name: str) -> tuple[str, str | None]:
    # reports.Comparison names a metric added to or dropped from a test that is
    # in both runs as "nodeid :: metric"; a whole test is just its nodeid.
    nodeid, sep, metric = name.rpartition(" :: ")
    return (nodeid, metric) if sep else (name, None)


def compare_reports(
    current: Report | PathLike, baseline: Report | PathLike, *, tolerance: float = 0.05
) -> pd.DataFrame:
    """Compare two reports (paths or ``Report`` objects) as the CI gate does.

    Runs ``tnsai_eval.reports.compare`` (same tolerance and interval rules as
    ``--tnsai-baseline``) and returns its ``comparison_frame``.
    """
    return comparison_frame(compare(current, baseline, tolerance=tolerance))


def report_cases(
    reports: Report | PathLike | Iterable[Report | PathLike] | Mapping[str, Report | PathLike],
) -> pd.DataFrame:
    """Every case record of one or more reports in one tidy frame (``REPORT_CASE_COLUMNS``).

    ``report`` names the report: the mapping's key, else the file's stem (or
    ``"report"`` for a ``Report`` object, numbered when there are several).
    Texts are masked for secrets. A version 1 report has no case records and
    adds no rows.

    >>> from tnsai_eval.reports import CaseRecord, TestStatus, TrackedTest
    >>> test = TrackedTest("t::a", TestStatus.PASSED,
    ...                    cases=(CaseRecord("c1", "2+2", "4", "4", 1.0, True),))
    >>> report_cases({"main": Report(tests=(test,))})[["report", "case_id", "passed"]]
      report case_id  passed
    0   main      c1    True
    """
    if isinstance(reports, Report | str | os.PathLike):
        named: list[tuple[str, Report | PathLike]] = [(_name(reports, 0), reports)]
    elif isinstance(reports, Mapping):
        named = [(str(k), v) for k, v in reports.items()]
    else:
        named = [(_name(r, i), r) for i, r in enumerate(reports)]
    rows = [
        {
            "report": name,
            "nodeid": test.nodeid,
            "metric": case.metric,
            "case_id": case.id,
            "sample": case.sample,
            "state": case.state.value,
            "score": case.score,
            "passed": case.passed,
            "input": masked(case.input),
            "expected": masked(case.expected),
            "output": masked(case.output),
            "tokens": case.tokens,
            "cached": case.cached,
            "latency_s": case.latency_s,
            "reason": masked(case.reason),
            "error": masked(case.error),
            "error_type": case.error_type,
        }
        for name, source in named
        for test in read_report(source).tests
        for case in test.cases
    ]
    return pd.DataFrame(rows, columns=list(REPORT_CASE_COLUMNS))


def _name(source: object, index: int) -> str:
    if isinstance(source, Report):
        return "report" if index == 0 else f"report{index + 1}"
    return Path(str(source)).stem


def case_deltas(
    current: Report | PathLike | Comparison, baseline: Report | PathLike | None = None
) -> pd.DataFrame:
    """Per-case score change against the baseline (``CASE_DELTA_COLUMNS``), worst first.

    Takes a ``reports.Comparison``, or two reports to compare. ``flip`` is
    ``broken``, ``fixed`` or ``""``; unrecorded, new and vanished cases are
    left out (see the comparison for them).
    """
    if isinstance(current, Comparison):
        comparison = current
    else:
        if baseline is None:
            raise ConfigError("case_deltas needs a baseline report, or a Comparison")
        comparison = compare(current, baseline)
    rows = [
        {
            "nodeid": change.nodeid,
            "metric": change.metric,
            "case_id": change.id,
            "input": masked(change.input),
            "baseline": change.baseline_score,
            "current": change.current_score,
            "delta": change.delta,
            "flip": change.flip,
        }
        for cmp in comparison.cases
        for change in cmp.changes
    ]
    frame = pd.DataFrame(rows, columns=list(CASE_DELTA_COLUMNS))
    return frame.sort_values("delta", kind="stable").reset_index(drop=True)
