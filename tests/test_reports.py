"""PDF reports and report figures: page counts, layout inside the page, exact error bars, and
figures a reviewer can paste (legends off the data, paired colours, clipped axes with the
points beyond them marked, labelled reference lines, category labels apart)."""
import json
import re
from datetime import datetime, timezone

import numpy as np
import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from hypothesis import given
from hypothesis import strategies as st
from matplotlib.colors import to_rgba

from cflbounds.reports import build_report, plot_from_spec, success_probability_figure
from cflbounds.reports._text import text_width, wrap
from cflbounds.reports.figures import renderer
from cflbounds.reports.content import claim_entry, format_value, run_summary
from cflbounds.reports.pdf import MARGIN, PAGE_HEIGHT, PAGE_WIDTH, TEXT_WIDTH, _claim_pages, report_pages
from cflbounds.reports.pdf import _summary_pages as _summary_pages_of
from cflbounds.verify.stats import clopper_pearson
from cflbounds.verify.verdict import Verdict, figure_specs

LONG = ("With probability at least 1 - delta, after T = O(log(1/eps)) rounds every cluster "
        "parameter estimate of IFCA is within eps of its optimum, provided the initial "
        "estimates are close enough and the number of machines is large. ") * 3


def rate_verdict() -> dict:
    x = [100, 200, 400, 800, 1600]
    return Verdict(
        id="ifca.theorem1.rate", verdict="rate-consistent", seed=2**62 + 12345, trials=200,
        confidence=0.95, summary="slope 1.02 [0.95, 1.11] over 1.2 decades", statement=LONG,
        scale="smoke", evidence={"slope": 1.0213456, "slope_low": 0.95, "slope_high": float("nan")},
        plot=[{"kind": "rate", "title": "error vs predicted term", "xlabel": "n", "ylabel": "error",
               "logx": True, "logy": True, "x": x,
               "series": [{"label": "measured", "y": [0.1, 0.05, None, 0.012, 0.006],
                           "low": [0.08, 0.04, None, 0.01, 0.005], "high": [0.12, 0.06, None, 0.015, 0.007]},
                          {"label": "predicted", "y": [10 / n for n in x], "style": "dashed"}]}],
        details={"protocol": "resampled", "regime": "well separated"}, seconds=3.2,
    ).to_dict()


def assumption_verdict() -> dict:
    assumptions = [{"name": f"separation condition {i} " + "with a long name" * (i % 2), "lhs": 0.1 * i,
                    "rhs": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], "relation": "<=", "slack": 1.0 - 0.1 * i,
                    "holds": i < 3, "source": "Assumption 2, eq. (7) of Ghosh et al. 2020"} for i in range(5)]
    evidence = {f"quantity_{i}_with_a_rather_long_descriptive_name": np.pi * 10.0 ** (i - 30) for i in range(60)}
    evidence |= {"missing": None, "count": 12345678}
    return {"id": "ifca.theorem2.success", "verdict": "violated", "evidence": evidence, "seed": 7,
            "trials": 500, "confidence": 0.99, "summary": LONG, "statement": "P(success) >= 1 - delta",
            "scale": "full", "assumptions": assumptions, "plot": [],
            "details": {"note": LONG, "protocol": "fresh samples"}, "seconds": 1.0}


def missing_verdict() -> dict:
    return Verdict(id="cfl.proposition3", verdict="not-implemented", evidence={}, seed=0, trials=0,
                   confidence=0.95).to_dict()


def huge_verdict() -> dict:
    """Texts longer than a page: a statement and a details value that must be split."""
    return {**missing_verdict(), "statement": LONG * 12, "details": {"log": LONG * 40}}


def _verdict_pages(verdict: dict) -> list:
    """The pages of one claim, as the report lays them out."""
    return _claim_pages(claim_entry(verdict), "report.html")


def _summary_pages(verdicts: list, title: str, generated, sections=()) -> list:
    return _summary_pages_of(run_summary(verdicts, title, None, generated), {}, sections)


def page_count(path) -> int:
    return len(re.findall(rb"/Type\s*/Page[^s]", path.read_bytes()))


