"""Figure and page quality measured, not hoped for: every figure of a smoke run of representative
claims (one of each figure kind: margin bars with one value and with failing inequalities,
grouped bars, rate fits on log axes, lines with rings and bands, a degenerate success panel,
scatter plots on clipped log axes, a map, heatmaps with colorbars, the Fig. 2 page) is drawn
as the reports draw it and checked from matplotlib's own text extents: no two texts overlap
(tick labels included: "3x10^2 4x10^2" ran together), nothing is cut at the figure's edge,
every axis has a label, no axes is empty. Then every page of the PDF is rasterised and none
may be near-empty (the old report had nine). ``-m slow`` runs the same checks on every
implemented claim.

The claims run once per module at the smoke scale with a fixed seed (about ten seconds on a
quiet 2-core machine).
"""
from datetime import datetime, timezone

import numpy as np
import pandas as pd
import pypdfium2
import pytest
from matplotlib.figure import Figure

from cflbounds.reports._fitting import spec_figure
from cflbounds.reports.figures import has_plot_content, renderer
from cflbounds.reports.outputs import fig2_page
from cflbounds.reports.pdf import MARGIN, TEXT_HEIGHT, TEXT_WIDTH, build_report, report_pages
from cflbounds.verify.context import VerifyContext
from cflbounds.verify.run import implemented_claims, verify_claims
from cflbounds.verify.verdict import figure_specs

# one claim per kind of figure the papers draw (see the module docstring)
REPRESENTATIVE = ("IFCA.A1", "IFCA.A3-6", "IFCA.T1", "IFCA.F2", "IFCA.TAB1", "FC.H", "FC.T1", "DSC.T1", "DSC.E14",
                  "LCFL.E9")
# a page whose ink reaches less than this share down its text area is near-empty: the old report's nine
# such pages reached 0.06 to 0.27, the redesigned report's pages reach 0.6 and more (smoke run, 2026-11-28)
NEAR_EMPTY = 0.3
SEED = 0


def _run(ids) -> tuple[list[dict], dict]:
    tables = {}
    verdicts = verify_claims(list(ids), VerifyContext(scale="smoke", seed=SEED, device="cpu"),
                             on_verdict=lambda verdict, saved: tables.update(saved))
    return [v.to_dict() for v in verdicts], tables


@pytest.fixture(scope="module")
def smoke_run():
    return _run(REPRESENTATIVE)


# -- what a legible figure is ------------------------------------------------------------------------
def _visible_texts(figure: Figure) -> list:
    """Every text the figure draws, with what it belongs to: tick labels in view, axis labels,
    titles, annotations, legend entries, figure texts (subfigures' too)."""
    texts = []
    for ax in figure.get_axes():
        if not ax.get_visible() or not ax.axison:
            continue
        for axis in (ax.xaxis, ax.yaxis):
            low, high = sorted(axis.get_view_interval())
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                if low <= tick.get_loc() <= high:
                    texts += [(f"{axis.axis_name} tick", label) for label in (tick.label1, tick.label2)
                              if label.get_visible() and label.get_text()]
            texts.append((f"{axis.axis_name} label", axis.label))
        texts += [("title", title) for title in (ax.title, ax._left_title, ax._right_title)]
        texts += [("annotation", text) for text in ax.texts]
        if ax.get_legend() is not None:
            texts += [("legend", text) for text in ax.get_legend().get_texts()]
    for sub in [figure, *figure.subfigs]:
        texts += [("figure text", text) for text in sub.texts]
        if getattr(sub, "_suptitle", None) is not None:
            texts.append(("suptitle", sub._suptitle))
    unique = {id(text): (kind, text) for kind, text in reversed(texts)}  # a suptitle is among its figure's texts
    return [(kind, text) for kind, text in unique.values() if text.get_visible() and text.get_text().strip()]


