"""Batched FedCluster (Alg. 1) against a plain per-problem, per-device loop; one cluster is FedAvg;
determinism, batch invariance, the cluster orders, partial participation, the monitor."""
import numpy as np
import pytest

from cflbounds._validation import InvalidParameterError
from cflbounds.algorithms.fedcluster import _STREAM_PARTICIPATION, fedavg, fedcluster
from cflbounds.synthetic.counter_random import counter_hash, counter_uniform
from cflbounds.synthetic.device_regression import make_device_regression
from cflbounds.synthetic import make_quadratic_federation
from cflbounds.synthetic.nonconvex import make_nonconvex_federation

N, D, B, T, E = 8, 3, 3, 6, 3


@pytest.fixture(scope="module")
def problem():
    return make_quadratic_federation(N, D, clusters=2, hessians="client", strong_convexity=0.5, smoothness=1.0,
                                     separation=2.0, spread=0.5, noise_std=0.3, batch_size=B, seed=11)


@pytest.fixture(scope="module")
def weighted():
    """Unequal device weights p_k: aggregation weights p_k / q_K and their renormalisation differ."""
    weights = np.arange(1.0, N + 1) / np.arange(1.0, N + 1).sum()
    return make_quadratic_federation(N, D, clusters=2, hessians="client", strong_convexity=0.5, smoothness=1.0,
                                     separation=2.0, spread=0.5, noise_std=0.3, weights=weights, batch_size=B, seed=12)


MEMBERSHIP = np.array([0, 1, 2, 0, 1, 2, 0, 1])  # unequal sizes (3, 3, 2): padding is exercised


def full_participation(b, j, devices, weights):
    """Every device of the cluster, aggregated with p_k / q_K."""
    return devices, weights[devices] / weights[devices].sum()


def looped(problem, membership, step, init, orders, gradient, local_steps=E, participants=full_participation):
    """Alg. 1 written out: per problem, round, cycle (in the recorded order), device and local
    step; the server averages the active devices (``participants(b, j, devices, p)`` -> active
    devices and their aggregation weights). ``gradient(b, k, w, xi)`` is the per-sample
    gradient; ``step`` a number or a function of the round j."""
    step_of = step if callable(step) else (lambda j: step)
    out = np.empty((problem.batch_size, orders.shape[1] + 1, problem.d))
    for b in range(problem.batch_size):
        W = np.array(init[b], dtype=float)
        out[b, 0] = W
        for j in range(orders.shape[1]):
            samples = problem.draw(local_steps, j).double().numpy()[b]  # (N, E, d): device k's round-j samples
            for cluster in orders[b, j]:
                active, shares = participants(b, j, np.flatnonzero(membership == cluster), problem.weights)
                aggregate = np.zeros(problem.d)
                for k, share in zip(active, shares):
                    w = W.copy()
                    for t in range(local_steps):
                        w = w - step_of(j) * gradient(b, k, w, samples[k, t])
                    aggregate += share * w
                W = aggregate
            out[b, j + 1] = W
    return out


def quadratic_gradient(problem):
    return lambda b, k, w, xi: problem.hessians_exact[b, k] @ (w - xi)


def test_batched_equals_looped(problem):
    init = np.random.default_rng(0).standard_normal((B, D))
    steps = [0.05, 0.2]
    trace = fedcluster(problem, MEMBERSHIP, rounds=T, local_steps=E, step_sizes=steps, init=init, seed=3,
                       record_orders=True)
    for c, step in enumerate(steps):
        reference = looped(problem, MEMBERSHIP, step, init, trace.orders, quadratic_gradient(problem))
        np.testing.assert_allclose(trace.round_models[:, c], reference, rtol=1e-12, atol=1e-12)


def test_batched_equals_looped_on_nonconvex_devices():
    problem = make_nonconvex_federation(N, D, clusters=2, hessians="client", strong_convexity=0.5, smoothness=1.0,
                                        separation=2.0, spread=0.5, noise_std=0.3, amplitude=0.3, frequency=2.0,
                                        batch_size=2, seed=5)
    init = np.zeros(D)
    trace = fedcluster(problem, MEMBERSHIP, rounds=4, local_steps=E, step_sizes=0.1, init=init, record_orders=True)

    def gradient(b, k, w, xi):  # ripple gradient = grad f - grad of the quadratic part (exact numpy functions)
        points = np.tile(w, (2, 1))[:, None, :]
        ripple = problem.global_gradient(points)[b, 0] - problem.quadratic.global_gradient(points)[b, 0]
        return ripple + problem.quadratic.hessians_exact[b, k] @ (w - xi)

    reference = looped(problem, MEMBERSHIP, 0.1, np.tile(init, (2, 1)), trace.orders, gradient)
    np.testing.assert_allclose(trace.round_models[:, 0], reference, rtol=1e-11, atol=1e-12)