def test_report_pages(tmp_path):
    extra = Figure()
    extra.add_subplot().plot([0, 1], [1, 0])
    path = build_report([rate_verdict(), assumption_verdict(), missing_verdict()], tmp_path / "r" / "report.pdf",
                        title="test report", extra_figures=[("an extra figure", extra)])
    data = path.read_bytes()
    assert data.startswith(b"%PDF")
    # 62 evidence rows and a long summary: the first 36 quantities are printed, the rest left to the HTML report
    assert len(_verdict_pages(assumption_verdict())) == 1
    assert page_count(path) == 1 + 1 + 1 + 1 + 1  # summary, 3 verdicts, extra figure
    assert b"test report" in data  # the Title metadata (the info dictionary is not compressed)


def _boxes(page: Figure):
    renderer = FigureCanvasAgg(page).get_renderer()
    texts = [t.get_window_extent(renderer) for t in page.texts if t.get_text()]
    return renderer, texts, [ax.get_tightbbox(renderer) for ax in page.axes]


FORMULAS = ["max_j ||theta*_j|| <~ 1", "sigma <~ 1", "n' >~ ((rho+1)/rho)^2 log m", "d >~ log m",
            "p >~ log m / m", "p m n' >~ d", "Delta >~ (sigma/p) sqrt(d/(m n')) + exp(-c (rho/(rho+1))^2 n')"]


def figure_verdict() -> dict:
    """Every device a figure uses at once: paired groups, a clipped axis with points beyond it
    and a diverged run, reference lines both ways, long category names, a long title."""
    x = [10, 20, 40, 80, 160]
    series = []
    for M, scale in ((1, 1.0), (4, 0.5)):
        series += [{"label": f"M = {M}: measured", "group": f"M = {M}", "y": [scale * 0.1 / t ** 0.5 for t in x],
                    "low": [scale * 0.08 / t ** 0.5 for t in x], "high": [scale * 0.12 / t ** 0.5 for t in x],
                    "style": "line"},
                   {"label": f"M = {M}: bound 2C/sqrt(TME)", "group": f"M = {M}", "y": [scale / t ** 0.5 for t in x],
                    "style": "dashed"}]
    lines = {"kind": "line", "logx": True, "logy": True, "x": x, "series": series,
             "title": "FC.T1 (unequal): (1/T) sum ||grad f(W_jM)||^2 at eta = (TME)^-1/2 with a long tail of words",
             "xlabel": "rounds T", "ylabel": "mean squared gradient norm",
             "reference": [{"y": 0.05, "label": "a level delta"}, {"x": 50, "label": "threshold"}]}
    ratios = {"kind": "scatter", "logx": True, "logy": True, "ylim": [1e-4, 1e4], "nonfinite_label": "diverged",
              "series": [{"label": "small", "x": [0.5, 1.0, 2.0, 3.0], "y": [0.5, 1e-9, 1e12, "inf"]}],
              "reference": [{"y": 1.0, "label": "measured = bound"}], "title": "ratios", "xlabel": "x", "ylabel": "y"}
    bars = {"kind": "bar", "logy": True, "x": FORMULAS, "xlabel": "inequality", "ylabel": "margin",
            "title": "IFCA.A2: smallest margin per inequality (lhs/rhs for >=, rhs/lhs for <=)",
            "series": [{"label": "smallest margin over the problems used", "y": [1, 9.8, 3.1, 1.6, 1.9, 8, 9]}],
            "reference": [{"y": 1.0, "label": "tight; below: fails"}]}
    return {**missing_verdict(), "id": "FIG", "verdict": "violated", "plot": [lines, ratios, bars]}


@pytest.mark.parametrize("make", [rate_verdict, assumption_verdict, missing_verdict, huge_verdict, figure_verdict])
def test_pages_stay_inside_and_do_not_overlap(make):
    pages = _verdict_pages(make()) + _summary_pages([rate_verdict(), assumption_verdict()], "t", datetime.now(timezone.utc))
    for page in pages:
        renderer, texts, axes = _boxes(page)
        inked = page.get_tightbbox(renderer)  # inches
        assert inked.x0 >= 0 and inked.y0 >= 0 and inked.x1 <= PAGE_WIDTH and inked.y1 <= PAGE_HEIGHT
        boxes = texts + axes
        for i, a in enumerate(boxes):
            for b in boxes[i + 1:]:
                assert not a.overlaps(b), (a, b)


