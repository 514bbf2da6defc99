"""CFL-MGD's falsifier domains (cflbounds.papers.cfl_mgd.domain): valid declarations, instances
that do not depend on their batch, agreement with closed forms and with the checks' own code,
and what the search finds (MGD.L1: nothing at c1 = 128, a planted c1 = 1 refuted; MGD.L2:
violated, by heavy-ball momentum)."""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from scipy import stats

from cflbounds.algorithms import ifca
from cflbounds.falsify import falsify_claim, run
from cflbounds.falsify.confirm import confirm
from cflbounds.verify.claim import Claim
from cflbounds.papers.cfl_mgd import checks
from cflbounds.papers.cfl_mgd.domain import DELTA_MAX, l1_domain, l2_domain, placed_in_balls
from cflbounds.papers.cfl_mgd.misassignment import cluster_estimates
from cflbounds.papers.cfl_mgd.problems import Family, init_radius, placed_models
from cflbounds.verify.context import VerifyContext
from cflbounds.verify.domain import Instance
from cflbounds.verify.registry import get_claim
from cflbounds.synthetic.seeding import spawn_seeds

CTX = VerifyContext(seed=0)
L1_POINT = {"family": 0, "d": 4, "delta": 1.0, "L": 1.0, "mu_over_L": 1.0, "noise": 0.5, "regularization": 0.1,
            "n_prime": 6, "own_fraction": 1.0, "other_fraction": 1.0, "own_angle": math.pi, "other_angle": math.pi}
# heavy ball at beta = 0.9 on noiseless isotropic quadratics, from Assumption 4's radius: the distance
# grows in the third step (t = 2) by more than rho0 ~ l/4 (module docstring of the domains)
L2_POINT = {"family": 1, "d": 2, "delta": DELTA_MAX, "L": 1.0, "mu_over_L": 1.0, "noise": 1e-4,
            "clients_per_cluster": 16, "n_prime": 4, "beta": 0.9, "step": 2}


def test_which_claims_declare_a_domain():
    for claim_id in ("MGD.L1", "MGD.L2"):
        claim = get_claim(claim_id).validate()
        assert claim.domain is not None and not claim.no_domain
        assert claim.as_dict()["falsify"] == "yes"
    for claim_id in ("MGD.A1-5", "MGD.T1", "MGD.MA", "MGD.SPEED"):
        claim = get_claim(claim_id)
        assert claim.domain is None and claim.no_domain.endswith(".")


@pytest.mark.parametrize("domain", [l1_domain(), l2_domain()], ids=["L1", "L2"])
def test_parameters_decode_and_encode(domain):
    for unit in np.random.default_rng(0).uniform(size=(20, len(domain.parameters))):
        point = domain.decode(unit)
        domain.check_point(point)
        again = domain.decode(domain.encode(point))
        assert again.keys() == point.keys()
        for name, value in point.items():
            assert again[name] == value if isinstance(value, int) else math.isclose(again[name], value, rel_tol=1e-9)


@pytest.mark.parametrize("domain, point, other", [
    (l1_domain(), L1_POINT, {**L1_POINT, "family": 1, "n_prime": 3, "own_angle": 1.0}),
    (l2_domain(), L2_POINT, {**L2_POINT, "family": 0, "beta": 0.5, "step": 1}),
], ids=["L1", "L2"])
def test_an_instance_does_not_depend_on_its_batch(domain, point, other):
    alone = domain.evaluate([point], [11], CTX)[0]
    batched = domain.evaluate([other, point, point], [12, 11, 13], CTX)
    assert batched[1].as_dict() == alone.as_dict()
    assert batched[2].as_dict() != alone.as_dict()  # another seed, another instance
    assert alone.admissible


@pytest.mark.parametrize("kind", ["mlr", "quadratics", "logistic"])
def test_cluster_estimates_is_the_step_ifca_runs(kind):
    family = Family(kind, 3, delta=1.0, noise=0.7, mu=0.5, L=2.0)
    place = lambda truth: placed_in_balls(truth, init_radius(family), (0.7, 1.0), (2.0, -2.5))  # noqa: E731
    problem, models, losses, choice = cluster_estimates(family, spawn_seeds(5, 3), 12, 4, place)
    problem_again, options = family.problems(spawn_seeds(5, 3), 12, 4, iterations=1, resample="split")
    trace = ifca(problem_again, iterations=1, step_sizes=1.0 / family.smoothness, init=models,
                 record_assignments=True, **options)
    np.testing.assert_array_equal(choice, trace.assignments[:, 0, 0])
    np.testing.assert_array_equal(choice, losses.argmin(axis=-1))


