"""The falsify run's reports, measured as a reviewer reads them: one small real run (the
textbook example's claims, two that hold and two planted errors, ``--evaluations 30``) writes
report.pdf and report.html;
every claim page holds the search curve with the coverage statement under it, the
confirmation on fresh seeds (integer ticks: seeds are counted) and the evidence, on one page
that is not near-empty, legibly (the figure checks of :mod:`test_report_quality`, on the page
as printed); page 1 names each claim on one line; the HTML page is valid, self-contained,
has a section per claim with its figures and each counterexample's replay command, copyable;
``cflbounds report DIR`` rebuilds both from falsify.json. About 20 seconds."""
from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from importlib.metadata import EntryPoint

import html5lib
import pytest

from cflbounds.cli import main
from cflbounds.falsify.outputs import report_entry
from cflbounds.reports.content import anchor
from cflbounds.reports.pdf import report_pages
from cflbounds.verify import registry, workers
from conftest import EXAMPLE, REAL_ENTRY_POINTS
from test_report_html import external_loads
from test_report_quality import NEAR_EMPTY, _ink_depths, figure_problems

CLAIMS = ("TEXTBOOK.GD", "TEXTBOOK.GD-PLANTED", "TEXTBOOK.HOEFFDING", "TEXTBOOK.HOEFFDING-PLANTED")
SVG = "{http://www.w3.org/2000/svg}svg"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """The run directory and its falsify.json; the example plugin (examples/textbook) stays
    registered for the module's tests (the reports name each claim's statement)."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.syspath_prepend(str(EXAMPLE))
        monkeypatch.setattr(registry, "entry_points", lambda group: [
            *REAL_ENTRY_POINTS(group=group), EntryPoint("textbook", "cflbounds_textbook:CLAIMS", registry.GROUP)])
        monkeypatch.setattr(workers, "DEFAULT_ISOLATION", "none")  # registered in this process only
        registry.reload()
        directory = tmp_path_factory.mktemp("falsify") / "run"
        code = main(["falsify", *CLAIMS, "--evaluations", "30", "--seed", "0", "--out", str(directory),
                     "--isolation", "none"])  # the example plugin is registered in this process only
        assert code == 0
        yield directory, json.loads((directory / "falsify.json").read_text())
    registry.reload()


@pytest.fixture(scope="module")
def pages(run):
    """The PDF's pages as matplotlib figures, laid out as written."""
    directory, record = run
    entries = [report_entry(result, "statement", directory) for result in record["results"]]
    return report_pages(entries, "cflbounds falsify", datetime.now(timezone.utc), metadata=record["metadata"])


def _words(page) -> str:
    return " ".join(" ".join(text.get_text() for text in page.texts).split())


