"""``cflbounds sweep NAME``: a named experiment grid run into a resumable store."""
from __future__ import annotations

import functools
import math
import sys
from pathlib import Path

from .._validation import InvalidParameterError
from ._common import (Once, add_device_option, add_executor_options, check_executor_options, check_seed, csv,
                      threads_help,
                      start_executor, thread_count)

__all__ = ["add_parser", "run"]

DESCRIPTION = """\
Run IFCA's success-probability experiment (Sec. 6.1, Fig. 2) over a grid of cells, one
Parquet file per finished cell under --out. A cell is k clusters of m machines with n points
in R^d each, noise sigma, centers at separation r; a trial succeeds when one of its runs ends
within 0.6 sigma of the truth. By default every panel (a, b: sigma x r; c, d: m x n; k = 2 in
a, c and 4 in b, d) runs in both variants (official: the authors' code; paper-text): about
134,000 runs, whose size, time and memory are printed before the sweep starts."""

EPILOG = """\
example:
  cflbounds sweep ifca-fig2 --panel a --trials 4  # a quick look

More: docs/sweeps.md (the protocol, resuming, Ray)."""

_STORE = "reports/sweeps/<name>/"


def add_parser(commands) -> None:
    from ..sweeps.ifca_fig2 import PANELS, PROTOCOL, VARIANTS

    sweep = commands.add_parser("sweep", allow_abbrev=False, help="run a named experiment grid into a resumable store",
                                description=DESCRIPTION, epilog=EPILOG)
    sweep.add_argument("name", choices=("ifca-fig2",), help="the experiment: ifca-fig2 (IFCA Fig. 2)")
    option = functools.partial(sweep.add_argument, action=Once)
    option("--panel", type=csv(str), default=list(PANELS), metavar="P[,P...]",
           help="panels of Fig. 2 to run, among a,b,c,d (default: all)")
    option("--variant", type=csv(str), default=list(VARIANTS), metavar="V[,V...]",
           help="protocol variants, among official,paper-text (default: both)")
    option("--k", type=csv(int), metavar="K[,K...]",
           help="only the panels with this many clusters: 2 (a, c) or 4 (b, d)")
    axes = {"m": (int, "number of machines"), "n": (int, "points per machine"),
            "d": (int, "dimension of x and of the models"),
            "r": (float, "separation scale of the centers (Fig. 2's R)"),
            "sigma": (float, "noise standard deviation")}
    for axis, (kind, meaning) in axes.items():  # a grid's axis or a panel's fixed value, replaced
        option(f"--{axis}", type=csv(kind), metavar=f"{axis.upper()}[,...]", help=f"{meaning}: these values")
    option("--trials", type=int, metavar="N", help=f"data seeds per cell (protocol: {PROTOCOL['trials']})")
    option("--restarts", type=int, metavar="N",
           help=f"random initialisations per step size (protocol: {PROTOCOL['restarts']})")
    option("--iterations", type=int, metavar="T", help=f"iterations per run (protocol: {PROTOCOL['iterations']})")
    option("--dtype", choices=("float32", "float64"), help=f"floating point type of the runs (protocol: "
                                                           f"{PROTOCOL['dtype']})")
    sweep.add_argument("--shared-inits", action="store_true",
                       help="the same initialisations for every data seed, as the authors' code")
    option("--seed", type=int, default=0, metavar="S",
           help="the sweep's seed, from which every trial's derives (default 0)")
    option("--out", type=Path, metavar="DIR", help=f"store directory (default: {_STORE})")
    sweep.add_argument("--resume", action="store_true",
                       help="continue the sweep stored in --out: skip its finished cells")
    add_executor_options(option, "each cell")
    add_device_option(option)
    option("--threads", type=thread_count, default="auto", metavar="auto|N", help=threads_help("per batch"))


