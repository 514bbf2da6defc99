"""Where verify and report write, and what they refuse before any work starts.

Every bad input is exit status 2 with one line on stderr naming the problem (and the file at
fault), and nothing is computed or lost: each test plants a claim check that fails the test if
it is ever called, or compares the files before and after.
"""
import contextlib
import dataclasses
import importlib.util
import json
import subprocess

import pytest

from cflbounds import __version__
from cflbounds.cli import main
from cflbounds.verify import registry
from cflbounds.verify.record import RESUME_SETTINGS, read_record

FAST = "IFCA.A2"  # instant, saves a table


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(code, err, *names):
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    for name in names:
        assert name in lines[0], (name, lines[0])


@pytest.fixture
def no_work(monkeypatch):
    """Every claim check fails the test if it is called: the refusal came before any work."""
    def forbidden(ctx):
        pytest.fail("a claim check ran although the input was refused")

    for claim_id, claim in list(registry.CLAIMS.items()):
        if claim.check is not None:
            monkeypatch.setitem(registry.CLAIMS, claim_id, dataclasses.replace(claim, check=forbidden))


@contextlib.contextmanager
def read_only(directory):
    """``directory`` made one no process can create files in: mode 0555 and, where that does not
    stop this user (root), the immutable attribute (chattr +i); restored on exit."""
    directory.chmod(0o555)
    immutable = False
    try:
        try:
            (directory / ".probe").touch()
        except OSError:
            pass
        else:
            (directory / ".probe").unlink()
            try:
                immutable = subprocess.run(["chattr", "+i", str(directory)], capture_output=True).returncode == 0
            except FileNotFoundError:
                pass
            if not immutable:
                pytest.skip("cannot make a read-only directory here (root without chattr)")
        yield directory
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(directory)], check=True)
        directory.chmod(0o755)


@pytest.fixture
def read_only_dir(tmp_path):
    directory = tmp_path / "read-only"
    directory.mkdir()
    with read_only(directory):
        yield directory


# -- verify --out: checked before any work ------------------------------------------------------
def test_out_pointing_at_a_file_is_refused_and_the_file_kept(capsys, tmp_path, no_work):
    target = tmp_path / "results.txt"
    target.write_text("someone's notes")
    code, out, err = run(capsys, "verify", FAST, "--scale", "smoke", "--out", target)
    assert_one_line_error(code, err, "'--out'", str(target), "file")
    assert target.read_text() == "someone's notes" and out == ""


def test_out_in_a_read_only_directory_is_refused(capsys, read_only_dir, no_work):
    for out in (read_only_dir, read_only_dir / "run"):
        code, _, err = run(capsys, "verify", FAST, "--scale", "smoke", "--out", out)
        assert_one_line_error(code, err, "'--out'", str(out), "writable")
    assert list(read_only_dir.iterdir()) == []


def test_out_below_a_file_is_refused(capsys, tmp_path, no_work):
    (tmp_path / "plain").write_text("")
    code, _, err = run(capsys, "verify", FAST, "--scale", "smoke", "--out", tmp_path / "plain" / "run")
    assert_one_line_error(code, err, "'--out'", "writable")


def test_empty_out_is_refused_not_the_current_directory(capsys, tmp_path, monkeypatch, no_work):
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, "verify", FAST, "--scale", "smoke", "--out", "")
    assert_one_line_error(code, err, "'--out'", "empty")
    assert list(tmp_path.iterdir()) == []


def test_resume_needs_out(capsys, no_work):
    code, _, err = run(capsys, "verify", FAST, "--scale", "smoke", "--resume")
    assert_one_line_error(code, err, "'--resume'", "--out")


def test_ray_executor_without_ray_is_refused_up_front(capsys, tmp_path, no_work):
    if importlib.util.find_spec("ray") is not None:
        pytest.skip("Ray is installed here")
    code, _, err = run(capsys, "verify", FAST, "--scale", "smoke", "--executor", "ray", "--out", tmp_path / "run")
    assert_one_line_error(code, err, "'executor'", "ray")
    assert not (tmp_path / "run").exists()


