"""``cflbounds verify``: check claims against measurements (the main job)."""
from __future__ import annotations

import argparse
import json
import sys
import textwrap
from datetime import datetime
from pathlib import Path

from .._files import absolute_directory
from .._validation import InvalidParameterError
from ._common import (MAX_EVALUATIONS, MAX_SECONDS, THREADS_HELP, add_containment_options, add_executor_options,
                      check_executor_options, check_seed, claim_timeout, exit_status, isolation, non_negative,
                      start_executor, table, thread_count)

__all__ = ["add_parser", "run"]

SMOKE_NOTE = ("smoke scale: small problems (inside each theorem's assumptions) and short searches, for a quick look; "
              "the default scale's verdicts are the reference, and docs/verdicts.md says where the two differ and why")


def _scale_help() -> str:
    from ..verify.context import SCALE_DESCRIPTIONS
    from ..verify.costs import claim_costs, lower_bound_claims, rough_duration
    from ..verify.run import implemented_claims

    parts = []
    for scale, description in SCALE_DESCRIPTIONS.items():
        costs = claim_costs(scale)
        measured = [claim for claim in implemented_claims() if claim in costs]
        stopped = lower_bound_claims(scale) & set(measured)
        total = ("more than " if stopped else "") + rough_duration(sum(costs[c] for c in measured))
        cost = (f"{len(measured)} claims took {total} when measured" + (f" ({len(stopped)} stopped at a time "
                f"limit)" if stopped else "") if measured else "not measured yet")
        parts.append(f"{scale}: {description}; {cost}")
    return "; ".join(parts) + " (per claim and how it was measured: below). Default: the scale named default"


def _cost_epilog() -> str:
    from ..verify.context import SCALES
    from ..verify.costs import cost_cell, measurement_text
    from ..verify.run import implemented_claims

    rows = [[claim, *(cost_cell(claim, s) for s in SCALES)] for claim in implemented_claims()]
    about = ("Seconds per claim, measured with the claims run in this order in one process, as verify runs them (a "
             "claim run alone may take longer where it shares an experiment with an earlier one), or each claim "
             "alone where that scale says so ('>S': stopped after S seconds), from "
             "cflbounds/verify/claim_costs.json, written by benchmarks/measure_claim_costs.py:")
    lines = [textwrap.fill(about, 100)] + [textwrap.fill(f"{scale}: {measurement_text(scale)}", 100, initial_indent="  ",
                                                         subsequent_indent="    ") for scale in SCALES]
    return ("\n".join(lines) + "\n\n" + table(["claim", *(f"{s} (s)" for s in SCALES)], rows)).replace("%", "%%")


def add_parser(commands) -> None:
    from ..verify.context import SCALES
    from ..verify.run import CLAIM_TIMEOUTS

    verify = commands.add_parser(
        "verify", allow_abbrev=False, help="check claims against measurements (the main job)",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=_cost_epilog(),
        description=textwrap.fill(
            "Check claims against measurements. Progress goes to stderr: on a terminal one live line (claims done, "
            "the claim running, elapsed, ETA) with each verdict printed as its claim finishes; elsewhere one line "
            "per finished claim. Each verdict is written to DIR/verdicts.json as its claim finishes, so a stopped "
            "run keeps them (continue it with --resume).", 100))
    verify.add_argument("ids", nargs="*", metavar="ID",
                        help="claim IDs or patterns such as 'MGD.*' (default: every implemented claim)")
    verify.add_argument("--scale", choices=SCALES, default="default", help=_scale_help())
    verify.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                        help="where the torch runs go: auto = CUDA when present, else CPU (default: auto); CUDA "
                             "sums in other orders than the CPU, so its verdicts may differ in the last digits")
    add_executor_options(verify.add_argument, "every claim one task, all at once, and each sweep cell inside a "
                                              "claim (IFCA.F2's Fig. 2 sweep) a task of its own; the verdicts and "
                                              "evidence are the local run's")
    verify.add_argument("--seed", type=int, default=0,
                        help="root seed, an int in [0, 2^63 - 1]: every trial's seed is spawned from it, so the same "
                             "seed, scale, device and version give the same verdicts (default: 0)")
    from ..falsify.judge import SEARCH_PLANS

    searching = verify.add_mutually_exclusive_group()
    searching.add_argument("--search", type=non_negative(float, maximum=MAX_SECONDS), metavar="SECONDS",
                           help="after a claim's designed experiment, search its admissible domain (claims that "
                                "declare one: `cflbounds claims`) for this many seconds, as `cflbounds falsify "
                                "--budget` does; a confirmed counterexample makes the verdict 'violated' (shown "
                                "beside the designed experiment's own result; a claim the designed experiment already "
                                "found violated is not searched: `cflbounds falsify` searches it; a claim with no designed "
                                "experiment is judged by its search alone). A time budget reaches further on a "
                                "faster machine; 0: no search. Default: at least N evaluations and at least S seconds "
                                "per claim, whichever takes longer, by scale (" + ", ".join(
                                    f"{scale} {count} and {seconds:g} s" for scale, (count, seconds)
                                    in SEARCH_PLANS.items()) + ")")
    searching.add_argument("--search-evaluations", type=non_negative(int, maximum=MAX_EVALUATIONS), metavar="N",
                           help="the search as a number of evaluations per claim instead, so the verdicts depend "
                                "only on the seed, scale, device and version, not on the machine's speed (0: no "
                                "search)")
    verify.add_argument("--out", metavar="DIR",
                        help="run directory for verdicts.json, tables/, report.pdf, report.html (default: reports/<date-time>/); "
                             "checked to be a writable directory before any work, with no symbolic link where the "
                             "run writes (nothing is written outside it), and refused if it holds an earlier run "
                             "unless --resume is given")
    verify.add_argument("--resume", action="store_true",
                        help="continue the run in --out DIR: keep its verdicts (and the finished configurations of "
                             "a long claim) and check only the rest; refused if DIR was made with another scale, "
                             "seed, device or cflbounds version")
    verify.add_argument("--json", action="store_true",
                        help="print verdicts.json's content (run metadata and verdicts) on stdout, not the table")
    verify.add_argument("--strict", action="store_true",
                        help="exit 1 if a claim is violated (exit 3, for a claim whose own code failed, comes first)")
    verify.add_argument("--raise", dest="raise_errors", action="store_true",
                        help="stop at the first claim whose own code (check or bound) raises, with its traceback, "
                             "instead of giving it the verdict 'error' and checking the others (for a plugin "
                             "author; nothing of that claim is written; the claims run in this process)")
    verify.add_argument("--threads", type=thread_count, default="auto", metavar="auto|N", help=THREADS_HELP)
    add_containment_options(verify.add_argument, default_timeout=", ".join(
        f"{scale} {seconds:g}" for scale, seconds in CLAIM_TIMEOUTS.items()) + " by scale")



