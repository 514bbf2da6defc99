"""FedCluster's checks at the smoke scale: verdict shape, what they find, the judgments on
hand-made tables, and a planted too-small Theorem 1 bound that must be flagged.

The checks share one module-scoped context, so every experiment runs once.
"""
import json
import math
from numbers import Real

import numpy as np
import pandas as pd
import pytest

import cflbounds.papers.fedcluster.checks as fc_checks
from cflbounds.bounds import fedcluster as fc_bounds
from cflbounds.cli import main
from cflbounds.reports.figures import plot_from_spec
from cflbounds.verify import VERDICTS, Verdict, VerifyContext
from cflbounds.papers.fedcluster.rates import _crossings, conditions_disclosure
from cflbounds.algorithms.fedcluster import fedcluster
from cflbounds.synthetic.heterogeneity import quadratic_spread_sup, spread_at
from cflbounds.papers.fedcluster.rates import TRADEOFF_KINDS
from cflbounds.synthetic import make_quadratic_federation
from cflbounds.synthetic.device_regression import make_device_regression
from cflbounds.papers.fedcluster.runs import (
    IterateMonitor,
    RunSet,
    equal_weight_fixed_point,
    family_problem,
    partition,
)
from cflbounds.verify.run import verify_claims

CLAIMS = ("FC.A2", "FC.H", "FC.T1", "FC.SPEEDUP", "FC.TRADEOFF")


@pytest.fixture(scope="module")
def verdicts():
    context = VerifyContext(scale="smoke", seed=0, device="cpu",
                             package="cflbounds")  # the checks called directly share the papers' experiments
    return {v.id: v for v in verify_claims(CLAIMS, context)}


@pytest.mark.parametrize("claim_id", CLAIMS)
def test_smoke_verdicts_have_numbers_for_evidence(verdicts, claim_id):
    verdict = verdicts[claim_id]
    assert isinstance(verdict, Verdict) and verdict.verdict in VERDICTS and verdict.verdict != "not-implemented"
    assert verdict.scale == "smoke" and verdict.summary and verdict.evidence and verdict.trials >= 1
    for key, value in verdict.evidence.items():
        assert isinstance(value, Real) and not isinstance(value, bool), f"evidence {key}={value!r} is not a number"
    data = verdict.to_dict()
    assert Verdict.from_dict(data).to_dict() == data
    json.dumps(data)


def test_what_the_smoke_scale_finds(verdicts):
    # every input is seeded: a change here is a change of conclusion, not noise
    assert verdicts["FC.A2"].verdict == "holds"
    h = verdicts["FC.H"].evidence
    assert verdicts["FC.H"].verdict == "holds" and h["exceed"] == 0 == h["trivial_exceed"]
    assert h["trivial_comparisons"] > 0 and 0 < h["H_cluster_at_largest_H_device"] < h["H_device_largest"]
    assert h["comparisons_regression"] == 8 * 2 * 2  # M = 4: 8 trials x 2 horizons x (ball, visited)
    t1 = verdicts["FC.T1"].evidence
    assert verdicts["FC.T1"].verdict == "violated"
    assert t1["points_conditions_hold"] == t1["points"]
    assert t1["equal_weights_ratio_max"] < 1 < t1["unequal_weights_ratio_max"]  # only the unequal-q probe
    assert t1["worst_q_max"] == 0.75 and t1["measured_over_bound_max_low"] > 1
    # the regression family is judged too: its 4 points (M = 1, 4; T = 16, 64) meet the conditions and hold
    assert t1["regression_points_conditions_hold"] == 4 and t1["regression_ratio_high_max"] < 1
    assert verdicts["FC.A2"].evidence["failing"] == 0
    assert any("(regression, M=4)" in row["source"] for row in verdicts["FC.A2"].assumptions)
    speedup = verdicts["FC.SPEEDUP"].evidence
    assert speedup["missing_max"] == 0 and speedup["speedup_measured_M32"] > 10
    assert abs(speedup["error_ratio_measured_M32"] / speedup["error_ratio_predicted_M32"] - 1) < 0.1
    tradeoff = verdicts["FC.TRADEOFF"].evidence
    assert tradeoff["H_and_variance_increase_with_M"] == 1.0 and tradeoff["grouped_faster_count"] == 0
    # the trade-off runs are all outside Theorem 1's conditions (ME >= 5 > the largest admissible ME)
    assert tradeoff["conditions_hold_fraction"] == 0.0
    assert tradeoff["largest_admissible_ME_max"] < tradeoff["ME_min"] == 5 and tradeoff["ME_max"] == 160


