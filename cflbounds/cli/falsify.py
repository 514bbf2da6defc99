"""``cflbounds falsify``: search each claim's admissible domain for its worst case."""
from __future__ import annotations

import json
import sys
from datetime import datetime
from pathlib import Path

from .._files import absolute_directory, writable_directory
from .._validation import InvalidParameterError
from .._words import plural
from ._common import (EXIT_ERROR, MAX_EVALUATIONS, MAX_SECONDS, THREADS_HELP, add_containment_options,
                      add_device_option, add_executor_options, check_executor_options, check_seed, claim_timeout,
                      exit_status, isolation, non_negative, start_executor, table, thread_count)

__all__ = ["add_parser", "run"]

DESCRIPTION = """\
Search each claim's admissible domain for the point where measured/allowed is largest, then
confirm it on fresh seeds: 'violated' only then, else 'no counterexample found' with what the
search rules out. Writes falsify.json, counterexamples/, report.pdf and report.html. Which
claims declare a domain (and why the others do not): cflbounds claims."""

EPILOG = """\
examples:
  cflbounds falsify FC.T1 --budget 60      # one claim, a minute of search
  cflbounds falsify --replay DIR/counterexamples/FC.T1.json

Exit status: 0 done, 1 a claim violated with --strict or a replay that does not reproduce, 2
bad usage, 3 a claim's own code failed, 74 an output could not be written, 130 interrupted.
More: docs/falsify.md (the search, the outputs, each claim's domain)."""


