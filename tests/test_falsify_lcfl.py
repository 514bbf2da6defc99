"""LCFL's falsify domains (cflbounds/verify/lcfl/domain.py): valid declarations, a point's
instance the same alone and in a batch, instances against independent computations, the
expected search outcomes at seed 0 on an evaluation budget, and planted errors found."""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from cflbounds.bounds import lcfl as bounds
from cflbounds.falsify import run
from cflbounds.falsify.records import read_counterexample, replay_counterexample, write_counterexample
from cflbounds.falsify.run import falsify_claim
from cflbounds.verify.context import VerifyContext
from cflbounds.papers.lcfl import CLAIMS, domain
from cflbounds.papers.lcfl.discrepancy import ROUNDING, pair_discrepancies
from cflbounds.verify.registry import get_claim

CTX = VerifyContext(seed=0)
DOMAINS = {"LCFL.E8": domain.e8_domain(), "LCFL.E4": domain.e4_domain(), "LCFL.T1": domain.t1_domain()}
E4_POINT = {"m_i": 30, "m_j": 50, "clusters": 2, "d": 3, "atoms": 200, "label_noise": 0.1, "weight_norm": 3.0,
            "loss": 0}
T1_POINT = {**E4_POINT, "m_i": 40, "m_j": 60, "weight_norm": 2.0, "delta": 0.05}
E8_POINT = {"d": 5, "lambda_max": 3.0, "condition_number": 1e3, "cross_norm": 2.0, "shift": 0.3, "tilt": 0.4,
            "residual_variance": 0.5}
POINTS = {"LCFL.E8": E8_POINT, "LCFL.E4": E4_POINT, "LCFL.T1": T1_POINT}


def _sigmoid_loss(w, x, y):
    """Mean sigmoid loss 1 / (1 + exp(y <w, x>)) of one model in numpy."""
    return float(np.mean(1.0 / (1.0 + np.exp(y * (x @ w)))))


# -- declarations ---------------------------------------------------------------------------------
def test_every_lcfl_claim_has_a_domain_or_says_why_not():
    for claim in CLAIMS:
        claim.validate()
        assert (claim.domain is None) != (not claim.no_domain), claim.id
        assert get_claim(claim.id).domain is not None or get_claim(claim.id).no_domain
    searched = {c.id for c in CLAIMS if c.domain is not None}
    assert searched == {"LCFL.E4", "LCFL.T1", "LCFL.E8"}
    assert {c.id: c.domain.rule for c in CLAIMS if c.domain} == {"LCFL.E4": "deterministic",
                                                                "LCFL.T1": "probability",
                                                                "LCFL.E8": "deterministic"}


@pytest.mark.parametrize("claim_id", sorted(DOMAINS))
def test_parameters_decode_and_encode(claim_id):
    dom = DOMAINS[claim_id]
    for unit in (np.zeros(len(dom.parameters)), np.ones(len(dom.parameters)), np.full(len(dom.parameters), 0.37)):
        point = dom.decode(unit)
        dom.check_point(point)
        again = dom.decode(dom.encode(point))
        assert again == pytest.approx(point, rel=1e-12)
    dom.check_point(POINTS[claim_id])
    assert all(p.low <= p.simplest <= p.high for p in dom.parameters)


@pytest.mark.parametrize("claim_id", sorted(DOMAINS))
def test_an_instance_is_the_same_alone_and_in_a_batch(claim_id):
    dom = DOMAINS[claim_id]
    others = [dom.decode(np.full(len(dom.parameters), u)) for u in (0.2, 0.6)]
    batch = dom.evaluate([others[0], POINTS[claim_id], others[1]], [5, 11, 7], CTX)
    alone = dom.evaluate([POINTS[claim_id]], [11], CTX)[0]
    assert batch[1].measured == alone.measured and batch[1].bound == alone.bound
    assert batch[1].details == alone.details and batch[1].exceedances == alone.exceedances


# -- instances against independent computations ---------------------------------------------------
def test_e8_one_dimension_is_the_closed_form():
    """d = 1: Sigma_XX = lambda, so L(w^) - L(w*) = (shift ||S_Xy||)^2 / lambda and both sandwich sides equal it."""
    point = {**E8_POINT, "d": 1, "shift": 0.25}
    instance = domain.excess_loss_instance(point, 3)
    expected = (0.25 * point["cross_norm"]) ** 2 / point["lambda_max"]
    for side in ("excess_loss", "identity", "lower", "upper"):
        assert instance.details[side] == pytest.approx(expected, rel=1e-13)
    assert 1.0 <= instance.measured <= 1.0 + 1e-13 and instance.admissible


