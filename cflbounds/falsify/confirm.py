"""Confirm a counterexample on fresh seeds, with the claim's decision rule.

The search's best point is biased upward (it is the maximum of many noisy evaluations), so the
outcome is decided only on seeds the search never used (spawn key :data:`CONFIRM_KEY`): the
domain's ``confirmation`` fresh instances of the same point, judged by the domain's rule
(:mod:`cflbounds.verify.domain`) at ``confidence``. Inadmissible fresh instances are counted
and left out.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..synthetic.seeding import spawn_seeds
from ..verify import rules
from ..verify.contract import checked_evaluate
from ..verify.domain import Domain
from ..verify.stats import mean_interval

__all__ = ["CONFIRM_KEY", "Confirmation", "confirm", "confirmation_seeds"]

CONFIRM_KEY = 3


def confirmation_seeds(seed: int, count: int) -> tuple[int, ...]:
    return spawn_seeds(seed, count, CONFIRM_KEY)


@dataclass
class Confirmation:
    """``violated``: the rule found the claim violated on the fresh seeds. ``interval``: of
    ``quantity`` at ``confidence`` (the ratio range for a deterministic bound, the mean excess
    over the bound for an expectation, the exceedance frequency for a probability)."""

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

    def as_dict(self) -> dict:
        return {"violated": self.violated, "trials": self.trials, "confidence": self.confidence,
                "interval": list(self.interval), "quantity": self.quantity, "summary": self.summary,
                "seeds": list(self.seeds), "inadmissible": self.inadmissible, "measured": list(self.measured),
                "bounds": list(self.bounds)}


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
    if domain.rule == "deterministic":
        decision = rules.deterministic([i.measured for i in kept], [i.bound for i in kept], rtol=domain.rtol)
        return Confirmation(decision.verdict == "violated", len(kept), 1.0, (min(ratios), max(ratios)),
                            "measured / bound over the fresh instances", decision.summary, seeds,
                            len(instances) - len(kept), measured, bounds)
    if domain.rule == "expectation":
        excess = np.concatenate([np.asarray(i.samples, float) - i.bound for i in kept])
        mean, low, high = mean_interval(excess, confidence)
        violated = bool(low > 0)
        summary = (f"mean of measured - bound over {excess.size} fresh trials {float(mean):.4g} "
                   f"[{float(low):.4g}, {float(high):.4g}] at {confidence:.0%}: "
                   + ("above 0, the bound is exceeded in expectation" if violated else "not above 0"))
        return Confirmation(violated, int(excess.size), confidence, (float(low), float(high)),
                            "mean of measured - bound", summary, seeds, len(instances) - len(kept), measured, bounds)
    allowed = np.array([i.bound for i in kept])
    exceedances, trials = np.array([i.exceedances for i in kept]), np.array([i.trials for i in kept])
    if np.allclose(allowed, allowed[0], rtol=1e-9, atol=0.0):  # one point: one configuration, the trials pooled
        # (an allowed probability computed by an optimiser may differ between seeds in its last bits)
        exceedances, trials, allowed = exceedances.sum(keepdims=True), trials.sum(keepdims=True), allowed[:1]
    decision = rules.exceedance_counts(exceedances, trials, allowed, confidence=confidence)
    return Confirmation(decision.verdict == "violated", int(trials.sum()), confidence,
                        (decision.evidence["worst_rate_low"], decision.evidence["worst_rate_high"]),
                        "exceedance frequency", decision.summary, seeds, len(instances) - len(kept), measured, bounds)