def test_plot_from_spec_skips_none_and_draws_placeholder():
    ax = plot_from_spec(rate_verdict()["plot"][0]).axes[0]
    measured = ax.containers[0].lines[0]
    assert np.array_equal(measured.get_xdata(), [100, 200, 800, 1600])
    assert ax.get_xscale() == "log" and ax.get_legend() is not None
    empty = plot_from_spec({})
    assert [t.get_text() for t in empty.axes[0].texts] == ["no plot for this claim"]


def test_success_probability_error_bars_are_clopper_pearson():
    successes = {(10, 0.5): 3, (10, 1.0): 0, (20, 0.5): 5, (20, 1.0): 4}
    rows = [{"R": r, "sigma": s, "success": i < k, "panel": "k = 2"}
            for (r, s), k in successes.items() for i in range(5)]
    fig = success_probability_figure(pd.DataFrame(rows), x="R", group="sigma", confidence=0.9)
    ax = fig.axes[0]
    assert ax.get_ylim() == (-0.05, 1.05)  # points at 0 and 1 stay off the frame
    for sigma, container in zip((0.5, 1.0), ax.containers):
        counts = np.array([successes[(10, sigma)], successes[(20, sigma)]])
        line = container.lines[0]
        assert np.array_equal(line.get_xdata(), [10, 20])
        assert np.allclose(line.get_ydata(), counts / 5)
        low, high = clopper_pearson(counts, 5, 0.9)
        segments = np.array(container.lines[2][0].get_segments())  # (points, ends, xy)
        assert np.allclose(segments[:, 0, 1], low) and np.allclose(segments[:, 1, 1], high)
        assert container.get_label() == f"sigma = {sigma}"
    assert fig._suptitle is None and ax.get_title() == "k = 2"


def test_success_probability_figure_says_what_it_shows_above_its_panels():
    """A figure saved as an image alone names its protocol variant; panels keep their own titles."""
    rows = [{"R": r, "sigma": 0.1, "success": True, "panel": "a, k = 2"} for r in (0.1, 0.2)]
    fig = success_probability_figure(pd.DataFrame(rows), x="R", group="sigma", title="IFCA Fig. 2 (official)")
    assert fig._suptitle.get_text() == "IFCA Fig. 2 (official)" and fig.axes[0].get_title() == "a, k = 2"


def map_and_matrix_verdict() -> dict:
    """A verdict with several figures: a scatter map, a heatmap and lines with their own x."""
    rng = np.random.default_rng(0)
    matrix = rng.random((12, 12)).tolist()
    matrix[3][4] = None
    plots = [
        {"kind": "scatter", "title": "client map", "xlabel": "x (m)", "ylabel": "y (m)", "equal": True,
         "series": [{"label": f"group {g}", "x": rng.uniform(-50, 50, 5).tolist(), "y": rng.uniform(-50, 50, 5).tolist()}
                    for g in range(3)] + [{"label": "base station", "x": [0.0], "y": [0.0], "marker": "*", "size": 120}]},
        {"kind": "heatmap", "title": "distance matrix", "matrix": matrix, "colorbar": "d(i, j)", "boundaries": [4, 8]},
        {"kind": "line", "title": "gradient norm", "logy": True,
         "series": [{"label": "M = 1", "x": [1, 2, 3], "y": [1.0, 0.5, 0.25]},
                    {"label": "M = 4", "x": [1, 2, 3, 4, 5], "y": [1.0, 0.3, 0.1, 0.05, 0.02]}]},
    ]
    return {**missing_verdict(), "id": "plots", "verdict": "holds", "plot": plots}


