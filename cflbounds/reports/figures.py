"""Figures of the report: verdict figure specs and success-probability curves.

Drawn to be pasted into a paper: the legend (and a key for long category names) sits below
the axes, never over the data (:mod:`._decorations`); the series of one ``group`` (one M's
measured value and its bound) share a colour and a marker, measurements solid and bounds
dashed; a spec's ``ylim``/``xlim`` clip the axes, and points beyond them, or not finite
(diverged runs), are drawn as marked points at the edge and counted in the legend
(:mod:`._offscale`); ``reference`` lines (ratio = 1, a level delta, a threshold) are
labelled beside the axes; titles and long labels wrap at spaces, never inside parentheses;
what a verdict counts as failing (a series' ``fails`` flags) is drawn red (bars) or ringed
in red (points) and counted in the legend; a ``note`` (why the verdict reads as it does) and
the statement that several series coincide are printed above the data; log axes are labelled
between their decades and overlapping tick labels thinned (:mod:`._ticks`).

Everything here builds ``matplotlib.figure.Figure`` objects directly (no pyplot state),
so it works headless and from threads without selecting a backend.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
from matplotlib import colormaps
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator
from matplotlib.transforms import ScaledTranslation

from ..verify.stats import clopper_pearson
from ._decorations import (LEGEND_FONTSIZE, TITLE_FONTSIZE, category_labels, group_size, inches, legend_below, reference_labels,
                           reference_lines, renderer)
from ._offscale import NONFINITE_ROW, OffScale
from ._text import safe_label, wrap
from ._ticks import label_log_axis, thin_overlapping

__all__ = ["plot_from_spec", "has_plot_content", "spec_problem", "single_value", "success_probability_figure", "renderer",
           "FAIL_COLOR"]

COLORS = tuple(colormaps["tab10"].colors)
MARKERS = ("o", "s", "D", "P", "*", "h", "p", "8")  # triangles and X are kept for off-scale points
_STYLES = {"points": {"linestyle": "none"}, "line": {"linestyle": "-"}, "dashed": {"linestyle": "--", "marker": None},
           # open circles around points drawn by another series: what a verdict was decided by
           "ring": {"linestyle": "none", "marker": "o", "markersize": 13, "markerfacecolor": "none",
                    "markeredgewidth": 1.6, "zorder": 3}}
FEW_POINTS = 12  # intervals of a line with at most this many points are error bars, else a band
DODGE = 3.0  # points between the error bars of neighbouring series at one x
FAIL_COLOR = "#d62728"  # what the verdict counts as failing: a red bar, a red ring around a point
NOTE_FONTSIZE = 8


def _floats(values, size: int) -> np.ndarray:
    """``values`` as floats with None as NaN (and "inf"/"nan" strings of verdicts.json read
    back); ``size`` NaNs when ``values`` is missing."""
    if values is None:
        return np.full(size, np.nan)
    array = np.array([np.nan if v is None else v for v in values], dtype=float)
    if array.size != size:
        raise ValueError(f"plot spec: a series has {array.size} values for {size} x values")
    return array


def _looks(series: list) -> list[dict]:
    """Colour and marker per series: one pair per ``group`` (the label when there is none),
    in order; a series with its own ``color`` takes no pair from the cycle."""
    group = lambda i, s: s.get("group", s.get("label", i))
    groups = list(dict.fromkeys(group(i, s) for i, s in enumerate(series) if "color" not in s))
    looks = {g: {"color": COLORS[i % len(COLORS)], "marker": MARKERS[i % len(MARKERS)]} for i, g in enumerate(groups)}
    return [{"color": s["color"], "marker": "o"} if "color" in s else dict(looks[group(i, s)])
            for i, s in enumerate(series)]


def _dodge(container, points: float) -> None:
    """Shift an error bar container's artists ``points`` sideways (after autoscaling has seen
    them where they are: a shifted transform would hide them from it)."""
    for artist in container.get_children():
        artist.set_transform(artist.get_transform() + ScaledTranslation(points / 72, 0, artist.figure.dpi_scale_trans))


def _fails(series: dict, size: int) -> np.ndarray:
    """A series' ``fails`` flags (what its verdict counts as failing) as booleans."""
    flags = series.get("fails")
    if flags is None:
        return np.zeros(size, dtype=bool)
    if len(flags) != size:
        raise ValueError(f"plot spec: 'fails' has {len(flags)} flags for {size} values")
    return np.array([bool(flag) for flag in flags], dtype=bool)