def test_the_checks_placement_is_a_point_of_the_domain():
    truth = np.random.default_rng(1).normal(size=(4, 2, 5))
    np.testing.assert_allclose(placed_in_balls(truth, 0.3, (1.0, 1.0), (math.pi, math.pi)), placed_models(truth, 0.3),
                               atol=1e-15)
    moved = placed_in_balls(truth, 0.3, (0.5, 1.0), (1.0, -2.0)) - truth
    np.testing.assert_allclose(np.linalg.norm(moved, axis=-1), np.broadcast_to([0.15, 0.3], (4, 2)))
    line = (truth[:, 1] - truth[:, 0]) / np.linalg.norm(truth[:, 1] - truth[:, 0], axis=-1, keepdims=True)
    np.testing.assert_allclose(np.sum(moved * line[:, None], axis=-1) / [0.15, 0.3], np.cos([[1.0, -2.0]] * 4))


def test_l1_instance_against_the_gaussian_closed_form_of_quadratics():
    """On the stochastic quadratics the loss difference of a client at the two models is Gaussian:
    misassigned w.p. Phi((phi_0(chi_0) - phi_0(chi_1)) sqrt(n') / (tau ||A (chi_0 - chi_1)||)), and
    sigma^2 = tau^2 max_j ||A u_j||^2 + tau^4 ||A||_F^2 / 2 exactly (quadratics module docstring)."""
    point = {**L1_POINT, "family": 1, "d": 3, "L": 2.0, "mu_over_L": 0.5, "noise": 0.6, "n_prime": 4,
             "own_angle": 2.5, "other_angle": -3.0}
    instance = l1_domain().evaluate([point], [7], CTX)[0]
    family = Family("quadratics", 3, delta=1.0, noise=0.6, mu=1.0, L=2.0)
    place = lambda truth: placed_in_balls(truth, init_radius(family), (1.0, 1.0), (2.5, -3.0))  # noqa: E731
    draws = len(instance.samples)
    problem, models, _, choice = cluster_estimates(family, spawn_seeds(7, draws), 40, 4, place)
    A = problem.cluster_hessians[:, 0]
    u = models - problem.cluster_minimizers[:, :1]  # (B, 2, d): both models from chi*_0
    Au = np.einsum("bij,bkj->bki", A, u)
    sigma2 = 0.36 * np.max(np.sum(Au**2, axis=-1), axis=1) + 0.5 * 0.6**4 * np.sum(A**2, axis=(1, 2))
    own = problem.membership == 0
    frequency = (choice[:, own] != 0).mean(axis=1)
    np.testing.assert_allclose(instance.samples, frequency / (sigma2 / (1.0 * 1.0 * 4)), rtol=1e-12)
    gap = 0.5 * (np.sum(u[:, 0] * Au[:, 0], axis=-1) - np.sum(u[:, 1] * Au[:, 1], axis=-1))
    spread = 0.6 * np.linalg.norm(Au[:, 0] - Au[:, 1], axis=-1) / math.sqrt(4)
    probability = stats.norm.cdf(gap / spread).mean()
    clients = own.sum() * draws
    assert abs(instance.details["frequency"] - probability) < 4.5 * math.sqrt(probability * (1 - probability) / clients)
    assert instance.bound == 128.0 and instance.admissible


def test_l2_instance_against_the_heavy_ball_recursion():
    """With mu = L and no noise every client is assigned correctly and the server's step is
    e+ = (1 - l) e + beta (e - e-) on the distance (eta = 1/L, |C_p|/m = l = 1/2), from e = e- = r."""
    instance = l2_domain().evaluate([L2_POINT], [3], CTX)[0]
    radius = 0.25 * DELTA_MAX
    errors = [radius, radius]
    for _ in range(3):
        errors.append(0.5 * errors[-1] + 0.9 * (errors[-1] - errors[-2]))
    before, after = abs(errors[3]), abs(errors[4])
    assert instance.details["median_before"] == pytest.approx(before, rel=1e-3)
    assert instance.details["median_after"] == pytest.approx(after, rel=1e-3)
    family = Family("quadratics", 2, delta=DELTA_MAX, noise=1e-4, mu=1.0, L=1.0)
    problem, _ = family.problems(spawn_seeds(0, 1), 32, 4, 3, "fresh")
    rho0, _ = checks._rho0(family, problem, m=32, n_prime=4, beta=0.9)
    assert instance.details["rho0"] == pytest.approx(rho0, rel=1e-9)
    assert 0.125 < rho0 < 0.13  # l/4 and noise terms of order 1e-3
    bound = (1 - 0.5 / 8) * before + rho0
    assert after > bound  # the lemma's bound is exceeded in every run
    assert instance.exceedances == instance.trials == 32
    assert instance.bound == pytest.approx(0.1 + 4 * 2 * math.exp(-16))
    assert instance.margin == pytest.approx(after / bound, rel=1e-3)