def test_several_plots_per_verdict_stay_inside_and_do_not_overlap():
    """The first figure always; the others while they fit the claim's page (here the heatmap
    does, the third not: the page says it left a figure out)."""
    pages = _verdict_pages(map_and_matrix_verdict())
    assert len(pages) == 1 and len(pages[0].axes) == 2
    assert sum(len(ax.child_axes) for page in pages for ax in page.axes) == 1  # the heatmap's colorbar
    assert any("Left out here for room: 1 more figure" in t.get_text() for t in pages[0].texts)
    for page in pages:
        renderer, texts, axes = _boxes(page)
        inked = page.get_tightbbox(renderer)
        assert inked.x0 >= 0 and inked.y0 >= 0 and inked.x1 <= PAGE_WIDTH and inked.y1 <= PAGE_HEIGHT
        boxes = texts + axes
        for i, a in enumerate(boxes):
            for b in boxes[i + 1:]:
                assert not a.overlaps(b), (a, b)


def test_scatter_heatmap_and_own_x_series_are_drawn():
    scatter, heatmap, lines = map_and_matrix_verdict()["plot"]
    ax = plot_from_spec(scatter).axes[0]
    assert [c.get_offsets().shape[0] for c in ax.collections] == [5, 5, 5, 1]
    fig = plot_from_spec(heatmap)
    image = fig.axes[0].images[0].get_array()
    assert image.shape == (12, 12) and not np.isfinite(np.ma.filled(image, np.nan)[3, 4])  # None is a gap
    assert len(fig.axes[0].child_axes) == 1  # the colorbar, inset beside the image
    ax = plot_from_spec(lines).axes[0]
    assert [len(line.get_xdata()) for line in ax.lines] == [3, 5]
    with pytest.raises(ValueError, match="heatmap"):
        plot_from_spec({"kind": "heatmap", "matrix": [[]]})


def test_non_finite_numbers_are_strict_json_and_survive_the_round_trip(tmp_path):
    """verdicts.json is strict JSON (no Infinity/NaN tokens) and loses nothing: an overflowed
    bound is "inf", not a null that reads like a missing value; the report prints it by name and
    a plot reads it back as a float (drawn as a gap, as a missing value is)."""
    verdict = Verdict(id="X.T1", verdict="vacuous", seed=1, trials=3, confidence=0.95,
                      evidence={"bound": float("inf"), "lower": -np.inf, "slope": np.float64("nan"), "ratio": 0.5},
                      plot=[{"kind": "line", "x": [1, 2, 3], "series": [{"label": "bound", "y": [1.0, np.inf, 2.0]}]}])
    text = verdict.to_json()
    data = json.loads(text, parse_constant=lambda token: pytest.fail(f"non-standard JSON token {token}"))
    assert data["evidence"] == {"bound": "inf", "lower": "-inf", "slope": "nan", "ratio": 0.5}
    assert float(data["evidence"]["bound"]) == np.inf
    assert Verdict.from_dict(data).to_dict() == data
    assert [format_value(v) for v in data["evidence"].values()] == ["inf", "-inf", "nan", "0.5"]
    line = plot_from_spec(data["plot"][0]).axes[0].lines[0]
    assert np.array_equal(line.get_xdata(), [1, 3]) and np.array_equal(line.get_ydata(), [1.0, 2.0])  # inf: a gap


# -- the figures a reviewer reads -------------------------------------------------------------------
def _page_axes(spec):
    """``spec`` drawn as the report draws it: on an A4 page, at its printed size."""
    pages = _verdict_pages({**missing_verdict(), "plot": [spec]})
    axes = [ax for page in pages for ax in page.axes]
    assert len(axes) == 1
    return axes[0]


def _data_area(ax):
    return ax.get_window_extent(renderer(ax.figure))


@pytest.mark.parametrize("spec", [*figure_verdict()["plot"], rate_verdict()["plot"][0], map_and_matrix_verdict()["plot"][0]],
                         ids=["line", "scatter", "bar", "rate", "map"])
def test_legend_lies_outside_the_data_area(spec):
    """On the page and standalone: a legend's box does not touch the axes' data area (the old
    report put it over bars and lines: MGD.L2's 1.875 bar, FC.T1's bound lines)."""
    for ax in (_page_axes(spec), plot_from_spec(spec).axes[0]):
        legend = ax.get_legend()
        assert legend is not None
        box, area = legend.get_window_extent(renderer(ax.figure)), _data_area(ax)
        assert box.y1 < area.y0, (box, area)


