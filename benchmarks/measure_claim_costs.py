"""Measure what each claim of ``cflbounds verify`` costs at one scale, into claim_costs.json.

    python benchmarks/measure_claim_costs.py --scale smoke       # about a minute
    python benchmarks/measure_claim_costs.py --scale default     # minutes: run it on a quiet machine
    python benchmarks/measure_claim_costs.py --scale paper --timeout 300   # each claim alone, at most 5 min
    python benchmarks/measure_claim_costs.py --markdown          # docs/verify-runs.md's table, from the file
    python benchmarks/measure_claim_costs.py --families          # docs/performance.md's first table
    python benchmarks/measure_claim_costs.py --from-run reports/2026-11-28T05-00-00   # a whole verify run's costs
    python benchmarks/measure_claim_costs.py --scale smoke --claims 'CFL.*' --add   # new claims, the rest kept

Every implemented claim (or those given with ``--claims``) runs at ``--scale`` in registry
order in one context, as ``cflbounds verify`` runs them (claims that share an experiment
with an earlier claim then cost less than alone; each with the search of its domain that
``verify`` runs at the scale, :func:`cflbounds.falsify.default_plan`), and its verdict's seconds are recorded in
``cflbounds/verify/claim_costs.json`` under the scale, replacing that scale's entry only,
with the date, the machine, the CPU and torch thread counts and the load average before and
after. ``verify --help``, its ETA and docs/verify-runs.md's table read the file, never hand-copied numbers.

With ``--timeout S`` each claim runs alone instead, in a ``cflbounds verify ID`` process of its
own stopped after S seconds (for the paper scale, where a claim can take hours): a claim that
finishes records its verdict's seconds (as alone, so without experiments shared with earlier
claims), one that is stopped records S under ``at_least``, shown as "> S" wherever the costs are.

With ``--from-run DIR`` the costs are those of a finished ``cflbounds verify`` run of every
implemented claim (its ``verdicts.json``: the seconds of each verdict, measured in sequence in
one process exactly as above, at the run's scale, threads and device), so that timing the
Quickstart's command also measures the costs it is made of.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

import torch

from cflbounds import __version__
from cflbounds.falsify import default_plan
from cflbounds.verify.context import SCALES, VerifyContext
from cflbounds.verify.costs import COSTS_FILE, claim_costs, cost_cell, lower_bound_claims, measurement_text, rough_duration
from cflbounds.verify.registry import claims as registered
from cflbounds.verify.run import expand_claim_ids, implemented_claims, verify_claims


def _in_sequence(scale: str, claims: list[str], device: str) -> tuple[dict, dict]:
    with tempfile.TemporaryDirectory() as workdir:  # sweep stores and checkpoints, as in a real run
        context = VerifyContext(scale=scale, seed=0, device=device, workdir=Path(workdir), progress=False)
        verdicts = verify_claims(claims, context, search=default_plan(scale))  # the search verify runs
    return {v.id: round(v.seconds, 2) for v in verdicts}, {}


def _alone(scale: str, claims: list[str], device: str, threads: int, timeout: float) -> tuple[dict, dict]:
    seconds, at_least = {}, {}
    for claim in claims:
        with tempfile.TemporaryDirectory() as out:
            command = [sys.executable, "-m", "cflbounds.cli", "verify", claim, "--scale", scale, "--device", device,
                       "--threads", str(threads), "--out", out]
            try:
                subprocess.run(command, check=True, timeout=timeout, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
            except subprocess.TimeoutExpired:
                at_least[claim] = float(timeout)
                print(f"{claim:<12} > {timeout:.0f} s (stopped)", flush=True)
                continue
            verdict, = json.loads((Path(out) / "verdicts.json").read_text())["verdicts"]
            seconds[claim] = round(verdict["seconds"], 2)
            print(f"{claim:<12} {seconds[claim]:8.2f} s", flush=True)
    return seconds, at_least


def from_run(directory: Path, note: str, every: bool = True) -> tuple[str, dict]:
    """The scale and the costs entry of a finished verify run of every implemented claim (of
    some claims when not ``every``: ``--add``)."""
    record = json.loads((directory / "verdicts.json").read_text())
    metadata, verdicts = record["metadata"], record["verdicts"]
    missing = sorted(set(implemented_claims()) - {v["id"] for v in verdicts}) if every else []
    if metadata.get("finished") is None or missing:
        raise SystemExit(f"{directory}: not a finished run of every implemented claim (missing: {missing})")
    measured = {"date": metadata["finished"], "cflbounds": metadata["cflbounds"], "revision": metadata.get("revision"),
                "machine": metadata["platform"], "processor": platform.processor() or platform.machine(),
                "cpus": os.cpu_count(), "threads": metadata["threads"], "device": metadata["device"],
                "note": note, "mode": f"in sequence, one process: `{' '.join(metadata['command'])}`"}
    seconds = {v["id"]: round(v["seconds"], 2) for v in verdicts if v["id"] in implemented_claims()}
    return metadata["scale"], {"measured": measured, "seconds": seconds, "at_least": []}


def measure(scale: str, claims: list[str], device: str, note: str, threads: int, timeout: float | None) -> dict:
    load_before = os.getloadavg()
    seconds, at_least = (_in_sequence(scale, claims, device) if timeout is None
                         else _alone(scale, claims, device, threads, timeout))
    measured = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "cflbounds": __version__,
                "machine": platform.platform(), "processor": platform.processor() or platform.machine(),
                "cpus": os.cpu_count(), "threads": torch.get_num_threads(), "device": device,
                "load_before": [round(v, 2) for v in load_before],
                "load_after": [round(v, 2) for v in os.getloadavg()], "note": note,
                "mode": "in sequence, one process" if timeout is None else f"each claim alone, stopped at {timeout:g} s"}
    return {"measured": measured, "seconds": {**seconds, **at_least}, "at_least": sorted(at_least)}


def added(old: dict | None, new: dict) -> dict:
    """``old`` (a scale's entry) with ``new``'s claims added or replaced, the rest kept; the
    measurement of the added claims goes to ``old["added"]`` (``measured`` stays the whole
    scale's), replacing earlier additions of no other claims."""
    if old is None:
        return new
    at_least = (set(old.get("at_least", [])) - set(new["seconds"])) | set(new["at_least"])
    kept = [record for record in old.get("added", []) if not set(record["claims"]) <= set(new["seconds"])]
    return {**old, "seconds": {**old["seconds"], **new["seconds"]}, "at_least": sorted(at_least),
            "added": [*kept, {"claims": sorted(new["seconds"]), **new["measured"]}]}


def markdown(path: Path) -> str:
    data = json.loads(path.read_text()) if path.exists() else {"scales": {}}
    scales = data["scales"]
    lines = ["| claim | " + " | ".join(f"{s} (s)" for s in SCALES) + " |", "|---|" + "---:|" * len(SCALES)]
    for claim in implemented_claims():
        cells = [cost_cell(claim, s, path) for s in SCALES]
        lines.append(f"| {claim} | " + " | ".join(cells) + " |")
    totals = [(">" if lower_bound_claims(s, path) else "") + f"{sum(scales[s]['seconds'].values()):.0f}"
              if s in scales else "-" for s in SCALES]
    lines += ["| **all** | " + " | ".join(totals) + " |", ""]
    lines += [f"- {scale}: {measurement_text(scale, path)}" for scale in SCALES]
    return "\n".join(lines)


def family_markdown(path: Path) -> str:
    """docs/performance.md's first table: the seconds of each paper's claims at each scale,
    added up from ``path``, as a time a person reads (45 s, 12 min, 3.4 h)."""
    ids = implemented_claims()
    papers = list(dict.fromkeys(registered()[claim].paper for claim in ids))
    lines = ["| claims | " + " | ".join(SCALES) + " |", "|---|" + "---:|" * len(SCALES)]

    def total(members, scale) -> str:
        costs = claim_costs(scale, path)
        if not all(claim in costs for claim in members):
            return "not measured"
        stopped = ">" if lower_bound_claims(scale, path) & set(members) else ""
        return stopped + rough_duration(sum(costs[claim] for claim in members))

    for paper in papers:
        members = [claim for claim in ids if registered()[claim].paper == paper]
        lines.append(f"| {paper} ({len(members)}) | " + " | ".join(total(members, s) for s in SCALES) + " |")
    lines.append(f"| **all {len(ids)}** | " + " | ".join(f"**{total(ids, s)}**" for s in SCALES) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", choices=SCALES, help="the scale to measure")
    parser.add_argument("--claims", nargs="*", default=[], help="claim IDs or patterns (default: every implemented)")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--note", default="", help="what else to say about the measurement (e.g. the load)")
    parser.add_argument("--timeout", type=float, help="run each claim alone, stopped after this many seconds")
    parser.add_argument("--output", type=Path, default=COSTS_FILE, help=f"default {COSTS_FILE}")
    parser.add_argument("--markdown", action="store_true", help="print the docs/verify-runs.md table of --output and exit")
    parser.add_argument("--families", action="store_true",
                        help="print docs/performance.md's table (each paper's claims added up) of --output and exit")
    parser.add_argument("--from-run", type=Path, metavar="DIR",
                        help="record the costs of a finished `cflbounds verify --out DIR` run of every claim instead")
    parser.add_argument("--add", action="store_true",
                        help="add the claims measured (or those of --from-run) to the scale's entry, keeping its other "
                             "claims; the entry's 'added' list says when, where and how they were measured")
    args = parser.parse_args(argv)
    if args.markdown or args.families:
        print(markdown(args.output) if args.markdown else family_markdown(args.output))
        return 0
    if args.from_run is not None:
        args.scale, entry = from_run(args.from_run, args.note, every=not args.add)
    elif args.scale is None:
        parser.error("--scale is required to measure")
    else:
        torch.set_num_threads(args.threads)
        claims = expand_claim_ids(args.claims) if args.claims else implemented_claims()
        entry = measure(args.scale, claims, args.device, args.note, args.threads, args.timeout)
    data = json.loads(args.output.read_text()) if args.output.exists() else {}
    measured = entry["measured"]
    if args.add:
        entry = added(data.get("scales", {}).get(args.scale), entry)
    data = {"about": "seconds per claim of `cflbounds verify`, by scale; written by benchmarks/measure_claim_costs.py",
            "scales": {**data.get("scales", {}), args.scale: entry}}
    temporary = args.output.with_name(f".{args.output.name}.tmp")
    temporary.write_text(json.dumps(data, indent=2) + "\n")
    os.replace(temporary, args.output)
    for claim, seconds in entry["seconds"].items():
        print(f"{claim:<12} {seconds:8.2f} s")
    load = measured.get("load_before")
    print(f"total {sum(entry['seconds'].values()):.1f} s" + (f"; load average {load[0]} before, "
          f"{measured['load_after'][0]} after" if load else "") + f" -> {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
