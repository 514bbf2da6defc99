"""Tick labels a reader can read: log axes labelled between their decades, and no two labels
running into each other.

matplotlib labels a log axis at its decades only, or, when it spans under about two decades,
also at 2, 3, 4, 6 ...: at a printed width those run together ("3x10^2 4x10^2"), and an axis
from M = 1 to 32 is labelled only at 10^0 and 10^1. Here a log axis drawn over a few data
positions is labelled at those positions in plain numbers (1, 2, 4, ..., 32); any other log
axis at its decades and, when they give fewer than three labels, at 1-2-5 steps (then at
every integer multiple). Last, labels are dropped, every other one, until none overlaps its
neighbour, measured with the figure's renderer at the axes' printed size.
"""
from __future__ import annotations

import numpy as np
from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullFormatter

from ._decorations import renderer

__all__ = ["label_log_axis", "thin_overlapping", "plain_number"]

MAX_DATA_TICKS = 12  # a log axis over at most this many distinct positions is labelled at them
GAP = 3.0  # points between neighbouring labels


def _scientific(value: float) -> str:
    exponent = int(np.floor(np.log10(abs(value))))
    mantissa = round(value / 10.0 ** exponent, 2)
    return f"$10^{{{exponent}}}$" if mantissa == 1 else f"${mantissa:g}\\times10^{{{exponent}}}$"


def plain_number(value: float, plain: bool = True) -> str:
    """``value`` as a tick label: plain (``0.05``, ``1600``) if ``plain``, else
    ``2x10^5`` in mathtext."""
    return f"{value:g}" if plain or value == 0 else _scientific(value)


def _formatter(axis) -> FuncFormatter:
    """Labels in plain numbers when the axis' view lies within 1e-3 and 1e5, else all
    scientific: one axis, one notation."""
    def label(value, _position=None):
        low, high = sorted(abs(v) for v in axis.get_view_interval())
        return plain_number(value, 1e-3 <= low and high < 1e5)
    return FuncFormatter(label)


def _in_view(axis, locations) -> np.ndarray:
    low, high = sorted(axis.get_view_interval())
    locations = np.asarray(locations, dtype=float)
    return locations[(locations >= low * (1 - 1e-9)) & (locations <= high * (1 + 1e-9))]


def label_log_axis(axis, positions=None) -> None:
    """Label a log ``axis`` (a matplotlib ``XAxis``/``YAxis``) at ``positions`` when they are
    few (the data's x values), else at its decades, or 1-2-5 steps when decades give fewer
    than three labels; minor ticks stay unlabelled."""
    positions = np.unique([p for p in (positions if positions is not None else []) if np.isfinite(p) and p > 0])
    if 2 <= positions.size <= MAX_DATA_TICKS and _in_view(axis, positions).size >= 2:
        axis.set_major_locator(FixedLocator(positions))
    else:
        for subs in ((1.0,), (1.0, 2.0, 5.0), (1.0, 2.0, 3.0, 5.0), tuple(range(1, 10))):
            locator = LogLocator(base=10.0, subs=subs)
            if _in_view(axis, locator.tick_values(*sorted(axis.get_view_interval()))).size >= 3:
                break
        axis.set_major_locator(locator)
    axis.set_major_formatter(_formatter(axis))
    axis.set_minor_locator(LogLocator(base=10.0, subs="auto"))
    axis.set_minor_formatter(NullFormatter())


def _labels(axis) -> list:
    """The axis' major tick labels drawn now (inside the view, with text), in order."""
    low, high = sorted(axis.get_view_interval())
    ticks = [tick for tick in axis.get_major_ticks(len(axis.get_majorticklocs()))]
    axis.get_majorticklabels()  # brings the ticks' texts up to date
    shown = [(tick.get_loc(), tick.label1) for tick in ticks
             if low <= tick.get_loc() <= high and tick.label1.get_visible() and tick.label1.get_text()]
    return sorted(shown, key=lambda pair: pair[0])


def _overlapping(boxes, horizontal: bool, gap: float) -> bool:
    for a, b in zip(boxes, boxes[1:]):
        if (b.x0 - a.x1 if horizontal else b.y0 - a.y1) < gap:
            return True
    return False


def thin_overlapping(axis) -> None:
    """Keep every other major label of ``axis`` (the half with more decades among them) until
    neighbours are at least :data:`GAP` points apart, or two labels are left."""
    figure = axis.axes.figure
    horizontal = axis.axis_name == "x"
    gap = GAP * figure.dpi / 72
    for _ in range(6):
        shown = _labels(axis)
        boxes = [label.get_window_extent(renderer(figure)) for _, label in shown]
        if len(shown) <= 2 or not _overlapping(boxes, horizontal, gap):
            return
        decades = [np.isclose(np.log10(abs(location)) % 1, 0) if location else False for location, _ in shown]
        kept = shown[1::2] if sum(decades[1::2]) > sum(decades[::2]) else shown[::2]  # keep the decades labelled
        axis.set_ticks([location for location, _ in kept], labels=[label.get_text() for _, label in kept])
