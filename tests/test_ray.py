"""--executor ray on a local Ray instance (started once for this module): the same rows, verdicts
and search results as the local executor, the retry policy for a task's own error, and a bad
--address refused before any work. The multi-process cluster and a killed worker are in
tests/test_ray_cluster.py (slow)."""
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from cflbounds.claims import Claim, Domain, Parameter
from cflbounds.cli import main
from cflbounds.sweeps.executors import run_cells
from cflbounds.sweeps.ifca_fig2 import fig2_cells, run_fig2_cell
from cflbounds.sweeps.ray_cluster import MAX_RETRIES, task_options
from cflbounds.sweeps.store import ResultStore
from test_falsify_contained import broken  # noqa: F401 (a fixture: the failing claims, registered here)
from test_falsify_contract import without_timing

ray = pytest.importorskip("ray", reason="ray is not installed (optional extra cflbounds[ray])")

SWEEP = ["sweep", "ifca-fig2", "--panel", "c", "--variant", "official", "--m", "20", "--n", "20", "--d", "50",
         "--r", "0.5", "--sigma", "0.1", "--trials", "4", "--device", "cpu"]
# IFCA.F2 runs a sweep inside its claim's task (nested tasks); MGD.L2's evidence used to change in
# the last digits with numpy's BLAS thread count (tests/test_thread_count.py compares thread counts)
CLAIMS = ["IFCA.F2", "LCFL.E8", "MGD.L2"]
# the smoke search counted in evaluations: its seconds would let two runs search differently far
SMOKE = ["--scale", "smoke", "--search-evaluations", "25"]


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    """One local Ray instance for the module (as --executor ray without --address starts it);
    its workers can import this module (for the planted failing cell)."""
    from cflbounds.sweeps.ray_cluster import connect

    if ray.is_initialized():  # another module's test left one: start from the defaults
        ray.shutdown()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(Path(__file__).parent),
                                                                 os.environ.get("PYTHONPATH")])))
        connect()
    yield
    ray.shutdown()


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def cell_files(directory: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(directory.glob("cell-*.parquet"))}


def without_timings(record: dict) -> list[dict]:
    return [{key: value for key, value in verdict.items() if key != "seconds"} for verdict in record["verdicts"]]


def test_sweep_on_ray_writes_the_local_rows_byte_for_byte(tmp_path, capsys):
    assert run(capsys, *SWEEP, "--executor", "ray", "--out", tmp_path / "A")[0] == 0
    assert run(capsys, *SWEEP, "--executor", "local", "--out", tmp_path / "B")[0] == 0
    ray_cells, local_cells = cell_files(tmp_path / "A"), cell_files(tmp_path / "B")
    assert len(local_cells) == 1 and ray_cells == local_cells


def test_run_cells_on_ray_matches_local_over_several_cells(tmp_path):
    cells = fig2_cells(("a",), ("official",), {"d": [20], "m": [8], "n": [10], "r": [0.5], "sigma": [0.1, 0.2, 0.4]},
                       seed=1, trials=3, restarts=2, iterations=20)
    local, remote = ResultStore(tmp_path / "local"), ResultStore(tmp_path / "ray")
    counts = []
    run_cells(cells, run_fig2_cell, local, executor="local", shared={"device": "cpu"})
    run_cells(cells, run_fig2_cell, remote, executor="ray", shared={"device": "cpu"},
              progress=lambda done, total: counts.append((done, total)))
    pd.testing.assert_frame_equal(remote.read(), local.read())
    assert counts == [(0, 3), (1, 3), (2, 3), (3, 3)]  # every finished task counted once


def test_verify_on_ray_gives_the_local_verdicts_evidence_and_tables(tmp_path, capsys):
    code, out, _ = run(capsys, "verify", *CLAIMS, *SMOKE, "--executor", "ray", "--json", "--out", tmp_path / "ray")
    assert code == 0
    on_ray = json.loads(out)
    code, out, _ = run(capsys, "verify", *CLAIMS, *SMOKE, "--executor", "local", "--json", "--out", tmp_path / "local")
    local = json.loads(out)
    assert [v["id"] for v in on_ray["verdicts"]] == CLAIMS  # the order asked, whatever the finish order
    assert without_timings(on_ray) == without_timings(local)
    assert on_ray["metadata"]["executor"] == "ray"
    tables = sorted(path.name for path in (tmp_path / "local" / "tables").glob("*.parquet"))
    assert "ifca_fig2_runs.parquet" in tables
    for name in tables:
        pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "ray" / "tables" / name),
                                      pd.read_parquet(tmp_path / "local" / "tables" / name))


def test_falsify_on_ray_gives_the_local_results_with_evaluations(tmp_path, capsys):
    timing = {"seconds", "search_seconds", "summary", "counterexample_file"}

    def reproducible(results):
        def strip(value):
            if isinstance(value, dict):
                return {k: strip(v) for k, v in value.items() if k not in timing}
            return [strip(v) for v in value] if isinstance(value, list) else value
        return strip(results)

    argv = ["falsify", "LCFL.E8", "IFCA.A3-6", "--evaluations", "12", "--json"]
    code, out, _ = run(capsys, *argv, "--executor", "ray", "--out", tmp_path / "ray")
    on_ray = json.loads(out)["results"]
    assert code == 0 and [r["id"] for r in on_ray] == ["LCFL.E8", "IFCA.A3-6"]
    local = json.loads(run(capsys, *argv, "--out", tmp_path / "local")[1])["results"]
    assert reproducible(on_ray) == reproducible(local)


