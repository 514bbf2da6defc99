"""Falsify one claim: search its domain, shrink the best violating point, confirm it on fresh
seeds, and say what was found (the JSON object ``cflbounds falsify --json`` prints per claim).

The search (:mod:`.search`) starts with a space-filling phase (:mod:`.coverage`), then climbs.
Its best admissible point is confirmed on fresh seeds (:mod:`.confirm`), always: that gives
every claim a confirmed ratio, not a single seed's noise. When the best point violates at its
seed it is shrunk (:mod:`.shrink`, keeping half its excess at that seed), and the shrunk point
is reported only if its own confirmation keeps the excess and clears the tolerance widely
(:func:`.shrink.keeps_strength`); otherwise the unshrunk point is. ``outcome`` is
``violated`` when the reported point's confirmation is. At most two points are confirmed; for
an expectation or a probability each decides "violated" by the lower end of a two-sided
interval at ``confidence`` (one-sided error ``(1 - confidence) / 2``), so a claim that holds is
called violated with probability at most ``1 - confidence`` (a deterministic bound that holds
never is).

The result's numbers (ratios are measured / allowed, an instance above 1 violates; a
deterministic bound is allowed its ``rtol``):

* ``best_ratio``: the *confirmed* ratio of the reported point (the counterexample, else the
  search's best point) on fresh seeds; the raw best's ratio when the claim's code failed
  before the confirmation (outcome ``error``); NaN when no admissible point was evaluated;
* ``confirmed``: ``{ratio, interval, trials, confidence, point, violated}``, the confirmed ratio
  and its interval (:mod:`.confirm`: the largest fresh ratio and their range for a
  deterministic bound, the mean's Student-t interval for an expectation, the pooled
  frequency's Clopper-Pearson interval for a probability), the fresh trials it rests on, and
  which point (``shrunk`` or ``search best``);
* ``raw_best``: the search's best evaluation at its one seed: ``ratio``, ``score`` (the
  quantity the search maximises, ``objective`` names it), ``evaluation`` (its number),
  ``seed``, ``trials`` (and ``exceedances``, or ``samples``): the winner of many noisy draws,
  biased upward;
* ``coverage``: what the space-filling phase rules out (:class:`.coverage.Coverage`).

The claim's own code is contained, as pytest contains a failing test: when its evaluation or
constraints raise, or return something that breaks the Domain contract
(:mod:`cflbounds.verify.contract`), the claim ends with outcome ``error`` and the result says
what raised, where in the plugin (:mod:`cflbounds.verify.failure`) and with which traceback;
the caller goes on with the other claims. ``KeyboardInterrupt`` is never contained.
"""
from __future__ import annotations

import json
import math
import time
from dataclasses import asdict

from .._read_json import JSONProblem, parse_json
from .._validation import InvalidParameterError
from ..verify.context import VerifyContext
from ..verify.contract import checked_evaluate
from ..verify.domain import format_point, format_ratio
from ..verify.failure import CONTAINED, ClaimFailure, ContractError, declaring_root, describe_failure, mark_raised
from ..verify.guards import ClaimTimeout, guarded, user_interrupted
from ..verify.registry import get_claim
from ..verify.verdict import json_safe
from ..verify.workers import WorkerFailure, run_in_worker
from .confirm import Confirmation, confirm
from .search import SearchResult, search
from .shrink import keeps_strength, shrink

__all__ = ["DEFAULT_BUDGET", "OUTCOMES", "claim_failure", "confirmed_ratio_text", "falsify_claim", "falsify_domain",
           "default_timeout", "falsify_in_worker", "falsifiable_claim", "search_trace"]

DEFAULT_BUDGET = 120.0  # seconds of search per claim; shrinking and confirming come on top
# The time limit of a claim's whole falsify run unless --claim-timeout gives one: its budget
# with room for shrinking and confirming (a few hundred evaluations of the claim), or an hour
# when the search is counted in evaluations.
TIMEOUT_FACTOR, MINIMUM_TIMEOUT, EVALUATIONS_TIMEOUT = 5.0, 600.0, 3600.0
OUTCOMES = ("violated", "no counterexample found", "error")