def test_a_group_shares_one_colour_measured_solid_bound_dashed():
    ax = plot_from_spec(figure_verdict()["plot"][0]).axes[0]
    handles, labels = ax.get_legend_handles_labels()  # an error bar container's first line is its data
    lines = {label: getattr(handle, "lines", [handle])[0] for handle, label in zip(handles, labels)}
    for M in (1, 4):
        measured, bound = lines[f"M = {M}: measured"], lines[f"M = {M}: bound 2C/sqrt(TME)"]
        assert to_rgba(measured.get_color()) == to_rgba(bound.get_color())
        assert measured.get_linestyle() == "-" and bound.get_linestyle() == "--"
    assert to_rgba(lines["M = 1: measured"].get_color()) != to_rgba(lines["M = 4: measured"].get_color())


def test_points_beyond_the_clipped_axis_are_marked_at_its_edge_and_counted():
    """ylim [1e-4, 1e4]: 1e12 and a diverged run (inf) sit at the top edge, 1e-9 at the bottom;
    the axis does not stretch to reach them (DSC.T1 spanned 1e-86 to 1e154)."""
    spec = figure_verdict()["plot"][1]
    for ax in (_page_axes(spec), plot_from_spec(spec).axes[0]):
        assert ax.get_ylim() == pytest.approx((1e-4, 1e4))
        drawn = ax.collections[0].get_offsets()
        assert np.allclose(drawn, [[0.5, 0.5]])  # only the point inside the axis is drawn as data
        edges = {tuple(np.round(np.log10(c.get_offsets()[0]), 6)): len(c.get_offsets()) for c in ax.collections[1:]}
        assert edges == {(np.log10(2.0).round(6), 4.0): 1, (0.0, -4.0): 1, (np.log10(3.0).round(6), 4.0): 1}
        labels = [t.get_text() for t in ax.get_legend().get_texts()]
        assert {"above the axis (1)", "below the axis (1)", "diverged (1)"} <= set(labels)