def falsify_with_broken_plugin(claim_id: str, **settings) -> dict:
    """``falsify_claim`` in a Ray worker, test_falsify_contained's claims registered there first
    (a worker reads only the installed entry points)."""
    from cflbounds.falsify.run import falsify_claim
    from cflbounds.verify import registry
    from conftest import REAL_ENTRY_POINTS, FakeEntryPoint
    import test_falsify_contained as contained

    claims = [Claim(i, "a claim whose own code fails", bound=contained._one,
                    domain=Domain([Parameter("x", 0.0, 1.0)], evaluate, rule=rule))
              for i, (evaluate, rule, *_) in contained.FAILURES.items()]
    claims.append(Claim(contained.GOOD, "a toy claim", bound=contained._one, domain=contained.TOYS[contained.GOOD]))
    registry.entry_points = lambda group: [*REAL_ENTRY_POINTS(group=group), FakeEntryPoint("broken", "b", claims)]
    registry.reload()
    return falsify_claim(claim_id, **settings)


def test_falsify_on_ray_returns_a_claims_error_and_the_others_results(broken, tmp_path, capsys, monkeypatch):
    """The task returns the error result rather than failing; the other claim's result is the local one."""
    import cflbounds.falsify

    argv = ["falsify", "BROKEN.RAISES", "BROKEN.COUNT", "TOY.STEEP", "--evaluations", "40", "--json"]
    local = json.loads(run(capsys, *argv, "--out", tmp_path / "local")[1])["results"]
    monkeypatch.setattr(cflbounds.falsify, "falsify_claim", falsify_with_broken_plugin)
    code, out, _ = run(capsys, *argv, "--executor", "ray", "--out", tmp_path / "ray")
    on_ray = json.loads(out)["results"]
    assert code == 3 and [r["id"] for r in on_ray] == ["BROKEN.RAISES", "BROKEN.COUNT", "TOY.STEEP"]
    assert [r["outcome"] for r in on_ray] == ["error", "error", "violated"]
    for remote, here in zip(on_ray[:2], local):  # the same failure as here (its file:line is the worker's path)
        assert [remote["error"][k] for k in ("stage", "kind", "message")] == \
               [here["error"][k] for k in ("stage", "kind", "message")]
    assert without_timing(on_ray[2]) == without_timing(local[2])


# -- a task's own error: not retried, raised as itself --------------------------------------------
def failing_cell(cell: dict, attempts: str) -> pd.DataFrame:
    """A planted own error: record the attempt, then fail as a bad input would."""
    with open(attempts, "a") as log:
        log.write("attempt\n")
    raise ValueError(f"planted failure of cell {cell['i']}")


def test_a_task_failing_on_its_own_fails_once_with_its_message(tmp_path):
    attempts = tmp_path / "attempts.txt"
    store = ResultStore(tmp_path / "store")
    with pytest.raises(ValueError, match="^planted failure of cell 0$"):
        run_cells([{"i": 0}], failing_cell, store, executor="ray", shared={"attempts": str(attempts)})
    assert attempts.read_text().splitlines() == ["attempt"]  # once, not MAX_RETRIES + 1 times
    assert store.cells() == []


def test_task_options_state_the_retry_policy_and_resources():
    assert task_options("cpu") == {"num_cpus": 1, "num_gpus": 0, "max_retries": MAX_RETRIES,
                                   "retry_exceptions": False}
    assert task_options("cuda:0")["num_gpus"] == 1 and MAX_RETRIES >= 1


# -- --address ---------------------------------------------------------------------------------------
def unused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize("command", [SWEEP, ["verify", "LCFL.E8", "--scale", "smoke"],
                                     ["falsify", "LCFL.E8", "--evaluations", "3"]])
def test_an_address_where_nothing_answers_is_one_line_and_exit_2(tmp_path, capsys, command):
    out = tmp_path / "out"
    code, stdout, err = run(capsys, *command, "--executor", "ray", "--address", f"127.0.0.1:{unused_port()}",
                            "--out", out)
    assert code == 2 and stdout == ""
    assert len(err.strip().splitlines()) == 1 and "No Ray cluster answers at --address 127.0.0.1:" in err
    assert "Traceback" not in err and not out.exists()  # refused before any work


def test_ray_address_from_the_environment_is_checked_too(tmp_path):
    """In a fresh process (this one is connected already, and keeps its cluster)."""
    finished = subprocess.run([sys.executable, "-m", "cflbounds.cli", *SWEEP, "--executor", "ray",
                               "--out", str(tmp_path / "out")], capture_output=True, text=True, timeout=120,
                              env={**os.environ, "RAY_ADDRESS": f"127.0.0.1:{unused_port()}"})
    assert finished.returncode == 2 and finished.stdout == ""
    assert len(finished.stderr.strip().splitlines()) == 1 and "No Ray cluster answers" in finished.stderr


@pytest.mark.parametrize("address", ["nohostport", "host:0", "host:99999", ":6379"])
def test_a_malformed_address_is_one_line_and_exit_2(tmp_path, capsys, address):
    code, _, err = run(capsys, *SWEEP, "--executor", "ray", "--address", address, "--out", tmp_path / "out")
    assert code == 2 and "HOST:PORT" in err and len(err.strip().splitlines()) == 1


def test_address_without_the_ray_executor_is_refused(tmp_path, capsys):
    code, _, err = run(capsys, *SWEEP, "--address", "127.0.0.1:6379", "--out", tmp_path / "out")
    assert code == 2 and "needs --executor ray" in err