class _Failing:
    """What a figure marks as failing: points (ringed in red at the end) and red bars,
    counted in one legend entry."""

    def __init__(self):
        self.points: list[tuple[float, float]] = []
        self.bars = 0

    def draw(self, ax) -> list[tuple]:
        """The red rings; (handle, label) for the legend when anything failed."""
        if self.points:
            xy = np.array(self.points)
            ax.scatter(xy[:, 0], xy[:, 1], s=170, facecolors="none", edgecolors=FAIL_COLOR, linewidths=1.6, zorder=3.5)
        count = len(self.points) + self.bars
        if not count:
            return []
        handle = (Patch(facecolor=FAIL_COLOR, edgecolor="black", linewidth=0.6) if self.bars else
                  Line2D([], [], linestyle="none", marker="o", markersize=9, markerfacecolor="none",
                         markeredgecolor=FAIL_COLOR, markeredgewidth=1.6))
        return [(handle, f"fails ({count})")]


def _draw_series(ax, x, series: dict, style: str, look: dict, off: OffScale, logx: bool, dodge: float,
                 failing: _Failing) -> None:
    """One series of a ``rate``/``line`` spec; None values are gaps, off-scale ones go to ``off``,
    failing ones to ``failing``. Intervals are error bars (``points`` style, or a short line)
    shifted ``dodge`` points sideways so that neighbouring series stay apart, else a band with
    its edges drawn."""
    y = _floats(series.get("y"), x.size)
    low, high = _floats(series.get("low"), x.size), _floats(series.get("high"), x.size)
    fails = _fails(series, x.size)
    if logx:
        x = np.where(x > 0, x, np.nan)
    keep = off.keep(x, y, look["color"])
    x, y, low, high = x[keep], y[keep], low[keep], high[keep]
    failing.points += list(zip(x[fails[keep]], y[fails[keep]]))
    style = series.get("style", style)
    if style not in _STYLES:
        raise ValueError(f"plot spec: unknown style {style!r}; expected one of {tuple(_STYLES)}")
    long_line = style == "line" and x.size > FEW_POINTS  # its markers would hide the line
    marker = series.get("marker", None if long_line else look["marker"])
    options = {"color": look["color"], "marker": marker, "markersize": 5, "label": safe_label(series.get("label", "")),
               **_STYLES[style]}
    has_interval = np.isfinite(low).any() or np.isfinite(high).any()
    if has_interval and (style == "points" or x.size <= FEW_POINTS):
        yerr = np.maximum([y - low, high - y], 0.0)  # NaN ends stay NaN: no bar drawn
        _dodge(ax.errorbar(x, y, yerr=yerr, capsize=3, **options), dodge)
        return
    (line,) = ax.plot(x, y, **options)
    if has_interval:
        band = np.isfinite(low) & np.isfinite(high)
        ax.fill_between(x, low, high, where=band, facecolor=line.get_color(), alpha=0.12, edgecolor=line.get_color(),
                        linewidth=0.6)


def _draw_bars(ax, x, series: list, looks: list, failing: _Failing) -> None:
    """Grouped bars, one group per x value (as a category), one bar per series; a failing
    bar is red."""
    positions = np.arange(len(x))
    width = 0.8 / len(series)
    for i, (s, look) in enumerate(zip(series, looks)):
        y = _floats(s.get("y"), len(x))
        low, high = _floats(s.get("low"), len(x)), _floats(s.get("high"), len(x))
        keep = np.isfinite(y)
        fails = _fails(s, len(x))[keep]
        yerr = np.maximum([y - low, high - y], 0.0)[:, keep]
        at = positions[keep] + (i - (len(series) - 1) / 2) * width
        colors = [FAIL_COLOR if fail else look["color"] for fail in fails]
        ax.bar(at, y[keep], width, yerr=yerr, capsize=3, color=colors, label=safe_label(s.get("label", "")),
               edgecolor=["black" if fail else "none" for fail in fails], linewidth=0.6)
        failing.bars += int(fails.sum())
    ax.set_xlim(-0.5, len(x) - 0.5)


