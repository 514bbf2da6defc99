"""DSC's theory checks at the smoke scale: verdict shape, reproducible counterexamples, planted errors.

The checks share one module-scoped context, so the quadratic experiment runs once; planted
errors reuse its measurements and only change the bound.
"""
from numbers import Real

import numpy as np
import pytest

import cflbounds.papers.dsc.checks as dsc_checks
from cflbounds.bounds import dsc as bounds
from cflbounds.verify import VERDICTS, Verdict, VerifyContext
from cflbounds.papers.dsc.experiment import EXPERIMENT, run_configuration
from cflbounds.verify.run import verify_claims

SEED = 0
THEORY = ("DSC.T1", "DSC.E14", "DSC.A1-4")


@pytest.fixture(scope="module")
def context():
    return VerifyContext(scale="smoke", seed=SEED, device="cpu",
                         package="cflbounds")  # the checks called directly share the papers' experiments


@pytest.fixture(scope="module")
def verdicts(context):
    return {v.id: v for v in verify_claims(THEORY, context)}


@pytest.mark.parametrize("claim_id", THEORY)
def test_verdicts_are_computed_with_numeric_evidence(verdicts, claim_id):
    verdict = verdicts[claim_id]
    assert isinstance(verdict, Verdict) and verdict.verdict in VERDICTS and verdict.verdict != "not-implemented"
    assert verdict.seed == SEED and verdict.trials >= 1 and verdict.summary
    for key, value in verdict.evidence.items():
        assert isinstance(value, Real) and not isinstance(value, bool), f"evidence {key}={value!r}"
    assert Verdict.from_dict(verdict.to_dict()).to_dict() == verdict.to_dict()


def test_smoke_findings(verdicts):
    """What the smoke scale measures today (every input is seeded: a change here is a change of
    conclusion): Theorem 1 fails where A < 1 lets lambda exceed 2/L, eq. (14) disagrees with
    measured convergence, and A4 fails with heterogeneous optima."""
    t1, e14, a14 = verdicts["DSC.T1"], verdicts["DSC.E14"], verdicts["DSC.A1-4"]
    assert t1.verdict == "violated" and t1.evidence["violated_with_A_below_1"] > 0
    assert e14.verdict == "violated" and e14.evidence["A_below_1_but_diverges"] > 0
    assert a14.verdict == "violated" and a14.evidence["delta_intra2_max_heterogeneous"] > 100


def test_t1_figure_keeps_every_point_and_clips_at_the_bound_scale(verdicts, context):
    """The verdict's figure holds measured/bound at t = T for every (instance, step size), none
    dropped: a diverged run is non-finite (marked 'diverged' at the edge), the axis is clipped
    to RATIO_RANGE around the bound, and the line measured = bound is labelled."""
    spec = verdicts["DSC.T1"].plot[0]
    points = context.tables["dsc_t1_points"]
    final = points[points["t"] == points["t"].max()]
    ratios = np.array([float(y) for s in spec["series"] for y in s["y"]])
    assert ratios.size == len(final)
    assert np.isinf(ratios).sum() == (~np.isfinite(final["measured"])).sum()
    assert spec["ylim"] == [1 / dsc_checks.RATIO_RANGE, dsc_checks.RATIO_RANGE]
    assert {"y": 1.0, "label": "measured = bound"} in spec["reference"]


def test_client_map_figure(verdicts, context):
    """The map shows an instance the verdict judges (within A4), the one with most clients."""
    plots = verdicts["DSC.T1"].plot
    scatter = [p for p in plots if p["kind"] == "scatter" and p.get("equal")]
    assert scatter and any(s["label"] == "base station" for s in scatter[0]["series"])
    clients = sum(len(s["x"]) for s in scatter[0]["series"] if s["label"].startswith("group "))
    points = context.tables["dsc_t1_points"]
    judged = set(points.loc[points["within_a4"], "config"])
    assert judged and "heterogeneous-optima" not in judged
    assert clients == max(c.clients for c in EXPERIMENT["smoke"]["configs"] if c.name in judged)
    assert not any(c.name in scatter[0]["title"] for c in EXPERIMENT["smoke"]["configs"] if c.name not in judged)


