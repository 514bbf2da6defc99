"""Search a claim's admissible domain for its worst case: CMA-ES with restarts on the unit cube.

The optimiser is pycma's CMA-ES (Hansen's reference implementation): derivative-free, robust
to the noise of a measured quantity, invariant to the scale of the objective, with restarts of
doubling population (IPOP) that escape the local maxima these landscapes have (e.g. a ratio
peaking at an unequal cluster mass). Each coordinate is a :class:`~cflbounds.verify.domain.Parameter`
mapped to [0, 1] (log scale for scales); integers are rounded when decoded, with a floor on
their coordinate's step size (pycma's ``minstd``) so the search does not stall between two
integers. A point whose parameter-only assumptions fail is never evaluated (its objective is a
penalty growing with how far it fails); an evaluated instance whose own assumption rows fail is
penalised the same way and never counted as a violation.

The search maximises the domain's score (``log(measured/bound)``, or ``frequency - allowed``);
pycma minimises, so it is told the negative. Every evaluation gets its own seed, spawned from
the search seed and its index, so the same seed gives the same search path on any executor.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from ..synthetic.seeding import spawn_seeds
from ..verify.domain import Domain, Instance

__all__ = ["Evaluation", "SearchResult", "search", "SEARCH_KEY", "evaluation_seed"]

SEARCH_KEY = 1  # spawn key of the search's evaluation seeds (confirmation uses another)
PENALTY = 1e3  # above any admissible objective: log-ratios are clipped to +-SCORE_CAP
SCORE_CAP = 50.0
SIGMA0 = 0.3  # initial step size on the unit cube
MAX_DOUBLINGS = 6  # IPOP doubles the population at each restart, up to 2**6 times the base one


def evaluation_seed(seed: int, index: int) -> int:
    """The seed of the search's ``index``-th evaluation."""
    return spawn_seeds(seed, 1, SEARCH_KEY, index)[0]


@dataclass
class Evaluation:
    """One point the search looked at: its seed, the objective it got (``None`` when the point
    was rejected or its instance inadmissible) and the instance (``None`` when rejected)."""

    index: int
    point: dict
    seed: int
    score: float | None
    instance: Instance | None


@dataclass
class SearchResult:
    evaluations: list[Evaluation] = field(default_factory=list)
    restarts: int = 0
    seconds: float = 0.0

    @property
    def admissible(self) -> list[Evaluation]:
        return [e for e in self.evaluations if e.score is not None]

    @property
    def best(self) -> Evaluation | None:
        """The admissible evaluation with the largest score (earliest on ties)."""
        candidates = self.admissible
        return max(candidates, key=lambda e: (e.score, -e.index)) if candidates else None


def _shortfall(rows) -> float:
    """How far assumption rows fail, scale-free: the sum of |slack| / (|lhs| + |rhs|) over failing rows."""
    total = 0.0
    for row in rows:
        if not row["holds"]:
            lhs, rhs = np.atleast_1d(np.asarray(row["lhs"], float)), np.atleast_1d(np.asarray(row["rhs"], float))
            slack = np.atleast_1d(np.asarray(row["slack"], float))
            with np.errstate(invalid="ignore", divide="ignore"):
                relative = np.abs(slack) / (np.abs(lhs) + np.abs(rhs) + 1e-300)
            total += float(np.nansum(np.where(np.isfinite(relative), np.minimum(relative, 1.0), 1.0)))
    return total if total > 0 else 1.0


def _objective(score: float, margin: float | None) -> float:
    """What pycma minimises: minus the (clipped) score, plus ``1 - margin`` where an instance
    reports a margin below 1 (no event observed: the score is flat there, ``-allowed`` for a
    probability or ``log 0`` for an expectation, and CMA-ES would have nothing to follow; measured
    on MGD.L2: 200 evaluations without leaving that plateau). The score, which decides
    violations, does not include it."""
    plateau = 0.0 if margin is None or not math.isfinite(margin) else max(1.0 - margin, 0.0)
    return -float(np.clip(score, -SCORE_CAP, SCORE_CAP)) + plateau