@pytest.mark.parametrize("claim_id", ["FC.SPEEDUP", "FC.TRADEOFF"])
def test_rate_summaries_say_first_whether_theorem1_conditions_hold(verdicts, claim_id):
    verdict = verdicts[claim_id]
    assert verdict.evidence["conditions_hold_fraction"] == 0.0
    assert verdict.summary.startswith("Outside Theorem 1's conditions: they hold in 0% of the trials")
    assert f"{verdict.evidence['largest_admissible_ME_max']:.2g} vs ME" in verdict.summary


def test_conditions_disclosure_by_fraction():
    assert conditions_disclosure(1.0, [3.0], [2]).startswith("Within Theorem 1's conditions")
    outside = conditions_disclosure(0.0, [0.02, 0.13], [5, 160])
    assert outside.startswith("Outside Theorem 1's conditions: they hold in 0% of the trials")
    assert "largest admissible ME = C/(8LG^2) 0.02-0.13 vs ME = 5-160 used" in outside and "not the theorem" in outside
    assert conditions_disclosure(0.25, [1.0], [4]).startswith("Partly outside Theorem 1's conditions: they hold in 25%")


def test_summaries_say_how_large_the_deviation_is(verdicts):
    speedup = verdicts["FC.SPEEDUP"]
    evidence = speedup.evidence
    assert evidence["implied_constant_growth"] == pytest.approx(
        evidence["implied_constant_last"] / evidence["implied_constant_first"], rel=1e-12)
    assert f"{evidence['implied_constant_growth'] - 1:+.0%}" in speedup.summary
    share = evidence["speedup_measured_M32"] / evidence["speedup_predicted_M32"]
    assert f"{share:.0%} of the predicted" in speedup.summary
    t1 = verdicts["FC.T1"]
    assert f"measured {t1.evidence['worst_measured']:.3g} vs bound {t1.evidence['worst_bound']:.3g}" in t1.summary
    assert "probability q_K" in t1.summary  # the violation's reason, since it comes from unequal q_K
    tradeoff = verdicts["FC.TRADEOFF"]
    assert "reading:" in tradeoff.summary


def test_t1_plots_one_figure_per_family_with_measured_and_bound(verdicts):
    plots = [p for p in verdicts["FC.T1"].plot if p["xlabel"] == "rounds T"]
    assert len(plots) == 4  # quadratic, nonconvex, unequal, regression
    quadratic = next(p for p in plots if p["title"].startswith("FC.T1 (quadratic)"))
    labels = [s["label"] for s in quadratic["series"]]
    assert "M = 1: measured" in labels and "M = 4: bound 2C/sqrt(TME)" in labels
    groups = {s["label"]: s["group"] for s in quadratic["series"] if "group" in s}
    assert groups["M = 4: measured"] == groups["M = 4: bound 2C/sqrt(TME)"] == "M = 4"  # one colour per M


def test_t1_headline_figure_shows_what_decided_the_verdict(verdicts):
    """Every violated point is ringed, and the first figure is of a family with one."""
    t1 = verdicts["FC.T1"]
    rings = [[s for s in p["series"] if s.get("style") == "ring"] for p in t1.plot]
    assert sum(len(s["x"]) for ring in rings for s in ring) == t1.evidence["points_violated"]
    assert bool(rings[0]) == (t1.evidence["points_violated"] > 0)