def falsifiable_claim(claim_id: str):
    """The claim, refusing (one line) one that declares no domain, with its reason."""
    claim = get_claim(claim_id)
    if claim.domain is None:
        why = f": {claim.no_domain}" if claim.no_domain else ""
        raise InvalidParameterError(f"Claim {claim_id} declares no domain to search{why} (`cflbounds claims` says "
                                    "which claims can be falsified).")
    return claim


OBJECTIVES = {"deterministic": "log(measured / allowed)", "expectation": "log(mean measured / bound)",
              "probability": "frequency - allowed probability"}


def search_trace(found: SearchResult, rule: str) -> dict:
    """What the report draws of a search: the best score so far after each improvement (the
    quantity the search maximises, named ``objective``: a non-decreasing step function of the
    evaluation count, run to the last evaluation), the evenly spread sample of evaluations'
    scores (None where the point was inadmissible), and how many evaluations the coverage
    phase took (the first ones)."""
    steps = list(found.improvements)
    if steps and steps[-1][0] < found.evaluations:  # the line runs to the end
        steps.append((found.evaluations, steps[-1][1]))
    sampled = found.sample.items
    return {"objective": OBJECTIVES[rule],
            "coverage_evaluations": found.coverage.points if found.coverage is not None else 0,
            "best": {"evaluation": [number for number, _ in steps], "score": [score for _, score in steps]},
            "sampled": {"evaluation": [position + 1 for position, _ in sampled],
                        "score": [score for _, score in sampled]}}


def falsify_claim(claim_id: str, *, seed: int = 0, budget: float | None = DEFAULT_BUDGET,
                  max_evaluations: int | None = None, device: str = "cpu", confidence: float = 0.95,
                  contain: bool = True, timeout: float | None = None, min_evaluations: int | None = None) -> dict:
    """Search, shrink and confirm the registered claim ``claim_id`` (module docstring); the
    result as a JSON-ready dict. With ``contain`` (the default) a failure of the claim's own code
    is the result's outcome ``error``; without it the exception propagates (``falsify --raise``).
    ``timeout``: seconds the whole of it may take, the claim's code stopped then (in this
    process: :func:`~cflbounds.verify.guards.guarded`; :func:`falsify_in_worker` runs it in a
    process of its own). ``min_evaluations``: the search goes on past its budget until it has
    made so many (:func:`~cflbounds.falsify.search.search`; verify's plans)."""
    return falsify_domain(falsifiable_claim(claim_id).domain, claim_id=claim_id, seed=seed, budget=budget,
                          max_evaluations=max_evaluations, device=device, confidence=confidence, contain=contain,
                          timeout=timeout, min_evaluations=min_evaluations)


def falsify_domain(domain, *, claim_id: str = "this claim", seed: int = 0, budget: float | None = DEFAULT_BUDGET,
                   max_evaluations: int | None = None, device: str = "cpu", confidence: float = 0.95,
                   contain: bool = True, timeout: float | None = None, min_evaluations: int | None = None) -> dict:
    """:func:`falsify_claim` on a domain that no registered claim declares (yet): a plugin
    author's domain under test, or a benchmark's planted claim; ``claim_id`` names it."""
    started, found = time.monotonic(), SearchResult()
    result = _empty_result(claim_id, seed=seed, budget=budget, max_evaluations=max_evaluations, device=device,
                           rule=domain.rule, min_evaluations=min_evaluations)
    try:
        with guarded(timeout):
            _falsify(claim_id, domain, VerifyContext(seed=seed, device=device), found, result, confidence)
    except (*CONTAINED, ClaimTimeout, KeyboardInterrupt) as error:
        if isinstance(error, KeyboardInterrupt) and user_interrupted():
            raise
        if not contain:
            mark_raised(error, claim_id)
            raise
        result.update(outcome=OUTCOMES[2], counterexample=None, confirmation=None, confirmed=None,
                      error=asdict(claim_failure(error, domain)))
    finally:  # what the search found, also when the claim's code failed part way
        _summarise_search(domain, found, result)
    result["seconds"] = time.monotonic() - started
    result["summary"] = result_summary(result, domain.parameters)
    return result


def _empty_result(claim_id: str, *, seed: int, budget: float | None, max_evaluations: int | None, device: str,
                  rule: str, min_evaluations: int | None = None) -> dict:
    """A claim's result before its search has found anything."""
    return {"id": claim_id, "outcome": OUTCOMES[1], "best_ratio": math.nan, "evaluations": 0,
            "seconds": math.nan, "seed": seed, "device": device, "rule": rule, "counterexample": None,
            "confirmation": None, "confirmed": None, "raw_best": None, "coverage": None, "error": None,
            "search": {"budget_seconds": budget, "max_evaluations": max_evaluations,
                       "min_evaluations": min_evaluations}}