def test_e8_instance_against_float64_algebra():
    """The measured side from the population loss, recomputed by hand (float64, well conditioned enough here)."""
    rng = np.random.default_rng(11)
    instance = domain.excess_loss_instance(E8_POINT, 11)
    details = instance.details
    # rebuild the problem exactly as the instance draws it
    d = E8_POINT["d"]
    low = E8_POINT["lambda_max"] / E8_POINT["condition_number"]
    eigenvalues = np.concatenate([[low], np.exp(rng.uniform(math.log(low), math.log(3.0), size=d - 2)), [3.0]])
    basis, _ = np.linalg.qr(rng.standard_normal((d, d)))
    sigma_xx = basis @ np.diag(eigenvalues) @ basis.T
    s = rng.standard_normal(d)
    s *= 2.0 / np.linalg.norm(s)
    random = rng.standard_normal(d)
    direction = 0.4 * basis[:, 0] + 0.6 * random / np.linalg.norm(random)
    s_hat = s + 0.3 * 2.0 * direction / np.linalg.norm(direction)
    w_star, w_hat = np.linalg.solve(sigma_xx, s), np.linalg.solve(sigma_xx, s_hat)
    loss = lambda w: w @ sigma_xx @ w - 2 * w @ s + details["variance_y"]  # noqa: E731
    assert details["excess_loss"] == pytest.approx(loss(w_hat) - loss(w_star), rel=1e-8)
    diff = s_hat - s
    assert details["upper"] == pytest.approx(diff @ diff / low, rel=1e-12)
    assert details["lower"] == pytest.approx(diff @ diff / 3.0, rel=1e-12)
    assert details["lower"] < details["excess_loss"] < details["upper"]
    assert instance.measured == pytest.approx(1.0, abs=1e-10) and instance.ratio <= 1 + domain.E8_RTOL


def test_e4_instance_against_numpy_population_losses():
    """d-hat from the trained models and the atoms in numpy; the bound side: 0 with one distribution, else
    between the ascent's lower bound and the total variation."""
    for clusters in (1, 2):
        point = {**E4_POINT, "clusters": clusters}
        instance = domain.discrepancy_instance(point, 9, CTX)
        model, problem = domain._pair_problem(point, 9, 1, CTX)
        trained = pair_discrepancies(model, problem)[0][0].numpy()
        x, labels = problem.atoms, problem.atom_labels[[0, clusters - 1]]
        L = [[_sigmoid_loss(w, x, labels[c]) for w in trained] for c in range(2)]  # L[c][k] = L_Dc(w_k)
        d_hat = abs(L[0][0] - L[0][1]) + abs(L[1][1] - L[1][0])
        assert instance.measured == pytest.approx(d_hat, rel=1e-10, abs=1e-14)
        if clusters == 1:
            assert instance.details["disc_upper"] == 0.0 and instance.bound == ROUNDING
            assert instance.measured > ROUNDING  # two samples of one distribution: d-hat > 0 = 2 disc
        else:
            details = instance.details
            assert details["disc_lower"] <= details["disc_upper"] <= details["total_variation"]
            differ = labels[0] != labels[1]
            reach = 3.0 * np.linalg.norm(x, axis=1)
            assert details["disc_upper"] == pytest.approx(np.mean(differ * np.tanh(reach / 2)), rel=1e-12)
            assert instance.bound == pytest.approx(2 * details["disc_upper"] + ROUNDING, rel=1e-15)


def test_e4_one_sample_per_client_is_the_closed_form():
    """m_i = m_j = 1 with the sigmoid loss: each client's minimiser over the ball is B_w y x / ||x|| (its one
    sample), so with one distribution d-hat = 2 |L_D(w_i) - L_D(w_j)| > 0 = 2 disc whenever the samples differ."""
    point = {**E4_POINT, "m_i": 1, "m_j": 1, "clusters": 1, "d": 2, "atoms": 4, "label_noise": 0.0,
             "weight_norm": 1.0}
    for seed in range(3):
        instance = domain.discrepancy_instance(point, seed, CTX)
        _, problem = domain._pair_problem(point, seed, 1, CTX)
        x, y = problem.train.features[0, :, 0].numpy(), problem.train.labels[0, :, 0].numpy()
        minimisers = y[:, None] * x / np.linalg.norm(x, axis=1, keepdims=True)
        L = [_sigmoid_loss(w, problem.atoms, problem.atom_labels[0]) for w in minimisers]
        assert instance.admissible and instance.assumptions[0]["lhs"] <= 1e-12
        assert instance.measured == pytest.approx(2 * abs(L[0] - L[1]), rel=1e-9, abs=1e-14)
        assert instance.bound == ROUNDING