def test_batched_equals_looped_on_device_regression():
    """Samples are (x, y) rows of the devices' data sets; the per-sample gradient x (x^T w - y)."""
    problem = make_device_regression(N, D, samples=list(range(3, 3 + N)), clusters=2, designs="client",
                                     batch_size=2, seed=6)
    init = np.random.default_rng(2).standard_normal((2, D))
    trace = fedcluster(problem, MEMBERSHIP, rounds=4, local_steps=E, step_sizes=[0.1, 0.2], init=init,
                       record_orders=True)
    gradient = lambda b, k, w, xi: xi[:D] * (xi[:D] @ w - xi[D])
    for c, step in enumerate([0.1, 0.2]):
        reference = looped(problem, MEMBERSHIP, step, init, trace.orders, gradient)
        np.testing.assert_allclose(trace.round_models[:, c], reference, rtol=1e-11, atol=1e-12)


def fedavg_reference(problem, step, init, rounds, local_steps):
    """FedAvg as McMahan et al. state it, with no clusters or orders: every round, every
    device runs ``local_steps`` SGD steps from W on its own samples (vectorised over
    devices), then W = sum_k p_k w_k."""
    A = problem.hessians_exact  # (B, N, d, d)
    out = np.empty((problem.batch_size, rounds + 1, problem.d))
    W = np.array(init, dtype=float)
    out[:, 0] = W
    for j in range(rounds):
        samples = problem.draw(local_steps, j).double().numpy()  # (B, N, E, d)
        w = np.repeat(W[:, None], problem.clients, axis=1)
        for t in range(local_steps):
            w = w - step * np.einsum("bnij,bnj->bni", A, w - samples[:, :, t])
        W = np.einsum("n,bnd->bd", problem.weights, w)
        out[:, j + 1] = W
    return out


