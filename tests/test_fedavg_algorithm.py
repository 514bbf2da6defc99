"""FedAvg on non-iid data (Li et al. 2020) batched against a plain per-run, per-device NumPy loop
(same keys, same numbers); closed-form special cases (E = 1 is SGD on F, one device is SGD);
batch invariance; the sampling schemes' frequencies and unbiasedness; G^2 measured; divergence;
bad input rejected before any work."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from cflbounds import InvalidParameterError
from cflbounds.algorithms.client_sampling import aggregation_weights
from cflbounds.algorithms.fedavg_noniid import fedavg_noniid
from cflbounds.algorithms.iterate_trace import IterateTrace, measured_gradient_bound
from cflbounds.algorithms.local_updates import DecayingStep, paper_step
from cflbounds.synthetic.counter_random import counter_hash, counter_normal
from cflbounds.synthetic.heterogeneous_quadratics import make_heterogeneous_quadratics

from conftest import load_benchmark

reference_fedavg = load_benchmark("reference_catalogue").reference_fedavg  # the per-run, per-device loop

N, D, B = 5, 3, 3
WEIGHTS = np.array([0.1, 0.3, 0.2, 0.15, 0.25])
NOISE = 41  # the noise stream local_updates documents (STREAM_NOISE)


@pytest.fixture(scope="module")
def problem():
    return make_heterogeneous_quadratics(N, D, strong_convexity=0.5, smoothness=2.0, heterogeneity=1.0,
                                         noise_std=[0.2, 0.4, 0.1, 0.3, 0.5], weights=WEIGHTS, batch_size=B, seed=3)


def decaying(mu, gamma):
    return lambda t: 2.0 / (mu * (gamma + t + 1))  # eta_t, t = 1, 2, ... the paper's step index


@pytest.mark.parametrize("scheme, K", [("full", None), ("scheme-I", 3), ("scheme-II", 2), ("mcmahan", 3)])
def test_batched_equals_the_per_run_loop(problem, scheme, K):
    x0 = np.array([1.0, -2.0, 0.5])
    step = paper_step(problem, 3)
    trace = fedavg_noniid(problem, rounds=4, local_steps=3, step_size=step, scheme=scheme, sampled=K, init=x0, seed=9)
    for b in range(B):
        expected = reference_fedavg(problem, b, 9, 4, 3, decaying(step.mu[b], step.gamma[b]), scheme, K, x0)
        np.testing.assert_allclose(trace.points[b], expected, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(trace.objective_gap, problem.objective_gap(trace.points), rtol=1e-12)
    np.testing.assert_array_equal(trace.steps, [0, 3, 6, 9, 12])


def test_constant_step_per_run(problem):
    steps = np.array([0.1, 0.2, 0.05])
    trace = fedavg_noniid(problem, rounds=3, local_steps=2, step_size=steps, init=np.ones(D), seed=1)
    for b in range(B):
        expected = reference_fedavg(problem, b, 1, 3, 2, lambda t: steps[b], "full", None, np.ones(D))
        np.testing.assert_allclose(trace.points[b], expected, rtol=1e-12, atol=1e-13)


def test_one_local_step_is_sgd_on_the_objective(problem):
    """E = 1, full participation: w <- w - eta sum_k p_k (A_k (w - b_k) + noise_k), SGD on F."""
    trace = fedavg_noniid(problem, rounds=6, local_steps=1, step_size=0.3, init=np.zeros(D), seed=4)
    Abar = problem.global_hessian
    moment = np.einsum("n,bnij,bnj->bi", WEIGHTS, problem.hessians_exact, problem.optima_exact)
    keys = counter_hash(counter_hash(np.asarray(problem.seeds, dtype=np.uint64), np.uint64(4))[:, None], NOISE,
                        np.arange(N, dtype=np.uint64))
    w = np.zeros((B, D))
    for t in range(6):
        noise = np.einsum("n,bnd->bd", WEIGHTS * problem.noise_std / math.sqrt(D), counter_normal(keys, t, D))
        w = w - 0.3 * (np.einsum("bij,bj->bi", Abar, w) - moment + noise)
        np.testing.assert_allclose(trace.points[:, t + 1], w, rtol=1e-12, atol=1e-13)


def test_one_device_is_sgd_whatever_the_local_steps():
    """N = 1: every scheme is SGD on F_1, the same numbers for E = 4 and for E = 1 with 4x the rounds."""
    single = make_heterogeneous_quadratics(1, D, noise_std=0.7, batch_size=2, seed=5)
    long_rounds = fedavg_noniid(single, rounds=3, local_steps=4, step_size=0.2, scheme="scheme-I", sampled=1, seed=2)
    short_rounds = fedavg_noniid(single, rounds=12, local_steps=1, step_size=0.2, seed=2)
    np.testing.assert_allclose(long_rounds.points, short_rounds.points[:, ::4], rtol=1e-13, atol=1e-14)


def test_a_run_is_the_same_alone_and_in_a_batch(problem):
    kwargs = dict(rounds=5, local_steps=2, step_size=paper_step(problem, 2), scheme="scheme-I", sampled=4)
    batch = fedavg_noniid(problem, seed=[3, 4, 5], **kwargs)
    alone = fedavg_noniid(problem.subset([1]), **{**kwargs, "step_size": paper_step(problem.subset([1]), 2)}, seed=4)
    np.testing.assert_allclose(batch.points[1:2], alone.points, rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(batch.gradient_second_moments[1:2], alone.gradient_second_moments, rtol=1e-13)


# Sampling frequencies over many rounds and runs: 6 standard errors (binomial), seeds fixed.
def test_scheme_one_draws_with_replacement_in_proportion_to_p():
    keys = counter_hash(np.arange(400, dtype=np.uint64), 7)
    draws = np.concatenate([aggregation_weights("scheme-I", keys, r, WEIGHTS, 4) for r in range(50)])  # (20000, N)
    counts = np.rint(draws * 4).astype(int)
    assert np.all(counts.sum(-1) == 4) and np.any(counts >= 2)  # duplicates happen: with replacement
    frequency = counts.sum(0) / counts.sum()
    se = np.sqrt(WEIGHTS * (1 - WEIGHTS) / counts.sum())
    assert np.all(np.abs(frequency - WEIGHTS) < 6 * se)
    np.testing.assert_allclose(draws.mean(0), frequency, rtol=1e-12)  # E weight_k = p_k: unbiased


@pytest.mark.parametrize("scheme", ["scheme-II", "mcmahan"])
def test_schemes_two_and_mcmahan_draw_without_replacement_uniformly(scheme):
    keys = counter_hash(np.arange(400, dtype=np.uint64), 8)
    weights = np.concatenate([aggregation_weights(scheme, keys, r, WEIGHTS, 2) for r in range(50)])
    included = weights > 0
    assert np.all(included.sum(-1) == 2)  # two distinct devices each round
    se = math.sqrt(0.4 * 0.6 / included.shape[0])
    assert np.all(np.abs(included.mean(0) - 0.4) < 6 * se)  # K/N each
    if scheme == "scheme-II":
        np.testing.assert_allclose(weights[included], (N / 2 * np.broadcast_to(WEIGHTS, weights.shape))[included])
        se_weight = weights.std(0, ddof=1) / math.sqrt(weights.shape[0])
        assert np.all(np.abs(weights.mean(0) - WEIGHTS) < 6 * se_weight)  # unbiased
    else:
        np.testing.assert_allclose(weights.sum(-1), 1.0)
        pairs = list(itertools.combinations(range(N), 2))  # E weight_k over the 10 equally likely pairs
        exact = np.array([sum(WEIGHTS[k] / WEIGHTS[list(S)].sum() for S in pairs if k in S) / len(pairs)
                          for k in range(N)])
        se_weight = weights.std(0, ddof=1) / math.sqrt(weights.shape[0])
        assert np.all(np.abs(weights.mean(0) - exact) < 6 * se_weight)
        assert np.abs(exact - WEIGHTS).max() > 0.04  # biased for unequal p_k


@pytest.mark.parametrize("scheme, K", [("scheme-I", 2), ("scheme-II", 2)])
def test_expected_aggregate_is_the_full_average(scheme, K):
    """Noise-free replicates of one problem, one round: the mean sampled aggregate is the full
    participation's model (Lemma 4 of the paper: unbiased sampling)."""
    runs = 4000
    one = make_heterogeneous_quadratics(N, D, noise_std=0.0, weights=WEIGHTS, batch_size=runs, seed=[11] * runs)
    full = fedavg_noniid(one.subset([0]), rounds=1, local_steps=3, step_size=0.2, init=np.ones(D))
    sampled = fedavg_noniid(one, rounds=1, local_steps=3, step_size=0.2, scheme=scheme, sampled=K, init=np.ones(D),
                            seed=np.arange(runs), record_gradients=False)
    final = sampled.points[:, 1]
    se = final.std(0, ddof=1) / math.sqrt(runs)
    assert np.all(np.abs(final.mean(0) - full.points[0, 1]) < 6 * se)


