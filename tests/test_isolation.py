"""One claim's code cannot change another claim's run (issue "Nothing escapes its run directory", part 2).

A hostile plugin package (tests/data/hostile_plugin, installed for a run by putting it on
PYTHONPATH: its .dist-info declares the entry point) has claims whose checks and evaluations
exit, hang, change the directory, the seed, torch's default dtype, patch the engine or numpy,
print on stdout and raise KeyboardInterrupt. Each must end as that claim's ``error`` (or, where
what it did harms nobody else, its own verdict), the control claims' verdicts must be those of a
run without the hostile ones, the outputs must all be written and stdout must stay the results.
By default every claim runs in a worker process of its own (cflbounds.verify.workers); with
``--isolation none`` the guards of cflbounds.verify.guards hold what one process can hold.
"""
from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from cflbounds.claims import Claim, rules
from cflbounds.cli import main
from cflbounds.verify import VerifyContext, registry, verify_claims
from cflbounds.verify.workers import WorkerFailure, run_in_worker

from conftest import FakeEntryPoint

PLUGIN = Path(__file__).parent / "data" / "hostile_plugin"
CONTROLS = ["HOSTILE.GOOD", "IFCA.A2"]
TIMEOUT = "4"


def _cli(args, cwd: Path, **extra_env) -> subprocess.CompletedProcess:
    """``cflbounds ARGS`` in a fresh process with the hostile plugin installed."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(PLUGIN), os.environ.get("PYTHONPATH", "")]),
           "HOSTILE_ELSEWHERE": str(cwd / "elsewhere"), **extra_env}
    (cwd / "elsewhere").mkdir(exist_ok=True)
    return subprocess.run([sys.executable, "-m", "cflbounds.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)


def _verdicts(stdout: str) -> dict:
    return {entry["id"]: entry for entry in json.loads(stdout)["verdicts"]}


def _as_judged(verdict: dict) -> dict:
    """A verdict without the time it took."""
    return {key: value for key, value in verdict.items() if key != "seconds"}


@pytest.fixture(scope="module")
def runs_directory(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("hostile")


@pytest.fixture(scope="module")
def control(runs_directory) -> dict:
    """The control claims' verdicts in a run without any hostile claim (from the same directory)."""
    done = _cli(["verify", *CONTROLS, "--scale", "smoke", "--out", "control", "--json"], runs_directory)
    assert done.returncode == 0, done.stderr
    return _verdicts(done.stdout)


HOSTILE_CHECKS = ["HOSTILE.EXIT", "HOSTILE.SYS-EXIT", "HOSTILE.HANG", "HOSTILE.SLEEP", "HOSTILE.CHDIR", "HOSTILE.SEED",
                  "HOSTILE.PATCH-RULES", "HOSTILE.PATCH-NUMPY", "HOSTILE.PRINT", "HOSTILE.INTERRUPT", "HOSTILE.DTYPE"]


@pytest.fixture(scope="module")
def hostile_run(runs_directory):
    """Every hostile check, then the controls, each claim in its worker process (the default)."""
    cwd = runs_directory
    done = _cli(["verify", *HOSTILE_CHECKS, *CONTROLS, "--scale", "smoke", "--out", "run", "--claim-timeout",
                 TIMEOUT, "--json"], cwd)
    return cwd, done


