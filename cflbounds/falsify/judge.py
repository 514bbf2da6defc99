"""One verdict per claim: the designed experiment and the search, combined.

``cflbounds verify`` checks each claim on the experiment its author designed; a claim that
declares a :class:`~cflbounds.verify.domain.Domain` is then also searched for a counterexample
(:func:`~cflbounds.falsify.run.falsify_claim`, with the run's seed and device). The final
verdict is the strongest of the two findings (:data:`cflbounds.verify.verdict.PRECEDENCE`): a
confirmed counterexample makes it ``violated`` whatever the designed experiment said (a bound
that promises nothing *and* is exceeded is false), a search whose claim code failed makes it
``error``, and a designed ``violated`` stays violated whatever the search finds (so ``verify``
does not search such a claim: its search record says so, ``outcome`` "not run"; ``falsify``
searches it). So ``verify`` and ``falsify`` never give one claim two answers.

The verdict keeps both readings: ``designed`` (the designed experiment's own verdict and
summary) and ``search`` (outcome, best ratio, evaluations, the counterexample and its
confirmation, the coverage statement); its summary says both, the deciding one first when they
differ ("search: violated: measured/allowed 4.06 [3.2, 5.1] at ...; designed experiment:
vacuous (...)").

A claim may have no designed experiment at all: the short form ``Claim(id, statement,
bound=..., domain=...)``. Its domain is then the whole claim, and its verdict is the search's
(:func:`domain_verdict`): ``violated`` with the confirmed counterexample, ``holds`` with what
the space-filling phase rules out (the share of the admissible volume a violating region could
still hold), or ``inconclusive`` where the phase drew fewer than :data:`MIN_COVERAGE_POINTS`
admissible points, which rule out nothing worth saying.

How much to search (:class:`SearchPlan`) is part of what a verdict depends on. By default it is,
per claim, at least a number of evaluations *and* at least a number of seconds, whichever takes
longer, by scale (:data:`SEARCH_PLANS`): a cheap claim is searched for as long as the seconds
allow, an expensive one gets its evaluations. The seconds reach further on a faster machine, so
a verdict from a search depends on the machine's speed too (the evaluations are recorded);
``--search-evaluations N`` makes it a count alone, reproducible anywhere, and ``--search
SECONDS`` a time alone (as ``falsify --budget``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from numbers import Integral

from .._torch import resolve_device
from .._validation import Boolean, Constraint, Interval, NoneOK, Options, validate_params
from ..sweeps.executors import EXECUTORS
from ..verify.context import SCALE_OPTION, VerifyContext
from ..verify.registry import claims
from ..verify.run import verify_claims
from ..verify.verdict import Verdict, strongest
from .run import falsify_claim

__all__ = ["MIN_COVERAGE_POINTS", "SEARCH_PLANS", "SearchPlan", "default_plan", "domain_verdict", "judge",
           "searched_verdict"]

# The search verify runs per claim with a domain, by scale: at least so many evaluations and at
# least so many seconds. Smoke: a short one, so that a smoke verdict is not a default one with the
# search left out; default: MGD.L2's known counterexample needs about 150 evaluations, and a cheap
# claim gets ten seconds; paper: a long one. docs/verify-runs.md ("What each scale costs").
SEARCH_PLANS = {"smoke": (25, 2.0), "default": (200, 10.0), "paper": (2000, 60.0)}
# A domain-only claim holds only when its coverage phase drew at least this many admissible
# points: with 5, a violating region is ruled out above 45 % of the admissible volume (95 %); with
# fewer the statement says nearly nothing, and the verdict is inconclusive.
MIN_COVERAGE_POINTS = 5
# A designed violation is final (only an error outranks it, PRECEDENCE): verify does not search
# such a claim, `falsify` does.
NOT_RUN = "not run"
NOT_RUN_REASON = ("the designed experiment already found the claim violated, which no search can change; "
                  "`cflbounds falsify {id}` searches its domain")


@dataclass(frozen=True)
class SearchPlan:
    """How long ``verify`` searches each claim that has a domain: ``evaluations`` alone is that
    many evaluations, ``seconds`` alone that many seconds, both together at least both (whichever
    takes longer); neither (or 0) means no search. ``confidence``: of the confirmation on fresh
    seeds. Called by the verify engine after a claim's designed check, with the claim, its
    verdict (None for a claim without a designed check) and the run's context."""

    evaluations: int | None = None
    seconds: float | None = None
    confidence: float = 0.95

    @property
    def active(self) -> bool:
        return bool(self.evaluations) or bool(self.seconds)

    def describe(self) -> dict:
        """What the run's metadata records of it (a verdict depends on it)."""
        return {"evaluations": self.evaluations, "seconds": self.seconds, "confidence": self.confidence}

    def limits(self) -> dict:
        """The search's limits as :func:`~cflbounds.falsify.run.falsify_claim` takes them."""
        if self.evaluations and self.seconds:
            return {"budget": self.seconds, "max_evaluations": None, "min_evaluations": self.evaluations}
        return {"budget": self.seconds or None, "max_evaluations": self.evaluations or None}

    def __call__(self, claim, verdict: Verdict | None, context: VerifyContext, raise_errors: bool = False) -> Verdict:
        if verdict is None:  # no designed experiment: the domain is the whole claim
            return domain_verdict(claim, self._search(claim, context, raise_errors) if self.active else None, context)
        if not self.active or claim.domain is None or verdict.verdict in ("error", "not-implemented"):
            return verdict
        if verdict.verdict == "violated":  # nothing the search finds can change it (module docstring)
            return replace(verdict, designed={"verdict": verdict.verdict, "summary": verdict.summary},
                           search={"id": claim.id, "outcome": NOT_RUN, "reason": NOT_RUN_REASON.format(id=claim.id)})
        return searched_verdict(verdict, self._search(claim, context, raise_errors))

    def _search(self, claim, context: VerifyContext, raise_errors: bool) -> dict:
        return falsify_claim(claim.id, seed=context.seed, device=context.device, confidence=self.confidence,
                             contain=not raise_errors, **self.limits())


