"""Run a sweep's pending cells locally or on Ray, writing each finished cell to the store.

Both executors compute a cell with the same function from the same cell dict and seed,
so they produce the same rows; only the driver (the process that called :func:`run_cells`)
writes to the store, each cell once, atomically, as its task finishes. On Ray each cell is a
task (:mod:`.ray_cluster`: resources, retry policy), and the arguments every cell shares go to
Ray's object store once, not once per task.
"""
from __future__ import annotations

import importlib.util
import sys
import time
from typing import Callable

import pandas as pd

from .._validation import InvalidParameterError
from .grid import cell_key
from .store import ResultStore

__all__ = ["EXECUTORS", "run_cells", "check_executor"]

EXECUTORS = ("local", "ray")


def _progress(total: int, enabled: bool | None | Callable[[int, int], None]):
    """A tqdm bar (cells, runs/s, ETA) on an interactive terminal; silent otherwise (and when
    a callable reports the cells instead)."""
    if callable(enabled):
        return None
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, unit="cell", dynamic_ncols=True)


def run_cells(cells: list[dict], compute: Callable[..., pd.DataFrame], store: ResultStore, *,
              executor: str = "local", progress: bool | None | Callable[[int, int], None] = None,
              shared: dict | None = None) -> dict:
    """Compute every cell not yet in ``store`` as ``compute(cell, **shared)``; returns counts of
    computed/skipped cells and runs.

    ``compute``: a module-level function (Ray ships it to its workers by name). ``shared``: the
    keyword arguments every cell takes (a device, a problem's tensors), put into Ray's object
    store once. ``progress``: a bar if True, none if False, a bar on a terminal only if None; a
    callable is told ``(cells done, cells to do)`` after each cell instead (a caller's own
    display); on Ray a cell counts when its task finishes, on whichever node."""
    pending = [cell for cell in cells if not store.has(cell_key(cell))]
    bar = _progress(len(pending), progress)
    started, runs, computed = time.perf_counter(), 0, 0
    if callable(progress):
        progress(0, len(pending))

    def finished(cell, rows):
        nonlocal runs, computed
        store.write(cell_key(cell), rows)
        runs, computed = runs + len(rows), computed + 1
        if callable(progress):
            progress(computed, len(pending))
        if bar is not None:
            bar.set_postfix_str(f"{runs / (time.perf_counter() - started):.1f} runs/s")
            bar.update(1)

    try:
        if executor == "local":
            for cell in pending:
                finished(cell, compute(cell, **(shared or {})))
        elif executor == "ray":
            _run_on_ray(pending, compute, shared or {}, finished)
        else:
            raise InvalidParameterError(f"The 'executor' parameter must be one of {EXECUTORS}. Got {executor!r} instead.")
    finally:
        if bar is not None:
            bar.close()
    return {"computed": len(pending), "skipped": len(cells) - len(pending), "runs": runs,
            "seconds": time.perf_counter() - started}


def check_executor(executor: str) -> None:
    """Refuse an executor that cannot run here, before any work starts."""
    if executor not in EXECUTORS:
        raise InvalidParameterError(f"The 'executor' parameter must be one of {EXECUTORS}. Got {executor!r} instead.")
    if executor == "ray" and importlib.util.find_spec("ray") is None:
        raise InvalidParameterError("The 'executor' parameter is 'ray' but Ray is not installed; install the extra: "
                                    "pip install 'cflbounds[ray]'.")


def _compute_cell(compute: Callable[..., pd.DataFrame], cell: dict, shared: dict) -> pd.DataFrame:
    """One cell as a Ray task (``shared`` arrives from the object store)."""
    return compute(cell, **shared)


def _run_on_ray(pending, compute, shared, finished):
    from .ray_cluster import as_finished, connect, submitter

    check_executor("ray")
    ray = connect()
    submit = submitter(ray, _compute_cell, shared.get("device", "cpu"))
    shared_ref = ray.put(shared)  # once for all cells; each task reads it from its node's object store
    futures = {submit(compute, cell, shared_ref): index for index, cell in enumerate(pending)}
    for index, rows in as_finished(ray, futures):
        finished(pending[index], rows)
