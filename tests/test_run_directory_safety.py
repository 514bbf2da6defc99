"""Nothing a run writes leaves its ``--out`` directory (issue 41, section 1).

* A run directory where an entry a command writes (``verdicts.json``, ``tables/``, ``partial/``,
  ``counterexamples/``, ``sweeps/``, a report, ``falsify.json``, a store's cells, or a file inside
  those folders) is a symbolic link is refused before any work, on a fresh run, on ``--resume``
  and on ``falsify --overwrite``: exit 2, one line naming the entry, and nothing written where
  the link points (a folder outside, its files compared byte for byte).
* A link a claim's code plants during the run is refused at the next write through it: the run
  stops with exit 74 and one line (a table, ``verdicts.json``), or, for a checkpoint, that claim
  ends in ``error`` and the others are unchanged.
* Table names and claim IDs are file names: a table name that is a path (``../../escaped_table``,
  ``a/b``) is that claim's ``error`` (the other claims unchanged, the report written, exit 3); a
  valid name of any length the rule admits, and a 100-character ID beside it, give files that
  fit; a 255- or 265-character ID is the registry's one-line plugin problem, the other claims run.
* A full disk is one line naming the file and exit 74, with what was written before kept and
  ``--resume`` finishing the run; a run killed while its report is written is not ``finished``,
  and ``--resume`` or ``cflbounds report`` removes the temporary files and writes the report.
* ``--out`` is resolved once: a claim that changes the working directory cannot split a run.
"""
from __future__ import annotations

import errno
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

import cflbounds._files as files_module
from cflbounds.claims import Claim, Domain, Instance, Parameter, rules
from cflbounds.cli import main
from cflbounds.falsify.outputs import OUTPUTS as FALSIFY_OUTPUTS
from cflbounds.sweeps.store import ResultStore
from cflbounds.verify import VerifyContext, registry, verify_claims
from cflbounds.verify.claim import ID_LENGTH
from cflbounds.verify.context import TABLE_NAME_LENGTH, table_name_of
from cflbounds.verify.record import RUN_FILES, RUN_FOLDERS
from conftest import FakeEntryPoint, examples
from test_cli import TINY
from test_falsify import _one

TESTS = Path(__file__).resolve().parent


# -- plugin claims -------------------------------------------------------------------------------------
def _holds(claim_id, ctx):
    return rules.deterministic([0.5], [1.0]).as_verdict(claim_id, ctx)


def _saving(claim_id, table):
    def check(ctx):
        ctx.save_table(table, pd.DataFrame({"x": [1.0, 2.0]}))
        return _holds(claim_id, ctx)
    return check


def _steep(points, seeds, ctx):  # measured 2x against the bound 1: violated wherever x > 1/2
    return [Instance(2.0 * p["x"], 1.0) for p in points]


STEEP_DOMAIN = Domain([Parameter("x", 0.0, 1.0)], _steep)
GOOD = Claim("SAFE.GOOD", "Saves a table and holds.", check=_saving("SAFE.GOOD", "good_runs"))
STEEP = Claim("SAFE.STEEP", "A domain violated for x > 1/2.", bound=_one, domain=STEEP_DOMAIN)


@pytest.fixture
def safe(plugins):
    def install(*claims):
        plugins(FakeEntryPoint("safe-plugin", "safe", [GOOD, STEEP, *claims]))
    install()
    return install


def _tree(folder: Path) -> dict:
    """Every entry under ``folder``, links not followed: a file's bytes, a link's target."""
    found = {}
    for parent, folders, names in os.walk(folder, followlinks=False):
        for name in folders + names:
            path = Path(parent) / name
            found[str(path.relative_to(folder))] = (os.readlink(path) if path.is_symlink() else
                                                    path.read_bytes() if path.is_file() else "folder")
    return found


