"""Falsify one claim: search its domain, shrink the best violating point, confirm it on fresh
seeds, and say what was found (the JSON object ``cflbounds falsify --json`` prints per claim).

The result's ``best_ratio`` is ``measured / allowed`` at the best admissible point of the
search (:meth:`cflbounds.verify.domain.Domain.ratio`: above 1 exactly when that instance
violates the claim); ``outcome`` is ``violated`` only when the shrunk point's violation is
confirmed on fresh seeds (:mod:`.confirm`), else ``no counterexample found``.

The claim's own code is contained, as pytest contains a failing test: when its evaluation or
constraints raise, or return something that breaks the Domain contract
(:mod:`cflbounds.verify.contract`), the claim ends with outcome ``error`` and the result says
what raised, where in the plugin (:mod:`cflbounds.verify.failure`) and with which traceback;
the caller goes on with the other claims. ``KeyboardInterrupt`` is never contained.
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict

from .._validation import InvalidParameterError
from ..verify.context import VerifyContext
from ..verify.contract import checked_evaluate
from ..verify.failure import CONTAINED, ClaimFailure, ContractError, declaring_root, describe_failure, mark_raised
from ..verify.registry import get_claim
from .confirm import confirm
from .search import SearchResult, search
from .shrink import shrink

__all__ = ["DEFAULT_BUDGET", "OUTCOMES", "claim_failure", "falsify_claim", "falsifiable_claim", "search_trace"]

DEFAULT_BUDGET = 120.0  # seconds of search per claim; shrinking and confirming come on top
OUTCOMES = ("violated", "no counterexample found", "error")


def falsifiable_claim(claim_id: str):
    """The claim, refusing (one line) one that declares no domain, with its reason."""
    claim = get_claim(claim_id)
    if claim.domain is None:
        why = f": {claim.no_domain}" if claim.no_domain else ""
        raise InvalidParameterError(f"Claim {claim_id} declares no domain to search{why} (`cflbounds claims` says "
                                    "which claims can be falsified).")
    return claim


def search_trace(found: SearchResult) -> dict:
    """What the report draws of a search: the best ratio after each improvement (a step
    function of the evaluation count, run to the last evaluation) and the evenly spread
    sample of evaluations' ratios (None where the point was inadmissible)."""
    steps = list(found.improvements)
    if steps and steps[-1][0] < found.evaluations:  # the line runs to the end
        steps.append((found.evaluations, steps[-1][1]))
    sampled = found.sample.items
    return {"best": {"evaluation": [number for number, _ in steps], "ratio": [ratio for _, ratio in steps]},
            "sampled": {"evaluation": [position + 1 for position, _ in sampled], "ratio": [ratio for _, ratio in sampled]}}


def falsify_claim(claim_id: str, *, seed: int = 0, budget: float | None = DEFAULT_BUDGET,
                  max_evaluations: int | None = None, device: str = "cpu", confidence: float = 0.95,
                  contain: bool = True) -> dict:
    """Search, shrink and confirm (module docstring); the result as a JSON-ready dict. With
    ``contain`` (the default) a failure of the claim's own code is the result's outcome
    ``error``; without it the exception propagates (``falsify --raise``)."""
    claim = falsifiable_claim(claim_id)
    domain = claim.domain
    started, found = time.monotonic(), SearchResult()
    result = {"id": claim_id, "outcome": OUTCOMES[1], "best_ratio": math.nan, "evaluations": 0,
              "seconds": math.nan, "seed": seed, "device": device, "rule": domain.rule, "counterexample": None,
              "confirmation": None, "error": None,
              "search": {"budget_seconds": budget, "max_evaluations": max_evaluations}}
    try:
        _falsify(claim_id, domain, VerifyContext(seed=seed, device=device), found, result, confidence)
    except CONTAINED as error:
        if not contain:
            mark_raised(error, claim_id)
            raise
        result.update(outcome=OUTCOMES[2], counterexample=None, confirmation=None,
                      error=asdict(claim_failure(error, domain)))
    finally:  # what the search found, also when the claim's code failed part way
        _summarise_search(domain, found, result)
    result["seconds"] = time.monotonic() - started
    result["summary"] = _summary(result)
    return result