def test_smallest_counterexample_reproduces_from_its_seed(verdicts, context):
    """Rerunning the reported instance alone, from its seed, gives the same measurement."""
    evidence, details = verdicts["DSC.T1"].evidence, verdicts["DSC.T1"].details
    configs = EXPERIMENT["smoke"]["configs"]
    index = [c.name for c in configs].index(details["smallest_A_below_1_config"])
    alone = run_configuration(configs[index], SEED, EXPERIMENT["smoke"], index,
                              instance_seeds=[evidence["smallest_A_below_1_instance_seed"]])
    runs = alone["runs"]
    rows = runs[np.isclose(runs["step_size"], evidence["smallest_A_below_1_step_size"], rtol=1e-12)]
    measured = rows[f"gap_{int(evidence['smallest_A_below_1_t'])}"].mean()
    assert measured == pytest.approx(evidence["smallest_A_below_1_measured"], rel=1e-9)


def test_planted_smaller_bound_is_flagged_in_the_stable_range(verdicts, context, monkeypatch):
    """A Theorem 1 a hundred times too small must be violated where lambda < 2/L too
    (the honest bound is not: its violations all lie beyond the GD stability limit)."""
    assert verdicts["DSC.T1"].evidence["violated_with_step_below_2_over_L"] == 0
    honest = bounds.theorem1_curve
    monkeypatch.setattr(bounds, "theorem1_curve", lambda *a, **k: honest(*a, **k) / 100)
    planted = dsc_checks.check_t1(context)
    assert planted.verdict == "violated" and planted.evidence["violated_with_step_below_2_over_L"] > 0


def test_planted_larger_threshold_adds_sufficiency_failures(verdicts, context, monkeypatch):
    """An eq. (14) with a 4x larger threshold (A computed with delta^2 W divided by 4) predicts
    convergence in more diverging cells."""
    honest = bounds.contraction
    monkeypatch.setattr(bounds, "contraction", lambda L, mu, lam, di, da, W: honest(L, mu, lam, di, da, W / 4))
    planted = dsc_checks.check_e14(context)
    assert planted.evidence["A_below_1_but_diverges"] > verdicts["DSC.E14"].evidence["A_below_1_but_diverges"]


def test_accuracy_verdict_compares_paired_seeds(context):
    verdict = verify_claims(["DSC.ACC"], context)[0]
    assert verdict.verdict in ("holds", "violated", "inconclusive")
    evidence = verdict.evidence
    for name in ("dsc_minus_fedavg_noisy", "data_minus_fedavg_ideal"):
        assert evidence[f"{name}_low"] <= evidence[name] <= evidence[f"{name}_high"]
    table = context.tables["dsc_accuracy"]
    assert len(table) == evidence["seeds"] * 9 and table["accuracy"].between(0, 1).all()  # 3 methods x 3 channels
    for channel, suffix in (("noisy", ""), ("noisy per receiver", "_per_receiver")):  # both readings of eq. 5
        noisy = table[table["channel"] == channel].set_index(["seed", "method"])["accuracy"].unstack()
        assert np.isclose((noisy["DSC"] - noisy["FedAvg"]).mean(), evidence[f"dsc_minus_fedavg_noisy{suffix}"])
        noise = table[table["channel"] == channel].set_index(["seed", "method"])["aggregate_noise"].unstack()
        assert np.isclose(np.median(noise["DSC"] / noise["FedAvg"]),
                          evidence[f"aggregate_noise_ratio_dsc_over_fedavg{suffix}_median"])
    assert "Eq. 5 as printed" in verdict.summary and "per_receiver" in "".join(evidence)
    # grouping of every seed: per-stage convergence and left-over counts as the table records them
    dsc = table[(table["channel"] == "ideal") & (table["method"] == "DSC")]
    assert evidence["dsc_grouped_problems"] == evidence["seeds"]
    assert evidence["dsc_stage2_not_converged"] == int((~dsc["stage2_converged"]).sum())
    assert evidence["dsc_stage1_leftover_clients"] == int(dsc["stage1_leftover"].sum())
    assert ("did not converge" in verdict.summary) == bool(evidence["dsc_stage1_not_converged"]
                                                           + evidence["dsc_stage2_not_converged"]
                                                           + evidence["data_stage_stage2_not_converged"])
    # FedAvg in the ideal channel does not depend on the grouping: 0.1 of chance is far below what softmax reaches
    assert evidence["accuracy_fedavg_ideal"] > 0.5
    # the calibration is named in the summary; the noise ratio beside it is free of it
    from cflbounds.papers.dsc.accuracy import NOISE_SCALE

    assert f"{NOISE_SCALE:g} x gamma_ref/gamma" in verdict.summary and evidence["aggregate_noise_ratio_dsc_over_fedavg_min"] > 0