@pytest.fixture
def outside(tmp_path):
    """A folder outside every run directory, with a file a link may point at."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "target.txt").write_text("untouched")
    return folder


def _plant(out: Path, entry: str, outside: Path) -> Path:
    """Replace ``out/entry`` with a symbolic link to ``outside`` (a folder entry) or to a file there."""
    link = out / entry
    if link.is_dir() and not link.is_symlink():
        shutil.rmtree(link)
    elif link.exists() or link.is_symlink():
        link.unlink()
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside / "target.txt" if "." in link.name else outside)
    return link


def _one_line(err: str, *words) -> None:
    """stderr holds one error line (beside the progress lines of the claims that ran) with ``words``."""
    errors = [line for line in err.splitlines() if re.match(r"cflbounds( \w+)?: error: ", line)]
    assert len(errors) == 1 and "Traceback" not in err, err
    for word in words:
        assert word in errors[0], (word, errors[0])


def _verdicts(out: Path) -> dict:
    return {v["id"]: v for v in json.loads((out / "verdicts.json").read_text())["verdicts"]}


def _without_time(verdict: dict) -> dict:
    return {key: value for key, value in verdict.items() if key != "seconds"}


def _alone(claim_id: str) -> dict:
    (verdict,) = verify_claims([claim_id], VerifyContext(scale="smoke", seed=0))
    return _without_time(verdict.to_dict())


VERIFY = ["verify", "SAFE.GOOD", "--scale", "smoke", "--search-evaluations", "0"]
FALSIFY = ["falsify", "SAFE.STEEP", "--evaluations", "40"]
_FINISHED = {}  # a finished run of each command, made once, copied for each test


@pytest.fixture
def finished(safe, tmp_path_factory):
    """``finished(command, out)``: ``out`` holds a finished run of ``command`` (a copy of one made once)."""
    def copy(command, out: Path) -> Path:
        key = tuple(command)
        if key not in _FINISHED:
            made = tmp_path_factory.mktemp("finished") / "run"
            assert main([*command, "--out", str(made)]) == 0
            _FINISHED[key] = made
        shutil.copytree(_FINISHED[key], out, symlinks=True)
        return out
    return copy


# -- links in a run directory: refused before any work ---------------------------------------------------
VERIFY_ENTRIES = ["verdicts.json", "report.pdf", "report.html", "tables", "partial", "counterexamples", "sweeps",
                  "tables/good_runs.parquet", "partial/cache.npz", "counterexamples/SAFE.GOOD.json",
                  "sweeps/ifca-fig2", "sweeps/ifca-fig2/cell-0.parquet"]


@pytest.mark.parametrize("resume", [False, True], ids=["fresh", "resume"])
@pytest.mark.parametrize("entry", VERIFY_ENTRIES)
def test_verify_refuses_a_link_in_its_run_directory(finished, tmp_path, outside, capsys, entry, resume):
    out = tmp_path / "run"
    if resume:
        finished(VERIFY, out)
    link = _plant(out, entry, outside)
    before, run = _tree(out), _tree(outside)
    capsys.readouterr()
    assert main([*VERIFY, "--out", str(out), *(["--resume"] if resume else [])]) == 2
    _one_line(capsys.readouterr().err, str(link), "is a symbolic link", "--out")
    assert _tree(outside) == run and _tree(out) == before  # nothing written anywhere


@pytest.mark.parametrize("mode", ["fresh", "resume", "overwrite"])
@pytest.mark.parametrize("entry", ["falsify.json", "report.pdf", "report.html", "counterexamples",
                                   "counterexamples/SAFE.STEEP.json"])
def test_falsify_refuses_a_link_in_its_run_directory(finished, tmp_path, outside, capsys, entry, mode):
    """--overwrite on a linked counterexamples/ used to end in 'Cannot call rmtree on a symbolic link'."""
    out = tmp_path / "run"
    if mode != "fresh":
        finished(FALSIFY, out)
    link = _plant(out, entry, outside)
    before, run = _tree(out), _tree(outside)
    capsys.readouterr()
    assert main([*FALSIFY, "--out", str(out), *([f"--{mode}"] if mode != "fresh" else [])]) == 2
    _one_line(capsys.readouterr().err, str(link), "is a symbolic link")
    assert _tree(outside) == run and _tree(out) == before


@pytest.mark.parametrize("entry", ["sweep.json", "cell-0123.parquet", "success.parquet", "figure-1.png", "report.pdf"])
def test_sweep_refuses_a_link_in_its_store(tmp_path, outside, capsys, entry):
    out = tmp_path / "store"
    link = _plant(out, entry, outside)
    run = _tree(outside)
    assert main([*TINY, "--out", str(out)]) == 2
    _one_line(capsys.readouterr().err, str(link), "is a symbolic link")
    assert _tree(outside) == run and [p.name for p in out.iterdir()] == [entry]


@pytest.mark.parametrize("command", [VERIFY, FALSIFY], ids=["verify", "falsify"])
@pytest.mark.parametrize("entry", ["report.pdf", "report.html"])
def test_report_refuses_a_link_where_the_report_goes(finished, tmp_path, outside, capsys, command, entry):
    out = finished(command, tmp_path / "run")
    link = _plant(out, entry, outside)
    run = _tree(outside)
    capsys.readouterr()
    assert main(["report", str(out)]) == 2
    _one_line(capsys.readouterr().err, str(link), "is a symbolic link")
    assert _tree(outside) == run


def test_the_run_directory_itself_may_be_a_link(safe, tmp_path):
    """--out through a link (a scratch disk) is the user's choice: resolved once, used as it is."""
    (tmp_path / "scratch").mkdir()
    (tmp_path / "run").symlink_to(tmp_path / "scratch")
    assert main([*VERIFY, "--out", str(tmp_path / "run")]) == 0
    assert (tmp_path / "scratch" / "verdicts.json").is_file() and (tmp_path / "scratch" / "report.pdf").is_file()


