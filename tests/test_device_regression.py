"""Device regression on finite data sets: every constant of FedCluster's Theorem 1 against a plain
loop over the data, least squares, Monte Carlo over the draws, and brute-force maximisation."""
import numpy as np
import pytest
import torch
from scipy.optimize import minimize
from test_fedcluster_problems import brute_force_ball_max

from cflbounds._validation import InvalidParameterError
from cflbounds.synthetic.device_regression import make_device_regression
from cflbounds.synthetic.heterogeneity import quadratic_spread_sup, spread_at
from cflbounds.synthetic.quadratics import QuadraticFederation

SIZES = [3, 4, 5, 6, 7, 9]  # unequal n_k: padding and p_k = n_k / sum n are exercised


@pytest.fixture(scope="module")
def problem():
    return make_device_regression(6, 3, samples=SIZES, clusters=2, designs="client", design_min=0.3,
                                  design_max=1.5, separation=2.0, spread=0.7, noise_std=0.4, batch_size=2, seed=3)


def data(problem, b, k):
    n = problem.sizes[k]
    return problem.inputs[b, k, :n], problem.targets[b, k, :n]


def per_sample_gradients(problem, b, k, w):
    x, y = data(problem, b, k)
    return np.array([xi * (xi @ w - yi) for xi, yi in zip(x, y)])


def points(problem, seed=0, count=4):
    return np.random.default_rng(seed).standard_normal((problem.batch_size, count, problem.d)) * 2


def test_losses_gradients_and_variances_against_a_loop_over_the_data(problem):
    w = points(problem)
    losses, gradients, variances = problem.client_losses(w), problem.client_gradients(w), problem.gradient_variances(w)
    for b in range(2):
        for p in range(w.shape[1]):
            for k in range(6):
                x, y = data(problem, b, k)
                assert losses[b, p, k] == pytest.approx(np.mean([0.5 * (xi @ w[b, p] - yi) ** 2 for xi, yi in zip(x, y)]),
                                                        rel=1e-12)
                g = per_sample_gradients(problem, b, k, w[b, p])
                np.testing.assert_allclose(gradients[b, p, k], g.mean(0), rtol=1e-10, atol=1e-12)
                assert variances[b, p, k] == pytest.approx(np.mean(np.sum((g - g.mean(0)) ** 2, axis=1)), rel=1e-9)
    np.testing.assert_allclose(problem.global_loss(w), losses @ (np.array(SIZES) / sum(SIZES)), rtol=1e-12)
    np.testing.assert_allclose(problem.weights, np.array(SIZES) / sum(SIZES))


def test_gradient_is_the_derivative_of_the_loss(problem):
    w, step = points(problem, 1), 1e-6
    numeric = np.stack([(problem.global_loss(w + step * e) - problem.global_loss(w - step * e)) / (2 * step)
                        for e in np.eye(3)], axis=-1)
    np.testing.assert_allclose(problem.global_gradient(w), numeric, atol=1e-7)


def test_per_sample_smoothness_is_the_largest_hessian_eigenvalue_and_inputs_are_bounded(problem):
    # the per-sample Hessian is x x^T; its largest eigenvalue, maximised over the device's data
    for b in range(2):
        for k in range(6):
            x, _ = data(problem, b, k)
            largest = max(np.linalg.eigvalsh(np.outer(xi, xi))[-1] for xi in x)
            assert problem.client_smoothness[b, k] == pytest.approx(largest, rel=1e-12)
    np.testing.assert_allclose(problem.smoothness, problem.client_smoothness.max(1))
    assert np.all(problem.client_smoothness <= 3 * 1.5 * (1 + 1e-12))  # ||x||^2 <= d lambda_max(Sigma)


def test_infimum_is_the_weighted_least_squares(problem):
    for b in range(2):  # stack every point with weight p_k / n_k and solve by lstsq
        rows, targets = [], []
        for k in range(6):
            x, y = data(problem, b, k)
            scale = np.sqrt(problem.weights[k] / problem.sizes[k])
            rows.append(x * scale)
            targets.append(y * scale)
        solution = np.linalg.lstsq(np.vstack(rows), np.concatenate(targets), rcond=None)[0]
        np.testing.assert_allclose(problem.global_minimizer[b], solution, rtol=1e-9, atol=1e-12)
        loss = lambda v: problem.global_loss(np.tile(v, (2, 1))[:, None])[b, 0]
        assert problem.global_min_value[b] == pytest.approx(loss(solution), rel=1e-12)
        found = minimize(loss, np.zeros(3), method="BFGS").fun
        assert problem.global_min_value[b] <= found + 1e-12 and found <= problem.global_min_value[b] + 1e-8


