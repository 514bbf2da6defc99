"""``cflbounds falsify``: search each claim's admissible domain for its worst case."""
from __future__ import annotations

import argparse
import json
import sys
import textwrap
from datetime import datetime
from pathlib import Path

from .._files import absolute_directory, writable_directory
from .._validation import InvalidParameterError
from ._common import (EXIT_ERROR, MAX_EVALUATIONS, MAX_SECONDS, THREADS_HELP, add_containment_options,
                      add_executor_options, check_executor_options, check_seed, claim_timeout, exit_status, isolation,
                      non_negative, start_executor, table, thread_count)

__all__ = ["add_parser", "run"]

DESCRIPTION = (
    "Search each claim's admissible domain (the problems, algorithm settings and constants its statement quantifies "
    "over, its assumptions as constraints) for the point where the measured quantity most exceeds the bound: first "
    "independent uniform points of the search's unit cube (the first fifth of --evaluations, or of --budget's "
    "seconds), then CMA-ES (pycma) with restarts of growing population on transformed coordinates (log scale for "
    "scales, integers rounded), inadmissible points penalised and never counted. The best point is confirmed on "
    "fresh seeds the search never used, with the claim's decision rule: 'violated' only then, else 'no counterexample "
    "found', which states what the uniform points rule out (coverage: no violating region over X of the admissible "
    "volume, at 95 %, X about 3/N for N admissible points). A violating best point is shrunk toward a simpler one "
    "(fewer clients, clusters, dimensions, rounder numbers) keeping half its excess, and the shrunk point is reported "
    "only if its own confirmation clears the tolerance 100 times over and keeps half the unshrunk point's confirmed "
    "excess (log-ratio); otherwise the unshrunk point is. Per claim, falsify.json holds: best_ratio, the confirmed "
    "measured/allowed (above 1: violated) of the reported point on fresh seeds (the raw best's if the claim's code "
    "failed before its confirmation; NaN without an admissible point); confirmed {ratio, interval, trials, "
    "confidence, point}; raw_best {ratio, "
    "score, objective, trials, exceedances}, the search's best single evaluation (the winner of many noisy draws, "
    "biased upward); coverage {points, admissible, violating, volume_bound, confidence, statement}. "
    "Writes DIR/falsify.json (after each claim), DIR/counterexamples/<ID>.json, DIR/report.pdf and DIR/report.html "
    "(cflbounds report DIR rebuilds both); a DIR that holds "
    "them already is refused unless --resume or --overwrite. The same seed gives the same search path; with --budget "
    "it stops after that many seconds, so how far it gets depends on the machine, with --evaluations the whole run is "
    "reproducible. A claim whose own code (its domain's evaluation or constraints) raises, or returns what breaks the "
    "Domain contract (one Instance per point; measured, bound, counts and samples well-formed: docs/own-theorem.md), "
    "ends with outcome 'error', naming the exception and the plugin's file:line; the other claims are searched and "
    "every output is written. With no claim named, every claim that declares a domain is searched for --budget "
    "seconds each (a warning on stderr says how many and how long before the search starts). Exit status: 0 done; 1 "
    "a claim is violated and --strict is given, a --replay that does not reproduce, or a crash (an uncaught "
    "exception, with its traceback; also one re-raised by --raise); 2 bad usage (one line, before any work); 3 a "
    "claim ended in 'error' (before 1); 74 an output could not be written (a full disk: one line naming the file; "
    "--resume continues).")



def _epilog() -> str:
    from ..verify.registry import claims

    rows = [[claim.id, "yes: " + (claim.domain.note or "its domain") if claim.domain else
             "no: " + (claim.no_domain or "declares no domain")] for claim in claims().values()]
    return (textwrap.fill("Which claims can be falsified (a claim takes part by declaring a domain: "
                          "docs/own-theorem.md):", 100) + "\n\n" + table(["claim", "falsify"], rows)).replace("%", "%%")