def test_the_search_objective_orders_the_plateau_by_margin_and_the_score_keeps_its_sign():
    from cflbounds.falsify.search import _objective

    probability = l2_domain()
    quiet = lambda margin: Instance(0.0, 0.1, exceedances=0, trials=10, margin=margin)  # noqa: E731
    assert probability.score(quiet(0.2)) == probability.score(quiet(0.9)) < 0  # the verdict's score: flat
    assert _objective(probability.score(quiet(0.9)), 0.9) < _objective(probability.score(quiet(0.2)), 0.2)
    assert probability.score(Instance(0.5, 0.1, exceedances=5, trials=10, margin=2.0)) > 0


def test_l1_search_finds_no_counterexample():
    result = falsify_claim("MGD.L1", seed=0, budget=None, max_evaluations=30)
    assert result["outcome"] == "no counterexample found"
    assert 0 < result["best_ratio"] < 0.1


def _planted_l1(monkeypatch, c1):
    planted = replace(get_claim("MGD.L1"), id="MGD.L1-PLANTED", domain=l1_domain(c1=c1))
    registered = run.get_claim
    monkeypatch.setattr(run, "get_claim", lambda claim_id: planted if claim_id == planted.id else registered(claim_id))
    return planted.id


@pytest.mark.slow
def test_l1_search_refutes_a_planted_constant(monkeypatch):
    """c1 = 1 in place of 128: below the constants these families need (about 2 on the logistic
    mixture, 2.5 on mixed linear regression; halving 128 is no error they can show). The search
    path is MGD.L1's at seed 0 (the objective moves by log 128): the first point above c1 = 1 is
    evaluation 233, but shrinking it at its one seed walks to where fresh seeds no longer confirm
    (250 evaluations end in "no counterexample found"); by 440 the best point shrinks and confirms."""
    result = falsify_claim(_planted_l1(monkeypatch, 1.0), seed=0, budget=None, max_evaluations=PLANTED_EVALUATIONS)
    assert result["outcome"] == "violated"


def test_a_planted_constant_is_refuted_where_the_families_need_more(monkeypatch):
    domain = l1_domain(c1=1.0)
    assert isinstance(Claim("MGD.L1-PLANTED", "planted", domain=domain).validate(), Claim)
    confirmation = confirm(domain, CTX, L1_POINT, seed=0)
    assert confirmation.violated and confirmation.interval[0] > 0
    assert not confirm(l1_domain(), CTX, L1_POINT, seed=0).violated


@pytest.mark.slow
def test_l2_search_finds_the_momentum_violation():
    result = falsify_claim("MGD.L2", seed=0, budget=None, max_evaluations=L2_EVALUATIONS)
    assert result["outcome"] == "violated"
    example = result["counterexample"]
    assert example["measured"] > example["bound"] and example["parameters"]["beta"] > 0.5


def test_l2_violation_is_confirmed_on_fresh_seeds_and_replays():
    domain = l2_domain()
    confirmation = confirm(domain, CTX, L2_POINT, seed=0)
    assert confirmation.violated and confirmation.trials == 20 * 32
    first, again = domain.evaluate([L2_POINT], [5], CTX)[0], domain.evaluate([L2_POINT], [5], CTX)[0]
    assert first.as_dict() == again.as_dict() and domain.score(first) > 0
    ifca_point = {**L2_POINT, "beta": 0.0}  # IFCA's gradient step contracts: nothing to flag
    assert domain.evaluate([ifca_point], [5], CTX)[0].exceedances == 0


PLANTED_EVALUATIONS = 440
L2_EVALUATIONS = 200