def _search_plan(args):
    from ..falsify.judge import SearchPlan, default_plan

    if args.search is not None:
        return SearchPlan(seconds=args.search or None)
    if args.search_evaluations is not None:
        return SearchPlan(evaluations=args.search_evaluations or None)
    return default_plan(args.scale)


def _between_claims(record, governor):
    """After each claim: its counterexample file (a search confirmed one), then the claim
    itself, then re-judge ``--threads auto`` for the next one."""
    from ..falsify.outputs import replay_command
    from ..falsify.records import write_counterexample

    def finished(verdict, tables):
        found = verdict.search.get("counterexample") if verdict.search else None
        if found is not None:
            path = write_counterexample(record.directory, verdict.search)
            verdict.search["replay"] = replay_command(path)
        record.add(verdict, tables)
        governor.adjust()

    return finished


def run(args) -> int:
    from .._torch import resolve_device
    from ..reports.outputs import write_report
    from ..verify.context import VerifyContext
    from ..verify.costs import claim_costs
    from ..verify.checkpoints import check_checkpoints
    from ..verify.progress import run_display
    from ..verify.record import RunRecord
    from ..verify.run import CLAIM_TIMEOUTS, expand_claim_ids, implemented_claims, verify_claims

    # everything is checked before any work starts (and before --out is created)
    check_seed(args.seed)
    if args.resume and args.out is None:
        raise InvalidParameterError("The '--resume' option needs --out DIR, the directory of the run to continue.")
    if args.resume:  # a damaged or crafted checkpoint is the run directory's fault: said now, in one line
        check_checkpoints(args.out)
    ids = expand_claim_ids(args.ids) if args.ids else implemented_claims()
    check_executor_options(args)
    where, limit = isolation(args.isolation, args.raise_errors), claim_timeout(args, CLAIM_TIMEOUTS[args.scale])
    # absolute once: a claim that changes the working directory cannot split the run
    out = absolute_directory(Path("reports") / datetime.now().strftime("%Y%m%d-%H%M%S") if args.out is None else
                             args.out, "--out")
    context = VerifyContext(scale=args.scale, seed=args.seed, device=str(resolve_device(args.device)),
                            executor=args.executor, workdir=out)
    search = _search_plan(args)
    record = RunRecord.open(context, resume=args.resume, command=args.argv, search=search.describe())
    start_executor(args)
    try:
        verify_claims(ids, context, skip=[claim for claim in ids if record.done(claim)],
                      on_verdict=_between_claims(record, args.thread_governor),
                      display=run_display(costs=claim_costs(args.scale)), raise_errors=args.raise_errors,
                      search=search, isolation=where, timeout=limit)
    except KeyboardInterrupt:
        print(f"cflbounds: interrupted; the {len(record.verdicts)} finished verdicts are kept in {record.path} "
              f"(continue with the same options and --resume --out {record.directory})", file=sys.stderr)
        return 130
    if args.executor == "ray":  # claims finished in any order; the record lists them as asked
        record.arrange(ids)
    report = record.finish(lambda finished: write_report(record.directory, finished),
                           threads_used=args.thread_governor.chosen, isolation=where, claim_timeout=limit)
    verdicts = list(record.verdicts.values())
    if args.json:
        print(json.dumps(record.as_dict(), indent=2, allow_nan=False))
    else:
        print(table(["claim", "verdict", "trials", "seconds", "summary"],
                    [[v["id"], v["verdict"], v["trials"], f"{v['seconds']:.1f}", v["summary"]] for v in verdicts],
                    width=160))
        if args.scale == "smoke":
            print(f"\n{SMOKE_NOTE}")
        print(f"\nverdicts: {record.path}\nreport:   {report}\n          {report.with_name('report.html')}\n"
              f"tables:   {record.directory / 'tables'}")
    errors = [v for v in verdicts if v["verdict"] == "error"]
    for verdict in errors:
        print(f"cflbounds: {verdict['id']}: error: {verdict['summary']} (traceback: {record.path}, its details; "
              "--raise stops there instead)", file=sys.stderr)
    return exit_status([v["verdict"] for v in verdicts], strict=args.strict)
