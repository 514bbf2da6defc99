"""``report.html``: the report as one self-contained page, to send to a co-author or attach to
a review.

Built from the same claim entries as the PDF (:mod:`.content`), with nothing left out for
room: every figure and every note. Figures are inline SVG (matplotlib's SVG backend, text as
paths, so no font is loaded); a little inline CSS lays the page out and a little inline
JavaScript sorts the verdict table by a column and filters it (and the claim sections) by
paper and verdict (a verdict sorts by severity, :func:`.content.severity`), and copies a command
(saying so when the browser refuses the clipboard, the text then selected to copy by hand).
Tables scroll sideways in a box of their own and every section links back to the summary, so
that the page reads on a phone (420 px) without scrolling sideways. Nothing is fetched: no external script, style, font
or image, and every link is to an anchor of the page itself (``#claim-IFCA.T1``).
"""
from __future__ import annotations

import io
import re
from datetime import datetime, timezone
from html import escape
from pathlib import Path

from matplotlib import rc_context
from matplotlib.backends.backend_svg import FigureCanvasSVG

from .._words import plural
from ._fitting import spec_figure
from .content import VERDICT_COLORS, Code, Paragraph, Plot, Table, entries_of, run_summary, severity

__all__ = ["build_html", "html_report", "figure_svg"]

FIGURE_WIDTH = 7.07  # inches: the PDF's text width, so a figure reads the same in both

_STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;max-width:60rem;margin:1.5rem auto;
padding:0 1rem;color:#111;line-height:1.45}
h1{font-size:1.7rem;margin:.2rem 0 .8rem}h2{font-size:1.3rem;margin:0 0 .3rem}h3{font-size:1.02rem;margin:1rem 0 .3rem}
.scroll{overflow-x:auto;max-width:100%;margin:.3rem 0 .8rem}
table{border-collapse:collapse;font-size:.85rem;width:100%}
th,td{border-bottom:1px solid #ccc;padding:.2rem .45rem;text-align:left;vertical-align:top;overflow-wrap:break-word}
th{border-bottom:2px solid #555}table.sortable th{cursor:pointer;user-select:none}
table.sortable th[aria-sort=ascending]::after{content:" \\25B2"}table.sortable th[aria-sort=descending]::after{content:" \\25BC"}
table.settings td{overflow-wrap:anywhere}
.chip{display:inline-block;border-radius:.4rem;padding:.05rem .5rem;font-weight:600;font-size:.9rem;margin-right:.3rem}
.facts,.muted{color:#555;font-size:.88rem}.lead{font-size:1rem}p{overflow-wrap:break-word}
section.claim{border-top:3px solid #ddd;margin-top:2rem;padding-top:.8rem}
.back{float:right;font-size:.85rem;font-weight:400;margin-left:.5rem}
pre{background:#f0f0f0;padding:.5rem .7rem;overflow-x:auto;font-size:.8rem;margin:.3rem 0}
.command{display:flex;gap:.5rem;align-items:flex-start}.command pre{flex:1;min-width:0;margin:.2rem 0}
button.copy{font-size:.8rem;margin-top:.25rem;max-width:8rem}
figure{margin:.6rem 0}figure svg{width:100%;height:auto}figcaption{font-weight:600;font-size:.9rem}
p.caption{font-size:.88rem;margin:.2rem 0 0}
.filters{margin:.6rem 0;font-size:.9rem;display:flex;flex-wrap:wrap;gap:.3rem 1rem}
#verdicts td:nth-child(3){white-space:nowrap}
@media (max-width:40rem){#verdicts tr{display:grid;grid-template-columns:minmax(6rem,auto) minmax(3rem,auto) 1fr;
border-bottom:1px solid #ccc}#verdicts th,#verdicts td{border-bottom:0}#verdicts thead tr{border-bottom:2px solid #555}
#verdicts th:nth-child(4),#verdicts td:nth-child(4){grid-column:1/-1;padding-top:0}}
"""

_SCRIPT = """
(function () {
  var table = document.getElementById("verdicts");
  if (table) {
    var body = table.tBodies[0];
    var headers = table.tHead.rows[0].cells;
    var key = function (row, column) {  // a cell's data-order (a verdict's severity) first, then its number or text
      var cell = row.cells[column], text = cell.textContent.trim(), number = parseFloat(text);
      if (cell.dataset.order !== undefined) { return parseFloat(cell.dataset.order); }
      return isNaN(number) || String(number) !== text ? text.toLowerCase() : number;
    };
    Array.prototype.forEach.call(headers, function (header, column) {
      header.addEventListener("click", function () {
        var ascending = header.getAttribute("aria-sort") !== "ascending";
        Array.prototype.forEach.call(headers, function (h) { h.removeAttribute("aria-sort"); });
        header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = key(a, column), y = key(b, column);
          if (typeof x !== typeof y) { x = String(x); y = String(y); }
          return (x < y ? -1 : x > y ? 1 : 0) * (ascending ? 1 : -1);
        });
        rows.forEach(function (row) { body.appendChild(row); });
      });
    });
    var paper = document.getElementById("filter-paper");
    var verdict = document.getElementById("filter-verdict");
    var filter = function () {
      var shown = function (element) {
        return (!paper.value || element.dataset.paper === paper.value) &&
               (!verdict.value || element.dataset.verdict === verdict.value);
      };
      Array.prototype.forEach.call(body.rows, function (row) { row.hidden = !shown(row); });
      Array.prototype.forEach.call(document.querySelectorAll("section.claim"), function (section) {
        section.hidden = !shown(section);
      });
    };
    paper.addEventListener("change", filter);
    verdict.addEventListener("change", filter);
  }
  Array.prototype.forEach.call(document.querySelectorAll("button.copy"), function (button) {
    button.addEventListener("click", function () {
      var code = button.parentNode.querySelector("code");
      var said = function (copied) {  // a failed write selects the text, for the reader to copy by hand
        button.textContent = copied ? "copied" : "not copied: the text is selected, press Ctrl+C";
      };
      var byHand = function () {
        var range = document.createRange();
        range.selectNodeContents(code);
        window.getSelection().removeAllRanges();
        window.getSelection().addRange(range);
        var copied = false;
        try { copied = document.execCommand("copy"); } catch (error) { copied = false; }
        said(copied);
      };
      if (navigator.clipboard && navigator.clipboard.writeText) {
        navigator.clipboard.writeText(code.textContent).then(function () { said(true); }, byHand);
      } else {
        byHand();
      }
    });
  });
})();
"""

_XML_PROLOGUE = re.compile(r"^.*?(?=<svg)", re.S)
_METADATA = re.compile(r"<metadata>.*?</metadata>\s*", re.S)
_IDS = re.compile(r'id="([^"]+)"')


# a point cloud of more markers than this goes into the SVG as an image, at _RASTER_DPI: as vectors
# it was most of a report's bytes (LCFL.E8's verdict figure: 453 of its 532 KB, 4,000 markers)
_RASTER_POINTS = 1000
_RASTER_DPI = 200


def figure_svg(figure, prefix: str) -> str:
    """``figure`` as an inline ``<svg>`` element: text drawn as paths (no font to load),
    point clouds of more than ``_RASTER_POINTS`` markers as an image (axes, text and lines stay
    vectors), no XML prologue or RDF metadata, and every id (clip paths, glyphs) prefixed with
    ``prefix`` so that the figures of one page never share one. The figure is given back as it
    came (the PDF draws it with vectors)."""
    buffer = io.StringIO()
    dense = [collection for axes in figure.axes for collection in axes.collections
             if len(collection.get_offsets()) > _RASTER_POINTS and not collection.get_rasterized()]
    dpi = figure.dpi
    try:
        for collection in dense:
            collection.set_rasterized(True)
        figure.dpi = _RASTER_DPI  # the images' resolution (the SVG's own units stay points)
        with rc_context({"svg.fonttype": "path"}):
            FigureCanvasSVG(figure).print_svg(buffer)
    finally:
        figure.dpi = dpi
        for collection in dense:
            collection.set_rasterized(False)
    svg = _METADATA.sub("", _XML_PROLOGUE.sub("", buffer.getvalue(), count=1))
    for name in sorted(set(_IDS.findall(svg)), key=len, reverse=True):
        svg = svg.replace(f'id="{name}"', f'id="{prefix}{name}"').replace(f"#{name})", f"#{prefix}{name})") \
                 .replace(f'"#{name}"', f'"#{prefix}{name}"')
    return svg.strip()


class _Page:
    """The HTML text of a report, written piece by piece; figures numbered for their ids."""

    def __init__(self):
        self.parts: list[str] = []
        self.figures = 0

    def add(self, *parts: str) -> None:
        self.parts.extend(parts)

    def figure(self, figure, caption: str = "", below: str = "") -> None:
        """A figure with ``caption`` (a title) above it and ``below`` (a note) under it."""
        self.figures += 1
        caption = f"<figcaption>{escape(caption)}</figcaption>" if caption else ""
        below = f'<p class="caption">{escape(below)}</p>' if below else ""
        self.add(f'<figure class="plot">{caption}{figure_svg(figure, f"f{self.figures}-")}{below}</figure>')

    def table(self, table: Table) -> None:
        fills = table.fills or [[None] * len(table.columns)] * len(table.rows)
        head = "".join(f"<th>{escape(str(c))}</th>" for c in table.columns)
        body = "".join("<tr>" + "".join(_cell(cell, fill) for cell, fill in zip(row, row_fills)) + "</tr>"
                       for row, row_fills in zip(table.rows, fills))
        self.add(f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>')

    def block(self, block) -> None:
        """One block of :mod:`.content`."""
        title = getattr(block, "title", "")
        if title:
            self.add(f"<h3>{escape(title)}</h3>")
        if isinstance(block, Plot):
            self.figure(spec_figure(block.spec, FIGURE_WIDTH), below=block.caption)
            if block.beside is not None:  # a screen has the room to draw it after, at full width
                self.figure(spec_figure(block.beside, FIGURE_WIDTH))
        elif isinstance(block, Paragraph):
            for paragraph in block.text.split("\n"):
                self.add(f'<p class="{block.role}">{escape(paragraph)}</p>')
        elif isinstance(block, Code):
            self.code(block.text, copy="\n" not in block.text.strip())
        elif isinstance(block, Table):
            self.table(block)
        else:
            raise TypeError(f"unknown report block {type(block).__name__}")

    def code(self, text: str, copy: bool) -> None:
        """A ``<pre><code>`` block; a one-line command gets a copy button."""
        pre = f"<pre><code>{escape(text)}</code></pre>"
        self.add(f'<div class="command">{pre}<button type="button" class="copy">copy</button></div>' if copy else pre)


def _cell(text, fill, order: int | None = None) -> str:
    """A table cell; ``order``: what sorting its column compares instead of its text."""
    style = f' style="background:{fill}"' if fill else ""
    order = f' data-order="{order}"' if order is not None else ""
    return f"<td{style}{order}>{escape(str(text))}</td>"


def _chip(text: str, verdict: str) -> str:
    return f'<span class="chip" style="background:{VERDICT_COLORS.get(verdict, "#ffffff")}">{escape(text)}</span>'


def _summary(page: _Page, summary, sections) -> None:
    """The verdicts at a glance: settings, counts, the sortable and filterable table."""
    page.add(f'<header id="summary"><h1>{escape(summary.title)}</h1>')
    if summary.settings:
        rows = "".join(f"<tr><th scope=\"row\">{escape(n)}</th><td>{escape(v)}</td></tr>" for n, v in summary.settings)
        page.add(f'<div class="scroll"><table class="settings"><tbody>{rows}</tbody></table></div>')
    if summary.lines:
        page.add(f"<p>{plural(sum(n for _, n in summary.counts), 'claim')}: "
                 + "".join(_chip(f"{n} {name}", name) for name, n in summary.counts) + "</p>")
        options = lambda values: "".join(f'<option value="{escape(v)}">{escape(v)}</option>' for v in values)  # noqa: E731
        papers = sorted({line.paper for line in summary.lines})
        page.add('<div class="filters"><label>paper <select id="filter-paper"><option value="">all</option>'
                 f'{options(papers)}</select></label><label>verdict <select id="filter-verdict">'
                 f'<option value="">all</option>{options([name for name, _ in summary.counts])}</select></label>'
                 "<span class=\"muted\">click a column's name to sort by it</span></div>")
        rows = "".join(
            f'<tr data-paper="{escape(line.paper)}" data-verdict="{escape(line.verdict)}">'
            f'<td><a href="#{escape(line.anchor)}">{escape(line.id)}</a></td><td>{escape(line.paper)}</td>'
            f'{_cell(line.verdict, VERDICT_COLORS.get(line.verdict), severity(line.verdict))}'
            f'<td>{escape(line.headline)}</td></tr>' for line in summary.lines)
        page.add('<div class="scroll"><table id="verdicts" class="sortable"><thead><tr><th>claim</th><th>paper</th>'
                 f"<th>verdict</th><th>summary</th></tr></thead><tbody>{rows}</tbody></table></div>")
    for heading, text, columns, rows, widths in sections:
        page.add(f"<h3>{escape(heading)}</h3>")
        if text:
            page.add(f'<p class="muted">{escape(text)}</p>')
        page.table(Table("", columns, rows, widths))
    page.add("</header>")


def html_report(verdicts: list[dict], title: str, generated: datetime, extra_figures=(), sections=(),
                metadata: dict | None = None, reproduce=None) -> str:
    """The page's text (see :func:`build_html`)."""
    ids = {v.get("id") for v in verdicts}
    after: dict = {}
    for figure_title, figure, *claim in extra_figures:
        after.setdefault(claim[0] if claim and claim[0] in ids else None, []).append((figure_title, figure))
    page = _Page()
    page.add('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
             '<meta name="viewport" content="width=device-width, initial-scale=1">'
             f"<title>{escape(title)}</title><style>{_STYLE}</style></head><body>")
    _summary(page, run_summary(verdicts, title, metadata, generated), sections)
    page.add("<main>")
    for entry in entries_of(verdicts, reproduce):
        paper = entry.id.split(".")[0]
        page.add(f'<section class="claim" id="{escape(entry.anchor)}" data-paper="{escape(paper)}" '
                 f'data-verdict="{escape(entry.verdict)}"><h2>{escape(entry.id)} {_chip(entry.verdict, entry.verdict)}'
                 f'<a class="back" href="#summary">back to the summary</a></h2><p class="facts">{escape(entry.facts)}</p>')
        if entry.reproduce:
            page.code(entry.reproduce, copy=True)
        for block in entry.blocks:
            page.block(block)
        for figure_title, figure in after.pop(entry.id, []):
            page.figure(figure, figure_title)
        page.add("</section>")
    for figure_title, figure in after.pop(None, []):
        page.figure(figure, figure_title)
    page.add(f"</main><footer class=\"muted\"><p>generated {generated:%Y-%m-%d %H:%M:%S %Z}</p></footer>"
             f"<script>{_SCRIPT}</script></body></html>\n")
    return "".join(page.parts)


def build_html(verdicts: list[dict], path, *, title: str = "cflbounds report", extra_figures=(), sections=(),
               metadata: dict | None = None, reproduce=None) -> Path:
    """Write ``report.html`` of ``verdicts`` (``Verdict.to_dict()`` dicts, or the falsify run's
    entries) to ``path``: page 1's content (run settings from ``metadata``, counts, the
    verdict table, sortable and filterable), then a section per claim (anchor
    :func:`.content.anchor`) with every block of its entry, its extra figures after it.
    Arguments as :func:`cflbounds.reports.pdf.build_report`. Returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    verdicts = [v.to_dict() if hasattr(v, "to_dict") else v for v in verdicts]
    text = html_report(verdicts, title, datetime.now(timezone.utc), extra_figures, sections, metadata, reproduce)
    path.write_text(text, encoding="utf-8")
    return path
