"""Confirm a counterexample on fresh seeds, with the claim's decision rule.

The search's best point is biased upward (it is the maximum of many noisy evaluations), so the
outcome is decided only on seeds the search never used (spawn key :data:`CONFIRM_KEY`): the
domain's ``confirmation`` fresh instances of the same point, judged by the domain's rule
(:mod:`cflbounds.verify.domain`) at ``confidence``. Inadmissible fresh instances are counted
and left out.

Each confirmation also states the *confirmed ratio*, measured / allowed as the rule judges it,
with its interval (``ratio``, ``ratio_interval``): for a deterministic bound the largest fresh
ratio (any fresh instance above 1 violates) within the range of the fresh ratios; for an
expectation ``1 + mean excess / mean bound`` with the Student-t interval of the mean excess
mapped the same way; for a probability the pooled frequency over the allowed probability with
its Clopper-Pearson interval. Above 1 exactly where the point estimate exceeds what is
allowed; the interval's lower end above 1 is the rule's "violated" for the statistical rules.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..synthetic.seeding import spawn_seeds
from ..verify import rules
from ..verify.contract import checked_evaluate
from ..verify.domain import Domain, ratio_of

__all__ = ["CONFIRM_KEY", "Confirmation", "confirm", "confirmation_seeds"]

CONFIRM_KEY = 3


def confirmation_seeds(seed: int, count: int) -> tuple[int, ...]:
    return spawn_seeds(seed, count, CONFIRM_KEY)


@dataclass
class Confirmation:
    """``violated``: the rule found the claim violated on the fresh seeds. ``interval``: of
    ``quantity`` at ``confidence`` (the range of measured / bound for a deterministic bound, the
    mean excess over the bound for an expectation, the exceedance frequency for a probability).
    ``ratio`` and ``ratio_interval``: the confirmed ratio (module docstring)."""

    violated: bool
    trials: int
    confidence: float
    interval: tuple[float, float]
    quantity: str
    summary: str
    seeds: list = field(default_factory=list)
    inadmissible: int = 0
    measured: list = field(default_factory=list)
    bounds: list = field(default_factory=list)
    ratio: float = np.nan
    ratio_interval: tuple[float, float] = (np.nan, np.nan)
    strongest_seed: int | None = None  # the fresh seed whose admissible instance has the largest score

    def as_dict(self) -> dict:
        return {"violated": self.violated, "trials": self.trials, "confidence": self.confidence,
                "interval": list(self.interval), "quantity": self.quantity, "summary": self.summary,
                "seeds": list(self.seeds), "inadmissible": self.inadmissible, "measured": list(self.measured),
                "bounds": list(self.bounds), "ratio": self.ratio, "ratio_interval": list(self.ratio_interval)}


def confirm(domain: Domain, ctx, point: dict, seed: int, confidence: float = 0.95,
            claim: str = "this claim") -> Confirmation:
    """The claim's rule on the domain's fresh instances of ``point`` (module docstring), each
    checked against the Domain contract (naming ``claim``)."""
    seeds = list(confirmation_seeds(seed, domain.confirmation))
    instances = checked_evaluate(domain, [point] * len(seeds), seeds, ctx, claim)
    kept = [i for i in instances if i.admissible]
    if not kept:
        return Confirmation(False, 0, confidence, (np.nan, np.nan), "none", "every fresh instance was inadmissible",
                            seeds, len(instances))
    measured, bounds = [i.measured for i in kept], [i.bound for i in kept]
    ratios = [i.ratio for i in kept]
    left_out = len(instances) - len(kept)
    strongest = max((i for i in range(len(seeds)) if instances[i].admissible), key=lambda i: domain.score(instances[i]))
    if domain.rule == "deterministic":
        decision = rules.deterministic([i.measured for i in kept], [i.bound for i in kept], rtol=domain.rtol)
        allowed_ratios = [domain.ratio(i) for i in kept]
        return Confirmation(decision.verdict == "violated", len(kept), 1.0, (min(ratios), max(ratios)),
                            "measured / bound over the fresh instances", decision.summary, seeds, left_out, measured,
                            bounds, max(allowed_ratios), (min(allowed_ratios), max(allowed_ratios)), seeds[strongest])
    if domain.rule == "expectation":  # the trials of every fresh instance pooled: one configuration
        samples = np.concatenate([np.asarray(i.samples, float) for i in kept])
        trial_bounds = np.concatenate([np.full(len(i.samples), float(i.bound)) for i in kept])
        decision = rules.expectation(samples, trial_bounds, confidence=confidence)
        evidence = decision.evidence
        low, high = evidence["worst_excess_low"], evidence["worst_excess_high"]
        mean, bound = evidence["worst_mean"] - evidence["worst_bound"], evidence["worst_bound"]
        violated = decision.verdict == "violated"
        ratio, ratio_low, ratio_high = (_excess_ratio(value, bound) for value in (mean, low, high))
        summary = (f"mean of measured - bound over {samples.size} fresh trials {mean:.4g} [{low:.4g}, {high:.4g}] at "
                   f"{confidence:.0%}: " + ("above 0, the bound is exceeded in expectation" if violated else
                                            "not above 0"))
        return Confirmation(violated, int(samples.size), confidence, (low, high), "mean of measured - bound", summary,
                            seeds, left_out, measured, bounds, ratio, (ratio_low, ratio_high), seeds[strongest])
    allowed = np.array([i.bound for i in kept])
    exceedances, trials = np.array([i.exceedances for i in kept]), np.array([i.trials for i in kept])
    if np.allclose(allowed, allowed[0], rtol=1e-9, atol=0.0):  # one point: one configuration, the trials pooled
        # (an allowed probability computed by an optimiser may differ between seeds in its last bits)
        exceedances, trials, allowed = exceedances.sum(keepdims=True), trials.sum(keepdims=True), allowed[:1]
    decision = rules.exceedance_counts(exceedances, trials, allowed, confidence=confidence)
    evidence = decision.evidence
    low, high, worst = evidence["worst_rate_low"], evidence["worst_rate_high"], evidence["worst_allowed"]
    ratio, ratio_low, ratio_high = (ratio_of(value, worst) for value in (evidence["worst_frequency"], low, high))
    return Confirmation(decision.verdict == "violated", int(trials.sum()), confidence, (low, high),
                        "exceedance frequency", decision.summary, seeds, left_out, measured, bounds,
                        ratio, (ratio_low, ratio_high), seeds[strongest])


def _excess_ratio(excess: float, bound: float) -> float:
    """``(bound + excess) / bound``; a non-positive bound exceeded is ``inf`` (as in
    :func:`~cflbounds.verify.domain.ratio_of`)."""
    return 1.0 + excess / bound if bound > 0 and math.isfinite(bound) else ratio_of(bound + excess, bound)
