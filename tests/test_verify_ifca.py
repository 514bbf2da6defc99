"""IFCA's checks at the smoke scale: verdict shape, determinism, and planted errors they must flag.

The checks share one module-scoped context, so the one-step experiments of T1 and T2c run
once; the planted-error tests reuse those measurements and only change the claim.
"""
import math
from numbers import Real

import numpy as np
import pandas as pd
import pytest

import cflbounds.papers.ifca.theory as ifca_checks
from cflbounds.bounds import ifca as bounds
from cflbounds.verify import PASSING, VERDICTS, Verdict, VerifyContext, assert_claim, assert_within_bound, verify
from cflbounds.papers.ifca.success import monotonicity
from cflbounds.verify.run import implemented_claims, verify_claims



SEED = 0
SLOW_CLAIMS = {"IFCA.F2"}  # a Fig. 2 sweep with its own workdir: tested on its own below
# every other implemented IFCA check runs here (they share the one-step experiments)
FAST_CLAIMS = tuple(c for c in implemented_claims() if c.startswith("IFCA.") and c not in SLOW_CLAIMS)


@pytest.fixture(scope="module")
def context():
    return VerifyContext(scale="smoke", seed=SEED, device="cpu")


@pytest.fixture(scope="module")
def verdicts(context):
    return {v.id: v for v in verify_claims(FAST_CLAIMS, context)}


# -- shape of the verdicts --------------------------------------------------------------------------
@pytest.mark.parametrize("claim_id", FAST_CLAIMS)
def test_smoke_verdict_has_required_fields(verdicts, claim_id):
    verdict = verdicts[claim_id]
    assert isinstance(verdict, Verdict)
    assert verdict.id == claim_id
    assert verdict.verdict in VERDICTS and verdict.verdict != "not-implemented"
    assert verdict.seed == SEED
    assert isinstance(verdict.trials, int) and verdict.trials >= 1
    assert 0 < verdict.confidence <= 1
    assert verdict.scale == "smoke" and verdict.statement and verdict.summary
    assert verdict.evidence, "a verdict carries its evidence"
    for key, value in verdict.evidence.items():
        assert isinstance(value, Real) and not isinstance(value, bool), f"evidence {key}={value!r} is not a number"
    data = verdict.to_dict()
    assert {"id", "verdict", "evidence", "seed", "trials", "confidence"} <= set(data)
    assert Verdict.from_dict(data).to_dict() == data


@pytest.mark.parametrize("claim_id", ["IFCA.A2", "IFCA.T1", "IFCA.T2c", "IFCA.C1"])
def test_theory_verdicts_pass_at_smoke_scale(verdicts, claim_id):
    # what the smoke scale measures today; every input is seeded, so a change here is a change of
    # conclusion, not noise. (IFCA.A3-6 is reported violated on these problems: A6's Delta
    # condition with constant 1 fails at the small m of the floor sweep; that is a finding.)
    assert_claim(verdicts[claim_id])


def test_rate_checks_report_the_fit(verdicts):
    for claim_id in ("IFCA.T1", "IFCA.T2c", "IFCA.C1"):
        evidence = verdicts[claim_id].evidence
        assert evidence["slope_low"] <= evidence["slope"] <= evidence["slope_high"]
        assert evidence["decades"] >= 1.5  # CLAIMS.md: sweep over at least 1.5 decades


def test_implemented_checks_include_the_theory_claims():
    assert {"IFCA.A2", "IFCA.T1", "IFCA.T2c", "IFCA.C1"} <= set(FAST_CLAIMS)


def test_checks_save_their_tables(context, verdicts):
    assert {"ifca_one_step", "ifca_one_step_floor", "ifca_convergence"} <= set(context.tables)
    assert any("assumption" in name for name in context.tables)  # the A2 rows (name varies by version)
    assert all(isinstance(t, pd.DataFrame) and len(t) for t in context.tables.values())


