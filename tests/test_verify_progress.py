"""verify's one progress display and its ETA from measured claim costs."""
import io
import json
import re
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cflbounds.cli import main
from cflbounds.verify import VerifyContext, verify_claims
from cflbounds.verify.costs import COSTS_FILE, claim_costs, duration, remaining_seconds, rough_duration
from cflbounds.verify.progress import PlainDisplay, RunDisplay, TerminalDisplay, run_display, verdict_line
from cflbounds.verify.run import implemented_claims
from cflbounds.verify.verdict import Verdict
from conftest import load_benchmark


def verdict(claim_id, seconds, summary="all good", word="holds"):
    return Verdict(claim_id, word, {}, 0, 1, 0.95, summary, seconds=seconds)


class Clock:
    """A clock the test moves by hand."""

    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


# -- the ETA ------------------------------------------------------------------------------------
def test_eta_before_anything_finished_is_the_recorded_costs():
    assert remaining_seconds({"A": 10.0, "B": 20.0}, {}, ["A", "B"]) == 30.0


def test_eta_scales_by_the_observed_speed():
    """A finished in 30 s where 10 were recorded: the machine runs 3x slower, so B's 20 s take 60."""
    assert remaining_seconds({"A": 10.0, "B": 20.0}, {"A": 30.0}, ["B"]) == pytest.approx(60.0)


def test_eta_counts_the_rest_of_the_running_claim_and_never_below_zero():
    costs = {"A": 10.0, "B": 20.0, "C": 5.0}
    assert remaining_seconds(costs, {"A": 10.0}, ["C"], ("B", 12.0)) == pytest.approx(5.0 + 8.0)
    assert remaining_seconds(costs, {"A": 10.0}, ["C"], ("B", 50.0)) == pytest.approx(5.0)


def test_eta_without_a_recorded_cost_uses_the_mean_finished_claim_or_gives_up():
    assert remaining_seconds({"A": 10.0}, {}, ["A", "X"]) is None  # nothing to go on for X
    assert remaining_seconds({"A": 10.0}, {"A": 20.0, "B": 40.0}, ["X"]) == pytest.approx(30.0)


@given(st.dictionaries(st.sampled_from("ABCDEF"), st.floats(0.01, 1e4), min_size=2),
       st.floats(0.1, 10.0))
def test_eta_follows_the_machine_speed(costs, slowdown):
    """If every finished claim took ``slowdown`` times its recorded cost, the rest are expected
    to as well: the ETA is the pending claims' recorded costs times ``slowdown``."""
    claims = sorted(costs)
    finished = {claim: costs[claim] * slowdown for claim in claims[:1]}
    expected = slowdown * sum(costs[claim] for claim in claims[1:])
    assert remaining_seconds(costs, finished, claims[1:]) == pytest.approx(expected, rel=1e-9)


def test_durations_read_as_times():
    assert [duration(s) for s in (None, 0, 42.4, 725, 7390)] == ["?", "0:00", "0:42", "12:05", "2:03:10"]
    assert [rough_duration(s) for s in (45, 600, 9000)] == ["45 s", "10 min", "2.5 h"]


# -- the displays -------------------------------------------------------------------------------
def test_plain_display_prints_one_line_per_finished_claim_and_nothing_else():
    stream = io.StringIO()
    display = PlainDisplay(stream)
    display.start(["A.1", "B.2"], kept=1)
    display.claim_started("A.1")
    display.cells(3, 10)
    display.claim_finished(verdict("A.1", 1.25, "x" * 500))
    display.claim_started("B.2")
    display.claim_finished(verdict("B.2", 0.5, word="violated"))
    display.close()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2
    assert re.fullmatch(r"\[2/3\] A\.1 +holds +1\.2 s  x+\.\.\.", lines[0]) and len(lines[0]) < 160
    assert re.fullmatch(r"\[3/3\] B\.2 +violated +0\.5 s  all good", lines[1])


def test_terminal_display_is_one_live_line_with_verdicts_above_it():
    stream, clock = io.StringIO(), Clock()
    display = TerminalDisplay(stream, refresh=None, costs={"A.1": 10.0, "B.2": 20.0}, clock=clock)
    display.start(["A.1", "B.2"])
    display.claim_started("A.1")
    clock.now += 5
    assert display.status() == "verify 0/2 claims | A.1 | 0:05 elapsed | ETA 0:25"
    display.cells(12, 40)
    assert "| A.1 cells 12/40 |" in display.status()
    clock.now += 25  # A.1 took 30 s: three times its recorded cost
    display.claim_finished(verdict("A.1", 30.0))
    display.claim_started("B.2")
    assert display.status() == "verify 1/2 claims | B.2 | 0:30 elapsed | ETA 1:00"
    display.close()
    written = stream.getvalue()
    assert "[1/2] A.1" in written and "\n" in written.split("[1/2] A.1")[1]  # a line of its own
    assert "cells 12/40" in written and written.count("verify ") >= 3  # the live line, redrawn


