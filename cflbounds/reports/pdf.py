"""Multi-page PDF reports of verdicts, written with matplotlib's ``PdfPages``.

Pages are A4 ``Figure`` objects laid out top to bottom by ``_Flow``: text is wrapped to
the page width, and a block or table row that does not fit moves to a continuation page
(tables repeat their header there). A figure is drawn at its printed size: its axes are
placed after measuring what surrounds them (title, tick labels, the legend below), so
nothing leaves the text area. Extra figures (Fig. 2 panels) become A4 pages placed after
the claim they belong to, and every page is counted in the "page i of n" footer. No pyplot
state and no LaTeX are used.
"""
from __future__ import annotations

import numbers
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_pdf import PdfPages
from matplotlib.figure import Figure
from matplotlib.layout_engine import ConstrainedLayoutEngine
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle

from .. import __version__
from ..verify.verdict import figure_specs
from ._text import one_line as _one_line
from ._text import wrap as _wrap
from .figures import has_plot_content, plot_from_spec, renderer

__all__ = ["build_report", "VERDICT_COLORS"]

PAGE_WIDTH, PAGE_HEIGHT = 8.27, 11.69  # A4 portrait, inches
MARGIN = 0.6
TEXT_WIDTH = PAGE_WIDTH - 2 * MARGIN
LEADING = 1.35  # line height in font sizes
PAD = 0.04  # cell padding, inches
AXES_HEIGHT = 2.6  # inches of data area of a figure; its title, labels and legend come on top
SQUARE_HEIGHT = 3.4  # a heatmap's or a map's data area (equal aspect: as wide as high)

VERDICT_COLORS = {
    "holds": "#8fd19e",
    "rate-consistent": "#8fd19e",
    "violated": "#f1948a",
    "rate-inconsistent": "#f1948a",
    "vacuous": "#f8c471",
    "unsatisfiable": "#f8c471",
    "inconclusive": "#b0b0b0",
    "not-implemented": "#e6e6e6",
    "error": "#c39bd3",  # the claim's own code failed: not judged
    "no counterexample found": "#aed6f1",  # cflbounds falsify: the search and its confirmation found none
}


def _fmt(value) -> str:
    """Numbers to 4 significant digits (integers exactly; inf and nan by name), None as a dash,
    lists per item."""
    if value is None:
        return "–"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        shown = ", ".join(_fmt(v) for v in value[:4])
        return f"[{shown}, … ({len(value)} values)]" if len(value) > 4 else f"[{shown}]"
    return str(value)


def _extents(ax) -> tuple[float, float, float, float]:
    """How far, in inches, what an axes draws (title, tick labels, legend, colorbar, labels
    of reference lines) reaches beyond its box: (left, right, below, above)."""
    dpi, inked = ax.figure.dpi, ax.get_tightbbox(renderer(ax.figure))
    box = ax.get_position(original=True).transformed(ax.figure.transFigure)  # the box the page gave it
    return ((box.x0 - inked.x0) / dpi, (inked.x1 - box.x1) / dpi, (box.y0 - inked.y0) / dpi, (inked.y1 - box.y1) / dpi)