def test_draws_are_uniform_on_each_data_set_and_match_the_moments_by_monte_carlo(problem):
    """20000 draws per device: every point's frequency within 5 standard errors of 1/n_k, and the
    mean and variance of the per-sample gradient within 5 standard errors of grad f_k and s_k^2."""
    n = 20000
    samples = problem.draw(n, 0).numpy()  # (B, N, n, d + 1)
    w = points(problem, 2, 1)
    for b in range(2):
        for k, size in enumerate(SIZES):
            x, y = data(problem, b, k)
            drawn_x, drawn_y = samples[b, k, :, None, :3], samples[b, k, :, None, 3]
            hits = (drawn_x == x[None]).all(-1) & (drawn_y == y[None])
            assert np.all(hits.sum(1) == 1)  # every draw is one of the device's points, with its own target
            frequency = hits.mean(0)
            assert np.all(np.abs(frequency - 1 / size) <= 5 * np.sqrt(1 / size * (1 - 1 / size) / n))
            g = samples[b, k, :, :3] * (samples[b, k, :, :3] @ w[b, 0] - samples[b, k, :, 3])[:, None]
            exact_mean, exact_variance = problem.client_gradients(w)[b, 0, k], problem.gradient_variances(w)[b, 0, k]
            assert np.linalg.norm(g.mean(0) - exact_mean) <= 5 * np.sqrt(exact_variance / n)
            squared = np.sum((g - exact_mean) ** 2, axis=1)
            assert abs(squared.mean() - exact_variance) <= 5 * squared.std() / np.sqrt(n)


def test_sample_gradients_and_second_moments_in_torch(problem):
    samples = problem.draw(5, 3)
    models = torch.as_tensor(np.random.default_rng(4).standard_normal((2, 6, 2, 3)))
    batched = problem.sample_gradients(models, samples).numpy()
    for b in range(2):
        for k in range(6):
            for c in range(2):
                xs, ys = samples[b, k, :, :3].numpy(), samples[b, k, :, 3].numpy()
                expected = np.mean([xi * (xi @ models[b, k, c].numpy() - yi) for xi, yi in zip(xs, ys)], axis=0)
                np.testing.assert_allclose(batched[b, k, c], expected, rtol=1e-12, atol=1e-14)
    w = models.numpy()[:, :, 0]  # (B, N, d): device k at its own point
    second = problem.second_moments(models[:, :, :1]).numpy()[..., 0]
    at = problem.gradient_variances(w) + np.square(problem.client_gradients(w)).sum(-1)  # (B, N, N)
    np.testing.assert_allclose(second, np.diagonal(at, axis1=1, axis2=2), rtol=1e-10)
    clients = torch.tensor([[5, 0], [2, 2]])
    subset = problem.second_moments(models[:, :2], clients).numpy()
    np.testing.assert_allclose(subset[0, 0], problem.second_moments(models[:, [0] * 6]).numpy()[0, 5], rtol=1e-12)
    np.testing.assert_allclose(subset[1, 1], problem.second_moments(models[:, [1] * 6]).numpy()[1, 2], rtol=1e-12)


@pytest.mark.parametrize("k", [0, 3, 5])
def test_variance_and_second_moment_sups_match_brute_force(problem, k):
    center, radius = problem.global_minimizer + 0.3, np.array([1.3, 0.8])
    variance, second = problem.variance_sup(center, radius), problem.second_moment_sup(center, radius)
    for b in range(2):
        s2 = lambda v: problem.gradient_variances(np.tile(v, (2, 1))[:, None])[b, 0, k]
        g2 = lambda v: s2(v) + np.sum(problem.client_gradients(np.tile(v, (2, 1))[:, None])[b, 0, k] ** 2)
        for exact, value in ((variance, s2), (second, g2)):
            brute = brute_force_ball_max(value, center[b], radius[b], 3, seed=k)
            assert exact.gap[b, k] <= 1e-9 * exact.upper[b, k]
            assert brute <= exact.upper[b, k] * (1 + 1e-9)
            assert brute == pytest.approx(exact.upper[b, k], rel=1e-6)


