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

How much to search (:class:`SearchPlan`) is part of what a verdict depends on. By default it is
a number of evaluations per claim that depends on the scale (:data:`SEARCH_EVALUATIONS`), so
the verdict depends only on (claim, scale, seed, device) as the designed experiment's does;
``--search SECONDS`` gives each search a time budget instead, which (like ``falsify
--budget``) reaches further on a faster machine.
"""
from __future__ import annotations

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

__all__ = ["SEARCH_EVALUATIONS", "SearchPlan", "default_plan", "judge", "searched_verdict"]

# Evaluations per claim of the search verify runs, by scale: none at smoke (the test suite's
# size), a short search at default (MGD.L2's known counterexample needs about 150), a long one
# at paper. docs/verify-runs.md ("What each scale costs") gives what they cost per claim.
SEARCH_EVALUATIONS = {"smoke": 0, "default": 200, "paper": 2000}
# A designed violation is final (only an error outranks it, PRECEDENCE): verify does not search
# such a claim, `falsify` does.
NOT_RUN = "not run"
NOT_RUN_REASON = ("the designed experiment already found the claim violated, which no search can change; "
                  "`cflbounds falsify {id}` searches its domain")


@dataclass(frozen=True)
class SearchPlan:
    """How long ``verify`` searches each claim that has a domain: ``evaluations`` per claim, or
    ``seconds`` per claim (a time budget), not both; neither (or 0) means no search.
    ``confidence``: of the confirmation on fresh seeds. Called by the verify engine after a
    claim's designed check, with the claim, its verdict and the run's context."""

    evaluations: int | None = None
    seconds: float | None = None
    confidence: float = 0.95

    def __post_init__(self):
        if self.evaluations is not None and self.seconds is not None:
            raise ValueError("a search plan has evaluations or seconds, not both")

    @property
    def active(self) -> bool:
        return bool(self.evaluations) or bool(self.seconds)

    def describe(self) -> dict:
        """What the run's metadata records of it (a verdict depends on it)."""
        return {"evaluations": self.evaluations, "seconds": self.seconds, "confidence": self.confidence}

    def __call__(self, claim, verdict: Verdict, context: VerifyContext, raise_errors: bool = False) -> Verdict:
        if not self.active or claim.domain is None or verdict.verdict in ("error", "not-implemented"):
            return verdict
        if verdict.verdict == "violated":  # nothing the search finds can change it (module docstring)
            return replace(verdict, designed={"verdict": verdict.verdict, "summary": verdict.summary},
                           search={"id": claim.id, "outcome": NOT_RUN, "reason": NOT_RUN_REASON.format(id=claim.id)})
        result = falsify_claim(claim.id, seed=context.seed, budget=self.seconds, max_evaluations=self.evaluations,
                               device=context.device, confidence=self.confidence, contain=not raise_errors)
        return searched_verdict(verdict, result)


def default_plan(scale: str) -> SearchPlan:
    """The search ``verify`` runs at ``scale`` unless told otherwise (:data:`SEARCH_EVALUATIONS`)."""
    return SearchPlan(evaluations=SEARCH_EVALUATIONS[scale] or None)


def search_record(result: dict) -> dict:
    """The part of a :func:`falsify_claim` result a verdict keeps (no trace: the search's own
    report has it)."""
    kept = ("outcome", "best_ratio", "evaluations", "seconds", "seed", "device", "rule", "counterexample",
            "confirmation", "coverage", "summary", "error")
    record = {key: result.get(key) for key in kept}
    record["id"] = result["id"]
    if result.get("search", {}).get("best") is not None:
        record["best"] = {key: result["search"]["best"].get(key) for key in ("parameters", "seed", "ratio")}
    return record


def searched_verdict(designed: Verdict, result: dict) -> Verdict:
    """``designed`` combined with the search ``result`` (module docstring)."""
    outcome = result["outcome"]
    found = {"violated": "violated", "error": "error"}.get(outcome)
    final = strongest(designed.verdict, found) if found else designed.verdict
    search = search_record(result)
    evidence = {**designed.evidence, "search_evaluations": result["evaluations"],
                "search_violated": int(outcome == "violated"),
                "search_best_ratio": result["best_ratio"]}
    reading = f"search: {result['summary']}"  # short: the rest is in ``search``, which the reports show
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