def _checkpoint_and_table(ctx):
    ctx.checkpoint("kept", lambda: 1.0)
    return _saving("SAFE.CHECKED", "checked")(ctx)


def test_the_lists_of_what_a_run_writes_are_complete(safe, tmp_path):
    """Every entry a verify run (a table, a checkpoint, IFCA.F2's sweep store, a counterexample
    its search confirmed) and a falsify run leave is among those checked before any work."""
    safe(Claim("SAFE.CHECKED", "A checkpoint, a table and a violated domain.", check=_checkpoint_and_table, bound=_one,
               domain=STEEP_DOMAIN))
    verify, falsify = tmp_path / "verify", tmp_path / "falsify"
    assert main(["verify", "SAFE.CHECKED", "IFCA.F2", "--scale", "smoke", "--search-evaluations", "40", "--out",
                 str(verify)]) == 0
    assert sorted(p.name for p in verify.iterdir()) == sorted(RUN_FILES + RUN_FOLDERS)
    assert main([*FALSIFY, "--out", str(falsify)]) == 0
    assert sorted(p.name for p in falsify.iterdir()) == sorted(FALSIFY_OUTPUTS)


# -- links planted by a claim's code during the run ------------------------------------------------------
PLANT = {}  # where the planting claim puts its link: set by the test


def _planting(claim_id):
    def check(ctx):
        PLANT["link"].symlink_to(PLANT["outside"], target_is_directory=True)
        return _holds(claim_id, ctx)
    return check


def _checkpointing(claim_id):
    def check(ctx):
        ctx.checkpoint("configurations", lambda: {"value": 1.0})
        return _holds(claim_id, ctx)
    return check


def test_a_table_folder_linked_during_the_run_stops_it_with_one_line(safe, tmp_path, outside, capsys):
    safe(Claim("SAFE.PLANTS", "Plants a link at tables/.", check=_planting("SAFE.PLANTS")))
    out = tmp_path / "run"
    PLANT.update(link=out / "tables", outside=outside)
    run = _tree(outside)
    assert main(["verify", "SAFE.PLANTS", "SAFE.GOOD", "--scale", "smoke", "--out", str(out)]) == 74
    _one_line(capsys.readouterr().err, "Cannot write", str(out / "tables"), "symbolic link", "--resume")
    assert _tree(outside) == run
    assert list(_verdicts(out)) == ["SAFE.PLANTS"]  # what was written before is kept