def test_one_cluster_is_fedavg_exactly(weighted):
    init = np.ones((B, D))
    options = dict(rounds=T, local_steps=E, step_sizes=[0.1, 0.3], init=init, seed=1)
    one_cluster = fedcluster(weighted, np.zeros(N, dtype=int), **options)
    average = fedavg(weighted, **options)
    assert average.config["method"] == "fedavg" and average.config["clusters"] == 1
    for c, step in enumerate(options["step_sizes"]):
        reference = fedavg_reference(weighted, step, init, T, E)
        np.testing.assert_allclose(one_cluster.round_models[:, c], reference, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(average.round_models[:, c], reference, rtol=1e-12, atol=1e-12)


def test_deterministic_under_the_seed_and_independent_of_the_batch(problem):
    options = dict(rounds=T, local_steps=E, step_sizes=[0.1, 0.2], init=np.zeros(D), seed=7, record_orders=True)
    first = fedcluster(problem, MEMBERSHIP, **options)
    again = fedcluster(problem, MEMBERSHIP, **options)
    np.testing.assert_array_equal(first.round_models, again.round_models)
    alone = fedcluster(problem.subset([2]), MEMBERSHIP, **options)
    np.testing.assert_allclose(alone.round_models[0], first.round_models[2], rtol=1e-13, atol=1e-14)
    np.testing.assert_array_equal(alone.orders[0], first.orders[2])
    one_step = fedcluster(problem, MEMBERSHIP, **{**options, "step_sizes": [0.2]})
    np.testing.assert_allclose(one_step.round_models[:, 0], first.round_models[:, 1], rtol=1e-13, atol=1e-14)
    other = fedcluster(problem, MEMBERSHIP, **{**options, "seed": 8})
    assert not np.array_equal(other.orders, first.orders)


def test_orders_are_permutations_reshuffled_every_round(problem):
    trace = fedcluster(problem, MEMBERSHIP, rounds=40, local_steps=1, step_sizes=0.1, init=np.zeros(D),
                       record_orders=True)
    assert np.all(np.sort(trace.orders, axis=-1) == np.arange(3))
    assert len({tuple(o) for o in trace.orders.reshape(-1, 3)}) == 6  # all 3! orders occur in 120 draws
    fixed = fedcluster(problem, MEMBERSHIP, rounds=5, local_steps=1, step_sizes=0.1, init=np.zeros(D),
                       reshuffle=False, record_orders=True)
    assert np.all(fixed.orders == np.arange(3))


def test_monitor_sees_every_local_iterate(problem):
    calls = []

    def monitor(local, clients, weight):
        calls.append((tuple(local.shape), tuple(clients.shape), float(weight.sum(-1).min()), float(weight.sum(-1).max())))

    fedcluster(problem, MEMBERSHIP, rounds=T, local_steps=E, step_sizes=[0.1, 0.2], init=np.zeros(D), monitor=monitor)
    assert len(calls) == T * 3 * E
    assert {c[:2] for c in calls} == {((B, 3, 2, D), (B, 3))}
    assert all(c[2] == pytest.approx(1.0) and c[3] == pytest.approx(1.0) for c in calls)  # full participation


@pytest.mark.parametrize("partial_weights, total", [("renormalized", 1.0), ("paper", None)])
def test_partial_participation_activates_half_of_each_cluster(problem, partial_weights, total):
    seen = []
    membership = np.arange(N) % 2  # two clusters of 4: 2 active each
    fedcluster(problem, membership, rounds=5, local_steps=1, step_sizes=0.1, init=np.zeros(D), participation=0.5,
               partial_weights=partial_weights, monitor=lambda local, clients, weight: seen.append(weight.numpy()))
    for weight in seen:
        assert np.all((weight > 0).sum(-1) == 2)
        expected = total if total is not None else 2 / 4  # p_k / q_K over 2 of 4 equal devices
        np.testing.assert_allclose(weight.sum(-1), expected)
    assert len({tuple(np.flatnonzero(w[0] > 0)) for w in seen}) > 1  # different devices over the rounds


@pytest.mark.parametrize("fraction", [0.6, 0.3])
@pytest.mark.parametrize("partial_weights", ["renormalized", "paper"])
def test_partial_participation_equals_a_loop(weighted, partial_weights, fraction):
    """Partial participation against Alg. 1 written out: in round j each cluster activates the
    max(1, round(fraction |S_K|)) devices with the smallest of the round's uniforms (the
    algorithm's random source, keyed by the problem's seed, the participation stream, the run's
    seed and j), each aggregated with p_k / sum_active p_k or p_k / q_K."""
    run_seed = 4
    keys = counter_hash(np.asarray(weighted.seeds, dtype=np.uint64), _STREAM_PARTICIPATION, run_seed)

    def participants(b, j, devices, weights):
        uniforms = counter_uniform(keys[b], j, N)
        count = max(1, round(fraction * len(devices)))
        active = np.array(sorted(devices, key=lambda k: uniforms[k])[:count])
        total = weights[active].sum() if partial_weights == "renormalized" else weights[devices].sum()
        return active, weights[active] / total

    init = np.random.default_rng(1).standard_normal((B, D))
    trace = fedcluster(weighted, MEMBERSHIP, rounds=T, local_steps=E, step_sizes=0.1, init=init, seed=run_seed,
                       participation=fraction, partial_weights=partial_weights, record_orders=True)
    reference = looped(weighted, MEMBERSHIP, 0.1, init, trace.orders, quadratic_gradient(weighted),
                       participants=participants)
    np.testing.assert_allclose(trace.round_models[:, 0], reference, rtol=1e-12, atol=1e-12)


def test_divergence_is_recorded_not_raised(problem):
    trace = fedcluster(problem, MEMBERSHIP, rounds=60, local_steps=5, step_sizes=[0.01, 50.0], init=np.zeros(D))
    assert trace.diverged.tolist() == [[False, True]] * B


@pytest.mark.parametrize("kwargs, name", [
    ({"membership": np.array([0, 2] * 4)}, "cluster labels"),
    ({"membership": np.array([0, 1] * 3)}, "one label per device"),
    ({"init": np.zeros(D + 1)}, "init"),
    ({"rounds": 0}, "'rounds'"),
    ({"step_sizes": -0.1}, "'step_sizes'"),
    ({"participation": 0.0}, "'participation'"),
    ({"schedule": "linear"}, "'schedule'"),
])
def test_invalid_arguments_are_rejected_up_front(problem, kwargs, name):
    options = dict(membership=MEMBERSHIP, rounds=2, local_steps=1, step_sizes=0.1, init=np.zeros(D))
    with pytest.raises(InvalidParameterError, match=name):
        fedcluster(problem, **{**options, **kwargs})


def test_inverse_sqrt_schedule_scales_each_round(problem):
    init = np.ones((B, D))
    trace = fedcluster(problem, MEMBERSHIP, rounds=4, local_steps=2, step_sizes=0.1, init=init,
                       schedule="inverse-sqrt", record_orders=True)
    reference = looped(problem, MEMBERSHIP, lambda j: 0.1 / np.sqrt(j + 1), init, trace.orders,
                       quadratic_gradient(problem), local_steps=2)
    np.testing.assert_allclose(trace.round_models[:, 0], reference, rtol=1e-12, atol=1e-12)