def add_parser(commands) -> None:
    from ..falsify import DEFAULT_BUDGET
    from ..falsify.run import EVALUATIONS_TIMEOUT, MINIMUM_TIMEOUT, TIMEOUT_FACTOR

    parser = commands.add_parser("falsify", allow_abbrev=False,
                                 help="search each claim's admissible domain for its worst case (a counterexample)",
                                 description=textwrap.fill(DESCRIPTION, 100), epilog=_epilog(),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("ids", nargs="*", metavar="ID",
                        help="claim IDs or patterns such as 'FC.*' (patterns match the claims that declare a domain; "
                             "default: every such claim; not with --replay)")
    spend = parser.add_mutually_exclusive_group()
    spend.add_argument("--budget", type=non_negative(float, positive=True, maximum=MAX_SECONDS), metavar="SECONDS",
                       help=f"seconds of search per claim; shrinking and confirming come on top "
                            f"(default: {DEFAULT_BUDGET:g})")
    spend.add_argument("--evaluations", type=non_negative(int, positive=True, maximum=MAX_EVALUATIONS), metavar="N",
                       help="search evaluations per claim instead of a time budget: the run is then reproducible "
                            "exactly on any machine")
    parser.add_argument("--seed", type=int, default=0,
                        help="search seed, an int in [0, 2^63 - 1]: the search's evaluation seeds and the fresh "
                             "confirmation seeds are spawned from it (apart), so the same seed gives the same search "
                             "path (default: 0)")
    parser.add_argument("--confidence", type=float, default=0.95,
                        help="confidence of the confirmation on fresh seeds, in (0, 1) (default: 0.95)")
    parser.add_argument("--out", metavar="DIR",
                        help="run directory for falsify.json, counterexamples/, report.pdf and report.html (default: "
                             "reports/falsify-<date-time>/); checked to be a writable directory before any work, with "
                             "no symbolic link where the run writes (nothing is written outside it)")
    parser.add_argument("--json", action="store_true",
                        help="print falsify.json's content (metadata and one result per claim) on stdout, not the "
                             "table")
    parser.add_argument("--replay", metavar="FILE",
                        help="evaluate the counterexample in FILE (written by an earlier falsify run in "
                             "DIR/counterexamples/) at its point and seed, and say whether its ratio reproduces "
                             "(exit 1 if it does not); no search")
    parser.add_argument("--emit-test", metavar="FILE",
                        help="write a pytest regression test to FILE that fails while the counterexample stands "
                             "(one claim, or with --replay); nothing is written if no counterexample is found")
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="cpu",
                        help="where the claims' torch runs go: auto = CUDA when present, else CPU (default: cpu, "
                             "where a replay reproduces a ratio exactly)")
    add_executor_options(parser.add_argument, "every claim's search one task, all at once (a search itself is "
                                              "sequential); with --evaluations the results are the local run's, "
                                              "with --budget each search gets its seconds wherever it runs")
    again = parser.add_mutually_exclusive_group()
    again.add_argument("--resume", action="store_true",
                       help="continue the falsify run in --out DIR: claims with a result there are kept and not "
                            "searched again (those that ended in 'error' are, after a fix to the plugin); refused "
                            "unless the run was made with the same seed, --budget or --evaluations, --confidence, "
                            "device and cflbounds version. Without a run in DIR, a new run starts")
    again.add_argument("--overwrite", action="store_true",
                       help="replace the outputs of an earlier run in --out DIR: its falsify.json, counterexamples/ "
                            "and report are removed before the search starts (other files are left alone). Without "
                            "--resume or --overwrite, a DIR holding any of them is refused")
    parser.add_argument("--strict", action="store_true", help="exit 1 if a claim is violated")
    parser.add_argument("--raise", dest="raise_first", action="store_true",
                        help="stop at the first claim whose own code raises or breaks the Domain contract and re-raise "
                             "that exception with its full traceback (for a plugin's author, or a debugger's "
                             "post-mortem), instead of recording outcome 'error' and going on with the other claims")
    parser.add_argument("--threads", type=thread_count, default="auto", metavar="auto|N", help=THREADS_HELP)
    add_containment_options(parser.add_argument, default_timeout=f"{TIMEOUT_FACTOR:g} times --budget, at least "
                            f"{MINIMUM_TIMEOUT:g}; {EVALUATIONS_TIMEOUT:g} with --evaluations")


def _check_emit_target(path: str) -> Path:
    target = Path(path)
    if target.suffix != ".py" or target.is_dir():
        raise InvalidParameterError(f"The '--emit-test' option must name a .py file. Got {path!r} instead.")
    writable_directory(target.parent if str(target.parent) else Path("."), "--emit-test")
    return target