def _minimum_steps(domain: Domain) -> np.ndarray:
    """Per coordinate, half the unit distance between the two lowest integers (0 for floats)."""
    steps = []
    for p in domain.parameters:
        if p.integer and p.high > p.low:
            steps.append(0.5 * p.encode(p.low + 1))
        else:
            steps.append(0.0)
    return np.array(steps)


def search(domain: Domain, ctx, *, seed: int, budget: float | None = None, max_evaluations: int | None = None,
           clock=time.monotonic) -> SearchResult:
    """Maximise the domain's score until ``budget`` seconds or ``max_evaluations`` evaluations
    (whichever comes first; at least one of them must be given). Returns every evaluation."""
    import cma

    if budget is None and max_evaluations is None:
        raise ValueError("search needs a budget in seconds or a number of evaluations")
    started, result = clock(), SearchResult()
    dimension = len(domain.parameters)
    base_population = 4 + int(3 * math.log(dimension))
    minimum_steps = _minimum_steps(domain)

    def spent() -> bool:
        over_time = budget is not None and clock() - started >= budget
        over_count = max_evaluations is not None and len(result.evaluations) >= max_evaluations
        return over_time or over_count

    while not spent():
        restart_seed = spawn_seeds(seed, 1, SEARCH_KEY + 1, result.restarts)[0]
        rng = np.random.default_rng(restart_seed)
        options = {"bounds": [0.0, 1.0], "popsize": base_population * 2 ** min(result.restarts, MAX_DOUBLINGS),
                   "seed": int(restart_seed % (2**31 - 1)) + 1, "verbose": -9,
                   "minstd": list(minimum_steps), "tolfun": 1e-9, "tolx": 1e-6}
        if dimension == 1:  # pycma needs two coordinates: a dummy one the objective ignores
            options["minstd"] = list(minimum_steps) + [0.0]
        strategy = cma.CMAEvolutionStrategy(list(rng.uniform(0.1, 0.9, size=max(dimension, 2))), SIGMA0, options)
        while not strategy.stop() and not spent():
            candidates, objectives = strategy.ask(), []
            # in chunks of the base population, so that a large generation does not overrun the budget;
            # a generation cut short is kept in the record but not told to the strategy
            for first in range(0, len(candidates), base_population):
                if spent():
                    break
                chunk = candidates[first:first + base_population]
                if max_evaluations is not None:
                    chunk = chunk[:max_evaluations - len(result.evaluations)]
                objectives += _evaluate_generation(domain, ctx, seed, [c[:dimension] for c in chunk], result)
            if len(objectives) == len(candidates):
                strategy.tell(candidates, objectives)
        result.restarts += 1
    result.restarts -= 1  # restarts after the first run
    result.seconds = clock() - started
    return result


def _evaluate_generation(domain, ctx, seed, units, result: SearchResult) -> list[float]:
    """Evaluate one generation as a batch; append its evaluations; return its objectives."""
    points = [domain.decode(unit) for unit in units]
    first = len(result.evaluations)
    seeds = [evaluation_seed(seed, first + i) for i in range(len(points))]
    rows = [domain.constraint_rows(point) for point in points]
    accepted = [i for i, r in enumerate(rows) if all(bool(row["holds"]) for row in r)]
    instances = dict(zip(accepted, domain.evaluate([points[i] for i in accepted], [seeds[i] for i in accepted], ctx)))
    objectives = []
    for i, point in enumerate(points):
        instance = instances.get(i)
        if instance is None:
            score, objective = None, PENALTY + _shortfall(rows[i])
        elif not instance.admissible:
            score, objective = None, PENALTY + _shortfall(instance.assumptions)
        else:
            score = domain.score(instance)
            objective = _objective(score, instance.margin)
        result.evaluations.append(Evaluation(first + i, point, seeds[i], score, instance))
        objectives.append(objective)
    return objectives