def test_heterogeneity_sup_on_the_regression_matches_brute_force(problem):
    membership = np.array([0, 0, 1, 1, 2, 2])
    center, radius = problem.global_minimizer[:1], 1.1
    exact = quadratic_spread_sup(problem, membership, center, radius)
    h = lambda v: spread_at(problem.client_gradients(np.tile(v, (2, 1))[:, None])[0, 0], problem.weights,
                            membership)[0]
    assert brute_force_ball_max(h, center[0], radius, 3, seed=0) == pytest.approx(exact.upper[0], rel=1e-6)


def test_full_gradient_problem_is_a_quadratic_federation_with_the_same_gradients_and_gaps(problem):
    quadratic = problem.as_quadratic_federation()
    assert isinstance(quadratic, QuadraticFederation) and not np.any(quadratic.gradient_variance)
    w = points(problem, 5)
    np.testing.assert_allclose(quadratic.client_gradients(w), problem.client_gradients(w), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(quadratic.global_minimizer, problem.global_minimizer, rtol=1e-12)
    np.testing.assert_allclose(quadratic.global_loss(w) - quadratic.global_min_value[:, None],
                               problem.global_loss(w) - problem.global_min_value[:, None], rtol=1e-9)
    full = quadratic.population_gradients(torch.as_tensor(w)).numpy()
    np.testing.assert_allclose(full, problem.client_gradients(w), rtol=1e-10, atol=1e-12)
    x, _ = data(problem, 1, 4)
    np.testing.assert_allclose(quadratic.hessians_exact[1, 4], x.T @ x / len(x), rtol=1e-12)
    np.testing.assert_array_equal(quadratic.membership, problem.membership)


def test_noise_free_targets_make_each_device_least_squares_its_generating_optimum():
    clean = make_device_regression(6, 3, samples=SIZES, clusters=2, noise_std=0.0, spread=0.7, batch_size=2, seed=8)
    np.testing.assert_allclose(clean.optima_exact, clean.optima_true, rtol=1e-9, atol=1e-10)
    distances = np.linalg.norm(clean.optima_true - clean.centers_exact[:, clean.membership], axis=-1)
    np.testing.assert_allclose(distances, 0.7, rtol=1e-12)  # theta_k = c_cluster(k) + spread u_k


def test_problems_depend_only_on_their_own_seed_and_the_dtype_is_kept(problem):
    alone = make_device_regression(6, 3, samples=SIZES, clusters=2, designs="client", design_min=0.3, design_max=1.5,
                                   separation=2.0, spread=0.7, noise_std=0.4, seed=[problem.seeds[1]])
    np.testing.assert_array_equal(alone.inputs[0], problem.inputs[1])
    np.testing.assert_array_equal(alone.targets[0], problem.targets[1])
    np.testing.assert_array_equal(alone.draw(4, 7)[0].numpy(), problem.draw(4, 7)[1].numpy())
    single = make_device_regression(6, 3, samples=10, clusters=2, dtype="float32", seed=1)
    assert single.draw(2, 0).dtype == torch.float32
    assert single.second_moments(torch.zeros(1, 6, 1, 3, dtype=torch.float32)).dtype == torch.float32


@pytest.mark.parametrize("kwargs, name", [
    ({"samples": 2}, "'samples'"),
    ({"samples": [5] * 5}, "'samples'"),
    ({"samples": 2.5}, "'samples'"),
    ({"design_min": 2.0, "design_max": 1.0}, "'design_min'"),
    ({"design_min": 0.0}, "'design_min'"),
    ({"designs": "device"}, "'designs'"),
    ({"noise_std": -0.1}, "'noise_std'"),
    ({"clusters": 4}, "clusters"),
    ({"dtype": "float16"}, "'dtype'"),
    ({"seed": -1}, "'seed'"),
])
def test_invalid_parameters_are_rejected_by_name(kwargs, name):
    with pytest.raises(InvalidParameterError, match=name):
        make_device_regression(**{"clients": 6, "d": 3, "samples": 5, **kwargs})