def test_a_checkpoint_folder_linked_during_the_run_is_that_claims_error(safe, tmp_path, outside, capsys):
    safe(Claim("SAFE.PLANTS", "Plants a link at partial/.", check=_planting("SAFE.PLANTS")),
         Claim("SAFE.KEEPS", "Keeps a checkpoint.", check=_checkpointing("SAFE.KEEPS")))
    out = tmp_path / "run"
    PLANT.update(link=out / "partial", outside=outside)
    run = _tree(outside)
    assert main(["verify", "SAFE.PLANTS", "SAFE.KEEPS", "SAFE.GOOD", "--scale", "smoke", "--out", str(out)]) == 3
    assert _tree(outside) == run
    verdicts = _verdicts(out)
    assert verdicts["SAFE.KEEPS"]["verdict"] == "error" and "symbolic link" in verdicts["SAFE.KEEPS"]["summary"]
    assert _without_time(verdicts["SAFE.GOOD"]) == _alone("SAFE.GOOD")
    assert (out / "report.pdf").is_file()


def test_a_sweep_store_linked_away_after_it_was_made_is_not_written(tmp_path, outside):
    """IFCA.F2's store in a verify run (run/sweeps/ifca-fig2): a link planted at sweeps/ after the
    store was made, or one at a cell's name, is refused at the next write."""
    store = ResultStore(tmp_path / "run" / "sweeps" / "ifca-fig2")
    store.write("first", pd.DataFrame({"x": [1.0]}))
    shutil.move(tmp_path / "run" / "sweeps", tmp_path / "moved")
    (tmp_path / "run" / "sweeps").symlink_to(outside)
    (outside / "ifca-fig2").mkdir()
    run = _tree(outside)
    with pytest.raises(files_module.WriteError, match="now leads to"):
        store.write("second", pd.DataFrame({"x": [2.0]}))
    (tmp_path / "run" / "sweeps").unlink()
    shutil.move(tmp_path / "moved", tmp_path / "run" / "sweeps")
    store._path("third").symlink_to(outside / "target.txt")
    with pytest.raises(files_module.WriteError, match="is a symbolic link"):
        store.write("third", pd.DataFrame({"x": [3.0]}))
    store._path("third").unlink()
    assert _tree(outside) == run and store.cells() == ["first"]


# -- names that become paths -----------------------------------------------------------------------------
BAD_TABLE_NAMES = ["../../escaped_table", "a/b", "/tmp/escaped_table", ".hidden", "..", "-dash", "x@y", "", "tab\tle",
                   "naïve", "t" * (TABLE_NAME_LENGTH + 1)]


@pytest.mark.parametrize("name", BAD_TABLE_NAMES)
def test_a_table_name_that_is_no_file_name_is_a_value_error(name):
    with pytest.raises(ValueError, match="not a file name"):
        VerifyContext().save_table(name, pd.DataFrame({"x": [1.0]}))


@pytest.mark.parametrize("name", ["../../escaped_table", "a/b", "t" * 265])
def test_a_bad_table_name_costs_only_its_claim(safe, tmp_path, capsys, name):
    safe(Claim("SAFE.BADNAME", "Saves a table under a path.", check=_saving("SAFE.BADNAME", name)))
    out = tmp_path / "deep" / "run"
    assert main(["verify", "SAFE.BADNAME", "SAFE.GOOD", "--scale", "smoke", "--out", str(out)]) == 3
    assert "cflbounds verify: error: SAFE.BADNAME: check raised: ValueError: the table name" in capsys.readouterr().err
    verdicts = _verdicts(out)
    assert verdicts["SAFE.BADNAME"]["verdict"] == "error"
    assert _without_time(verdicts["SAFE.GOOD"]) == _alone("SAFE.GOOD")
    assert (out / "report.pdf").is_file() and (out / "report.html").is_file()
    assert sorted(p.name for p in (out / "tables").iterdir()) == ["good_runs.parquet"]
    assert sorted(_tree(tmp_path)) == sorted(["deep", "deep/run"] + [f"deep/run/{p}" for p in _tree(out)])