class _Flow:
    """Places blocks top to bottom on A4 pages, opening a new page when one is full."""

    def __init__(self, header: str, page: Figure | None = None):
        self.header = header
        self.pages: list[Figure] = []
        self.new_page(page)

    def new_page(self, page: Figure | None = None) -> None:
        """Start a page (``page`` if given, else a new A4 figure); continuation pages get a header."""
        page = page or Figure(figsize=(PAGE_WIDTH, PAGE_HEIGHT))
        if self.pages:
            page.text(MARGIN, PAGE_HEIGHT - 0.35, _one_line(f"{self.header} (continued)", TEXT_WIDTH, 8),
                      fontsize=8, color="0.4", va="top", transform=page.dpi_scale_trans, parse_math=False)
        self.pages.append(page)
        self.top = PAGE_HEIGHT - MARGIN

    def fits(self, height: float) -> bool:
        """Whether ``height`` inches fit on the current page (always true on an empty one)."""
        return self.top - height >= MARGIN or self.top == PAGE_HEIGHT - MARGIN

    def take(self, height: float) -> tuple[Figure, float]:
        """Reserve ``height`` inches, on a new page if needed; returns the page and the top."""
        if not self.fits(height):
            self.new_page()
        self.top -= height
        return self.pages[-1], self.top + height

    def text(self, text, fontsize: float = 10, gap: float = 0.1, **style) -> None:
        """A wrapped paragraph, split across pages line by line if needed."""
        for line in _wrap(text, TEXT_WIDTH, fontsize, style.get("weight", "normal")):
            page, top = self.take(fontsize * LEADING / 72)
            page.text(MARGIN, top, line, fontsize=fontsize, va="top", parse_math=False,
                      transform=page.dpi_scale_trans, **style)
        self.top -= gap

    def heading(self, text: str) -> None:
        """A section heading, kept on the same page as at least an inch of what follows."""
        if not self.fits(1.0 + 0.3):
            self.new_page()
        self.text(text, fontsize=12, gap=0.05, weight="bold")

    def plot(self, spec: dict) -> None:
        """A verdict's figure spec at its printed size: drawn once to measure what surrounds
        the axes, then drawn again with the axes' box made to leave room for it inside the
        text width, and moved below the page's last block (or onto a new page)."""
        if not has_plot_content(spec or {}):
            page, top = self.take(0.6)
            plot_from_spec(spec, ax=page.add_axes((MARGIN / PAGE_WIDTH, (top - 0.6) / PAGE_HEIGHT,
                                                   TEXT_WIDTH / PAGE_WIDTH, 0.6 / PAGE_HEIGHT)))
            self.top -= 0.15
            return
        height = SQUARE_HEIGHT if spec.get("kind") == "heatmap" or spec.get("equal") else AXES_HEIGHT
        left, right = 0.9, 0.3  # a first guess of the room for the y labels and the colorbar
        for attempt in range(3):
            ax = self.pages[-1].add_axes(((MARGIN + left) / PAGE_WIDTH, MARGIN / PAGE_HEIGHT,
                                          (TEXT_WIDTH - left - right) / PAGE_WIDTH, height / PAGE_HEIGHT))
            ax.set_anchor("W")  # an equal-aspect box (a heatmap) shrinks towards the text's left edge
            plot_from_spec(spec, ax=ax)
            reach_left, reach_right, below, above = _extents(ax)
            fits = reach_left <= left and reach_right <= right
            tight = left - reach_left < 0.1 and right - reach_right < 0.1
            if (fits and (tight or attempt > 0)) or attempt == 2:
                break
            ax.remove()
            left, right = max(reach_left, 0.0) + 0.04, max(reach_right, 0.0) + 0.04
        if not self.fits(above + height + below):
            box = ax.get_position(original=True).bounds
            ax.remove()
            self.new_page()
            ax = self.pages[-1].add_axes(box)
            ax.set_anchor("W")
            plot_from_spec(spec, ax=ax)
        page, top = self.take(above + height + below)
        x0, _, width, _ = ax.get_position(original=True).bounds  # a vertical move changes nothing else
        ax.set_position((x0, (top - above - height) / PAGE_HEIGHT, width, height / PAGE_HEIGHT))
        self.top -= 0.2

    def table(self, columns: list[str], rows: list[list[str]], widths: list[float],
              fills: list[list] | None = None, fontsize: float = 8) -> None:
        """A table with wrapped cells; ``widths`` are fractions of the text width and
        ``fills`` per-cell background colors (None for none). A row that does not fit moves
        to the next page whole, unless it is taller than a page: then it is split. The
        header is repeated on continuation pages."""
        edges = MARGIN + TEXT_WIDTH * np.concatenate([[0.0], np.cumsum(widths)])
        line = fontsize * LEADING / 72
        header = [_wrap(c, (b - a) - 2 * PAD, fontsize, "bold") for c, a, b in zip(columns, edges, edges[1:])]
        header_height = max(map(len, header)) * line + 2 * PAD
        most = int((PAGE_HEIGHT - 2 * MARGIN - header_height - 2 * PAD) / line)  # lines of a row on a page
        body = [([_wrap(c, (b - a) - 2 * PAD, fontsize) for c, a, b in zip(row, edges, edges[1:])], fill)
                for row, fill in zip(rows, fills or [[None] * len(columns)] * len(rows))]
        first = min(max(map(len, body[0][0])), 3) if body else 0
        if not self.fits(header_height + first * line + 2 * PAD):
            self.new_page()
        self._row(header, header_height, edges, [None] * len(columns), fontsize, bold=True)
        for cells, fill in body:
            while cells:
                room, lines = int((self.top - MARGIN - 2 * PAD) / line), max(map(len, cells))
                if lines > room and (lines <= most or room < 3):
                    self.new_page()
                    self._row(header, header_height, edges, [None] * len(columns), fontsize, bold=True)
                    continue
                shown = min(lines, room)
                self._row([c[:shown] for c in cells], shown * line + 2 * PAD, edges, fill, fontsize)
                cells = [c[shown:] for c in cells] if shown < lines else []
        self.top -= 0.15

    def _row(self, row, height, edges, fill, fontsize, bold=False) -> None:
        page, top = self.take(height)
        inches = page.dpi_scale_trans
        for lines, a, b, color in zip(row, edges, edges[1:], fill):
            if color is not None:
                page.add_artist(Rectangle((a, top - height), b - a, height, facecolor=color,
                                          edgecolor="none", transform=inches, zorder=-1))
            for i, line in enumerate(lines):
                page.text(a + PAD, top - PAD - i * fontsize * LEADING / 72, line, fontsize=fontsize,
                          va="top", weight="bold" if bold else "normal", parse_math=False, transform=inches)
        page.add_artist(Line2D([edges[0], edges[-1]], [top - height] * 2, linewidth=1.0 if bold else 0.3,
                               color="0.3" if bold else "0.75", transform=inches))


