"""A figure spec drawn at its printed size, for the PDF page and for the HTML page alike.

The data area has a fixed height (taller and square for a heatmap or a map) and is as wide as
the text width leaves once what surrounds it is measured: the y tick labels and label on the
left, reference labels and a colorbar on the right, the title and notes above, the legend
below. Drawing at the printed size is what keeps fonts at their stated size on paper and on
screen; measuring after drawing is what keeps every label inside the text width.
"""
from __future__ import annotations

from matplotlib.figure import Figure

from .figures import plot_from_spec, renderer

__all__ = ["AXES_HEIGHT", "SQUARE_HEIGHT", "data_height", "draw_fitted", "place", "spec_figure"]

AXES_HEIGHT = 2.6  # inches of data area of a figure; its title, labels and legend come on top
SQUARE_HEIGHT = 3.4  # a heatmap's or a map's data area (equal aspect: as wide as high)
EDGE = 0.05  # inches kept free around a standalone figure's ink


def data_height(spec: dict, scale: float = 1.0) -> float:
    """The data area's height in inches: the spec's own ``height`` if it sets one, else the
    default of its kind (``scale`` shrinks it for a compact page)."""
    square = spec.get("kind") == "heatmap" or spec.get("equal")
    return float(spec.get("height") or (SQUARE_HEIGHT if square else AXES_HEIGHT)) * scale


def _extents(ax) -> tuple[float, float, float, float]:
    """How far, in inches, what an axes draws (title, tick labels, legend, colorbar, labels
    of reference lines) reaches beyond its box: (left, right, below, above)."""
    dpi, inked = ax.figure.dpi, ax.get_tightbbox(renderer(ax.figure))
    box = ax.get_position(original=True).transformed(ax.figure.transFigure)  # the box it was given
    return ((box.x0 - inked.x0) / dpi, (inked.x1 - box.x1) / dpi, (box.y0 - inked.y0) / dpi, (inked.y1 - box.y1) / dpi)


def place(ax, x0: float, y0: float, width: float, height: float) -> None:
    """Put the axes' box at ``(x0, y0)`` with that size, all in inches of its figure."""
    figure_width, figure_height = ax.figure.get_size_inches()
    ax.set_position((x0 / figure_width, y0 / figure_height, width / figure_width, height / figure_height))


def draw_fitted(figure, spec: dict, x0: float, width: float, y0: float, scale: float = 1.0):
    """Draw ``spec`` on ``figure`` inside ``width`` inches from ``x0``, its data area's bottom at
    ``y0`` (inches): drawn once with a guess of the room beside the axes, then again with the
    room measured (at most three times). Returns the axes and how far its decorations reach
    below and above the data area, in inches."""
    height = data_height(spec, scale)
    left, right = 0.9, 0.3  # a first guess of the room for the y labels and the colorbar
    for attempt in range(3):
        ax = figure.add_axes((0, 0, 1, 1))
        place(ax, x0 + left, y0, width - left - right, height)
        ax.set_anchor("W")  # an equal-aspect box (a heatmap) shrinks towards the left edge
        plot_from_spec(spec, ax=ax)
        reach_left, reach_right, below, above = _extents(ax)
        fits = reach_left <= left and reach_right <= right
        tight = left - reach_left < 0.1 and right - reach_right < 0.1
        if (fits and (tight or attempt > 0)) or attempt == 2:
            return ax, below, above
        ax.remove()
        left, right = max(reach_left, 0.0) + 0.04, max(reach_right, 0.0) + 0.04


def spec_figure(spec: dict, width: float) -> Figure:
    """``spec`` as a figure of its own, ``width`` inches wide and as high as what it draws
    (the HTML report's figures, and what the figure tests measure)."""
    figure = Figure(figsize=(width, 12.0))
    ax, below, above = draw_fitted(figure, spec, EDGE, width - 2 * EDGE, 6.0)
    x0, _, box_width, _ = ax.get_position(original=True).bounds
    height = data_height(spec)
    figure.set_size_inches(width, below + height + above + 2 * EDGE)
    place(ax, x0 * width, below + EDGE, box_width * width, height)
    return figure