def test_a_falsify_run_writes_both_reports(run):
    directory, record = run
    assert {r["outcome"] for r in record["results"]} >= {"violated"}
    assert (directory / "report.pdf").read_bytes().startswith(b"%PDF")
    assert (directory / "report.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_one_page_a_claim_and_none_near_empty(run):
    directory, record = run
    depths = _ink_depths(directory / "report.pdf")
    assert len(depths) <= 1 + 1.2 * len(record["results"])
    short = [f"page {i}: {d:.2f}" for i, d in enumerate(depths[1:], 2) if d < NEAR_EMPTY]
    assert not short, short


def test_a_claim_page_holds_search_coverage_confirmation_and_evidence(run, pages):
    _, record = run
    for result, page in zip(record["results"], pages[1:]):
        words = _words(page)
        assert words.startswith(result["id"]) and "Evidence" in words, result["id"]
        assert " ".join(result["coverage"]["statement"].split()) in words, result["id"]  # under the search curve
        titles = [ax.get_title() for ax in page.get_axes()]
        assert any(t.startswith("Search:") for t in titles) and any(t.startswith("Confirmation") for t in titles)
        if result["counterexample"]:  # a long command is broken across code lines: compared without blanks
            code = "".join(t.get_text() for t in page.texts if "monospace" in t.get_fontfamily())
            replay = f"cflbounds falsify --replay {run[0] / 'counterexamples' / (result['id'] + '.json')}"
            assert re.sub(r"\s", "", replay) in re.sub(r"\s", "", code)


def test_the_pages_are_legible_and_the_seed_axis_counts(pages):
    problems = {i: found for i, page in enumerate(pages[1:], 2) if (found := figure_problems(page))}
    assert not problems, problems
    for page in pages[1:]:
        (seeds,) = [ax for ax in page.get_axes() if ax.get_xlabel() == "fresh seed"]
        low, high = seeds.get_xlim()
        ticks = [t for t in seeds.get_xticks() if low <= t <= high]
        assert len(ticks) >= 3 and all(float(t).is_integer() for t in ticks), ticks  # not 2.5, 7.5


def test_page_one_names_each_claim_on_one_line(run, pages):
    texts = [text.get_text() for text in pages[0].texts]
    ids = [result["id"] for result in run[1]["results"]]
    assert all(claim_id in texts for claim_id in ids)
    pieces = [t for t in texts if t not in ids and any(claim_id.startswith(t) for claim_id in ids)]
    assert not pieces, pieces  # an ID wrapped mid-word leaves its first piece on a line of its own


def test_the_html_report_is_valid_self_contained_and_complete(run):
    directory, record = run
    page = (directory / "report.html").read_text(encoding="utf-8")
    document = html5lib.HTMLParser(strict=True, namespaceHTMLElements=False).parse(page)
    assert external_loads(page) == []
    ids = [element.get("id") for element in document.iter() if element.get("id")]
    assert len(ids) == len(set(ids))
    sections = {section.get("id"): section for section in document.iter("section")}
    assert set(sections) == {anchor(result["id"]) for result in record["results"]}
    rows = document.find(".//table[@id='verdicts']/tbody").findall("tr")
    assert [row.get("data-verdict") for row in rows] == [result["outcome"] for result in record["results"]]
    assert {select.get("id") for select in document.iter("select")} == {"filter-paper", "filter-verdict"}
    for result in record["results"]:
        section = sections[anchor(result["id"])]
        assert len([f for f in section.iter("figure") if list(f.iter(SVG))]) == 2  # the search, the confirmation
        text = " ".join("".join(section.itertext()).split())
        assert " ".join(result["coverage"]["statement"].split()) in text
        commands = {div.find("pre/code").text: div.find("button").get("class")
                    for div in section.iter("div") if div.get("class") == "command"}
        assert commands[f"cflbounds falsify {result['id']} --evaluations 30 --seed 0"] == "copy"
        if result["counterexample"]:
            replay = f"cflbounds falsify --replay {directory / 'counterexamples' / (result['id'] + '.json')}"
            assert commands[replay] == "copy"


def test_report_rebuilds_a_falsify_directory(run, capsys):
    directory, _ = run
    before = len(_ink_depths(directory / "report.pdf"))
    for name in ("report.pdf", "report.html"):
        (directory / name).unlink()
    assert main(["report", str(directory)]) == 0
    out = capsys.readouterr().out
    assert str(directory / "report.pdf") in out and str(directory / "report.html") in out
    assert len(_ink_depths(directory / "report.pdf")) == before
    html5lib.HTMLParser(strict=True).parse((directory / "report.html").read_text(encoding="utf-8"))


def test_report_names_both_kinds_and_refuses_a_directory_of_neither(capsys, tmp_path):
    try:
        main(["report", "--help"])
    except SystemExit:
        pass
    help_text = " ".join(capsys.readouterr().out.split())
    assert re.search(r"verify run .* verdicts\.json", help_text)
    assert re.search(r"falsify run .* falsify\.json", help_text)
    assert main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "verdicts.json" in err[0] and "falsify.json" in err[0] and str(tmp_path) in err[0]