def _run_settings(verdicts: list[dict]) -> dict[str, list[str]]:
    """Distinct scales and protocols of the verdicts (their ``scale`` field and details)."""
    found = {"scale": [], "protocol": []}
    for v in verdicts:
        for key, values in found.items():
            for value in (v.get(key), (v.get("details") or {}).get(key)):
                if value and str(value) not in values:
                    values.append(str(value))
    return {key: values for key, values in found.items() if values}


def _summary_pages(verdicts: list[dict], title: str, generated: datetime, sections=()) -> list[Figure]:
    """The first page(s): run settings, verdict counts and the table of verdicts (none without
    verdicts), then each ``(heading, text, columns, rows, widths)`` of ``sections``."""
    flow = _Flow(title)
    flow.text(title, fontsize=18, weight="bold", gap=0.05)
    flow.text(f"generated {generated:%Y-%m-%d %H:%M:%S %Z} by cflbounds {__version__}", fontsize=9, color="0.35")
    for key, values in _run_settings(verdicts).items():
        flow.text(f"{key}: {', '.join(values)}", fontsize=9, gap=0.02)
    if verdicts:
        counts = Counter(v.get("verdict", "") for v in verdicts)
        flow.text(f"{len(verdicts)} claims: " + ", ".join(f"{n} {name}" for name, n in counts.items()), fontsize=10,
                  gap=0.2)
        # the summary is the row's content, whole (the table wraps it); the numbers are short
        widths = [0.13, 0.14, 0.47, 0.08, 0.11, 0.07]
        rows = [[str(v.get("id", "")), str(v.get("verdict", "")), str(v.get("summary") or ""),
                 _fmt(v.get("trials")), _fmt(v.get("confidence")), _fmt(v.get("seed"))] for v in verdicts]
        fills = [[None, VERDICT_COLORS.get(v.get("verdict")), None, None, None, None] for v in verdicts]
        flow.table(["claim", "verdict", "summary", "trials", "confidence", "seed"], rows, widths, fills)
    for heading, text, columns, rows, widths in sections:
        flow.heading(heading)
        if text:
            flow.text(text, fontsize=9, gap=0.1)
        flow.table(columns, rows, widths)
    return flow.pages


def _verdict_pages(v: dict) -> list[Figure]:
    """The page(s) of one verdict: statement, summary, figure, assumptions, evidence, details."""
    flow = _Flow(f"{v.get('id', '')}: {v.get('verdict', '')}")
    flow.text(v.get("id", ""), fontsize=15, weight="bold", gap=0.12)
    flow.text(v.get("verdict", ""), fontsize=11, weight="bold", gap=0.12,
              bbox={"boxstyle": "round,pad=0.25", "facecolor": VERDICT_COLORS.get(v.get("verdict"), "white"),
                    "edgecolor": "none"})
    run = [f"{name} {_fmt(v.get(name))}" for name in ("trials", "confidence", "seed") if v.get(name) is not None]
    run += [f"scale {v['scale']}"] if v.get("scale") else []
    run += [f"{v['seconds']:.1f} s"] if v.get("seconds") else []
    flow.text(" · ".join(run), fontsize=9, color="0.35", gap=0.15)
    for name in ("statement", "summary"):
        if v.get(name):
            flow.heading(name.capitalize())
            flow.text(v[name], fontsize=10, gap=0.15)
    for spec in figure_specs(v.get("plot")) or [{}]:
        flow.plot(spec)
    if v.get("assumptions"):
        flow.heading("Assumptions")
        keys = ["name", "lhs", "relation", "rhs", "slack", "holds", "source"]
        rows = [[_fmt(a.get(k)) for k in keys] for a in v["assumptions"]]
        fills = [[None] * 5 + [VERDICT_COLORS["holds" if a.get("holds") else "violated"], None]
                 for a in v["assumptions"]]
        flow.table(keys, rows, [0.2, 0.11, 0.09, 0.12, 0.11, 0.07, 0.30], fills)
    if v.get("evidence"):
        flow.heading("Evidence")
        flow.table(["quantity", "value"], [[str(k), _fmt(x)] for k, x in v["evidence"].items()], [0.55, 0.45])
    if v.get("details"):
        flow.heading("Details")
        flow.table(["detail", "value"], [[str(k), str(x)] for k, x in v["details"].items()], [0.25, 0.75])
    return flow.pages