def default_plan(scale: str) -> SearchPlan:
    """The search ``verify`` runs at ``scale`` unless told otherwise (:data:`SEARCH_PLANS`)."""
    evaluations, seconds = SEARCH_PLANS[scale]
    return SearchPlan(evaluations=evaluations, seconds=seconds)


def search_record(result: dict) -> dict:
    """The part of a :func:`falsify_claim` result a verdict keeps: no trace (the search's own
    report has it) and no seconds (a verdict's record holds what its seed decides; the verdict's
    own ``seconds`` counts the search's)."""
    kept = ("outcome", "best_ratio", "evaluations", "seed", "device", "rule", "counterexample",
            "confirmation", "coverage", "error")
    record = {key: result.get(key) for key in kept}
    record.update(id=result["id"], summary=result["summary"])  # one short line, no wall time
    if result.get("search", {}).get("best") is not None:
        record["best"] = {key: result["search"]["best"].get(key) for key in ("parameters", "seed", "ratio")}
    return record


def domain_verdict(claim, result: dict | None, context: VerifyContext) -> Verdict:
    """The verdict of a claim whose domain is the whole claim (no designed experiment), from its
    search ``result`` (None: no search was asked): module docstring."""
    if result is None:
        return Verdict(claim.id, "inconclusive", {}, context.seed, 0, 0.0,
                       "inconclusive: no designed experiment and no search (--search 0): nothing was measured")
    outcome, coverage = result["outcome"], result["coverage"] or {}
    admissible = int(coverage.get("admissible", 0))
    word = ({"violated": "violated", "error": "error"}.get(outcome)
            or ("holds" if admissible >= MIN_COVERAGE_POINTS else "inconclusive"))
    reason = (f"; only {admissible} admissible coverage points, fewer than the {MIN_COVERAGE_POINTS} a statement "
              "needs" if word == "inconclusive" else
              f"; coverage: {coverage['statement']}" if word == "holds" and coverage.get("statement") else "")
    # (a search's own summary leaves the coverage to its fields: here it is what 'holds' rests on)
    evidence = {"search_evaluations": result["evaluations"], "search_violated": int(outcome == "violated"),
                "search_best_ratio": result["best_ratio"], "coverage_admissible": admissible}
    if coverage.get("volume_bound") is not None:
        evidence["coverage_volume_bound"] = coverage["volume_bound"]
    details = {"designed experiment": "none: the claim is its bound and its domain (the search decides)"}
    if outcome == "error" and result.get("error"):
        details.update({f"error_{key}": value for key, value in result["error"].items()})
    confidence = (result["confirmed"] or {}).get("confidence") if outcome == "violated" else coverage.get("confidence")
    return Verdict(claim.id, word, evidence, context.seed, int(result["evaluations"]), float(confidence or 0.0),
                   f"{word}: search: {result['summary']}{reason}", plot=[search_figure(claim.id, result)],
                   details=details, search=search_record(result))