def add_parser(commands) -> None:
    from ..falsify import DEFAULT_BUDGET
    from ..falsify.run import EVALUATIONS_TIMEOUT, MINIMUM_TIMEOUT, TIMEOUT_FACTOR

    parser = commands.add_parser("falsify", allow_abbrev=False,
                                 help="search each claim's admissible domain for its worst case (a counterexample)",
                                 description=DESCRIPTION, epilog=EPILOG)
    parser.add_argument("ids", nargs="*", metavar="ID",
                        help="claim IDs or patterns such as 'FC.*' (default: every claim that declares a domain)")
    spend = parser.add_mutually_exclusive_group()
    spend.add_argument("--budget", type=non_negative(float, positive=True, maximum=MAX_SECONDS),
                       metavar="SECONDS",
                       help=f"seconds of search per claim, before shrinking and confirming (default: "
                            f"{DEFAULT_BUDGET:g})")
    spend.add_argument("--evaluations", type=non_negative(int, positive=True, maximum=MAX_EVALUATIONS),
                       metavar="N",
                       help="evaluations per claim instead: reproducible exactly on any machine")
    parser.add_argument("--seed", type=int, default=0,
                        help="search seed (default 0; same seed, same search path)")
    parser.add_argument("--confidence", type=float, default=0.95, metavar="C",
                        help="confirmation's confidence in (0, 1) (default 0.95)")
    parser.add_argument("--out", metavar="DIR", help="run directory (default: reports/falsify-<date-time>/)")
    again = parser.add_mutually_exclusive_group()
    again.add_argument("--resume", action="store_true",
                       help="continue the run in --out DIR: keep its results")
    again.add_argument("--overwrite", action="store_true",
                       help="replace an earlier run's outputs in --out DIR")
    parser.add_argument("--json", action="store_true", help="print falsify.json on stdout instead of the table")
    parser.add_argument("--replay", metavar="FILE",
                        help="evaluate a counterexample file at its point and seed; exit 1 if its ratio does not "
                             "reproduce")
    parser.add_argument("--emit-test", metavar="FILE",
                        help="write a pytest file that fails while the counterexample stands (one claim, or "
                             "--replay)")
    parser.add_argument("--strict", action="store_true", help="exit 1 if a claim is violated")
    parser.add_argument("--raise", dest="raise_first", action="store_true",
                        help="re-raise the first exception of a claim's own code, with its traceback (for a "
                             "plugin's author)")
    add_device_option(parser.add_argument, default=None, replay=True)
    add_executor_options(parser.add_argument, "each claim's search")
    parser.add_argument("--threads", type=thread_count, default="auto", metavar="auto|N", help=THREADS_HELP)
    add_containment_options(parser.add_argument, default_timeout=f"{TIMEOUT_FACTOR:g} x --budget, >= "
                            f"{MINIMUM_TIMEOUT:g} s; {EVALUATIONS_TIMEOUT:g} s with --evaluations")


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
    from ..verify.domain import format_against, format_point
    from ..verify.failure import CONTAINED, mark_raised

    if args.ids or args.budget or args.evaluations or args.out or args.executor != "local" or args.address \
            or args.resume or args.overwrite:
        raise InvalidParameterError("The '--replay' option replays one file, here: it takes no claim IDs, --budget, "
                                    "--evaluations, --out, --resume, --overwrite, --executor or --address.")
    record = read_counterexample(args.replay)
    try:
        domain = replay_domain(record)  # the claim, its domain and the point checked: a bad file is exit 2
        device = str(resolve_device(args.device or record.get("device", "cpu")))  # the option's, else the file's
    except InvalidParameterError as error:  # the file's claim, point or device: the file is named
        raise InvalidParameterError(f"{args.replay}: {error}") from None
    target = _check_emit_target(args.emit_test) if args.emit_test else None
    try:
        instance = replay_counterexample(record, device=device)
    except CONTAINED as error:  # the claim's own code: one line and exit 3, as a search's outcome 'error'
        if args.raise_first:
            mark_raised(error, record["id"])
            raise
        print(f"cflbounds falsify: error: {record['id']}: the replay's {claim_failure(error, domain).summary}",
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
        measured, bound = format_against(instance.measured, instance.bound)
        print(f"{record['id']} at {format_point(record['parameters'], domain.parameters)} (seed {record['seed']}): "
              f"measured {measured}, bound {bound}, ratio {instance.ratio:.6g}; recorded ratio {record['ratio']}: "
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


def results_table(results: list[dict], width: int | None = None) -> str:
    """The table a run prints: each claim's outcome, seconds and summary (which has the
    confirmed ratio and the point), at the terminal's width."""
    return table(["claim", "outcome", "seconds", "summary"],
                 [[r["id"], r["outcome"], f"{r['seconds']:.0f}", r["summary"]] for r in results], width)


def run(args) -> int:
    from .._torch import resolve_device
    from ..falsify import DEFAULT_BUDGET, emit_test
    from ..falsify.outputs import FalsifyRecord
    from ..verify.progress import fit_line

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
    device = str(resolve_device(args.device or "auto"))
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
    try:
        for result in _searches(todo, settings, args, spend):
            record.add(result)
            print(fit_line(f"falsify {result['id']}: {result['summary']}"), file=sys.stderr, flush=True)
    except KeyboardInterrupt:
        done = len(record.results)
        print(f"cflbounds falsify: interrupted; {plural(done, 'finished result')} kept in {record.path} "
              f"(continue with the same options and --resume --out {record.directory})",
              file=sys.stderr)
        return 130
    record.arrange(ids)  # the order asked (Ray finishes in any order), after claims kept from a resumed run
    report = record.write_report()
    results = [result for result in record.results if result["id"] in ids]
    if target and results[0]["counterexample"] is not None:
        from ..falsify import read_counterexample
        emit_test(target, read_counterexample(results[0]["counterexample_file"]))
    if args.json:
        print(json.dumps(record.as_dict(), indent=2, allow_nan=False))
    else:
        print(results_table(results))
        print(f"\nresults: {record.path}\nreport:  {report}\n         {report.with_name('report.html')}")
        if target:
            print(f"test:    {target}" if results[0]["counterexample"] is not None else
                  f"test:    none written ({target}): no counterexample was found")
    return exit_status([result["outcome"] for result in results], strict=args.strict)