def _replay(args) -> int:
    from .._torch import resolve_device
    from ..falsify import emit_test, read_counterexample, replay_counterexample
    from ..falsify.records import replay_domain
    from ..falsify.run import claim_failure
    from ..verify.failure import CONTAINED, mark_raised

    if args.ids or args.budget or args.evaluations or args.out or args.executor != "local" or args.address \
            or args.resume or args.overwrite:
        raise InvalidParameterError("The '--replay' option replays one file, here: it takes no claim IDs, --budget, "
                                    "--evaluations, --out, --resume, --overwrite, --executor or --address.")
    record = read_counterexample(args.replay)
    try:
        domain = replay_domain(record)  # the claim, its domain and the point checked: a bad file is exit 2
    except InvalidParameterError as error:  # the file's claim or point: the file is named
        raise InvalidParameterError(f"{args.replay}: {error}") from None
    target = _check_emit_target(args.emit_test) if args.emit_test else None
    try:
        instance = replay_counterexample(record, device=str(resolve_device(args.device)))
    except CONTAINED as error:  # the claim's own code: one line and exit 3, as a search's outcome 'error'
        if args.raise_first:
            mark_raised(error, record["id"])
            raise
        print(f"cflbounds: error: {record['id']}: the replay's {claim_failure(error, domain).summary}",
              file=sys.stderr)
        return EXIT_ERROR
    reproduced = instance.ratio == record["ratio"]
    if target:
        emit_test(target, record)
    outcome = {"id": record["id"], "parameters": record["parameters"], "seed": record["seed"],
               "recorded_ratio": record["ratio"], "reproduced": reproduced, **instance.as_dict(),
               "emitted_test": str(target) if target else None}
    if args.json:
        from ..verify.verdict import json_safe
        print(json.dumps(json_safe(outcome), indent=2, allow_nan=False))
    else:
        print(f"{record['id']} at {record['parameters']} (seed {record['seed']}): measured {instance.measured:.6g}, "
              f"bound {instance.bound:.6g}, ratio {instance.ratio:.6g}; recorded ratio {record['ratio']}: "
              + ("reproduced exactly" if reproduced else "NOT reproduced")
              + ("" if instance.admissible else "; the instance breaks an assumption now"))
        if target:
            print(f"test: {target}")
    return 0 if reproduced else 1


def _everything_warning(count: int, budget: float | None, evaluations: int | None) -> str:
    """The one line printed before a plain ``cflbounds falsify`` (no claim named) searches every
    claim that declares a domain: how many, what that costs, and how to spend less."""
    from ..verify.costs import rough_duration

    each = f"{evaluations} evaluations each" if evaluations else \
        f"{budget:g} s each, {rough_duration(count * budget)} of search in all"
    return (f"cflbounds falsify: warning: no claim named, so all {count} claims that declare a domain are searched "
            f"({each}, plus shrinking and confirming); name the claims (e.g. 'FC.*') or give a smaller --budget or "
            f"--evaluations to spend less")


def _claim_ids(args) -> list[str]:
    from ..falsify import falsifiable_claim
    from ..verify.registry import claims
    from ..verify.run import expand_claim_ids

    among = [claim.id for claim in claims().values() if claim.domain is not None]
    ids = expand_claim_ids(args.ids, among=among, kind="falsifiable") if args.ids else among
    for claim_id in ids:
        falsifiable_claim(claim_id)  # a named claim without a domain: refused with its reason
    if not ids:
        raise InvalidParameterError("No registered claim declares a domain to search.")
    return ids


