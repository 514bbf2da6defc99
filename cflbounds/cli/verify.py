"""``cflbounds verify``: check claims against measurements (the main job)."""
from __future__ import annotations

import json
import sys
import textwrap
from datetime import datetime
from pathlib import Path

from .._files import absolute_directory
from .._validation import InvalidParameterError
from .._words import plural
from ._common import (MAX_EVALUATIONS, MAX_SECONDS, THREADS_HELP, add_containment_options, add_device_option,
                      add_executor_options, check_executor_options, check_seed, claim_timeout, exit_status, isolation,
                      non_negative, start_executor, table, terminal_width, thread_count)

__all__ = ["add_parser", "run"]

SMOKE_NOTE = ("smoke scale: small problems (inside each theorem's assumptions) and short searches, for a quick look; "
              "the default scale's verdicts are the reference, and docs/verdicts.md says where the two differ and why")


def _scale_help() -> str:
    """``--scale``'s help: each scale with what the whole run took when measured."""
    from ..verify.costs import claim_costs, lower_bound_claims, rough_duration

    def cost(scale: str) -> str:
        costs = claim_costs(scale)
        if not costs:
            return "not measured yet"
        return ("more than " if lower_bound_claims(scale) & set(costs) else "") + rough_duration(sum(costs.values()))

    return (f"smoke (tiny problems), default (the default) or paper (the papers' sizes); their claims took "
            f"{cost('smoke')}, {cost('default')} and {cost('paper')} (per claim: cflbounds claims --costs)")


DESCRIPTION = """\
Check claims against measurements (each claim's designed experiment, then a search of its
domain if it declares one): a verdict per claim as it finishes, then a table; the run
directory gets verdicts.json, tables/, report.pdf and report.html."""

EPILOG = """\
example:
  cflbounds verify 'IFCA.*' --scale smoke    # IFCA's claims in about a minute

Exit status: 0 done, 1 a claim violated with --strict, 2 bad usage, 3 a claim's own code
failed, 74 an output could not be written, 130 interrupted. More: docs/verify-runs.md
(progress, outputs, resuming, costs)."""


def add_parser(commands) -> None:
    from ..falsify.judge import SEARCH_PLANS
    from ..verify.context import SCALES
    from ..verify.run import CLAIM_TIMEOUTS

    verify = commands.add_parser("verify", allow_abbrev=False, help="check claims against measurements (the main job)",
                                 description=DESCRIPTION, epilog=EPILOG)
    verify.add_argument("ids", nargs="*", metavar="ID",
                        help="claim IDs or patterns such as 'MGD.*' (default: every implemented claim)")
    verify.add_argument("--scale", choices=SCALES, default="default", metavar="SCALE", help=_scale_help())
    add_device_option(verify.add_argument)
    verify.add_argument("--seed", type=int, default=0,
                        help="root seed of every trial (default 0): the same seed, scale, device and version give "
                             "the same verdicts")
    searching = verify.add_mutually_exclusive_group()
    searching.add_argument("--search-evaluations", type=non_negative(int, maximum=MAX_EVALUATIONS),
                           metavar="N",
                           help="each domain's search: N evaluations alone, whatever the machine's speed (0: none)")
    searching.add_argument("--search", type=non_negative(float, maximum=MAX_SECONDS),
                           metavar="SECONDS",
                           help="each domain's search: this many seconds alone (0: none); default: at least " + ", ".join(
                               f"{scale} {count}/{seconds:g} s" for scale, (count, seconds) in SEARCH_PLANS.items())
                           + " evaluations/seconds, whichever takes longer")
    verify.add_argument("--out", metavar="DIR", help="run directory (default: reports/<date-time>/)")
    verify.add_argument("--resume", action="store_true",
                        help="continue the run in --out DIR: keep its verdicts")
    verify.add_argument("--json", action="store_true", help="print verdicts.json on stdout instead of the table")
    verify.add_argument("--strict", action="store_true", help="exit 1 if a claim is violated")
    verify.add_argument("--raise", dest="raise_errors", action="store_true",
                        help="stop at the first claim whose own code raises, with its traceback (for a plugin's "
                             "author)")
    add_executor_options(verify.add_argument, "each claim")
    verify.add_argument("--threads", type=thread_count, default="auto", metavar="auto|N", help=THREADS_HELP)
    add_containment_options(verify.add_argument, default_timeout="/".join(
        f"{seconds:g}" for seconds in CLAIM_TIMEOUTS.values()) + " s by scale")


def verdict_table(verdicts: list[dict], width: int | None = None) -> str:
    """The table a run prints: each claim's verdict, trials, seconds and its summary's first
    clause (the whole summary is the report's), at the terminal's width."""
    from ..reports.content import headline

    return table(["claim", "verdict", "trials", "seconds", "summary"],
                 [[v["id"], v["verdict"], v["trials"], f"{v['seconds']:.1f}", headline(v)] for v in verdicts], width)


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
    from ..verify.progress import run_display
    from ..verify.record import RunRecord
    from ..verify.run import CLAIM_TIMEOUTS, expand_claim_ids, implemented_claims, verify_claims

    # everything is checked before any work starts (and before --out is created)
    check_seed(args.seed)
    if args.resume and args.out is None:
        raise InvalidParameterError("The '--resume' option needs --out DIR, the directory of the run to continue.")
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
        print(f"cflbounds verify: interrupted; {plural(len(record.verdicts), 'finished verdict')} kept in {record.path} "
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
        print(verdict_table(verdicts))
        if args.scale == "smoke":
            print("\n" + textwrap.fill(SMOKE_NOTE, terminal_width()))
        print("\n" + textwrap.fill("Each claim's whole summary, its evidence and figures are in the report.",
                                   terminal_width()))
        print(f"verdicts: {record.path}\nreport:   {report}\n          {report.with_name('report.html')}\n"
              f"tables:   {record.directory / 'tables'}")
    errors = [v for v in verdicts if v["verdict"] == "error"]
    for verdict in errors:
        print(f"cflbounds verify: error: {verdict['id']}: {verdict['summary']} (traceback: {record.path}, its details; "
              "--raise stops there instead)", file=sys.stderr)
    return exit_status([v["verdict"] for v in verdicts], strict=args.strict)