def test_worker_processes_contain_every_hostile_check(hostile_run, control):
    cwd, done = hostile_run
    assert done.returncode == 3, done.stderr  # claims ended in error; every other output was written
    verdicts = _verdicts(done.stdout)  # stdout is the results alone: the prints went to stderr
    assert "noise from HOSTILE.PRINT on sys.stdout" in done.stderr
    assert "noise from HOSTILE.PRINT on file descriptor 1" in done.stderr
    expected_errors = {
        "HOSTILE.EXIT": "exited with status 0 before it gave a result",
        "HOSTILE.SYS-EXIT": "SystemExit: exit status 3",
        "HOSTILE.HANG": f"timed out after {TIMEOUT} s",
        "HOSTILE.SLEEP": f"timed out after {TIMEOUT} s",
        "HOSTILE.SEED": "cannot assign to field 'seed'",
        "HOSTILE.INTERRUPT": "KeyboardInterrupt: raised by HOSTILE.INTERRUPT",
    }
    for claim_id, words in expected_errors.items():
        assert verdicts[claim_id]["verdict"] == "error" and words in verdicts[claim_id]["summary"], verdicts[claim_id]
    for claim_id in ("HOSTILE.CHDIR", "HOSTILE.PATCH-RULES", "HOSTILE.PATCH-NUMPY", "HOSTILE.PRINT", "HOSTILE.DTYPE"):
        assert verdicts[claim_id]["verdict"] == "holds", verdicts[claim_id]  # harmless to the others: its own verdict
    for claim_id in CONTROLS:  # after a patched rule, numpy, dtype, seed and directory: as in a run without them
        assert _as_judged(verdicts[claim_id]) == _as_judged(control[claim_id])
    good = verdicts["HOSTILE.GOOD"]["details"]
    assert (good["cwd"], good["seed"], good["dtype"]) == (str(cwd), "0", "torch.float32")
    run = cwd / "run"
    assert {"verdicts.json", "report.pdf", "report.html", "tables"} <= {path.name for path in run.iterdir()}
    assert json.loads((run / "verdicts.json").read_text())["metadata"]["seed"] == 0
    assert not any((cwd / "elsewhere").iterdir())  # HOSTILE.CHDIR moved its own process only


def test_a_run_with_hostile_claims_resumes(hostile_run):
    """The seed a claim tried to set is not the run's: --resume is not refused, and checks the errors again."""
    cwd, _ = hostile_run
    done = _cli(["verify", "HOSTILE.SEED", "HOSTILE.GOOD", "--scale", "smoke", "--out", "run", "--resume", "--json"],
                cwd)
    assert done.returncode == 3, done.stderr
    assert _verdicts(done.stdout)["HOSTILE.SEED"]["verdict"] == "error"


def test_falsify_contains_an_evaluation_that_hangs_or_exits(tmp_path):
    alone = _cli(["falsify", "HOSTILE.DOMAIN-GOOD", "--evaluations", "20", "--out", "alone", "--json"], tmp_path)
    assert alone.returncode == 0, alone.stderr
    started = time.monotonic()
    done = _cli(["falsify", "HOSTILE.EVAL-HANG", "HOSTILE.EVAL-EXIT", "HOSTILE.DOMAIN-GOOD", "--evaluations", "20",
                 "--claim-timeout", TIMEOUT, "--out", "run", "--json"], tmp_path)
    assert done.returncode == 3, done.stderr
    assert time.monotonic() - started < 300  # the hour-long evaluation was stopped (the bound is only a hang guard)
    results = {result["id"]: result for result in json.loads(done.stdout)["results"]}
    assert results["HOSTILE.EVAL-HANG"]["outcome"] == "error"
    assert f"timed out after {TIMEOUT} s" in results["HOSTILE.EVAL-HANG"]["summary"]
    assert results["HOSTILE.EVAL-EXIT"]["outcome"] == "error"
    assert "exited with status 0" in results["HOSTILE.EVAL-EXIT"]["summary"]
    good = {result["id"]: result for result in json.loads(alone.stdout)["results"]}["HOSTILE.DOMAIN-GOOD"]
    ignored = {"seconds", "summary", "search"}  # the time it took, and the summary that says it
    assert {k: v for k, v in results["HOSTILE.DOMAIN-GOOD"].items() if k not in ignored} == \
        {k: v for k, v in good.items() if k not in ignored}
    assert {"falsify.json", "report.pdf", "report.html"} <= {path.name for path in (tmp_path / "run").iterdir()}


