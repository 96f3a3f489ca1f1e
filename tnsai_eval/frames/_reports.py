"""The pytest-report frames of ``tnsai_eval.frames`` (re-exported there)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import pandas as pd

from tnsai_eval.errors import ConfigError
from tnsai_eval.frames._base import PathLike, call_frame, require_columns
from tnsai_eval.reports import COMPARISON_COLUMNS, Report, compare, load_report

__all__ = [
    "COMPARISON_COLUMNS",
    "compare_reports",
    "comparison_frame",
    "load_report",
    "load_reports",
]


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


def comparison_frame(comparison: object) -> pd.DataFrame:
    """A ``reports.Comparison`` as one row per (test, metric) (``COMPARISON_COLUMNS``).

    ``baseline`` is the baseline's mean, ``current`` this run's mean with its
    95% interval (``current_low``, ``current_high``), ``delta`` = current -
    baseline; the list of columns is ``reports.COMPARISON_COLUMNS``, re-exported.

    Gated metrics present in both runs keep the comparison's ``kind``
    (``regressed``, ``improved``, ``unchanged``); tests and metrics that
    appeared or vanished get ``kind`` ``new`` or ``vanished`` and NaN values.
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
    order = {"regressed": 0, "new": 1, "vanished": 2, "improved": 3, "unchanged": 4}
    out = out.assign(_order=out["kind"].map(order)).sort_values(
        ["_order", "delta"], kind="stable", na_position="last"
    )
    return (
        out.drop(columns="_order").reset_index(drop=True).reindex(columns=list(COMPARISON_COLUMNS))
    )


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
