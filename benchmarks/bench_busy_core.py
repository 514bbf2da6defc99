"""What a busy core costs the library (no CLI): torch's own thread count against cflbounds'
default, which follows the load (``cflbounds._threads.follow_load``), quiet and busy, side by side.

    python benchmarks/bench_busy_core.py                 # about 10 minutes on 2 cores
    python benchmarks/bench_busy_core.py --repeats 3 --iterations 200

Three workloads, each in a fresh process and timed inside it (imports and warm-up excluded):

* ``ifca()``: one trial of the paper-size Fig. 2(a) cell (k = 2, m = n = 100, d = 1000, 10
  restarts x the step grid, float32), ms per iteration;
* a default-scale claim through the Python API (``verify("IFCA.T2c", scale="default")``);
* ``falsify`` on a cheap claim (``falsify_claim("FC.H", max_evaluations=N)``).

Each runs with ``CFLBOUNDS_THREADS=fixed`` ("fixed": torch's own count, what the library did
before it followed the load), unset ("default": the library's default now) and, for reference,
fixed at one thread (``OMP_NUM_THREADS=1``: the most a neighbour on the other core can leave),
first on the machine as it is ("quiet") and then beside a process this script starts spinning
on one core ("busy", a pure-Python loop; stopped by its process id). The runs of one condition
alternate between the settings; each cell is the fastest of ``--repeats``. Printed: the
measures, the cores other processes used during each run (from ``/proc/stat``: quiet must read
about 0, busy about 1), default/fixed when quiet (target: at most 1.05), busy/quiet of each
setting against the quiet default (target for the default: at most 1.5), and busy one thread
against quiet one thread: what the neighbour costs work that never waits for a second thread.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.shared_box import busy_neighbour, busy_seconds  # noqa: E402

# Counts the load judgments (each reads /proc/stat once) so the quiet cost can be bounded.
COUNTING = """
import cflbounds._threads as _threads
_judgments, _read = [0], _threads._machine_busy_ticks
def _counted():
    _judgments[0] += 1
    return _read()
_threads._machine_busy_ticks = _counted
"""
WORKLOADS = {
    "ifca() ms/iteration": """
import sys, time
from cflbounds.algorithms import ifca
from cflbounds.sweeps.ifca_fig2 import STEP_SIZES
from cflbounds.synthetic import make_mixed_linear_regression
T = int(sys.argv[1])
p = make_mixed_linear_regression(2, 100, 100, 1000, sigma=0.1, scale=0.5, seed=[0], dtype="float32")
run = lambda iterations: ifca(p, iterations=iterations, step_sizes=STEP_SIZES[2], restarts=10, seed=0)
run(2)
start = time.perf_counter()
run(T)
print(1e3 * (time.perf_counter() - start) / T, _judgments[0])
""",
    "verify IFCA.T2c (default scale) s": """
import time
from cflbounds.verify import verify
start = time.perf_counter()
verdict = verify("IFCA.T2c", scale="default")
print(time.perf_counter() - start, _judgments[0])
""",
    "falsify FC.H s": """
