"""The PDF report: page 1 the verdicts at a glance, then a page per claim, written with
matplotlib's ``PdfPages``.

What a page holds is decided in :mod:`.content`; this module lays it out. Pages are A4
``Figure`` objects filled top to bottom by ``_Flow``: text is wrapped to the page width, and a
block or table row that does not fit moves to a continuation page (tables repeat their
header there). A figure is drawn at its printed size (:mod:`._fitting`). A claim gets at most
about 1.2 pages (:data:`BUDGET`): its essential blocks always, then its optional ones (further
figures, the rest of the evidence, notes) only where they fit on a page it has anyway,
within the budget, and a line
naming what was left to the HTML report; a
claim that takes more than a page is laid out again, compact (smaller figures, the evidence
three pairs to a row), and printed so if that fits one page; one that still spills a little
onto a second page prints fewer evidence quantities (the others go to the HTML report) rather
than leave a near-empty page. Extra figures (IFCA.F2's Fig. 2 panels) become a page
after their claim. No pyplot state and no LaTeX are used.
"""
from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_pdf import PdfPages
from matplotlib.figure import Figure
from matplotlib.layout_engine import ConstrainedLayoutEngine
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle

from .. import __version__
from .._words import plural
from ._fitting import data_height, draw_fitted, place
from ._text import one_line, text_width, wrap, wrap_code
from .content import VERDICT_COLORS, Code, Paragraph, Plot, Table, entries_of, run_summary, with_evidence_shown

__all__ = ["build_report", "report_pages", "VERDICT_COLORS"]

PAGE_WIDTH, PAGE_HEIGHT = 8.27, 11.69  # A4 portrait, inches
MARGIN = 0.6
TEXT_WIDTH = PAGE_WIDTH - 2 * MARGIN
TEXT_HEIGHT = PAGE_HEIGHT - 2 * MARGIN
LEADING = 1.35  # line height in font sizes
PAD = 0.03  # cell padding, inches
BUDGET = 1.2  # pages a claim may take (its essential blocks may take more)
CODE_FONTSIZE = 7.5
SPILL = 0.3  # a second page holding less than this share of a text area is a spill: the evidence is shortened
MIN_EVIDENCE = 9  # evidence quantities kept however little room a page has
NOTE_ROOM = 0.3  # inches kept under a claim's optional blocks for the line naming what was left out
COMPACT_FIGURE = 0.7  # a compact page's figures: this share of their height
LONG_TABLE = 18  # a quantity-value table with more rows is printed three pairs to a row
ROW_GAP = 0.3  # inches between two figures side by side
_STYLE = {"lead": {"fontsize": 10}, "body": {"fontsize": 9.5}, "muted": {"fontsize": 8.5, "color": "0.35"},
          "caption": {"fontsize": 8.5, "color": "0.15"}}


