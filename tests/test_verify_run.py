"""A verify run never loses work: each verdict is on disk as its claim finishes, a killed run
keeps them, and ``--resume`` completes it to the verdicts an uninterrupted run gives."""
import dataclasses
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pandas as pd
import pytest

from cflbounds.cli import main
from cflbounds.verify import registry, workers

CLAIMS = ["IFCA.A2", "LCFL.E8", "IFCA.A1", "LCFL.E9"]  # smoke scale: about a second in all, three save tables
# the smoke search counted in evaluations: its seconds would let two runs search differently far
SMOKE = ["--scale", "smoke", "--device", "cpu", "--threads", "1", "--search-evaluations", "25"]


def verify(*argv):
    return main(["verify", *CLAIMS, *SMOKE, *map(str, argv)])


def replace_check(monkeypatch, claim_id, check):
    """``claim_id`` checked by ``check`` in this process: the commands run claims here, where the
    replacement is (worker processes find the installed plugins' claims)."""
    monkeypatch.setitem(registry.CLAIMS, claim_id, dataclasses.replace(registry.CLAIMS[claim_id], check=check))
    monkeypatch.setattr(workers, "DEFAULT_ISOLATION", "none")


def record(directory):
    return json.loads((directory / "verdicts.json").read_text())


def without_time(verdicts):
    return [{key: value for key, value in v.items() if key != "seconds"} for v in verdicts]


def tables(directory):
    return {path.name: pd.read_parquet(path) for path in sorted((directory / "tables").glob("*.parquet"))}


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    out = tmp_path_factory.mktemp("uninterrupted") / "run"
    assert verify("--out", out) == 0
    return out


def assert_same_results(directory, reference):
    assert without_time(record(directory)["verdicts"]) == without_time(record(reference)["verdicts"])
    ours, theirs = tables(directory), tables(reference)
    assert list(ours) == list(theirs) and len(ours) == 3
    for name in ours:
        pd.testing.assert_frame_equal(ours[name], theirs[name], check_exact=True)


def test_each_verdict_and_its_tables_are_on_disk_before_the_next_claim_starts(tmp_path, monkeypatch, capsys):
    out, seen = tmp_path / "run", []
    real = registry.CLAIMS["IFCA.A1"].check

    def look_first(ctx):  # IFCA.A1 runs third: the first two are stored by then
        stored = record(out)
        seen.append([v["id"] for v in stored["verdicts"]])
        assert (out / "tables" / "ifca_assumptions_a2.parquet").exists()
        assert (out / "tables" / "lcfl_e8_cases.parquet").exists()
        assert stored["metadata"]["finished"] is None  # the run is not over
        return real(ctx)

    replace_check(monkeypatch, "IFCA.A1", look_first)
    assert verify("--out", out) == 0
    assert seen == [["IFCA.A2", "LCFL.E8"]]
    assert record(out)["metadata"]["finished"] is not None and (out / "report.pdf").exists()


def test_an_interrupted_run_keeps_its_verdicts_and_resume_completes_it(tmp_path, monkeypatch, capsys,
                                                                       uninterrupted):
    out = tmp_path / "run"

    def interrupt(ctx):  # the user's Ctrl-C while IFCA.A1 runs (a KeyboardInterrupt the claim raised is its error)
        signal.raise_signal(signal.SIGINT)

    replace_check(monkeypatch, "IFCA.A1", interrupt)
    assert verify("--out", out) == 130
    err = capsys.readouterr().err.splitlines()
    assert err[-1].startswith("cflbounds verify: interrupted; 2 finished verdicts kept in")
    assert "--resume" in err[-1] and str(out) in err[-1]
    assert [v["id"] for v in record(out)["verdicts"]] == ["IFCA.A2", "LCFL.E8"]
    assert not (out / "report.pdf").exists()
    monkeypatch.undo()

    def done_before(ctx):
        pytest.fail("--resume recomputed a claim whose verdict was kept")

    for claim_id in ("IFCA.A2", "LCFL.E8"):
        replace_check(monkeypatch, claim_id, done_before)
    assert verify("--out", out, "--resume", "--json") == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == record(out) and len(printed["metadata"]["resumed"]) == 1
    assert_same_results(out, uninterrupted)


KILLABLE = textwrap.dedent("""
    import dataclasses, sys, time
    from cflbounds.cli import main
    from cflbounds.verify import registry, workers

    def hang(ctx):  # the claim in flight when the process is killed
        while True:
            time.sleep(1)

    registry.CLAIMS["IFCA.A1"] = dataclasses.replace(registry.CLAIMS["IFCA.A1"], check=hang)
    sys.exit(main(sys.argv[1:]))
""")


def test_a_killed_verify_process_resumes_to_the_uninterrupted_verdicts(tmp_path, capsys, uninterrupted):
    """A real ``cflbounds verify`` process, killed (SIGKILL: no clean-up of any kind) while its
    third claim runs, after its first two verdicts landed; ``--resume`` then gives exactly the
    verdicts (timing aside) and tables of an uninterrupted run."""
    out = tmp_path / "run"
    argv = [sys.executable, "-c", KILLABLE, "verify", *CLAIMS, *SMOKE, "--out", str(out)]
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               env={**os.environ, "OMP_NUM_THREADS": "1"})
    try:
        deadline = time.monotonic() + 600  # a bound for a starved machine, not a timing assertion
        while time.monotonic() < deadline and process.poll() is None:
            if (out / "verdicts.json").exists() and len(record(out)["verdicts"]) == 2:
                break
            time.sleep(0.2)
        assert process.poll() is None, process.stderr.read().decode()
        assert len(record(out)["verdicts"]) == 2, "the first two verdicts never landed"
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
        process.stderr.close()
    assert [v["id"] for v in record(out)["verdicts"]] == ["IFCA.A2", "LCFL.E8"]
    assert not list(out.rglob("*.tmp"))  # every file was replaced whole
    assert verify("--out", out, "--resume") == 0
    capsys.readouterr()
    assert_same_results(out, uninterrupted)
    assert (out / "report.pdf").read_bytes().startswith(b"%PDF")
