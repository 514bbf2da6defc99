"""FedProx's claims (cflbounds/papers/fedprox): the exact expectations they rest on against the
algorithm's own runs, the mu they choose, each claim's smoke verdict, and planted wrong
constants flagged."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from cflbounds.algorithms.fedprox import fedprox, local_solutions
from cflbounds.bounds import fedprox as bounds
from cflbounds.papers.fedprox import checks, runs
from cflbounds.papers.fedprox.domain import C7_DOMAIN, FOLLOWS_DOMAIN, T4_DOMAIN, T6_DOMAIN, T11_DOMAIN
from cflbounds.verify.context import VerifyContext


@pytest.fixture(scope="module")
def ctx():
    return VerifyContext(scale="smoke", seed=0, device="cpu")


@pytest.fixture(scope="module")
def problem():
    return runs.problems([3, 4], clients=4, d=3, mu_over_L=0.2, heterogeneity=1.0, hessian_spread=0.5)


def _replicated(problem, w, mu, copies):
    batch = problem.subset(np.repeat(np.arange(problem.batch_size), copies).tolist())
    return batch, np.repeat(w, copies, axis=0), np.repeat(mu, copies)


@pytest.mark.parametrize("sampling, key", [("paper", "after"), ("experiments", "after_experiments")])
def test_one_rounds_exact_expectation_is_the_mean_of_the_algorithms_rounds(problem, sampling, key):
    w, mu, copies = runs.starts(problem, 1.0), np.array([2.0, 3.0]), 4000
    exact = runs.one_round(problem, w, mu, K=3)[key]
    batch, starts, mus = _replicated(problem, w, mu, copies)
    trace = fedprox(batch, rounds=1, mu=mus, sampled=3, sampling=sampling, init=starts, seed=np.arange(len(mus)))
    gaps = batch.objective_gap(trace.points[:, 1][:, None])[:, 0].reshape(problem.batch_size, copies)
    error = gaps.std(axis=1) / np.sqrt(copies)
    assert np.all(np.abs(gaps.mean(axis=1) - exact) < 6 * error)  # fixed seeds; 6 standard errors


def test_one_round_without_sampling_noise_is_the_algorithms_round_exactly(problem):
    """K = N under the experiments' sampling takes every device once: no randomness left."""
    w, mu = runs.starts(problem, 2.0), np.array([2.0, 5.0])
    for gamma, options in ((None, {}), (0.2, {"local_solver": "gd", "local_steps": runs.GD_STEPS, "inexactness": 0.2})):
        exact = runs.one_round(problem, w, mu, gamma=gamma, K=problem.clients)
        trace = fedprox(problem, rounds=1, mu=mu, sampled=problem.clients, sampling="experiments", init=w, **options)
        np.testing.assert_allclose(exact["after_experiments"], problem.objective_gap(trace.points[:, 1][:, None])[:, 0],
                                   rtol=1e-12)
        assert np.all(exact["gamma"] <= (0.0 if gamma is None else gamma) + 1e-12)


def test_local_solutions_are_the_rounds_own(problem):
    w, mu = runs.starts(problem, 1.0), 2.0
    local = local_solutions(problem, w, mu=mu, local_solver="gd", local_steps=50, inexactness=0.3)
    trace = fedprox(problem, rounds=1, mu=mu, sampled=problem.clients, sampling="experiments", init=w,
                    local_solver="gd", local_steps=50, inexactness=0.3)
    np.testing.assert_allclose(local.solutions.mean(axis=1), trace.points[:, 1], rtol=1e-12)
    assert np.all(local.inexactness <= 0.3)


@pytest.mark.parametrize("rounds", [1, 2, 7, 64])
def test_the_doubling_sums_the_moment_recursion(problem, rounds):
    w, mu, K = runs.starts(problem, 1.0), np.array([2.0, 3.0]), 3
    M = runs.moment_map(problem, mu, K)
    d, u = problem.d, w - problem.minimizer
    state = np.concatenate([u, np.einsum("bi,bj->bij", u, u).reshape(2, -1), np.ones((2, 1))], axis=1)
    square = np.einsum("bij,bjk->bik", problem.global_hessian, problem.global_hessian).reshape(2, -1)
    total = np.zeros(2)
    for _ in range(rounds):
        total += np.einsum("bi,bi->b", square, state[:, d:-1])
        state = np.einsum("bij,bj->bi", M, state)
    np.testing.assert_allclose(runs.average_gradient_norm_sq(problem, w, mu, K, rounds), total / rounds, rtol=1e-10)


def test_the_moments_are_the_algorithms_on_one_device():
    """One device: the paper's sampling always draws it, the run is deterministic."""
    single = runs.problems([5], clients=1, d=3, mu_over_L=0.3, heterogeneity=1.0, hessian_spread=0.5)
    w = runs.starts(single, 3.0)
    trace = fedprox(single, rounds=9, mu=1.5, sampled=4, init=w)
    np.testing.assert_allclose(runs.average_gradient_norm_sq(single, w, 1.5, 4, 9),
                               trace.gradient_norm_sq[:, :9].mean(axis=1), rtol=1e-10)


