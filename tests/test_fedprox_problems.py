"""FedProx's constants of the heterogeneous quadratics against independent computations: B(w)
(Definition 3) client by client, B_eps against brute force and a generic solver on the sphere,
Theorem 11's sigma^2 against the variance at random points, the non-convex variant's L_minus
from the eigenvalues, and the proximal step against scipy.optimize.minimize on h_k."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.optimize import minimize

from cflbounds import InvalidParameterError
from cflbounds.bounds.fedprox import dissimilarity_from_variance
from cflbounds.synthetic.dissimilarity_constants import (dissimilarity_sup, gradient_norm_sq, gradient_variance,
                                                         gradient_variance_bound)
from cflbounds.synthetic.heterogeneous_quadratics import make_heterogeneous_quadratics

from cflbounds.verify.testing import assert_rejected, invalid_calls

from conftest import examples

mk = make_heterogeneous_quadratics
WEIGHTS = np.array([0.1, 0.3, 0.2, 0.15, 0.25])
VALID = {dissimilarity_sup: dict(problem=mk(3, 2, seed=0), epsilon=0.5)}


@pytest.fixture(scope="module")
def problem():
    return mk(5, 3, strong_convexity=0.5, smoothness=4.0, heterogeneity=1.0, hessian_spread=0.7, weights=WEIGHTS,
              batch_size=3, seed=11)


def _client_by_client(problem, b, w):
    """(E_k ||grad F_k(w)||^2, ||grad f(w)||^2, E_k ||grad F_k(w) - grad f(w)||^2) by a loop over clients."""
    gradients = [A @ (w - bk) for A, bk in zip(problem.hessians_exact[b], problem.optima_exact[b])]
    mean = sum(p * g for p, g in zip(problem.weights, gradients))
    spread = sum(p * g @ g for p, g in zip(problem.weights, gradients))
    variance = sum(p * (g - mean) @ (g - mean) for p, g in zip(problem.weights, gradients))
    return spread, mean @ mean, variance


def test_local_dissimilarity_is_definition_3_client_by_client(problem):
    points = np.random.default_rng(1).standard_normal((3, 7, 3))
    found = problem.local_dissimilarity(points)
    variance = gradient_variance(problem, points)
    norms = gradient_norm_sq(problem, points)
    for b in range(3):
        for s, w in enumerate(points[b]):
            spread, mean, var = _client_by_client(problem, b, w)
            assert found[b, s] == pytest.approx(np.sqrt(spread / mean), rel=1e-12)
            assert variance[b, s] == pytest.approx(var, rel=1e-10)
            assert norms[b, s] == pytest.approx(mean, rel=1e-12)
    assert np.all(found >= 1.0)  # Jensen: B(w) >= 1
    assert np.all(np.isinf(problem.local_dissimilarity(problem.minimizer[:, None])))


@given(seed=st.integers(0, 10**6), spread=st.sampled_from([0.0, 0.3, 1.0]), log_eps=st.floats(-3, 2))
@examples(25)
def test_b_eps_bounds_every_point_of_the_set_and_is_reached_on_its_boundary(seed, spread, log_eps):
    problem = mk(4, 3, hessian_spread=spread, smoothness=8.0, batch_size=2, seed=seed)
    epsilon = 10.0**log_eps
    sup = dissimilarity_sup(problem, epsilon)
    np.testing.assert_allclose(gradient_norm_sq(problem, sup.worst_point[:, None])[:, 0], epsilon, rtol=1e-9)
    np.testing.assert_allclose(sup.attained, sup.value, rtol=1e-9)  # the upper bound is reached
    rng = np.random.default_rng(seed)
    directions = rng.standard_normal((2, 4000, 3))
    radii = np.sqrt(epsilon) * np.exp(rng.exponential(0.5, (2, 4000, 1)))  # ||grad f||^2 > eps
    z = directions / np.linalg.norm(directions, axis=-1, keepdims=True) * radii
    points = problem.minimizer[:, None] + np.linalg.solve(problem.global_hessian[:, None], z[..., None])[..., 0]
    assert np.all(problem.local_dissimilarity(points) <= sup.value[:, None] * (1 + 1e-12))
    larger = dissimilarity_sup(problem, 2 * epsilon)
    assert np.all(larger.value <= sup.value * (1 + 1e-12))  # a smaller set, a smaller sup


def test_b_eps_against_a_generic_solver_on_the_sphere(problem):
    epsilon = 0.2
    sup = dissimilarity_sup(problem, epsilon)
    for b in range(problem.batch_size):
        inverse = np.linalg.inv(problem.global_hessian[b])

        def negative_b_squared(x):
            w = problem.minimizer[b] + inverse @ (np.sqrt(epsilon) * x / np.linalg.norm(x))
            spread, mean, _ = _client_by_client(problem, b, w)
            return -spread / mean

        starts = np.random.default_rng(b).standard_normal((30, problem.d))
        best = min(minimize(negative_b_squared, x0, method="BFGS").fun for x0 in starts)
        assert np.sqrt(-best) == pytest.approx(sup.value[b], rel=1e-7)


def test_equal_hessians_give_theorem_11s_bound_exactly():
    """hessian_spread = 0: the variance is the constant sigma^2 everywhere, and B_eps is Theorem
    11's sqrt(1 + sigma^2/eps) (the bound is tight on this family)."""
    problem = mk(6, 4, hessian_spread=0.0, weights=[0.1, 0.1, 0.2, 0.2, 0.3, 0.1], batch_size=2, seed=3)
    sigma_sq = gradient_variance_bound(problem)
    points = np.random.default_rng(0).standard_normal((2, 50, 4)) * 5
    np.testing.assert_allclose(gradient_variance(problem, points), np.broadcast_to(sigma_sq[:, None], (2, 50)),
                               rtol=1e-9)
    for epsilon in (0.01, 1.0, 30.0):
        expected = [dissimilarity_from_variance(s, epsilon) for s in sigma_sq]
        np.testing.assert_allclose(dissimilarity_sup(problem, epsilon).value, expected, rtol=1e-9)