def test_the_users_interrupt_stops_a_run_whose_claim_is_in_a_worker(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(PLUGIN), os.environ.get("PYTHONPATH", "")])}
    process = subprocess.Popen([sys.executable, "-m", "cflbounds.cli", "verify", "HOSTILE.GOOD", "HOSTILE.SLEEP",
                                "--scale", "smoke", "--out", "run"], cwd=tmp_path, env=env, stderr=subprocess.PIPE,
                               text=True)
    record, deadline = tmp_path / "run" / "verdicts.json", time.monotonic() + 300
    while not (record.exists() and '"id": "HOSTILE.GOOD"' in record.read_text(errors="replace")):
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.2)
    time.sleep(1.0)  # HOSTILE.SLEEP is under way in its worker
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert "interrupted; 1 finished verdict kept" in stderr


# -- the same run in this process: what the guards hold ----------------------------------------------
@pytest.fixture
def hostile(plugins, monkeypatch):
    monkeypatch.syspath_prepend(str(PLUGIN))
    import cflbounds_hostile

    plugins(FakeEntryPoint("cflbounds-hostile", "hostile", cflbounds_hostile.CLAIMS))
    return cflbounds_hostile


IN_PROCESS = ["HOSTILE.SYS-EXIT", "HOSTILE.HANG", "HOSTILE.SLEEP", "HOSTILE.CHDIR", "HOSTILE.SEED", "HOSTILE.PRINT",
              "HOSTILE.INTERRUPT"]


