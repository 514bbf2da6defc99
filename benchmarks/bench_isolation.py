"""What running each claim in a worker process of its own costs, side by side with one process.

    python benchmarks/bench_isolation.py                        # default scale, 2 rounds: about 40 minutes
    python benchmarks/bench_isolation.py --scale smoke --rounds 3
    python benchmarks/bench_isolation.py --claims 'IFCA.*' 'MGD.*'

Runs the installed ``cflbounds verify --scale S`` in a fresh process each time, alternating
``--isolation process`` (the default: a forkserver started once per run, then one forked worker
per claim, the experiments a package shares sent to its later claims as data) and
``--isolation none`` (every claim in the command's own process), so that both see the same
machine. Prints each run's wall time (start-up and report included), the per-claim seconds
summed, the process/none ratio of the medians, and checks that both give identical verdicts
(exit 1 if not).
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def run_verify(scale: str, isolation: str, claims: list[str]) -> tuple[float, float, list[dict]]:
    """Wall seconds, summed claim seconds and verdicts (without their seconds) of one run."""
    with tempfile.TemporaryDirectory() as directory:
        out = Path(directory) / "run"
        command = [sys.executable, "-m", "cflbounds.cli", "verify", *claims, "--scale", scale, "--out", str(out),
                   "--isolation", isolation, "--json"]
        started = time.perf_counter()
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        wall = time.perf_counter() - started
        if done.returncode not in (0, 3):
            raise SystemExit(f"{' '.join(command)} exited with {done.returncode}")
        verdicts = json.loads(done.stdout)["verdicts"]
    claimed = sum(verdict["seconds"] for verdict in verdicts)
    return wall, claimed, [{k: v for k, v in verdict.items() if k != "seconds"} for verdict in verdicts]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", default="default", choices=("smoke", "default", "paper"))
    parser.add_argument("--rounds", type=int, default=2, help="runs of each mode, alternating (default: 2)")
    parser.add_argument("--claims", nargs="*", default=[], help="claim IDs or patterns (default: all)")
    args = parser.parse_args(argv)
    print(f"cflbounds verify --scale {args.scale} {' '.join(args.claims)}; {args.rounds} rounds, alternating",
          flush=True)
    times: dict[str, list[tuple[float, float]]] = {"process": [], "none": []}
    verdicts = {}
    for round_ in range(args.rounds):
        for isolation in ("process", "none") if round_ % 2 == 0 else ("none", "process"):
            wall, claimed, verdicts[isolation] = run_verify(args.scale, isolation, args.claims)
            times[isolation].append((wall, claimed))
            print(f"  round {round_ + 1}, --isolation {isolation:>7}: {wall:7.1f} s wall, {claimed:7.1f} s in the "
                  "claims' own code", flush=True)
    median = {mode: statistics.median(wall for wall, _ in runs) for mode, runs in times.items()}
    print(f"\nmedian wall: process {median['process']:.1f} s, none {median['none']:.1f} s: "
          f"process/none {median['process'] / median['none']:.3f}")
    same = verdicts["process"] == verdicts["none"]
    print("verdicts identical in both modes" if same else "VERDICTS DIFFER between the modes")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
