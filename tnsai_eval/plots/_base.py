"""Colours and helpers shared by ``tnsai_eval.plots`` and its private modules."""

from __future__ import annotations

import io
import textwrap

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from tnsai_eval._util.secrets import mask
from tnsai_eval._util.text import no_surrogates

__all__ = [
    "BASE_COLOR",
    "CURRENT_COLOR",
    "PASS_COLOR",
    "REGRESSION_COLOR",
    "nodeid_label",
    "plain",
    "score_axis",
    "short",
    "to_png",
]

#: Colour of regressed tests (and failed checks), so that a glance finds them.
REGRESSION_COLOR = "#d62728"
PASS_COLOR = "#2ca02c"
BASE_COLOR = "#9e9e9e"
CURRENT_COLOR = "#1f77b4"
# The longest test label on a chart axis.
_LABEL_CHARS = 36


def to_png(fig: Figure, *, dpi: int = 100) -> bytes:
    """The figure as PNG bytes (for widgets, HTML pages and files)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
    return buffer.getvalue()


def plain(text: object) -> str:
    """``text`` as a figure may show it: masked, encodable, and never math.

    Matplotlib reads text between two ``$`` as mathtext (``test_env[$A_$B]``
    failed to parse and took the page down); an escaped ``\\$`` is a dollar.

    >>> plain("test_env[$A_$B]")
    'test_env[\\\\$A_\\\\$B]'
    """
    return no_surrogates(mask(str(text))).replace("$", r"\$")


def short(text: object, width: int) -> str:
    """``text`` on one line, cut to ``width`` characters with an ellipsis (masked first)."""
    flat = " ".join(no_surrogates(mask(str(text))).split())
    return textwrap.shorten(flat, width=width, placeholder="…").replace("$", r"\$")


def score_axis(ax: Axes) -> None:
    """A [0, 1] score axis with a light grid."""
    # Scores live in [0, 1]; a fixed axis makes figures of different runs comparable.
    ax.set_ylim(-0.02, 1.02)
    ax.grid(True, alpha=0.3)


def nodeid_label(nodeid: object, metric: object, *, show_metric: bool) -> str:
    """A test's axis label: the end of its node id, and its metric when asked."""
    # Node ids are long paths; their end (file::test[param]) is what tells tests apart.
    # Kept short so that long names do not squeeze the plot: the full node ids are in
    # the tables beside every such chart (the HTML report's, the widgets').
    text = " ".join(no_surrogates(mask(str(nodeid))).split())
    text = text if len(text) <= _LABEL_CHARS else "…" + text[-(_LABEL_CHARS - 1) :]
    # Masked before the cut above (a key cut in two could not be found), and
    # the metric by plain().
    label = f"{text} · {metric}" if show_metric and isinstance(metric, str) else text
    return plain(label)
