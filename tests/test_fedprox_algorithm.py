"""FedProx batched against a per-run, per-device NumPy loop (same keys, same numbers); the exact
local solve against a generic solver; mu = 0 with exact solves averages the clients' minimisers;
the realised gamma against the requested one and against gradient descent's contraction; batch
invariance; what the trace records; divergence; bad input refused before any work."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.optimize import minimize

from cflbounds import InvalidParameterError
from cflbounds.algorithms.fedprox import fedprox
from cflbounds.synthetic.heterogeneous_logistic import make_heterogeneous_logistic
from cflbounds.synthetic.heterogeneous_quadratics import make_heterogeneous_quadratics

from cflbounds.verify.testing import assert_rejected, invalid_calls

from conftest import examples, load_benchmark

reference_fedprox = load_benchmark("reference_catalogue").reference_fedprox  # the per-run, per-device loop

N, D, B = 6, 3, 3
WEIGHTS = np.array([0.1, 0.25, 0.2, 0.15, 0.2, 0.1])
X0 = np.array([1.0, -2.0, 0.5])


@pytest.fixture(scope="module")
def problem():
    return make_heterogeneous_quadratics(N, D, strong_convexity=0.5, smoothness=3.0, heterogeneity=1.0,
                                         hessian_spread=0.8, weights=WEIGHTS, batch_size=B, seed=5)


@pytest.fixture(scope="module")
def nonconvex():
    return make_heterogeneous_quadratics(N, D, strong_convexity=1.0, smoothness=3.0, hessian_spread=1.0,
                                         negative_curvature=0.4, weights=WEIGHTS, batch_size=B, seed=6)


CASES = [
    dict(local_solver="exact"),
    dict(local_solver="exact", sampling="experiments"),
    dict(local_solver="gd", local_steps=7, local_step_size=0.2),
    dict(local_solver="gd", local_steps=7, local_step_size=0.2, sampling="experiments"),
    dict(local_solver="gd", local_steps=60, local_step_size=0.2, inexactness=0.05),
]


@pytest.mark.parametrize("options", CASES, ids=lambda o: "-".join(f"{v}" for v in o.values()))
@pytest.mark.parametrize("which", ["convex", "nonconvex"])
def test_batched_equals_the_per_run_loop(problem, nonconvex, options, which):
    instance = problem if which == "convex" else nonconvex
    mu = 0.9
    trace = fedprox(instance, rounds=5, mu=mu, sampled=4, init=X0, seed=8, **options)
    for b in range(B):
        models, realised, taken = reference_fedprox(instance, b, 8, 5, mu, 4, options.get("sampling", "paper"),
                                                    options["local_solver"], options.get("local_steps"),
                                                    options.get("local_step_size"), options.get("inexactness"), X0)
        np.testing.assert_allclose(trace.points[b], models, rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(trace.inexactness[b], realised, rtol=1e-9, atol=1e-12)  # exact: 0 to rounding
        np.testing.assert_array_equal(trace.local_steps_taken[b], taken)
    np.testing.assert_allclose(trace.objective_gap, instance.objective_gap(trace.points), rtol=1e-12)


def test_mu_per_run(problem):
    mus = np.array([0.3, 1.0, 2.5])
    trace = fedprox(problem, rounds=3, mu=mus, sampled=3, local_solver="gd", local_steps=4, init=X0)
    for b in range(B):
        step = 1.0 / (problem.smoothness[b] + mus[b])  # the default step 1/(L + mu)
        expected = reference_fedprox(problem, b, 0, 3, mus[b], 3, "paper", "gd", 4, step, None, X0)[0]
        np.testing.assert_allclose(trace.points[b], expected, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("which", ["convex", "nonconvex"])
def test_one_exact_round_is_the_proximal_points_averaged(problem, nonconvex, which):
    """All N devices once (experiments' sampling, K = N): w^1 = sum_k p_k argmin h_k(.; w^0), each
    argmin found by scipy's BFGS on h_k."""
    instance = problem if which == "convex" else nonconvex
    mu = 0.7
    trace = fedprox(instance, rounds=1, mu=mu, sampled=N, sampling="experiments", init=X0)
    for b in range(B):
        solutions = []
        for A, bk in zip(instance.hessians_exact[b], instance.optima_exact[b]):
            def h(w):
                return 0.5 * (w - bk) @ A @ (w - bk) + 0.5 * mu * (w - X0) @ (w - X0)
            solutions.append(minimize(h, X0, jac=lambda w: A @ (w - bk) + mu * (w - X0), method="BFGS",
                                      options={"gtol": 1e-12}).x)
        np.testing.assert_allclose(trace.points[b, 1], WEIGHTS @ np.array(solutions), atol=1e-7)
    assert np.all(trace.inexactness < 1e-12)  # exact solves: gamma = 0 to rounding


def test_mu_zero_with_exact_solves_averages_the_clients_minimisers(problem):
    trace = fedprox(problem, rounds=4, mu=0.0, sampled=5, init=X0, seed=3)
    for r in range(4):
        chosen = trace.sampled_clients[:, r]
        expected = problem.optima_exact[np.arange(B)[:, None], chosen].mean(axis=1)  # (1/K) sum_{k in S} b_k
        np.testing.assert_allclose(trace.points[:, r + 1], expected, rtol=1e-12, atol=1e-13)
    full = fedprox(problem, rounds=1, mu=0.0, sampled=N, sampling="experiments", init=X0)
    np.testing.assert_allclose(full.points[:, 1], np.einsum("n,bnd->bd", WEIGHTS, problem.optima_exact), rtol=1e-12)


@given(gamma=st.sampled_from([0.5, 0.1, 0.01]), seed=st.integers(0, 10**6), mu=st.floats(0.05, 5.0))
@examples(20)
def test_the_realised_gamma_meets_the_requested_one(gamma, seed, mu):
    instance = make_heterogeneous_quadratics(5, 3, strong_convexity=0.2, smoothness=4.0, batch_size=2, seed=seed)
    trace = fedprox(instance, rounds=3, mu=mu, sampled=3, local_solver="gd", local_steps=2000, inexactness=gamma,
                    init=np.ones(3))
    assert np.all(trace.inexactness <= gamma)
    assert np.all(trace.local_steps_taken < 2000)  # every device stopped by the rule, none by the cap
    short = fedprox(instance, rounds=1, mu=mu, sampled=3, local_solver="gd", local_steps=1, init=np.ones(3))
    took_one = trace.local_steps_taken[:, 0] == 1  # the rule stops at the first gamma-inexact iterate:
    assert np.all(short.inexactness[:, 0][took_one] <= gamma)  # one step was enough,
    assert np.all(trace.inexactness[:, 0][trace.local_steps_taken[:, 0] == 0] <= gamma)  # or none

@given(seed=st.integers(0, 10**6), steps=st.integers(1, 12), mu=st.floats(0.0, 3.0))
@examples(20)
def test_fixed_steps_contract_as_gradient_descent_on_h_k_does(seed, steps, mu):
    """GD with step 1/(L_k + mu) on h_k (curvature in [mu + lambda_min, mu + lambda_max]) shrinks
    ||grad h_k|| by at least q_k = 1 - (mu + lambda_min)/(mu + L) per step: gamma_k <= q_k^E."""
    instance = make_heterogeneous_quadratics(4, 3, strong_convexity=0.3, smoothness=2.0, batch_size=2, seed=seed)
    trace = fedprox(instance, rounds=2, mu=mu, sampled=4, local_solver="gd", local_steps=steps, init=np.ones(3))
    L = instance.smoothness[:, None, None]
    low = instance.client_strong_convexity[np.arange(2)[:, None, None], trace.sampled_clients]
    rate = 1.0 - (mu + low) / (mu + L)
    assert np.all(trace.inexactness <= rate**steps * (1 + 1e-9) + 1e-15)
    assert np.all(trace.local_steps_taken == steps)


def test_gamma_one_keeps_the_server_model(problem):
    """gamma = 1: w^t itself is 1-inexact, every device returns it at once."""
    trace = fedprox(problem, rounds=3, mu=0.5, sampled=3, local_solver="gd", local_steps=10, inexactness=1.0, init=X0)
    assert np.all(trace.local_steps_taken == 0)
    np.testing.assert_allclose(trace.points, np.broadcast_to(X0, trace.points.shape), rtol=0, atol=0)


def test_a_run_is_the_same_alone_and_in_a_batch(problem):
    options = dict(rounds=4, mu=0.8, sampled=3, local_solver="gd", local_steps=30, inexactness=0.2, init=X0)
    batch = fedprox(problem, seed=[3, 4, 5], **options)
    alone = fedprox(problem.subset([1]), seed=4, **options)
    np.testing.assert_allclose(batch.points[1:2], alone.points, rtol=1e-13, atol=1e-14)
    np.testing.assert_array_equal(batch.sampled_clients[1:2], alone.sampled_clients)
    np.testing.assert_array_equal(batch.local_steps_taken[1:2], alone.local_steps_taken)
    np.testing.assert_allclose(batch.inexactness[1:2], alone.inexactness, rtol=1e-12)


def test_the_trace_records_the_iterates_constants(problem):
    trace = fedprox(problem, rounds=4, mu=1.0, sampled=4, init=X0)
    np.testing.assert_allclose(trace.dissimilarity, problem.local_dissimilarity(trace.points), rtol=1e-10)
    np.testing.assert_allclose(trace.gradient_norm_sq, np.square(problem.gradient(trace.points)).sum(-1), rtol=1e-10)
    gradients = problem.client_gradients(trace.points[:, :-1])  # (B, R, N, d): grad F_k(w^t)
    chosen = np.take_along_axis(np.linalg.norm(gradients, axis=-1), trace.sampled_clients, axis=-1)
    np.testing.assert_allclose(trace.client_gradient_norm, chosen, rtol=1e-12)
    np.testing.assert_allclose(trace.slot_weights, 1.0 / 4)  # the paper's plain average
    assert trace.sampled_clients.shape == (B, 4, 4) and np.all(trace.steps == np.arange(5))


def test_the_experiments_sampling_draws_distinct_devices_weighted_by_data(problem):
    trace = fedprox(problem, rounds=20, mu=1.0, sampled=3, sampling="experiments")
    chosen = trace.sampled_clients
    assert all(len(set(row)) == 3 for row in chosen.reshape(-1, 3))
    np.testing.assert_allclose(trace.slot_weights, WEIGHTS[chosen] / WEIGHTS[chosen].sum(-1, keepdims=True))


def test_logistic_clients_run_gradient_descent():
    logistic = make_heterogeneous_logistic(2, 6, 20, 3, batch_size=2, seed=1)
    trace = fedprox(logistic, rounds=3, mu=0.5, sampled=3, local_solver="gd", local_steps=500, inexactness=0.1)
    assert np.all(trace.inexactness <= 0.1) and np.all(trace.dissimilarity >= 1.0)
    np.testing.assert_allclose(trace.gradient_norm_sq, np.square(logistic.gradient(trace.points)).sum(-1), rtol=1e-9)
    with pytest.raises(InvalidParameterError, match="proximal map"):
        fedprox(logistic, rounds=1, mu=0.5, sampled=2)


def test_divergence_is_recorded_never_raised(problem):
    trace = fedprox(problem, rounds=120, mu=0.01, sampled=3, local_solver="gd", local_steps=5, local_step_size=3.0,
                    init=X0)
    assert np.all(trace.diverged) and np.all(trace.diverged_at > 0)
    assert np.all(np.isinf(trace.objective_gap[:, -1]))


class NoWork:
    """A problem whose oracle and proximal map fail: a call that reaches the work shows up as this error."""

    def __init__(self, problem):
        self._problem = problem

    def __getattr__(self, name):
        return getattr(self._problem, name)

    def oracle(self, clients=None):
        raise AssertionError("work started before the input was checked")

    proximal_map = oracle


@pytest.mark.parametrize("which, options, fragment", [
    ("nonconvex", dict(mu="L_minus"), "'mu' parameter of fedprox must be greater than L_minus"),  # mu = L_minus
    ("nonconvex", dict(mu=0.3), "'mu' parameter of fedprox must be greater than L_minus"),
    ("convex", dict(mu=-0.1), "'mu' parameter"),
    ("convex", dict(mu=[1.0, 2.0]), "'mu' parameter"),
    ("convex", dict(inexactness=-0.1, local_solver="gd", local_steps=3), "'inexactness' parameter"),
    ("convex", dict(inexactness=1.5, local_solver="gd", local_steps=3), "'inexactness' parameter"),
    ("convex", dict(sampled=0), "'sampled' parameter"),
    ("convex", dict(sampled=N + 1, sampling="experiments"), "'sampled' parameter"),
    ("convex", dict(local_steps=3), "local_solver='gd' only"),
    ("convex", dict(local_solver="gd"), "needs 'local_steps'"),
    ("convex", dict(sampling="uniform"), "'sampling' parameter"),
])
def test_bad_input_is_one_line_before_any_work(problem, nonconvex, which, options, fragment):
    instance = NoWork(problem if which == "convex" else nonconvex)
    kwargs = {**dict(rounds=2, mu=1.0, sampled=3), **options}
    if kwargs["mu"] == "L_minus":
        kwargs["mu"] = float(nonconvex.curvature_floor.max())
        assert kwargs["mu"] == pytest.approx(0.4, rel=1e-12)
    with pytest.raises(InvalidParameterError) as error:
        fedprox(instance, **kwargs)
    assert fragment in str(error.value) and "\n" not in str(error.value)


def test_paper_sampling_may_draw_more_devices_than_there_are(problem):
    trace = fedprox(problem, rounds=2, mu=1.0, sampled=2 * N)
    assert trace.sampled_clients.shape[-1] == 2 * N


VALID_CALLS = {fedprox: dict(problem=make_heterogeneous_quadratics(3, 2, seed=0), rounds=1, mu=1.0, sampled=2)}


@pytest.mark.parametrize("function, kwargs, name", invalid_calls(VALID_CALLS))
def test_every_parameter_is_validated_with_its_name(function, kwargs, name):
    assert_rejected(function, kwargs, name)
