"""The decision rules (cflbounds/verify/rules.py): closed-form cases, planted errors each rule
must catch, and invariants.

Margins: random data here is drawn from fixed seeds and each planted error is far outside
the rule's interval (e.g. a frequency of 0.5 against an allowed 0.37 with 4000 trials: the
Clopper-Pearson interval is +-0.016 wide), so no test can flip with the draw.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from cflbounds.verify import rules
from cflbounds.verify.context import VerifyContext

from conftest import examples


# -- deterministic --------------------------------------------------------------------------
def test_a_bound_that_is_an_identity_holds_and_a_shrunk_one_is_violated():
    rng = np.random.default_rng(0)
    measured = rng.uniform(0.1, 10, size=500)
    assert rules.deterministic(measured, measured.copy()).verdict == "holds"
    planted = rules.deterministic(measured, measured * (1 - 1e-6))  # a constant wrong by one part in a million
    assert planted.verdict == "violated"
    assert planted.evidence["violations"] == 500
    assert planted.evidence["max_ratio"] == pytest.approx(1 / (1 - 1e-6))


def test_the_tolerance_is_exactly_the_stated_one():
    bound = np.array([1.0, 1.0])
    assert rules.deterministic(bound * (1 + 0.9e-9), bound, rtol=1e-9).verdict == "holds"
    assert rules.deterministic(bound * (1 + 1.1e-9), bound, rtol=1e-9).verdict == "violated"
    assert rules.deterministic([2.0], [1.0], rtol=0, atol=1.0).verdict == "holds"
    assert rules.deterministic([2.0 + 1e-12], [1.0], rtol=0, atol=1.0).verdict == "violated"


def test_an_excess_inside_the_subnormal_range_is_rounding_not_a_violation():
    """A bound that underflowed to 0 beside a measured subnormal (TEXTBOOK.GD at mu/L near 1 over 87
    steps: 1.482e-323 against 0) holds, in the rule and in the search's ratio alike; an excess of
    a normal number (1e-300) is still a violation, and so is one of a subnormal over a negative bound."""
    from cflbounds.verify.domain import UNDERFLOW, Domain, Instance, Parameter

    assert rules.deterministic([1.482e-323, UNDERFLOW], [0.0, 0.0], rtol=1e-9).verdict == "holds"
    assert rules.deterministic([1e-300], [0.0], rtol=1e-9).verdict == "violated"
    assert rules.deterministic([1e-320], [-1e-300], rtol=1e-9).verdict == "violated"
    domain = Domain([Parameter("x", 0.0, 1.0)], lambda points, seeds, ctx: [], rule="deterministic", rtol=1e-9)
    assert domain.ratio(Instance(1.482e-323, 0.0, [])) < 1
    assert domain.ratio(Instance(1e-300, 0.0, [])) > 1


def test_diverged_instances_violate_a_finite_bound_and_nan_is_refused():
    assert rules.deterministic([1.0, np.inf], [2.0, 2.0]).verdict == "violated"
    assert rules.deterministic([1.0, np.inf], [2.0, np.inf]).verdict == "holds"
    with pytest.raises(ValueError, match="NaN"):
        rules.deterministic([np.nan], [1.0])


def test_a_bound_never_below_the_trivial_one_is_vacuous():
    assert rules.deterministic([0.5, 0.2], [1.0, 2.0], trivial=1.0).verdict == "vacuous"
    assert rules.deterministic([0.5, 0.2], [0.9, 2.0], trivial=1.0).verdict == "holds"


# -- exceedance -----------------------------------------------------------------------------
def test_exceedance_finds_a_planted_probability_bound():
    # a fair coin at n = 1, t = 1/2: P(mean - 1/2 >= 1/2) = 1/2; Hoeffding's exp(-2 n t^2) = 0.607 holds,
    # a planted exp(-4 n t^2) = 0.368 is violated
    events = np.random.default_rng(1).random(4000) < 0.5
    assert rules.exceedance(events, np.exp(-0.5)).verdict == "holds"
    planted = rules.exceedance(events, np.exp(-1.0))
    assert planted.verdict == "violated"
    assert planted.evidence["worst_rate_low"] > np.exp(-1.0)


def test_exceedance_matches_scipys_exact_interval():
    decision = rules.exceedance_counts([37], [400], [0.2], confidence=0.9)
    interval = stats.binomtest(37, 400).proportion_ci(confidence_level=0.9, method="exact")
    assert decision.evidence["worst_rate_high"] == pytest.approx(interval.high, rel=1e-9)
    assert decision.evidence["worst_rate_low"] == pytest.approx(interval.low, rel=1e-9)  # one configuration: no correction


def test_a_claim_too_small_to_test_is_inconclusive_not_holds():
    # P <= 1e-6 with 100 trials and no event: the upper end is 1 - 0.025^(1/100) = 0.036
    decision = rules.exceedance_counts([0], [100], [1e-6])
    assert decision.verdict == "inconclusive"
    assert decision.evidence["testable_configurations"] == 0
    mixed = rules.exceedance_counts([0, 0], [100, 100], [1e-6, 0.5])  # holds on the testable one, says so
    assert mixed.verdict == "holds" and mixed.evidence["testable_configurations"] == 1


def test_an_allowed_probability_of_one_is_vacuous():
    assert rules.exceedance_counts([10, 90], [100, 100], [1.0, 1.0]).verdict == "vacuous"


def test_bonferroni_protects_many_configurations_at_their_limit():
    # 50 configurations whose true probability equals the allowed one: each at 95% alone would flag
    # about 2.5 % of the time; over the family the correction keeps the false alarm below 5 %
    rng = np.random.default_rng(2)
    false_alarms = sum(rules.exceedance(rng.random((50, 400)) < 0.2, 0.2).verdict == "violated" for _ in range(40))
    assert false_alarms <= 6  # binomial(40, 0.05): P(> 6) < 0.02; the uncorrected rule gives ~ 40 x 0.7


@given(k=st.integers(0, 200), extra=st.integers(0, 200), allowed=st.floats(0.0, 1.0))
@examples(200)
def test_raising_the_allowed_probability_never_turns_holds_into_violated(k, extra, allowed):
    trials = k + extra + 1
    low = rules.exceedance_counts([k], [trials], [allowed]).verdict
    high = rules.exceedance_counts([k], [trials], [min(1.0, allowed + 0.1)]).verdict
    assert not (low in ("holds", "vacuous") and high == "violated")


# -- rate -----------------------------------------------------------------------------------
def test_rate_consistent_on_the_predicted_rate_and_inconsistent_on_a_slower_one():
    x = np.logspace(1, 4, 7)
    noise = np.exp(np.random.default_rng(3).normal(0, 0.05, size=(7, 40)))
    assert rules.rate(x, 3.0 * x[:, None] ** -0.5 * noise, exponent=-0.5).verdict == "rate-consistent"
    slower = rules.rate(x, 3.0 * x[:, None] ** -0.25 * noise, exponent=-0.5)  # half the claimed decay
    assert slower.verdict == "rate-inconsistent"
    assert slower.evidence["slope_high"] < 1.0
    assert rules.rate(x[:3] / 10 + 10, noise[:3], exponent=-0.5).verdict == "inconclusive"  # < 1.5 decades


# -- ordering -------------------------------------------------------------------------------
def test_ordering_supported_contradicted_and_unresolved():
    rng = np.random.default_rng(4)
    b = rng.normal(size=30)
    assert rules.ordering(b + 1 + rng.normal(0, 0.1, 30), b).verdict == "holds"
    assert rules.ordering(b - 1 + rng.normal(0, 0.1, 30), b).verdict == "violated"
    assert rules.ordering(b + rng.normal(0, 1, 30), b, relation=">").verdict == "inconclusive"


# -- a decision becomes a verdict --------------------------------------------------------------
def test_as_verdict_carries_the_decision_and_the_context_seed():
    decision = rules.deterministic([1.0], [2.0])
    verdict = decision.as_verdict("TEXTBOOK.X", VerifyContext(seed=7), evidence={"extra": 1.0})
    assert (verdict.id, verdict.verdict, verdict.seed, verdict.trials) == ("TEXTBOOK.X", "holds", 7, 1)
    assert verdict.evidence["extra"] == 1.0 and verdict.evidence["violations"] == 0
    assert verdict.plot and verdict.plot[0]["kind"] == "rate" and verdict.plot[0]["reference"][0]["y"] == 1.0


# -- precedence of verdict words (DESIGN.md, Contracts: one verdict per claim) -----------------------
def test_precedence_orders_every_verdict_word_once():
    from cflbounds.verify.verdict import PRECEDENCE, VERDICTS

    assert sorted(PRECEDENCE) == sorted(VERDICTS) and len(set(PRECEDENCE)) == len(PRECEDENCE)


@pytest.mark.parametrize("words, winner", [
    (("vacuous", "violated"), "violated"),  # promises nothing and is exceeded: false
    (("violated", "holds"), "violated"),
    (("holds", "violated"), "violated"),
    (("inconclusive", "violated"), "violated"),
    (("violated", "error"), "error"),  # the claim's code failed: nothing was judged
    (("rate-inconsistent", "vacuous"), "rate-inconsistent"),
    (("holds",), "holds"),
])
def test_the_strongest_verdict_wins(words, winner):
    from cflbounds.verify.verdict import strongest

    assert strongest(*words) == winner


def test_strongest_refuses_what_is_not_a_verdict_word():
    from cflbounds.verify.verdict import strongest

    with pytest.raises(ValueError, match="verdict words"):
        strongest("holds", "no counterexample found")
    with pytest.raises(ValueError):
        strongest()
