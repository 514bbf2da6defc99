""""No counterexample found" with a number (issue 25, section 4): every search starts with
independent uniform points of its unit cube, whose counts state what it rules out.

The planted claims are ``benchmarks/planted_volumes.py``'s (a violating box of known volume,
flat outside, so that only covering the space finds it; and tight claims, true with equality on
half the cube); the full table (20 seeds, the default budget's evaluations) is that script's;
here a fast version: a few fixed seeds, small evaluation counts.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from cflbounds.claims import Domain, Instance, Parameter
from cflbounds.falsify import falsify_domain
from cflbounds.falsify.coverage import COVERAGE_SHARE, Coverage, UniformDraws, coverage_evaluations, shows_violation
from cflbounds.falsify.outputs import report_entry
from cflbounds.falsify.search import search
from cflbounds.verify.context import VerifyContext
from conftest import load_benchmark
from test_falsify import TOYS


PLANTED = load_benchmark("planted_volumes")
SEEDS = range(4)
EVALUATIONS = 1500  # 300 coverage points: a 1e-2 box is missed by all of them with probability 0.99^300 = 5 %


@pytest.mark.parametrize("rule", PLANTED.RULES)
def test_a_one_percent_region_is_found_in_most_seeds(rule):
    rows = [PLANTED.run("needle", PLANTED.needle_domain(1e-2, rule), seed, evaluations=EVALUATIONS) for seed in SEEDS]
    assert sum(row["found"] for row in rows) >= 3, rows  # expected: each seed with probability >= 95 %
    assert all(row["first"] is not None for row in rows if row["found"])


@pytest.mark.parametrize("rule", PLANTED.RULES)
def test_a_tight_claim_is_never_called_violated(rule):
    """Equality on half the cube: the deterministic one is within rounding (1e-12 against rtol
    1e-9) by construction; the probability one is exactly at its allowed probability, and is called
    violated by chance at most 5 % of the time (these seeds: never)."""
    rows = [PLANTED.run("tight", PLANTED.tight_domain(rule), seed, evaluations=EVALUATIONS) for seed in SEEDS]
    assert not any(row["found"] for row in rows), rows


def test_the_planted_box_has_its_volume():
    units = np.random.default_rng(0).random((400_000, 4))
    for volume in PLANTED.VOLUMES:
        share = PLANTED.inside(units, volume).mean()
        assert abs(share - volume) < 5 * math.sqrt(volume / units.shape[0]), (volume, share)


def test_a_search_without_a_violation_states_the_rule_of_three():
    found = search(TOYS["TOY.LINE"], VerifyContext(), seed=0, max_evaluations=500)
    coverage = found.coverage
    assert coverage.points == coverage.admissible == 100 and coverage.violating == 0
    assert coverage.volume_bound == pytest.approx(1 - 0.05 ** (1 / 100)) and coverage.volume_bound < 3 / 100
    assert coverage.statement().startswith("no violating region over 0.03 of the admissible volume, at 95 %: none "
                                           "of 100 independent uniform admissible points violates")


def test_inadmissible_points_are_counted_apart_and_the_bound_is_relative_to_the_admissible_part():
    coverage = search(TOYS["TOY.CONSTRAINED"], VerifyContext(), seed=0, max_evaluations=500).coverage
    assert coverage.points == 100 and 0 < coverage.admissible < 100  # x <= 0.4 of x in [0, 1]
    assert coverage.volume_bound == pytest.approx(1 - 0.05 ** (1 / coverage.admissible))
    assert f"({100 - coverage.admissible} more drawn broke an assumption;" in coverage.statement()


def test_the_rule_of_three_holds_at_its_confidence():
    """Over 2000 seeds of 300 coverage points, a region of volume just above the bound (1e-2 >
    1 - 0.05^(1/300) = 0.00994) is missed, and the statement wrong, in 0.99^300 = 4.9 % of them:
    the draws are independent and uniform. Binomial(2000, 0.049) lies within 3.3 % to 6.5 % with
    probability 1 - 1e-4."""
    missed = 0
    for seed in range(2000):
        units = UniformDraws(seed, 4).take(300)
        missed += not PLANTED.inside(units, 1e-2).any()
    coverage = Coverage("deterministic", admissible=300, points=300)
    assert coverage.volume_bound < 1e-2 and 0.033 < missed / 2000 < 0.065


def test_the_same_seed_draws_the_same_points_however_they_are_chunked():
    whole = UniformDraws(7, 3).take(50)
    chunked = UniformDraws(7, 3)
    assert np.array_equal(np.concatenate([chunked.take(8) for _ in range(7)])[:50], whole)
    assert not np.array_equal(UniformDraws(8, 3).take(50), whole)


def test_the_phase_takes_a_fifth_of_the_evaluations_or_of_the_seconds():
    assert COVERAGE_SHARE == 0.2 and coverage_evaluations(6) == 2 and coverage_evaluations(1) == 1
    assert coverage_evaluations(None) is None
    evaluated = []

    def evaluate(points, seeds, ctx):
        evaluated.extend(points)
        return [Instance(p["x"] * p["y"], 1.0) for p in points]

    domain = Domain([Parameter("x", 0.0, 1.0), Parameter("y", 0.0, 1.0)], evaluate)
    found = search(domain, VerifyContext(), seed=0, budget=100.0, clock=lambda: 0.1 * len(evaluated))
    chunk = 4 + int(3 * math.log(2))
    assert 200 <= found.coverage.points < 200 + chunk and found.evaluations >= 1000


@pytest.mark.parametrize("rule, instance, shows", [
    ("deterministic", Instance(1.0 + 1e-10, 1.0), False),  # within rtol
    ("deterministic", Instance(1.1, 1.0), True),
    ("expectation", Instance(1.05, 1.0, samples=[1.0, 1.1, 1.0, 1.1]), False),  # its interval reaches below 0
    ("expectation", Instance(1.5, 1.0, samples=[1.5, 1.49, 1.51, 1.5]), True),
    ("probability", Instance(0.2, 0.1, exceedances=2, trials=10), False),  # 2 in 10 is no evidence against 0.1
    ("probability", Instance(0.5, 0.1, exceedances=100, trials=200), True),
])
def test_a_coverage_point_counts_as_violating_by_its_own_evidence(rule, instance, shows):
    domain = Domain([Parameter("x", 0.0, 1.0)], lambda *a: [], rule=rule)
    assert shows_violation(domain, instance, 0.95) is shows


def test_noisy_claims_state_what_one_evaluation_can_show():
    statement = falsify_domain(TOYS["TOY.NOISE"], claim_id="TOY.NOISE", seed=0, budget=None,
                               max_evaluations=200)["coverage"]["statement"]
    assert statement.startswith("no region over 0.072 of the admissible volume where one evaluation shows the bound "
                                "exceeded beyond its noise, at 95 % (a region where it shows it half the time or "
                                "more: under 0.14): none of 40 independent uniform admissible points has its 95 % "
                                "Student-t interval of mean - bound above 0")


def test_the_report_page_shows_the_coverage_the_summary_leaves_to_it():
    """The summary is one short line (outcome, ratio, point); what the coverage phase rules out
    is in the result's ``coverage`` and under the report's search figure."""
    result = falsify_domain(TOYS["TOY.LINE"], claim_id="TOY.LINE", seed=0, budget=None, max_evaluations=300)
    assert result["outcome"] == "no counterexample found"
    assert result["coverage"]["statement"] not in result["summary"] and len(result["summary"]) < 200
    entry = report_entry(result, "a toy claim")
    figure = entry["plot"][0]
    assert {"x": 60, "label": "coverage: 60 uniform points"} in figure["reference"]
    assert result["coverage"]["statement"] in figure["caption"]  # printed under the search figure
    assert figure["ylabel"] == "log(measured / allowed)"
