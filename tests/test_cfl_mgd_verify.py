"""CFL-MGD's checks at the smoke scale: verdict shape, the conclusions they reach today,
the PEP references in the evidence, and planted errors they must flag.

All checks share one module-scoped context (and a private PEP cache), so each experiment
runs once; planted-error tests reuse the measurements and only change the claim.
"""
from __future__ import annotations

import json
from numbers import Real

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

import cflbounds.papers.cfl_mgd.checks as mgd_checks
import cflbounds.papers.cfl_mgd.a38 as a38_checks
from cflbounds.bounds import cfl_mgd as bounds
from cflbounds.cli import main
from cflbounds.verify import VERDICTS, Verdict, VerifyContext
from cflbounds.papers.cfl_mgd.misassignment import judge_lemma1
from cflbounds.papers.cfl_mgd.speed import GRIDS, MIN_ROUNDS, QUANTILES, _compare, judge_speed, rounds_to_target
from cflbounds.verify.run import verify_claims

from conftest import examples

SEED = 0
CLAIMS = ("MGD.A1-5", "MGD.L1", "MGD.L2", "MGD.T1", "MGD.MA", "MGD.SPEED")


@pytest.fixture(scope="module")
def pep_cache(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CFLBOUNDS_CACHE", str(tmp_path_factory.mktemp("pep-cache")))
        yield


@pytest.fixture(scope="module")
def context(pep_cache):
    return VerifyContext(scale="smoke", seed=SEED, device="cpu",
                         package="cflbounds")  # the checks called directly share the papers' experiments


@pytest.fixture(scope="module")
def verdicts(context):
    return {v.id: v for v in verify_claims(CLAIMS, context)}


@pytest.mark.parametrize("claim_id", CLAIMS)
def test_smoke_verdict_has_required_fields(verdicts, claim_id):
    verdict = verdicts[claim_id]
    assert isinstance(verdict, Verdict) and verdict.id == claim_id
    assert verdict.verdict in VERDICTS and verdict.verdict != "not-implemented"
    assert verdict.seed == SEED and verdict.trials >= 1 and 0 < verdict.confidence <= 1
    assert verdict.scale == "smoke" and verdict.statement and verdict.summary and verdict.plot
    for key, value in verdict.evidence.items():
        assert isinstance(value, Real) and not isinstance(value, bool), f"evidence {key}={value!r} is not a number"
    data = verdict.to_dict()
    assert Verdict.from_dict(data).to_dict() == data
    json.dumps(data)


def test_what_the_smoke_scale_concludes(verdicts):
    # every input is seeded, so a change here is a change of conclusion, not noise
    found = {claim_id: verdicts[claim_id].verdict for claim_id in CLAIMS}
    assert found == {"MGD.A1-5": "holds", "MGD.L1": "holds", "MGD.L2": "vacuous", "MGD.T1": "unsatisfiable",
                     "MGD.MA": "vacuous", "MGD.SPEED": "holds"}


def test_pep_factors_sit_beside_the_papers_and_the_measured_ones(verdicts):
    evidence = verdicts["MGD.L2"].evidence
    mu, L, l = 1.0, 4.0, 0.5  # the quadratics of the L2 check
    assert evidence["quadratics_beta0_paper_factor"] == pytest.approx(1 - l * mu / (8 * L))
    step = l / L  # eta = 1/L on a cluster holding a fraction l of the clients
    assert evidence["quadratics_beta0_pep_one_step"] == pytest.approx(max(abs(1 - step * mu), abs(1 - step * L)),
                                                                      rel=1e-7)  # certified to 1e-6, ~1e-9 here
    # the precision the tight factors were certified to sits beside them (F_{2,2}: closed form, exact)
    for beta in (0, 0.5, 0.9):
        assert 0 < evidence[f"quadratics_beta{beta:g}_pep_duality_gap_max"] <= 1e-6
        assert 0 <= evidence[f"quadratics_beta{beta:g}_pep_primal_residual_max"] <= 1e-5
        assert evidence[f"mlr_beta{beta:g}_pep_duality_gap_max"] == 0.0
    # IFCA's step (beta = 0) is tighter than the paper's factor; heavy ball from the state ball is not a contraction
    assert evidence["quadratics_beta0_pep_one_step"] < evidence["quadratics_beta0_paper_factor"]
    assert evidence["quadratics_beta0.9_pep_one_step"] > 1
    # the measured factors of the beta = 0 runs lie under IFCA's tight worst case (quadratics: the empirical
    # cluster objective has the same Hessian, only its minimiser moves with the samples)
    assert evidence["quadratics_beta0_measured_factor_q95"] <= evidence["quadratics_beta0_pep_one_step"] + 0.05
    assert "quadratics_beta0.5_measured_factor_median" in evidence
    assert evidence["share_of_steps_with_bound_at_least_distance"] == 1.0


def test_l2_rates_from_rest_are_not_an_artefact_of_one_horizon(verdicts):
    # MLR has mu = L: at beta = 0.5 its tight worst case from rest is exactly 0 at t = 10 (and 6), so one
    # horizon's root read 0.0; the rate over t <= 10 is the largest root, with the spectral radius beside it
    evidence = verdicts["MGD.L2"].evidence
    for family in ("mlr", "quadratics"):
        for beta in (0, 0.5, 0.9):
            name = f"{family}_beta{beta:g}"
            rate = evidence[f"{name}_pep_rate_from_rest_max_t_le_10"]
            radius = evidence[f"{name}_spectral_radius_quadratics"]
            assert rate > 0 and 1 <= evidence[f"{name}_pep_rate_from_rest_attained_at_t"] <= 10
            assert radius > 0 and rate >= radius - 0.1  # the asymptotic rate is reached or nearly so by t = 10
    assert evidence["mlr_beta0.5_pep_rate_from_rest_max_t_le_10"] == pytest.approx(np.sqrt(0.5))
    assert evidence["mlr_beta0.5_spectral_radius_quadratics"] == pytest.approx(np.sqrt(0.5))


def test_l2_reports_the_derivations_drift_term_beside_the_printed_one(verdicts):
    evidence = verdicts["MGD.L2"].evidence
    for family in ("mlr", "quadratics"):
        for beta in (0, 0.5, 0.9):
            name = f"{family}_beta{beta:g}"
            # rho0 loses (1 - beta) c4 l = (1 - beta)/8 when the drift term carries beta (A22, A26)
            assert evidence[f"{name}_rho0"] - evidence[f"{name}_rho0_derivation"] == pytest.approx((1 - beta) / 8)
    assert evidence["derivation_violations"] >= evidence["violations"]  # a smaller bound is exceeded at least as often
    assert evidence["derivation_decrease_needs_beta_below_max"] == pytest.approx(0.25)
    assert "as the proof derives it (beta c4 l" in verdicts["MGD.L2"].summary


def test_t1_reports_a38_and_the_rate_fit(verdicts):
    evidence = verdicts["MGD.T1"].evidence
    assert evidence["a38_satisfiable_families"] == 0
    assert evidence["a38_separation_needed_first_family"] == pytest.approx(8 * 4.0**1.5)
    assert evidence["beta0.5_decades"] >= 1.5
    assert evidence["beta0.5_slope_low"] <= evidence["beta0.5_slope"] <= evidence["beta0.5_slope_high"]
    assert evidence["rho_over_initial_radius_min"] > 1  # rho is vacuous
    # the claimed term g >= its leading term 1/sqrt(mn'): the fit against the leading term also counts
    assert evidence["beta0.5_leading_slope_low"] <= 1 <= evidence["beta0.5_leading_slope_high"]
    assert evidence["rate_consistent"] == 1.0


def test_t1_says_which_fit_decided_the_rate(verdicts):
    evidence, summary = verdicts["MGD.T1"].evidence, verdicts["MGD.T1"].summary
    claimed = evidence["beta0.5_slope_low"] <= 1 <= evidence["beta0.5_slope_high"]
    leading = evidence["beta0.5_leading_slope_low"] <= 1 <= evidence["beta0.5_leading_slope_high"]
    assert evidence["rate_consistent_claimed_term"] == float(claimed)
    assert evidence["rate_consistent_leading_term"] == float(leading)
    assert evidence["rate_decided_by_leading_term"] == float(leading and not claimed)
    assert ("decided by the claimed term" if claimed else "decided by its leading term") in summary
    assert f"{evidence['beta0.5_slope']:.2f} [{evidence['beta0.5_slope_low']:.2f}" in summary
    assert f"{evidence['beta0.5_leading_slope']:.2f} [{evidence['beta0.5_leading_slope_low']:.2f}" in summary


def test_t1_reports_a38_under_both_readings_of_the_drift_term(verdicts):
    evidence, summary = verdicts["MGD.T1"].evidence, verdicts["MGD.T1"].summary
    for beta in (0, 0.5):  # as printed (c4 l): nowhere, for any beta
        assert evidence[f"a38_printed_beta{beta:g}_satisfiable_on_some_admissible_problem"] == 0.0
        assert evidence[f"a38_printed_beta{beta:g}_satisfiable_families"] == 0
        assert np.isinf(evidence[f"a38_printed_beta{beta:g}_first_family_smallest_m_n_prime"])
    # as derived (beta c4 l): for IFCA (beta = 0) on every family, with the smallest m n' found; not for beta = 0.5,
    # which exceeds the limit C/(16 c4) = 1/4 of every admissible problem
    assert evidence["a38_derivation_beta0_satisfiable_on_some_admissible_problem"] == 1.0
    assert evidence["a38_derivation_beta0_satisfiable_families"] == evidence["a38_families"]
    m, n_prime = (evidence[f"a38_derivation_beta0_first_family_best_{name}"] for name in ("m", "n_prime"))
    assert evidence["a38_derivation_beta0_first_family_smallest_m_n_prime"] == pytest.approx(m * n_prime)
    assert evidence["a38_derivation_beta0.5_satisfiable_on_some_admissible_problem"] == 0.0
    assert evidence["a38_derivation_beta_limit_on_every_problem"] == pytest.approx(0.25)
    assert evidence["a38_derivation_beta_limit_first_family"] == pytest.approx(1 / 64)  # (mu/L)^(3/2) Delta/8
    assert "as printed" in summary and "as the proof derives it" in summary
    assert f"m = {m:.0f}" in summary and "beta = 0.5: no n', m" in summary
    assert "read with constant 1" in summary and "A38 needs it above 16 c4 (L/mu)^(3/2) >= 4" in summary


def test_t1_unsatisfiable_rests_on_every_admissible_problem_not_on_the_families(verdicts):
    evidence = verdicts["MGD.T1"].evidence
    assert evidence["a38_satisfiable_on_some_admissible_problem"] == 0.0
    assert evidence["a38_a4_constant_needed"] == pytest.approx(4.0)  # 16 c4 with A27's c4 = 1/4
    assert "no admissible problem" in verdicts["MGD.T1"].summary


def test_a38_on_every_problem_decides_at_the_extreme_problem():
    # A38 needs c4 < (mu/L)^(3/2) Delta/32 <= 2C/32: with A27's c4 = 1/4 it needs A4's constant C > 4
    assert a38_checks.a38_on_every_problem().derived["satisfiable"] == 0.0
    assert a38_checks.a38_on_every_problem(C=3.9).derived["satisfiable"] == 0.0
    assert a38_checks.a38_on_every_problem(C=4.1).derived["satisfiable"] == 1.0
    assert a38_checks.a38_on_every_problem(c4=0.06).derived["satisfiable"] == 1.0  # 0.06 < 1/16
    # in the derivation's reading beta c4 < C/16: beta < 1/4 with C = 1, beta < 1/2 with C = 2
    derived = lambda **kwargs: a38_checks.a38_on_every_problem(c4_term="derivation", **kwargs).derived["satisfiable"]
    assert derived(beta=0.24) == 1.0 and derived(beta=0.26) == 0.0
    assert derived(beta=0.49, C=2.0) == 1.0 and derived(beta=0.51, C=2.0) == 0.0


@examples(60)
@given(st.floats(1.0, 1e3), st.floats(1e-3, 1.0), st.floats(1e-3, 1.0), st.floats(0.0, 1.0),
       st.integers(2, 20), st.floats(0.0, 0.99))
def test_a38_fails_on_random_admissible_problems(condition, spread, l, norm, P, beta):
    # an independent sweep: any L/mu >= 1, any centers of norm <= 1 (Delta <= 2 norm), any l, P, beta
    delta = 2 * norm * spread + 1e-9
    result = bounds.a38_satisfiability(v=1.0, sigma=1.0, L=condition, mu=1.0, l=l, P=P, delta=delta, beta=beta,
                                       max_center_norm=norm, points=2)
    assert result.derived["satisfiable"] == 0.0


def test_t1_is_not_unsatisfiable_when_a38_can_hold_somewhere(context, verdicts, monkeypatch):
    # planted: a c4 small enough for A38 on some admissible problem; the families (Delta = 1 < 32 c4 (L/mu)^1.5
    # for c4 = 0.01 and L/mu = 4 needs Delta > 2.56) still fail it, which alone must not make it unsatisfiable
    original = a38_checks.a38_on_every_problem
    monkeypatch.setattr(a38_checks, "a38_on_every_problem", lambda **kwargs: original(**{**kwargs, "c4": 0.01}))
    verdict = mgd_checks.check_t1(context)
    assert verdict.verdict != "unsatisfiable" and verdict.evidence["a38_satisfiable_on_some_admissible_problem"] == 1.0
    assert "on some admissible problems" in verdict.summary


def test_ma_checks_eq16_one_step_at_a_time(verdicts):
    evidence = verdicts["MGD.MA"].evidence
    assert evidence["one_steps_checked"] == evidence["trials"] * (64 - 2)
    assert evidence["one_step_violations"] == 0


def test_planted_one_step_violation_of_eq16_is_flagged(context, verdicts, monkeypatch):
    # one measured error pushed above the recursion's right side (an increase by 10x) must be caught
    key = ("cflbounds", ("mgd-ma", "smoke"))  # shared experiments are keyed by the declaring package
    family, errors = context.cache[key]
    planted = errors.copy()
    planted[0, 30] = 10 * planted[0, 29]
    monkeypatch.setitem(context.cache, key, (family, planted))
    verdict = mgd_checks.check_ma(context)
    assert verdict.verdict == "violated" and verdict.evidence["one_step_violations"] >= 1


def test_checks_save_their_tables(context, verdicts):
    assert {"mgd_misassignment", "mgd_one_step", "mgd_final_error", "mgd_model_averaging", "mgd_speed",
            "mgd_assumptions_a1_5"} <= set(context.tables)


# -- planted errors ------------------------------------------------------------------------------
def test_planted_small_lemma1_constant_is_violated_and_the_smallest_allowed_is_reported(context, verdicts):
    table = context.cache[("cflbounds", ("mgd-l1", "smoke"))]
    verdict, evidence, _ = judge_lemma1(table)
    assert verdict == "holds"
    allowed = evidence["smallest_constant_allowed"]
    assert 0 < allowed < bounds.C1_LEMMA1
    assert evidence["c1_over_smallest_allowed"] == pytest.approx(bounds.C1_LEMMA1 / allowed)
    planted, planted_evidence, cells = judge_lemma1(table, c1=allowed / 2)
    assert planted == "violated" and planted_evidence["cells_violated"] >= 1
    assert (cells.loc[cells["cell_verdict"] == "violated", "ci_low"]
            > cells.loc[cells["cell_verdict"] == "violated", "bound"]).all()
    # just above the smallest allowed constant nothing is violated
    assert judge_lemma1(table, c1=allowed * 1.001)[1]["cells_violated"] == 0


def test_planted_lemma2_without_rho0_is_violated(context, verdicts, monkeypatch):
    # the contraction factor alone (rho0 = 0) fails for heavy ball: the measured one-step factor exceeds it
    shared = {key: value for key, value in context.cache.items() if key[1][0] == "mgd-one-step"}
    for key, (table, rho0) in shared.items():
        planted = table.assign(rho0=0.0, bound=lambda t: bounds.contraction_factor(0.5, 1.0, 4.0) * t["before"])
        monkeypatch.setitem(context.cache, key, (planted, rho0))
    assert mgd_checks.check_l2(context).verdict == "violated"


def test_planted_shrinking_recursion_is_violated(context, verdicts, monkeypatch):
    def shrinking(errors, *, iterations, beta, **kwargs):  # eq. (16) with a factor 0.5 instead of 1 + eta L/|C_p|
        values = list(np.broadcast_arrays(*errors))
        for _ in range(iterations - 2):
            values.append(0.5 * values[-1] + beta * (1 + beta) * values[-2] ** 2 * values[-3] ** 2)
        return np.stack(values, axis=-1)

    monkeypatch.setattr(mgd_checks.bounds, "model_averaging_recursion", shrinking)
    assert mgd_checks.check_ma(context).verdict == "violated"


# -- SPEED's pieces -------------------------------------------------------------------------------
def test_rounds_to_target():
    losses = np.array([[1.0, 0.5, 0.04, 0.01], [1.0, 0.9, 0.8, 0.7], [2.0, 0.05, 0.2, 0.01]])
    np.testing.assert_array_equal(rounds_to_target(losses, 0.05), [2, 4, 1])


def _speed_table(ifca_rounds, mgd_rounds):
    rows = []
    for split in ("tuning", "evaluation"):
        for trial, (a, b) in enumerate(zip(ifca_rounds, mgd_rounds)):
            rows += [{"split": split, "trial": trial, "step": 1.0, "beta": 0.0, "rounds": a, "reached": True},
                     {"split": split, "trial": trial, "step": 1.0, "beta": 0.5, "rounds": b, "reached": True}]
    return pd.DataFrame(rows)


@pytest.mark.parametrize("ifca_rounds, mgd_rounds, outcome", [
    ([10, 12, 9, 11] * 5, [6, 7, 6, 8] * 5, "faster"),
    ([3] * 20, [3] * 20, "not faster"),
    ([5, 6, 7, 8] * 5, [9, 9, 9, 9] * 5, "not faster"),
    ([5, 9, 5, 9] * 5, [7, 7, 7, 7] * 5, "undecided"),
])
def test_speed_comparison_outcomes(ifca_rounds, mgd_rounds, outcome):
    assert _compare(_speed_table(ifca_rounds, mgd_rounds), seed=0)["outcome"] == outcome


@pytest.mark.parametrize("rounds", [1, 2])
def test_speed_problems_ifca_solves_in_under_three_rounds_are_degenerate(rounds):
    # heavy ball's first round from rest is a gradient step: momentum cannot beat one or two IFCA rounds
    assert MIN_ROUNDS == 3
    result = _compare(_speed_table([rounds] * 20, [rounds] * 20), seed=0)
    assert result["outcome"] == "degenerate" and result["informative"] == 0.0 and result["ties"] == 20


def test_speed_tuning_breaks_median_ties_by_the_mean():
    table = _speed_table([4] * 20, [3] * 20)
    worse = table[table["beta"] == 0.5].assign(beta=0.3, rounds=[3] * 19 + [40] + [3] * 19 + [40])
    table = pd.concat([table, worse], ignore_index=True)  # beta 0.3: same median 3, larger mean
    assert _compare(table, seed=0)["mgd_beta"] == 0.5


def test_speed_flags_a_choice_at_the_edge_of_the_grid():
    table = _speed_table([9] * 20, [6] * 20)
    slower = table.assign(step=0.5, rounds=table["rounds"] + 3)  # a smaller step, slower for both methods
    result = _compare(pd.concat([table, slower], ignore_index=True), seed=0)
    assert result["ifca_step"] == result["mgd_step"] == 1.0  # the largest step of the grid {0.5, 1}
    assert result["ifca_step_at_grid_edge"] == result["mgd_step_at_grid_edge"] == 1.0
    middle = pd.concat([table, slower, table.assign(step=2.0, rounds=table["rounds"] + 5)], ignore_index=True)
    assert _compare(middle, seed=0)["ifca_step_at_grid_edge"] == 0.0  # 1 inside {0.5, 1, 2}


def test_speed_reports_the_distribution_over_trials():
    result = _compare(_speed_table(list(range(1, 21)), [2] * 20), seed=0)
    ifca = [result[f"ifca_rounds_q{q}"] for q in (10, 25, 50, 75, 90)]
    assert ifca == pytest.approx(np.quantile(np.arange(1, 21), QUANTILES))
    assert result["ifca_rounds_q50"] == result["ifca_rounds_median"] and result["mgd_rounds_q90"] == 2.0


def test_speed_at_smoke_chooses_steps_inside_the_grid_and_plots_quantiles(verdicts):
    verdict = verdicts["MGD.SPEED"]
    evidence, summary = verdict.evidence, verdict.summary
    names = ("quadratics_kappa16", "quadratics_kappa100", "logistic", "mlr")
    assert evidence["chosen_steps_at_grid_edge"] == 0
    grid = GRIDS["smoke"]["steps"]
    for name in names:
        for method in ("ifca", "mgd"):
            assert grid[0] < evidence[f"{name}_{method}_step"] < grid[-1]
            quantiles = [evidence[f"{name}_{method}_rounds_q{q}"] for q in (10, 25, 50, 75, 90)]
            assert quantiles == sorted(quantiles)
    bars = verdict.plot[0]["series"]
    assert [s["low"] for s in bars] == [[evidence[f"{n}_{m}_rounds_q10"] for n in names] for m in ("ifca", "mgd")]
    assert [s["high"] for s in bars] == [[evidence[f"{n}_{m}_rounds_q90"] for n in names] for m in ("ifca", "mgd")]
    # MLR is not judged (degenerate), but its measured difference is in the summary
    mlr = summary[summary.index("mlr:"):]
    assert f"mean difference {evidence['mlr_difference_mean']:.2f}" in mlr and "measured: " in mlr


@pytest.mark.parametrize("outcomes, verdict", [
    (["faster", "faster", "degenerate", "degenerate"], "holds"),
    (["faster", "not faster", "degenerate"], "violated"),
    (["faster", "undecided"], "inconclusive"),
    (["degenerate", "degenerate"], "inconclusive"),  # no problem informs the claim
])
def test_speed_verdict_judges_only_informative_problems(outcomes, verdict):
    assert judge_speed(outcomes) == verdict


# -- CLI ----------------------------------------------------------------------------------------
def test_cli_bound_l1_prints_the_explicit_value(capsys):
    assert main(["bound", "MGD.L1", "--sigma", "0.5", "--delta", "1", "--mu", "2", "--n-prime", "100"]) == 0
    out = capsys.readouterr().out
    assert "value = 0.08" in out and "union_as_printed = 0.16" in out


@pytest.mark.parametrize("argv", [
    ["--sigma", "-0.5", "--delta", "1", "--mu", "2", "--n-prime", "100"],
    ["--sigma", "0.5", "--delta", "0", "--mu", "2", "--n-prime", "100"],
    ["--sigma", "0.5", "--delta", "1", "--mu", "2", "--n-prime", "0.5"],
    ["--sigma", "0.5", "--delta", "1", "--mu", "nan", "--n-prime", "100"],
    ["--sigma", "0.5", "--delta", "1", "--mu", "2"],
    ["--sigma", "0.5", "--delta", "1", "--mu", "2", "--n-prime", "100", "--P", "0"],
])
def test_cli_bound_l1_invalid_values_exit_2_with_one_line(capsys, argv):
    assert main(["bound", "MGD.L1", *argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.strip().splitlines()) == 1


@pytest.mark.parametrize("claim_id, argv", [
    ("MGD.L2", ["0.1"] and ["--distance", "0.1"]),
    ("MGD.T1", []),
    ("MGD.MA", ["--eps0", "0.5", "--step", "0.1", "--cluster-size", "10", "--T", "20"]),
])
def test_cli_bound_other_mgd_claims(capsys, claim_id, argv):
    problem = ["--v", "2", "--sigma", "1", "--L", "4", "--mu", "1", "--l", "0.5", "--m", "100", "--n-prime", "50",
               "--P", "2", "--delta", "1", "--beta", "0.5"]
    if claim_id == "MGD.MA":
        problem = ["--L", "4", "--beta", "0.5"]
    assert main(["bound", claim_id, *problem, *argv, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["claim"] == claim_id and np.isfinite(data["value"])


def test_cli_verify_json_for_mgd_claims(capsys, tmp_path, pep_cache):
    assert main(["verify", "MGD.L1", "MGD.A1-5", "--scale", "smoke", "--json", "--threads", "1",
                 "--out", str(tmp_path)]) == 0
    data = json.loads(capsys.readouterr().out)["verdicts"]
    assert [v["id"] for v in data] == ["MGD.L1", "MGD.A1-5"]
    assert data[0]["evidence"]["c1"] == 128.0 and data[0]["verdict"] in VERDICTS
    assert (tmp_path / "verdicts.json").exists() and (tmp_path / "report.pdf").exists()


@pytest.mark.slow
def test_cli_verify_every_mgd_claim_at_smoke_scale(capsys, tmp_path, pep_cache):
    assert main(["verify", "MGD.L1", "MGD.L2", "MGD.T1", "MGD.MA", "MGD.SPEED", "--scale", "smoke", "--json",
                 "--threads", "1", "--out", str(tmp_path)]) == 0
    data = json.loads(capsys.readouterr().out)["verdicts"]
    assert [v["verdict"] for v in data] == ["holds", "vacuous", "unsatisfiable", "vacuous", "holds"]
    assert "quadratics_beta0.5_pep_one_step" in data[1]["evidence"]
