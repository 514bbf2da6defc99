"""report.html and what both reports show of a claim: the HTML page parses strictly (html5lib),
holds every claim's section and every figure, loads nothing from outside; a claim whose code
failed shows its traceback as code; a verdict a search changed shows the designed
experiment's result, the search's and the counterexample with its replay command (the
``designed`` and ``search`` fields, hand-made here)."""
import json
import re
from datetime import datetime, timezone

import html5lib
import pytest

from cflbounds.reports.content import Code, Paragraph, Table, anchor, claim_entry
from cflbounds.reports.html import build_html, html_report
from cflbounds.reports.outputs import write_report
from cflbounds.reports.pdf import _claim_pages
from cflbounds.verify.verdict import Verdict

TRACEBACK = ('Traceback (most recent call last):\n  File "mine/checks.py", line 12, in check\n'
             "    return spread[key] / count  # a line long enough to need breaking on a page " + "x" * 80 + "\n"
             "KeyError: 'x'")
REPLAY = "cflbounds falsify --replay counterexamples/IFCA.T1.json"


def rate_verdict(claim_id="IFCA.T1", verdict="holds") -> dict:
    x = [100, 200, 400, 800]
    return Verdict(claim_id, verdict, {"slope": 1.02, "points": 4}, 0, 40, 0.95, "slope 1.02 [0.95, 1.11]",
                   "error <= C / sqrt(n)", "smoke",
                   plot=[{"kind": "rate", "title": "error vs n", "xlabel": "n", "ylabel": "error", "logx": True,
                          "logy": True, "x": x, "series": [{"label": "measured", "y": [1 / v for v in x]}]},
                         {"kind": "bar", "title": "margins", "xlabel": "inequality", "ylabel": "margin",
                          "x": ["a", "b"], "series": [{"label": "margin", "y": [0.5, 2.0], "fails": [True, False]}],
                          "reference": [{"y": 1.0, "label": "tight"}]}]).to_dict()


def error_verdict() -> dict:
    return Verdict("MINE.X", "error", {}, 0, 0, 0.0, "check raised KeyError: 'x' (at mine/checks.py:12)",
                   "a plugin's claim", "smoke",
                   details={"error_stage": "check", "error_kind": "KeyError", "error_message": "'x'",
                            "error_where": "mine/checks.py:12", "error_traceback": TRACEBACK}).to_dict()


def searched_verdict() -> dict:
    """A verdict the search changed: designed experiment vacuous, a confirmed counterexample."""
    return {**rate_verdict("IFCA.C1", "violated"),
            "designed": {"verdict": "vacuous", "summary": "the bound exceeds the trivial one everywhere"},
            "search": {"outcome": "violated", "best_ratio": 3.2, "evaluations": 412, "seconds": 31.5,
                       "counterexample": {"parameters": {"n": 3, "sigma": 0.25}, "seed": 7, "measured": 0.8,
                                          "bound": 0.25, "ratio": 3.2},
                       "confirmation": {"interval": [2.9, 3.4], "trials": 200, "summary": "200/200 fresh seeds exceed"},
                       "coverage": None, "replay": REPLAY}}


VERDICTS = [rate_verdict(), rate_verdict("FC.A2", "violated"), error_verdict(), searched_verdict()]


@pytest.fixture(scope="module")
def page():
    return html_report(VERDICTS, "cflbounds verify", datetime.now(timezone.utc), metadata={"scale": "smoke"})


def test_the_page_is_valid_html(page):
    """html5lib's strict mode raises on any parse error of the HTML5 specification; ids are
    unique (every figure's clip paths and glyphs prefixed apart)."""
    document = html5lib.HTMLParser(strict=True, namespaceHTMLElements=False).parse(page)
    ids = [element.get("id") for element in document.iter() if element.get("id")]
    assert len(ids) == len(set(ids))
    assert page.startswith("<!DOCTYPE html>")


def test_every_claim_and_figure_is_there(page):
    document = html5lib.parse(page, namespaceHTMLElements=False)
    sections = {s.get("id"): s for s in document.iter("section")}
    assert set(sections) == {anchor(v["id"]) for v in VERDICTS} and anchor("IFCA.T1") == "claim-IFCA.T1"
    for verdict in VERDICTS:
        figures = [f for f in sections[anchor(verdict["id"])].iter("figure") if list(f.iter("{http://www.w3.org/2000/svg}svg"))]
        assert len(figures) == len(verdict["plot"]), verdict["id"]  # every figure, none left out for room
    rows = document.find(".//table[@id='verdicts']/tbody").findall("tr")
    assert [(r.get("data-paper"), r.get("data-verdict")) for r in rows] == [
        ("IFCA", "holds"), ("FC", "violated"), ("MINE", "error"), ("IFCA", "violated")]
    assert [a.get("href") for r in rows for a in r.iter("a")] == [f"#{anchor(v['id'])}" for v in VERDICTS]
    options = {s.get("id"): [o.get("value") for o in s.iter("option")] for s in document.iter("select")}
    assert options == {"filter-paper": ["", "FC", "IFCA", "MINE"],
                       "filter-verdict": ["", "error", "violated", "holds"]}