def _has_data(ax) -> bool:
    lines = any(len(line.get_xdata()) for line in ax.lines)
    points = any(len(collection.get_offsets()) or collection.get_paths() for collection in ax.collections)
    return lines or points or bool(ax.patches) or bool(ax.images)


def figure_problems(figure: Figure) -> list[str]:
    """What a reader would stumble on, measured with the figure's renderer after its layout."""
    figure.draw_without_rendering()
    draw = renderer(figure)
    edge = figure.bbox
    problems = []
    boxes = [(kind, text.get_text(), text.get_window_extent(draw)) for kind, text in _visible_texts(figure)]
    for i, (kind, content, box) in enumerate(boxes):
        if box.x0 < edge.x0 - 1 or box.y0 < edge.y0 - 1 or box.x1 > edge.x1 + 1 or box.y1 > edge.y1 + 1:
            problems.append(f"{kind} {content!r} is cut at the figure's edge")
        for other_kind, other, other_box in boxes[i + 1:]:
            if box.padded(-0.5).overlaps(other_box.padded(-0.5)):
                problems.append(f"{kind} {content!r} overlaps {other_kind} {other!r}")
    for ax in figure.get_axes():
        if not ax.get_visible() or not ax.axison:
            continue
        colorbar = ax.get_label() == "<colorbar>" or (ax.get_xlabel() == "" and ax in sum((a.child_axes for a in
                                                                                         figure.get_axes()), []))
        names = [ax.get_ylabel()] if colorbar else [ax.get_xlabel(), ax.get_ylabel()]
        shares_y = not ax.get_ylabel() and any(other.get_ylabel() for other in ax.get_shared_y_axes().get_siblings(ax))
        if not all(names) and not (shares_y and ax.get_xlabel()):
            problems.append(f"axes {ax.get_title()!r} has an axis without a label")
        if not colorbar and not _has_data(ax):
            problems.append(f"axes {ax.get_title()!r} is empty")
    return problems


def report_figures(verdicts: list[dict], tables: dict):
    """``(name, figure)`` of every figure a report of these verdicts draws, as drawn there."""
    for verdict in verdicts:
        for index, spec in enumerate(figure_specs(verdict.get("plot"))):
            if has_plot_content(spec):
                yield f"{verdict['id']} figure {index + 1}", spec_figure(spec, TEXT_WIDTH)
    if "ifca_fig2_runs" in tables:
        yield "IFCA.F2 Fig. 2 page", fig2_page(tables["ifca_fig2_runs"])[1]


def _check_figures(verdicts, tables) -> None:
    problems = {name: found for name, figure in report_figures(verdicts, tables) if (found := figure_problems(figure))}
    assert not problems, "\n".join(f"{name}: {p}" for name, found in problems.items() for p in found)


def test_every_figure_of_the_representative_claims_is_legible(smoke_run):
    verdicts, tables = smoke_run
    kinds = {spec.get("kind") for v in verdicts for spec in figure_specs(v.get("plot"))}
    assert kinds == {"bar", "rate", "line", "scatter", "heatmap"}  # every kind of figure is covered
    _check_figures(verdicts, tables)


@pytest.mark.slow
def test_every_figure_of_every_claim_is_legible():
    _check_figures(*_run(implemented_claims()))


def test_the_checks_catch_what_the_old_report_showed():
    """The checks fail where they should: labels run together, a text past the edge, an axis
    without a label, an empty axes (each drawn on purpose)."""
    figure = Figure(figsize=(3, 2))
    ax = figure.add_subplot()
    ax.plot([1, 2], [1, 2])
    ax.set_xticks([1.0, 1.02], ["3x10^2", "4x10^2"])
    ax.set_xlabel("m n'")
    ax.text(1.5, 1.5, "a note far too long to stay inside this small figure", fontsize=12)
    empty = figure.add_axes((0.7, 0.7, 0.2, 0.2))
    empty.set_xlabel("x")
    found = " ".join(figure_problems(figure))
    assert "x tick '4x10^2' overlaps x tick '3x10^2'" in found and "cut at the figure's edge" in found
    assert "has an axis without a label" in found and "is empty" in found


