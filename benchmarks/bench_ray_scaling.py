"""Scaling of ``--executor ray`` on this machine, and the projected time of the full Fig. 2
protocol on N nodes, from measured per-cell costs.

    python benchmarks/bench_ray_scaling.py            # about 5 minutes on a 2-core CPU
    python benchmarks/bench_ray_scaling.py --quick    # about 2 minutes

1. Scaling, side by side in one run: the same sweep cells (the IFCA.F2 default-scale panel c
   grid: 8 cells of 40 trials) computed by ``run_cells`` in this process (``--executor local``,
   1 torch thread), then on a local Ray instance with 1 worker CPU, then with 2 (one task per
   cell, one CPU per task, as ``--executor ray`` runs them). The Ray timings start once the
   workers are up (a warm-up task per CPU), so they measure the work, not Ray's start. The rows
   of the three runs are checked to be identical. The CPU use of other processes during each
   run (judged over 3 s just before it) is printed: on a shared machine it decides what 2
   workers can gain.
2. Projection: a few full-protocol cells (the smallest of each panel of the ``official``
   protocol: d = 1000, 10 restarts x 3 step sizes x 300 iterations) are run for ``--trials``
   trials on 1 thread, as a Ray task runs them; each panel's measured rate (the flops
   ``cell_flops`` counts for its cell without early exit, per second of the measured run) sets
   the time of every cell of that panel. The full protocol (112 cells x 40 trials) is then
   scheduled on N nodes of 2 CPUs, longest cell first onto the CPU free earliest (cells are
   indivisible tasks), and the makespan is printed for several N.
"""
from __future__ import annotations

import argparse
import heapq
import os
import sys
import tempfile
import time

import pandas as pd
import torch

from cflbounds._threads import OtherLoad
from cflbounds.sweeps.executors import run_cells
from cflbounds.sweeps.ifca_fig2 import PANELS, cell_flops, fig2_cells, run_fig2_cell
from cflbounds.sweeps.store import ResultStore
from cflbounds.papers.ifca.success import SCALES as F2_SCALES

NODE_COUNTS = (1, 2, 4, 8, 16, 32, 64)
CPUS_PER_NODE = 2


def scaling_cells(quick: bool) -> list[dict]:
    """The IFCA.F2 default-scale panel c cells (8 cells, 40 trials; ``--quick``: 4 cells, 20)."""
    scale = F2_SCALES["default"]
    overrides = dict(scale["panels"]["c"])
    protocol = dict(scale["protocol"])
    if quick:
        overrides["m"], protocol["trials"] = overrides["m"][:2], 20
    return fig2_cells(("c",), ("official",), overrides, seed=0, **protocol)


def other_load(seconds: float = 3.0) -> float | None:
    """Cores other processes keep busy, judged over ``seconds`` while this benchmark waits (Ray's
    workers are not this process's children, so a window during a run would count them too)."""
    load = OtherLoad()
    time.sleep(seconds)
    return load.cores()


def _timed(run) -> tuple[float, float | None, pd.DataFrame]:
    """Wall seconds of ``run()`` (which returns rows), and other processes' CPU use just before."""
    others = other_load()
    started = time.perf_counter()
    rows = run()
    return time.perf_counter() - started, others, rows


def _store_run(cells, executor: str):
    def run():
        with tempfile.TemporaryDirectory() as directory:
            store = ResultStore(directory)
            run_cells(cells, run_fig2_cell, store, executor=executor, shared={"device": "cpu"}, progress=False)
            return store.read()
    return run


def _warm_up(cpus: int) -> None:
    """One task per CPU that imports torch, so the timing below starts with the workers up."""
    import ray

    @ray.remote(num_cpus=1)
    def ready() -> int:
        import torch as worker_torch
        time.sleep(0.5)
        return worker_torch.get_num_threads()

    ray.get([ready.remote() for _ in range(cpus)])


