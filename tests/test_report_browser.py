"""report.html in a real browser (headless Chromium, tests/chromium.py) at a phone's 420 px
and a desktop's 1400 px: the page never scrolls sideways (tables scroll in their own box or
reflow), nothing is reported on the console, every figure is drawn within the page, every
claim's section links back to the summary, sorting by verdict follows the verdicts' severity
(cflbounds.verify.verdict.PRECEDENCE), and the copy button says whether the clipboard took the
command. A verify report (hand-made verdicts with long words, wide tables and figures) and a
falsify report (a small real run of the example plugin's claims).

Skips where no chromium is installed (Debian's package: ``apt-get install chromium``; .ci/run
installs it before the suite)."""
from __future__ import annotations

import pytest

from cflbounds.reports.content import VERDICT_ORDER, severity
from cflbounds.reports.html import build_html
from cflbounds.verify.verdict import PRECEDENCE
from chromium import CHROMIUM, Chromium
from test_falsify_report import run  # noqa: F401 (the fixture: a falsify run of the example plugin's claims)
from test_report_html import VERDICTS, rate_verdict

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Debian: apt-get install "
                                                          "chromium; .ci/run installs it): the browser test skips")
WIDTHS = (420, 1400)


def wide_verdict() -> dict:
    """A verdict whose every block is wide: a long unbroken evidence name and path, seven
    assumption columns, a long statement and command."""
    return {**rate_verdict("LCFL.T1", "inconclusive"),
            "evidence": {"x" * 120: 1.0, "path": "/tmp/" + "very-long-directory-name/" * 8 + "table.parquet"},
            "assumptions": [{"name": f"assumption {i} with a long name", "lhs": 1.2345, "relation": "<=",
                             "rhs": 2.3456, "slack": 1.1111, "holds": i % 2 == 0,
                             "source": "LCFL Theorem 1 (Rademacher complexity of the loss class), " * 2}
                            for i in range(6)],
            "details": {"grid": {"panel a": {"m": [8, 48], "r": 0.32}, "trials": 12}}}


@pytest.fixture(scope="module")
def browser():
    with Chromium() as chromium:
        yield chromium


@pytest.fixture(scope="module")
def reports(tmp_path_factory, run):  # noqa: F811
    verdicts = [*VERDICTS, wide_verdict(), rate_verdict("MGD.MA", "vacuous"), rate_verdict("FC.H", "unsatisfiable")]
    verify = build_html(verdicts, tmp_path_factory.mktemp("html") / "report.html",
                        metadata={"scale": "smoke", "command": ["cflbounds", "verify", "IFCA.*", "--out",
                                                                "/tmp/" + "a-long-run-directory/" * 6]})
    directory, _ = run
    return {"verify": verify, "falsify": directory / "report.html"}


@pytest.mark.parametrize("kind", ["verify", "falsify"])
@pytest.mark.parametrize("width", WIDTHS)
def test_the_page_fits_and_draws_every_figure(browser, reports, kind, width):
    page = browser.open(reports[kind], width)
    sizes = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth, "
                          "document.body.scrollWidth]")
    assert sizes[0] <= sizes[1] <= width and sizes[2] <= sizes[1], sizes  # no sideways scroll (a scroll bar may take 15 px)
    figures = page.evaluate("Array.from(document.querySelectorAll('figure.plot')).map(function (f) {"
                            "  var svg = f.querySelector('svg'); if (!svg) { return null; }"
                            "  var box = svg.getBoundingClientRect(); return [box.left, box.right, box.height]; })")
    expected = reports[kind].read_text(encoding="utf-8").count('<figure class="plot">')
    assert expected and len(figures) == expected and None not in figures
    assert all(0 <= left and right <= width and height > 20 for left, right, height in figures), figures
    tables = page.evaluate("Array.from(document.querySelectorAll('table')).map(function (t) {"
                           "  var box = t.parentNode.getBoundingClientRect(); return [box.left, box.right]; })")
    assert all(0 <= left and right <= width for left, right in tables)  # a wide table scrolls inside its box
    assert page.errors() == []


@pytest.mark.parametrize("kind", ["verify", "falsify"])
def test_every_section_links_back_to_the_summary(browser, reports, kind):
    page = browser.open(reports[kind], 420)
    counts = page.evaluate("[document.querySelectorAll('section.claim').length, "
                           "document.querySelectorAll('section.claim a.back[href=\"#summary\"]').length, "
                           "document.querySelectorAll('#summary #verdicts').length]")
    assert counts[0] > 1 and counts == [counts[0], counts[0], 1]
    last = page.evaluate("var links = document.querySelectorAll('a.back'); links[links.length - 1].scrollIntoView();"
                         "links[links.length - 1].click(); new Promise(function (done) { setTimeout(function () {"
                         "done([window.scrollY, document.getElementById('summary').getBoundingClientRect().top]);"
                         "}, 100); })")
    assert abs(last[1]) < 2, last  # the summary's top is at the window's top


def test_sorting_by_verdict_follows_severity(browser, reports):
    page = browser.open(reports["verify"], 1400)
    column = "Array.from(document.querySelectorAll('#verdicts tbody tr')).map(function (r) { return r.dataset.verdict; })"
    click = "document.querySelectorAll('#verdicts th')[2].click();"
    ascending = page.evaluate(click + column)
    assert [severity(v) for v in ascending] == sorted(severity(v) for v in ascending)
    assert ascending[0] == "error" and ascending.index("violated") < ascending.index("unsatisfiable") \
        < ascending.index("vacuous") < ascending.index("inconclusive") < ascending.index("holds")  # not alphabetical
    assert page.evaluate(click + column) == ascending[::-1]
    assert [word for word in VERDICT_ORDER if word in PRECEDENCE] == list(PRECEDENCE)  # the order sorted by


@pytest.mark.parametrize("clipboard, said", [
    ("Promise.reject(new Error('denied'))", "not copied: the text is selected, press Ctrl+C"),
    ("Promise.resolve()", "copied"),
])
def test_the_copy_button_says_whether_it_copied(browser, reports, clipboard, said):
    """The browser's clipboard refusing the write (as it does without permission): the button
    says so and leaves the command selected; accepting it: "copied"."""
    page = browser.open(reports["verify"], 420)
    state = page.evaluate(
        "document.execCommand = function () { return false; };"  # the by-hand copy refused too, as without a click
        "Object.defineProperty(navigator, 'clipboard', {configurable: true, value: {writeText: function (text) {"
        f"  window.written = text; return {clipboard}; }} }} }});"
        "var button = document.querySelector('button.copy'); button.click();"
        "new Promise(function (done) { setTimeout(function () { done([button.textContent, window.written,"
        "  button.parentNode.querySelector('code').textContent, String(window.getSelection())]); }, 100); })")
    text, written, code, selected = state
    assert text == said and written == code and code.startswith("cflbounds ")
    assert selected == (code if said != "copied" else selected)
    assert page.errors() == []