def _figure_page(figure: Figure, title: str, claim: str | None) -> Figure:
    """``figure`` made an A4 page: its claim's name, its title as a heading, and its content
    laid out (constrained layout) at its own height under them, inside the text area. Fonts
    keep their size, so a figure drawn for the text width prints as drawn."""
    height = min(figure.get_figheight(), PAGE_HEIGHT - 2 * MARGIN - 1.0)
    figure.set_size_inches(PAGE_WIDTH, PAGE_HEIGHT)
    if figure._suptitle is not None and figure._suptitle.get_text() == title:
        figure._suptitle.set_text("")  # the page's heading says it, inside the text area
    flow = _Flow(title, page=figure)
    if claim:
        flow.text(f"{claim} (continued)", fontsize=8, color="0.4", gap=0.1)
    flow.text(title, fontsize=12, weight="bold", gap=0.1)
    bottom = flow.top - height
    figure.set_layout_engine(ConstrainedLayoutEngine(rect=(MARGIN / PAGE_WIDTH, bottom / PAGE_HEIGHT,
                                                           TEXT_WIDTH / PAGE_WIDTH, height / PAGE_HEIGHT)))
    return figure


def _number_pages(pages: list[Figure], title: str) -> None:
    """A footer with the title and "page i of n" on every page."""
    for i, page in enumerate(pages, 1):
        page.text(PAGE_WIDTH / 2, 0.3, f"{_one_line(title, TEXT_WIDTH - 1.5, 8)} · page {i} of {len(pages)}",
                  fontsize=8, color="0.4", ha="center", parse_math=False, transform=page.dpi_scale_trans)


def report_pages(verdicts: list[dict], title: str, generated: datetime, extra_figures=(), sections=()) -> list[Figure]:
    """Every page of the report, numbered: the verdict table and ``sections``, each verdict's
    pages, and each extra figure after its claim's pages (see :func:`build_report`)."""
    ids = {v.get("id") for v in verdicts}
    after: dict = {}
    for figure_title, figure, *claim in extra_figures:
        owner = claim[0] if claim and claim[0] in ids else None
        after.setdefault(owner, []).append(_figure_page(figure, figure_title, owner))
    pages = _summary_pages(verdicts, title, generated, sections)
    for v in verdicts:
        pages += _verdict_pages(v) + after.pop(v.get("id"), [])
    pages += after.pop(None, [])
    _number_pages(pages, title)
    return pages


def build_report(verdicts: list[dict], path, *, title: str = "cflbounds report", extra_figures=(),
                 sections=()) -> Path:
    """Write a PDF report of ``verdicts`` (``Verdict.to_dict()`` dicts, or ``Verdict``
    objects) to ``path``, creating its directory if needed.

    Page 1 (and following if needed) summarises the verdicts in a colored table (if there are
    any), followed by ``sections``, each ``(heading, text, columns, rows, widths)``: a heading,
    a paragraph (or None) and a table whose column ``widths`` are shares of the text width; then
    each verdict gets its own page(s). Each ``(title, figure)`` or ``(title, figure,
    claim_id)`` of ``extra_figures`` becomes an A4 page of its own, after the pages of
    claim ``claim_id`` when there is one in ``verdicts``, else at the end. Every page is
    numbered "page i of n", n counting them all. Returns the path written.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    verdicts = [v.to_dict() if hasattr(v, "to_dict") else v for v in verdicts]
    generated = datetime.now(timezone.utc)
    pages = report_pages(verdicts, title, generated, extra_figures, sections)
    metadata = {"Title": title, "CreationDate": generated, "Creator": f"cflbounds {__version__}"}
    with PdfPages(path, metadata=metadata) as pdf:
        for page in pages:
            pdf.savefig(page)
    return path