def test_same_seed_gives_identical_verdicts(verdicts):
    """A fresh context (nothing cached) reproduces every verdict field except the wall time."""
    again = verify_claims(FAST_CLAIMS, VerifyContext(scale="smoke", seed=SEED, device="cpu"))
    for verdict in again:
        first, second = verdicts[verdict.id].to_dict(), verdict.to_dict()
        first.pop("seconds"), second.pop("seconds")
        assert first == second, verdict.id


def test_verify_function_matches_context_run(verdicts):
    verdict = verify("IFCA.A2", scale="smoke", seed=SEED, device="cpu")
    expected = verdicts["IFCA.A2"].to_dict()
    got = verdict.to_dict()
    expected.pop("seconds"), got.pop("seconds")
    assert got == expected


def test_verify_validates_its_arguments():
    with pytest.raises(ValueError, match="'claim_id'"):
        verify("IFCA.NOPE", scale="smoke")
    with pytest.raises(ValueError, match="'scale'"):
        verify("IFCA.A2", scale="huge")
    with pytest.raises(ValueError, match="'seed'"):
        verify("IFCA.A2", scale="smoke", seed=-1)


def test_unimplemented_claim_is_reported_not_faked(context, monkeypatch):
    from cflbounds.verify import registry

    monkeypatch.setitem(registry.CLAIMS, "TEST.X", registry.Claim("TEST.X", "a claim without a check"))
    (verdict,) = verify_claims(["TEST.X"], context)
    assert verdict.verdict == "not-implemented" and verdict.trials == 0


def test_claim_patterns_expand_to_implemented_claims(monkeypatch):
    from cflbounds.verify import registry
    from cflbounds.verify.run import expand_claim_ids

    monkeypatch.setitem(registry.CLAIMS, "IFCA.ZZ", registry.Claim("IFCA.ZZ", "a claim without a check"))
    expanded = expand_claim_ids(["IFCA.*"])
    assert expanded == [c for c in implemented_claims() if c.startswith("IFCA.")] and "IFCA.ZZ" not in expanded
    assert expand_claim_ids(["IFCA.T1", "IFCA.T*", "IFCA.T1"]) == ["IFCA.T1", "IFCA.T2c", "IFCA.TAB1"]
    assert expand_claim_ids(["IFCA.ZZ"]) == ["IFCA.ZZ"]  # an explicit ID is kept even without a check
    with pytest.raises(ValueError, match="matches no implemented claim"):
        expand_claim_ids(["NOPE.*"])
    with pytest.raises(ValueError, match="Unknown claim ID"):
        expand_claim_ids(["IFCA.T3"])


# -- planted errors ----------------------------------------------------------------------------------
def test_planted_wrong_contraction_factor_is_violated(context, verdicts, monkeypatch):
    """Claim half the true factor 1 - p lambda/(8L) (0.47 instead of 0.94): the measured one-step
    factors at gamma = 1/L sit near 0.5, so nearly every trial exceeds the planted claim."""
    true_factor = bounds.theorem2_contraction

    monkeypatch.setattr(ifca_checks.bounds, "theorem2_contraction", lambda p, lam, L: 0.5 * true_factor(p, lam, L))
    (verdict,) = verify_claims(["IFCA.T2c"], context)
    assert verdict.verdict == "violated"
    assert verdict.evidence["claimed_factor"] == pytest.approx(0.5 * (1 - 0.5 * 2 / 16))
    assert verdict.evidence["violation_rate_low"] > verdict.evidence["violation_level"]
    assert verdicts["IFCA.T2c"].verdict in PASSING  # the same measurements pass the true claim


def test_planted_wrong_rate_is_rate_inconsistent(context, monkeypatch):
    """Replace the statistical term g = (sigma/p) sqrt(d/(mn')) by g^2: the measured error falls
    like g, i.e. like (g^2)^(1/2), so the fitted slope is ~0.5 and its interval stays below 1."""
    true_term = bounds.statistical_term
    monkeypatch.setattr(ifca_checks.bounds, "statistical_term", lambda *args: true_term(*args) ** 2)
    (verdict,) = verify_claims(["IFCA.C1"], context)
    assert verdict.verdict == "rate-inconsistent"
    assert verdict.evidence["slope_high"] < 1.0
    assert verdict.evidence["implied_constant_last"] > verdict.evidence["implied_constant_first"]