def test_t1_round_figure_running_average_ends_at_the_measurement(verdicts):
    """The per-round figure (from the runs' ||grad f(W_jM)||^2 curves) for several M: its running
    average at t = T is the measured (1/T) sum_{j<T} of the per-horizon figure (computed from the
    per-horizon means, a different array), its reference line is that T's bound, and it renders."""
    plots = verdicts["FC.T1"].plot
    by_rounds = {p["title"].split(")")[0]: p for p in plots if p["xlabel"] == "round t"}
    by_horizon = {p["title"].split(")")[0]: p for p in plots if p["xlabel"] == "rounds T"}
    assert by_rounds.keys() == by_horizon.keys()
    quadratic = by_rounds["FC.T1 (quadratic"]
    Ms = sorted({s["label"].split(":")[0] for s in quadratic["series"]})
    assert Ms == ["M = 1", "M = 2", "M = 4"]
    for family, spec in by_rounds.items():
        horizon = {s["label"]: s for s in by_horizon[family]["series"]}
        for running, bound in zip(spec["series"][::2], spec["series"][1::2]):
            M = running["label"].split(":")[0]
            measured, predicted = horizon[f"{M}: measured"], horizon[f"{M}: bound 2C/sqrt(TME)"]
            T = running["x"][-1]
            assert running["x"] == list(range(1, T + 1)) and T == measured["x"][-1]
            assert running["y"][-1] == pytest.approx(measured["y"][-1], rel=1e-12)
            assert running["low"][-1] == pytest.approx(measured["low"][-1], rel=1e-9)
            assert bound["y"] == [pytest.approx(predicted["y"][-1], rel=1e-12)] * 2 and bound["x"] == [1, T]
            assert all(lo <= y <= hi for lo, y, hi in zip(running["low"], running["y"], running["high"]))
        plot_from_spec(spec)


def test_unequal_cluster_weights_settle_at_the_equal_weight_point_not_at_w_star():
    """The mechanism behind FC.T1's violation, independent of W_0: started AT w*, reshuffled
    cycling over q = (1/4, 3/4) drifts to the minimiser of (1/M) sum_K f_SK, 0.5 away (centers 2
    apart: (c_1 - c_2)/4), where ||grad f||^2 = (0.1 * 0.5)^2 = 0.0025. Step 0.05 over 600 rounds:
    the mean of the last 300 W_jM is ~0.01 from that point (O(eta) bias + noise); margins 5x."""
    problem = family_problem("unequal", 4, 0)
    membership = np.asarray(problem.membership)
    settled, w_star = equal_weight_fixed_point(problem, membership), problem.global_minimizer
    np.testing.assert_allclose(np.linalg.norm(settled - w_star, axis=1), 0.5, rtol=1e-9)
    trace = fedcluster(problem, membership, rounds=600, local_steps=1, step_sizes=0.05, init=w_star)
    late = trace.round_models[:, 0, 300:].mean(axis=1)
    assert np.all(np.linalg.norm(late - settled, axis=1) < 0.05)
    assert np.all(np.linalg.norm(late - w_star, axis=1) > 0.45)
    gradient_norm2 = np.square(problem.global_gradient(late[:, None])[:, 0]).sum(-1)
    np.testing.assert_allclose(gradient_norm2, 0.0025, rtol=0.1)


@pytest.mark.parametrize("kind", TRADEOFF_KINDS)
def test_tradeoff_constant_is_exact_for_every_partition(kind):
    """FC.TRADEOFF's predicted best M rests on C per partition: on the tradeoff family H_cluster
    is the same at every w (shared Hessians), so the sup over R^d of eq. (2) is the value at any
    point and no ball is chosen: the sup over a ball of radius 0 and of radius 1e3 agree with
    H_cluster at a far random point (relative 1e-9: rounding of A_K - A ~ 1e-16 times R^2)."""
    problem = family_problem("tradeoff", 3, 0)
    far = problem.global_minimizer + 50.0 * np.random.default_rng(1).standard_normal(problem.global_minimizer.shape)
    for M in (2, 8, 32):
        membership = partition("tradeoff", problem, kind, M, 0)
        at_far = spread_at(problem.client_gradients(far), problem.weights, membership)[0]
        for radius in (0.0, 1e3):
            sup = quadratic_spread_sup(problem, membership, problem.global_minimizer, radius).upper
            np.testing.assert_allclose(sup, at_far, rtol=1e-9)


