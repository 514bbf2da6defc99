"""``falsify --out DIR`` never overwrites a run's outputs: a directory holding a falsify run (or
another run's report) is refused in one line before any work, unless ``--resume`` (the same
settings; finished claims kept, claims that ended in ``error`` searched again) or
``--overwrite`` (the earlier outputs removed first); other files are left alone. The other
claims' results are those of a run of their own."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cflbounds.cli import main
from test_falsify_contained import EVALUATIONS, GOOD, alone, broken, falsify  # noqa: F401 (broken: a fixture)
from test_falsify_contract import without_timing

RUN = ["--evaluations", EVALUATIONS]


def one_line_refusal(capsys, *argv) -> str:
    assert main(["falsify", *map(str, argv)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


_EARLIER = {}


@pytest.fixture
def earlier(broken, capsys, tmp_path, tmp_path_factory):  # noqa: F811
    """A finished run in tmp_path/run: GOOD violated (its counterexample written), BROKEN.RAISES in
    error (made once, copied for each test: a run is deterministic with --evaluations)."""
    if "run" not in _EARLIER:
        made = tmp_path_factory.mktemp("earlier") / "run"
        assert falsify(capsys, GOOD, "BROKEN.RAISES", *RUN, "--out", made)[0] == 3
        _EARLIER["run"] = made
    return Path(shutil.copytree(_EARLIER["run"], tmp_path / "run"))


def test_an_existing_falsify_run_is_refused_and_left_as_it_was(earlier, capsys):
    files = {path: path.read_bytes() for path in earlier.rglob("*") if path.is_file()}
    line = one_line_refusal(capsys, "TOY.LINE", *RUN, "--out", earlier)
    assert line == (f"cflbounds falsify: error: {earlier / 'falsify.json'} already holds a falsify run; pass --resume to "
                    "continue it, --overwrite to replace it, or choose another --out.")
    assert {path: path.read_bytes() for path in earlier.rglob("*") if path.is_file()} == files


def test_resume_keeps_the_finished_claims_and_searches_the_rest_and_the_errors(earlier, capsys, tmp_path):
    before = json.loads((earlier / "falsify.json").read_text())
    code, record, err = falsify(capsys, GOOD, "BROKEN.RAISES", "TOY.LINE", *RUN, "--out", earlier, "--resume")
    assert code == 3  # BROKEN.RAISES was searched again and fails again
    assert f"falsify {GOOD}: kept from" in err and "falsify BROKEN.RAISES: 40 evaluations ..." in err
    results = {result["id"]: result for result in record["results"]}
    assert list(results) == [GOOD, "BROKEN.RAISES", "TOY.LINE"]
    assert results[GOOD] == before["results"][0]  # kept as it was, its timing included
    assert results["BROKEN.RAISES"]["outcome"] == "error"
    assert without_timing(results["TOY.LINE"]) == without_timing(alone(capsys, tmp_path, "TOY.LINE"))
    assert record["metadata"]["started"] == before["metadata"]["started"] and len(record["metadata"]["resumed"]) == 1
    assert json.loads((earlier / "falsify.json").read_text()) == record
    assert sorted(p.name for p in (earlier / "counterexamples").iterdir()) == [f"{GOOD}.json"]


def test_resume_keeps_the_claims_not_asked_and_judges_the_exit_by_those_asked(earlier, capsys):
    before = json.loads((earlier / "falsify.json").read_text())
    code, record, _ = falsify(capsys, "TOY.LINE", *RUN, "--out", earlier, "--resume")
    assert code == 0  # BROKEN.RAISES's error is kept in the record, not asked for here
    assert record["results"][:2] == before["results"] and record["results"][2]["id"] == "TOY.LINE"


@pytest.mark.parametrize("change, words", [
    (["--evaluations", "41"], "max evaluations 40, this run has 41"),
    (["--budget", "5"], "budget seconds None, this run has 5.0"),
    (["--seed", "1", *RUN], "seed 0, this run has 1"),
    (["--confidence", "0.9", *RUN], "confidence 0.95, this run has 0.9"),
])
def test_resume_under_other_settings_is_refused(earlier, capsys, change, words):
    line = one_line_refusal(capsys, GOOD, *change, "--out", earlier, "--resume")
    assert words in line and "resume it with the same settings or choose another --out" in line


def test_overwrite_removes_the_earlier_outputs_and_leaves_other_files(earlier, capsys, tmp_path):
    (earlier / "notes.txt").write_text("mine")
    code, record, _ = falsify(capsys, "TOY.LINE", *RUN, "--out", earlier, "--overwrite")
    assert code == 0 and [result["id"] for result in record["results"]] == ["TOY.LINE"]
    assert not (earlier / "counterexamples").exists()  # the earlier run's counterexample is gone
    assert json.loads((earlier / "falsify.json").read_text()) == record
    assert (earlier / "notes.txt").read_text() == "mine" and (earlier / "report.pdf").stat().st_size > 0
    assert without_timing(record["results"][0]) == without_timing(alone(capsys, tmp_path, "TOY.LINE"))


def test_another_runs_report_is_refused_but_other_files_are_not(broken, capsys, tmp_path):  # noqa: F811
    verify_run = tmp_path / "verify-run"
    verify_run.mkdir()
    (verify_run / "verdicts.json").write_text("{}")
    (verify_run / "report.pdf").write_bytes(b"%PDF of a verify run")
    for flag in ([], ["--resume"]):
        line = one_line_refusal(capsys, "TOY.LINE", *RUN, "--out", verify_run, *flag)
        assert line.endswith("already holds report.pdf of another run; pass --overwrite to replace them or choose "
                             "another --out.")
    assert (verify_run / "report.pdf").read_bytes() == b"%PDF of a verify run"
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    assert falsify(capsys, "TOY.LINE", *RUN, "--out", mine)[0] == 0
    assert (mine / "notes.txt").read_text() == "mine"
    assert falsify(capsys, "TOY.LINE", *RUN, "--out", tmp_path / "new", "--resume")[0] == 0  # nothing to resume yet


@pytest.mark.parametrize("content, words", [
    ("not json", "not valid JSON (Expecting value at line 1, column 1) (expected the JSON `cflbounds falsify` writes)"),
    ('{"metadata": {}, "results": {}}', "results: an object of 0 keys is not an array of results"),
    ('{"metadata": {}, "results": [{"id": "TOY.LINE", "outcome": "fine"}]}', "results[0]: has no 'best_ratio'"),
    ('{"metadata": {}, "results": []}', "cflbounds version nothing recorded"),
])
def test_a_damaged_record_is_refused_in_one_line(broken, capsys, tmp_path, content, words):  # noqa: F811
    (tmp_path / "falsify.json").write_text(content)
    assert words in one_line_refusal(capsys, "TOY.LINE", *RUN, "--out", tmp_path, "--resume")


@pytest.mark.parametrize("flag", ["--resume", "--overwrite"])
def test_resume_and_overwrite_need_an_out_directory(broken, capsys, tmp_path, monkeypatch, flag):  # noqa: F811
    monkeypatch.chdir(tmp_path)
    assert f"'{flag}' option needs --out DIR" in one_line_refusal(capsys, "TOY.LINE", *RUN, flag)
    assert not (tmp_path / "reports").exists()