def test_a1_is_an_equality_up_to_rounding_and_states_its_tolerance(verdicts):
    """T1's runs start at Delta/4 exactly: A1's row is within its stated tolerance of equality."""
    (row,) = verdicts["IFCA.A1"].assumptions
    assert verdicts["IFCA.A1"].verdict == "holds" and row["holds"]
    assert 0 < row["tolerance"] < 1e-11 * row["rhs"] and abs(row["slack"]) <= row["tolerance"]


def test_planted_start_beyond_delta_over_4_violates_a1(context, monkeypatch):
    """Initial distances a relative 1e-9 beyond Delta/4 (about 1000 times the tolerance): violated."""
    table = ifca_checks._contraction_table(context)
    monkeypatch.setattr(ifca_checks, "_contraction_table", lambda ctx: table.assign(before=table["before"] * (1 + 1e-9)))
    (verdict,) = verify_claims(["IFCA.A1"], context)
    assert verdict.verdict == "violated" and verdict.assumptions[0]["slack"] < -verdict.assumptions[0]["tolerance"]


# -- assert_within_bound / assert_claim -----------------------------------------------------------
def _theorem1_bound(table):
    """Theorem 1 with c2 = c3 = 1 for every measured one-step row (vectorised by hand)."""
    cfg = ifca_checks.ONE_STEP["smoke"]
    floor = bounds.statistical_term(cfg["sigma"], ifca_checks.P, cfg["d"], cfg["m"], cfg["n_prime"])
    return 0.5 * table["before"] + floor + bounds.exponential_term(table["separation"], cfg["sigma"], cfg["n_prime"])


def test_assert_within_bound_on_measurements(context, verdicts):
    table = context.tables["ifca_one_step"]
    rows = table[np.isclose(table["step_size"], ifca_checks.C1_STEP / ifca_checks.P)]
    bound = _theorem1_bound(rows)
    # T1 measured no factor above 1/2 in its 160 trials, so the bound (with its floor) holds everywhere
    exceed, (low, high) = assert_within_bound(rows["after"], bound, failure_probability=1 / 40)
    assert exceed == 0 and low == 0 and high < 1 / 40
    # halve it: 0.25 ||theta - theta*|| + ... is below most measured steps (median factor ~0.18, but a
    # fixed fraction of trials exceeds 0.25 by far more than the floor)
    with pytest.raises(AssertionError, match="exceed the bound"):
        assert_within_bound(rows["after"], bound / 2, failure_probability=1 / 40)
    with pytest.raises(AssertionError, match="exceed the bound"):
        assert_within_bound(rows["after"], bound / 2)


def test_assert_within_bound_semantics():
    measured = np.linspace(0.0, 1.0, 101)
    assert assert_within_bound(measured, 1.0)[0] == 0
    with pytest.raises(AssertionError, match="1/101 measurements exceed the bound"):
        assert_within_bound(measured, 0.995)
    # one exceedance in 101 at level 0.5 passes (upper CP end ~0.054); at level 0.01 it cannot
    assert assert_within_bound(measured, 0.995, failure_probability=0.5)[0] == 1
    with pytest.raises(AssertionError):
        assert_within_bound(measured, 0.995, failure_probability=0.01)
    # too few samples to ever certify the level: the message says how many are needed
    # (N >= log(0.025) / log(0.99) = 367.04, so 368)
    with pytest.raises(AssertionError, match="368 samples are needed"):
        assert_within_bound(np.zeros(10), 1.0, failure_probability=0.01)
    with pytest.raises(AssertionError, match="finite"):
        assert_within_bound([0.1, np.nan], 1.0)


def _verdict(outcome, summary="planted summary 123"):
    return Verdict("IFCA.X", outcome, {"rate": 0.5, "count": 3}, seed=7, trials=10, confidence=0.95,
                   summary=summary, scale="smoke")


