"""Notebook views over results (ipywidgets): thin layers over ``frames`` and ``plots``.

Import this package explicitly (``from tnsai_eval.widgets import ...``):
neither ``import tnsai_eval`` nor ``import tnsai_eval.widgets`` imports
ipywidgets: the first view looked up does. Each view keeps its state in
ordinary widgets (``HTML``, ``Image``, sliders, buttons) exposed as
attributes, so it can be driven and inspected from Python, and displays
itself when it is the last expression of a cell.

- ``OptimizerDashboard``: runs a prompt optimization with live progress.
- ``RefinementExplorer``: a slider over a refinement run's iterations.
- ``FeedbackPanel``: thumbs, corrections and preferences into a FeedbackStore.
- ``ReportBrowser``: pytest JSON reports, baseline comparison, filters, plots.
- ``TrajectoryExplorer``: one case of an agent's run at a time, step by step.

For committed notebooks, ``add_static_snapshots`` and ``normalize_widget_ids``
(used by ``notebooks/execute.py``) put an HTML snapshot of each widget, made
from the saved widget state, after its output, and make widget ids stable;
``snapshot_html`` renders one widget.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tnsai_eval.widgets._feedback import FeedbackPanel
    from tnsai_eval.widgets._optimizer import OptimizerDashboard
    from tnsai_eval.widgets._refinement import RefinementExplorer
    from tnsai_eval.widgets._reports import ReportBrowser
    from tnsai_eval.widgets._snapshot import (
        add_static_snapshots,
        normalize_widget_ids,
        snapshot_html,
    )
    from tnsai_eval.widgets._trajectory import TrajectoryExplorer

__all__ = [
    "FeedbackPanel",
    "OptimizerDashboard",
    "RefinementExplorer",
    "ReportBrowser",
    "TrajectoryExplorer",
    "add_static_snapshots",
    "normalize_widget_ids",
    "snapshot_html",
]

# ipywidgets (and the widget comm machinery it sets up) is imported on first use of
# a view, not by ``import tnsai_eval.widgets``: scripts and the CLI that only touch
# the package (an ``isinstance`` check, a docs build) stay free of it.
_MODULES = {
    "FeedbackPanel": "_feedback",
    "OptimizerDashboard": "_optimizer",
    "RefinementExplorer": "_refinement",
    "ReportBrowser": "_reports",
    "TrajectoryExplorer": "_trajectory",
    # Pure JSON work on saved notebooks: no ipywidgets import.
    "add_static_snapshots": "_snapshot",
    "normalize_widget_ids": "_snapshot",
    "snapshot_html": "_snapshot",
}


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
