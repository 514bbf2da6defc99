"""CFL's problems against independent computations: theta* (stationary for the mixture, against a
generic solver), the gamma_i recomputed from the gradients, the adversarial rotation's angle and
target, alpha and alpha_intra^min by loops over pairs, the clients' quadratics consistent with
their gradients at theta*; the rotated digits' theta*, gradients and gamma_i estimates against
torch's autograd on SoftmaxRegression."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from scipy.optimize import minimize

from cflbounds import InvalidParameterError
from cflbounds.algorithms.small_models import SoftmaxRegression
from cflbounds.synthetic.cfl_quadratics import make_cfl_quadratics
from cflbounds.synthetic.digit_risks import make_digit_risks

from cflbounds.verify.testing import assert_rejected, invalid_calls

from conftest import examples

VALID = {make_cfl_quadratics: dict(k=2, clients=4, d=3), make_digit_risks: dict(clients=4, k=2, train_per_client=5)}
GAMMAS = np.array([0.0, 0.05, 0.2, 0.4, 0.6, 0.8, 0.95, 0.3, 0.1, 0.5, 0.7, 0.25])


@given(k=st.integers(2, 4), direction=st.sampled_from(["random", "adversarial"]), seed=st.integers(0, 10**6),
       spread=st.sampled_from([0.0, 0.5, 1.0]))
@examples(30)
def test_relative_errors_are_exact_and_theta_star_is_stationary(k, direction, seed, spread):
    problem = make_cfl_quadratics(k, 12, 4, relative_error=GAMMAS, error_direction=direction, hessian_spread=spread,
                                  batch_size=2, seed=seed)
    true = np.einsum("bikl,bil->bik", problem.risk_hessians[:, problem.membership[0]],
                     problem.stationary_point[:, None] - problem.risk_optima[:, problem.membership[0]])
    gradients = problem.federation.client_gradients(problem.stationary_point[:, None])[:, 0]  # grad r_i(theta*)
    recomputed = np.linalg.norm(gradients - true, axis=-1) / np.linalg.norm(true, axis=-1)
    np.testing.assert_allclose(recomputed, np.broadcast_to(GAMMAS, (2, 12)), atol=1e-10)
    np.testing.assert_allclose(problem.realised_relative_errors, np.broadcast_to(GAMMAS, (2, 12)), atol=1e-12)
    mixture = np.einsum("bj,bjd->bd", problem.mixture_weights, problem.risk_gradients)
    np.testing.assert_allclose(mixture, 0.0, atol=1e-12)
    cosine = (true * gradients).sum(-1) / np.linalg.norm(true, axis=-1) / np.linalg.norm(gradients, axis=-1)
    floor = np.sqrt(1 - GAMMAS**2)  # any e with ||e|| = gamma ||a|| keeps cos(a + e, a) >= sqrt(1 - gamma^2)
    assert np.all(cosine >= floor - 1e-12)
    if direction == "adversarial":
        np.testing.assert_allclose(cosine, np.broadcast_to(floor, (2, 12)), atol=1e-12)  # the largest angle


def test_adversarial_errors_rotate_towards_the_nearest_other_distribution():
    problem = make_cfl_quadratics(4, 12, 5, relative_error=0.5, error_direction="adversarial", batch_size=3, seed=2)
    for b in range(3):
        gradients = problem.risk_gradients[b]
        unit = gradients / np.linalg.norm(gradients, axis=-1, keepdims=True)
        for i, j in enumerate(problem.membership[b]):
            others = [o for o in range(4) if o != j]
            nearest = others[int(np.argmax([unit[j] @ unit[o] for o in others]))]
            client = problem.client_gradients[b, i] / np.linalg.norm(problem.client_gradients[b, i])
            assert client @ unit[nearest] > unit[j] @ unit[nearest] + 1e-3  # closer to it than the truth is
            plane = np.linalg.matrix_rank(np.stack([unit[j], unit[nearest], client]), tol=1e-9)
            assert plane == 2  # in the plane of the two true gradients


def test_theta_star_against_a_generic_solver():
    problem = make_cfl_quadratics(3, 7, 4, weights=np.arange(1, 8) / 28, batch_size=2, seed=5)
    for b in range(2):
        def mixture(theta):
            return sum(p * 0.5 * (theta - problem.risk_optima[b, j]) @ problem.risk_hessians[b, j]
                       @ (theta - problem.risk_optima[b, j]) for p, j in zip(problem.weights, problem.membership[b]))
        found = minimize(mixture, np.zeros(4), method="BFGS", options={"gtol": 1e-12}).x
        np.testing.assert_allclose(problem.stationary_point[b], found, atol=1e-6)


def test_alpha_and_the_intra_minimum_by_loops_over_pairs():
    problem = make_cfl_quadratics(3, 9, 5, relative_error=0.3, batch_size=2, seed=8)
    for b in range(2):
        g = problem.client_gradients[b]
        for i in range(9):
            for j in range(9):
                expected = np.dot(g[i], g[j]) / (np.linalg.norm(g[i]) * np.linalg.norm(g[j]))
                assert problem.similarities[b, i, j] == pytest.approx(expected, abs=1e-14)
        same = [problem.similarities[b, i, j] for i in range(9) for j in range(9)
                if i != j and problem.membership[b, i] == problem.membership[b, j]]
        assert problem.intra_similarity_min[b] == min(same)


def test_the_clients_quadratics_and_the_federated_stationary_point():
    problem = make_cfl_quadratics(2, 6, 3, relative_error=0.4, weights=[0.1, 0.2, 0.1, 0.2, 0.3, 0.1], batch_size=2,
                                  seed=1)
    np.testing.assert_allclose(problem.empirical_mean_gradient, np.einsum("i,bid->bd", problem.weights, problem.errors))
    shift = np.linalg.solve(problem.federation.global_hessian, problem.empirical_mean_gradient[..., None])[..., 0]
    np.testing.assert_allclose(problem.federation.minimizer, problem.stationary_point - shift, atol=1e-12)
    np.testing.assert_array_equal(problem.membership[0], [0, 0, 0, 1, 1, 1])
    np.testing.assert_allclose(problem.federation.hessians_exact, problem.risk_hessians[:, problem.membership[0]])


def test_a_problem_depends_on_its_seed_only():
    batch = make_cfl_quadratics(3, 6, 4, error_direction="adversarial", relative_error=0.3, batch_size=3, seed=[4, 5, 6])
    alone = make_cfl_quadratics(3, 6, 4, error_direction="adversarial", relative_error=0.3, seed=[5])
    np.testing.assert_array_equal(batch.subset([1]).errors, alone.errors)
    np.testing.assert_array_equal(batch.subset([1]).federation.optima_exact, alone.federation.optima_exact)


def test_bad_combinations_are_refused_in_one_line():
    for kwargs, fragment in ((dict(k=3, clients=2), "at least one client"), (dict(k=1, error_direction="adversarial"),
                             "k >= 2"), (dict(relative_error=[0.1, 0.2]), "'relative_error'"),
                             (dict(relative_error=1.0), "'relative_error'")):
        with pytest.raises(InvalidParameterError, match=fragment) as error:
            make_cfl_quadratics(**kwargs)
        assert "\n" not in str(error.value)


# -- the learned case: rotated digits --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def digits():
    return make_digit_risks(8, 4, train_per_client=40, bootstrap=50, batch_size=2, seed=3)


def _autograd_gradient(theta, features, labels, regularization):
    """The ridge-regularised cross-entropy's gradient by torch's autograd on SoftmaxRegression."""
    model = SoftmaxRegression(64, 10)
    params = torch.tensor(theta, dtype=torch.float64, requires_grad=True)
    x = torch.as_tensor(features, dtype=torch.float64)[None, None]
    y = torch.as_tensor(labels)[None, None]
    loss = model.per_sample_loss(params[None, None, None], x, y).mean() + 0.5 * regularization * params @ params
    (gradient,) = torch.autograd.grad(loss, params)
    return gradient.numpy()


def test_digits_theta_star_and_gradients_against_autograd(digits):
    from cflbounds.synthetic.digit_risks import _rotated_pool

    theta = digits.stationary_point[0]
    pool, labels = _rotated_pool(4)
    risks = np.stack([_autograd_gradient(theta, pool[j], labels, digits.regularization) for j in range(4)])
    np.testing.assert_allclose(digits.risk_gradients, risks, atol=1e-12)
    assert np.linalg.norm(digits.mixture_weights @ risks) < 1e-10 and digits.stationarity < 1e-10
    features, client_labels = digits.data.train.features.double().numpy(), digits.data.train.labels.numpy()
    for b in range(2):
        for i in range(8):
            expected = _autograd_gradient(theta, features[b, i], client_labels[b, i], digits.regularization)
            np.testing.assert_allclose(digits.client_gradients[b, i], expected, atol=1e-12)
            truth = risks[digits.membership[b, i]]
            gamma = np.linalg.norm(truth - expected) / np.linalg.norm(truth)
            assert digits.relative_errors[b, i] == pytest.approx(gamma, rel=1e-10)


def test_digits_gamma_estimates_carry_their_bootstrap_uncertainty(digits):
    low, high = digits.relative_error_interval[..., 0], digits.relative_error_interval[..., 1]
    assert np.all(digits.relative_error_se > 0) and np.all(low < high)
    assert np.mean((low <= digits.relative_errors) & (digits.relative_errors <= high)) > 0.9
    unit = digits.client_gradients / np.linalg.norm(digits.client_gradients, axis=-1, keepdims=True)
    np.testing.assert_allclose(digits.similarities, np.einsum("bip,bjp->bij", unit, unit), atol=1e-14)
    oracle_gradient = digits.oracle().gradient(torch.as_tensor(digits.stationary_point)[:, None].expand(2, 8, 650))
    np.testing.assert_allclose(oracle_gradient.numpy(), digits.client_gradients, atol=1e-12)


@pytest.mark.parametrize("function, kwargs, name", invalid_calls(VALID))
def test_every_parameter_is_validated_with_its_name(function, kwargs, name):
    assert_rejected(function, kwargs, name)