def test_terminal_display_counts_claims_running_as_ray_tasks():
    stream, clock = io.StringIO(), Clock()
    display = TerminalDisplay(stream, refresh=None, costs={"A.1": 10.0, "B.2": 20.0, "C.3": 30.0}, clock=clock)
    display.start(["A.1", "B.2", "C.3"])
    display.claims_scheduled(["A.1", "B.2", "C.3"])  # all at once, as verify --executor ray does
    clock.now += 4
    assert display.status() == "verify 0/3 claims | 3 running as Ray tasks | 0:04 elapsed | ETA 1:00"
    display.claim_finished(verdict("B.2", 20.0))  # any order
    assert display.status() == "verify 1/3 claims | 2 running as Ray tasks | 0:04 elapsed | ETA 0:40"
    display.claim_finished(verdict("C.3", 30.0))
    display.claim_finished(verdict("A.1", 10.0))
    assert display.status().startswith("verify 3/3 claims | - |")
    display.close()
    assert re.findall(r"\[\d/3\] (\S+)", stream.getvalue()) == ["B.2", "C.3", "A.1"]  # as they finished


def test_terminal_display_redraws_while_a_claim_runs():
    """The refresh thread moves elapsed time without any call from the run (a clock that
    counts how often it is read shows that it redraws)."""
    stream = io.StringIO()
    reads = []

    def clock():
        reads.append(1)
        return float(len(reads))

    display = TerminalDisplay(stream, refresh=0.01, clock=clock)
    display.start(["A.1"])
    display.claim_started("A.1")
    drawn = len(reads)
    for _ in range(3000):  # waits for the thread, at most 30 s on a starved machine; never timed
        if len(reads) > drawn + 4:
            break
        time.sleep(0.01)
    display.close()
    assert len(reads) > drawn + 4


def test_run_display_is_plain_off_a_terminal():
    assert isinstance(run_display(io.StringIO()), PlainDisplay)
    assert isinstance(run_display(io.StringIO(), interactive=True), TerminalDisplay)


def test_verdict_line_is_cut_to_the_width(monkeypatch):
    """A verdict's line holds its summary's first clause, cut to the width (the terminal's, or
    given): a cut ends in "...", never "~" (the papers' "<~")."""
    line = verdict_line(verdict("IFCA.T1", 3.0, "s" * 300), 1, 2, width=80)
    assert len(line) == 80 and line.endswith("...")
    monkeypatch.setenv("COLUMNS", "60")
    assert len(verdict_line(verdict("IFCA.T1", 3.0, "s" * 300), 1, 2)) == 60
    assert verdict_line(verdict("IFCA.T1", 3.0, "fits; the rest (with a; inside)"), 1, 2, width=80).endswith("  fits")


# -- in a run -----------------------------------------------------------------------------------
class Recording(RunDisplay):
    def __init__(self):
        super().__init__()
        self.events = []

    def claim_started(self, claim_id):
        super().claim_started(claim_id)
        self.events.append(("started", claim_id))

    def cells(self, done, total):
        self.events.append(("cells", done, total))

    def claim_finished(self, verdict):
        super().claim_finished(verdict)
        self.events.append(("finished", verdict.id))


def test_a_sweep_reports_its_cells_to_the_run_display_not_a_bar_of_its_own(tmp_path, capfd):
    """IFCA.F2 runs its Fig. 2 sweep with cells: asked for a bar (progress=True), it still
    reports to the one display and draws nothing on stderr."""
    display = Recording()
    context = VerifyContext(scale="smoke", seed=0, device="cpu", workdir=tmp_path, progress=True)
    verify_claims(["IFCA.A2", "IFCA.F2"], context, display=display)
    cells = [event for event in display.events if event[0] == "cells"]
    assert display.events[0] == ("started", "IFCA.A2") and display.events[-1] == ("finished", "IFCA.F2")
    assert cells[0] == ("cells", 0, cells[-1][2]) and cells[-1][1] == cells[-1][2] > 1
    assert [done for _, done, _ in cells] == list(range(cells[-1][2] + 1))
    assert capfd.readouterr().err == ""
    assert context.progress is True  # the context's own setting is back after the run


def test_cli_json_keeps_stdout_for_json_and_progress_on_stderr(capsys, tmp_path):
    code = main(["verify", "IFCA.A2", "IFCA.A1", "--scale", "smoke", "--out", str(tmp_path / "run"), "--json"])
    out, err = capsys.readouterr()
    assert code == 0
    assert [v["id"] for v in json.loads(out)["verdicts"]] == ["IFCA.A2", "IFCA.A1"]
    assert [line.split()[:2] for line in err.splitlines()] == [["[1/2]", "IFCA.A2"], ["[2/2]", "IFCA.A1"]]