def _draw_heatmap(ax, spec: dict) -> None:
    """A matrix as an image with a colorbar; ``boundaries`` (indices) draw group lines."""
    matrix = np.array([_floats(row, len(row)) for row in spec["matrix"]], dtype=float)
    if matrix.ndim != 2 or matrix.size == 0:
        raise ValueError("plot spec: a heatmap needs a non-empty 2-d 'matrix'")
    image = ax.imshow(matrix, cmap=spec.get("cmap", "viridis"), interpolation="nearest")
    bar = ax.figure.colorbar(image, cax=ax.inset_axes((1.03, 0.0, 0.04, 1.0)))  # follows the image's box
    bar.set_label(safe_label(spec.get("colorbar", "")))
    for boundary in spec.get("boundaries") or []:
        ax.axhline(boundary - 0.5, color="white", linewidth=1.0)
        ax.axvline(boundary - 0.5, color="white", linewidth=1.0)


def _draw_scatter(ax, series: list, looks: list, off: OffScale, equal: bool, failing: _Failing) -> None:
    """Points of each series (each with its own ``x`` and ``y``), one marker per group."""
    for s, look in zip(series, looks):
        x = _floats(s.get("x"), len(s.get("x") or []))
        y = _floats(s.get("y"), x.size)
        keep = off.keep(x, y, look["color"])
        failing.points += list(zip(x[keep & _fails(s, x.size)], y[keep & _fails(s, x.size)]))
        ax.scatter(x[keep], y[keep], marker=s.get("marker", look["marker"]), s=s.get("size", 24), color=look["color"],
                   label=safe_label(s.get("label", "")), alpha=0.85, linewidths=0)
    if equal:
        ax.set_aspect("equal", adjustable="datalim")


def has_plot_content(spec: dict) -> bool:
    """Whether a plot spec has something to draw (a heatmap's matrix, another kind's series)."""
    return bool(spec.get("matrix") if spec.get("kind") == "heatmap" else spec.get("series"))


def spec_problem(spec: dict) -> str | None:
    """Why ``spec`` cannot be drawn, or None: what its JSON Schema cannot say (a spec read back
    from a run's files has been checked against it, cflbounds/_schemas.py), that a series has
    one value per x value (as many flags in ``fails``, ends in ``low`` and ``high``) and that a
    heatmap's rows are of one length."""
    kind = spec.get("kind", "line")
    if kind == "heatmap":
        rows = {len(row) for row in spec.get("matrix") or []}
        return None if len(rows) <= 1 and 0 not in rows else "a heatmap's rows differ in length or are empty"
    for number, series in enumerate(spec.get("series") or [], 1):
        x = (series.get("x") or []) if kind == "scatter" else spec.get("x") or [] if kind == "bar" else \
            series.get("x", spec.get("x") or [])
        for key in ("y", "low", "high", "fails"):
            values = series.get(key)
            if values is not None and len(values) != len(x) and (key == "y" or kind != "scatter"):
                return f"its series {number} has {len(values)} values of {key!r} for {len(x)} x values"
    return None


def single_value(spec: dict) -> float | None:
    """The one value a bar chart shows when all its bars have it (one bar, or every margin
    exactly 1), else None: such a chart says in a picture what one sentence says."""
    if (spec or {}).get("kind") != "bar" or not spec.get("series"):
        return None
    values = np.concatenate([_floats(s.get("y"), len(s.get("y") or [])) for s in spec["series"]])
    values = values[np.isfinite(values)]
    if values.size == 0 or not np.allclose(values, values[0], rtol=1e-12, atol=0.0):
        return None
    return float(values[0])