def test_unequal_hessians_have_unbounded_variance(problem):
    """Along Q's top eigenvector e in z = grad f(w) = t e the variance is (nu_max - 1) t^2 + 2 t v_e + s."""
    assert np.all(np.isinf(gradient_variance_bound(problem)))
    nu, v, s, vectors = problem.dissimilarity_form
    assert np.all(nu[:, -1] > 1.0 + 1e-6)
    t = np.array([1.0, 10.0, 100.0])
    z = t[None, :, None] * vectors[:, None, :, -1]
    far = problem.minimizer[:, None] + np.linalg.solve(problem.global_hessian[:, None], z[..., None])[..., 0]
    variance = gradient_variance(problem, far)
    expected = (nu[:, -1:] - 1.0) * t**2 + 2 * t * v[:, -1:] + s[:, None]
    np.testing.assert_allclose(variance, expected, rtol=1e-9)


def test_the_non_convex_variant_has_its_exact_curvature_floor():
    problem = mk(6, 4, strong_convexity=1.0, smoothness=5.0, hessian_spread=1.0, negative_curvature=0.3, batch_size=3,
                 seed=2)
    eigenvalues = np.linalg.eigvalsh(problem.hessians_exact)
    np.testing.assert_allclose(eigenvalues[..., 0], -0.3, atol=1e-12)  # every client has the eigenvalue -c
    np.testing.assert_allclose(problem.curvature_floor, 0.3, rtol=1e-12)
    assert np.all(np.linalg.eigvalsh(problem.global_hessian)[:, 0] > 0)  # F bounded below
    assert np.all(np.isneginf(problem.client_min_values))
    mixed = mk(6, 4, strong_convexity=1.0, smoothness=5.0, hessian_spread=0.5, negative_curvature=0.3, seed=2)
    assert mixed.curvature_floor[0] == 0.0  # (1 - s) mu - s c > 0: convex after all
    assert np.all(mk(3, 2, seed=0).curvature_floor == 0.0)
    with pytest.raises(InvalidParameterError, match="unbounded below") as error:
        mk(2, 3, strong_convexity=0.1, smoothness=1.0, hessian_spread=1.0, negative_curvature=5.0, seed=0)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("negative_curvature, spread, mu", [(0.0, 0.5, 0.7), (0.0, 0.5, 0.0), (0.4, 1.0, 0.5)])
def test_the_proximal_map_is_the_minimiser_of_h_k(negative_curvature, spread, mu):
    problem = mk(4, 3, strong_convexity=0.5, smoothness=3.0, hessian_spread=spread,
                 negative_curvature=negative_curvature, batch_size=2, seed=4)
    operator, offset = problem.proximal_map(mu)
    start = np.array([0.3, -1.0, 2.0])
    for b in range(2):
        for k in range(4):
            A, bk = problem.hessians_exact[b, k], problem.optima_exact[b, k]

            def h(w):
                return 0.5 * (w - bk) @ A @ (w - bk) + 0.5 * mu * (w - start) @ (w - start)

            found = minimize(h, start, jac=lambda w: A @ (w - bk) + mu * (w - start), method="BFGS",
                             options={"gtol": 1e-12}).x
            closed = operator[b, k].numpy() @ start + offset[b, k].numpy()
            np.testing.assert_allclose(closed, found, atol=1e-7)


@pytest.mark.parametrize("function, kwargs, name", invalid_calls(VALID))
def test_every_parameter_is_validated_with_its_name(function, kwargs, name):
    assert_rejected(function, kwargs, name)
