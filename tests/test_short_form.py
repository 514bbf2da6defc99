"""The short form: a bound and a domain are a whole claim (issue "A theorem in twenty lines").

A claim without a designed check is judged by its domain: verify searches it at the scale's plan
and the verdict is the search's (``violated`` with its confirmed counterexample, ``holds`` with
its coverage statement, ``inconclusive`` when too few admissible points were drawn). Planted
claims of each rule: false ones are called violated, true ones tight at the domain's edge are
never called violated, over several seeds. ``rules.expectation`` against closed forms.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cflbounds.claims import Claim, Domain, Inequality, Instance, Parameter, rules
from cflbounds.cli import main
from cflbounds.falsify import MIN_COVERAGE_POINTS, SearchPlan, judge
from cflbounds.verify import VerifyContext, verify_claims

from conftest import FakeEntryPoint, examples

X = [Parameter("x", 0.0, 1.0, description="where in the domain")]


def _deterministic(bound):
    """measured = x on [0, 1]: a bound of 1 is true and tight at x = 1; below 1 it is false near 1."""
    return Domain(X, lambda points, seeds, ctx: [Instance(p["x"], bound, []) for p in points])


def _expectation(bound):
    """measured ~ N(x, 0.05^2), 32 trials an instance: E[measured] = x <= bound."""
    def evaluate(points, seeds, ctx):
        instances = []
        for point, seed in zip(points, seeds):
            samples = np.random.default_rng(seed).normal(point["x"], 0.05, 32)
            instances.append(Instance(float(samples.mean()), bound, [], samples=samples.tolist()))
        return instances
    return Domain(X, evaluate, rule="expectation")


def _probability(allowed):
    """An event of probability 0.1 x, 400 trials an instance: P(event) <= allowed."""
    def evaluate(points, seeds, ctx):
        instances = []
        for point, seed in zip(points, seeds):
            count = int(np.random.default_rng(seed).binomial(400, 0.1 * point["x"]))
            instances.append(Instance(count / 400, allowed, [], exceedances=count, trials=400))
        return instances
    return Domain(X, evaluate, rule="probability")


def _narrow(points, seeds, ctx):
    """Admissible only above x = 0.999: a coverage phase draws almost nothing it can judge."""
    return [Instance(p["x"], 1.0, [Inequality("x >= 0.999", p["x"], 0.999, ">=", "the claim").as_dict()])
            for p in points]


SHORT = {
    "SHORT.DET": Claim("SHORT.DET", "x <= 1 on [0, 1] (tight at 1).", domain=_deterministic(1.0)),
    "SHORT.DET-PLANTED": Claim("SHORT.DET-PLANTED", "x <= 0.97 on [0, 1] (false).", domain=_deterministic(0.97)),
    "SHORT.EXP": Claim("SHORT.EXP", "E[N(x, 0.05^2)] <= 1 (tight at 1).", domain=_expectation(1.0)),
    "SHORT.EXP-PLANTED": Claim("SHORT.EXP-PLANTED", "E[N(x, 0.05^2)] <= 0.9 (false).", domain=_expectation(0.9)),
    "SHORT.PROB": Claim("SHORT.PROB", "P(event) <= 0.1 (tight at 1).", domain=_probability(0.1)),
    "SHORT.PROB-PLANTED": Claim("SHORT.PROB-PLANTED", "P(event) <= 0.06 (false).", domain=_probability(0.06)),
    "SHORT.NARROW": Claim("SHORT.NARROW", "x <= 1 where x >= 0.999.", domain=Domain(X, _narrow)),
}


@pytest.fixture
def short(plugins):
    plugins(FakeEntryPoint("short-form", "short", list(SHORT.values())))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_planted_short_form_claims_are_violated_and_true_tight_ones_never_are(short, seed):
    plan = SearchPlan(evaluations=300)
    verdicts = {claim_id: judge(claim_id, scale="smoke", seed=seed, search=plan) for claim_id in SHORT}
    for rule in ("DET", "EXP", "PROB"):
        planted, true = verdicts[f"SHORT.{rule}-PLANTED"], verdicts[f"SHORT.{rule}"]
        assert planted.verdict == "violated", planted.summary
        assert planted.search["counterexample"] is not None and planted.designed == {}
        assert true.verdict == "holds", true.summary  # tight at x = 1, never exceeded beyond chance
        assert "of the admissible volume" in true.summary  # holds only with its coverage statement
        assert true.evidence["coverage_admissible"] >= MIN_COVERAGE_POINTS
    assert verdicts["SHORT.NARROW"].verdict == "inconclusive"
    assert "fewer than the 5 a statement needs" in verdicts["SHORT.NARROW"].summary


def test_verify_judges_a_short_form_claim_at_the_smoke_scale(short, tmp_path, capsys):
    """`cflbounds verify` gives the short form a real verdict with its search's figure; without a
    search (`--search 0`) it says that nothing was measured."""
    assert main(["verify", "SHORT.DET", "SHORT.DET-PLANTED", "--scale", "smoke", "--out", str(tmp_path / "run"),
                 "--json"]) == 0
    verdicts = {v["id"]: v for v in json.loads(capsys.readouterr().out)["verdicts"]}
    assert verdicts["SHORT.DET"]["verdict"] == "holds" and verdicts["SHORT.DET-PLANTED"]["verdict"] == "violated"
    assert verdicts["SHORT.DET"]["plot"][0]["xlabel"] == "evaluation"
    assert (tmp_path / "run" / "counterexamples" / "SHORT.DET-PLANTED.json").exists()
    assert (tmp_path / "run" / "report.pdf").exists()
    assert main(["verify", "SHORT.DET", "--scale", "smoke", "--out", str(tmp_path / "none"), "--search", "0",
                 "--json"]) == 0
    (alone,) = json.loads(capsys.readouterr().out)["verdicts"]
    assert alone["verdict"] == "inconclusive" and "nothing was measured" in alone["summary"]


def test_the_python_api_without_a_search_says_what_it_did_not_do(short):
    (verdict,) = verify_claims(["SHORT.DET"], VerifyContext(scale="smoke"))
    assert verdict.verdict == "inconclusive" and "cflbounds.falsify.judge" in verdict.summary


# -- rules.expectation ------------------------------------------------------------------------
def test_expectation_on_a_known_mean():
    """Samples whose mean and spread are exact: the interval is the t interval written out."""
    samples = np.array([[0.0, 1.0, 2.0, 3.0, 4.0]])  # mean 2, sd sqrt(2.5)
    from scipy import stats
    half = stats.t.ppf(0.975, 4) * np.sqrt(2.5) / np.sqrt(5)
    below = rules.expectation(samples, 2.0 + half + 1e-9)
    assert below.verdict == "holds"
    assert below.evidence["worst_excess_high"] == pytest.approx(-1e-9, abs=1e-12)
    above = rules.expectation(samples, 2.0 - half - 1e-9)
    assert above.verdict == "violated" and above.evidence["worst_excess_low"] == pytest.approx(1e-9, abs=1e-12)
    assert rules.expectation(samples, 2.0).verdict == "inconclusive"  # tight: never violated, never shown
    assert rules.expectation(samples, np.inf).verdict == "vacuous"
    assert rules.expectation([[0.0, np.inf]], 10.0).verdict == "violated"  # a diverged trial: infinite mean


def test_expectation_corrects_for_several_configurations():
    """Each configuration's excess is judged at the Bonferroni level: one whose 95 % interval is
    just above 0 is not enough among 20 configurations."""
    from scipy import stats
    samples = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    half95 = stats.t.ppf(0.975, 4) * np.sqrt(2.5) / np.sqrt(5)
    bound = 2.0 - half95 - 1e-6  # refuted at 95 % alone
    assert rules.expectation(samples, bound).verdict == "violated"
    others = np.tile(samples - 10.0, (19, 1))  # far below their bound
    both = rules.expectation(np.vstack([samples, others]), bound)
    assert both.verdict == "inconclusive" and both.evidence["bonferroni_confidence"] == pytest.approx(1 - 0.05 / 20)


def test_expectation_takes_one_bound_per_trial():
    samples = np.array([1.0, 1.1, 0.9, 1.0])
    per_trial = rules.expectation(samples, [2.0, 2.0, 2.0, 2.0])
    assert per_trial.verdict == rules.expectation(samples, 2.0).verdict == "holds"
    assert per_trial.evidence == rules.expectation(samples, 2.0).evidence


@given(st.floats(-5, 5), st.floats(0.01, 3), st.integers(0, 2**32 - 1))
@examples(50)
def test_expectation_never_refutes_a_true_bound_by_much_more_than_its_error_rate(mean, spread, seed):
    """A bound at the true mean plus three standard errors is never refuted (the lower end of the
    interval would need a 3-sigma deviation of the sample mean plus the t margin)."""
    samples = np.random.default_rng(seed).normal(mean, spread, (3, 64))
    assert rules.expectation(samples, mean + 3 * spread / 8).verdict != "violated"
