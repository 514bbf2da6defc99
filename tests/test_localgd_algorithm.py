"""Local GD (Khaled, Mishchenko & Richtárik 2019) batched against a plain per-run, per-client
NumPy loop; H = 1 is gradient descent on f; the averaged iterate; the synchronisation times;
divergence; bad input."""
from __future__ import annotations

import numpy as np
import pytest

from cflbounds import InvalidParameterError
from cflbounds.algorithms.local_gd import local_gd, sync_times
from cflbounds.synthetic.heterogeneous_quadratics import make_heterogeneous_quadratics

from conftest import load_benchmark

reference_local_gd = load_benchmark("reference_catalogue").reference_local_gd  # client by client

M, D, B = 4, 3, 3


@pytest.fixture(scope="module")
def problem():
    return make_heterogeneous_quadratics(M, D, strong_convexity=0.2, smoothness=2.0, heterogeneity=2.0,
                                         noise_std=0.5, batch_size=B, seed=21)  # the noise is never used


@pytest.mark.parametrize("sync", [3, [2, 3, 7, 8]])
def test_batched_equals_the_per_run_loop(problem, sync):
    x0 = np.array([1.0, -1.0, 2.0])
    trace = local_gd(problem, steps=10, step_size=np.array([0.1, 0.2, 0.05]), sync=sync, init=x0)
    times = set(sync_times(sync, 10).tolist())
    for b, gamma in enumerate([0.1, 0.2, 0.05]):
        expected = reference_local_gd(problem, b, 10, gamma, times, x0)
        np.testing.assert_allclose(trace.points[b], expected, rtol=1e-12, atol=1e-13)
        for T in range(1, 11):
            x_bar = expected[:T].mean(axis=0)  # x_bar_T = (1/T) sum_{t<T} x_hat_t
            gap = problem.subset([b]).objective(x_bar[None, None])[0, 0] - problem.min_value[b]
            assert trace.averaged_gap[b, T] == pytest.approx(gap, rel=1e-8, abs=1e-13)
    assert np.isnan(trace.averaged_gap[:, 0]).all()
    np.testing.assert_array_equal(trace.sync_steps, sorted(times))


def test_synchronising_every_step_is_gradient_descent_on_f(problem):
    trace = local_gd(problem, steps=8, step_size=0.15, sync=1, init=np.ones(D))
    w = np.ones((B, D))
    for t in range(8):
        w = w - 0.15 * problem.gradient(w[:, None])[:, 0]
        np.testing.assert_allclose(trace.points[:, t + 1], w, rtol=1e-12, atol=1e-13)


def test_never_synchronising_averages_independent_descents(problem):
    trace = local_gd(problem, steps=6, step_size=0.1, sync=100, init=np.zeros(D))
    assert trace.sync_steps.size == 0
    for b in range(B):
        expected = reference_local_gd(problem, b, 6, 0.1, set(), np.zeros(D))
        np.testing.assert_allclose(trace.points[b], expected, rtol=1e-12, atol=1e-13)


def test_a_diverging_step_gives_diverged_runs(problem):
    trace = local_gd(problem, steps=3000, step_size=np.array([0.1, 5.0, 0.1]), sync=4, init=np.ones(D))
    assert trace.diverged.tolist() == [False, True, False] and trace.diverged_at[1] > 0
    assert np.isinf(trace.averaged_gap[1, -1]) and np.isfinite(trace.averaged_gap[0, -1])


@pytest.mark.parametrize("kwargs, name", [
    (dict(steps=0), "steps"),
    (dict(sync=0), "sync"),
    (dict(sync=[3, 2]), "sync"),
    (dict(step_size=0.0), "step_size"),
    (dict(init=np.ones((2, D))), "init"),
])
def test_bad_input_is_one_line(problem, kwargs, name):
    with pytest.raises(InvalidParameterError) as error:
        local_gd(problem, **{"steps": 5, "step_size": 0.1, "sync": 2, **kwargs})
    assert f"'{name}'" in str(error.value) and "\n" not in str(error.value)