# -- a directory that already holds a run ---------------------------------------------------------
@pytest.fixture
def finished_run(capsys, tmp_path):
    out = tmp_path / "run"
    code, _, err = run(capsys, "verify", FAST, "--scale", "smoke", "--out", out)
    assert code == 0, err
    return out


def test_a_run_directory_is_not_overwritten_without_resume(capsys, finished_run, no_work):
    before = (finished_run / "verdicts.json").read_bytes()
    code, _, err = run(capsys, "verify", FAST, "--scale", "smoke", "--out", finished_run)
    assert_one_line_error(code, err, str(finished_run / "verdicts.json"), "--resume")
    assert (finished_run / "verdicts.json").read_bytes() == before


@pytest.mark.parametrize("option, value, setting", [("--scale", "default", "scale"), ("--seed", "3", "seed")])
def test_resume_refuses_other_settings(capsys, finished_run, no_work, option, value, setting):
    before = (finished_run / "verdicts.json").read_bytes()
    argv = ["verify", FAST, "--scale", "smoke", "--out", finished_run, "--resume", option, value]
    code, _, err = run(capsys, *argv)
    assert_one_line_error(code, err, str(finished_run / "verdicts.json"), setting, repr(value if setting == "scale"
                                                                                      else int(value)))
    assert (finished_run / "verdicts.json").read_bytes() == before


@pytest.mark.parametrize("setting, planted", [("cflbounds", "0.0.1"), ("device", "cuda")])
def test_resume_refuses_another_version_or_device(capsys, finished_run, no_work, setting, planted):
    path = finished_run / "verdicts.json"
    data = json.loads(path.read_text())
    data["metadata"][setting] = planted
    path.write_text(json.dumps(data))
    code, _, err = run(capsys, "verify", FAST, "--scale", "smoke", "--out", finished_run, "--resume")
    assert_one_line_error(code, err, str(path), repr(planted), "version" if setting == "cflbounds" else "device")


def test_resume_settings_are_the_ones_that_decide_results():
    """Threads and the executor do not change a verdict (DESIGN.md, Determinism), so a run may
    be resumed with other values; what does is compared (the search a claim with a domain got
    among it: tests/test_judge.py)."""
    assert set(RESUME_SETTINGS) == {"cflbounds", "scale", "seed", "device", "search"}


def test_resume_refuses_a_broken_verdicts_file_naming_it(capsys, finished_run, no_work):
    (finished_run / "verdicts.json").write_text('{"metadata": {"seed": 0}, "verdicts": [{"id": "IFCA.A2"}]}')
    code, _, err = run(capsys, "verify", FAST, "--scale", "smoke", "--out", finished_run, "--resume")
    assert_one_line_error(code, err, str(finished_run / "verdicts.json"), "no 'verdict'")


def test_resume_refuses_a_directory_without_metadata(capsys, finished_run, no_work):
    path = finished_run / "verdicts.json"
    path.write_text(json.dumps(json.loads(path.read_text())["verdicts"]))  # the old list-only format
    code, _, err = run(capsys, "verify", FAST, "--scale", "smoke", "--out", finished_run, "--resume")
    assert_one_line_error(code, err, str(path), "metadata")


# -- verdicts.json: the record and its metadata ---------------------------------------------------
def test_verdicts_json_carries_the_run_metadata(capsys, finished_run):
    data = json.loads((finished_run / "verdicts.json").read_text())
    metadata = data["metadata"]
    assert metadata["cflbounds"] == __version__ and metadata["scale"] == "smoke" and metadata["seed"] == 0
    assert metadata["command"][:3] == ["cflbounds", "verify", FAST] and metadata["device"] == "cpu"
    assert metadata["started"] <= metadata["finished"]
    assert {"torch", "numpy", "scipy", "cvxpy", "pandas", "pyarrow", "clarabel", "scikit-learn", "matplotlib"} <= set(
        metadata["dependencies"])
    assert all(metadata["dependencies"][name] for name in ("torch", "numpy", "pandas"))
    assert {"python", "platform", "threads", "executor"} <= set(metadata)
    assert [v["id"] for v in data["verdicts"]] == [FAST]


