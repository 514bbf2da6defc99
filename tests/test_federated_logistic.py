"""The catalogue's non-quadratic family: logistic regression on a logistic mixture's planted
heterogeneous clients. Newton's minimiser against a generic solver, the oracle against the
float64 gradient, its stochastic gradient unbiased (Monte Carlo), the smoothness attained at 0,
and the catalogue's algorithms running on it alone or in a batch alike."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.optimize import minimize

from cflbounds.algorithms.fedavg_noniid import fedavg_noniid
from cflbounds.algorithms.local_updates import paper_step
from cflbounds.algorithms.scaffold import scaffold
from cflbounds.synthetic.counter_random import counter_hash
from cflbounds.synthetic.heterogeneous_logistic import make_heterogeneous_logistic


@pytest.fixture(scope="module")
def problem():
    return make_heterogeneous_logistic(2, 6, 20, 3, separation=2.0, regularization=0.1, minibatch=4, batch_size=2,
                                       seed=5)


def test_minimiser_against_a_generic_solver(problem):
    for b in range(problem.batch_size):
        one = problem.subset([b])
        found = minimize(lambda w: one.objective(w[None, None])[0, 0], np.zeros(problem.d),
                         jac=lambda w: one.gradient(w[None, None])[0, 0], method="BFGS", options={"gtol": 1e-12})
        np.testing.assert_allclose(problem.minimizer[b], found.x, atol=1e-7)
        assert problem.min_value[b] == pytest.approx(found.fun, rel=1e-12)
    assert np.all(np.linalg.norm(problem.gradient(problem.minimizer[:, None]), axis=-1) < 1e-12)
    assert np.all(problem.objective_gap(np.zeros((2, 1, 3))) > 0)


def test_oracle_gradient_is_the_objectives(problem):
    w = np.random.default_rng(0).standard_normal((2, problem.d))
    per_client = problem.oracle().gradient(torch.as_tensor(w)[:, None].expand(2, problem.clients, problem.d))
    np.testing.assert_allclose(per_client.mean(1).numpy(), problem.gradient(w[:, None])[:, 0], rtol=1e-12, atol=1e-14)
    h = 1e-6
    numeric = np.stack([(problem.objective((w + h * e)[:, None]) - problem.objective((w - h * e)[:, None]))[:, 0]
                        / (2 * h) for e in np.eye(problem.d)], axis=-1)
    np.testing.assert_allclose(problem.gradient(w[:, None])[:, 0], numeric, atol=1e-8)


def test_stochastic_gradient_is_unbiased(problem):
    oracle = problem.oracle()
    w = torch.as_tensor(np.random.default_rng(1).standard_normal((2, problem.clients, problem.d)))
    keys = counter_hash(np.arange(12, dtype=np.uint64).reshape(2, 6), 3)
    samples = np.stack([oracle.stochastic_gradient(w, keys, t)[0].numpy() for t in range(4000)])
    se = samples.std(0, ddof=1) / math.sqrt(samples.shape[0])
    assert np.all(np.abs(samples.mean(0) - oracle.gradient(w).numpy()) < 6 * se + 1e-15)  # 6 SE, seeds fixed


def test_smoothness_is_the_hessian_at_zero(problem):
    features = problem.mixture.features.numpy()
    hessians = np.einsum("bmnd,bmne->bmde", features, features) / (4 * features.shape[2]) + 0.1 * np.eye(3)
    np.testing.assert_allclose(problem.smoothness, np.linalg.eigvalsh(hessians)[..., -1].max(1), rtol=1e-12)
    np.testing.assert_allclose(problem.strong_convexity, 0.1)


def test_runs_are_the_same_alone_and_in_a_batch(problem):
    alone = problem.subset([1])
    batch = fedavg_noniid(problem, rounds=3, local_steps=2, step_size=paper_step(problem, 2), scheme="scheme-II",
                          sampled=3, seed=[4, 7])
    single = fedavg_noniid(alone, rounds=3, local_steps=2, step_size=paper_step(alone, 2), scheme="scheme-II",
                           sampled=3, seed=7)
    np.testing.assert_allclose(batch.points[1:], single.points, rtol=1e-12, atol=1e-14)
    both = scaffold(problem, rounds=3, local_steps=2, local_step_size=0.3, sampled=4, option="I", seed=[4, 7])
    one = scaffold(alone, rounds=3, local_steps=2, local_step_size=0.3, sampled=4, option="I", seed=7)
    np.testing.assert_allclose(both.points[1:], one.points, rtol=1e-12, atol=1e-14)
    assert np.all(batch.objective_gap[:, -1] < batch.objective_gap[:, 0])