def test_legend_keeps_the_series_order_with_a_pair_on_one_row():
    """Measured before bound, M = 1 before M = 4, whatever kind of artist draws each (error bar
    containers came last before), and an even number of columns so that a pair shares a row."""
    ax = _page_axes(figure_verdict()["plot"][0])
    legend = ax.get_legend()
    shown = [t.get_text() for t in legend.get_texts()]
    columns = legend._ncols
    assert columns % 2 == 0
    rows = [[shown[j * ((len(shown) + columns - 1) // columns) + i] for j in range(columns)
             if j * ((len(shown) + columns - 1) // columns) + i < len(shown)] for i in range(2)]
    assert [label for row in rows for label in row][:4] == ["M = 1: measured", "M = 1: bound 2C/sqrt(TME)",
                                                            "M = 4: measured", "M = 4: bound 2C/sqrt(TME)"]


def test_points_right_of_a_clipped_x_axis_are_marked_at_its_right_edge():
    spec = {"kind": "line", "xlim": [None, 10], "nonfinite_label": "diverged", "x": [],
            "series": [{"label": "cells", "x": [1, 5, 50, 200], "y": [0.5, 1.0, 2.0, "inf"], "style": "points"}]}
    ax = plot_from_spec(spec).axes[0]
    assert ax.get_xlim()[1] == 10
    right, diverged = ax.collections
    assert np.allclose(right.get_offsets(), [[10, 2.0]])  # the y range still reaches it
    assert np.allclose(diverged.get_offsets(), [[10, ax.get_ylim()[1]]])
    assert {"right of the axis (1)", "diverged (1)"} <= {t.get_text() for t in ax.get_legend().get_texts()}


def test_reference_lines_are_drawn_at_their_value_and_labelled():
    ax = _page_axes(figure_verdict()["plot"][0])
    texts = [t.get_text() for t in ax.texts]
    assert "a level delta" in texts and "threshold" in texts
    horizontal = [line for line in ax.get_lines() if list(line.get_ydata()) == [0.05, 0.05]]
    vertical = [line for line in ax.get_lines() if list(line.get_xdata()) == [50, 50]]
    assert horizontal and vertical
    low, high = ax.get_ylim()
    assert low < 0.05 < high


def test_long_category_names_do_not_overlap_and_are_kept_whole():
    """IFCA.A2's seven formulas printed over each other; now the slots are numbered and a key
    under the axes names every formula in full (short names stay under their bars)."""
    ax = _page_axes(figure_verdict()["plot"][2])
    ticks = [t for t in ax.get_xticklabels() if t.get_text()]
    assert [t.get_text() for t in ticks] == [str(i) for i in range(1, 8)]
    boxes = [t.get_window_extent(renderer(ax.figure)) for t in ticks]
    assert all(a.x1 < b.x0 for a, b in zip(boxes, boxes[1:]))
    key = " ".join(ax.get_xlabel().split())
    assert all(f"{i}: {name}" in key for i, name in enumerate(FORMULAS, 1))
    short = _page_axes({**figure_verdict()["plot"][2], "x": ["a", "b", "c", "d", "e", "f", "g"]})
    assert [t.get_text() for t in short.get_xticklabels()] == list("abcdefg")


def test_titles_break_at_spaces_never_inside_parentheses():
    ax = _page_axes(figure_verdict()["plot"][0])
    lines = ax.get_title().split("\n")
    assert len(lines) > 1  # the title is wider than the axes
    assert all(line.count("(") == line.count(")") for line in lines)


@given(st.lists(st.sampled_from(["a", "bb", "(c d)", "eeee", "(ff gg hh)", "i", "jj(k)"]), max_size=30),
       st.floats(1.0, 3.0))
def test_wrap_keeps_every_word_in_order_and_fits(words, width):
    """Independent check of the greedy wrap: the lines hold the words in order, each line fits
    the width, and a bracketed group stays on one line (each fits 1 inch at 10 points)."""
    text = " ".join(words)
    lines = wrap(text, width, 10, keep_groups=True)
    assert " ".join(" ".join(lines).split()) == " ".join(text.split())
    assert all(text_width(line, 10) <= width for line in lines)
    assert all(line.count("(") == line.count(")") for line in lines)


def test_page_one_gives_each_claim_one_line_and_its_page_the_whole_summary():
    """Page 1 is the verdicts at a glance: a claim's summary is cut to one line there (the
    verdict word never breaks: "rate-inconsisten/t" did), and its own page holds it whole."""
    verdicts = [{**rate_verdict(), "summary": LONG, "verdict": "rate-inconsistent"}, assumption_verdict()]
    (page,) = _summary_pages(verdicts, "t", datetime.now(timezone.utc))
    shown = [t.get_text() for t in page.texts]
    assert "rate-inconsistent" in shown
    line = next(text for text in shown if text.startswith("With probability"))
    assert line.endswith("…") and len(line) < len(LONG)
    (claim,) = _verdict_pages(verdicts[0])
    text = " ".join(" ".join(t.get_text() for t in claim.texts).split())
    assert " ".join(LONG.split()) in text


def test_footer_counts_every_page_and_extra_figures_follow_their_claim(tmp_path):
    """"page i of n" with n every page, the Fig. 2 panels included, placed after their claim
    (the old report numbered 83 of 86 pages and put the panels at the end)."""
    verdicts = [rate_verdict(), {**missing_verdict(), "id": "IFCA.F2"}, assumption_verdict()]
    panels = [success_probability_figure(pd.DataFrame([{"R": r, "sigma": 0.1, "success": r > 1, "panel": "a"}
                                                       for r in (1, 2)]), x="R", group="sigma")]
    extra = [("panel a", panels[0], "IFCA.F2"), ("unowned", Figure())]
    pages = report_pages(verdicts, "t", datetime.now(timezone.utc), extra)
    footers = [[t.get_text() for t in page.texts if " · page " in t.get_text()] for page in pages]
    assert footers == [[f"t · page {i} of {len(pages)}"] for i in range(1, len(pages) + 1)]
    f2_end = len(_summary_pages(verdicts, "t", datetime.now(timezone.utc))) + sum(
        len(_verdict_pages(v)) for v in verdicts[:2])
    assert pages.index(panels[0]) == f2_end  # right after IFCA.F2's pages
    assert pages[-1] is extra[1][1]
    path = build_report(verdicts, tmp_path / "report.pdf", title="t", extra_figures=extra)
    assert page_count(path) == len(pages)


def test_figure_pages_stay_inside_the_text_area():
    rows = [{"R": r, "sigma": s, "success": (r + s) % 2 == 0, "panel": p}
            for p in "abc" for r in (1, 2, 3) for s in (0.1, 0.2) for _ in range(3)]
    figure = success_probability_figure(pd.DataFrame(rows), x="R", group="sigma")
    page = report_pages([], "t", datetime.now(timezone.utc), [("three panels", figure)])[-1]
    assert page is figure
    page.draw_without_rendering()  # runs the layout, as saving the page does
    inked = page.get_tightbbox(renderer(page))
    assert MARGIN - 0.05 <= inked.x0 and inked.x1 <= MARGIN + TEXT_WIDTH + 0.05 and inked.y0 >= 0.2


def test_plot_is_a_list_of_specs_and_old_single_specs_are_wrapped():
    spec = rate_verdict()["plot"][0]
    old = {**rate_verdict(), "plot": spec}  # verdicts.json written before the list was the only form
    assert Verdict.from_dict(old).plot == [spec]
    assert Verdict.from_dict({**old, "plot": {}}).plot == []
    assert figure_specs(None) == [] and figure_specs([spec]) == [spec]
    with pytest.raises(TypeError, match="list of figure specs"):
        Verdict(id="X", verdict="holds", evidence={}, seed=0, trials=1, confidence=0.95, plot=spec)
    with pytest.raises(TypeError, match="list of figure specs"):
        figure_specs("a spec")


def test_a_sweep_report_opens_with_its_settings_runs_and_success_table():
    """No empty claims table: the first page of a sweep's report names its settings, every run
    that wrote to the store (revision, finished or stopped) and each cell's successes, all
    inside the page and not overlapping."""
    from cflbounds.reports.outputs import _sweep_sections, success_summary
    from cflbounds.sweeps.ifca_fig2 import fig2_cells, run_fig2_cell, trial_outcomes

    cells = fig2_cells(("a",), ("official",), {"d": [16], "m": [8], "n": [8], "r": [0.5, 1.0], "sigma": [0.1]},
                       trials=4, restarts=2, iterations=40)
    summary = success_summary(trial_outcomes(pd.concat([run_fig2_cell(cell) for cell in cells])))
    manifest = {"settings": {"trials": 4, "seed": 0}, "runs": [
        {"started": "2026-11-27T09:25:13+00:00", "finished": None, "revision": "c7b1fca35302ace9",
         "cells_to_compute": 2, "threads": 2, "command": ["cflbounds", "sweep", "ifca-fig2", "--panel", "a"]},
        {"started": "2026-11-27T12:15:25+00:00", "finished": "2026-11-27T13:17:51+00:00", "revision": "40d28846fc04",
         "cells_to_compute": 1, "threads": 1, "command": ["cflbounds", "sweep", "--resume"]}]}
    pages = _summary_pages([], "cflbounds sweep ifca-fig2", datetime.now(timezone.utc),
                           _sweep_sections(manifest, summary))
    shown = [t.get_text() for page in pages for t in page.texts]
    assert not any("claims:" in text for text in shown)
    assert "Success per cell" in shown and "Runs that wrote to the store" in shown
    assert {"stopped", "2026-11-27 13:17", "c7b1fca353", "40d28846fc"} <= set(shown)
    counts = [f"{int(row.successes)}/{int(row.trials)}" for row in summary.itertuples()]
    assert len(counts) == 2 and all(count in shown for count in counts)
    assert "trials 4" in " ".join(shown)
    for page in pages:
        renderer, texts, axes = _boxes(page)
        inked = page.get_tightbbox(renderer)
        assert inked.x0 >= 0 and inked.y0 >= 0 and inked.x1 <= PAGE_WIDTH and inked.y1 <= PAGE_HEIGHT
        for i, a in enumerate(texts):
            for b in texts[i + 1:]:
                assert not a.overlaps(b), (a, b)
