"""The search's space-filling phase: what a search that found nothing rules out.

Before CMA-ES starts, the first :data:`COVERAGE_SHARE` of the budget (of the evaluations with
``--evaluations N``: the first ``ceil(0.2 N)``; of the seconds with ``--budget``) goes to points
drawn independently and uniformly on the search's unit cube, from the search seed (spawn key
:data:`COVERAGE_KEY`, so the same seed draws the same points). They feed the search (the best
of them is CMA-ES's first start) and give a number to "no counterexample found", by the rule
of three's exact form: if none of ``N`` independent uniform admissible points lands in a set,
that set holds less than ``X = 1 - 0.05^(1/N)`` (about ``3/N``) of the admissible volume, at
95 % (``(1 - X)^N = 0.05``); with ``k`` points in it, ``X`` is the one-sided Clopper-Pearson
upper end of ``k`` in ``N``.

Why i.i.d. points and not a scrambled Sobol sequence: the rule of three needs independent
points. Scrambled Sobol points are each uniform but not independent, and no bound of the
form ``(1 - X)^N`` on missing an arbitrary set is known for them (negative dependence is
proved only for special sets, such as boxes anchored at the origin), so the statement would
not be true as printed. Independent draws lose little: the search itself already covers the
space where the objective leads it.

The volume is that of the unit cube the search works on: each parameter's coordinate on its
own scale (the log of a log parameter) and an integer taking the share of the cube that
rounds to it. It is stated relative to the *admissible* part: points whose parameter-only
assumptions fail are rejected (counted and reported), and the admissible points are, given
their number, independent and uniform on the admissible part. Where a point's instance is
itself random (a drawn problem, noise), the statement is about the pair (point, seed): the
share of admissible draws that violate.

What "violating" means depends on the claim's rule (:func:`shows_violation`):

* ``deterministic``: the instance exceeds what the claim allows (the rule itself): the
  statement is a bound on the violating region's volume;
* ``expectation`` and ``probability``: one evaluation sees its point only through noise, so a
  point counts when the evaluation's own interval at the run's confidence lies above the
  bound (Student-t of the mean excess; Clopper-Pearson of the frequency). The statement
  bounds the share of the admissible volume where one evaluation shows the excess; a region
  where it would show it at least half the time is therefore below ``2 X``. Each such test
  also fires, at most 2.5 % of the time, where the claim holds, so a few counted points are
  no counterexample: only the confirmation on fresh seeds decides the outcome.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats as scipy_stats

from ..synthetic.seeding import stream
from ..verify.domain import Domain, Instance
from ..verify.stats import clopper_pearson, mean_interval

__all__ = ["COVERAGE_KEY", "COVERAGE_SHARE", "Coverage", "UniformDraws", "coverage_evaluations", "shows_violation"]

COVERAGE_SHARE = 0.2  # of the evaluations (or seconds) of a search: enough points for 3/N to mean something
COVERAGE_KEY = 4  # spawn key of the coverage draws (1: evaluation seeds, 2: restarts, 3: confirmation)
CUBE = "volume of the search's unit cube: log scale for log parameters, integers rounded"


def coverage_evaluations(max_evaluations: int | None, share: float = COVERAGE_SHARE) -> int | None:
    """How many of ``max_evaluations`` the coverage phase takes (None: no count is set)."""
    return None if max_evaluations is None else min(max_evaluations, math.ceil(share * max_evaluations))


class UniformDraws:
    """Independent uniform points of the unit cube of ``dimension``, from the search seed: the
    same seed draws the same sequence however it is split into chunks."""

    def __init__(self, seed: int, dimension: int):
        self.generator, self.dimension = stream(seed, COVERAGE_KEY), dimension

    def take(self, count: int) -> np.ndarray:
        return self.generator.random((count, self.dimension))


def shows_violation(domain: Domain, instance: Instance, confidence: float) -> bool:
    """Whether one admissible instance shows the claim violated by its own evidence (module
    docstring): beyond the tolerance (deterministic), or with its interval at ``confidence``
    above the bound (expectation: the samples' mean excess; probability: the frequency)."""
    if domain.rule == "deterministic":
        return domain.score(instance) > 0
    if domain.rule == "expectation":
        excess = np.asarray(instance.samples if instance.samples is not None else [instance.measured], float)
        _, low, _ = mean_interval(excess - instance.bound, confidence)
        return bool(low > 0)
    low, _ = clopper_pearson(instance.exceedances, instance.trials, confidence)
    return bool(float(low) > instance.bound)


@dataclass
class Coverage:
    """Counts of the coverage phase: ``points`` drawn, ``admissible`` of them (the rest broke an
    assumption), ``violating`` admissible ones (:func:`shows_violation`), at ``confidence``."""

    rule: str
    confidence: float = 0.95
    points: int = 0
    admissible: int = 0
    violating: int = 0

    def add(self, domain: Domain, instance: Instance | None) -> None:
        """Count one drawn point (``instance`` None: rejected before evaluation)."""
        self.points += 1
        if instance is not None and instance.admissible:
            self.admissible += 1
            self.violating += shows_violation(domain, instance, self.confidence)

    @property
    def volume_bound(self) -> float:
        """The one-sided upper end at ``confidence`` of the violating share of the admissible
        volume (``1 - (1 - confidence)^(1/N)`` with none violating); 1 with no admissible point."""
        if self.admissible == 0:
            return 1.0
        if self.violating == self.admissible:
            return 1.0
        return float(scipy_stats.beta.ppf(self.confidence, self.violating + 1, self.admissible - self.violating))

    def statement(self) -> str:
        """What the phase rules out, in a sentence (module docstring)."""
        level, bound = f"{self.confidence:.0%}".replace("%", " %"), self.volume_bound
        if self.points == 0:
            return "no coverage: the search ended before its space-filling phase drew a point"
        if self.admissible == 0:
            return f"no coverage: none of the {self.points} points drawn uniformly was admissible"
        rejected = self.points - self.admissible
        cube = (f"{rejected} more drawn broke an assumption; " if rejected else "") + CUBE
        points = f"{self.admissible} independent uniform admissible points"
        if self.rule == "deterministic":
            if self.violating == 0:
                return (f"no violating region over {bound:.2g} of the admissible volume, at {level}: none of {points} "
                        f"violates ({cube})")
            return (f"{self.violating} of {points} violate: the violating region holds at most {bound:.2g} of the "
                    f"admissible volume, at {level} ({cube})")
        test = (f"{level} Student-t interval of mean - bound above 0" if self.rule == "expectation" else
                f"{level} Clopper-Pearson interval of the frequency above the allowed probability")
        region = "where one evaluation shows the bound exceeded beyond its noise"
        half = f"a region where it shows it half the time or more: under {min(2 * bound, 1.0):.2g}"
        if self.violating == 0:
            return (f"no region over {bound:.2g} of the admissible volume {region}, at {level} ({half}): none of "
                    f"{points} has its {test} ({cube})")
        noise = f"{(1 - self.confidence) / 2:.1%}".replace("%", " %")
        return (f"{self.violating} of {points} have their {test} (a test that also fires on up to {noise} of "
                f"the points where the claim holds): the region {region} holds at most {bound:.2g} of the "
                f"admissible volume, at {level} ({half}; {cube})")

    def as_dict(self) -> dict:
        return {"points": self.points, "admissible": self.admissible, "inadmissible": self.points - self.admissible,
                "violating": self.violating, "volume_bound": self.volume_bound, "confidence": self.confidence,
                "statement": self.statement()}
