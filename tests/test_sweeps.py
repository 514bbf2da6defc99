"""Sweeps: the resumable store, per-cell seeds, determinism, a killed-and-resumed sweep, executors."""
import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

import cflbounds.sweeps.ifca_fig2 as fig2
import cflbounds._files as files_module
import cflbounds.sweeps.store as store_module
from cflbounds._files import WriteError
from cflbounds._validation import InvalidParameterError
from cflbounds.cli import main
from cflbounds.sweeps.executors import run_cells
from cflbounds.sweeps.grid import cell_key, cell_seed, expand, trial_seeds
from cflbounds.sweeps.ifca_fig2 import fig2_cells, run_fig2_cell
from cflbounds.sweeps.store import ResultStore



SORT = ["cell", "trial", "restart", "step_size"]


def frame(values, **columns):
    return pd.DataFrame({"x": np.asarray(values, dtype=float), **columns})


def visible_cells(directory: Path) -> list[Path]:
    return sorted(directory.glob("cell-*.parquet"))


# -- ResultStore --------------------------------------------------------------------------------
def test_store_write_read_has_cells(tmp_path):
    store = ResultStore(tmp_path / "store")
    assert store.cells() == [] and store.read().empty and not store.has("a")
    store.write('{"b":2}', frame([3.0, 4.0], trial=[0, 1]))
    store.write('{"a":1}', frame([1.0], trial=[0]))
    assert store.has('{"a":1}') and store.has('{"b":2}') and not store.has('{"c":3}')
    assert store.cells() == ['{"a":1}', '{"b":2}']
    rows = store.read()
    # cells in key order, rows in written order, the key in a `cell` column
    assert rows["x"].tolist() == [1.0, 3.0, 4.0]
    assert rows["cell"].tolist() == ['{"a":1}', '{"b":2}', '{"b":2}']
    assert rows["trial"].tolist() == [0, 0, 1]


def test_store_rewrite_replaces_the_cell(tmp_path):
    store = ResultStore(tmp_path)
    store.write("k", frame([1.0]))
    store.write("k", frame([2.0, 3.0]))
    assert store.read()["x"].tolist() == [2.0, 3.0] and len(visible_cells(tmp_path)) == 1


def test_store_leaves_no_temporary_files(tmp_path):
    store = ResultStore(tmp_path)
    for i in range(3):
        store.write(f"k{i}", frame([i]))
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in visible_cells(tmp_path))