def test_the_moments_match_the_algorithms_runs_in_the_mean(problem):
    w, mu, copies, rounds = runs.starts(problem, 1.0), np.array([2.0, 3.0]), 3000, 5
    batch, starts, mus = _replicated(problem, w, mu, copies)
    trace = fedprox(batch, rounds=rounds, mu=mus, sampled=2, init=starts, seed=np.arange(len(mus)))
    averages = trace.gradient_norm_sq[:, :rounds].mean(axis=1).reshape(2, copies)
    exact = runs.average_gradient_norm_sq(problem, w, mu, 2, rounds)
    assert np.all(np.abs(averages.mean(axis=1) - exact) < 6 * averages.std(axis=1) / np.sqrt(copies))


def test_smallest_mu_is_where_rho_turns_positive():
    mu = runs.smallest_mu(gamma=0.1, B=1.3, L=1.0, L_minus=0.2, K=100)
    assert bounds.rho(mu=mu, gamma=0.1, B=1.3, L=1.0, L_minus=0.2, K=100) > 0
    assert bounds.rho(mu=mu * (1 - 1e-9), gamma=0.1, B=1.3, L=1.0, L_minus=0.2, K=100) <= 0
    best = runs.largest_mu_rho(gamma=0.1, B=1.3, L=1.0, L_minus=0.2, K=100)
    values = [bounds.rho(mu=best * f, gamma=0.1, B=1.3, L=1.0, L_minus=0.2, K=100) for f in (0.9, 1.0, 1.1)]
    assert values[1] >= max(values[0], values[2])
    # mu rho -> 1 - gamma B - sqrt(2) B (1 + gamma)/sqrt(K) as mu grows: negative at K = 1, B = 1
    assert np.isnan(runs.smallest_mu(gamma=0.0, B=1.0, L=1.0, L_minus=0.0, K=1))


@pytest.mark.parametrize("check, expected", [(checks.check_t4, "holds"), (checks.check_c7, "holds"),
                                             (checks.check_t11, "holds"), (checks.check_t6, "holds"),
                                             (checks.check_c7_follows, "violated")])
def test_each_claims_smoke_verdict(ctx, check, expected):
    verdict = check(ctx)
    assert verdict.verdict == expected, verdict.summary
    assert verdict.evidence["admissible_instances"] > 0 and verdict.assumptions


def test_t4_and_t11_promise_decreases_the_runs_come_close_to(ctx):
    """The claims are not vacuous: the realised decrease is within a factor 3 of rho's promise."""
    for check in (checks.check_t4, checks.check_t11):
        assert 1.0 <= check(ctx).evidence["decrease_over_promised_min"] < 3.0


def test_corollary_7_does_not_follow_near_its_ranges_edge(ctx):
    """Theorem 4's rho at mu = 6 L B^2 over 1/(24 L B^2) is 4(11/12 - sqrt(2) r - 1/(6B) - sqrt(2) r/(3B)
    - r^2/(3B^2)) (r = B/sqrt(K)): below 1 at r = 0.5 for every B, above it at r = 0.1."""
    table = checks.follows_rows(ctx)
    r, B = table["B_over_sqrt_K"], table["B"]
    by_hand = 4 * (11 / 12 - np.sqrt(2) * r - 1 / (6 * B) - np.sqrt(2) * r / (3 * B) - r**2 / (3 * B**2))
    np.testing.assert_allclose(table["theorem_over_corollary"], by_hand, rtol=1e-9)
    violated = table["measured"] > table["bound"] * (1 + 1e-9)
    assert violated[table["ratio"] == 0.5].all() and not violated[table["ratio"] <= 0.1].any()


def _times(function, factor):
    """``function`` with its value (a float or a BoundResult's ``value``) ``factor`` times the true one."""
    def planted(**kwargs):
        result = function(**kwargs)
        return replace(result, value=factor * result.value) if hasattr(result, "value") else factor * result
    return planted


def _fewer_rounds(**kwargs):
    """Theorem 6 with a hundredth of the rounds (at least 1)."""
    result = bounds.theorem6_rounds(**kwargs)
    return replace(result, value=max(1.0, float(np.ceil(0.01 * result.value))))


@pytest.mark.parametrize("check, planted", [
    (checks.check_t4, {"rho": _times(bounds.rho, 3.0)}),  # rho three times too large
    (checks.check_c7, {"corollary": _times(bounds.corollary7, 6.0)}),  # 1/(4 L B^2) for 1/(24 L B^2)
    (checks.check_t11, {"theorem": _times(bounds.theorem11, 3.0)}),
    (checks.check_t6, {"theorem": _fewer_rounds}),
])
def test_planted_wrong_constants_are_flagged(ctx, check, planted):
    assert check(ctx, **planted).verdict == "violated"


@pytest.mark.parametrize("domain", [T4_DOMAIN, C7_DOMAIN, T11_DOMAIN, T6_DOMAIN, FOLLOWS_DOMAIN])
def test_each_domain_is_well_formed_and_evaluates_its_simplest_point(ctx, domain):
    assert domain.problems() == []
    point = {p.name: p.simplest for p in domain.parameters}
    instance, = domain.evaluate([point], [7], ctx)
    assert np.isfinite(instance.measured) and instance.assumptions is not None


def test_an_unbounded_draw_is_inadmissible_not_an_error(ctx):
    point = {p.name: p.simplest for p in T4_DOMAIN.parameters} | {"negative_curvature": 2.0, "hessian_spread": 1.0,
                                                                 "mu_over_L": 0.01}
    instance, = T4_DOMAIN.evaluate([point], [7], ctx)
    assert not instance.admissible
