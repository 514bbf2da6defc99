"""Shrink a violating point toward a simpler one that still violates *as strongly*, as
hypothesis shrinks a failing example only to examples that fail the same way.

Each parameter in turn is tried at simpler values (an integer nearer its simplest value: fewer
clients, clusters, dimensions; a float rounder or nearer its simplest value), at the seed of
the point's instance; a change is kept when the point stays admissible and keeps at least
:data:`KEEP` of the starting point's score (half its log-ratio; for a probability, half its
frequency excess over the allowed probability; a non-positive bound exceeded, an infinite
log-ratio, only by another). Passes repeat until none changes anything or the evaluation
allowance is spent. Accepting any point that still violates walked, on a claim whose violation
lives in a thin corner of its domain, from a 1.03 % excess to a point violating by rounding
(``tests/test_falsify_strength.py``).

That is judged at one seed; :func:`keeps_strength` then judges the shrunk point on fresh seeds
against the unshrunk one (:mod:`.confirm`), and the falsifier reports the shrunk point only
when it passes.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..verify.contract import checked_constraint_rows, checked_evaluate
from ..verify.domain import Domain, Instance, Parameter, round_toward
from .confirm import Confirmation

__all__ = ["CLEARANCE", "KEEP", "Shrunk", "keeps_strength", "shrink", "simpler_values"]

KEEP = 0.5  # a simpler point keeps at least this share of the excess ...
CLEARANCE = 100.0  # ... and its confirmed lower end clears the tolerance this many times over


def simpler_values(parameter: Parameter, value) -> list:
    """Candidate values simpler than ``value``, simplest first (none equal to ``value``)."""
    target = parameter.simplest
    if parameter.integer:  # the target, then steps toward it halving down to 1: the largest step that works is found
        distance, direction = abs(int(value) - int(target)), 1 if value > target else -1
        candidates = [int(target)] + [int(value) - direction * (distance >> k) for k in range(1, distance.bit_length())]
    else:
        halfway = target + (value - target) / 2
        candidates = [target, round_toward(parameter.low, parameter.high, value),
                      float(f"{value:.2g}"), float(f"{halfway:.2g}")]
    seen, kept = set(), []
    for candidate in candidates:
        if candidate != value and candidate not in seen and parameter.low <= candidate <= parameter.high \
                and abs(candidate - target) <= abs(value - target):
            seen.add(candidate)
            kept.append(candidate)
    return kept


@dataclass
class Shrunk:
    """Where shrinking ended: the point, its instance at the seed (evaluated alone, so that a
    replay reproduces it exactly), the starting point's instance (alone too) and the
    evaluations spent."""

    point: dict
    instance: Instance
    start: Instance
    spent: int


def shrink(domain: Domain, ctx, point: dict, seed: int, *, allowance: int = 60, keep: float = KEEP,
           claim: str = "this claim") -> Shrunk:
    """The simplest point found that keeps ``keep`` of ``point``'s score at ``seed`` (module
    docstring), each evaluation checked against the Domain contract (naming ``claim``)."""
    current = dict(point)
    start = instance = checked_evaluate(domain, [current], [seed], ctx, claim)[0]
    spent = 1
    score = domain.score(start) if start.admissible else -math.inf
    needed = math.inf if math.isinf(score) else keep * score
    changed = score > 0  # nothing to shrink from otherwise
    while changed and spent < allowance:
        changed = False
        for parameter in domain.parameters:
            for candidate in simpler_values(parameter, current[parameter.name]):
                trial = {**current, parameter.name: candidate}
                if not all(bool(row["holds"]) for row in checked_constraint_rows(domain, trial, claim)):
                    continue
                outcome = checked_evaluate(domain, [trial], [seed], ctx, claim)[0]
                spent += 1
                if outcome.admissible and domain.score(outcome) > 0 and domain.score(outcome) >= needed:
                    current, instance, changed = trial, outcome, True
                    break
                if spent >= allowance:
                    return Shrunk(current, instance, start, spent)
    return Shrunk(current, instance, start, spent)


def keeps_strength(domain: Domain, shrunk: Confirmation, unshrunk: Confirmation, keep: float = KEEP,
                   clearance: float = CLEARANCE) -> tuple[bool, str]:
    """Whether a shrunk point's confirmation on fresh seeds is a counterexample as strong as the
    unshrunk point's, and why not: it must be violated there, the lower end of its confirmed
    ratio (:mod:`.confirm`) must clear the tolerance widely (``1 + clearance rtol``: a
    deterministic claim's rounding allowance is ``rtol``) and keep ``keep`` of the unshrunk
    point's lower end in log-ratio (all of it when that is infinite)."""
    low, reference = shrunk.ratio_interval[0], unshrunk.ratio_interval[0]
    floor = 1.0 + clearance * domain.rtol
    if not shrunk.violated:
        return False, "it did not confirm on fresh seeds"
    if not low > floor:
        return False, f"its confirmed lower end {low:.10g} does not clear 1 + {clearance:g} rtol = {floor:.10g}"
    if reference > 1 and not _log(low) >= keep * _log(reference):
        return False, (f"its confirmed lower end {low:.6g} keeps less than {keep:g} of the unshrunk point's "
                       f"{reference:.6g} (in log-ratio)")
    return True, "it keeps the excess on fresh seeds"


def _log(ratio: float) -> float:
    return math.inf if math.isinf(ratio) else math.log(ratio)
