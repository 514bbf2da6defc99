"""A real multi-process Ray cluster on this machine: a head node and a worker node, each started
with ``ray start`` as a process of its own (one CPU each, on 127.0.0.1), joined through
``--address`` by the command line run as a user would run it; and a worker process killed while
a sweep runs on it. The test stops both nodes itself, by the ids of the processes it started.
Each task computes on one CPU and the local runs it is compared with on two threads (where the
machine has two CPUs): the same bytes either way (issue 29).

The cluster uses Ray's token authentication with a token of its own (RAY_AUTH_MODE=token and
RAY_AUTH_TOKEN in every process of it, drivers included): since Ray 2.5x a local ``ray.init``
writes ~/.ray/auth_token, after which a head node started here requires a token that a joining
``ray start --address`` would not send unless told to.

Slow (about three minutes): ``pytest -m slow tests/test_ray_cluster.py``.
"""
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

pytest.importorskip("ray", reason="ray is not installed (optional extra cflbounds[ray])")
pytestmark = pytest.mark.slow

SWEEP = ["sweep", "ifca-fig2", "--panel", "c", "--variant", "official", "--m", "20", "--n", "20", "--d", "50",
         "--r", "0.5", "--sigma", "0.1", "--trials", "4", "--device", "cpu"]
# four cells of one to a few seconds each on one CPU: time to kill a worker in the middle of one
LONG_SWEEP = ["sweep", "ifca-fig2", "--panel", "c", "--variant", "official", "--m", "40,60,80,100", "--n", "40",
              "--d", "200", "--r", "0.3", "--sigma", "0.1", "--trials", "8", "--device", "cpu"]
LONG_CELLS = 4
CLAIMS = ["IFCA.F2", "LCFL.E8"]
# the local runs compare with: two torch threads where the machine has two CPUs (each Ray task
# computes on one), whatever --threads auto would choose on a busy machine
LOCAL = ["--executor", "local", "--threads", str(min(2, os.cpu_count() or 1))]
NODE_OPTIONS = ["--node-ip-address=127.0.0.1", "--num-cpus=1", "--object-store-memory=100000000",
                "--disable-usage-stats", "--block"]


def _ray_command() -> str:
    return str(Path(sys.executable).with_name("ray"))


ENV = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}


def _cflbounds(*argv, timeout=600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cflbounds.cli", *map(str, argv)], capture_output=True, text=True,
                          timeout=timeout, env=ENV)


def _cflbounds_started(*argv) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "cflbounds.cli", *map(str, argv)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env=ENV)


def _unused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _stop(process: subprocess.Popen) -> None:
    """Stop a node: its ``ray start`` process and the processes it started (its own session)."""
    for sig, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 15)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=wait)
            if not _session_processes(process.pid):
                return
        except subprocess.TimeoutExpired:
            pass


