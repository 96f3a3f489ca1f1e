"""Reading drawn figures back in tests, typed: what matplotlib's stubs leave wide."""

from __future__ import annotations

from matplotlib.axes import Axes
from matplotlib.patches import Rectangle

__all__ = ["bars"]


def bars(ax: Axes) -> list[Rectangle]:
    """The bars of ``ax`` (its patches, each checked to be a bar), in drawing order.

    ``Axes.patches`` is typed as plain ``Patch``es; a bar chart draws ``Rectangle``s,
    which have the width and height the tests read.
    """
    patches = list(ax.patches)
    assert all(isinstance(p, Rectangle) for p in patches), patches
    return [p for p in patches if isinstance(p, Rectangle)]
