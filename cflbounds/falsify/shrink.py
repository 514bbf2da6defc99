"""Shrink a violating point toward a simpler one that still violates, as hypothesis shrinks a
failing example: each parameter in turn is tried at simpler values (an integer nearer its
simplest value: fewer clients, clusters, dimensions; a float rounder or nearer its simplest
value), and a change is kept when the point stays admissible and still violates at the same
seed. Passes repeat until none changes anything or the evaluation allowance is spent."""
from __future__ import annotations

from ..verify.contract import checked_constraint_rows, checked_evaluate
from ..verify.domain import Domain, Instance, Parameter, round_toward

__all__ = ["shrink", "simpler_values"]


def simpler_values(parameter: Parameter, value) -> list:
    """Candidate values simpler than ``value``, simplest first (none equal to ``value``)."""
    target = parameter.simplest
    if parameter.integer:
        candidates = [int(target), int(value - (value - target) // 2), int(value - 1 if value > target else value + 1)]
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


def shrink(domain: Domain, ctx, point: dict, seed: int, *, allowance: int = 60,
           claim: str = "this claim") -> tuple[dict, Instance, int]:
    """The simplest point found that still violates at ``seed``, its instance (evaluated alone,
    so that a replay reproduces it exactly) and the number of evaluations spent (each checked
    against the Domain contract, naming ``claim``)."""
    current = dict(point)
    instance = checked_evaluate(domain, [current], [seed], ctx, claim)[0]
    spent = 1
    changed = instance.admissible and domain.score(instance) > 0  # nothing to shrink from otherwise
    while changed and spent < allowance:
        changed = False
        for parameter in domain.parameters:
            for candidate in simpler_values(parameter, current[parameter.name]):
                trial = {**current, parameter.name: candidate}
                if not all(bool(row["holds"]) for row in checked_constraint_rows(domain, trial, claim)):
                    continue
                outcome = checked_evaluate(domain, [trial], [seed], ctx, claim)[0]
                spent += 1
                if outcome.admissible and domain.score(outcome) > 0:
                    current, instance, changed = trial, outcome, True
                    break
                if spent >= allowance:
                    return current, instance, spent
    return current, instance, spent