import sys, time
from cflbounds.falsify.run import falsify_claim
start = time.perf_counter()
falsify_claim("FC.H", budget=None, max_evaluations=int(sys.argv[1]))
print(time.perf_counter() - start, _judgments[0])
""",
}
SETTINGS = ("fixed", "default", "1 thread")


def run_once(workload: str, setting: str, argument: int) -> tuple[float, float, int]:
    """(the workload's own measure, cores other processes used meanwhile, load judgments made)
    of one fresh process."""
    env = {key: value for key, value in os.environ.items() if key not in ("CFLBOUNDS_THREADS", "OMP_NUM_THREADS")}
    if setting != "default":
        env["CFLBOUNDS_THREADS"] = "fixed"
    if setting == "1 thread":
        env["OMP_NUM_THREADS"] = "1"
    before, children, started = busy_seconds(), os.times(), time.perf_counter()
    done = subprocess.run([sys.executable, "-c", COUNTING + WORKLOADS[workload], str(argument)], env=env, cwd=ROOT,
                          capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode:
        raise SystemExit(f"{workload} ({setting}) failed:\n{done.stderr}")
    after = os.times()
    own = (after.children_user + after.children_system) - (children.children_user + children.children_system)
    measure, judgments = done.stdout.split()[-2:]
    return float(measure), max(0.0, (busy_seconds() - before - own) / wall), int(judgments)


def judgment_seconds(repeats: int = 20000) -> float:
    """Seconds one ``follow_load()`` costs on this machine when it changes nothing (a quiet
    machine: one /proc/stat read and the comparison), in this process."""
    from cflbounds._threads import follow_load

    saved = os.environ.get("CFLBOUNDS_THREADS")
    os.environ["CFLBOUNDS_THREADS"] = "auto"
    try:
        with follow_load():  # the first judgment (it may wait for an interval)
            pass
        start = time.perf_counter()
        for _ in range(repeats):
            with follow_load():
                pass
        return (time.perf_counter() - start) / repeats
    finally:
        if saved is None:
            del os.environ["CFLBOUNDS_THREADS"]
        else:
            os.environ["CFLBOUNDS_THREADS"] = saved


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs per cell; the fastest is kept (default 3)")
    parser.add_argument("--iterations", type=int, default=100, help="ifca() iterations timed (default 100)")
    parser.add_argument("--evaluations", type=int, default=200, help="falsify evaluations (default 200)")
    args = parser.parse_args(argv)
    arguments = {"ifca() ms/iteration": args.iterations, "verify IFCA.T2c (default scale) s": 0,
                 "falsify FC.H s": args.evaluations}
    print(f"{os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.2f} at the start; {args.repeats} repeats",
          flush=True)
    results = {}
    for condition in ("quiet", "busy"):
        with busy_neighbour() if condition == "busy" else contextlib.nullcontext():
            for workload in WORKLOADS:
                for _ in range(args.repeats):
                    for setting in SETTINGS:
                        value, others, judgments = run_once(workload, setting, arguments[workload])
                        best = results.get((workload, setting, condition))
                        if best is None or value < best[0]:
                            results[workload, setting, condition] = (value, others, judgments)
                        print(f"  {condition:5} {setting:7} {workload:36} {value:9.2f}  (others {others:.2f} cores)",
                              flush=True)
    print()
    print(f"{'workload':36} {'quiet fixed':>12} {'quiet default':>14} {'default/fixed':>14} {'busy fixed':>11} "
          f"{'busy default':>13} {'busy/quiet fixed':>17} {'busy/quiet default':>19} {'1 thread busy/quiet':>20}")
    table = {}
    for workload in WORKLOADS:
        cell = {(s, c): results[workload, s, c][0] for s in SETTINGS for c in ("quiet", "busy")}
        table[workload] = {f"{c}_{s}": value for (s, c), value in cell.items()}
        quiet = cell["default", "quiet"]
        print(f"{workload:36} {cell['fixed', 'quiet']:12.2f} {quiet:14.2f} {quiet / cell['fixed', 'quiet']:14.3f} "
              f"{cell['fixed', 'busy']:11.2f} {cell['default', 'busy']:13.2f} {cell['fixed', 'busy'] / quiet:17.2f} "
              f"{cell['default', 'busy'] / quiet:19.2f} {cell['1 thread', 'busy'] / cell['1 thread', 'quiet']:20.2f}")
    cost = judgment_seconds()
    print(f"\none follow_load() that changes nothing: {1e6 * cost:.1f} us; the quiet default's judgments and "
          "what they cost at most:")
    for workload in WORKLOADS:
        measure, _, judgments = results[workload, "default", "quiet"]
        total = measure * (args.iterations / 1e3 if workload.startswith("ifca") else 1.0)  # ms/iteration -> s
        print(f"  {workload:36} {judgments:6d} judgments, {1e3 * judgments * cost:.2f} ms = "
              f"{100 * judgments * cost / total:.3f} % of the run")
    quiet_others = max(results[key][1] for key in results if key[2] == "quiet")
    busy_others = min(results[key][1] for key in results if key[2] == "busy")
    print(f"\nother load: quiet runs at most {quiet_others:.2f} cores, busy runs at least {busy_others:.2f}")
    print("targets: default/fixed quiet <= 1.05; busy/quiet of the default <= 1.5 (both against the quiet default)")
    print(json.dumps({"results": table, "quiet_others_max": quiet_others, "busy_others_min": busy_others}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