def monitor_problem(kind):
    """A small problem, its per-sample gradient ``(b, k, w, xi)`` and ``E_xi ||grad f(w; xi)||^2``
    ``(b, k, w)`` written out: ``||A_k (w - b_k)||^2 + s_k^2`` for quadratic devices, the mean over
    the device's data of ``||x (x^T w - y)||^2`` for the regression."""
    if kind == "quadratic":
        problem = make_quadratic_federation(6, 3, clusters=2, hessians="client", strong_convexity=0.5, smoothness=1.0,
                                            separation=2.0, spread=0.5, noise_std=0.3, batch_size=2, seed=4)
        A, b, s2 = problem.hessians_exact, problem.optima_exact, problem.gradient_variance
        return (problem, lambda batch, k, w, xi: A[batch, k] @ (w - xi),
                lambda batch, k, w: np.sum((A[batch, k] @ (w - b[batch, k])) ** 2) + s2[batch, k])
    problem = make_device_regression(6, 3, samples=[3, 4, 5, 6, 7, 8], clusters=2, designs="client", batch_size=2,
                                     seed=4)

    def second_moment(batch, k, w):
        x, y = problem.inputs[batch, k, :problem.sizes[k]], problem.targets[batch, k, :problem.sizes[k]]
        return np.mean([np.sum((xi * (xi @ w - yi)) ** 2) for xi, yi in zip(x, y)])

    return problem, lambda batch, k, w, xi: xi[:3] * (xi[:3] @ w - xi[3]), second_moment


@pytest.mark.parametrize("kind", ["quadratic", "regression"])
def test_iterate_monitor_g2_and_reach_against_a_plain_loop(kind):
    """G^2 of Assumption 2.3 decides whether Theorem 1's conditions hold: the monitor's running
    maxima against Alg. 1 written out, with E||grad f(w; xi)||^2 at every local iterate
    w_{j,K,t} (t < E, own device) and at every w_bar_{j,K,t} (every device)."""
    problem, gradient, second_moment = monitor_problem(kind)
    membership, E, steps = np.array([0, 1, 2, 0, 1, 1]), 3, [0.05, 0.3]
    # from w*, local steps pull each device away from the others: the maxima fall inside cycles
    init, center = problem.global_minimizer, np.zeros((2, 3))
    monitor = IterateMonitor(problem, center, len(steps), gradients=True)
    trace = fedcluster(problem, membership, rounds=4, local_steps=E, step_sizes=steps, init=init, monitor=monitor,
                       record_orders=True)
    seen, p = monitor.results(), problem.weights
    for batch in range(2):
        for c, step in enumerate(steps):
            W, local_max, average_max, reach = init[batch].copy(), 0.0, 0.0, 0.0
            for j, order in enumerate(trace.orders[batch]):
                samples = problem.draw(E, j).double().numpy()[batch]
                for cluster in order:
                    devices = np.flatnonzero(membership == cluster)
                    share = p[devices] / p[devices].sum()
                    w = np.tile(W, (devices.size, 1))
                    for t in range(E):
                        bar = share @ w
                        local_max = max(local_max, *(second_moment(batch, k, w[i]) for i, k in enumerate(devices)))
                        average_max = max(average_max, *(second_moment(batch, k, bar) for k in range(6)))
                        reach = max(reach, np.linalg.norm(w - center[batch], axis=1).max())
                        w = w - step * np.stack([gradient(batch, k, w[i], samples[k, t]) for i, k in enumerate(devices)])
                    W = share @ w
            np.testing.assert_allclose([seen["g2_local"][batch, c], seen["g2_average"][batch, c],
                                        seen["distance"][batch, c]], [local_max, average_max, reach], rtol=1e-10)


def test_h_evidence_counts_and_extremes_leave_out_trivial_partitions():
    """M = 1 (H_cluster = 0) and M = n (H_cluster = H_device) hold by definition: they are
    counted apart and never supply the extremes, even when they hold the largest H_device."""
    rows = [("random", 1, 9.0, 0.0, 0.0), ("random", 4, 2.0, 0.5, 0.25), ("grouped", 4, 2.0, 1.5, 0.75),
            ("random", 16, 9.0, 9.0, 1.0)]
    table = pd.DataFrame([{"family": "quadratic", "partition": kind, "M": M, "T": 16, "measure": measure,
                           "trivial": M in (1, 16), "pairs": 8, "H_cluster": cluster, "H_device": device,
                           "ratio_max": ratio, "ratio_mean": ratio, "exceed": 0}
                          for kind, M, device, cluster, ratio in rows for measure in ("ball", "visited")])
    evidence = fc_checks._heterogeneity_evidence(table)
    assert evidence["comparisons"] == 2 * 2 * 8 and evidence["trivial_comparisons"] == 2 * 2 * 8
    assert evidence["H_device_largest"] == 2.0 and evidence["H_cluster_at_largest_H_device"] == 1.5
    assert evidence["ratio_max_ball"] == 0.75 and evidence["ratio_mean_random"] == 0.25