@given(st.one_of(st.text(alphabet="aZ9_.-@/\\ \x00é", max_size=TABLE_NAME_LENGTH + 5), st.text()))
@examples(300)
def test_every_table_name_save_table_takes_is_one_short_file_name(name):
    """A name save_table takes is one file name of tables/, not hidden, and kept beside another
    claim's (name@ID, the longest ID) it still fits a file system's 255 bytes."""
    try:
        VerifyContext().save_table(name, pd.DataFrame({"x": [1.0]}))
    except ValueError:
        return
    longest = f"{table_name_of(name, 'A.' + 'b' * (ID_LENGTH - 2))}.parquet"
    assert Path("tables", f"{name}.parquet").parent == Path("tables") and not name.startswith((".", "-"))
    assert len(longest.encode()) + len(".XXXXXXXX.tmp") + 1 <= 255


def _long_id(length: int, tail: str = "") -> str:
    return "LONG." + "x" * (length - 5 - len(tail)) + tail


def test_the_longest_ids_and_table_names_give_files_that_fit(safe, tmp_path):
    """Two claims with 100-character IDs saving one 100-character table name (the second kept
    as name@ID), a checkpoint of a huge key, and a counterexample file named after such an ID."""
    first, second = _long_id(ID_LENGTH, "A"), _long_id(ID_LENGTH, "B")
    table = "t" * TABLE_NAME_LENGTH

    def check(claim_id):
        def run(ctx):
            ctx.checkpoint(("k" * 5000,), lambda: 1.0)
            return _saving(claim_id, table)(ctx)
        return run

    safe(Claim(first, "Long.", check=check(first)), Claim(second, "Long, violated domain.", check=check(second),
                                                         bound=_one, domain=STEEP_DOMAIN))
    out = tmp_path / "run"
    assert main(["verify", first, second, "--scale", "smoke", "--search-evaluations", "40", "--out", str(out)]) == 0
    assert sorted(p.name for p in (out / "tables").iterdir()) == sorted([f"{table}.parquet",
                                                                         f"{table}@{second}.parquet"])
    assert all(len(p.name) <= 81 for p in (out / "partial").iterdir())
    assert [p.name for p in (out / "counterexamples").iterdir()] == [f"{second}.json"]
    assert main(["falsify", second, "--evaluations", "40", "--out", str(tmp_path / "falsify")]) == 0
    assert (tmp_path / "falsify" / "counterexamples" / f"{second}.json").is_file()


@pytest.mark.parametrize("length", [255, 265])
def test_a_claim_id_too_long_for_a_file_name_is_a_plugin_problem(safe, tmp_path, capsys, length):
    """The issue's IDs: 265 characters lost verify's later claims and its report (ENAMETOOLONG),
    255 falsify's result and report. Now the registry refuses them in one line, and the other
    claims of the plugin run."""
    claim_id = _long_id(length)
    safe(Claim(claim_id, "Too long.", check=_saving(claim_id, claim_id.lower().replace(".", "_")), bound=_one,
               domain=STEEP_DOMAIN))
    assert claim_id not in registry.claims() and "SAFE.GOOD" in registry.claims()
    (problem,) = [str(p) for p in registry.plugin_problems()]
    assert f"is {length} characters long, more than {ID_LENGTH}" in problem and "\n" not in problem
    assert main([*VERIFY, "--out", str(tmp_path / "verify")]) == 0
    assert f"is {length} characters long" in capsys.readouterr().err  # the warning, one line
    assert (tmp_path / "verify" / "report.pdf").is_file()
    assert main([*FALSIFY, "--out", str(tmp_path / "falsify")]) == 0
    assert (tmp_path / "falsify" / "report.pdf").is_file()
    assert main(["verify", claim_id, "--scale", "smoke", "--out", str(tmp_path / "refused")]) == 2


# -- --out resolved once ------------------------------------------------------------------------------------
def _moving(claim_id):
    def check(ctx):
        os.chdir(PLANT["elsewhere"])
        return _holds(claim_id, ctx)
    return check


def _moving_evaluation(points, seeds, ctx):
    os.chdir(PLANT["elsewhere"])
    return _steep(points, seeds, ctx)