def test_store_failed_write_leaves_nothing(tmp_path, monkeypatch):
    """A writer that dies half-way: neither the cell nor its temporary file remains."""
    store = ResultStore(tmp_path)
    store.write("done", frame([1.0]))

    def half_write(table, path, *args, **kwargs):
        Path(path).write_bytes(b"PAR1 half a file")
        raise OSError("disk full")

    monkeypatch.setattr(store_module.pq, "write_table", half_write)
    with pytest.raises(WriteError, match="disk full"):
        store.write("broken", frame([2.0]))
    assert not store.has("broken")
    assert store.cells() == ["done"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [p.name for p in visible_cells(tmp_path)]


def test_store_failed_rewrite_keeps_the_old_cell(tmp_path, monkeypatch):
    store = ResultStore(tmp_path)
    store.write("k", frame([1.0]))
    monkeypatch.setattr(files_module.os, "replace", lambda *a: (_ for _ in ()).throw(OSError("crash")))
    with pytest.raises(WriteError, match="crash"):
        store.write("k", frame([2.0]))
    monkeypatch.undo()
    assert store.read()["x"].tolist() == [1.0]


def test_store_cells_are_readable_by_others(tmp_path):
    # a store is shared (reports, other users): cells get the usual 0644, not mkstemp's 0600
    path = ResultStore(tmp_path).write("k", frame([1.0]))
    assert stat.S_IMODE(path.stat().st_mode) & 0o044 == 0o044


def test_store_manifest_roundtrip(tmp_path):
    store = ResultStore(tmp_path / "s")
    assert store.read_manifest() is None
    store.write_manifest({"name": "x", "grid": [1, 2]})
    assert store.read_manifest() == {"name": "x", "grid": [1, 2]}
    assert store.cells() == []  # the manifest is not a cell


# -- grids and seeds -------------------------------------------------------------------------------
def test_cell_key_is_order_free():
    assert cell_key({"a": 1, "b": [1, 2]}) == cell_key({"b": [1, 2], "a": 1})
    assert cell_seed(3, {"a": 1, "b": 2}) == cell_seed(3, {"b": 2, "a": 1})


def test_cell_seeds_depend_on_the_cell_only():
    small = fig2_cells(("a",), ("official",), {"r": [0.1, 0.5], "sigma": [0.1]}, seed=4)
    large = fig2_cells(("a", "c"), ("paper-text", "official"), {"r": [0.5, 0.25, 0.1], "sigma": [0.2, 0.1]}, seed=4)
    large = large[::-1]
    by_key = {cell_key(c): c for c in large}
    for cell in small:
        assert cell_key(cell) in by_key
        assert cell_seed(4, cell) == cell_seed(4, by_key[cell_key(cell)])
        assert trial_seeds(4, cell, 5) == trial_seeds(4, by_key[cell_key(cell)], 5)
    seeds = [cell_seed(4, c) for c in large]
    assert len(set(seeds)) == len(seeds)  # distinct cells, distinct seeds
    assert cell_seed(5, small[0]) != cell_seed(4, small[0])  # the sweep seed matters


def test_trial_seeds_prefix_property():
    cell = {"any": "cell"}
    assert trial_seeds(0, cell, 10)[:4] == trial_seeds(0, cell, 4)


def test_expand_is_the_product():
    cells = expand({"k": 2}, {"m": [1, 2], "r": [0.1, 0.2, 0.3]})
    assert len(cells) == 6 and all(c["k"] == 2 for c in cells)
    assert {(c["m"], c["r"]) for c in cells} == {(m, r) for m in (1, 2) for r in (0.1, 0.2, 0.3)}


def tiny_cell(**changes):
    protocol = {"trials": 3, "restarts": 2, "iterations": 20, **changes}
    overrides = {"d": [20], "m": [8], "n": [10], "r": [0.5], "sigma": [0.1]}
    return fig2_cells(("a",), ("official",), overrides, seed=1, **protocol)[0]


def test_problem_seeds_ignore_execution_settings():
    """Data seeds depend on the problem, not on iterations, restarts, dtype or early exit."""
    reference = run_fig2_cell(tiny_cell())
    seeds = reference.groupby("trial")["problem_seed"].first()
    for changes in ({"iterations": 10}, {"restarts": 1}, {"early_exit": False}, {"dtype": "float64"}):
        other = run_fig2_cell(tiny_cell(**changes)).groupby("trial")["problem_seed"].first()
        pd.testing.assert_series_equal(other, seeds, obj=str(changes))
    more = run_fig2_cell(tiny_cell(trials=5)).groupby("trial")["problem_seed"].first()
    pd.testing.assert_series_equal(more.iloc[:3], seeds)


# -- determinism -------------------------------------------------------------------------------------
@pytest.mark.parametrize("early_exit", [True, False])
def test_same_cell_twice_gives_identical_rows(early_exit):
    cell = tiny_cell(early_exit=early_exit)
    pd.testing.assert_frame_equal(run_fig2_cell(cell), run_fig2_cell(cell))


@pytest.mark.parametrize("early_exit", [True, False])
def test_chunking_of_problems_does_not_change_rows(monkeypatch, early_exit):
    """All trials in one batch vs one trial per batch (``_BATCH_BYTES`` below one problem)."""
    cell = tiny_cell(trials=4, early_exit=early_exit)
    batched = run_fig2_cell(cell)
    monkeypatch.setattr(fig2, "_BATCH_BYTES", {"cpu": 1, "cuda": 1})
    one_by_one = run_fig2_cell(cell)
    pd.testing.assert_frame_equal(one_by_one, batched)


# -- run_cells ----------------------------------------------------------------------------------------
def test_run_cells_skips_stored_cells(tmp_path):
    cells = [{"i": i} for i in range(3)]
    computed = []

    def compute(cell):
        computed.append(cell["i"])
        return frame([cell["i"]])

    store = ResultStore(tmp_path)
    store.write(cell_key(cells[1]), frame([99.0]))
    summary = run_cells(cells, compute, store)
    assert (summary["computed"], summary["skipped"], summary["runs"]) == (2, 1, 2)
    assert computed == [0, 2]
    assert store.read()["x"].tolist() == [0.0, 99.0, 2.0]
    assert run_cells(cells, compute, store)["computed"] == 0


def test_run_cells_rejects_unknown_executor(tmp_path):
    with pytest.raises(InvalidParameterError, match="'executor'"):
        run_cells([{"i": 0}], lambda c: frame([0]), ResultStore(tmp_path), executor="dask")


# -- a killed sweep, resumed ------------------------------------------------------------------------
GRID = ["ifca-fig2", "--panel", "a", "--variant", "official", "--d", "20", "--m", "8", "--n", "10", "--r", "0.5",
        "--sigma", "0.1,0.2,0.3,0.4", "--trials", "3", "--restarts", "2", "--iterations", "40", "--device", "cpu"]
CELLS = 4


def _command():
    entry = Path(sys.executable).with_name("cflbounds")
    return [str(entry)] if entry.exists() else [sys.executable, "-m", "cflbounds.cli"]


def _sorted_rows(directory):
    return ResultStore(directory).read().sort_values(SORT).reset_index(drop=True)


def test_killed_sweep_resumes_to_the_uninterrupted_result(tmp_path, capsys):
    interrupted, reference = tmp_path / "interrupted", tmp_path / "reference"
    process = subprocess.Popen(_command() + ["sweep", *GRID, "--out", str(interrupted)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               env={**os.environ, "OMP_NUM_THREADS": "1"})  # as single_torch_thread
    try:
        deadline = time.monotonic() + 300
        while not visible_cells(interrupted):
            assert process.poll() is None, f"sweep ended before writing a cell: {process.stderr.read()!r}"
            assert time.monotonic() < deadline, "no cell after 300 s"
            time.sleep(0.005)
        os.kill(process.pid, signal.SIGKILL)
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=60)
        process.stderr.close()
    assert process.returncode == -signal.SIGKILL
    done = visible_cells(interrupted)
    # each cell takes ~1 s and the kill follows the first file within milliseconds
    assert 1 <= len(done) < CELLS
    for path in done:  # never a partial cell: every visible file is a complete table with its key
        assert pq.read_table(path).num_rows > 0
    finished = ResultStore(interrupted).cells()
    assert len(finished) == len(done)

    assert main(["sweep", *GRID, "--out", str(interrupted)]) == 2  # a non-empty store needs --resume
    assert main(["sweep", *GRID, "--out", str(interrupted), "--resume"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{CELLS - len(done)} cells computed, {len(done)} skipped")
    assert main(["sweep", *GRID, "--out", str(reference)]) == 0

    assert ResultStore(interrupted).cells() == ResultStore(reference).cells()
    assert len(ResultStore(reference).cells()) == CELLS
    pd.testing.assert_frame_equal(_sorted_rows(interrupted), _sorted_rows(reference))
    # a temporary file of the killed write may remain, but hidden: never as a cell
    strays = [p.name for p in interrupted.iterdir() if p.name.startswith("cell-") and not p.name.endswith(".parquet")]
    assert strays == []
    assert all(p.name.startswith(".") for p in interrupted.iterdir() if "tmp" in p.name)


# -- a store refuses what would lose or mix rows --------------------------------------------------
def _one_line_error(excinfo, *names):
    message = str(excinfo.value)
    assert "\n" not in message
    for name in names:
        assert name in message, (name, message)


@pytest.mark.parametrize("content", [b"", b"PAR1 half a file", b"not parquet at all" * 10], ids=["empty", "truncated",
                                                                                                    "garbage"])
def test_store_names_an_unreadable_cell_file(tmp_path, content):
    store = ResultStore(tmp_path)
    store.write("good", frame([1.0]))
    bad = tmp_path / "cell-00000000000000000000.parquet"
    bad.write_bytes(content)
    with pytest.raises(InvalidParameterError) as excinfo:
        store.cells()
    _one_line_error(excinfo, str(bad), "delete it")
    with pytest.raises(InvalidParameterError):
        store.read()


def test_store_names_a_parquet_file_that_is_not_a_cell(tmp_path):
    pd.DataFrame({"x": [1.0]}).to_parquet(tmp_path / "cell-foreign.parquet")  # no cell key in its metadata
    with pytest.raises(InvalidParameterError) as excinfo:
        ResultStore(tmp_path).cells()
    _one_line_error(excinfo, "cell-foreign.parquet")


def test_store_that_is_a_file(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(InvalidParameterError) as excinfo:
        ResultStore(tmp_path / "file").cells()
    _one_line_error(excinfo, str(tmp_path / "file"), "not a sweep store directory")


def test_store_refuses_cells_of_other_settings_and_accepts_other_cells(tmp_path):
    """Trial i of seed 0 and of seed 1 would be read as one trial: a store holds one sweep.
    Other cells of the same sweep (a new panel or axis value) may join it."""
    store = ResultStore(tmp_path)
    seed0 = tiny_cell()
    store.write(cell_key(seed0), frame([1.0]))
    settings = {name: seed0[name] for name in ("sweep", "seed", *fig2.PROTOCOL)}
    store.check_settings(settings)  # the same settings: fine
    store.write(cell_key({**seed0, "sigma": 0.2}), frame([2.0]))  # another cell of the same sweep
    store.check_settings(settings)
    for name, other in [("seed", 2), ("trials", 4), ("restarts", 3), ("iterations", 30), ("dtype", "float64"),
                        ("shared_inits", True), ("early_exit", False)]:
        with pytest.raises(InvalidParameterError) as excinfo:
            store.check_settings({**settings, name: other})
        _one_line_error(excinfo, str(tmp_path), f"{name}={seed0[name]!r}", f"{name}={other!r}")


def test_store_that_cannot_be_written_is_named(tmp_path, monkeypatch):
    """A read-only directory (simulated: the tests may run as root, who may write anywhere)."""
    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(files_module.tempfile, "mkstemp", refuse)
    for write in (lambda s: s.write_manifest({"name": "x"}), lambda s: s.write("k", frame([1.0]))):
        with pytest.raises(WriteError) as excinfo:
            write(ResultStore(tmp_path / "store"))
        _one_line_error(excinfo, str(tmp_path / "store"), "Permission denied")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_store_in_a_read_only_directory_is_named(tmp_path):
    readonly = tmp_path / "readonly"
    readonly.mkdir(mode=0o555)
    with pytest.raises(WriteError) as excinfo:
        ResultStore(readonly / "store").write_manifest({"name": "x"})
    _one_line_error(excinfo, str(readonly / "store"))


def test_store_names_a_corrupt_manifest(tmp_path):
    (tmp_path / "sweep.json").write_text("{not json")
    with pytest.raises(InvalidParameterError) as excinfo:
        ResultStore(tmp_path).read_manifest()
    _one_line_error(excinfo, str(tmp_path / "sweep.json"))


# -- what a cell costs -------------------------------------------------------------------------------
_PEAK_SCRIPT = """
import json, os, sys, tempfile
import torch
torch.set_num_threads(int(sys.argv[2]))
from cflbounds.sweeps.grid import cell_key
from cflbounds.sweeps.ifca_fig2 import cell_memory, fig2_cells, run_fig2_cell
from cflbounds.sweeps.store import ResultStore

def resident():
    return int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

def peak():
    return next(int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("VmHWM:"))

results = []
with tempfile.TemporaryDirectory() as directory:
    store = ResultStore(directory)
    for overrides, protocol in json.loads(sys.argv[1]):
        cell = fig2_cells(("a",), ("official",), overrides, **protocol)[0]
        base = resident()
        open("/proc/self/clear_refs", "w").write("5")  # restart the peak (VmHWM) from here
        rows = run_fig2_cell(cell)
        store.write(cell_key(cell), rows)
        results.append({"measured": peak() - base, "estimate": sum(b for b, _ in cell_memory(cell).values()),
                        "certified": int((rows["certified"] != "").sum())})
print(json.dumps(results))
"""
_PEAK_CELLS = {  # torch threads -> cells; what dominates: data and the early-exit certificate; trials' rows and trace
    1: [
        # 4 restarts x 3 steps over 200 iterations: enough run-iterations for the certificate to be worth its Grams
        ({"m": [150], "n": [100], "d": [1000], "r": [1.0], "sigma": [0.1]}, {"trials": 1, "restarts": 4, "iterations": 200}),
        ({"m": [8], "n": [10], "d": [20], "r": [0.5], "sigma": [0.1]}, {"trials": 3000, "restarts": 3, "iterations": 20}),
    ],
    # one paper-size trial per batch: two threads draw two batches' problems together and hold both
    2: [({"m": [100], "n": [100], "d": [1000], "r": [1.0], "sigma": [0.1]}, {"trials": 3, "restarts": 4, "iterations": 200})],
}


@pytest.mark.skipif(not os.access("/proc/self/clear_refs", os.W_OK), reason="needs Linux's resettable peak RSS")
@pytest.mark.parametrize("threads", sorted(_PEAK_CELLS))
def test_cell_memory_bounds_the_measured_peak(threads):
    """The estimate the sweep checks against free memory, against what a fresh process really
    holds at its peak (resident set high-water mark) while it runs and stores a cell: never
    below it (a refusal must not be needed to avoid an out-of-memory kill), and at most twice
    it (measured 1.55-1.7x on the paper-size cell: the estimate assumes the certificate's worst
    case and a fixed 64 MB overhead; 1.2-1.4x on the 3000 small problems, whose quadratics'
    objects it counts per problem), so a sweep that fits is not refused. On two threads, with
    two batches' problems drawn and held together, likewise."""
    script = [sys.executable, "-c", _PEAK_SCRIPT, json.dumps(_PEAK_CELLS[threads]), str(threads)]
    result = subprocess.run(script, capture_output=True, text=True, timeout=600,
                            env={**os.environ, "OMP_NUM_THREADS": str(threads)})
    assert result.returncode == 0, result.stderr
    cells = json.loads(result.stdout)
    assert cells[0]["certified"] > 0  # the certificate's allocations did happen
    for cell in cells:
        assert cell["measured"] <= cell["estimate"] <= 2 * cell["measured"], cell


def test_cell_memory_is_exact_for_absurd_sizes():
    """Python integers: 10^20 machines give a number of bytes above 10^20, not an overflow."""
    cell = fig2_cells(("a",), ("official",), {"m": [10**20]})[0]
    parts = fig2.cell_memory(cell)
    assert all(isinstance(size, int) for size, _ in parts.values())
    assert parts["data (--m, --n, --d)"][0] >= 10**20 * 100 * 1000 * 4


def test_a_cell_that_cannot_fit_is_refused_before_anything_is_allocated(monkeypatch):
    cell = tiny_cell()
    needed = sum(size for size, _ in fig2.cell_memory(cell).values())

    def not_allowed(*args, **kwargs):
        raise AssertionError("the data were drawn before the memory check")

    monkeypatch.setattr(fig2, "make_mixed_linear_regression", not_allowed)
    monkeypatch.setattr(fig2, "available_memory", lambda device: needed - 1)
    with pytest.raises(InvalidParameterError) as excinfo:
        run_fig2_cell(cell)
    _one_line_error(excinfo, "needs about", "is available", "panel a")
    monkeypatch.setattr(fig2, "available_memory", lambda device: needed)
    with pytest.raises(AssertionError, match="drawn"):  # exactly enough: the cell starts
        run_fig2_cell(cell)


def test_cell_flops_count_every_run_and_iteration():
    """Protocol cell: 40 trials x (10 restarts x 3 step sizes) runs x 300 iterations, each
    iteration a GEMM of 2 m n d per model (the residuals) and one of 2 m n d per run (the chosen
    model's gradient) plus lower-order terms: 1.0 % here, most of it the per-cluster sums of the
    machines' gradients (2 m C k d, k / 3n of the GEMMs)."""
    from cflbounds.algorithms.squared_loss import iteration_flops

    cell = fig2_cells(("a",), ("official",))[0]
    assert fig2.cell_flops(cell) == 40 * 300 * iteration_flops(100, 100, 1000, 2, 30)["total"]
    gemms = 40 * 300 * 30 * (2 + 1) * (2 * 100 * 100 * 1000)
    assert gemms <= fig2.cell_flops(cell) <= 1.02 * gemms
    assert fig2.cell_seconds(cell) >= fig2.cell_flops(cell) / fig2.assumed_rate("cpu")
