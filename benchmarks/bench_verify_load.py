"""How much a busy second core slows ``cflbounds verify``, per thread setting, side by side.

    python benchmarks/bench_verify_load.py                    # default scale: about 25-40 minutes
    python benchmarks/bench_verify_load.py --scale smoke      # about 5 minutes
    python benchmarks/bench_verify_load.py --threads auto,2,1 --claims 'FC.*'

Runs the installed ``cflbounds verify --scale S`` (a fresh process each time, output in a
temporary directory) for every thread setting, first on the machine as it is ("idle") and
then with one extra process spinning on a core for the whole run ("busy": a pure-Python
loop, the kind of neighbour a shared machine has). Prints the wall times, the busy/idle
ratio per setting and each setting against the fastest idle one, so a default can be chosen
from one run (DESIGN.md: ratios measured side by side). torch's OpenMP threads spin-wait for
each other: with a neighbour holding a core, a 2-thread op waits for a descheduled partner.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.shared_box import busy_neighbour  # noqa: E402


def run_verify(scale: str, threads: str, claims: list[str]) -> float:
    """Wall seconds of one ``cflbounds verify --threads THREADS`` run in a fresh process."""
    with tempfile.TemporaryDirectory() as out:
        command = [sys.executable, "-m", "cflbounds.cli", "verify", *claims, "--scale", scale, "--out", out,
                   "--threads", threads]
        started = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return time.perf_counter() - started


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", default="default", choices=("smoke", "default", "paper"))
    parser.add_argument("--threads", default=f"auto,{os.cpu_count()},1",
                        help="comma-separated --threads settings: 'auto' (the default of verify) or a count "
                             "(default: auto, the CPU count, 1)")
    parser.add_argument("--claims", nargs="*", default=[], help="claim IDs or patterns (default: all)")
    args = parser.parse_args(argv)
    settings = args.threads.split(",")
    print(f"cflbounds verify --scale {args.scale} {' '.join(args.claims)}; {os.cpu_count()} CPUs; "
          f"load average {os.getloadavg()[0]:.2f} at the start", flush=True)
    times = {}
    for busy in (False, True):
        with busy_neighbour() if busy else contextlib.nullcontext():
            for threads in settings:
                times[threads, busy] = run_verify(args.scale, threads, args.claims)
                print(f"  {'busy' if busy else 'idle'} neighbour, threads {threads:>5}: "
                      f"{times[threads, busy]:7.1f} s", flush=True)
    fastest = min(times[t, False] for t in settings)
    print("\nthreads   idle (s)   busy (s)   busy/idle   idle/fastest idle   busy/fastest idle")
    for threads in settings:
        idle, busy = times[threads, False], times[threads, True]
        print(f"{threads:>7}   {idle:8.1f}   {busy:8.1f}   {busy / idle:9.2f}   {idle / fastest:17.2f}   "
              f"{busy / fastest:17.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