def test_json_output_is_the_verdicts_file(capsys, tmp_path):
    code, out, err = run(capsys, "verify", FAST, "--scale", "smoke", "--out", tmp_path / "run", "--json")
    assert code == 0
    assert json.loads(out) == json.loads((tmp_path / "run" / "verdicts.json").read_text())
    assert err.count("\n") == 1 and FAST in err  # off a terminal: one progress line per claim, on stderr


# -- report DIR: verdicts.json checked before anything is built ----------------------------------
def _entry(**fields):
    base = {"id": "IFCA.A2", "verdict": "holds", "evidence": {}, "seed": 0, "trials": 1, "confidence": 1.0}
    return {key: value for key, value in {**base, **fields}.items() if value is not ...}


BAD_RECORDS = {
    "not JSON": ('{"metadata": {}, "verdicts": [', "not valid JSON"),
    "empty": ("", "empty"),
    "only spaces": ("  \n", "empty"),
    "a string": ('"verdicts"', "'verdicts' is not an object with 'metadata' and a 'verdicts' array"),
    "a number": ("3", "3 is not an object with 'metadata'"),
    "an object without verdicts": ('{"metadata": {}}', "has no 'verdicts'"),
    "verdicts not a list": ('{"metadata": {}, "verdicts": {"id": "IFCA.A2"}}', "verdicts: an object of 1 keys is not an array"),
    "metadata not an object": ('{"metadata": [], "verdicts": []}', "metadata: an array of 0 items is not the run's metadata"),
    "entry not an object": ('{"metadata": {}, "verdicts": [3]}', "verdicts[0]: 3 is not a verdict (an object)"),
    "entry without a verdict": (json.dumps({"metadata": {}, "verdicts": [_entry(verdict=...)]}), "no 'verdict'"),
    "entry without an id": (json.dumps({"metadata": {}, "verdicts": [_entry(id=...)]}), "no 'id'"),
    "unknown verdict word": (json.dumps({"metadata": {}, "verdicts": [_entry(verdict="fine")]}), "'fine'"),
    "evidence not an object": (json.dumps({"metadata": {}, "verdicts": [_entry(evidence=[1])]}),
                               "verdicts[0].evidence: an array of 1 items is not an object"),
    "a claim twice": (json.dumps({"metadata": {}, "verdicts": [_entry(), _entry()]}), "verdicts[1] repeats"),
    "list with an entry without a verdict": (json.dumps([_entry(verdict=...)]), "no 'verdict'"),
}


@pytest.mark.parametrize("content, named", BAD_RECORDS.values(), ids=BAD_RECORDS)
def test_report_refuses_a_broken_verdicts_file(capsys, tmp_path, content, named):
    (tmp_path / "verdicts.json").write_text(content)
    code, out, err = run(capsys, "report", tmp_path)
    assert_one_line_error(code, err, str(tmp_path / "verdicts.json"), named)
    assert not (tmp_path / "report.pdf").exists() and out == ""


def test_report_refuses_bytes_that_are_not_text(capsys, tmp_path):
    (tmp_path / "verdicts.json").write_bytes(b"\xff\xfe\x00garbage")
    code, _, err = run(capsys, "report", tmp_path)
    assert_one_line_error(code, err, str(tmp_path / "verdicts.json"), "UTF-8")


def test_report_reads_the_old_list_format(capsys, tmp_path):
    (tmp_path / "verdicts.json").write_text(json.dumps([_entry(summary="from an older cflbounds")]))
    code, out, err = run(capsys, "report", tmp_path)
    assert code == 0 and err == ""
    assert (tmp_path / "report.pdf").read_bytes().startswith(b"%PDF")


def test_report_into_a_read_only_directory_is_refused(capsys, tmp_path):
    """The PDF's directory is checked before anything is built (the record is valid here)."""
    (tmp_path / "verdicts.json").write_text(json.dumps([_entry()]))
    with read_only(tmp_path):
        code, _, err = run(capsys, "report", tmp_path)
    assert_one_line_error(code, err, str(tmp_path), "writable")


def test_read_record_round_trips_what_verify_writes(finished_run):
    record = read_record(finished_run / "verdicts.json")
    assert record == json.loads((finished_run / "verdicts.json").read_text())