def test_help_costs_come_from_the_costs_file(capsys, tmp_path, monkeypatch):
    """verify --help states each scale's total and `claims --costs` each claim's cost as the
    costs file records them (a planted file changes both), and both say when a scale was never
    measured."""
    import cflbounds.verify.costs as costs

    claims = implemented_claims()
    planted = {"scales": {"default": {
        "measured": {"date": "2030-01-02T03:04:05+00:00", "cpus": 2, "processor": "x86_64", "threads": 1,
                     "load_before": [0.1, 0.1, 0.1], "load_after": [0.2, 0.2, 0.2], "note": "a quiet box"},
        "seconds": {claim: 7.25 for claim in claims}}}}
    path = tmp_path / "costs.json"
    path.write_text(json.dumps(planted))
    monkeypatch.setattr(costs, "COSTS_FILE", path)
    assert claim_costs("default") == {claim: 7.25 for claim in claims}
    assert main(["verify", "--help"]) == 0
    flat = " ".join(capsys.readouterr().out.split())
    assert (f"smoke (tiny problems), default (the default) or paper (the papers' sizes); their claims took not "
            f"measured yet, {rough_duration(7.25 * len(claims))} and not measured yet") in flat
    assert main(["claims", "--costs"]) == 0
    text = capsys.readouterr().out
    flat = " ".join(text.split())
    assert "measured 2030-01-02 on 2 CPUs" in flat and "a quiet box" in flat and "smoke: not measured yet" in flat
    rows = [line.split() for line in text.splitlines() if line.split()[:1] and line.split()[0] in claims]
    assert len(rows) == len(claims) and all(row[1:] == ["-", "7.2", "-"] for row in rows)


def test_every_verify_option_has_help(capsys):
    from cflbounds.cli import _parser

    verify = _parser()._subparsers._group_actions[0].choices["verify"]
    options = [action for action in verify._actions if action.option_strings and action.dest != "help"]
    assert {a.option_strings[0] for a in options} >= {"--scale", "--seed", "--device", "--executor", "--threads",
                                                      "--resume", "--out", "--json", "--strict"}
    assert all(action.help and len(action.help) > 20 for action in options)


def test_docs_cost_table_is_the_costs_file():
    """docs/verify-runs.md's table of claim costs is generated from claim_costs.json (numbers are
    never copied by hand): after a new measurement, regenerate it with the script's --markdown."""
    root = Path(__file__).resolve().parents[1]
    script = load_benchmark("measure_claim_costs")
    assert script.markdown(COSTS_FILE) in (root / "docs" / "verify-runs.md").read_text(encoding="utf-8")


def test_docs_performance_table_is_the_costs_file():
    """docs/performance.md opens with each paper's claims added up from claim_costs.json
    (regenerate it with the script's --families after a new measurement)."""
    root = Path(__file__).resolve().parents[1]
    script = load_benchmark("measure_claim_costs")
    page = (root / "docs" / "performance.md").read_text(encoding="utf-8")
    assert f"<!-- family-costs:start -->\n{script.family_markdown(COSTS_FILE)}\n<!-- family-costs:end -->" in page
    assert page.index("## How long will my run take") < page.index("## Current figures")


def test_added_claims_join_a_scales_costs_and_say_when(tmp_path):
    """``measure_claim_costs.py --add``: new claims' seconds join the scale's entry, the rest and
    its measurement kept, the added measurement named in the costs' text."""
    from cflbounds.verify.costs import measurement_text

    script = load_benchmark("measure_claim_costs")
    old = {"measured": {"date": "2026-11-26T00:00:00", "cpus": 2, "processor": "x86_64", "threads": 2, "note": "quiet"},
           "seconds": {"A.1": 1.0, "B.1": 60.0}, "at_least": ["B.1"]}
    new = {"measured": {"date": "2026-12-08T00:00:00", "threads": 1, "note": "busy"}, "seconds": {"B.1": 2.0, "C.1": 3.0},
           "at_least": []}
    entry = script.added(old, new)
    assert entry["seconds"] == {"A.1": 1.0, "B.1": 2.0, "C.1": 3.0} and entry["at_least"] == []
    assert entry["measured"] == old["measured"] and entry["added"][0]["claims"] == ["B.1", "C.1"]
    path = tmp_path / "costs.json"
    path.write_text(json.dumps({"scales": {"smoke": entry}}))
    assert measurement_text("smoke", path).endswith("; quiet; 2 claims added 2026-12-08 (1 torch thread(s), busy)")
    assert script.added(None, new) == new
    again = script.added(entry, {**new, "seconds": {"C.1": 4.0}})  # C.1 re-measured: B.1's record stays
    assert [record["claims"] for record in again["added"]] == [["B.1", "C.1"], ["C.1"]]
    assert [record["claims"] for record in script.added(again, new)["added"]] == [["B.1", "C.1"]]