def _searches(ids: list[str], settings: dict, args, spend: str):
    """Each claim's falsify result: one after the other here, or every claim a Ray task at once
    (yielded as they finish). A claim's own failure is its result (outcome ``error``) on either
    executor; with ``--raise`` it propagates instead."""
    from ..falsify import falsify_claim
    from ..falsify.run import default_timeout, falsify_in_worker

    settings = {**settings, "contain": not args.raise_first}
    limit = claim_timeout(args, default_timeout(settings["budget"]))
    if args.executor == "ray":
        from ..sweeps.ray_cluster import as_finished, connect, submitter

        ray = connect()
        submit = submitter(ray, falsify_claim, settings["device"])
        print(f"falsify {', '.join(ids)}: {spend} each, as Ray tasks ...", file=sys.stderr, flush=True)
        yield from (result for _, result in as_finished(ray, {submit(i, **settings, timeout=limit): i for i in ids}))
        return
    here = isolation(args.isolation, args.raise_first) == "none"
    for claim_id in ids:
        print(f"falsify {claim_id}: {spend} ...", file=sys.stderr, flush=True)
        yield (falsify_claim if here else falsify_in_worker)(claim_id, **settings, timeout=limit)
        if args.thread_governor is not None:
            args.thread_governor.adjust()


def run(args) -> int:
    from .._torch import resolve_device
    from ..falsify import DEFAULT_BUDGET, emit_test
    from ..falsify.outputs import FalsifyRecord
    from ..verify.domain import format_ratio

    check_seed(args.seed)
    if not 0 < args.confidence < 1:
        raise InvalidParameterError(f"The '--confidence' option must be in (0, 1). Got {args.confidence} instead.")
    if args.replay:
        return _replay(args)
    if (args.resume or args.overwrite) and args.out is None:
        raise InvalidParameterError(f"The '--{'resume' if args.resume else 'overwrite'}' option needs --out DIR (the "
                                    "run directory to continue or replace).")
    ids = _claim_ids(args)
    if args.emit_test and len(ids) != 1:
        raise InvalidParameterError(f"The '--emit-test' option needs exactly one claim (or --replay FILE); "
                                    f"got {len(ids)}: {', '.join(ids)}.")
    target = _check_emit_target(args.emit_test) if args.emit_test else None
    device = str(resolve_device(args.device))
    budget = None if args.evaluations else (args.budget or DEFAULT_BUDGET)
    check_executor_options(args)
    isolation(args.isolation, args.raise_first)  # refused before any work
    # absolute once: a claim that changes the working directory cannot split the run
    out = absolute_directory(Path("reports") / datetime.now().strftime("falsify-%Y%m%d-%H%M%S") if args.out is None
                             else args.out, "--out")
    record = FalsifyRecord.open(out, {"command": args.argv, "seed": args.seed, "budget_seconds": budget,
                                      "max_evaluations": args.evaluations, "confidence": args.confidence,
                                      "device": device}, resume=args.resume, overwrite=args.overwrite)
    todo = [claim_id for claim_id in ids if not record.done(claim_id)]
    if len(todo) < len(ids):
        kept = [claim_id for claim_id in ids if claim_id not in todo]
        print(f"falsify {', '.join(kept)}: kept from {record.path} (resumed)", file=sys.stderr, flush=True)
    if not args.ids and todo:
        print(_everything_warning(len(todo), budget, args.evaluations), file=sys.stderr, flush=True)
    start_executor(args)
    spend = f"{args.evaluations} evaluations" if args.evaluations else f"{budget:g} s of search"
    settings = dict(seed=args.seed, budget=budget, max_evaluations=args.evaluations, device=device,
                    confidence=args.confidence)
    for result in _searches(todo, settings, args, spend):
        record.add(result)
        print(f"falsify {result['id']}: {result['summary']}", file=sys.stderr, flush=True)
    record.arrange(ids)  # the order asked (Ray finishes in any order), after claims kept from a resumed run
    report = record.write_report()
    results = [result for result in record.results if result["id"] in ids]
    if target and results[0]["counterexample"] is not None:
        from ..falsify import read_counterexample
        emit_test(target, read_counterexample(results[0]["counterexample_file"]))
    if args.json:
        print(json.dumps(record.as_dict(), indent=2, allow_nan=False))
    else:
        print(table(["claim", "outcome", "best ratio", "evaluations", "seconds", "summary"],
                    [[r["id"], r["outcome"], format_ratio(r["best_ratio"]), r["evaluations"], f"{r['seconds']:.0f}",
                      r["summary"]] for r in results], width=160))
        print(f"\nresults: {record.path}\nreport:  {report}\n         {report.with_name('report.html')}")
        if target:
            print(f"test:    {target}" if results[0]["counterexample"] is not None else
                  f"test:    none written ({target}): no counterexample was found")
    return exit_status([result["outcome"] for result in results], strict=args.strict)
