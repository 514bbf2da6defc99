"""What the commands print fits the terminal (issue 45, section 2): tables, progress lines and
``--help`` at 60, 80 and 200 columns (``$COLUMNS``, as a terminal of that width sets it).

A line may be wider only where one word alone is (a path, a formula without spaces), which is
never broken; every such place is named in the test that allows it. The tables are checked
through the functions the commands print them with, on the verdicts of one real run at smoke
and on planted ones with long summaries and IDs; one verify and one falsify run end to end.
"""
import argparse
import re
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cflbounds.cli import _parser, main
from cflbounds.cli._common import table
from cflbounds.cli.falsify import results_table
from cflbounds.cli.verify import verdict_table
from cflbounds.verify.progress import PlainDisplay, TerminalDisplay, fit_line, verdict_line
from cflbounds.verify.verdict import Verdict
from conftest import examples

WIDTHS = (60, 80, 200)
HELP_LINES = 60  # at 80 columns: a synopsis, each option in a line or two, an example, the docs page
LONG = ("no decrease is promised on any admissible problem: rho0 >= c4 l = l/4 (A27) exceeds the factor's gain "
        "(l mu/(8L)) ||chi - chi*|| unless ||chi - chi*|| > 8 c4 L/mu >= 2, beyond Assumption 4's radius; "
        "measured: bound exceeded in 0/240 runs at the last step (per family and beta, 95% CI up to 0.088)") * 2


def _too_wide(text: str, width: int) -> list[str]:
    return [line for line in text.splitlines() if len(line) > width]


def _words(text: str) -> Counter:
    """The words of a table's text, its rule of dashes left out."""
    return Counter(word for line in text.splitlines() if set(line) - {"-", " "} for word in line.split())


short_words = st.text("abcdefghij.,()=<>*/", min_size=1, max_size=8)
cells = st.lists(short_words, max_size=12).map(" ".join)


@given(columns=st.integers(1, 5), data=st.data(), width=st.sampled_from(WIDTHS))
@examples(60)
def test_a_table_fits_its_width_and_keeps_every_word(columns, data, width):
    """Columns of words up to 8 characters (the last one's up to 12) fit 60 columns side by
    side, so no line may be wider, and every word of every cell is printed once, unbroken."""
    header = data.draw(st.lists(short_words, min_size=columns, max_size=columns))
    last = st.lists(st.text("klmnopqrstuv", min_size=1, max_size=12), max_size=60).map(" ".join)
    rows = data.draw(st.lists(st.tuples(*([cells] * (columns - 1)), last).map(list), max_size=6))
    text = table(header, rows, width)
    assert not _too_wide(text, width)
    assert _words(text) == Counter(word for row in [header, *rows] for cell in row for word in cell.split())


def test_a_word_longer_than_the_room_stays_whole_on_its_own_line():
    """The one exception: a path longer than the terminal is printed whole (to paste it), and
    only the line holding it is wider."""
    path = "/tmp/" + "x" * 90 + "/verdicts.json"
    for width in WIDTHS:
        text = table(["claim", "where"], [["IFCA.A1", f"written to {path} after the claim"], ["IFCA.A2", "ok"]],
                     width)
        assert all(path in line for line in _too_wide(text, width)), text
        assert _words(text)[path] == 1


@pytest.mark.parametrize("width", WIDTHS)
def test_the_layout_at_each_width(width):
    """Wide enough: one line per row; narrower: the summary wraps in its column; narrower still
    (less than 20 left for it): under its row, indented, its name under the header."""
    rows = [["IFCA.T1", "rate-inconsistent", "160", "1.6", "one step from Delta/4: contraction > 1/2 in 0/160 trials " * 2]]
    text = table(["claim", "verdict", "trials", "seconds", "summary"], rows, width)
    lines = text.splitlines()
    if width == 200:
        assert len(lines) == 3 and lines[2].startswith("IFCA.T1") and lines[2].endswith("trials")
    elif width == 80:
        assert lines[0].split() == ["claim", "verdict", "trials", "seconds", "summary"] and len(lines) > 3
        column = lines[0].index("summary")
        assert all(line[:column].strip() == "" for line in lines[3:])
    else:
        assert lines[0].split() == ["claim", "verdict", "trials", "seconds"] and lines[1] == "    summary"
        assert lines[3].split() == ["IFCA.T1", "rate-inconsistent", "160", "1.6"] and lines[4].startswith("    one step")
    assert not _too_wide(text, width)


def _verdict(claim_id="IFCA.T1", summary=LONG, verdict="holds") -> dict:
    return {"id": claim_id, "verdict": verdict, "trials": 160, "seconds": 1.6, "summary": summary}


