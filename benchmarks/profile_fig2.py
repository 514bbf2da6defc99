"""Where the product's time goes, kernel by kernel: ``torch.profiler`` on ``run_fig2_cell``.

    python benchmarks/profile_fig2.py                    # paper size, r = 0.25 and 0.1, 2 trials each
    python benchmarks/profile_fig2.py --trials 1 --threads 2

Prints the self time of every torch operator that takes at least 0.5 % of the run (the
profiler's clock is the wall clock), and the rest of the run's wall time (Python, NumPy, the
certificate's bookkeeping) as what the profiler saw outside torch operators. One torch thread by
default; on a shared box the shares stay meaningful, the seconds do not.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.benchmark_cells import add_cell_options, benchmark_cells  # noqa: E402
from cflbounds.sweeps.ifca_fig2 import run_fig2_cell  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_cell_options(parser, trials=2)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    cells = benchmark_cells(args)
    start = time.perf_counter()
    with profile(activities=[ProfilerActivity.CPU]) as profiler:
        for cell in cells:
            run_fig2_cell(cell)
    total = time.perf_counter() - start
    events = [event for event in profiler.key_averages() if event.self_cpu_time_total > 0]
    events.sort(key=lambda event: event.self_cpu_time_total, reverse=True)
    in_ops = sum(event.self_cpu_time_total for event in events) / 1e6
    print(f"run_fig2_cell, r {args.r}, {args.trials} trials each, {args.threads} thread(s): {total:.1f} s wall "
          f"time; torch operators {in_ops:.1f} s ({100 * in_ops / total:.0f}%), the rest (Python, NumPy, profiler) "
          f"{total - in_ops:.1f} s")
    print(f"{'operator':<32} {'calls':>7} {'self s':>10} {'share':>7}")
    for event in events:
        seconds = event.self_cpu_time_total / 1e6
        if seconds < 0.005 * total:
            break
        print(f"{event.key:<32} {event.count:>7} {seconds:>10.2f} {100 * seconds / total:>6.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
