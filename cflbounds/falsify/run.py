"""Falsify one claim: search its domain, shrink the best violating point, confirm it on fresh
seeds, and say what was found (the JSON object ``cflbounds falsify --json`` prints per claim).

The result's ``best_ratio`` is ``measured / allowed`` at the best admissible point of the
search (:meth:`cflbounds.verify.domain.Domain.ratio`: above 1 exactly when that instance
violates the claim); ``outcome`` is ``violated`` only when the shrunk point's violation is
confirmed on fresh seeds (:mod:`.confirm`), else ``no counterexample found``.
"""
from __future__ import annotations

import math
import time

import numpy as np

from .._validation import InvalidParameterError
from ..verify.context import VerifyContext
from ..verify.registry import get_claim
from .confirm import confirm
from .search import SearchResult, search
from .shrink import shrink

__all__ = ["DEFAULT_BUDGET", "OUTCOMES", "falsify_claim", "falsifiable_claim", "search_trace"]

DEFAULT_BUDGET = 120.0  # seconds of search per claim; shrinking and confirming come on top
OUTCOMES = ("violated", "no counterexample found")
TRACE_POINTS = 400  # evaluations kept for the report's scatter of the search (evenly spread)


def falsifiable_claim(claim_id: str):
    """The claim, refusing (one line) one that declares no domain, with its reason."""
    claim = get_claim(claim_id)
    if claim.domain is None:
        why = f": {claim.no_domain}" if claim.no_domain else ""
        raise InvalidParameterError(f"Claim {claim_id} declares no domain to search{why} (`cflbounds claims` says "
                                    "which claims can be falsified).")
    return claim


def search_trace(domain, found: SearchResult) -> dict:
    """What the report draws of a search: the best ratio after each improvement (a step
    function of the evaluation count) and up to :data:`TRACE_POINTS` evaluations' ratios
    (None where the point was inadmissible)."""
    improved, best = {"evaluation": [], "ratio": []}, -math.inf
    for evaluation in found.evaluations:
        if evaluation.score is not None and evaluation.score > best:
            best = evaluation.score
            improved["evaluation"].append(evaluation.index + 1)
            improved["ratio"].append(domain.ratio(evaluation.instance))
    if improved["evaluation"] and improved["evaluation"][-1] < len(found.evaluations):  # the line runs to the end
        improved["evaluation"].append(len(found.evaluations))
        improved["ratio"].append(improved["ratio"][-1])
    kept = np.unique(np.linspace(0, len(found.evaluations) - 1, min(TRACE_POINTS, len(found.evaluations))).astype(int))
    sampled = [found.evaluations[i] for i in kept] if found.evaluations else []
    return {"best": improved,
            "sampled": {"evaluation": [e.index + 1 for e in sampled],
                        "ratio": [None if e.score is None else domain.ratio(e.instance) for e in sampled]}}


def falsify_claim(claim_id: str, *, seed: int = 0, budget: float | None = DEFAULT_BUDGET,
                  max_evaluations: int | None = None, device: str = "cpu", confidence: float = 0.95) -> dict:
    """Search, shrink and confirm (module docstring); the result as a JSON-ready dict."""
    claim = falsifiable_claim(claim_id)
    domain = claim.domain
    ctx = VerifyContext(seed=seed, device=device)
    started = time.monotonic()
    found = search(domain, ctx, seed=seed, budget=budget, max_evaluations=max_evaluations)
    best = found.best
    result = {"id": claim_id, "outcome": OUTCOMES[1], "best_ratio": math.nan, "evaluations": len(found.evaluations),
              "seconds": math.nan, "seed": seed, "device": device, "rule": domain.rule, "counterexample": None,
              "confirmation": None,
              "search": {"budget_seconds": budget, "max_evaluations": max_evaluations, "restarts": found.restarts,
                         "search_seconds": found.seconds, "admissible": len(found.admissible),
                         "rejected": len(found.evaluations) - len(found.admissible), "best": None,
                         "trace": search_trace(domain, found)}}
    if best is not None:
        result["best_ratio"] = domain.ratio(best.instance)
        result["search"]["best"] = {"parameters": best.point, "seed": best.seed, **best.instance.as_dict()}
    if best is not None and best.score > 0:
        point, instance, spent = shrink(domain, ctx, best.point, best.seed)
        confirmation = confirm(domain, ctx, point, seed, confidence)
        if not confirmation.violated and point != best.point:
            # shrinking a noisy claim can walk to a point that violated at its seed only by luck:
            # then the unshrunk best is confirmed instead (measured on MGD.L1 with a planted c1 = 1)
            fallback = confirm(domain, ctx, best.point, seed, confidence)
            if fallback.violated:
                point, confirmation = best.point, fallback
                instance = domain.evaluate([point], [best.seed], ctx)[0]  # alone, as a replay evaluates it
            result["search"]["shrunk_point_confirmed"] = False
        result["search"]["shrink_evaluations"] = spent
        result["confirmation"] = confirmation.as_dict()
        if confirmation.violated:
            result["outcome"] = OUTCOMES[0]
            result["counterexample"] = {"parameters": point, "seed": best.seed, **instance.as_dict()}
    result["seconds"] = time.monotonic() - started
    result["summary"] = _summary(result)
    return result


def _summary(result: dict) -> str:
    spent = f"{result['evaluations']} evaluations, {result['seconds']:.0f} s"
    if result["outcome"] == OUTCOMES[0]:
        example, confirmation = result["counterexample"], result["confirmation"]
        return (f"violated: at {example['parameters']} measured {example['measured']:.4g} > bound "
                f"{example['bound']:.4g} (ratio {example['ratio']:.4g}); confirmed on {len(confirmation['seeds'])} fresh "
                f"seeds: {confirmation['summary']} ({spent})")
    tail = (f"; the best point did not confirm on fresh seeds: {result['confirmation']['summary']}"
            if result["confirmation"] else "")
    return f"no counterexample found: best measured/allowed {result['best_ratio']:.4g} ({spent}){tail}"