@pytest.mark.parametrize("width", WIDTHS)
def test_verify_and_falsify_tables_fit(width):
    """Long summaries and a plugin's long claim ID: every line fits, verify shows each claim's
    first clause (the report has the rest), falsify the whole short summary."""
    verdicts = [_verdict(), _verdict("TEXTBOOK.GD-PLANTED", "x; y", "rate-inconsistent")]
    text = verdict_table(verdicts, width)
    assert not _too_wide(text, width) and "TEXTBOOK.GD-PLANTED" in text
    assert "y" not in text.split()  # the second clause is the report's
    results = [{"id": "TEXTBOOK.HOEFFDING-PLANTED", "outcome": "no counterexample found", "seconds": 121.0,
                "summary": "no counterexample found: best measured/allowed 1 - 9.7e-10 [0.9984, 1 - 9.7e-10] at L "
                           "= 1, mu_over_L = 0.4000, eta_fraction = 0.9999989, T = 1, d = 2, alignment = 1"}]
    text = results_table(results, width)
    assert not _too_wide(text, width) and _words(text)["eta_fraction"] == 1


@pytest.mark.parametrize("width", WIDTHS)
def test_claims_fits(capsys, monkeypatch, width):
    monkeypatch.setenv("COLUMNS", str(width))
    for argv in (["claims"], ["claims", "--costs"], ["claims", "--check"]):
        assert main(argv) == 0, argv
        assert not _too_wide(capsys.readouterr().out, width), argv


@pytest.mark.parametrize("width", WIDTHS)
def test_progress_lines_fit(width, monkeypatch):
    """A finished claim's line (plain and live) and the live status line, with a long ID, a long
    summary and a sweep's cells."""
    monkeypatch.setenv("COLUMNS", str(width))
    verdict = Verdict("TEXTBOOK.HOEFFDING-PLANTED", "rate-inconsistent", {}, 7, 0.95, 0, LONG, seconds=1234.5)
    line = verdict_line(verdict, 27, 28, id_width=26)
    assert len(line) <= width and line.startswith("[27/28] TEXTBOOK.HOEFFDING-PLANTED rate-inconsistent")
    assert len(fit_line("falsify FC.T1: " + LONG)) <= width
    display = TerminalDisplay(None, refresh=None, clock=lambda: 5000.0)
    display.start(["TEXTBOOK.HOEFFDING-PLANTED", "IFCA.F2"])
    display.claim_started("TEXTBOOK.HOEFFDING-PLANTED")
    display.cells(12, 40)
    assert len(display.status()) < width  # the cursor's column stays free


def _widths_of_a_run(out: str, err: str, width: int) -> None:
    """stdout and stderr of a run fit ``width``, but for lines of a label and one path (the run
    directory's files, printed whole to be pasted): a path that alone is wider."""
    for line in _too_wide(out, width) + _too_wide(err, width):
        label, _, path = line.rpartition(" ")
        assert "/" in path and len(label.split()) <= 1 and len(path) > width - len(label) - 1, line


def test_verify_end_to_end_fits(capsys, monkeypatch, tmp_path):
    """``cflbounds verify IFCA.A2 --scale smoke`` at 60 columns: the progress line on stderr, the
    table and the paths on stdout."""
    monkeypatch.setenv("COLUMNS", "60")
    assert main(["verify", "IFCA.A2", "--scale", "smoke", "--out", str(tmp_path / "run"), "--isolation", "none"]) == 0
    out, err = capsys.readouterr()
    _widths_of_a_run(out, err, 60)
    assert err.startswith("[1/1] IFCA.A2") and "IFCA.A2" in out


def test_falsify_end_to_end_fits(capsys, monkeypatch, tmp_path):
    """``cflbounds falsify LCFL.E8 --evaluations 5`` at 60 columns: its progress lines and table."""
    monkeypatch.setenv("COLUMNS", "60")
    argv = ["falsify", "LCFL.E8", "--evaluations", "5", "--out", str(tmp_path / "run"), "--isolation", "none"]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    _widths_of_a_run(out, err, 60)
    assert "falsify LCFL.E8: no counterexample found" in err and "measured/allowed" in out


def _subcommands() -> dict:
    parser = _parser()
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices


@pytest.mark.parametrize("command", ["", *_subcommands()])
def test_help_fits_the_prompt(capsys, monkeypatch, command):
    """Each command's --help at 80 columns: at most 60 lines, none wider (at 60 and 200 columns
    too: the description follows the terminal as the options do), every option described and
    the docs named."""
    argv = [command, "--help"] if command else ["--help"]
    for width in WIDTHS:
        monkeypatch.setenv("COLUMNS", str(width))
        assert main(argv) == 0
        text = capsys.readouterr().out
        wide = _too_wide(text, width)
        assert not wide, wide
        if width == 80:
            assert len(text.splitlines()) <= HELP_LINES, (command, len(text.splitlines()))
            lines = text.splitlines()
    if command == "bound":  # its options are each formula's: `bound ID --help` (test_cli.py)
        return
    assert re.search(r"docs/|README", text), "the --help names the page that says the rest"
    subparser = _subcommands()[command] if command else _parser()
    for action in subparser._actions:
        if action.option_strings and action.dest != "help":
            assert action.help and len(action.help) > 10, action.option_strings
            flag = action.option_strings[-1]
            entry = next(i for i, line in enumerate(lines) if line.lstrip().startswith(flag))
            assert len(lines[entry].split()) > 2 or lines[entry + 1].startswith(" " * 10), (flag, lines[entry])