def test_a_claim_that_changes_the_working_directory_cannot_split_the_run(safe, tmp_path, monkeypatch):
    safe(Claim("SAFE.MOVES", "Changes the working directory.", check=_moving("SAFE.MOVES"), bound=_one,
               domain=Domain([Parameter("x", 0.0, 1.0)], _moving_evaluation)))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    PLANT["elsewhere"] = elsewhere
    monkeypatch.chdir(tmp_path)
    assert main(["verify", "SAFE.MOVES", "SAFE.GOOD", "--scale", "smoke", "--search-evaluations", "0",
                 "--out", "run"]) == 0
    monkeypatch.chdir(tmp_path)
    assert main(["falsify", "SAFE.MOVES", "--evaluations", "40", "--out", "found"]) == 0
    assert list(elsewhere.iterdir()) == []
    assert set(_verdicts(tmp_path / "run")) == {"SAFE.MOVES", "SAFE.GOOD"}
    assert (tmp_path / "run" / "tables" / "good_runs.parquet").is_file() and (tmp_path / "run" / "report.pdf").is_file()
    assert (tmp_path / "found" / "counterexamples" / "SAFE.MOVES.json").is_file()


# -- a full disk ---------------------------------------------------------------------------------------------
FULL = {}  # the name whose write fails, once a claim's code has run (the disk fills during the run)


def _filling(claim_id):
    def check(ctx):
        FULL["armed"] = True
        return _holds(claim_id, ctx)
    return check


def _filling_evaluation(points, seeds, ctx):
    FULL["armed"] = True
    return _steep(points, seeds, ctx)


