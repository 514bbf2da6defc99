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

Every search starts with a space-filling phase (:mod:`.coverage`): the first fifth of its
evaluations (or of its seconds) are independent uniform points of the unit cube, which state
what a search without a violation rules out; the best of them starts CMA-ES's first restart.

The search maximises the domain's score (``log(measured/allowed)``, or ``frequency - allowed``);
pycma minimises, so it is told the negative. Every evaluation gets its own seed, spawned from
the search seed and its index, so the same seed gives the same search path on any executor.
Every evaluation is checked against the Domain contract (:mod:`cflbounds.verify.contract`),
and only a summary of the search is kept (:class:`SearchResult`), so a search of any length
runs in the same memory.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from functools import partial
from typing import Callable

import numpy as np

from ..synthetic.seeding import spawn_seeds
from ..verify.contract import checked_constraint_rows, checked_evaluate
from ..verify.domain import Domain, Instance
from .coverage import COVERAGE_SHARE, Coverage, UniformDraws, coverage_evaluations

__all__ = ["Evaluation", "EvenSample", "SearchResult", "search", "SEARCH_KEY", "TRACE_POINTS", "evaluation_seed"]

SEARCH_KEY = 1  # spawn key of the search's evaluation seeds (confirmation uses another)
PENALTY = 1e3  # above any admissible objective: log-ratios are clipped to +-SCORE_CAP
SCORE_CAP = 50.0
SIGMA0 = 0.3  # initial step size on the unit cube
MAX_DOUBLINGS = 6  # IPOP doubles the population at each restart, up to 2**6 times the base one
TRACE_POINTS = 400  # evaluations kept for the report's scatter of the search (evenly spread)


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


class EvenSample:
    """At most ``capacity`` items of a stream of any length, evenly spaced: every ``stride``-th
    item from the first, the stride doubling whenever more than ``capacity`` would be kept (so
    from ``capacity / 2`` items on, once the stream is longer). Deterministic, O(capacity) memory."""

    def __init__(self, capacity: int):
        self.capacity, self.stride, self.items = capacity, 1, []

    def wants(self, position: int) -> bool:
        return position % self.stride == 0

    def offer(self, position: int, item) -> None:
        """Keep ``item``, the stream's ``position``-th (from 0), if it falls on the stride."""
        if not self.wants(position):
            return
        self.items.append((position, item))
        if len(self.items) > self.capacity:
            self.stride *= 2
            self.items = [(p, kept) for p, kept in self.items if p % self.stride == 0]


@dataclass
class SearchResult:
    """What a search keeps, however long it runs: memory stays flat (DESIGN.md; measured by
    ``benchmarks/bench_falsify_memory.py``). Counts; the best admissible evaluation (largest
    score, earliest on ties) with its instance; ``improvements``, the evaluation number and
    score each time the best improved (a non-decreasing step function of the quantity the
    search maximises); ``sample``, the scores (None where inadmissible) of at most
    :data:`TRACE_POINTS` evaluations, evenly spread; ``coverage``, the counts of the
    space-filling phase (its points are the first ``coverage.points`` evaluations). Every
    evaluation itself is passed to ``search(observe=...)`` and dropped."""

    evaluations: int = 0
    admissible: int = 0
    restarts: int = 0
    seconds: float = 0.0
    best: Evaluation | None = None
    improvements: list = field(default_factory=list)
    sample: EvenSample = field(default_factory=lambda: EvenSample(TRACE_POINTS))
    coverage: Coverage | None = None

    @property
    def rejected(self) -> int:
        """Evaluations of points or instances that broke an assumption (never counted)."""
        return self.evaluations - self.admissible

    def add(self, evaluation: Evaluation, domain: Domain) -> None:
        self.evaluations += 1
        improved = evaluation.score is not None and (self.best is None or evaluation.score > self.best.score)
        if evaluation.score is not None:
            self.admissible += 1
        if improved:
            self.best = evaluation
            self.improvements.append((evaluation.index + 1, evaluation.score))
        if self.sample.wants(evaluation.index):
            self.sample.offer(evaluation.index, evaluation.score)


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


@dataclass
class _Allowance:
    """What a phase may still spend: until ``seconds`` after ``started`` or ``evaluations`` in
    ``result`` in all (None: no such limit), whichever comes first, but never before
    ``minimum`` evaluations (None: no floor)."""

    clock: Callable[[], float]
    started: float
    seconds: float | None
    evaluations: int | None
    result: SearchResult
    minimum: int | None = None

    def spent(self) -> bool:
        over_time = self.seconds is not None and self.clock() - self.started >= self.seconds
        over_count = self.evaluations is not None and self.result.evaluations >= self.evaluations
        below_floor = self.minimum is not None and self.result.evaluations < self.minimum
        return (over_time or over_count) and not below_floor

    def room(self, count: int) -> int:
        """``count``, or fewer where the evaluation count would be passed."""
        return count if self.evaluations is None else min(count, self.evaluations - self.result.evaluations)