def test_second_moments_are_exact_at_the_first_step(problem):
    x0 = np.array([0.3, 0.1, -0.4])
    trace = fedavg_noniid(problem, rounds=2, local_steps=2, step_size=0.1, init=x0)
    gradients = problem.client_gradients(np.tile(x0, (B, 1)))  # every device starts at x0
    np.testing.assert_allclose(trace.gradient_second_moments[:, 0],
                               np.square(gradients).sum(-1) + np.square(problem.noise_std), rtol=1e-12)
    assert trace.gradient_second_moments.shape == (B, 4, N)


def test_measured_gradient_bound_is_the_largest_mean_with_its_standard_error():
    moments = np.random.default_rng(0).exponential(1.0, (50, 6, 4))
    moments[:, 3, 2] += 2.0
    trace = IterateTrace(points=np.zeros((50, 1, 1)), steps=np.zeros(1), objective_gap=np.zeros((50, 1)),
                         distance_sq=np.zeros((50, 1)), diverged=np.zeros(50, bool), diverged_at=-np.ones(50),
                         run_keys=np.zeros(50), gradient_second_moments=moments)
    measured = measured_gradient_bound(trace)
    assert measured.where == (3, 2) and measured.measured
    assert measured.estimate == pytest.approx(moments[:, 3, 2].mean())
    assert measured.standard_error == pytest.approx(moments[:, 3, 2].std(ddof=1) / math.sqrt(50))