# -- the T1 judgment on hand-made tables ---------------------------------------------------------------
def table(**columns):
    base = {"conditions_hold": [1.0, 1.0], "ratio_low": [0.1, 0.2], "ratio_high": [0.3, 0.4], "vacuous": [0.0, 1.0]}
    return pd.DataFrame({**base, **columns})


@pytest.mark.parametrize("columns, expected", [
    ({}, "holds"),
    ({"vacuous": [1.0, 1.0]}, "vacuous"),
    ({"ratio_high": [0.3, 1.2]}, "inconclusive"),
    ({"ratio_low": [0.1, 1.1], "ratio_high": [0.3, 1.3]}, "violated"),
    ({"ratio_low": [0.1, 1.1], "ratio_high": [0.3, 1.3], "conditions_hold": [1.0, 0.5]}, "holds"),
    ({"conditions_hold": [0.0, 0.5]}, "inconclusive"),
])
def test_t1_judgment(columns, expected):
    assert fc_checks._t1_judgment(table(**columns))[0] == expected


def test_crossings_interpolate_log_log():
    run = RunSet("x", "random", 2, 1, np.array([10, 40]), np.zeros(2, dtype=int),
                 measured=np.array([[4.0, 1.0], [4.0, 3.0], [0.5, 0.2]]), curve=np.zeros((3, 2)))
    rounds = _crossings(run, np.array([2.0, 2.0, 2.0]))
    # trial 0: log X falls by log 4 over log 4 in T, so X = 2 at T = 20; trial 1 never reaches 2;
    # trial 2 is already below at the first horizon
    assert rounds[0] == pytest.approx(20.0) and math.isnan(rounds[1]) and math.isnan(rounds[2])


# -- a planted too-small bound must be flagged ---------------------------------------------------------
def test_planted_too_small_t1_bound_is_flagged_violated(monkeypatch):
    """On the equal-weight problems alone the bound holds; shrinking it by halves until it falls
    below the measurements must turn the verdict to ``violated``, with measured/bound > 1."""
    monkeypatch.setitem(fc_checks.T1_RUNS, "smoke", {"trials": 8, "runs": [("quadratic", "random", 2, 5, (16, 64))]})
    context = VerifyContext(scale="smoke", seed=0)
    honest = fc_checks.check_t1(context)
    assert honest.verdict in ("holds", "vacuous") and honest.evidence["measured_over_bound_max"] < 1
    true_theorem1 = fc_bounds.theorem1
    for halvings in range(1, 12):
        factor = 0.5**halvings

        def planted(**kwargs):
            result = true_theorem1(**kwargs)
            return type(result)(result.claim, result.value * factor, result.terms, result.derived,
                                result.assumptions, result.statement)

        planted.__doc__ = true_theorem1.__doc__  # theorem1 reads its docstring through the module name
        monkeypatch.setattr(fc_bounds, "theorem1", planted)
        verdict = fc_checks.check_t1(context)  # the runs are cached in the context: only the bound changes
        if verdict.verdict == "violated":
            break
    assert verdict.verdict == "violated", "a bound scaled down 2048x was never flagged"
    assert verdict.evidence["measured_over_bound_max_low"] > 1
    ratio = verdict.evidence["measured_over_bound_max"]
    assert ratio == pytest.approx(honest.evidence["measured_over_bound_max"] / factor, rel=1e-9)


@pytest.mark.slow
def test_cli_verify_fc_claims_smoke_json(capsys, tmp_path):
    code = main(["verify", "FC.H", "FC.T1", "FC.SPEEDUP", "FC.TRADEOFF", "--scale", "smoke", "--json",
                 "--threads", "1", "--out", str(tmp_path)])
    out, _ = capsys.readouterr()
    assert code == 0
    verdicts = {v["id"]: v for v in json.loads(out)["verdicts"]}
    t1 = verdicts["FC.T1"]["evidence"]
    for key in ("worst_H_cluster_ball", "worst_H_device_ball", "worst_C", "worst_bound", "worst_measured",
                "worst_conditions_hold"):
        assert key in t1
    assert (tmp_path / "report.pdf").exists()