def run(args) -> int:
    from .._files import absolute_directory, open_run_directory
    from .._torch import resolve_device
    from ..reports.outputs import REPORT_FILES, write_sweep_outputs
    from ..sweeps.executors import run_cells
    from ..sweeps.grid import cell_key
    from ..sweeps.ifca_fig2 import PROTOCOL, check_memory, fig2_cells, run_fig2_cell
    from ..sweeps.store import STORE_FILES, ResultStore
    from ..verify.record import now, provenance

    device = str(resolve_device(args.device))
    check_executor_options(args)
    overrides = _overrides(args)
    cells = fig2_cells(_panels(args), args.variant, overrides, seed=check_seed(args.seed), **_protocol(args))
    out = absolute_directory(args.out or Path("reports") / "sweeps" / args.name, "--out")  # once, from the start
    store = ResultStore(out)
    pending = [cell for cell in cells if not store.has(cell_key(cell))]  # which cells exist; nothing read yet
    check_memory(pending, device)
    # writable, no symbolic link among what the store holds, a killed run's temporary files removed
    open_run_directory(out, "--out", files=STORE_FILES + REPORT_FILES)
    done = store.cells()  # names an unreadable cell file before any work
    if done and not args.resume:
        raise InvalidParameterError(f"{out} already holds {len(done)} finished cells; pass --resume to continue "
                                    "that sweep or choose another --out.")
    settings = {name: cells[0][name] for name in ("sweep", "seed", *PROTOCOL)}
    store.check_settings(settings)
    start_executor(args)  # joins or starts Ray, just before the store is written
    manifest = store.read_manifest() or {}
    selection = {"panels": sorted({c["panel"] for c in cells}), "variants": args.variant, "overrides": overrides}
    selections = [s for s in manifest.get("selections", []) if s != selection] + [selection]
    runs = manifest.get("runs", [])
    runs.append(provenance(sys.argv, device=device, executor=args.executor, cells_to_compute=len(pending),
                           cells_kept=len(cells) - len(pending)))

    def record(**update) -> dict:  # the manifest says which runs made the store, and when
        runs[-1].update(update)
        return {"name": args.name, "settings": settings, "selections": selections, "runs": runs}

    store.write_manifest(record())
    print(_plan(cells, pending, device), file=sys.stderr)
    summary = run_cells(cells, run_fig2_cell, store, executor=args.executor, shared={"device": device})
    finished = record(finished=now(), seconds=round(summary["seconds"], 1))
    paths = write_sweep_outputs(store, cells, finished)
    store.write_manifest(finished)  # finished once its outputs are on disk
    print(f"{summary['computed']} cells computed, {summary['skipped']} skipped (already stored), "
          f"{summary['runs']} runs in {summary['seconds']:.1f} s")
    print(paths["summary_text"])
    print(f"\nstore: {out}\nfigures: {', '.join(str(p) for p in paths['figures'])}")
    return 0


def _panels(args) -> list[str]:
    """The selected panels, narrowed to those with ``--k`` clusters."""
    from ..sweeps.ifca_fig2 import PANELS, VARIANTS

    _check_choices("--panel", args.panel, PANELS)
    _check_choices("--variant", args.variant, VARIANTS)
    if args.k is None:
        return args.panel
    clusters = {panel: PANELS[panel][0]["k"] for panel in PANELS}
    _check_choices("--k", args.k, sorted(set(clusters.values())))
    panels = [panel for panel in args.panel if clusters[panel] in args.k]
    if not panels:
        raise InvalidParameterError(f"--k {','.join(map(str, args.k))} selects none of the panels {args.panel} "
                                    f"(their k: {', '.join(f'{p}={clusters[p]}' for p in args.panel)}).")
    return panels


def _check_choices(option, chosen, allowed) -> None:
    bad = [c for c in chosen if c not in allowed]
    if bad:
        raise InvalidParameterError(f"The '{option}' option must list values among {list(allowed)}. Got {bad[0]!r}.")




def _protocol(args) -> dict:
    """The protocol settings given (``fig2_cells`` fills in the others from ``PROTOCOL``)."""
    protocol = {}
    for name in ("trials", "restarts", "iterations"):
        value = getattr(args, name)
        if value is not None and value < 1:  # no upper limit: check_memory refuses what cannot fit
            raise InvalidParameterError(f"The '--{name}' option must be an int in the range [1, inf). Got {value}.")
        if value is not None:
            protocol[name] = value
    if args.dtype is not None:
        protocol["dtype"] = args.dtype
    if args.shared_inits:
        protocol["shared_inits"] = True
    return protocol


def _overrides(args) -> dict:
    """The axis values given, each checked: m, n, d integers >= 1, r > 0, sigma >= 0, finite."""
    overrides = {axis: getattr(args, axis) for axis in ("m", "n", "d", "r", "sigma") if getattr(args, axis)}
    for axis, values in overrides.items():
        low = {"m": 1, "n": 1, "d": 1}.get(axis, 0)
        bad = [v for v in values if not math.isfinite(v) or v < low or (axis == "r" and v <= 0)]
        if bad:
            rng = "(0, inf)" if axis == "r" else f"[{low}, inf)"
            raise InvalidParameterError(f"The '--{axis}' option must hold values in the range {rng}. Got {bad[0]}.")
    return overrides


def _plan(cells, pending, device) -> str:
    """What the sweep is about to do: its size and a rough time, before it starts."""
    from ..sweeps.ifca_fig2 import assumed_rate, cell_flops, cell_memory, cell_seconds, runs_per_trial
    from ..sweeps.resources import available_memory, format_bytes

    runs = sum(c["trials"] * runs_per_trial(c) for c in pending)
    run_iterations = sum(c["trials"] * runs_per_trial(c) * c["iterations"] for c in pending)
    seconds = sum(cell_seconds(c, device) for c in pending)
    peak = max((sum(size for size, _ in cell_memory(c, device).values()) for c in pending), default=0)
    return (f"sweep: {len(pending)} of {len(cells)} cells to compute, {runs:,} runs, {run_iterations:,} run-iterations "
            f"({sum(cell_flops(c) for c in pending):.2g} flop); about {_duration(seconds)} at an assumed "
            f"{assumed_rate(device) / 1e9:g} GFLOP/s if no run stops early (early exit shortens it); "
            f"a cell needs up to {format_bytes(peak)} of memory ({format_bytes(available_memory('cpu'))} free).")


def _duration(seconds: float) -> str:
    for unit, size in (("days", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.3g} {unit}"
    return f"{seconds:.2g} s"