class _Flow:
    """Places blocks top to bottom on A4 pages, opening a new page when one is full; what it
    placed since a :meth:`mark` can be taken back (:meth:`rollback`)."""

    def __init__(self, header: str, page: Figure | None = None, compact: bool = False):
        self.header = header
        self.compact = compact
        self.pages: list[Figure] = []
        self.new_page(page)

    def new_page(self, page: Figure | None = None) -> None:
        """Start a page (``page`` if given, else a new A4 figure); continuation pages get a header."""
        page = page or Figure(figsize=(PAGE_WIDTH, PAGE_HEIGHT))
        if self.pages:
            page.text(MARGIN, PAGE_HEIGHT - 0.35, one_line(f"{self.header} (continued)", TEXT_WIDTH, 8),
                      fontsize=8, color="0.4", va="top", transform=page.dpi_scale_trans, parse_math=False)
        self.pages.append(page)
        self.top = PAGE_HEIGHT - MARGIN

    def used(self) -> float:
        """Pages filled so far, in text heights (1.5: one page and half the next)."""
        return len(self.pages) - 1 + (PAGE_HEIGHT - MARGIN - self.top) / TEXT_HEIGHT

    def mark(self) -> tuple:
        page = self.pages[-1]
        return len(self.pages), self.top, len(page.texts), len(page.artists), len(page.axes)

    def rollback(self, mark: tuple) -> None:
        """Remove what was placed after ``mark``: the pages opened since and the artists added."""
        pages, top, texts, artists, axes = mark
        del self.pages[pages:]
        page = self.pages[-1]
        for artist in page.texts[texts:] + page.artists[artists:] + page.axes[axes:]:
            artist.remove()
        self.top = top

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
        for line in wrap(text, TEXT_WIDTH, fontsize, style.get("weight", "normal")):
            page, top = self.take(fontsize * LEADING / 72)
            page.text(MARGIN, top, line, fontsize=fontsize, va="top", parse_math=False,
                      transform=page.dpi_scale_trans, **style)
        self.top -= gap

    def heading(self, text: str, room: float = 1.0) -> None:
        """A section heading, kept on the same page as at least ``room`` inches of what follows."""
        if not self.fits(room + 0.3):
            self.new_page()
        self.text(text, fontsize=10.5, gap=0.03, weight="bold")

    def code(self, text: str) -> None:
        """Monospace lines on a light grey band, kept as written (tracebacks, commands)."""
        line = CODE_FONTSIZE * LEADING / 72
        for row in wrap_code(text, TEXT_WIDTH - 2 * PAD, CODE_FONTSIZE):
            page, top = self.take(line)
            page.add_artist(Rectangle((MARGIN, top - line), TEXT_WIDTH, line, facecolor="0.94", edgecolor="none",
                                      transform=page.dpi_scale_trans, zorder=-1))
            page.text(MARGIN + PAD, top - 0.01, row, fontsize=CODE_FONTSIZE, family="monospace", va="top",
                      parse_math=False, transform=page.dpi_scale_trans)
        self.top -= 0.12

    def chips(self, items: list[tuple[str, str]], fontsize: float = 9) -> None:
        """Labels on coloured rounded boxes, left to right, wrapping onto further rows."""
        height, x = fontsize * 2.0 / 72, MARGIN + 0.06
        page, top = self.take(height)
        for text, color in items:
            width = text_width(text, fontsize, "bold") + 0.3
            if x + width > MARGIN + TEXT_WIDTH:
                page, top = self.take(height)
                x = MARGIN + 0.06
            page.text(x, top - height / 2, text, fontsize=fontsize, weight="bold", va="center", parse_math=False,
                      transform=page.dpi_scale_trans, bbox={"boxstyle": "round,pad=0.3", "facecolor": color,
                                                            "edgecolor": "none"})
            x += width
        self.top -= 0.12

    def plot(self, *specs: dict) -> None:
        """Figure specs side by side (one: the text width, more: shares of it by their
        ``"share"``, 1 if unset), each at its printed size (:func:`._fitting.draw_fitted`) with
        the first one's data height, moved below the page's last block, or onto a new page
        when they do not fit there."""
        scale = COMPACT_FIGURE if self.compact else 1.0
        height = data_height(specs[0], scale)
        specs = [{**spec, "height": height / scale} for spec in specs]
        shares = np.array([float(spec.get("share", 1.0)) for spec in specs])
        widths = (TEXT_WIDTH - ROW_GAP * (len(specs) - 1)) * shares / shares.sum()
        lefts = MARGIN + np.concatenate([[0.0], np.cumsum(widths + ROW_GAP)])

        def draw():
            return [draw_fitted(self.pages[-1], spec, left, width, MARGIN, scale)
                    for spec, left, width in zip(specs, lefts, widths)]

        drawn = draw()
        below, above = max(b for _, b, _ in drawn), max(a for _, _, a in drawn)
        if not self.fits(above + height + below):
            for ax, _, _ in drawn:
                ax.remove()
            self.new_page()
            drawn = draw()
            below, above = max(b for _, b, _ in drawn), max(a for _, _, a in drawn)
        page, top = self.take(above + height + below)
        for ax, _, _ in drawn:
            x0, _, box_width, _ = ax.get_position(original=True).bounds  # a vertical move changes nothing else
            place(ax, x0 * PAGE_WIDTH, top - above - height, box_width * PAGE_WIDTH, height)
        self.top -= 0.2

    def table(self, columns: list[str], rows: list[list[str]], widths: list[float],
              fills: list[list] | None = None, fontsize: float = 8) -> None:
        """A table with wrapped cells; ``widths`` are fractions of the text width and
        ``fills`` per-cell background colors (None for none). A row that does not fit moves
        to the next page whole, unless it is taller than a page: then it is split. The
        header is repeated on continuation pages."""
        edges = MARGIN + TEXT_WIDTH * np.concatenate([[0.0], np.cumsum(widths)])
        line = fontsize * LEADING / 72
        header = [wrap(c, (b - a) - 2 * PAD, fontsize, "bold") for c, a, b in zip(columns, edges, edges[1:])]
        header_height = max(map(len, header)) * line + 2 * PAD
        most = int((TEXT_HEIGHT - header_height - 2 * PAD) / line)  # lines of a row on a page
        body = [([wrap(c, (b - a) - 2 * PAD, fontsize) for c, a, b in zip(row, edges, edges[1:])], fill)
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

    def block(self, block) -> None:
        """One block of :mod:`.content`, with its heading."""
        if isinstance(block, Plot):
            self.plot(block.spec, *([block.beside] if block.beside is not None else []))
            if block.caption:
                self.top += 0.1  # the caption belongs to the figure above it
                self.text(block.caption, gap=0.15, **_STYLE["caption"])
        elif isinstance(block, Paragraph):
            if block.title:
                self.heading(block.title, room=0.4)
            self.text(block.text, gap=0.12, **_STYLE[block.role])
        elif isinstance(block, Code):
            if block.title:
                self.heading(block.title, room=0.3)
            self.code(block.text)
        elif isinstance(block, Table):
            if block.title:
                self.heading(block.title, room=0.6)
            self.table(*_folded(block, 3 if self.compact or len(block.rows) > LONG_TABLE else 2),
                       fontsize=7 if self.compact else 8)
        else:
            raise TypeError(f"unknown report block {type(block).__name__}")


def _folded(table: Table, pairs: int) -> tuple:
    """A quantity-value table with more than its ``fold_after`` rows as ``pairs`` pairs per
    row (read down each pair of columns), else as it is: (columns, rows, widths, fills)."""
    if not table.pairs or len(table.rows) <= table.fold_after:
        return table.columns, table.rows, table.widths, table.fills
    per_column = -(-len(table.rows) // pairs)
    parts = [table.rows[i * per_column:(i + 1) * per_column] for i in range(pairs)]
    rows = [sum((part[r] if r < len(part) else ["", ""] for part in parts), []) for r in range(per_column)]
    widths = [w / pairs for _ in range(pairs) for w in table.widths]
    return table.columns * pairs, rows, widths, None


def _least_height(block, compact: bool) -> float:
    """Inches a block takes at the least: a figure its data area and a line of labels, a table
    its heading, header and a row, text its heading and a line."""
    if isinstance(block, Plot):
        return data_height(block.spec, COMPACT_FIGURE if compact else 1.0) + 0.5 + 0.3 * bool(block.caption)
    return 0.6 if isinstance(block, Table) else 0.35


def _left_out(blocks: list) -> str:
    """What a claim's page left out, in words: "2 more figures, details"."""
    figures = sum(isinstance(b, Plot) or (isinstance(b, Paragraph) and not b.title) for b in blocks)
    others = dict.fromkeys(b.title.split(":")[0].lower() for b in blocks
                           if not isinstance(b, Plot) and getattr(b, "title", ""))
    return ", ".join(([f"{figures} more figure{'s' if figures > 1 else ''}"] if figures else []) + list(others))


def _claim_pages(entry, companion: str, compact: bool = False) -> list[Figure]:
    """The page(s) of one claim: its name and verdict, the run facts, then its blocks within
    :data:`BUDGET` (see the module docstring); laid out again compact after a spill."""
    flow = _Flow(f"{entry.id}: {entry.verdict}", compact=compact)
    page, top = flow.take(15 * LEADING / 72)
    page.text(MARGIN, top, entry.id, fontsize=15, weight="bold", va="top", parse_math=False,
              transform=page.dpi_scale_trans)
    page.text(MARGIN + text_width(entry.id, 15, "bold") + 0.25, top - 0.03, entry.verdict, fontsize=11,
              weight="bold", va="top", parse_math=False, transform=page.dpi_scale_trans,
              bbox={"boxstyle": "round,pad=0.25", "facecolor": VERDICT_COLORS.get(entry.verdict, "white"),
                    "edgecolor": "none"})
    flow.top -= 0.08
    if entry.facts:
        flow.text(entry.facts, fontsize=8.5, color="0.35", gap=0.04)
    if entry.reproduce:
        flow.code(f"reproduce: {entry.reproduce}")
    left_out = []
    for block in sorted(entry.blocks, key=lambda block: block.optional):  # the essential first, each in order
        if block.optional and flow.used() + _least_height(block, compact) / TEXT_HEIGHT > BUDGET:
            left_out.append(block)  # cannot fit: not even drawn
            continue
        mark = flow.mark()
        flow.block(block)
        # no page opened for an extra block, and a line kept free for the note on what was left out
        if block.optional and (flow.used() > BUDGET or len(flow.pages) > mark[0] or flow.top - NOTE_ROOM < MARGIN):
            flow.rollback(mark)
            left_out.append(block)
    if left_out:
        flow.text(f"Left out here for room: {_left_out(left_out)}; {companion} shows the whole section.",
                  fontsize=8, color="0.35", style="italic")
    if len(flow.pages) > 1 and not compact:
        compacted = _claim_pages(entry, companion, compact=True)
        if len(compacted) < len(flow.pages):
            return compacted
        evidence = next((b for b in entry.blocks if isinstance(b, Table) and b.title == "Evidence"), None)
        if len(flow.pages) == 2 and flow.used() % 1 < SPILL and evidence is not None:
            for shown in range(len(evidence.rows) - 3, MIN_EVIDENCE - 1, -3):  # a compact row holds three
                trimmed = _claim_pages(with_evidence_shown(entry, shown), companion, compact=True)
                if len(trimmed) == 1:
                    return trimmed
    return flow.pages


def _summary_pages(summary, pages_of: dict, sections=()) -> list[Figure]:
    """Page 1: the title, the run's settings, the counts by verdict and one line per claim
    (with the page it starts on), then each ``(heading, text, columns, rows, widths)`` of
    ``sections`` (a sweep's report)."""
    flow = _Flow(summary.title)
    flow.text(summary.title, fontsize=18, weight="bold", gap=0.1)
    if summary.settings:
        flow.table(["setting", "value"], [[name, value] for name, value in summary.settings], [0.16, 0.84])
    if summary.lines:
        total = sum(n for _, n in summary.counts)
        flow.text(plural(total, "claim"), fontsize=11, weight="bold", gap=0.04)
        flow.chips([(f"{n} {name}", VERDICT_COLORS.get(name, "white")) for name, n in summary.counts])
        columns = ["claim", "verdict", "summary (the claim's page has it whole)", "page"]
        id_width = max(text_width(line.id, 8) for line in summary.lines) + 2 * PAD + 0.05
        verdict_width = max(text_width(line.verdict, 8) for line in summary.lines) + 2 * PAD + 0.05
        page_width = text_width("page", 8, "bold") + 2 * PAD + 0.05
        widths = [id_width, verdict_width, TEXT_WIDTH - id_width - verdict_width - page_width, page_width]
        rows = [[line.id, line.verdict, one_line(line.headline, widths[2] - 2 * PAD, 8), str(pages_of.get(line.id, ""))]
                for line in summary.lines]
        fills = [[None, VERDICT_COLORS.get(line.verdict), None, None] for line in summary.lines]
        flow.table(columns, rows, [w / TEXT_WIDTH for w in widths], fills)
    for heading, text, columns, rows, widths in sections:
        flow.heading(heading)
        if text:
            flow.text(text, fontsize=9, gap=0.1)
        flow.table(columns, rows, widths)
    return flow.pages


def _figure_page(figure: Figure, title: str, claim: str | None) -> Figure:
    """``figure`` made an A4 page: its claim's name, its title as a heading, and its content
    laid out (constrained layout) at its own height under them, inside the text area. Fonts
    keep their size, so a figure drawn for the text width prints as drawn."""
    height = min(figure.get_figheight(), TEXT_HEIGHT - 1.0)
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
        page.text(PAGE_WIDTH / 2, 0.3, f"{one_line(title, TEXT_WIDTH - 1.5, 8)} · page {i} of {len(pages)}",
                  fontsize=8, color="0.4", ha="center", parse_math=False, transform=page.dpi_scale_trans)


def report_pages(verdicts: list[dict], title: str, generated: datetime, extra_figures=(), sections=(),
                 metadata: dict | None = None, reproduce=None, companion: str = "report.html") -> list[Figure]:
    """Every page of the report, numbered: page 1 and ``sections``, each claim's pages, and
    each extra figure after its claim's pages (see :func:`build_report`)."""
    ids = {v.get("id") for v in verdicts}
    after: dict = {}
    for figure_title, figure, *claim in extra_figures:
        owner = claim[0] if claim and claim[0] in ids else None
        after.setdefault(owner, []).append(_figure_page(figure, figure_title, owner))
    claims, starts = [], {}
    for entry in entries_of(verdicts, reproduce):
        starts[entry.id] = len(claims)
        claims += _claim_pages(entry, companion) + after.pop(entry.id, [])
    claims += after.pop(None, [])
    summary = run_summary(verdicts, title, metadata, generated)
    first = len(_summary_pages(summary, {}, sections))
    pages = _summary_pages(summary, {claim: first + 1 + start for claim, start in starts.items()}, sections) + claims
    _number_pages(pages, title)
    return pages


def build_report(verdicts: list[dict], path, *, title: str = "cflbounds report", extra_figures=(),
                 sections=(), metadata: dict | None = None, reproduce=None, companion: str = "report.html") -> Path:
    """Write a PDF report of ``verdicts`` (``Verdict.to_dict()`` dicts, or ``Verdict``
    objects) to ``path``, creating its directory if needed.

    Page 1 has the verdicts at a glance: the run's settings (from ``metadata``, a
    verdicts.json's, when given), the counts by verdict and one line per claim with the page
    it starts on; then ``sections``, each ``(heading, text, columns, rows, widths)``: a
    heading, a paragraph (or None) and a table whose column ``widths`` are shares of the text
    width. Then each claim gets its page (:func:`_claim_pages`; ``reproduce(verdict)``, if
    given, the command that checks it again; ``companion`` names the report that holds what a
    page leaves out). Each
    ``(title, figure)`` or ``(title, figure, claim_id)`` of ``extra_figures`` becomes an A4
    page of its own, after the pages of claim ``claim_id`` when there is one in
    ``verdicts``, else at the end. Every page is numbered "page i of n". Returns the path.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    verdicts = [v.to_dict() if hasattr(v, "to_dict") else v for v in verdicts]
    generated = datetime.now(timezone.utc)
    pages = report_pages(verdicts, title, generated, extra_figures, sections, metadata, reproduce, companion)
    info = {"Title": title, "CreationDate": generated, "Creator": f"cflbounds {__version__}"}
    with PdfPages(path, metadata=info) as pdf:
        for page in pages:
            pdf.savefig(page)
    return path