def search(domain: Domain, ctx, *, seed: int, budget: float | None = None, max_evaluations: int | None = None,
           clock=time.monotonic, claim: str = "this claim", result: SearchResult | None = None,
           observe: Callable[[Evaluation], None] | None = None, confidence: float = 0.95,
           coverage_share: float = COVERAGE_SHARE, min_evaluations: int | None = None) -> SearchResult:
    """Maximise the domain's score until ``budget`` seconds or ``max_evaluations`` evaluations
    (whichever comes first; at least one of them must be given), and at least ``min_evaluations``
    (verify's plans: at least so many evaluations *and* so many seconds, whichever is more): first
    the space-filling phase (``coverage_share`` of each, its violations judged at ``confidence``:
    :mod:`.coverage`),
    then CMA-ES (its first restart from the best point the phase drew). Every evaluation is
    checked against the Domain contract (:mod:`cflbounds.verify.contract`, naming ``claim``),
    passed to ``observe`` and summarised into ``result`` (a fresh :class:`SearchResult` by
    default; give one to keep what was found before an evaluation raises), which is returned."""
    if budget is None and max_evaluations is None:
        raise ValueError("search needs a budget in seconds or a number of evaluations")
    started, result = clock(), SearchResult() if result is None else result
    result.coverage = Coverage(domain.rule, confidence)
    dimension = len(domain.parameters)
    base_population = 4 + int(3 * math.log(dimension))
    evaluate = partial(_evaluate_generation, domain, ctx, seed, claim=claim, result=result, observe=observe)
    whole = _Allowance(clock, started, budget, max_evaluations, result, min_evaluations)
    phase = _Allowance(clock, started, None if budget is None else coverage_share * budget,
                       coverage_evaluations(max_evaluations, coverage_share), result,
                       coverage_evaluations(min_evaluations, coverage_share))
    try:
        start = _cover(evaluate, UniformDraws(seed, dimension), base_population, phase, result)
        _climb(domain, evaluate, seed, base_population, whole, start, result)
    finally:  # also when an evaluation raises: the seconds searched until then
        result.seconds = clock() - started
    return result


def _cover(evaluate, draws: UniformDraws, chunk: int, phase: _Allowance, result: SearchResult):
    """The space-filling phase: uniform points in chunks (one batched evaluation each) until
    the ``phase`` is spent, counted into ``result.coverage``; returns the unit point of least
    objective (None if none was drawn), where CMA-ES's first restart starts."""
    start, least = None, math.inf
    while not phase.spent():
        units = draws.take(phase.room(chunk))
        objectives = evaluate(list(units), coverage=result.coverage)
        at = int(np.argmin(objectives))
        if objectives[at] < least:
            start, least = units[at], objectives[at]
    return start


def _climb(domain: Domain, evaluate, seed: int, base_population: int, whole: _Allowance, start,
           result: SearchResult) -> None:
    """CMA-ES with IPOP restarts until the search's allowance is spent, each run from a random
    point of its restart seed, except the first restart, from ``start`` (the best coverage point,
    when there is one). Not the first run: a best coverage point on a plateau of the objective
    held CMA-ES there (a claim tight along an edge, violated in a thin corner: started on the
    edge, 4 of 6 seeds never left it in 300 evaluations; tests/test_falsify_strength.py)."""
    import cma

    dimension = len(domain.parameters)
    minimum_steps = _minimum_steps(domain)
    runs = 0
    while not whole.spent():
        restart_seed = spawn_seeds(seed, 1, SEARCH_KEY + 1, runs)[0]
        rng = np.random.default_rng(restart_seed)
        options = {"bounds": [0.0, 1.0], "popsize": base_population * 2 ** min(runs, MAX_DOUBLINGS),
                   "seed": int(restart_seed % (2**31 - 1)) + 1, "verbose": -9,
                   "minstd": list(minimum_steps), "tolfun": 1e-9, "tolx": 1e-6}
        if dimension == 1:  # pycma needs two coordinates: a dummy one the objective ignores
            options["minstd"] = list(minimum_steps) + [0.0]
        x0 = rng.uniform(0.1, 0.9, size=max(dimension, 2))
        if start is not None and runs == 1:
            x0[:dimension] = start
        strategy = cma.CMAEvolutionStrategy(list(x0), SIGMA0, options)
        while not strategy.stop() and not whole.spent():
            candidates, objectives = strategy.ask(), []
            # in chunks of the base population, so that a large generation does not overrun the budget;
            # a generation cut short is kept in the record but not told to the strategy
            for first in range(0, len(candidates), base_population):
                if whole.spent():
                    break
                chunk = candidates[first:first + whole.room(base_population)]
                objectives += evaluate([c[:dimension] for c in chunk])
            if len(objectives) == len(candidates):
                strategy.tell(candidates, objectives)
        runs += 1
        result.restarts = runs - 1  # restarts after the first run


def _evaluate_generation(domain, ctx, seed, units, *, claim: str, result: SearchResult, observe,
                         coverage: Coverage | None = None) -> list[float]:
    """Evaluate one generation (or chunk of coverage points) as a batch (its admissible points in
    one checked call); add its evaluations to ``result`` (and to ``coverage``); return its
    objectives."""
    points = [domain.decode(unit) for unit in units]
    first = result.evaluations
    seeds = [evaluation_seed(seed, first + i) for i in range(len(points))]
    rows = [checked_constraint_rows(domain, point, claim) for point in points]
    accepted = [i for i, r in enumerate(rows) if all(bool(row["holds"]) for row in r)]
    instances = {}
    if accepted:
        evaluated = checked_evaluate(domain, [points[i] for i in accepted], [seeds[i] for i in accepted], ctx, claim)
        instances = dict(zip(accepted, evaluated))  # as many as accepted: the contract is checked
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
        evaluation = Evaluation(first + i, point, seeds[i], score, instance)
        result.add(evaluation, domain)
        if coverage is not None:
            coverage.add(domain, instance)
        if observe is not None:
            observe(evaluation)
        objectives.append(objective)
    return objectives
