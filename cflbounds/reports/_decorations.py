"""What surrounds a figure's data area: the legend under it, category names (or their key),
the labels of reference lines beside it, and the measurements that place them.

Sizes are in points as printed: the report draws an A4 page at its real size, so what is
legible here is legible on paper.
"""
from __future__ import annotations

from itertools import groupby

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.transforms import offset_copy

from ._text import safe_label, text_width, wrap

__all__ = ["renderer", "inches", "category_labels", "reference_lines", "reference_labels", "legend_below",
           "group_size", "LEGEND_FONTSIZE", "TITLE_FONTSIZE"]

LEGEND_FONTSIZE = 8  # points, as printed
TITLE_FONTSIZE = 10
CATEGORY_FONTSIZE = 9
MAX_CATEGORY_LINES = 3  # a category name needing more lines moves to a key under the axes
REFERENCE_WIDTH = 1.0  # inches: the widest line of a label beside the axes


def renderer(figure: Figure):
    """A renderer to measure ``figure``'s artists with (an Agg canvas if it has none; a
    subfigure's is its root figure's)."""
    figure = figure.figure  # a Figure is its own
    canvas = figure.canvas if isinstance(figure.canvas, FigureCanvasAgg) else FigureCanvasAgg(figure)
    return canvas.get_renderer()


def inches(ax) -> tuple[float, float]:
    """The axes' box (width, height) in inches."""
    return ax.bbox.width / ax.figure.dpi, ax.bbox.height / ax.figure.dpi


def category_labels(ax, names: list[str], positions) -> None:
    """Category names under their slots, wrapped to the slot's width; when one needs more
    than ``MAX_CATEGORY_LINES`` lines or a word wider than the slot, the slots are numbered
    and a key under the axes names them."""
    names = [safe_label(n) for n in names]
    slot = inches(ax)[0] / max(len(names), 1) - 0.08
    wrapped = [wrap(n, slot, CATEGORY_FONTSIZE, keep_groups=True) for n in names]
    words_fit = all(text_width(w, CATEGORY_FONTSIZE) <= slot for n in names for w in n.split())
    if words_fit and max(map(len, wrapped)) <= MAX_CATEGORY_LINES:
        ax.set_xticks(positions, ["\n".join(lines) for lines in wrapped], fontsize=CATEGORY_FONTSIZE)
        return
    ax.set_xticks(positions, [str(i) for i in range(1, len(names) + 1)], fontsize=CATEGORY_FONTSIZE)
    width = inches(ax)[0]
    key = ["\n     ".join(wrap(f"{i}: {n}", width, LEGEND_FONTSIZE, keep_groups=True)) for i, n in enumerate(names, 1)]
    axis_label = ax.get_xlabel()
    ax.set_xlabel("\n".join(([f"{axis_label}, numbered:"] if axis_label else []) + key), fontsize=LEGEND_FONTSIZE,
                  multialignment="left")


def reference_lines(ax, references: list) -> None:
    """Reference lines: ``{"y": v}`` across the axes, ``{"x": v}`` up it (drawn before the
    limits are settled, so that autoscaling keeps them in view)."""
    style = {"color": "black", "linewidth": 1.1, "linestyle": (0, (4, 2, 1, 2)), "zorder": 1.5}
    for ref in references:
        if "y" in ref:
            ax.axhline(float(ref["y"]), **style)
        else:
            ax.axvline(float(ref["x"]), **style)


def reference_labels(ax, references: list, raise_by: float) -> None:
    """Each reference line's label: right of the axes for a ``y`` line, wrapped to a narrow
    column so that the data area stays wide; above the axes for an ``x`` line, ``raise_by``
    points higher (over the row of non-finite points)."""
    for ref in references:
        text = safe_label(ref.get("label", ""))
        if "y" in ref:
            ax.annotate("\n".join(wrap(text, REFERENCE_WIDTH, LEGEND_FONTSIZE, keep_groups=True)),
                        xy=(1.0, float(ref["y"])), xycoords=("axes fraction", "data"), xytext=(4, 0),
                        textcoords="offset points", ha="left", va="center", fontsize=LEGEND_FONTSIZE,
                        annotation_clip=False)
        else:
            ax.annotate(text, xy=(float(ref["x"]), 1.0), xycoords=("data", "axes fraction"), xytext=(0, 3 + raise_by),
                        textcoords="offset points", ha="center", va="bottom", fontsize=LEGEND_FONTSIZE,
                        annotation_clip=False)


def _row_major(items: list, columns: int) -> list:
    """``items`` reordered so that matplotlib, which fills a legend column by column (the
    first columns one longer when they do not divide), shows them row by row."""
    return [item for j in range(columns) for item in items[j::columns]]


def legend_below(ax, handles, labels, unit: int = 1):
    """A legend under the axes' x tick labels and label, read row by row, in as many columns
    as fit the axes' width (a multiple of ``unit`` when one fits, so that the ``unit`` series
    of a group, e.g. measured and bound, share a row; entries wider than the axes wrap);
    anchored in inches, so it follows the axes when a layout moves or resizes them."""
    fig = ax.figure
    ax.get_xlim(), ax.get_ylim()  # settle autoscaling before measuring the tick labels
    axis = ax.xaxis.get_tightbbox(renderer(fig))
    depth = (ax.bbox.y0 - min(axis.y0, ax.bbox.y0)) / fig.dpi + 0.06
    width = inches(ax)[0]
    handle, spacing = 2.8 * LEGEND_FONTSIZE / 72, 1.2 * LEGEND_FONTSIZE / 72  # inches: 2 em + 0.8 em pad; 1.2 em
    labels = ["\n".join(wrap(label, width - handle, LEGEND_FONTSIZE, keep_groups=True)) for label in labels]
    entries = [max(text_width(line, LEGEND_FONTSIZE) for line in label.split("\n")) + handle for label in labels]
    row = lambda n: sum(max(entries[j::n]) for j in range(n)) + spacing * (n - 1)  # a row's width in n columns
    fitting = [n for n in range(len(entries), 0, -1) if n == 1 or row(n) <= width]
    columns = next((n for n in fitting if n % unit == 0), fitting[0])
    anchor = offset_copy(ax.transAxes, fig=fig, y=-depth, units="inches")
    handles, labels = _row_major(handles, columns), _row_major(labels, columns)
    return ax.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), bbox_transform=anchor,
                     ncols=columns, fontsize=LEGEND_FONTSIZE, frameon=False, borderaxespad=0.0, handlelength=2.0,
                     columnspacing=1.2)


def group_size(series: list) -> int:
    """How many consecutive series each ``group`` has when all groups have the same number
    (2 for measured-and-bound pairs), else 1; series without a group are left out."""
    groups = [s["group"] for s in series if s.get("group") is not None]
    runs = [len(list(run)) for _, run in groupby(groups)]
    return runs[0] if runs and len(set(runs)) == 1 and len(runs) == len(set(groups)) else 1