def test_e4_is_violated_between_distinct_distributions():
    """Found by a search restricted to two clusters (see the report): d = 1, one sample per client, two
    distributions on the same halfspace whose labels differ only by independent noise (TV 0.12). The
    one-sample minimisers +-B_w point opposite ways, so d-hat = 0.33 > 2 disc <= 0.050 (the exact upper
    bound): a certain violation with D_i != D_j, which the hand-built check never certified."""
    point = {**E4_POINT, "m_i": 1, "m_j": 1, "clusters": 2, "d": 1, "atoms": 250, "label_noise": 0.07,
             "weight_norm": 0.8}
    instance = domain.discrepancy_instance(point, 11, CTX)
    _, problem = domain._pair_problem(point, 11, 1, CTX)
    x, y = problem.train.features[0, :, 0, 0].numpy(), problem.train.labels[0, :, 0].numpy()
    minimisers = 0.8 * np.sign(y * x)[:, None]
    L = [[_sigmoid_loss(w, problem.atoms, problem.atom_labels[c]) for w in minimisers] for c in range(2)]
    assert minimisers[0, 0] == -minimisers[1, 0]
    assert instance.measured == pytest.approx(abs(L[0][0] - L[0][1]) + abs(L[1][1] - L[1][0]), rel=1e-9)
    assert 0 < instance.details["total_variation"] < 0.2 and instance.details["disc_upper"] > 0
    assert instance.admissible and instance.ratio > 5


def test_e4_unfinished_training_is_inadmissible():
    """B_w = 30 with noisy labels: 100 projected-GD steps stop short of a stationary point."""
    instance = domain.discrepancy_instance({**E4_POINT, "weight_norm": 30.0, "label_noise": 0.3, "m_i": 200,
                                            "m_j": 200}, 0, CTX)
    assert not instance.admissible and instance.assumptions[0]["lhs"] > domain.STATIONARITY


def test_t1_instance_against_a_hand_computation():
    """Right side by eq. (5) with R = L B_w sqrt(E||x||^2 / m), failure 1 - (1 - delta)^4, and the exceedances
    recounted from d and d-hat computed in numpy from the trained models, samples and atoms."""
    instance = domain.deviation_instance(T1_POINT, 4, CTX)
    model, problem = domain._pair_problem(T1_POINT, 4, domain.T1_TRIALS, CTX)
    trained = pair_discrepancies(model, problem)[0].numpy()
    rms = math.sqrt(np.mean(np.sum(problem.atoms**2, axis=1)))
    delta, m_i, m_j = 0.05, 40, 60
    right_side = sum(2 * math.sqrt(math.log(2 / delta) / (2 * m)) + 0.25 * 2.0 * rms / math.sqrt(m) for m in (m_i, m_j))
    assert instance.details["right_side"] == pytest.approx(right_side, rel=1e-12)
    assert instance.bound == pytest.approx(1 - 0.95**4, rel=1e-12)
    x, labels, mask = (t.numpy() for t in (problem.train.features, problem.train.labels, problem.train.mask))
    deviations = []
    for b in range(domain.T1_TRIALS):
        w = trained[b]
        sample = [(x[b, c][mask[b, c]], labels[b, c][mask[b, c]]) for c in range(2)]
        empirical = [[_sigmoid_loss(w[k], *sample[c]) for k in range(2)] for c in range(2)]
        population = [[_sigmoid_loss(w[k], problem.atoms, problem.atom_labels[c]) for k in range(2)] for c in range(2)]
        d = abs(empirical[0][1] - empirical[0][0]) + abs(empirical[1][0] - empirical[1][1])
        d_hat = abs(population[0][1] - population[0][0]) + abs(population[1][0] - population[1][1])
        deviations.append(abs(d - d_hat))
    assert instance.trials == domain.T1_TRIALS
    assert instance.exceedances == int(np.sum(np.array(deviations) > right_side))
    assert instance.details["max_deviation"] == pytest.approx(max(deviations), rel=1e-9)


