"""The constants CFL-MGD's checks use, per problem family, confirmed by Monte Carlo.

Estimates are means of i.i.d. samples compared within 4.5 standard errors (a normal
tail of 7e-6 per comparison), with fixed seeds.
"""
from __future__ import annotations

import numpy as np
import pytest

from cflbounds.papers.cfl_mgd.problems import Family, init_radius, placed_models

SE_MARGIN = 4.5
FAMILIES = [Family("mlr", 4, delta=1.0, noise=0.3), Family("quadratics", 4, delta=1.2, noise=0.4, mu=0.5, L=3.0),
            Family("logistic", 4, delta=1.0, regularization=0.1)]


def _problem(family):
    problem, _ = family.problems([11, 12], 4, 8, 1, "none")
    return problem


def _samples(family, problem, cluster, count, seed):
    """Per-sample losses ``f(w; z)`` as a function of points ``w`` ``(B, d)`` under cluster data."""
    rng = np.random.default_rng(seed)
    truth = family.truth(problem)[:, cluster]
    if family.kind == "mlr":
        x = rng.standard_normal((problem.batch_size, count, family.d))
        y = np.einsum("bsd,bd->bs", x, truth) + family.noise * rng.standard_normal((problem.batch_size, count))
        return lambda w: (y - np.einsum("bsd,bd->bs", x, w)) ** 2
    hessian = problem.cluster_hessians[:, cluster]
    xi = truth[:, None] + family.noise * rng.standard_normal((problem.batch_size, count, family.d))
    return lambda w: 0.5 * np.einsum("bsi,bij,bsj->bs", w[:, None] - xi, hessian, w[:, None] - xi)


@pytest.mark.parametrize("family", FAMILIES[:2], ids=["mlr", "quadratics"])
def test_loss_variance_and_excess_loss_against_monte_carlo(family):
    problem = _problem(family)
    rng = np.random.default_rng(3)
    for cluster in range(2):
        losses = _samples(family, problem, cluster, 200_000, seed=cluster)
        for w in (family.truth(problem)[:, 1 - cluster], family.truth(problem)[:, cluster]
                  + 0.3 * rng.standard_normal((2, family.d))):
            values = losses(w)
            centred = (values - values.mean(axis=1, keepdims=True)) ** 2
            se = centred.std(axis=1, ddof=1) / np.sqrt(values.shape[1])
            assert np.all(np.abs(centred.mean(axis=1) - family.loss_variance(problem, w, cluster)) <= SE_MARGIN * se
                          + 1e-3 * family.loss_variance(problem, w, cluster))  # + the O(1/N) bias of a centred mean
            optimum = losses(family.truth(problem)[:, cluster])
            gap = values - optimum  # a paired difference: small variance
            se_gap = gap.std(axis=1, ddof=1) / np.sqrt(gap.shape[1])
            assert np.all(np.abs(gap.mean(axis=1) - family.excess_loss(problem, w, cluster)) <= SE_MARGIN * se_gap)


def test_logistic_family_uses_the_generators_quadrature():
    family = FAMILIES[2]
    problem = _problem(family)
    w = family.truth(problem)[:, 1]
    np.testing.assert_allclose(family.loss_variance(problem, w, 0), problem.loss_variance(w, 0))
    np.testing.assert_allclose(family.excess_loss(problem, w, 0), problem.population_loss(w, 0)
                               - problem.min_loss()[:, 0])
    assert family.strong_convexity == 0.1 and family.smoothness == pytest.approx(0.35)


@pytest.mark.parametrize("family", FAMILIES, ids=["mlr", "quadratics", "logistic"])
def test_variance_bounds_cover_the_ball_under_every_cluster(family):
    problem = _problem(family)
    radius = init_radius(family)
    sigma2, v2 = family.variance_bounds(problem, radius)
    rng = np.random.default_rng(4)
    truth = family.truth(problem)
    if family.kind == "logistic":  # evaluated at the farthest point along the line of centers: check that point
        far = truth[:, 1] + radius * (truth[:, 1] - truth[:, 0]) / family.delta
        assert sigma2 == pytest.approx(problem.loss_variance(far, 0).max())
        return
    for _ in range(20):  # random models in the ball around either optimum, under either cluster's data
        direction = rng.standard_normal((2, family.d))
        direction *= rng.uniform(0, radius) / np.linalg.norm(direction, axis=1, keepdims=True)
        for own in range(2):
            for data in range(2):
                assert np.all(family.loss_variance(problem, truth[:, own] + direction, data) <= sigma2 * (1 + 1e-12))
    if family.kind == "quadratics":  # v^2 = tau^2 ||A||_F^2, the same at every point
        assert v2 == pytest.approx(family.noise**2 * np.square(problem.hessians_exact).sum(axis=(-2, -1)).max())


@pytest.mark.parametrize("family", FAMILIES, ids=["mlr", "quadratics", "logistic"])
def test_placed_models_sit_on_assumption_4s_sphere_along_the_line_of_centers(family):
    problem = _problem(family)
    truth = family.truth(problem)
    radius = init_radius(family)
    models = placed_models(truth, radius)
    np.testing.assert_allclose(np.linalg.norm(models - truth, axis=-1), radius, rtol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(models[:, 1] - truth[:, 0], axis=-1), family.delta - radius, rtol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(models[:, 0] - truth[:, 1], axis=-1), family.delta + radius, rtol=1e-12)
    np.testing.assert_allclose(problem.separation, family.delta, rtol=1e-12)
    assert radius == pytest.approx(0.25 * np.sqrt(family.strong_convexity / family.smoothness) * family.delta)