def scaling(cells: list[dict]) -> None:
    import logging

    import ray

    print(f"scaling: {len(cells)} cells (IFCA.F2 default scale, panel c), {cells[0]['trials']} trials each; "
          f"this machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    torch.set_num_threads(1)  # as one Ray task runs
    results = {"local (this process, 1 thread)": _timed(_store_run(cells, "local"))}
    for cpus in (1, 2):
        ray.init(address="local", num_cpus=cpus, include_dashboard=False, log_to_driver=False,
                 logging_level=logging.ERROR)
        try:
            _warm_up(cpus)
            results[f"ray, {cpus} worker process{'es' if cpus > 1 else ''}"] = _timed(_store_run(cells, "ray"))
        finally:
            ray.shutdown()
    reference = next(iter(results.values()))[2]
    one_worker = results["ray, 1 worker process"][0]
    print(f"{'run':<32} {'seconds':>8} {'vs 1 worker':>11} {'others before':>14}  rows")
    for label, (seconds, others, rows) in results.items():
        same = "identical" if rows.equals(reference) else "DIFFERENT"
        other = "?" if others is None else f"{others:.2f} cores"
        print(f"{label:<32} {seconds:8.1f} {one_worker / seconds:10.2f}x {other:>14}  {same}")


def _schedule(seconds: list[float], workers: int) -> float:
    """Makespan of indivisible tasks, longest first onto the worker free earliest."""
    free = [0.0] * workers
    for cost in sorted(seconds, reverse=True):
        heapq.heapreplace(free, free[0] + cost)
    return max(free)


def projection(trials: int) -> None:
    cells = fig2_cells(tuple(PANELS), ("official",), {}, seed=0)
    torch.set_num_threads(1)
    rates = {}
    print(f"\nprojection: the full official protocol, {len(cells)} cells x {cells[0]['trials']} trials "
          f"({sum(cell_flops(c) for c in cells) / 1e15:.1f} PFLOP without early exit)")
    print("(rate: the flops of the measured trials without early exit, per second; early exit makes it "
          "exceed the machine's)")
    print(f"{'panel':<6} {'measured cell (k, m, n, r, sigma)':<36} {'trials':>6} {'seconds':>8} {'GFLOP/s':>8}")
    for panel in sorted(PANELS):
        smallest = min((c for c in cells if c["panel"] == panel), key=cell_flops)
        measured = {**smallest, "trials": trials}
        others = other_load()
        started = time.perf_counter()
        run_fig2_cell(measured, device="cpu")
        seconds = time.perf_counter() - started
        rates[panel] = cell_flops(measured) / seconds
        print(f"{panel:<6} {str((smallest['k'], smallest['m'], smallest['n'], smallest['r'], smallest['sigma'])):<36} "
              f"{trials:>6} {seconds:8.1f} {rates[panel] / 1e9:8.1f}"
              + ("" if others is None else f"   (other processes: {others:.2f} cores)"))
    costs = [cell_flops(c) / rates[c["panel"]] for c in cells]
    print(f"projected CPU time: {sum(costs) / 3600:.0f} h in all; the longest cell {max(costs) / 3600:.1f} h "
          f"(a cell is one task, so no cluster finishes sooner)")
    print(f"{'nodes':>5} {'CPUs':>5} {'projected hours':>16}")
    for nodes in NODE_COUNTS:
        print(f"{nodes:>5} {nodes * CPUS_PER_NODE:>5} {_schedule(costs, nodes * CPUS_PER_NODE) / 3600:16.1f}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="4 smaller cells for the scaling, 1 trial per "
                                                             "projected panel")
    parser.add_argument("--trials", type=int, help="trials per measured full-protocol cell (default 2; --quick 1)")
    parser.add_argument("--no-projection", action="store_true", help="only the scaling runs")
    args = parser.parse_args(argv)
    scaling(scaling_cells(args.quick))
    if not args.no_projection:
        projection(args.trials or (1 if args.quick else 2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