def test_t1_vacuous_points_are_inadmissible_and_not_run():
    instance = domain.deviation_instance({**T1_POINT, "m_i": 2, "m_j": 2}, 0, CTX)
    assert not instance.admissible and instance.trials == 0 and instance.details["right_side"] >= 2


# -- search outcomes at seed 0 (evaluation budgets: deterministic) -------------------------------
def test_e8_identity_has_no_counterexample():
    result = falsify_claim("LCFL.E8", seed=0, budget=None, max_evaluations=150)
    assert result["outcome"] == "no counterexample found" and result["best_ratio"] <= 1.0
    best = result["search"]["best"]["details"]
    assert best["relative_error"] < domain.E8_RTOL


def test_e4_search_finds_the_equal_distributions_violation_and_it_replays(tmp_path):
    """The search alone reaches D_i = D_j (disc = 0 exactly) where two trained models differ; the written
    counterexample replays to the same ratio."""
    result = falsify_claim("LCFL.E4", seed=0, budget=None, max_evaluations=10)
    assert result["outcome"] == "violated" and result["confirmation"]["violated"]
    example = result["counterexample"]
    assert example["details"]["disc_upper"] == 0.0 and example["measured"] > example["bound"] == ROUNDING
    record = read_counterexample(write_counterexample(tmp_path, result))
    assert replay_counterexample(record).ratio == example["ratio"]


def test_t1_search_runs_and_finds_no_exceedance_on_a_small_budget():
    result = falsify_claim("LCFL.T1", seed=0, budget=None, max_evaluations=12)
    assert result["outcome"] == "no counterexample found" and result["best_ratio"] <= 1.0
    assert result["search"]["admissible"] >= 1


# -- planted errors ---------------------------------------------------------------------------------
@pytest.fixture
def planted(monkeypatch):
    """``planted(claim_id, domain)``: falsify the claim with its domain replaced."""
    def falsify(claim_id, dom, evaluations):
        claim = dataclasses.replace(get_claim(claim_id), domain=dom)
        monkeypatch.setattr(run, "get_claim", lambda _: claim)
        return falsify_claim(claim_id, seed=0, budget=None, max_evaluations=evaluations)
    return falsify


def test_a_halved_identity_is_falsified(planted):
    halved = lambda *args: 0.5 * bounds.excess_loss_identity(*args)  # noqa: E731
    result = planted("LCFL.E8", domain.e8_domain(identity=halved), 10)
    assert result["outcome"] == "violated"
    assert result["counterexample"]["measured"] == pytest.approx(2.0, rel=1e-8)


def test_a_halved_sandwich_upper_side_is_falsified_by_the_search(planted):
    """(1/(2 lambda_min)) ||.||^2 fails only where the shift leans on the lambda_min eigenvector (more than half
    of its Sigma_XX^-1-weight); the search converges there, and shrinking reaches d = 1, where the sandwich
    is tight."""
    def halved(norm_sq, lambda_min, lambda_max):
        result = bounds.excess_loss_sandwich(norm_sq, lambda_min, lambda_max)
        return dataclasses.replace(result, value=0.5 * result.value,
                                   terms={**result.terms, "upper": 0.5 * result.terms["upper"]})

    result = planted("LCFL.E8", domain.e8_domain(sandwich=halved), 150)
    assert result["outcome"] == "violated"
    example = result["counterexample"]
    assert example["details"]["worst_side"] == "excess/upper"
    assert example["measured"] == pytest.approx(2.0, rel=1e-8) and example["parameters"]["d"] == 1


def test_a_right_side_ten_times_too_small_is_falsified(planted):
    """Thm 1's right side / 10 (a halved one is not found: the measured quantile stays below a fifth of the
    right side wherever the search has looked, see the report)."""
    def tenth(delta, m_i, m_j, rademacher_i, rademacher_j):
        result = bounds.theorem1(delta, m_i, m_j, rademacher_i, rademacher_j)
        return dataclasses.replace(result, value=0.1 * result.value)

    result = planted("LCFL.T1", domain.t1_domain(tenth), 20)
    assert result["outcome"] == "violated"
    assert result["confirmation"]["interval"][0] > result["counterexample"]["bound"]