# -- pages -------------------------------------------------------------------------------------------
def _ink_depths(path) -> list[float]:
    """Per page: how far down its text area the ink reaches (0 to 1), the header line of a
    continuation page and the footer left out, from the page rasterised at 50 dpi."""
    document = pypdfium2.PdfDocument(str(path))
    depths = []
    try:
        for page in document:
            pixels = np.asarray(page.render(scale=50 / 72).to_pil().convert("L"))
            dpi = pixels.shape[0] / 11.69
            top, bottom = int((MARGIN + 0.1) * dpi), int((MARGIN + TEXT_HEIGHT) * dpi)  # below a header line
            inked = np.flatnonzero((pixels[top:bottom] < 200).any(axis=1))
            depths.append((inked[-1] + 0.1 * dpi) / (TEXT_HEIGHT * dpi) if inked.size else 0.0)
    finally:
        document.close()
    return depths


def test_no_page_of_the_report_is_near_empty(smoke_run, tmp_path):
    verdicts, tables = smoke_run
    extra = [(*fig2_page(tables["ifca_fig2_runs"]), "IFCA.F2")]
    path = build_report(verdicts, tmp_path / "report.pdf", extra_figures=extra, metadata={"scale": "smoke"})
    depths = _ink_depths(path)
    assert len(depths) <= 1 + 1.2 * len(verdicts) + 1  # page 1, about 1.2 pages a claim, one Fig. 2 page
    # page 1 is as long as the run's list of claims (ten lines here): the claims' pages are judged
    short = [f"page {i}: {d:.2f}" for i, d in enumerate(depths[1:], 2) if d < NEAR_EMPTY]
    assert not short, short


def test_a_near_empty_page_is_seen(tmp_path):
    """The measure fails where it should: a claim page holding three lines."""
    verdict = {"id": "X.T1", "verdict": "holds", "evidence": {}, "seed": 0, "trials": 1, "confidence": 1.0}
    path = build_report([verdict], tmp_path / "report.pdf")
    assert _ink_depths(path)[1] < NEAR_EMPTY


def test_every_page_of_the_report_is_numbered_and_claims_are_found_from_page_one(smoke_run):
    verdicts, _ = smoke_run
    pages = report_pages(verdicts, "t", datetime.now(timezone.utc))
    first = [t.get_text() for t in pages[0].texts]
    for verdict in verdicts:
        row = first.index(verdict["id"])
        page = int(first[row + 3])  # claim, verdict, summary, page
        assert any(t.get_text() == verdict["id"] for t in pages[page - 1].texts)
    assert all(any(f"page {i} of {len(pages)}" in t.get_text() for t in page.texts) for i, page in enumerate(pages, 1))


def test_the_fig2_page_is_one_page_at_paper_size(smoke_run):
    """Fig. 2 with the paper's parts (noise panels a and b, sample panels c and d at two r
    each: five figures) still fits its one page, legibly: the smoke run's rows relabelled."""
    runs = smoke_run[1]["ifca_fig2_runs"]
    noise, samples = runs[runs["panel"] == "a"], runs[runs["panel"] == "c"]
    parts = [noise.assign(panel=panel, k=k) for panel, k in (("a", 2), ("b", 4))]
    parts += [samples.assign(panel=panel, k=k, r=r)
              for panel, k, rs in (("c", 2, (0.1, 0.25)), ("d", 4, (0.5, 0.75))) for r in rs]
    title, figure = fig2_page(pd.concat(parts, ignore_index=True))
    assert figure.get_figheight() <= TEXT_HEIGHT - 1.0
    assert len([ax for ax in figure.get_axes() if ax.get_visible()]) == 6
    assert not figure_problems(figure)