def _coinciding(series: list, shared_x) -> str:
    """"the 2 series coincide ..." when every series of a line/rate spec (two or more, on
    one x) draws the same values, which would hide all but the last; else ""."""
    drawn = [s for s in series if s.get("style") != "ring" and "x" not in s]
    if len(drawn) < 2:
        return ""
    values = [_floats(s.get("y"), len(shared_x)) for s in drawn]
    if not all(np.array_equal(v, values[0], equal_nan=True) for v in values[1:]):
        return ""
    finite = values[0][np.isfinite(values[0])]
    constant = f" (every value {finite[0]:g})" if finite.size and np.all(finite == finite[0]) else ""
    return f"The {len(drawn)} series coincide{constant}: their markers lie on top of each other."


def _note(ax, text: str, pad: float) -> float:
    """``text`` wrapped to the axes' width above the data area, ``pad`` points over it;
    returns the points it takes (for the title to go above it)."""
    lines = wrap(safe_label(text), inches(ax)[0], NOTE_FONTSIZE, keep_groups=True)
    ax.annotate("\n".join(lines), xy=(0.0, 1.0), xycoords="axes fraction", xytext=(0, pad), textcoords="offset points",
                ha="left", va="bottom", fontsize=NOTE_FONTSIZE, style="italic", color="0.2", annotation_clip=False)
    return len(lines) * NOTE_FONTSIZE * 1.2 + 3