@pytest.mark.parametrize("outcome", [v for v in VERDICTS if v not in PASSING])
def test_assert_claim_fails_with_summary(outcome):
    with pytest.raises(AssertionError) as error:
        assert_claim(_verdict(outcome))
    message = str(error.value)
    assert "planted summary 123" in message and outcome in message and "seed 7" in message
    assert "rate=0.5" in message


@pytest.mark.parametrize("outcome", PASSING)
def test_assert_claim_passes(outcome):
    verdict = _verdict(outcome)
    assert assert_claim(verdict) is verdict


def test_assert_claim_allowed_override():
    assert_claim(_verdict("vacuous"), allowed=("holds", "vacuous"))
    with pytest.raises(AssertionError):
        assert_claim(_verdict("holds"), allowed=("vacuous",))


# -- monotonicity on hand-made outcome tables ---------------------------------------------------
def _outcomes(axis, values, successes, trials=30):
    base = {"variant": "official", "panel": "a", "k": 2, "m": 100, "n": 100, "d": 1000, "r": 0.5, "sigma": 0.1}
    rows = []
    for value, wins in zip(values, successes):
        rows += [{**base, axis: value, "trial": t, "success": t < wins} for t in range(trials)]
    return pd.DataFrame(rows)


def test_monotonicity_clear_increase_is_confirmed():
    result = monotonicity(_outcomes("r", [0.1, 0.5, 1.0], [2, 15, 28]))
    assert result == {"r": {"lines": 1, "confirmed_lines": 1, "reversals": 0, "status": "confirmed"}}


def test_monotonicity_claimed_decrease_in_sigma_is_confirmed():
    # sigma's claimed direction is downward: success falling with sigma confirms it
    assert monotonicity(_outcomes("sigma", [0.0, 0.2, 0.4], [29, 15, 1]))["sigma"]["status"] == "confirmed"
    assert monotonicity(_outcomes("sigma", [0.0, 0.4], [1, 29]))["sigma"]["status"] == "reversed"


def test_monotonicity_significant_reversal_is_reversed():
    # success falls from 28/30 to 2/30 as r grows: Fisher p ~ 1e-11 for the reversal
    result = monotonicity(_outcomes("r", [0.1, 1.0], [28, 2]))
    assert result["r"]["status"] == "reversed" and result["r"]["reversals"] == 1


def test_monotonicity_reversal_wins_over_confirmation():
    # overall increase 2 -> 28, but a significant dip in the middle (29 -> 3) is a reversal
    result = monotonicity(_outcomes("m", [50, 100, 200, 400], [2, 29, 3, 28]))
    assert result["m"]["status"] == "reversed" and result["m"]["confirmed_lines"] == 1


def test_monotonicity_flat_table_is_flat():
    result = monotonicity(_outcomes("n", [50, 100, 200], [15, 15, 15]))
    assert result["n"] == {"lines": 1, "confirmed_lines": 0, "reversals": 0, "status": "flat"}
    # a small, non-significant move is flat too (14 -> 17 of 30: Fisher p ~0.3)
    assert monotonicity(_outcomes("n", [50, 200], [14, 17]))["n"]["status"] == "flat"


def test_monotonicity_skips_unswept_axes():
    assert set(monotonicity(_outcomes("r", [0.1, 1.0], [2, 28]))) == {"r"}


# -- IFCA.F2 at smoke scale (a reduced Fig. 2 sweep: ~2 s with one torch thread) -------------------
def test_f2_smoke_verdict(tmp_path):
    context = VerifyContext(scale="smoke", seed=SEED, device="cpu", workdir=tmp_path)
    (verdict,) = verify_claims(["IFCA.F2"], context)
    assert verdict.verdict in VERDICTS and verdict.trials > 0
    assert all(isinstance(v, Real) for v in verdict.evidence.values())
    assert {"ifca_fig2_runs", "ifca_fig2_trials"} <= set(context.tables)
    assert verdict.evidence["trials"] == len(context.tables["ifca_fig2_trials"])
    assert not math.isnan(verdict.evidence["success_rate_overall"])