def test_the_guards_hold_a_claim_in_this_process(hostile, tmp_path, capsys, monkeypatch):
    """``--isolation none``: the directory given back, prints on stderr, the claim's own interrupt
    and a time-out are its errors, and the control is unchanged. (What only a process can hold,
    an exit or a patched module, is the worker test's.)"""
    monkeypatch.setenv("HOSTILE_ELSEWHERE", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    assert main(["verify", "HOSTILE.GOOD", "--scale", "smoke", "--out", "alone", "--json", "--isolation", "none"]) == 0
    alone = _verdicts(capsys.readouterr().out)
    code = main(["verify", *IN_PROCESS, "HOSTILE.GOOD", "--scale", "smoke", "--out", "run", "--json",
                 "--isolation", "none", "--claim-timeout", "2"])
    out, err = capsys.readouterr()
    assert code == 3
    verdicts = _verdicts(out)
    assert "noise from HOSTILE.PRINT on sys.stdout" in err
    assert os.getcwd() == str(tmp_path)
    for claim_id in ("HOSTILE.HANG", "HOSTILE.SLEEP"):  # stopped where it was, which the summary names
        assert verdicts[claim_id]["verdict"] == "error"
        assert "timed out after 2 s (--claim-timeout), stopped at" in verdicts[claim_id]["summary"]
        assert "cflbounds_hostile/__init__.py" in verdicts[claim_id]["summary"]
    assert "KeyboardInterrupt" in verdicts["HOSTILE.INTERRUPT"]["summary"]
    assert "cannot assign to field 'seed'" in verdicts["HOSTILE.SEED"]["summary"]
    assert verdicts["HOSTILE.CHDIR"]["verdict"] == verdicts["HOSTILE.PRINT"]["verdict"] == "holds"
    assert _as_judged(verdicts["HOSTILE.GOOD"]) == _as_judged(alone["HOSTILE.GOOD"])


def test_a_claim_registered_in_this_process_only_cannot_run_in_a_worker(hostile):
    """A worker finds claims among the installed plugins: a fake entry point's claim is an
    error that says so, never another claim of that ID."""
    (verdict,) = verify_claims(["HOSTILE.GOOD"], VerifyContext(scale="smoke"), isolation="process")
    assert verdict.verdict == "error" and "not among the claims of the installed plugins" in verdict.summary


def test_raise_needs_the_claims_in_this_process(capsys, tmp_path):
    assert main(["verify", "IFCA.A2", "--scale", "smoke", "--out", str(tmp_path / "r"), "--raise",
                 "--isolation", "process"]) == 2
    assert "'--raise' option needs the claims in this process" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()  # refused before any work


def test_worker_processes_and_this_process_give_the_same_verdicts_and_tables():
    """Real claims that share experiments (IFCA's theory tables, CFL-MGD's runs): the same
    verdicts and tables with every claim in its own worker as in this process."""
    claims = ["IFCA.T1", "IFCA.C1", "MGD.L1", "MGD.L2"]
    here, workers = VerifyContext(scale="smoke"), VerifyContext(scale="smoke")
    in_process = verify_claims(claims, here, isolation="none")
    isolated = verify_claims(claims, workers, isolation="process")
    for one, other in zip(in_process, isolated):
        assert _as_judged(one.to_dict()) == _as_judged(other.to_dict())
    assert set(here.tables) == set(workers.tables)
    for name, frame in here.tables.items():
        pd.testing.assert_frame_equal(frame.reset_index(drop=True), workers.tables[name].reset_index(drop=True))


# -- the pieces ---------------------------------------------------------------------------------------
def test_a_claims_context_is_read_only_and_its_own():
    run = VerifyContext(scale="smoke", seed=3, workdir="relative/run")
    assert run.workdir.is_absolute()  # made absolute once: a later os.chdir cannot move the run
    one = run.for_claim("X.ONE", "pkg")
    for name, value in {"seed": 1, "scale": "default", "workdir": "/tmp", "device": "cuda", "claim": "X.TWO"}.items():
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(one, name, value)
    one.save_table("t", pd.DataFrame({"x": [1]}))
    two = run.for_claim("X.TWO", "pkg")
    assert set(one.claim_tables) == {"t"} and two.claim_tables == {} and set(run.tables) == {"t"}
    assert two.shared("key", lambda: 5) == 5 and one.shared("key", lambda: 6) == 5  # one package's experiment
    assert run.for_claim("X.THREE", "other").shared("key", lambda: 7) == 7  # another package's is its own


def _sends_then_returns(value: bytes, *, send) -> bytes:
    send({"cells": [1, 2]})
    return value


def _sleeps(*, send) -> bytes:
    time.sleep(3600)
    return b""


def _exits(*, send) -> bytes:
    os._exit(7)


def _raises(*, send) -> bytes:
    raise ValueError("the task's own failure")


def test_run_in_worker_reports_results_messages_and_each_way_of_failing():
    heard = []
    assert run_in_worker(_sends_then_returns, (b"result",), on_message=heard.append) == b"result"
    assert heard == [{"cells": [1, 2]}]
    with pytest.raises(WorkerFailure) as timeout:
        run_in_worker(_sleeps, (), timeout=1.0)
    assert timeout.value.kind == "timeout"
    with pytest.raises(WorkerFailure) as exit_:
        run_in_worker(_exits, ())
    assert exit_.value.kind == "exit" and "status 7" in exit_.value.message
    with pytest.raises(WorkerFailure) as failed:
        run_in_worker(_raises, ())
    assert failed.value.kind == "failed" and "ValueError: the task's own failure" in failed.value.message


def test_a_workers_shared_experiments_are_read_only_when_asked_for(tmp_path):
    """Experiments other workers computed wait in their files until a claim asks for one."""
    from cflbounds.verify.checkpoints import encode
    from cflbounds.verify.worker_check import _FromFiles

    (tmp_path / "used.npz").write_bytes(encode({"x": [1, 2]}))
    (tmp_path / "unused.npz").write_bytes(b"not a checkpoint: reading it would raise")
    cache = _FromFiles([[("pkg", "used"), str(tmp_path / "used.npz")], [("pkg", "unused"), str(tmp_path / "unused.npz")]])
    context = VerifyContext(package="pkg", cache=cache)
    assert ("pkg", "unused") in context.cache and ("pkg", "other") not in context.cache
    assert context.shared("used", lambda: pytest.fail("computed again")) == {"x": [1, 2]}
    assert context.shared("other", lambda: 3) == 3