def plot_from_spec(spec: dict, ax=None) -> Figure:
    """Draw a verdict's figure spec on ``ax`` (a new figure if None); returns the figure.

    ``spec``: ``{"kind": "rate"|"line"|"bar"|"scatter"|"heatmap", "title", "note", "xlabel",
    "ylabel", "logx", "logy", "x": [...], "series": [{"label", "y", "low", "high", "style",
    "group", "color", "fails"}], "ylim": [low, high], "xlim": [low, high], "nonfinite_label",
    "reference": [{"y" or "x", "label"}]}``. Series of one ``group`` share colour and marker
    (style ``line``/``points`` for the measurement, ``dashed`` for its bound; ``ring``
    circles points another series drew, in the series' own ``color``); the legend keeps
    the series' order, a group on one row. ``low`` and ``high`` become error bars
    (``points`` style, the default for ``rate``, or a line of few points) or a band (a
    longer line); a series may carry its own ``x``; None values are gaps. ``ylim`` and
    ``xlim`` (either end may be None) clip the axes: values beyond them, and non-finite
    ones (named ``nonfinite_label``, e.g. "diverged"), are marked at the edge and counted
    in the legend. ``reference`` lines are the thresholds a verdict is decided by,
    labelled. A series' ``fails`` (one flag per value) marks what the verdict counts as
    failing: red bars, points ringed in red, counted in the legend. ``note`` is a sentence
    printed above the data: why the figure reads as its verdict does (e.g. a fit whose narrow
    interval excludes the claimed slope though the points lie near the line); series that
    all coincide are said to. ``scatter`` series each carry
    ``x`` and ``y`` (``"equal": true`` keeps the aspect ratio, e.g. for a map); ``heatmap``
    draws ``"matrix"`` (rows of numbers) with a ``"colorbar"`` label and optional
    ``"boundaries"`` between groups. ``"xinteger": true`` ticks a linear x axis at integers
    only (x values that count something: a fresh seed's number); ``"height"`` sets the
    printed data area's height in inches (:func:`._fitting.data_height`). An empty spec
    draws a "no plot for this claim" placeholder.
    """
    standalone = ax is None
    if standalone:
        ax = Figure(figsize=(6.4, 4.0), layout="constrained").add_subplot()
    spec = spec or {}
    series = spec.get("series") or []
    if not has_plot_content(spec):
        ax.text(0.5, 0.5, "no plot for this claim", ha="center", va="center", color="0.5",
                transform=ax.transAxes)
        ax.set_axis_off()
        return ax.figure
    kind = spec.get("kind", "line")
    logx, logy = bool(spec.get("logx")) and kind not in ("bar", "heatmap"), bool(spec.get("logy")) and kind != "heatmap"
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    looks, off, failing = _looks(series), OffScale(spec, logy), _Failing()
    if kind == "bar":
        _draw_bars(ax, list(spec.get("x", [])), series, looks, failing)
    elif kind == "heatmap":
        _draw_heatmap(ax, spec)
    elif kind == "scatter":
        _draw_scatter(ax, series, looks, off, bool(spec.get("equal")), failing)
    else:
        shared_x = spec.get("x", [])
        with_interval = [s for s in series if s.get("low") is not None or s.get("high") is not None]
        for s, look in zip(series, looks):
            own_x = s.get("x", shared_x)
            rank = next((i for i, t in enumerate(with_interval) if t is s), 0)
            _draw_series(ax, _floats(own_x, len(own_x)), s, "points" if kind == "rate" else "line", look, off, logx,
                         (rank - (len(with_interval) - 1) / 2) * DODGE, failing)
        ax.margins(x=0.06)  # points at the ends keep their error bars off the frame
    references = spec.get("reference") or []
    reference_lines(ax, references)
    for limits, set_limits in ((spec.get("ylim"), ax.set_ylim), (spec.get("xlim"), ax.set_xlim)):
        if limits:
            set_limits(*(list(limits) + [None, None])[:2])
    off_scale = off.draw(ax) + failing.draw(ax)
    raise_by = NONFINITE_ROW + 4 if off.points["nonfinite"] else 0.0
    reference_labels(ax, references, raise_by)
    ax.set_xlabel(safe_label(spec.get("xlabel", "")))
    ax.set_ylabel(safe_label(spec.get("ylabel", "")))
    if kind == "bar":
        category_labels(ax, [str(v) for v in spec.get("x", [])], np.arange(len(spec.get("x", []))))
    _label_ticks(ax, spec, kind, logx, logy)
    # vertical reference lines are labelled above the axes: the note, then the title go above their labels
    pad = 6.0 + raise_by + (LEGEND_FONTSIZE + 3 if any("x" in r for r in references) else 0)
    note = " ".join(filter(None, [spec.get("note"), _coinciding(series, spec.get("x", [])) if kind in ("line", "rate")
                                  else ""]))
    if note:
        pad += _note(ax, note, pad - 3)
    title = wrap(safe_label(spec.get("title") or ""), inches(ax)[0], TITLE_FONTSIZE, keep_groups=True)
    ax.set_title("\n".join(title).strip(), fontsize=TITLE_FONTSIZE, pad=pad)
    if kind != "heatmap":
        ax.grid(alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()  # by kind of artist: put them back in the spec's order
    order = {safe_label(s.get("label", "")): i for i, s in reversed(list(enumerate(series)))}
    ranked = sorted(zip(handles, labels), key=lambda pair: order.get(pair[1], len(order)))
    handles, labels = (list(column) for column in zip(*ranked, *off_scale)) if ranked or off_scale else ([], [])
    if labels:
        legend = legend_below(ax, handles, labels, group_size(series))
        if standalone:  # grow the figure by the legend, not shrink the data area
            height = legend.get_window_extent(renderer(ax.figure)).height / ax.figure.dpi
            ax.figure.set_figheight(4.0 + height)
    return ax.figure


def _label_ticks(ax, spec: dict, kind: str, logx: bool, logy: bool) -> None:
    """Log axes labelled between decades (at the data's x values when few), then overlapping
    labels thinned; a bar chart's categories are placed by :func:`category_labels`."""
    if logx:
        positions = spec.get("x") or [x for s in spec.get("series") or [] for x in (s.get("x") or [])]
        label_log_axis(ax.xaxis, _floats(positions, len(positions)) if len(positions) <= 64 else None)
    elif spec.get("xinteger"):  # a count (a fresh seed's number): no tick between two of them
        ax.xaxis.set_major_locator(MaxNLocator(integer=True, steps=[1, 2, 5, 10]))
    if logy:
        label_log_axis(ax.yaxis)
    if kind not in ("bar", "heatmap"):
        thin_overlapping(ax.xaxis)
    thin_overlapping(ax.yaxis)


def _panels(table: pd.DataFrame):
    """``(title, rows)`` per subplot: one per ``panel`` (and ``k``) value, if present."""
    keys = [c for c in ("panel", "k") if c in table.columns]
    if not keys:
        return [("", table)]
    panels = []
    for values, rows in table.groupby(keys, sort=True):
        parts = [f"k = {v}" if key == "k" else str(v) for key, v in zip(keys, values)]
        panels.append((", ".join(parts), rows))
    return panels


def success_probability_figure(table: pd.DataFrame, x: str, group: str, confidence: float = 0.95,
                               title: str | None = None, figure=None) -> Figure:
    """Success probability against ``x``, one line per ``group`` value (IFCA, Fig. 2).

    ``table`` has one row per trial with columns ``x``, ``group`` and ``success``
    (bool), optionally ``panel`` and ``k``: one subplot per (panel, k), two per row (an A4
    page's width). Each point is the observed frequency with its exact Clopper-Pearson
    interval at ``confidence``; the series of one panel are shifted sideways a little so
    that their intervals do not hide each other, and a panel whose lines all coincide says so
    (at 0 everywhere, the lines are one). The y axis reaches a little beyond 0 and 1, so that
    points there stay off the frame. Each panel has its legend under it, so that a panel can
    be taken on its own. ``title`` (e.g. the protocol variant) heads the figure, so that its
    image file says what it shows. ``figure``: a ``Figure`` or ``SubFigure`` to draw in (a new
    7-inch-wide figure if None).
    """
    missing = {x, group, "success"} - set(table.columns)
    if missing:
        raise ValueError(f"success_probability_figure: table lacks columns {sorted(missing)}")
    panels = _panels(table)
    ncols = min(len(panels), 2)
    nrows = math.ceil(len(panels) / ncols)
    fig = figure if figure is not None else Figure(figsize=(7.0, 3.4 * nrows + 0.2), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False, sharey=True).ravel()
    values = sorted(table[group].unique())
    looks = {value: {"color": COLORS[i % len(COLORS)], "marker": MARKERS[i % len(MARKERS)]}
             for i, value in enumerate(values)}
    for ax, (panel_title, rows) in zip(axes, panels):
        counts = rows.assign(success=rows["success"].astype(bool)).groupby([group, x])["success"].agg(["sum", "count"])
        frequencies = []
        for value, points in counts.groupby(level=0):
            successes, trials = points["sum"].to_numpy(), points["count"].to_numpy()
            low, high = clopper_pearson(successes, trials, confidence)
            frequency = successes / trials
            frequencies.append(frequency)
            container = ax.errorbar(points.index.get_level_values(1).to_numpy(), frequency,
                                    yerr=[frequency - low, high - frequency], capsize=3, markersize=5,
                                    label=safe_label(f"{group} = {value}"), **looks[value])
            _dodge(container, (values.index(value) - (len(values) - 1) / 2) * DODGE)
        ax.set_title(safe_label(panel_title), fontsize=TITLE_FONTSIZE)
        if len(frequencies) > 1 and all(np.array_equal(f, frequencies[0]) for f in frequencies[1:]):
            shared = f" at {frequencies[0][0]:g}" if np.all(frequencies[0] == frequencies[0][0]) else ""
            ax.text(0.5, 0.5, f"all {len(frequencies)} lines coincide{shared}", transform=ax.transAxes, ha="center",
                    va="center", fontsize=NOTE_FONTSIZE, style="italic", color="0.2")
        ax.set_xlabel(safe_label(x))
        ax.set_ylim(-0.05, 1.05)
        ax.margins(x=0.08)
        ax.grid(alpha=0.3)
        legend_below(ax, *ax.get_legend_handles_labels())
    # inside another figure (the report's Fig. 2 page) panels may be low: the interval goes to the title
    inside = figure is not None
    interval = f"{confidence:.0%} Clopper–Pearson"
    for ax in axes[::ncols]:
        ax.set_ylabel("success probability" if inside else f"success probability\n({interval})")
    for ax in axes[len(panels):]:  # an odd panel's empty neighbour
        ax.remove()
    if title or inside:
        fig.suptitle(safe_label(f"{title or ''} ({interval} intervals)" if inside else title), fontsize=TITLE_FONTSIZE)
    return fig
