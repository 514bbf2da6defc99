"""The search keeps a bounded summary, not every evaluation (DESIGN.md: falsify's memory must not
grow with its budget), and that summary is what a full record of the same search gives.

The peak memory itself is measured by ``benchmarks/bench_falsify_memory.py``, never by a timed
test; here: the summary equals the one recomputed from every evaluation observed (the record the
implementation before commit 7ee22b2 kept), and its sample stays bounded. (Until the coverage
phase this compared against that implementation's own search paths; the phase changed the path,
so the full record is now rebuilt from the same search.)"""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cflbounds.falsify.coverage import shows_violation
from cflbounds.falsify.search import TRACE_POINTS, EvenSample, search
from cflbounds.verify.context import VerifyContext
from conftest import examples
from test_falsify import TOYS

# TOY.LINE's search restarts; TOY.CONSTRAINED rejects points (never evaluated); TEXTBOOK.GD-PLANTED's best
# exceeds a negative bound (score inf); TOY.COIN is a probability claim (its coverage judged by its noise)
SEARCHES = [("TOY.LINE", 7, 700), ("TOY.CONSTRAINED", 1, 600), ("TEXTBOOK.GD-PLANTED", 3, 300), ("TOY.COIN", 2, 300)]


def full_record(domain, seen: list, coverage_points: int) -> dict:
    """The summary as a record of every evaluation gives it: best (largest score, earliest on
    ties), counts, the best-so-far steps of the score, and the coverage phase's counts."""
    admissible = [e for e in seen if e.score is not None]
    steps, best = [], -float("inf")
    for evaluation in admissible:
        if evaluation.score > best:
            best = evaluation.score
            steps.append((evaluation.index + 1, evaluation.score))
    covered = [e for e in seen[:coverage_points] if e.instance is not None and e.instance.admissible]
    return {"evaluations": len(seen), "admissible": len(admissible),
            "best": max(admissible, key=lambda e: (e.score, -e.index)) if admissible else None, "steps": steps,
            "coverage": (coverage_points, len(covered), sum(shows_violation(domain, e.instance, 0.95) for e in covered))}


@pytest.mark.parametrize("claim_id, seed, evaluations", SEARCHES)
def test_the_summary_is_what_the_full_record_gives(textbook, claim_id, seed, evaluations):
    domain = TOYS[claim_id] if claim_id in TOYS else textbook[claim_id].domain
    seen = []
    found = search(domain, VerifyContext(), seed=seed, max_evaluations=evaluations, observe=seen.append)
    record = full_record(domain, seen, found.coverage.points)
    assert found.evaluations == record["evaluations"] == evaluations
    assert found.admissible == record["admissible"] and found.best is record["best"]
    assert found.improvements == record["steps"]
    coverage = found.coverage
    assert (coverage.points, coverage.admissible, coverage.violating) == record["coverage"]
    assert coverage.points == evaluations // 5  # the first fifth of the evaluations
    sampled = {position: score for position, score in found.sample.items}
    assert sampled and all(sampled[i] == seen[i].score for i in sampled)
    if claim_id == "TOY.LINE":
        assert found.restarts >= 1
    if claim_id == "TOY.CONSTRAINED":
        assert found.rejected > 0
    if claim_id == "TEXTBOOK.GD-PLANTED":
        assert found.best.score == float("inf")


def test_a_long_search_keeps_at_most_the_trace_sample():
    found = search(TOYS["TOY.LINE"], VerifyContext(), seed=0, max_evaluations=6 * TRACE_POINTS)
    assert found.evaluations == 6 * TRACE_POINTS
    assert TRACE_POINTS // 2 <= len(found.sample.items) <= TRACE_POINTS


@given(length=st.integers(0, 5000), capacity=st.integers(2, 64))
@examples(100)
def test_an_even_sample_is_bounded_evenly_spaced_and_starts_at_the_first(length, capacity):
    sample = EvenSample(capacity)
    for position in range(length):
        sample.offer(position, -position)
    positions = [position for position, _ in sample.items]
    assert min(length, capacity // 2 + 1) <= len(positions) <= capacity
    assert positions == list(range(0, length, sample.stride))  # every stride-th, from the first to the end
    assert all(item == -position for position, item in sample.items)
