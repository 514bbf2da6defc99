"""Stored numbers do not depend on the thread count or the executor (DESIGN.md, "Reproducible").

The same small sweep (IFCA Fig. 2 with early exit, so the certificate's intervals
``final_lower``/``final_upper`` are stored) and the same claims (IFCA.F2, a sweep inside a claim;
MGD.L2 and MGD.T1, whose rho0 comes from SLSQP through numpy's BLAS) run in ``cflbounds``
processes of their own: on one thread everywhere (``--threads 1``; OpenMP, MKL and OpenBLAS at
1) and on two (``--threads 2``; the libraries at 2), and (slow, where Ray is installed) as Ray
tasks of one CPU (``--executor ray``, a private local instance). The cell files and the claims'
tables are equal byte for byte, and ``verdicts.json`` is equal but for the timings and the
run's metadata.

Before the certificate's float64 work ran on one torch thread and SLSQP on one BLAS thread, the
two-thread run differed (measured: ``final_lower``/``final_upper`` in the cell file and in
IFCA.F2's tables, rho0 in MGD.L2's and MGD.T1's evidence, from the 9th to the 15th digit). A
machine with one CPU cannot run two threads: there the comparison is skipped.
"""
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

SWEEP = ["sweep", "ifca-fig2", "--panel", "c", "--variant", "official", "--m", "20", "--n", "20", "--d", "50",
         "--r", "0.5", "--sigma", "0.1", "--trials", "4", "--device", "cpu"]
CLAIMS = ["IFCA.F2", "MGD.L2", "MGD.T1"]
VERIFY = ["verify", *CLAIMS, "--scale", "smoke", "--search-evaluations", "25", "--device", "cpu", "--json"]
_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
# one process per setting runs both commands (a Ray instance is started once for the two)
_DRIVER = ("import json, sys\nfrom cflbounds.cli import main\n"
           "for argv in json.loads(sys.argv[1]):\n    assert main(argv) == 0, argv\n")

needs_two_cpus = pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="two threads need two CPUs")
needs_ray = pytest.mark.skipif(importlib.util.find_spec("ray") is None,
                               reason="ray is not installed (optional extra cflbounds[ray])")


def _run(tmp_path_factory, name: str, threads: int, executor: str = "local") -> Path:
    """The sweep and the claims in a fresh process with ``threads`` threads for every library
    (torch: ``--threads``) and ``executor``; its own cache (a cached tight factor would be shared
    otherwise); returns the directory holding ``sweep/`` and ``verify/``."""
    out = tmp_path_factory.mktemp(name)
    commands = [[*argv, "--threads", str(threads), "--executor", executor, "--out", str(out / part)]
                for part, argv in (("sweep", SWEEP), ("verify", VERIFY))]
    env = {**os.environ, **dict.fromkeys(_VARIABLES, str(threads)), "CFLBOUNDS_CACHE": str(out / "cache")}
    env.pop("RAY_ADDRESS", None)  # a private local Ray instance, never a cluster the user runs
    done = subprocess.run([sys.executable, "-c", _DRIVER, json.dumps(commands)], capture_output=True, text=True,
                          env=env, cwd=out, timeout=900)  # cwd: the installed cflbounds, not a checkout's; the
    # timeout bounds a starved machine, it is no timing assertion
    assert done.returncode == 0, done.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def one_thread(tmp_path_factory) -> Path:
    return _run(tmp_path_factory, "one-thread", 1)


def _stored_files(out: Path) -> dict[str, bytes]:
    """The sweep's cell files and the claims' tables (IFCA.F2's runs among them), by path. (A claim's
    own sweep under ``verify/sweeps/`` is a local run's checkpoint: Ray keeps it inside the task.)"""
    paths = [*sorted((out / "sweep").glob("cell-*.parquet")), *sorted((out / "verify" / "tables").glob("*.parquet"))]
    return {str(path.relative_to(out)): path.read_bytes() for path in paths}


def _verdicts(out: Path) -> list[dict]:
    """``verdicts.json``'s verdicts without their timings."""
    record = json.loads((out / "verify" / "verdicts.json").read_text())
    return [{key: value for key, value in verdict.items() if key != "seconds"} for verdict in record["verdicts"]]


def _assert_same_results(out: Path, reference: Path) -> None:
    files, expected = _stored_files(out), _stored_files(reference)
    assert sorted(files) == sorted(expected)
    differing = [name for name in expected if files[name] != expected[name]]
    assert not differing, differing
    assert _verdicts(out) == _verdicts(reference)


def test_the_reference_run_exercises_what_could_differ(one_thread):
    """Certified runs with finite intervals in the cell file, and the three claims' evidence: so
    the comparisons below compare the numbers that used to follow the thread count."""
    (cell,) = (one_thread / "sweep").glob("cell-*.parquet")
    rows = pd.read_parquet(cell)
    certified = rows[rows["certified"].isin(["success", "failure"])]
    assert len(certified) > 0 and certified[["final_lower", "final_upper"]].notna().all().all()
    verdicts = {verdict["id"]: verdict for verdict in _verdicts(one_thread)}
    assert list(verdicts) == CLAIMS
    assert "quadratics_beta0_rho0" in verdicts["MGD.L2"]["evidence"] and "rho_min" in verdicts["MGD.T1"]["evidence"]


@needs_two_cpus
def test_two_threads_store_the_bytes_of_one(one_thread, tmp_path_factory):
    _assert_same_results(_run(tmp_path_factory, "two-threads", 2), one_thread)


@pytest.mark.slow  # a private Ray instance and its workers: minutes on a busy 2-core box (7 measured)
@needs_ray
@needs_two_cpus
def test_ray_tasks_of_one_cpu_store_the_bytes_of_a_local_run(one_thread, tmp_path_factory):
    """The driver at two threads, each task on one CPU (Ray's ``OMP_NUM_THREADS=1``, the
    driver's BLAS count): the local one-thread run's files and verdicts. (The default suite
    compares Ray with a local run at the session's thread count: tests/test_ray.py.)"""
    _assert_same_results(_run(tmp_path_factory, "ray", 2, executor="ray"), one_thread)
