"""SCAFFOLD (Alg. 1, options I and II) and FedAvg with two step sizes, batched against a plain
per-run, per-client NumPy loop (same keys, same numbers); closed-form cases (c = 0 is FedAvg with
two steps: one client, or identical noise-free clients under option I; eta_g = 1 with every
client is Li et al.'s full-participation FedAvg); batch invariance; divergence; bad input."""
from __future__ import annotations

import numpy as np
import pytest

from cflbounds import InvalidParameterError
from cflbounds.algorithms.fedavg_noniid import fedavg_noniid
from cflbounds.algorithms.scaffold import fedavg_two_steps, scaffold
from cflbounds.synthetic.heterogeneous_quadratics import make_heterogeneous_quadratics

from conftest import load_benchmark

reference_scaffold = load_benchmark("reference_catalogue").reference_scaffold  # Alg. 1, client by client

N, D, B = 6, 3, 2


@pytest.fixture(scope="module")
def problem():
    return make_heterogeneous_quadratics(N, D, strong_convexity=0.5, smoothness=3.0, heterogeneity=2.0,
                                         noise_std=[0.2, 0.4, 0.1, 0.3, 0.5, 0.0], batch_size=B, seed=13)


@pytest.mark.parametrize("option", ["I", "II", None])
@pytest.mark.parametrize("S", [N, 3])
def test_batched_equals_the_per_run_loop(problem, option, S):
    x0 = np.array([1.0, 0.5, -1.0])
    kwargs = dict(rounds=5, local_steps=3, local_step_size=0.1, global_step_size=0.8, sampled=S, init=x0, seed=2)
    trace = fedavg_two_steps(problem, **kwargs) if option is None else scaffold(problem, option=option, **kwargs)
    for b in range(B):
        expected = reference_scaffold(problem, b, 2, 5, 3, 0.1, 0.8, S, option, x0)
        np.testing.assert_allclose(trace.points[b], expected, rtol=1e-12, atol=1e-13)
    np.testing.assert_array_equal(trace.steps, np.arange(6) * 3)


@pytest.mark.parametrize("option", ["I", "II"])
def test_one_client_has_no_correction(option):
    """N = 1: c = c_1 after every round, so c - c_i = 0 and SCAFFOLD is FedAvg with two steps."""
    one = make_heterogeneous_quadratics(1, D, noise_std=0.3, batch_size=2, seed=4)
    kwargs = dict(rounds=6, local_steps=4, local_step_size=0.05, global_step_size=1.5, init=np.ones(D), seed=1)
    np.testing.assert_allclose(scaffold(one, option=option, **kwargs).points, fedavg_two_steps(one, **kwargs).points,
                               rtol=1e-12, atol=1e-14)


def test_identical_noise_free_clients_under_option_one_have_no_correction():
    """All f_i equal and no noise: c_i = grad f_i(x) = c (option I), so c - c_i = 0 from round 2 on;
    round 1 has c = c_i = 0. SCAFFOLD is FedAvg with two steps."""
    same = make_heterogeneous_quadratics(N, D, heterogeneity=0.0, hessian_spread=0.0, noise_std=0.0, seed=6)
    kwargs = dict(rounds=5, local_steps=3, local_step_size=0.1, init=np.ones(D))
    np.testing.assert_allclose(scaffold(same, option="I", **kwargs).points, fedavg_two_steps(same, **kwargs).points,
                               rtol=1e-12, atol=1e-14)


def test_two_steps_with_unit_global_step_and_every_client_is_fedavg(problem):
    kwargs = dict(rounds=4, local_steps=3, init=np.ones(D), seed=5)
    two = fedavg_two_steps(problem, local_step_size=0.1, **kwargs)
    li = fedavg_noniid(problem, step_size=0.1, record_gradients=False, **kwargs)
    np.testing.assert_allclose(two.points, li.points, rtol=1e-12, atol=1e-14)


def test_a_run_is_the_same_alone_and_in_a_batch(problem):
    kwargs = dict(rounds=4, local_steps=2, local_step_size=0.1, sampled=3, option="I")
    batch = scaffold(problem, seed=[7, 8], **kwargs)
    alone = scaffold(problem.subset([1]), seed=8, **kwargs)
    np.testing.assert_allclose(batch.points[1:], alone.points, rtol=1e-13, atol=1e-14)


def test_scaffold_removes_the_drift_fedavg_keeps():
    """Noise-free heterogeneous clients, constant steps: FedAvg's fixed point is off w*, SCAFFOLD's
    (option II) is w* (Karimireddy et al., Sec. 3: the control variates cancel the client drift)."""
    drift = make_heterogeneous_quadratics(N, D, heterogeneity=3.0, hessian_spread=1.0, noise_std=0.0, seed=8)
    kwargs = dict(rounds=300, local_steps=10, local_step_size=0.05)
    assert fedavg_two_steps(drift, **kwargs).final_distance_sq[0] > 1e-3
    assert scaffold(drift, option="II", **kwargs).final_distance_sq[0] < 1e-20


def test_a_diverging_step_gives_diverged_runs(problem):
    trace = scaffold(problem, rounds=300, local_steps=5, local_step_size=np.array([0.05, 40.0]), init=np.ones(D))
    assert trace.diverged.tolist() == [False, True] and trace.diverged_at[1] > 0


@pytest.mark.parametrize("kwargs, name", [
    (dict(local_steps=0), "local_steps"),
    (dict(sampled=N + 1), "sampled"),
    (dict(sampled=0), "sampled"),
    (dict(option="III"), "option"),
    (dict(local_step_size=0.0), "local_step_size"),
    (dict(global_step_size=-1.0), "global_step_size"),
    (dict(global_step_size=np.ones(3)), "global_step_size"),
])
def test_bad_input_is_one_line(problem, kwargs, name):
    with pytest.raises(InvalidParameterError) as error:
        scaffold(problem, **{"rounds": 2, "local_steps": 2, "local_step_size": 0.1, **kwargs})
    assert f"'{name}'" in str(error.value) and "\n" not in str(error.value)


def test_unequal_weights_are_refused():
    weighted = make_heterogeneous_quadratics(3, D, weights=[0.5, 0.3, 0.2])
    with pytest.raises(InvalidParameterError, match="uniform"):
        fedavg_two_steps(weighted, rounds=1, local_steps=1, local_step_size=0.1)
