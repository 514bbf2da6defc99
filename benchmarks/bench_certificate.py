"""The early-exit certificate's share of the product's CPU time, on one thread.

    python benchmarks/bench_certificate.py                 # paper size, r = 0.25 and 0.1, 3 trials each
    python benchmarks/bench_certificate.py --trials 2 --r 0.25
    python benchmarks/bench_certificate.py --claim-cells 8  # the first 8 cells of IFCA.F2 at verify's default scale

Process CPU time on one torch thread stays meaningful on a shared box, where wall times of
two-thread runs are not (benchmarks/README.md, "The shared box"). To compare two versions
side by side, run it once per source tree in one shell run:

    for tree in /path/to/old /path/to/new; do PYTHONPATH=$tree python $tree/benchmarks/bench_certificate.py; done

``--threads N`` runs torch on N threads and times by the wall clock instead (CPU time counts
threads that spin while they wait): what a run at ``--threads N`` costs, e.g. the certificate's
float64 work, which runs on one thread whatever N (``cflbounds._threads.one_torch_thread``).
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.benchmark_cells import add_cell_options, benchmark_cells  # noqa: E402
from benchmarks.timed_certificate import cholesky_seconds, time_certificate  # noqa: E402
from cflbounds.sweeps import ifca_fig2  # noqa: E402
from cflbounds.sweeps.ifca_fig2 import run_fig2_cell, trial_outcomes  # noqa: E402
from cflbounds.papers.ifca.success import claim_cells  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_cell_options(parser, trials=3)
    parser.add_argument("--claim-cells", type=int, default=None, metavar="N",
                        help="instead of the paper-size cells, the first N cells (0: all 39) of the IFCA.F2 claim at "
                             "verify's default scale (d = 100, 40 trials each; its certificate's cost is mostly Python "
                             "and small matrices)")
    parser.add_argument("--threads", type=int, default=1, metavar="N",
                        help="torch threads (default 1: process CPU time; above 1 the wall clock)")
    args = parser.parse_args(argv)
    if args.claim_cells is not None and args.claim_cells < 0:
        parser.error(f"--claim-cells must be >= 0, got {args.claim_cells}")
    if args.threads < 1:
        parser.error(f"--threads must be >= 1, got {args.threads}")
    torch.set_num_threads(args.threads)
    clock, unit = (time.process_time, "s CPU") if args.threads == 1 else (time.perf_counter, "s wall")
    certificate = time_certificate(clock)
    revision = subprocess.run(["git", "-C", str(Path(ifca_fig2.__file__).parent), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True).stdout.strip() or "(no git)"
    start = clock()
    successes = []
    if args.claim_cells is None:
        cells = benchmark_cells(args)
    else:
        cells = claim_cells("default", seed=0)[:args.claim_cells or None]
    for cell in cells:
        successes.append(int(trial_outcomes(run_fig2_cell(cell))["success"].sum()))
    product = clock() - start
    floor = certificate.floor_seconds(cholesky_seconds(cells[0]["d"], clock), args.threads)
    grid = (f"r {args.r}, {args.trials} trials each" if args.claim_cells is None
            else f"IFCA.F2's first {len(cells)} default-scale cells")
    print(f"cflbounds {revision} ({Path(ifca_fig2.__file__).parent.parent}): {grid}, "
          f"successes {successes}; product {product:.1f} {unit}, certificate {certificate.seconds:.1f} s "
          f"({100 * certificate.seconds / product:.1f}%), of which the true clusters' Gram matrices "
          f"{certificate.gram_seconds:.1f} s ({100 * certificate.gram_seconds / product:.1f}%), its floor "
          f"{floor:.1f} s ({100 * floor / (product - certificate.seconds + floor):.1f}% of a product whose "
          f"certificate cost only that); {args.threads} torch thread{'s' if args.threads > 1 else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
