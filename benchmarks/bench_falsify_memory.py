"""Peak resident memory of ``cflbounds falsify`` at a short and a long budget, side by side.

    python benchmarks/bench_falsify_memory.py                     # 60 s and 600 s of search: about 12 minutes
    python benchmarks/bench_falsify_memory.py --budgets 10,40     # a quick check: about 1 minute

Each budget runs ``cflbounds falsify BENCH.CHEAP --budget SECONDS`` in a fresh process (the
claim registered by this script, no package installed) and reads that process's own peak
resident set size from ``os.wait4`` (``ru_maxrss``, the kernel's high-water mark, like
``VmHWM``). Prints both peaks, the evaluations each run made and the ratio of the peaks;
exit status 1 when the long run's peak exceeds ``--target`` (default 1.2) times the short
one's (DESIGN.md: falsify's memory must not grow with its budget).

BENCH.CHEAP is as cheap a claim as a search meets (a few microseconds an evaluation, so the
search's own bookkeeping is all that can grow): ``measured = x y`` against the bound 1 on
the unit square, deterministic, never violated (no shrinking or confirmation), with two
assumption rows and a few details per instance, the size of a typical plugin's instance.
``--source DIR`` runs another source tree's cflbounds (e.g. a ``git archive`` of an older
commit) to compare versions.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

CLAIM = "BENCH.CHEAP"


def cheap_claims() -> list:
    """BENCH.CHEAP (module docstring)."""
    from cflbounds.claims import Claim, Domain, Inequality, Instance, Parameter, validate_params

    @validate_params({})
    def bound():
        return 1.0

    def instance(point: dict) -> Instance:
        rows = [Inequality("x <= 1", point["x"], 1.0, "<=", "the benchmark's assumption").as_dict(),
                Inequality("y >= 0", point["y"], 0.0, ">=", "the benchmark's assumption").as_dict()]
        return Instance(point["x"] * point["y"], 1.0, rows, details={"n": point["n"], "product": point["x"] * point["y"]})

    domain = Domain([Parameter("x", 0.0, 1.0), Parameter("y", 0.0, 1.0), Parameter("n", 1, 50, integer=True)],
                    lambda points, seeds, ctx: [instance(p) for p in points], note="the unit square, x y against 1")
    return [Claim(CLAIM, "x y <= 1 on the unit square (a benchmark's claim: never violated).", bound=bound,
                  domain=domain)]


def child(budget: str, out: str) -> int:
    """Register BENCH.CHEAP beside the installed claims and run falsify on it in this process."""
    from importlib.metadata import EntryPoint

    from cflbounds.cli import main as cflbounds
    from cflbounds.verify import registry

    class Point(EntryPoint):  # an entry point whose target is this script's claim list
        def load(self):
            return cheap_claims()

    installed = registry.entry_points
    registry.entry_points = lambda group: [*installed(group=group), Point("bench", "bench:CLAIMS", group)]
    registry.reload()
    return cflbounds(["falsify", CLAIM, "--budget", budget, "--out", out, "--threads", "1", "--seed", "0"])


def peak(budget: float, source: str | None) -> tuple[float, int]:
    """Peak RSS in MB of one falsify run at ``budget`` seconds, and its evaluations."""
    environment = dict(os.environ)
    if source:
        environment["PYTHONPATH"] = os.pathsep.join(filter(None, [source, environment.get("PYTHONPATH")]))
    with tempfile.TemporaryDirectory() as out:
        process = subprocess.Popen([sys.executable, __file__, "--child", f"{budget:g}", out], env=environment,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        stderr = process.stderr.read()
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode:
            raise SystemExit(f"falsify --budget {budget:g} failed ({process.returncode}):\n{stderr.decode()}")
        evaluations = json.loads((Path(out) / "falsify.json").read_text())["results"][0]["evaluations"]
    return usage.ru_maxrss / 1024, evaluations  # Linux reports ru_maxrss in KB


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budgets", default="60,600", help="short,long: seconds of search (default: 60,600)")
    parser.add_argument("--target", type=float, default=1.2,
                        help="largest allowed ratio of the long run's peak to the short one's (default: 1.2)")
    parser.add_argument("--source", help="a cflbounds source tree to run instead of the installed one")
    parser.add_argument("--child", nargs=2, metavar=("SECONDS", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child(*args.child)
    short, long = (float(b) for b in args.budgets.split(","))
    if args.source:
        sys.path.insert(0, args.source)
    import cflbounds

    print(f"cflbounds falsify {CLAIM} (cflbounds {cflbounds.__version__} from {Path(cflbounds.__file__).parent}); "
          f"load average {os.getloadavg()[0]:.2f} at the start", flush=True)
    results = {}
    for budget in (short, long):
        results[budget] = peak(budget, args.source)
        megabytes, evaluations = results[budget]
        print(f"  --budget {budget:>5g} s: peak RSS {megabytes:8.1f} MB, {evaluations:>9} evaluations", flush=True)
    (low, low_count), (high, high_count) = results[short], results[long]
    ratio = high / low
    growth = (high - low) * 1024 / max(high_count - low_count, 1)
    print(f"ratio of the peaks {ratio:.3f} (target <= {args.target:g}); {growth:.3f} KB more per extra evaluation")
    return 0 if ratio <= args.target else 1


if __name__ == "__main__":
    sys.exit(main())