def default_timeout(budget: float | None) -> float:
    """The time limit of a claim's falsify run searched for ``budget`` seconds (None: counted in
    evaluations) unless one is given (:data:`TIMEOUT_FACTOR` and its neighbours)."""
    return EVALUATIONS_TIMEOUT if budget is None else max(MINIMUM_TIMEOUT, TIMEOUT_FACTOR * budget)


def falsify_in_worker(claim_id: str, *, timeout: float | None = None, **settings) -> dict:
    """:func:`falsify_claim` in a worker process of its own (:mod:`cflbounds.verify.workers`),
    at most ``timeout`` seconds: an exit, a crash or a hang of the claim's code is its result
    (outcome ``error``, nothing found kept), never the caller's."""
    started = time.monotonic()
    try:
        reply = run_in_worker(_falsify_here, (claim_id, settings), timeout=timeout, name=f"cflbounds falsify {claim_id}")
        try:
            return parse_json(reply)  # read as data, depth and digits bounded: the claim's process wrote it
        except JSONProblem as problem:
            raise WorkerFailure("failed", f"its process returned a result that is not a falsify result ({problem})")
    except WorkerFailure as failure:
        claim = falsifiable_claim(claim_id)
        what = failure.as_claim_failure("evaluation", claim.domain.evaluate)
        result = _empty_result(claim_id, seed=settings.get("seed", 0), budget=settings.get("budget", DEFAULT_BUDGET),
                               max_evaluations=settings.get("max_evaluations"), device=settings.get("device", "cpu"),
                               rule=claim.domain.rule, min_evaluations=settings.get("min_evaluations"))
        _summarise_search(claim.domain, SearchResult(), result)  # nothing found: what was, died with the process
        result.update(outcome=OUTCOMES[2], error=asdict(what), seconds=time.monotonic() - started)
        result["summary"] = result_summary(result)
        return result


def _falsify_here(claim_id: str, settings: dict, *, send) -> bytes:
    """The worker's side of :func:`falsify_in_worker`: the result as JSON bytes."""
    return json.dumps(json_safe(falsify_claim(claim_id, **settings)), allow_nan=False).encode()


def claim_failure(error: BaseException, domain) -> ClaimFailure:
    """What the claim's own code did (:mod:`cflbounds.verify.failure`): broke the Domain
    contract (stage ``contract``) or raised (stage ``evaluation``), located in the package that
    declares ``domain``'s functions."""
    stage = "contract" if isinstance(error, ContractError) else "evaluation"
    return describe_failure(error, stage, root=declaring_root(domain.evaluate, domain.constraints))


def _falsify(claim_id: str, domain, ctx, found: SearchResult, result: dict, confidence: float) -> None:
    """Search into ``found``; confirm its best point, shrink it if it violates, and put the
    point to report (module docstring) into ``result``."""
    seed = result["seed"]
    limits = result["search"]
    search(domain, ctx, seed=seed, budget=limits["budget_seconds"], max_evaluations=limits["max_evaluations"],
           min_evaluations=limits["min_evaluations"], claim=claim_id, result=found, confidence=confidence)
    best = found.best
    if best is None:
        return
    best_check = confirm(domain, ctx, best.point, seed, confidence, claim=claim_id)
    point, instance, check, shrunk = best.point, None, best_check, False
    if best.score > 0:
        shrinking = shrink(domain, ctx, best.point, best.seed, claim=claim_id)
        instance = shrinking.start  # the best point alone at its seed, as a replay evaluates it
        result["search"]["shrink_evaluations"] = shrinking.spent
        if shrinking.point != best.point:
            shrunk_check = confirm(domain, ctx, shrinking.point, seed, confidence, claim=claim_id)
            accepted, reason = keeps_strength(domain, shrunk_check, best_check)
            result["search"]["shrunk_point_confirmed"] = shrunk_check.violated
            result["search"]["shrink"] = {"parameters": shrinking.point, "accepted": accepted, "reason": reason,
                                          "confirmed": _confirmed(shrunk_check, "shrunk")}
            if accepted:
                point, instance, check, shrunk = shrinking.point, shrinking.instance, shrunk_check, True
    result["confirmation"] = check.as_dict()
    result["confirmed"] = _confirmed(check, "shrunk" if shrunk else "search best")
    if check.violated:
        example_seed = best.seed
        if instance is None or not domain.score(instance) > 0:
            # violated on fresh seeds though not at the search's seed: the strongest fresh seed is the one to replay
            example_seed = check.strongest_seed
        if instance is None or example_seed != best.seed:
            instance = checked_evaluate(domain, [point], [example_seed], ctx, claim_id)[0]  # alone, as a replay does
        result["outcome"] = OUTCOMES[0]
        result["counterexample"] = {"parameters": point, "seed": example_seed, **instance.as_dict(), "shrunk": shrunk,
                                    "confirmed_ratio": check.ratio, "confirmed_interval": list(check.ratio_interval)}