@pytest.fixture
def full_disk(safe, monkeypatch):
    """``os.replace`` onto a file named ``FULL["name"]`` fails with ENOSPC once armed."""
    safe(Claim("SAFE.FILLS", "The disk fills while it runs.", check=_filling("SAFE.FILLS"), bound=_one,
               domain=Domain([Parameter("x", 0.0, 1.0)], _filling_evaluation)))
    replace = os.replace

    def full(source, target, *args, **kwargs):
        if FULL.get("armed") and Path(target).name == FULL.get("name"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return replace(source, target, *args, **kwargs)

    FULL.clear()
    monkeypatch.setattr(files_module.os, "replace", full)
    yield FULL
    FULL.clear()


def _leftovers(out: Path) -> list:
    return [path for path in _tree(out) if path.endswith(".tmp")]


@pytest.mark.parametrize("name", ["verdicts.json", "good_runs.parquet", "report.pdf", "report.html"])
def test_a_full_disk_stops_verify_with_one_line_and_resume_finishes(full_disk, tmp_path, capsys, name):
    out = tmp_path / "run"
    full_disk["name"] = name
    assert main(["verify", "SAFE.FILLS", "SAFE.GOOD", "--scale", "smoke", "--out", str(out)]) == 74
    _one_line(capsys.readouterr().err, "Cannot write", name, os.strerror(errno.ENOSPC), "--resume")
    record = json.loads((out / "verdicts.json").read_text())  # still valid: the last write that succeeded
    assert record["metadata"]["finished"] is None and not _leftovers(out)
    full_disk.clear()  # space freed
    assert main(["verify", "SAFE.FILLS", "SAFE.GOOD", "--scale", "smoke", "--out", str(out), "--resume"]) == 0
    assert set(_verdicts(out)) == {"SAFE.FILLS", "SAFE.GOOD"} and (out / "report.pdf").is_file()
    assert json.loads((out / "verdicts.json").read_text())["metadata"]["finished"] is not None


@pytest.mark.parametrize("name", ["falsify.json", "SAFE.FILLS.json", "report.pdf"])
def test_a_full_disk_stops_falsify_with_one_line(full_disk, tmp_path, capsys, name):
    out = tmp_path / "run"
    full_disk["name"] = name
    assert main(["falsify", "SAFE.FILLS", "--evaluations", "40", "--out", str(out)]) == 74
    _one_line(capsys.readouterr().err, "Cannot write", name, os.strerror(errno.ENOSPC))
    assert not _leftovers(out)
    json.loads((out / "falsify.json").read_text())


def test_a_full_disk_stops_report_and_sweep_with_one_line(full_disk, finished, tmp_path, capsys):
    out = finished(VERIFY, tmp_path / "run")
    full_disk.update(name="report.pdf", armed=True)
    capsys.readouterr()
    assert main(["report", str(out)]) == 74
    _one_line(capsys.readouterr().err, "Cannot write", str(out / "report.pdf"), os.strerror(errno.ENOSPC))
    full_disk["name"] = "sweep.json"
    assert main([*TINY, "--out", str(tmp_path / "store")]) == 74
    _one_line(capsys.readouterr().err, "Cannot write", "sweep.json", os.strerror(errno.ENOSPC))


# -- a run killed while its report is written ---------------------------------------------------------------
KILLED_DURING_THE_REPORT = """
import os, signal, sys
from pathlib import Path
sys.path[:0] = [{tests!r}]
import cflbounds.reports.outputs as outputs
from cflbounds.cli import main
from cflbounds.verify import registry
from conftest import FakeEntryPoint, REAL_ENTRY_POINTS
import test_run_directory_safety as here

plugin = FakeEntryPoint("safe-plugin", "safe", [here.GOOD])
registry.entry_points = lambda group: [*REAL_ENTRY_POINTS(group=group), plugin]
registry.reload()

def killed(verdicts, path, **options):  # half a PDF in the temporary file, then SIGKILL
    Path(path).write_bytes(b"%PDF-1.4 half a report")
    os.kill(os.getpid(), signal.SIGKILL)

outputs.build_report = killed
main({argv!r})
"""


@pytest.mark.parametrize("then", ["resume", "report"])
def test_a_run_killed_during_its_report_is_not_finished_and_gets_its_report(safe, tmp_path, then):
    out = tmp_path / "run"
    argv = [*VERIFY, "--out", str(out)]
    script = KILLED_DURING_THE_REPORT.format(tests=str(TESTS), argv=argv)
    killed = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True,
                            timeout=600)
    assert killed.returncode == -9, killed.stderr
    (stale,) = _leftovers(out)
    assert stale.startswith(".report.pdf.") and not (out / "report.pdf").exists()
    assert json.loads((out / "verdicts.json").read_text())["metadata"]["finished"] is None
    assert main([*argv, "--resume"] if then == "resume" else ["report", str(out)]) == 0
    assert not _leftovers(out) and (out / "report.pdf").read_bytes().startswith(b"%PDF")
    finished = json.loads((out / "verdicts.json").read_text())["metadata"]["finished"]
    assert (finished is not None) == (then == "resume")


def test_opening_a_run_directory_removes_only_stale_temporary_files(finished, tmp_path):
    out = finished(FALSIFY, tmp_path / "run")
    stale = [out / ".falsify.json.k2j4_x9a.tmp", out / "counterexamples" / ".SAFE.STEEP.json.abcdefgh.tmp"]
    kept = [out / "notes.tmp", out / ".notes.tmp", out / "counterexamples" / "mine.tmp"]
    for path in stale + kept:
        path.write_text("x")
    assert main([*FALSIFY, "--out", str(out), "--resume"]) == 0
    assert [path.exists() for path in stale + kept] == [False] * len(stale) + [True] * len(kept)


def test_a_failed_write_leaves_no_temporary_file_and_the_old_content(tmp_path):
    target = tmp_path / "verdicts.json"
    files_module.atomic_write_text(target, "old", within=tmp_path)

    def half(temporary):
        temporary.write_text("half")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with pytest.raises(files_module.WriteError) as raised:
        files_module.atomic_write(target, half, within=tmp_path)
    assert str(raised.value) == f"Cannot write {target}: {os.strerror(errno.ENOSPC)}."
    assert target.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["verdicts.json"]
    for escaping in (tmp_path / "tables" / ".." / ".." / "escaped", tmp_path.parent / "escaped"):
        with pytest.raises(files_module.WriteError, match="not inside the run directory"):
            files_module.atomic_write_text(escaping, "x", within=tmp_path)
    assert not (tmp_path.parent / "escaped").exists()