def external_loads(page: str) -> list[str]:
    """What in ``page`` would fetch something: any src, a link but to an anchor of the page,
    @import, a <link>, url( but to a fragment or a data URI, an http(s) address (the SVG
    namespace names excepted: they are names, not fetched)."""
    found = re.findall(r"\bsrc\s*=\s*\S+", page, re.I)
    found += [link for link in re.findall(r'href\s*=\s*"([^"]*)"', page, re.I) if not link.startswith("#")]
    found += re.findall(r"@import|<link\b", page, re.I)
    found += [t for t in re.findall(r"url\(\s*['\"]?([^)'\"]*)", page) if not t.startswith(("#", "data:"))]
    return found + re.findall(r"https?://(?!www\.w3\.org/)\S+", page)


def test_nothing_is_loaded_from_outside(page):
    assert external_loads(page) == []


@pytest.mark.parametrize("bad", ['<img src="https://example.org/a.png">', '<a href="other.html">x</a>',
                                 "<style>@import 'x.css';</style>", '<div style="background: url(x.png)"></div>'])
def test_an_external_load_is_seen(page, bad):
    assert external_loads(page.replace("<main>", "<main>" + bad))


def test_a_failed_claim_shows_its_traceback_as_code(page):
    entry = claim_entry(error_verdict(), reproduce="cflbounds verify MINE.X --scale smoke --seed 0")
    assert [b.text for b in entry.blocks if isinstance(b, Code)] == [TRACEBACK]
    document = html5lib.parse(page, namespaceHTMLElements=False)
    section = next(s for s in document.iter("section") if s.get("id") == anchor("MINE.X"))
    assert [c.text for c in section.iter("code") if "Traceback" in (c.text or "")] == [TRACEBACK]
    (pdf_page,) = _claim_pages(entry, "report.html")
    monospace = [t.get_text() for t in pdf_page.texts if "monospace" in t.get_fontfamily()]
    assert monospace[1] == "Traceback (most recent call last):"  # after the reproduce line, kept as written
    assert any(line.startswith("    return spread[key]") for line in monospace)
    assert max(t.get_window_extent().x1 for t in pdf_page.texts) <= pdf_page.bbox.x1  # long lines broken


def test_a_searched_verdict_shows_both_results_and_the_replay_command(page):
    entry = claim_entry(searched_verdict())
    said = "\n".join(b.text for b in entry.blocks if isinstance(b, Paragraph))
    assert "designed experiment: vacuous — the bound exceeds the trivial one everywhere" in said
    assert "search: violated at n = 3, sigma = 0.25 (best measured/allowed 3.2, 412 evaluations, 31.5 s)" in said
    example = next(b for b in entry.blocks if isinstance(b, Table) and b.title == "Counterexample")
    assert ["ratio", "3.2"] in example.rows and ["confirmation interval", "[2.9, 3.4]"] in example.rows
    assert REPLAY in [b.text for b in entry.blocks if isinstance(b, Code)]
    (pdf_page,) = _claim_pages(entry, "report.html")
    assert REPLAY in [t.get_text() for t in pdf_page.texts]
    assert f"<code>{REPLAY}</code>" in page and "designed experiment: vacuous" in page


def test_a_verify_run_directory_gets_both_reports(tmp_path):
    """``write_report`` (used by verify and by ``cflbounds report DIR``) writes report.html
    beside report.pdf, with the run's settings from verdicts.json's metadata."""
    record = {"metadata": {"scale": "smoke", "seed": 0, "device": "cpu", "cflbounds": "0.1.0",
                           "command": ["cflbounds", "verify", "IFCA.T1"], "finished": "2026-11-28T01:17:38+00:00"},
              "verdicts": VERDICTS[:1]}
    (tmp_path / "verdicts.json").write_text(json.dumps(record))
    pdf = write_report(tmp_path)
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert pdf.read_bytes().startswith(b"%PDF")
    html5lib.HTMLParser(strict=True).parse(html)
    assert "cflbounds verify IFCA.T1 --scale smoke --seed 0" in html and "2026-11-28 01:17:38+00:00" in html


def test_build_html_writes_the_page(tmp_path):
    path = build_html(VERDICTS[:1], tmp_path / "out" / "report.html", title="t")
    assert path.read_text(encoding="utf-8").count("<svg") == 2


@pytest.mark.parametrize("points, image", [(4000, True), (200, False)])
def test_a_dense_point_cloud_is_an_image_in_the_svg_and_the_figure_comes_back_as_it_was(points, image):
    """Thousands of markers as vectors were most of a report's bytes: a cloud of more than
    ``_RASTER_POINTS`` goes into the page's SVG as one image (text and axes stay vectors, and a
    small cloud stays vector markers); the figure keeps its own setting and dpi for the PDF."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    from cflbounds.reports.html import figure_svg

    rng = __import__("numpy").random.default_rng(0)
    figure = Figure(figsize=(4, 3), dpi=100)
    ax = figure.add_subplot()
    cloud = ax.scatter(*rng.standard_normal((2, points)), s=8)
    ax.set_xlabel("distance")
    svg = figure_svg(figure, "f1-")
    assert ("<image" in svg) is image
    assert svg.count("<path") > 10  # the axes, ticks and text are still vectors
    assert not cloud.get_rasterized() and figure.dpi == 100
    if image:
        cloud.set_rasterized(False)
        assert len(svg) < len(figure_svg_vector(figure)) / 3  # far fewer bytes than the vector markers


def figure_svg_vector(figure) -> str:
    """The figure's SVG with every marker a vector (the page's form before clouds became images)."""
    import io

    from matplotlib.backends.backend_svg import FigureCanvasSVG

    buffer = io.StringIO()
    FigureCanvasSVG(figure).print_svg(buffer)
    return buffer.getvalue()