def search_figure(claim_id: str, result: dict) -> dict:
    """A figure spec of what decided a domain-only verdict: the score of the evaluations the
    search kept (its objective, above 0 a violation at that evaluation's seed) and the best so far."""
    trace = result["search"]["trace"]
    sampled, best = trace["sampled"], trace["best"]
    steps = list(zip(best["evaluation"], best["score"]))
    running = [max([score for at, score in steps if at <= evaluation], default=None)
               for evaluation in sampled["evaluation"]]
    return {"kind": "rate", "title": f"{claim_id}: the search ({trace['objective']}; above 0: exceeds the bound)",
            "xlabel": "evaluation", "ylabel": trace["objective"], "logx": False, "logy": False,
            "x": list(sampled["evaluation"]),
            "series": [{"label": "evaluations kept (inadmissible left out)", "style": "points",
                        "y": [math.nan if score is None else score for score in sampled["score"]]},
                       {"label": "best so far", "y": [math.nan if score is None else score for score in running]}],
            "reference": [{"y": 0.0, "label": "the bound (0)"}]}


def searched_verdict(designed: Verdict, result: dict) -> Verdict:
    """``designed`` combined with the search ``result`` (module docstring)."""
    outcome = result["outcome"]
    found = {"violated": "violated", "error": "error"}.get(outcome)
    final = strongest(designed.verdict, found) if found else designed.verdict
    search = search_record(result)
    evidence = {**designed.evidence, "search_evaluations": result["evaluations"],
                "search_violated": int(outcome == "violated"),
                "search_best_ratio": result["best_ratio"]}
    reading = f"search: {result['summary']}"  # short, no wall time: the rest is in ``search``
    summary = (f"{designed.summary}; {reading}" if final == designed.verdict else  # the deciding reading first
               f"{reading}; designed experiment: {designed.verdict} ({designed.summary})")
    details = dict(designed.details)
    if outcome == "error" and result.get("error"):
        details.update({f"error_{key}": value for key, value in result["error"].items()})
    return replace(designed, verdict=final, summary=summary, evidence=evidence, details=details,
                   designed={"verdict": designed.verdict, "summary": designed.summary}, search=search)


@validate_params({
    "claim_id": [Constraint(lambda value: isinstance(value, str) and value in claims(),
                            "a registered claim ID (`cflbounds claims` lists them)")],
    "scale": [SCALE_OPTION],
    "seed": [Interval(Integral, 0, None, closed="left")],
    "device": [Options(("auto", "cpu", "cuda"))],
    "executor": [Options(EXECUTORS)],
    "progress": [NoneOK, Boolean],
    "search": [NoneOK, Constraint(lambda value: isinstance(value, SearchPlan), "a cflbounds.falsify.SearchPlan")],
})
def judge(claim_id: str, *, scale: str = "default", seed: int = 0, device: str = "auto", executor: str = "local",
          progress: bool | None = False, search: SearchPlan | None = None) -> Verdict:
    """The final verdict of one claim, as ``cflbounds verify ID`` gives it: the designed
    experiment, then (for a claim with a domain) the search of ``search`` (default: the
    scale's, :func:`default_plan`), combined (module docstring).

    >>> from cflbounds.falsify import judge
    >>> judge("MGD.L2", scale="default").verdict  # doctest: +SKIP
    'violated'
    """
    context = VerifyContext(scale=scale, seed=seed, device=str(resolve_device(device)), executor=executor,
                            progress=progress)
    (verdict,) = verify_claims([claim_id], context, search=search or default_plan(scale))
    return verdict