def _session_processes(session: int) -> list[int]:
    """Processes of the session ``session`` (the node's ``ray start`` and what it started)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[3]) == session:  # field 6 of /proc/PID/stat: the session id
                found.append(int(entry.name))
    return found


def _task_workers(nodes, title: str) -> list[int]:
    """Worker processes of our nodes running a task named ``title`` (Ray's process title)."""
    workers = []
    for node in nodes:
        for pid in _session_processes(node.pid):
            try:
                command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()
            except OSError:
                continue
            if command.startswith(f"ray::{title}"):
                workers.append(pid)
    return workers


@pytest.fixture(scope="module")
def cluster():
    """A head node and a worker node (separate ``ray start`` processes, one CPU each); yields
    the head's address and the two node processes, and stops them when the module is done."""
    port = _unused_port()
    temp = tempfile.mkdtemp(prefix="ray-", dir="/tmp")  # Ray's socket paths must stay short
    logs = Path(temp) / "node-logs"
    logs.mkdir()
    nodes = []
    try:
        nodes.append(subprocess.Popen([_ray_command(), "start", "--head", f"--port={port}", "--include-dashboard=false",
                                       f"--temp-dir={temp}", *NODE_OPTIONS], stdout=(logs / "head.txt").open("w"),
                                      stderr=subprocess.STDOUT, start_new_session=True, env=ENV))
        address = f"127.0.0.1:{port}"
        _wait_for(lambda: _answers(port), 60, "the head node")
        nodes.append(subprocess.Popen([_ray_command(), "start", f"--address={address}", *NODE_OPTIONS],
                                      stdout=(logs / "worker.txt").open("w"), stderr=subprocess.STDOUT,
                                      start_new_session=True, env=ENV))
        _wait_for(lambda: _alive_nodes(address) == 2, 120, "the worker node to join")
        yield address, nodes
    finally:
        for node in reversed(nodes):
            _stop(node)
        shutil.rmtree(temp, ignore_errors=True)


def _answers(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def _alive_nodes(address: str) -> int:
    script = ("import ray, logging; ray.init(address=%r, log_to_driver=False, logging_level=logging.ERROR); "
              "print(sum(node['Alive'] for node in ray.nodes()))" % address)
    finished = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=ENV)
    return int(finished.stdout.strip() or 0)


def _wait_for(condition, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"no {what} after {seconds} s"
        time.sleep(1)


def _cell_files(directory: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(directory.glob("cell-*.parquet"))}


@pytest.fixture(scope="module")
def clean_long_sweep(tmp_path_factory) -> dict[str, bytes]:
    """The cell files of LONG_SWEEP run locally, uninterrupted."""
    out = tmp_path_factory.mktemp("clean")
    clean = _cflbounds(*LONG_SWEEP, *LOCAL, "--out", out)
    assert clean.returncode == 0, clean.stderr
    files = _cell_files(out)
    assert len(files) == LONG_CELLS
    return files


def test_sweep_and_verify_on_the_cluster_equal_the_local_run(cluster, tmp_path):
    address, _ = cluster
    on_cluster = _cflbounds(*SWEEP, "--executor", "ray", "--address", address, "--out", tmp_path / "A")
    assert on_cluster.returncode == 0, on_cluster.stderr
    local = _cflbounds(*SWEEP, *LOCAL, "--out", tmp_path / "B")
    assert local.returncode == 0, local.stderr
    assert _cell_files(tmp_path / "A") == _cell_files(tmp_path / "B") != {}

    verdicts = {}
    for executor in ("ray", "local"):
        where = ["--executor", "ray", "--address", address] if executor == "ray" else LOCAL
        run = _cflbounds("verify", *CLAIMS, "--scale", "smoke", "--json", *where, "--out", tmp_path / f"verify-{executor}")
        assert run.returncode == 0, run.stderr
        verdicts[executor] = [{k: v for k, v in verdict.items() if k != "seconds"}
                              for verdict in json.loads(run.stdout)["verdicts"]]
    assert [v["id"] for v in verdicts["ray"]] == CLAIMS
    assert verdicts["ray"] == verdicts["local"]


def test_a_worker_killed_mid_task_is_retried_and_no_row_is_lost_or_doubled(cluster, clean_long_sweep, tmp_path):
    """The killed cell's task is run again (Ray's max_retries): without the retry the sweep would
    fail with Ray's WorkerCrashedError instead of finishing with every cell."""
    address, nodes = cluster
    sweep = _cflbounds_started(*LONG_SWEEP, "--executor", "ray", "--address", address, "--out", tmp_path / "killed")
    try:
        deadline = time.monotonic() + 300
        while not (workers := _task_workers(nodes, "_compute_cell")):
            assert sweep.poll() is None, f"the sweep ended before a cell task ran: {sweep.stderr.read()}"
            assert time.monotonic() < deadline, "no cell task after 300 s"
            time.sleep(0.05)
        os.kill(workers[0], signal.SIGKILL)  # a worker process dies in the middle of its cell
        _, err = sweep.communicate(timeout=600)
    finally:
        if sweep.poll() is None:
            sweep.kill()
    assert sweep.returncode == 0, err
    assert _cell_files(tmp_path / "killed") == clean_long_sweep  # every cell once, byte for byte
    assert not list((tmp_path / "killed").glob(".tmp-*"))  # no half-written file left behind


def test_a_driver_killed_mid_run_resumes_to_the_uninterrupted_rows(cluster, clean_long_sweep, tmp_path):
    address, _ = cluster
    out = tmp_path / "resumed"
    sweep = _cflbounds_started(*LONG_SWEEP, "--executor", "ray", "--address", address, "--out", out)
    try:
        deadline = time.monotonic() + 300
        while not list(out.glob("cell-*.parquet")):
            assert sweep.poll() is None, f"the sweep ended before writing a cell: {sweep.stderr.read()}"
            assert time.monotonic() < deadline, "no cell after 300 s"
            time.sleep(0.05)
        sweep.kill()  # the driver dies: the results of its tasks still running are lost with it
        sweep.wait(timeout=60)
    finally:
        if sweep.poll() is None:
            sweep.kill()
    assert 1 <= len(_cell_files(out)) < LONG_CELLS  # interrupted part-way
    resumed = _cflbounds(*LONG_SWEEP, "--executor", "ray", "--address", address, "--out", out, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert "cells computed" in resumed.stdout and _cell_files(out) == clean_long_sweep


def test_a_verify_driver_killed_mid_run_resumes_to_the_uninterrupted_verdicts(cluster, tmp_path):
    """Four claims on two CPUs: they cannot all finish at once, so the kill after the first
    verdict leaves some to --resume."""
    address, _ = cluster
    claims = ["LCFL.E8", "IFCA.F2", "FC.SPEEDUP", "MGD.SPEED"]
    out = tmp_path / "verify-resumed"
    argv = ["verify", *claims, "--scale", "smoke", "--json", "--executor", "ray", "--address", address, "--out", out]
    driver = _cflbounds_started(*argv)
    try:
        deadline = time.monotonic() + 300
        while not (out / "verdicts.json").exists() or not json.loads((out / "verdicts.json").read_text())["verdicts"]:
            assert driver.poll() is None, f"verify ended before its first verdict: {driver.stderr.read()}"
            assert time.monotonic() < deadline, "no verdict after 300 s"
            time.sleep(0.05)
        driver.kill()
        driver.wait(timeout=60)
    finally:
        if driver.poll() is None:
            driver.kill()
    kept = [v["id"] for v in json.loads((out / "verdicts.json").read_text())["verdicts"]]
    assert 1 <= len(kept) < len(claims)  # interrupted part-way
    resumed = _cflbounds(*argv, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    local = _cflbounds("verify", *claims, "--scale", "smoke", "--json", *LOCAL, "--out", tmp_path / "verify-local")
    assert local.returncode == 0, local.stderr

    def verdicts(text):
        return {v["id"]: {k: x for k, x in v.items() if k != "seconds"} for v in json.loads(text)["verdicts"]}

    assert verdicts(resumed.stdout) == verdicts(local.stdout)
    assert [v["id"] for v in json.loads(resumed.stdout)["verdicts"]] == claims  # the order asked
