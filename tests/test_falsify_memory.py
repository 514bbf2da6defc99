"""The search keeps a bounded summary, not every evaluation (DESIGN.md: falsify's memory must not
grow with its budget), and takes the same path as the implementation that kept every evaluation.

The peak memory itself is measured by ``benchmarks/bench_falsify_memory.py``, never by a timed
test; here: the summary is what the full record gave, and its sample stays bounded."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cflbounds.falsify.search import TRACE_POINTS, EvenSample, search
from cflbounds.verify.context import VerifyContext
from conftest import examples
from test_falsify import TOYS

# The best evaluation of searches made by the implementation that kept every Evaluation (commit
# 7ee22b2, before the summary): (index, seed, point, ratio, admissible evaluations, restarts) for
# (seed, evaluations). The same code on this machine also gave the same path, evaluation by
# evaluation (points, seeds and scores). TOY.LINE's search restarts once; TOY.CONSTRAINED rejects
# 145 of its points; TEXTBOOK.GD-PLANTED's best exceeds a negative bound (ratio inf).
BEFORE = {
    ("TOY.LINE", 7, 700): (288, 4774916398226791231, {"x": 0.9999999999999999, "n": 24}, 0.9999999989999998, 700, 1),
    ("TOY.CONSTRAINED", 1, 600): (599, 6054016814507716148, {"x": 0.3999999999492934, "n": 36}, 0.7999999990985868,
                                  455, 0),
    ("TEXTBOOK.GD-PLANTED", 3, 300): (21, 1972409280402867334,
                                      {"L": 2.163258600709608, "mu_over_L": 0.8867344826106185,
                                       "eta_fraction": 0.5927413478252311, "T": 15, "d": 12,
                                       "alignment": 0.9159358450498857}, float("inf"), 300, 0),
}


@pytest.mark.parametrize("claim_id, seed, evaluations", list(BEFORE))
def test_the_search_path_and_best_point_are_those_of_the_full_record(textbook, claim_id, seed, evaluations):
    domain = TOYS[claim_id] if claim_id in TOYS else textbook[claim_id].domain
    found = search(domain, VerifyContext(), seed=seed, max_evaluations=evaluations)
    best = found.best
    index, best_seed, point, ratio, admissible, restarts = BEFORE[claim_id, seed, evaluations]
    assert (best.index, best.seed, best.point) == (index, best_seed, point)
    assert domain.ratio(best.instance) == pytest.approx(ratio, rel=1e-12)
    assert (found.evaluations, found.admissible, found.restarts) == (evaluations, admissible, restarts)


def test_the_summary_is_what_the_full_record_gives():
    """Best (largest score, earliest on ties), counts and the best-so-far steps, recomputed from
    every evaluation observed, as the record that kept them all computed them."""
    seen = []
    domain = TOYS["TOY.CONSTRAINED"]
    found = search(domain, VerifyContext(), seed=2, max_evaluations=500, observe=seen.append)
    admissible = [e for e in seen if e.score is not None]
    assert found.evaluations == len(seen) == 500 and found.admissible == len(admissible) < 500
    assert found.best is max(admissible, key=lambda e: (e.score, -e.index))
    steps, best = [], -float("inf")
    for evaluation in admissible:
        if evaluation.score > best:
            best = evaluation.score
            steps.append((evaluation.index + 1, domain.ratio(evaluation.instance)))
    assert found.improvements == steps
    sampled = {position: ratio for position, ratio in found.sample.items}
    assert sampled and all(sampled[i] == (None if seen[i].score is None else domain.ratio(seen[i].instance))
                           for i in sampled)


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
