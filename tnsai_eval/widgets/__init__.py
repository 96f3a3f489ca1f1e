"""Notebook views over results (ipywidgets): thin layers over ``frames`` and ``plots``.

Import this package explicitly (``from tnsai_eval.widgets import ...``):
``import tnsai_eval`` never imports ipywidgets. Each view keeps its state in
ordinary widgets (``HTML``, ``Image``, sliders, buttons) exposed as
attributes, so it can be driven and inspected from Python, and displays
itself when it is the last expression of a cell.

- ``OptimizerDashboard``: runs a prompt optimization with live progress.
- ``RefinementExplorer``: a slider over a refinement run's iterations.
- ``FeedbackPanel``: thumbs, corrections and preferences into a FeedbackStore.
- ``ReportBrowser``: pytest JSON reports, baseline comparison, filters, plots.
"""

from tnsai_eval.widgets._feedback import FeedbackPanel
from tnsai_eval.widgets._optimizer import OptimizerDashboard
from tnsai_eval.widgets._refinement import RefinementExplorer
from tnsai_eval.widgets._reports import ReportBrowser

__all__ = ["FeedbackPanel", "OptimizerDashboard", "RefinementExplorer", "ReportBrowser"]
