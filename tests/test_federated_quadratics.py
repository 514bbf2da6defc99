"""The heterogeneous quadratics: every closed-form constant against an independent computation
(brute force over random points, finite differences, a generic solver, Monte Carlo of the
noise), seeding against batch layout, and the one-line errors on invalid constants."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from scipy.optimize import minimize

from cflbounds import InvalidParameterError
from cflbounds.synthetic.counter_random import counter_hash
from cflbounds.synthetic.heterogeneous_quadratics import gaussian_noise, make_heterogeneous_quadratics

from conftest import examples

mk = make_heterogeneous_quadratics


@pytest.fixture(scope="module")
def problem():
    weights = np.array([0.1, 0.2, 0.3, 0.15, 0.25])
    return mk(5, 4, strong_convexity=0.5, smoothness=6.0, heterogeneity=1.5, hessian_spread=0.6,
              noise_std=[0.1, 0.5, 1.0, 0.0, 2.0], weights=weights, batch_size=3, seed=7)


def test_spectra_lie_in_the_range_and_end_there_at_the_extreme_spreads(problem):
    eigenvalues = np.linalg.eigvalsh(problem.hessians_exact)
    assert eigenvalues.min() >= 0.5 - 1e-12 and eigenvalues.max() <= 6.0 + 1e-12
    np.testing.assert_allclose(problem.smoothness, eigenvalues.max(axis=(1, 2)), rtol=1e-14)
    np.testing.assert_allclose(problem.strong_convexity, eigenvalues.min(axis=(1, 2)), rtol=1e-14)
    for spread in (0.0, 1.0):
        extreme = mk(4, 3, strong_convexity=0.5, smoothness=6.0, hessian_spread=spread, batch_size=2, seed=1)
        np.testing.assert_allclose(extreme.smoothness, 6.0, rtol=1e-12)
        np.testing.assert_allclose(extreme.strong_convexity, 0.5, rtol=1e-12)
    shared = mk(4, 3, hessian_spread=0.0, seed=1)
    assert np.all(shared.hessian_dissimilarity < 1e-12)
    np.testing.assert_allclose(np.linalg.norm(problem.optima_exact, axis=-1), 1.5, rtol=1e-12)


def test_minimiser_and_minimum_against_a_generic_solver(problem):
    for b in range(problem.batch_size):
        def objective(w):
            return sum(p * 0.5 * (w - bk) @ A @ (w - bk) for p, A, bk in
                       zip(problem.weights, problem.hessians_exact[b], problem.optima_exact[b]))
        found = minimize(objective, np.zeros(problem.d), method="BFGS", options={"gtol": 1e-12})
        np.testing.assert_allclose(problem.minimizer[b], found.x, atol=1e-6)
        assert problem.min_value[b] == pytest.approx(found.fun, rel=1e-10)
        assert problem.heterogeneity[b] == pytest.approx(found.fun, rel=1e-10)  # F_k* = 0
    np.testing.assert_allclose(problem.gradient(problem.minimizer[:, None])[:, 0], 0.0, atol=1e-12)
    points = np.random.default_rng(0).standard_normal((3, 6, problem.d))
    np.testing.assert_allclose(problem.objective_gap(points), problem.objective(points) - problem.min_value[:, None],
                               rtol=1e-10)
    np.testing.assert_allclose(problem.distance_sq(points),
                               np.square(points - problem.minimizer[:, None]).sum(-1), rtol=1e-14)


def test_gradients_against_finite_differences(problem):
    w = np.random.default_rng(1).standard_normal((3, problem.d))
    h = 1e-6
    numeric = np.stack([(problem.client_objectives(w + h * e) - problem.client_objectives(w - h * e)) / (2 * h)
                        for e in np.eye(problem.d)], axis=-1)  # (B, N, d)
    np.testing.assert_allclose(problem.client_gradients(w), numeric, atol=1e-7)
    torch_gradient = problem.oracle().gradient(torch.as_tensor(w)[:, None].expand(3, 5, problem.d))
    np.testing.assert_allclose(torch_gradient.numpy(), problem.client_gradients(w), rtol=1e-12, atol=1e-14)


def test_local_gd_sigma_and_delta_against_their_definitions(problem):
    gradients = problem.client_gradients(problem.minimizer)  # (B, N, d)
    np.testing.assert_allclose(problem.optimum_gradient_variance,
                               sum(p * np.square(gradients[:, k]).sum(-1) for k, p in enumerate(problem.weights)))
    mean_hessian = sum(p * problem.hessians_exact[:, k] for k, p in enumerate(problem.weights))
    delta = [max(np.linalg.norm(problem.hessians_exact[b, k] - mean_hessian[b], 2) for k in range(5)) for b in range(3)]
    np.testing.assert_allclose(problem.hessian_dissimilarity, delta, rtol=1e-12)


def _dissimilarity_sides(problem, points):
    """``sum_k p_k ||grad F_k(w)||^2`` and ``||grad F(w)||^2`` at points ``(B, P, d)``, straightforwardly."""
    gradients = problem.client_gradients(points)  # (B, P, N, d)
    spread = np.einsum("bpnd,bpnd,n->bp", gradients, gradients, problem.weights)
    mean = np.einsum("bpnd,n->bpd", gradients, problem.weights)
    return spread, np.square(mean).sum(-1)


@pytest.mark.parametrize("B", [1.5, 2.0, 4.0])
def test_smallest_G_holds_at_random_points_and_is_attained(problem, B):
    G = problem.dissimilarity_G(B)
    assert np.all(np.isfinite(G))
    rng = np.random.default_rng(2)
    points = problem.minimizer[:, None] + rng.standard_normal((3, 4000, problem.d)) * rng.exponential(2.0, (3, 4000, 1))
    spread, mean = _dissimilarity_sides(problem, points)
    assert np.all(spread <= G[:, None] ** 2 + B**2 * mean + 1e-9 * (1 + spread))
    # the worst point, from the quadratic form in u = w - w*: grad F_k = A_k u + c_k
    Abar = problem.global_hessian
    c = problem.optimum_gradients
    M = np.einsum("n,bnij,bnjk->bik", problem.weights, problem.hessians_exact, problem.hessians_exact)
    v = np.einsum("n,bnij,bnj->bi", problem.weights, problem.hessians_exact, c)
    u = np.linalg.solve(B**2 * Abar @ Abar - M, v[..., None])[..., 0]
    spread, mean = _dissimilarity_sides(problem, (problem.minimizer + u)[:, None])
    np.testing.assert_allclose(spread[:, 0] - B**2 * mean[:, 0], G**2, rtol=1e-9)  # tight: no smaller G works


def test_smallest_B_inverts_smallest_G_and_is_infeasible_below(problem):
    for B in (1.3, 2.5, 7.0):
        G = problem.dissimilarity_G(B)
        np.testing.assert_allclose(problem.dissimilarity_B(G), B, rtol=1e-9)
    s = problem.optimum_gradient_variance
    assert np.all(np.isinf(problem.dissimilarity_B(0.9 * np.sqrt(s))))  # below the value at w*
    B_inf = problem.dissimilarity_B(1e8)  # G -> inf: B^2 -> lambda_max(Abar^-1 M Abar^-1) >= 1 (Jensen)
    assert np.all(B_inf >= 1.0) and np.all(np.isinf(problem.dissimilarity_G(0.999 * B_inf)))


def test_fedprox_dissimilarity_at_a_point(problem):
    w = np.random.default_rng(3).standard_normal((3, 2, problem.d))
    spread, mean = _dissimilarity_sides(problem, w)
    np.testing.assert_allclose(problem.local_dissimilarity(w), np.sqrt(spread / mean), rtol=1e-12)
    assert np.all(problem.local_dissimilarity(w) >= 1.0)
    assert np.all(np.isinf(problem.local_dissimilarity(problem.minimizer[:, None])))


# Monte Carlo: 6 standard errors (two-sided Gaussian tail ~2e-9, seeds fixed); a wrong scale
# (sigma instead of sigma / sqrt(d), d = 4) is off by a factor 4, hundreds of standard errors.
N_SE = 6.0


def test_noise_has_mean_zero_and_exact_variance(problem):
    samples = 20_000
    w = torch.as_tensor(np.random.default_rng(4).standard_normal((3, 5, problem.d)))
    oracle = problem.oracle()
    keys = counter_hash(np.arange(15, dtype=np.uint64).reshape(3, 5), 99)
    exact = oracle.gradient(w)
    errors = np.stack([(oracle.stochastic_gradient(w, keys, t)[0] - exact).numpy() for t in range(samples)])
    squared = np.square(errors).sum(-1)  # (samples, B, N)
    se = squared.std(axis=0, ddof=1) / math.sqrt(samples)
    variance = np.square(problem.noise_std)
    assert np.all(np.abs(squared.mean(0) - variance) <= N_SE * se + 1e-15)
    mean_se = errors.std(axis=0, ddof=1) / math.sqrt(samples)
    assert np.all(np.abs(errors.mean(0)) <= N_SE * mean_se + 1e-15)
    second = oracle.stochastic_gradient(w, keys, 0)[1].numpy()
    np.testing.assert_allclose(second, np.square(exact.numpy()).sum(-1) + variance, rtol=1e-12)


def test_noise_depends_on_key_and_counter_only():
    keys = counter_hash(np.arange(6, dtype=np.uint64).reshape(2, 3), 5)
    whole = gaussian_noise(keys, 3, 4, torch.float64, "cpu")
    alone = gaussian_noise(keys[1:, 2:], 3, 4, torch.float64, "cpu")
    assert torch.equal(whole[1:, 2:], alone)
    assert not torch.equal(whole, gaussian_noise(keys, 4, 4, torch.float64, "cpu"))


def test_problem_b_depends_on_its_seed_only():
    batch = mk(4, 3, batch_size=3, seed=[5, 6, 7])
    alone = mk(4, 3, seed=[6])
    np.testing.assert_array_equal(batch.hessians_exact[1], alone.hessians_exact[0])
    np.testing.assert_array_equal(batch.optima_exact[1], alone.optima_exact[0])
    sub = batch.subset([2])
    np.testing.assert_array_equal(sub.minimizer, batch.minimizer[2:])


@pytest.mark.parametrize("kwargs, name", [
    (dict(strong_convexity=2.0, smoothness=1.0), "strong_convexity"),
    (dict(weights=[0.5, 0.4, 0.2]), "weights"),
    (dict(weights=[1.2, -0.1, -0.1]), "weights"),
    (dict(noise_std=-0.1), "noise_std"),
    (dict(noise_std=[0.1, 0.2]), "noise_std"),
    (dict(hessian_spread=1.5), "hessian_spread"),
    (dict(smoothness=0.0), "smoothness"),
    (dict(clients=0), "clients"),
])
def test_invalid_constants_raise_one_line_naming_the_parameter(kwargs, name):
    with pytest.raises(InvalidParameterError) as error:
        mk(**{"clients": 3, "d": 2, **kwargs})
    message = str(error.value)
    assert f"'{name}'" in message and "\n" not in message


@examples(20)
@given(clients=st.integers(1, 6), d=st.integers(2, 5), spread=st.floats(0.0, 1.0), kappa=st.floats(1.0, 50.0),
       B=st.floats(1.0, 10.0), seed=st.integers(0, 2**31))
def test_dissimilarity_pair_holds_and_inverts_on_random_problems(clients, d, spread, kappa, B, seed):
    problem = mk(clients, d, strong_convexity=1.0, smoothness=kappa, hessian_spread=spread, heterogeneity=1.0,
                 seed=seed)
    G = problem.dissimilarity_G(B)
    points = problem.minimizer[:, None] + np.random.default_rng(seed).standard_normal((1, 500, d)) * 3.0
    spread_side, mean_side = _dissimilarity_sides(problem, points)
    if np.isfinite(G[0]):
        assert np.all(spread_side <= G[0] ** 2 + B**2 * mean_side + 1e-9 * (1 + spread_side))
        B_back = problem.dissimilarity_B(G)[0]
        assert B_back <= B * (1 + 1e-7)  # B is feasible at G(B); the smallest B is no larger
    else:  # no G works: B is below sqrt(lambda_max(Q)), the smallest B as G -> inf
        assert B < problem.dissimilarity_B(1e12)[0] * (1 + 1e-9)