def claim_failure(error: BaseException, domain) -> ClaimFailure:
    """What the claim's own code did (:mod:`cflbounds.verify.failure`): broke the Domain
    contract (stage ``contract``) or raised (stage ``evaluation``), located in the package that
    declares ``domain``'s functions."""
    stage = "contract" if isinstance(error, ContractError) else "evaluation"
    return describe_failure(error, stage, root=declaring_root(domain.evaluate, domain.constraints))


def _falsify(claim_id: str, domain, ctx, found: SearchResult, result: dict, confidence: float) -> None:
    """Search into ``found``; shrink and confirm its best violating point into ``result``."""
    seed = result["seed"]
    search(domain, ctx, seed=seed, budget=result["search"]["budget_seconds"],
           max_evaluations=result["search"]["max_evaluations"], claim=claim_id, result=found, confidence=confidence)
    best = found.best
    if best is None or best.score <= 0:
        return
    point, instance, spent = shrink(domain, ctx, best.point, best.seed, claim=claim_id)
    result["search"]["shrink_evaluations"] = spent
    confirmation = confirm(domain, ctx, point, seed, confidence, claim=claim_id)
    if not confirmation.violated and point != best.point:
        # shrinking a noisy claim can walk to a point that violated at its seed only by luck:
        # then the unshrunk best is confirmed instead (measured on MGD.L1 with a planted c1 = 1)
        result["search"]["shrunk_point_confirmed"] = False
        fallback = confirm(domain, ctx, best.point, seed, confidence, claim=claim_id)
        if fallback.violated:
            point, confirmation = best.point, fallback
            instance = checked_evaluate(domain, [point], [best.seed], ctx, claim_id)[0]  # alone, as a replay does
    result["confirmation"] = confirmation.as_dict()
    if confirmation.violated:
        result["outcome"] = OUTCOMES[0]
        result["counterexample"] = {"parameters": point, "seed": best.seed, **instance.as_dict()}


def _summarise_search(domain, found: SearchResult, result: dict) -> None:
    best = found.best
    result["evaluations"] = found.evaluations
    result["coverage"] = found.coverage.as_dict() if found.coverage is not None else None
    result["search"].update(restarts=found.restarts, search_seconds=found.seconds, admissible=found.admissible,
                            rejected=found.rejected, best=None, trace=search_trace(found))
    if best is not None:
        result["best_ratio"] = domain.ratio(best.instance)
        result["search"]["best"] = {"parameters": best.point, "seed": best.seed, **best.instance.as_dict()}


def _summary(result: dict) -> str:
    spent = f"{result['evaluations']} evaluations, {result['seconds']:.0f} s"
    if result["outcome"] == OUTCOMES[2]:
        error = result["error"]
        return f"error: {_failure_line(error)} (after {spent})"
    if result["outcome"] == OUTCOMES[0]:
        example, confirmation = result["counterexample"], result["confirmation"]
        left_out = (f", {confirmation['inadmissible']} of them inadmissible and left out"
                    if confirmation["inadmissible"] else "")
        return (f"violated: at {example['parameters']} measured {example['measured']:.4g} > bound "
                f"{example['bound']:.4g} (ratio {example['ratio']:.4g}); confirmed on {len(confirmation['seeds'])} fresh "
                f"seeds{left_out}: {confirmation['summary']} ({spent})")
    tail = (f"; the best point did not confirm on fresh seeds: {result['confirmation']['summary']}"
            if result["confirmation"] else "")
    return f"no counterexample found: best measured/allowed {result['best_ratio']:.4g} ({spent}){tail}"


def _failure_line(error: dict) -> str:
    """A result's ``error`` in one line (:attr:`cflbounds.verify.failure.ClaimFailure.summary`)."""
    return ClaimFailure(**error).summary