def test_cli_verify_dsc_json(tmp_path, capsys):
    import json

    from cflbounds.cli import main

    code = main(["verify", "DSC.E14", "--scale", "smoke", "--json", "--threads", "1", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0
    (verdict,) = json.loads(out)["verdicts"]
    assert verdict["id"] == "DSC.E14" and {"A_below_1_but_diverges", "threshold_min"} <= set(verdict["evidence"])
    assert (tmp_path / "report.pdf").exists()


# -- review regressions: scope of A4, sufficiency reading of eq. (14), overflow, constants --------------
def test_instances_outside_a4_are_exactly_those_with_heterogeneous_optima(context, verdicts):
    """A4 can hold only where every grad F_k vanishes at w* (grad F(w*) = 0): the shared-optimum
    instances. The others are counted apart, never judged, and A1-4's exact row at w* fails on them."""
    from cflbounds.papers.dsc.experiment import dsc_experiment

    instances = dsc_experiment(context)["instances"]
    np.testing.assert_array_equal(dsc_checks._within_a4(instances), instances["spread"] == 0)
    assert verdicts["DSC.T1"].evidence["outside_a4_points"] > 0 and verdicts["DSC.E14"].evidence["outside_a4_cells"] > 0
    at_optimum = [r for r in verdicts["DSC.A1-4"].assumptions if "A4 at w*" in r["name"]]
    assert {r["holds"] for r in at_optimum if "shared optimum" in r["source"]} == {True}
    assert {r["holds"] for r in at_optimum if "spread" in r["source"]} == {False}


def test_t1_ignores_violations_outside_a4(context, monkeypatch):
    """A bound planted a million times too small only on the heterogeneous-optima points: the
    verdict, computed on the points within A4, is unchanged; the planted violations are counted apart."""
    honest_points = dsc_checks._t1_points
    honest = dsc_checks.check_t1(context)

    def planted(experiment):
        points = honest_points(experiment)
        outside = ~points["within_a4"]
        points.loc[outside & (points["measured_low"] > 0), "outcome"] = "violated"
        return points

    monkeypatch.setattr(dsc_checks, "_t1_points", planted)
    result = dsc_checks.check_t1(context)
    assert result.verdict == honest.verdict and result.evidence["violated"] == honest.evidence["violated"]
    assert result.evidence["outside_a4_violated"] > 0


def test_e14_converging_cells_with_a_above_one_are_not_a_violation(verdicts, context, monkeypatch):
    """eq. (14) is a sufficient condition: with A >= 1 everywhere nothing is tested (inconclusive,
    not violated, although cells converge); with A < 1 exactly where lambda L < 1.9 (every such
    smoke cell converges) the claim holds."""
    assert verdicts["DSC.E14"].evidence["A_at_least_1_but_converges"] > 0
    monkeypatch.setattr(bounds, "contraction", lambda L, mu, lam, di, da, W: 2.0)
    never = dsc_checks.check_e14(context)
    assert never.verdict == "inconclusive" and never.evidence["A_at_least_1_but_converges"] > 0
    monkeypatch.setattr(bounds, "contraction", lambda L, mu, lam, di, da, W: 0.5 if lam * L < 1.9 else 2.0)
    stable = dsc_checks.check_e14(context)
    assert stable.verdict == "holds" and stable.evidence["cells_with_A_below_1"] > 0


def _looped_ratios(H, b, group, sizes, w):
    """A4's ratios and W at one point by plain loops (eqs. 2-3, angle weights, noise-free)."""
    K, groups = len(sizes), group.max() + 1
    grads = [H[k] @ (w - b[k]) for k in range(K)]
    G_l = [sizes[group == g].sum() / sizes.sum() for g in range(groups)]
    G_k, group_gradient = np.zeros(K), []
    for g in range(groups):
        members = np.flatnonzero(group == g)
        reference = sum(sizes[k] * grads[k] for k in members) / sizes[members].sum()
        score = []
        for k in members:
            cos = reference @ grads[k] / (np.linalg.norm(reference) * np.linalg.norm(grads[k]))
            score.append(sizes[k] * np.exp(1 - np.exp(-np.exp(-(np.arccos(np.clip(cos, -1, 1)) - 1)))))
        G_k[members] = np.array(score) / sum(score)
        group_gradient.append(sum(G_k[k] * grads[k] for k in members))
    total = sum(G_l[g] * group_gradient[g] for g in range(groups))
    intra = max(grads[k] @ grads[k] / (group_gradient[group[k]] @ group_gradient[group[k]]) for k in range(K))
    inter = max(v @ v / (total @ total) for v in group_gradient)
    return intra, inter, sum(G_l[group[k]] ** 2 * G_k[k] ** 2 for k in range(K))


def test_ball_sups_are_not_below_a_brute_force_search():
    """The ascent's sups of A4's ratios and W over the ball (which set delta and the threshold)
    against 1500 random points of the ball evaluated by plain loops: a random search only
    approaches the sup from below, so ours must be at least as large (1e-3 for the 8-digit
    rounding and the arccos clamp)."""
    from cflbounds.algorithms.dsc import hierarchy
    from cflbounds.papers.dsc.experiment import INITIAL_DISTANCE, _ball_sup, build_instances

    config = EXPERIMENT["smoke"]["configs"][1]  # "mid": 10 clients, d = 5, shared optimum
    inst = build_instances(config, SEED, 2, key=(1,))
    problem, sizes = inst.problem, inst.counts.sum(1)
    tree = hierarchy(inst.grouping, inst.layout, sizes)
    sups = _ball_sup(inst, tree, EXPERIMENT["smoke"]["ball_points"], EXPERIMENT["smoke"]["ball_steps"])
    rng = np.random.default_rng(0)
    for b in range(2):
        center = problem.global_minimizer[b]
        brute = np.zeros(3)
        for _ in range(1500):
            u = rng.standard_normal(problem.d)
            w = center + INITIAL_DISTANCE * rng.uniform() ** (1 / problem.d) * u / np.linalg.norm(u)
            brute = np.maximum(brute, _looped_ratios(problem.hessians_exact[b], problem.optima_exact[b],
                                                     inst.grouping.group[b], sizes, w))
        for which in range(3):
            assert sups[which][b] >= brute[which] * (1 - 1e-3)


def test_aggregate_noise_by_a_plain_loop():
    """The variance of the BS's aggregate under eq. (5)'s per-upload noise, data-share weights:
    FedAvg sum_k (D_k/D)^2 sigma_k^2 (uplinks to the BS); DSC sum_l G_l^2 (sigma_l^2 + sum_k
    G_k^2 sigma_k^2) (client -> leader, leader -> BS). DSC.ACC reports their ratio."""
    from cflbounds.algorithms.dsc import hierarchy
    from cflbounds.algorithms.dsc_grouping import Grouping, dsc_grouping
    from cflbounds.synthetic.wireless import make_wireless_layout, upload_noise_variance
    from cflbounds.papers.dsc.accuracy import _aggregate_noise
    from cflbounds.papers.dsc.experiment import draw_label_counts

    layout = make_wireless_layout(20, batch_size=2, seed=3)
    counts = draw_label_counts(np.random.default_rng(0), 20, 10)
    sizes = counts.sum(1)
    fedavg = _aggregate_noise(hierarchy(Grouping.singletons(2, 20), layout, sizes, noise_scale=0.5))
    np.testing.assert_allclose(fedavg, [((sizes / sizes.sum()) ** 2 * upload_noise_variance(snr, 0.5)).sum()
                                        for snr in layout.snr_to_bs], rtol=1e-12)
    grouping = dsc_grouping(layout, counts)
    dsc = _aggregate_noise(hierarchy(grouping, layout, sizes, noise_scale=0.5))
    for b in range(2):
        expected = 0.0
        for g, leader in enumerate(grouping.leader[b][grouping.leader[b] >= 0]):
            members = np.flatnonzero(grouping.group[b] == g)
            G_l = sizes[members].sum() / sizes.sum()
            intra = sum((sizes[k] / sizes[members].sum()) ** 2
                        * (0.0 if k == leader else upload_noise_variance(layout.snr_between[b, leader, k], 0.5))
                        for k in members)
            expected += G_l**2 * (upload_noise_variance(layout.snr_to_bs[b, leader], 0.5) + intra)
        assert dsc[b] == pytest.approx(expected, rel=1e-12)


def test_aggregate_noise_per_receiver_by_a_plain_loop():
    """eq. (5) as printed, one receiver noise per aggregate of variance max_i G_i^2 sigma_i^2:
    FedAvg max_k (D_k/D)^2 sigma_k^2; DSC max_l G_l^2 sigma_l^2 + sum_l G_l^2 max_{k in l}
    G_k^2 sigma_k^2 (a leader's own gradient is not transmitted)."""
    from cflbounds.algorithms.dsc import hierarchy
    from cflbounds.algorithms.dsc_grouping import Grouping, dsc_grouping
    from cflbounds.synthetic.wireless import make_wireless_layout, upload_noise_variance
    from cflbounds.papers.dsc.accuracy import _aggregate_noise
    from cflbounds.papers.dsc.experiment import draw_label_counts

    layout = make_wireless_layout(20, batch_size=2, seed=3)
    counts = draw_label_counts(np.random.default_rng(0), 20, 10)
    sizes = counts.sum(1)
    fedavg = _aggregate_noise(hierarchy(Grouping.singletons(2, 20), layout, sizes, noise_scale=0.5), "per-receiver")
    np.testing.assert_allclose(fedavg, [((sizes / sizes.sum()) ** 2 * upload_noise_variance(snr, 0.5)).max()
                                        for snr in layout.snr_to_bs], rtol=1e-12)
    grouping = dsc_grouping(layout, counts)
    dsc = _aggregate_noise(hierarchy(grouping, layout, sizes, noise_scale=0.5), "per-receiver")
    for b in range(2):
        to_bs, intra = [], 0.0
        for g, leader in enumerate(grouping.leader[b][grouping.leader[b] >= 0]):
            members = np.flatnonzero(grouping.group[b] == g)
            G_l = sizes[members].sum() / sizes.sum()
            to_bs.append(G_l**2 * upload_noise_variance(layout.snr_to_bs[b, leader], 0.5))
            intra += G_l**2 * max((sizes[k] / sizes[members].sum()) ** 2
                                  * (0.0 if k == leader else upload_noise_variance(layout.snr_between[b, leader, k], 0.5))
                                  for k in members)
        assert dsc[b] == pytest.approx(max(to_bs) + intra, rel=1e-12)


def test_measured_rates_sit_next_to_a(verdicts, context):
    """Each E14 cell's measured rate is (mean over repetitions of F(w^T) - F* / (F(w^0) - F*))^(1/T),
    recomputed here from the run table; T1's points at t = T carry the same rate; the evidence
    counts the cells with 0 <= A < 1 whose measured rate exceeds A."""
    from cflbounds.papers.dsc.experiment import dsc_experiment

    T = EXPERIMENT["smoke"]["iterations"]
    experiment = dsc_experiment(context)  # the shared measurements; tables saved by planted checks differ
    runs, cells = experiment["runs"], dsc_checks._e14_table(experiment)
    cells["within_a4"] = dsc_checks._within_a4(cells)
    for _, cell in cells.sample(10, random_state=0).iterrows():
        rows = runs[(runs["config"] == cell["config"]) & (runs["instance"] == cell["instance"])
                    & (runs["factor"] == cell["factor"])]
        expected = (rows[f"gap_{T}"].mean() / rows["gap_0"].iloc[0]) ** (1 / T)
        assert cell["measured_rate"] == pytest.approx(expected, rel=1e-12)
    judged = cells[cells["within_a4"]]
    promised = judged[(judged["A"] >= 0) & (judged["A"] < 1)]
    evidence = verdicts["DSC.E14"].evidence
    assert evidence["cells_with_A_in_0_1"] == len(promised) > 0
    assert evidence["cells_with_A_in_0_1_measured_rate_above_A"] == int((promised["measured_rate"] > promised["A"]).sum())
    points = dsc_checks._t1_points(experiment)
    final = points[(points["t"] == T)].set_index(["config", "instance", "factor"])["measured_rate"]
    np.testing.assert_allclose(final.sort_index(), cells.set_index(["config", "instance", "factor"])["measured_rate"]
                               .sort_index(), rtol=1e-12)


def test_grouping_convergence_is_in_the_evidence(verdicts, context):
    """Both stages of every instance's grouping: the counts in T1/E14 equal the instance table's,
    and the summary says when affinity propagation did not converge."""
    from cflbounds.papers.dsc.experiment import dsc_experiment

    instances = dsc_experiment(context)["instances"]
    for claim in ("DSC.T1", "DSC.E14"):
        evidence = verdicts[claim].evidence
        assert evidence["grouped_problems"] == len(instances)
        assert evidence["stage1_not_converged"] == int((~instances["stage1_converged"]).sum())
        assert evidence["stage2_not_converged"] == int((~instances["stage2_converged"]).sum())
        assert evidence["stage1_leftover_clients"] == int(instances["stage1_leftover"].sum())
        failed = evidence["stage1_not_converged"] + evidence["stage2_not_converged"]
        assert ("did not converge" in verdicts[claim].summary) == bool(failed)
    assert instances.loc[instances["config"] == "small", "stage1_converged"].all()  # the audit's case, fixed


def test_regression_family_is_two_label_mixtures_of_exact_least_squares():
    """Each label of the regression family is a finite, noise-free linear-regression data set;
    a client's Hessian is the count-weighted mean of its labels' X^T X / n, recomputed here from
    the raw data, and every client's least squares is the labels' shared optimum, so A4 can hold."""
    from cflbounds.synthetic.device_regression import make_device_regression
    from cflbounds.papers.dsc.experiment import ProblemConfig, build_instances

    config = ProblemConfig("regression", clients=6, d=3, labels=4, family="regression", label_samples=50)
    instances = build_instances(config, seed=3, count=2)
    data = make_device_regression(4, 3, samples=50, clusters=1, designs="client", design_min=config.mu,
                                  design_max=config.L, spread=0.0, noise_std=0.0, batch_size=2,
                                  seed=list(instances.seeds))
    X, y = data.inputs, data.targets  # (B, labels, n, d), (B, labels, n)
    label_hessians = np.einsum("blnd,blne->blde", X, X) / 50
    mixing = instances.counts / instances.counts.sum(1, keepdims=True)
    np.testing.assert_allclose(instances.problem.hessians_exact,
                               np.einsum("kl,blij->bkij", mixing, label_hessians), rtol=1e-12)
    shared = np.stack([np.linalg.lstsq(X[b].reshape(-1, 3), y[b].ravel(), rcond=None)[0] for b in range(2)])
    np.testing.assert_allclose(instances.problem.optima_exact, np.repeat(shared[:, None], 6, axis=1), atol=1e-10)
    np.testing.assert_allclose(instances.problem.global_minimizer, shared, atol=1e-10)