def test_a_diverging_step_gives_diverged_runs(problem):
    trace = fedavg_noniid(problem, rounds=400, local_steps=5, step_size=np.array([0.1, 50.0, 0.1]), init=np.ones(D))
    assert trace.diverged.tolist() == [False, True, False]
    assert trace.diverged_at[1] > 0 and np.isinf(trace.objective_gap[1, -1]) and np.all(trace.diverged_at[[0, 2]] == -1)
    assert np.isinf(measured_gradient_bound(trace).estimate)


class _NoWork:
    """A problem whose oracle must never be reached (validation comes first)."""

    def __init__(self, problem):
        self.__dict__.update({k: getattr(problem, k) for k in ("weights", "seeds", "batch_size", "clients", "d",
                                                              "dtype", "device", "objective_gap", "distance_sq")})
        self.strong_convexity, self.smoothness = problem.strong_convexity, problem.smoothness

    def oracle(self, clients=None):
        raise AssertionError("work started before validation")


@pytest.mark.parametrize("kwargs, name", [
    (dict(local_steps=0), "local_steps"),
    (dict(rounds=0), "rounds"),
    (dict(scheme="scheme-III"), "scheme"),
    (dict(scheme="scheme-II", sampled=N + 1), "sampled"),
    (dict(scheme="scheme-I"), "sampled"),
    (dict(step_size=-0.1), "step_size"),
    (dict(step_size=DecayingStep(mu=0.0, gamma=8.0)), "step_size"),
    (dict(step_size=np.array([0.1, 0.2])), "step_size"),
    (dict(init=np.ones(D + 1)), "init"),
    (dict(seed=-1), "seed"),
])
def test_bad_input_is_one_line_before_any_work(problem, kwargs, name):
    with pytest.raises(InvalidParameterError) as error:
        fedavg_noniid(_NoWork(problem), **{"rounds": 2, "local_steps": 2, "step_size": 0.1, **kwargs})
    assert f"'{name}" in str(error.value) and "\n" not in str(error.value)