def _confirmed(check: Confirmation, point: str) -> dict:
    return {"ratio": check.ratio, "interval": list(check.ratio_interval), "trials": check.trials,
            "confidence": check.confidence, "point": point, "violated": check.violated}


def _raw_best(domain, best) -> dict:
    instance = best.instance
    raw = {"ratio": domain.ratio(instance), "score": best.score, "objective": OBJECTIVES[domain.rule],
           "evaluation": best.index + 1, "seed": best.seed, "trials": 1}
    if instance.trials is not None:
        raw.update(trials=instance.trials, exceedances=instance.exceedances)
    elif instance.samples is not None:
        raw.update(trials=len(instance.samples))
    return raw


def _summarise_search(domain, found: SearchResult, result: dict) -> None:
    best = found.best
    result["evaluations"] = found.evaluations
    result["coverage"] = found.coverage.as_dict() if found.coverage is not None else None
    result["search"].update(restarts=found.restarts, search_seconds=found.seconds, admissible=found.admissible,
                            rejected=found.rejected, best=None, trace=search_trace(found, domain.rule))
    if best is not None:
        result["raw_best"] = _raw_best(domain, best)
        result["best_ratio"] = result["raw_best"]["ratio"]
        result["search"]["best"] = {"parameters": best.point, "seed": best.seed, **best.instance.as_dict()}
    if result.get("confirmed"):
        result["best_ratio"] = result["confirmed"]["ratio"]


def result_summary(result: dict, parameters=None) -> str:
    """A result in one short line (its ``summary``): the outcome, the confirmed measured/allowed
    with its interval, and the point in the digits that matter (:func:`format_point`, against
    the domain's ``parameters`` when given). The rest is in the result's fields, which the
    reports show as tables: the confirmation's own numbers (``confirmation``), the instance's
    seed and measured against bound (``counterexample``), the raw best (``raw_best``), what
    the search spent and what it rules out (``coverage``)."""
    if result["outcome"] == OUTCOMES[2]:
        return f"error: {_failure_line(result['error'])} (after {result['evaluations']} evaluations)"
    confirmed = result["confirmed"]
    if result["outcome"] == OUTCOMES[0]:
        point = format_point(result["counterexample"]["parameters"], parameters)
        return f"violated: measured/allowed {confirmed_ratio_text(confirmed)} at {point}"
    if confirmed is None:
        return "no counterexample found: no admissible point was evaluated"
    best = (result.get("search") or {}).get("best") or {}
    at = f" at {format_point(best['parameters'], parameters)}" if best.get("parameters") else ""
    return f"no counterexample found: best measured/allowed {confirmed_ratio_text(confirmed)}{at}"


def confirmed_ratio_text(confirmed: dict) -> str:
    """A confirmed ratio with its interval, as every summary prints it (:func:`format_ratio`):
    ``1.25 [1.1, 1.4]``, or for a deterministic bound (nothing estimated) the largest over the
    fresh instances, ``1.25 (largest of 20)``."""
    ratio, (low, high) = format_ratio(confirmed["ratio"]), (format_ratio(end) for end in confirmed["interval"])
    if confirmed["confidence"] == 1.0:
        return f"{ratio} (largest of {confirmed['trials']})"
    return f"{ratio} [{low}, {high}]"


def _failure_line(error: dict) -> str:
    """A result's ``error`` in one line (:attr:`cflbounds.verify.failure.ClaimFailure.summary`)."""
    return ClaimFailure(**error).summary
