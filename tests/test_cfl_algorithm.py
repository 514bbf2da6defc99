"""CFL by cosine splits: the bipartition (exhaustive search = the spanning-tree cut for every m the
search reaches, both against a plain itertools search; every method finds planted clusters), the
similarity quantities by hand; the training batched against the per-run loop written as the
authors' code is organised (same numbers), its options' equivalences, batch invariance,
divergence, bad input refused before any work."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from cflbounds import InvalidParameterError
from cflbounds.algorithms.cosine_bipartition import (EXHAUSTIVE_LIMIT, bipartition, cosine_similarities,
                                                     cross_similarity_max, intra_similarity_min, max_cross_similarity,
                                                     splits_no_distribution)
from cflbounds.algorithms.cosine_cfl import cosine_cfl
from cflbounds.synthetic.cfl_quadratics import make_cfl_quadratics
from cflbounds.synthetic.digit_risks import make_digit_risks

from cflbounds.verify.testing import assert_rejected, invalid_calls

from conftest import examples, load_benchmark
from test_fedprox_algorithm import NoWork  # a problem whose oracle fails if the work starts

reference_cosine_cfl = load_benchmark("reference_catalogue").reference_cosine_cfl


def _all_bipartitions(m):
    """Every bipartition with client 0 in part 0, by itertools (independent of the module's bit masks)."""
    for second in itertools.chain.from_iterable(itertools.combinations(range(1, m), r) for r in range(1, m)):
        part = np.zeros(m, dtype=int)
        part[list(second)] = 1
        yield part


def _brute_force(S):
    values = [(max(S[i, j] for i in range(len(S)) for j in range(len(S)) if p[i] == 0 and p[j] == 1), p)
              for p in _all_bipartitions(len(S))]
    best = min(v for v, _ in values)
    return best, [p for v, p in values if v == best]


@st.composite
def similarity_matrices(draw):
    m = draw(st.integers(2, 14 if draw(st.booleans()) else 7))
    if draw(st.booleans()):  # cosines of random vectors
        vectors = draw(arrays(np.float64, (m, draw(st.integers(1, 6))), elements=st.floats(-1, 1)))
        vectors[np.linalg.norm(vectors, axis=1) == 0, 0] = 1.0
        return cosine_similarities(vectors)
    entries = draw(arrays(np.float64, (m, m), elements=st.sampled_from([-1.0, -0.5, 0.0, 0.25, 0.5, 1.0])
                          if draw(st.booleans()) else st.floats(-1, 1)))  # ties on purpose, or any symmetric matrix
    return 0.5 * (entries + entries.T)


@given(S=similarity_matrices())
@examples(150)
def test_exhaustive_equals_the_spanning_tree_cut(S):
    m = len(S)
    assert np.array_equal(S, S.T)
    exhaustive, exact = bipartition(S, "exhaustive"), bipartition(S, "exact")
    assert exhaustive[0] == 0 == exact[0] and 0 < exhaustive.sum() < m and 0 < exact.sum() < m
    value = max_cross_similarity(S, exhaustive)
    assert max_cross_similarity(S, exact) == value == cross_similarity_max(S)
    if m <= 10:
        best, minimisers = _brute_force(S)
        assert value == best
        assert any(np.array_equal(exhaustive, p) for p in minimisers)
        if len(minimisers) == 1:
            np.testing.assert_array_equal(exact, minimisers[0])  # a unique argmin: the same partition


def test_every_m_the_exhaustive_search_reaches():
    """At each m = 2..EXHAUSTIVE_LIMIT, random vectors (a unique argmin almost surely): same
    bipartition, same value."""
    rng = np.random.default_rng(0)
    for m in range(2, EXHAUSTIVE_LIMIT + 1):
        for _ in range(3):
            S = cosine_similarities(rng.standard_normal((m, 3)))
            np.testing.assert_array_equal(bipartition(S, "exhaustive"), bipartition(S, "exact"))


@pytest.mark.parametrize("method", ["exhaustive", "exact", "agglomerative"])
@pytest.mark.parametrize("k", [2, 3])
def test_well_separated_clusters_are_found(method, k):
    rng = np.random.default_rng(k)
    centres = np.linalg.qr(rng.standard_normal((6, 6)))[0][:k]  # orthonormal directions
    membership = np.repeat(np.arange(k), [5, 4, 3][:k])
    vectors = centres[membership] + 0.05 * rng.standard_normal((membership.size, 6))
    S = cosine_similarities(vectors)
    labels = bipartition(S, method)
    assert splits_no_distribution(labels, membership)
    if k == 2:
        np.testing.assert_array_equal(labels, membership)
    assert intra_similarity_min(S, membership) > cross_similarity_max(S)


def test_similarity_quantities_by_hand():
    vectors = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0], [-1.0, 0.0]])
    S = cosine_similarities(vectors)
    r = 1 / np.sqrt(2)
    np.testing.assert_allclose(S[0], [1.0, r, 0.0, -1.0], atol=1e-15)
    assert max_cross_similarity(S, [0, 0, 1, 1]) == pytest.approx(r)
    assert cross_similarity_max(S) == pytest.approx(0.0)  # {0,1,2} against {3}: max(cos 180, 135, 90)
    assert intra_similarity_min(S, [0, 0, 1, 1]) == pytest.approx(0.0)  # min(cos 45, cos 90)
    assert intra_similarity_min(S, [0, 1, 1, 0]) == pytest.approx(-1.0)
    assert intra_similarity_min(S, [0, 1, 2, 3]) == np.inf
    assert splits_no_distribution([0, 0, 1, 1], [5, 5, 7, 7]) and not splits_no_distribution([0, 1, 1, 1], [5, 5, 7, 7])
    np.testing.assert_allclose(cosine_similarities(np.zeros((2, 3))), 0.0)  # a zero vector has no direction
    with pytest.raises(InvalidParameterError, match="exhaustive"):
        bipartition(np.eye(EXHAUSTIVE_LIMIT + 1), "exhaustive")
    assert bipartition(np.eye(40), "exact").shape == (40,)


# -- training ---------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def problem():
    return make_cfl_quadratics(3, 9, 4, smoothness=4.0, relative_error=0.15, weights=np.arange(1, 10) / 45,
                               batch_size=3, seed=3)


BASE = dict(eps1=0.05, eps2=0.2, gamma_max=0.3, local_steps=1, updates="gradients", bipartition="exhaustive",
            split_test="paper", weighting="data", first_split_round=1)
CASES = [
    {},
    dict(bipartition="exact", weighting="uniform"),
    dict(bipartition="agglomerative", first_split_round=10),
    dict(updates="weight-updates", local_steps=3, eps1=0.01, eps2=0.05),
    dict(updates="weight-updates", local_steps=3, eps1=0.01, eps2=0.05, split_test="code", gamma_max=None,
         bipartition="agglomerative", weighting="uniform"),
]


@pytest.mark.parametrize("options", CASES, ids=lambda o: "-".join(f"{v}" for v in o.values()) or "paper")
def test_batched_equals_the_per_run_loop(problem, options):
    kwargs = {**BASE, **options}
    x0 = np.full(4, 0.5)
    trace = cosine_cfl(problem, rounds=60, step_size=0.2, init=x0, **kwargs)
    assert trace.splits  # the case tests some splits
    for b in range(problem.batch_size):
        labels, models, tests = reference_cosine_cfl(problem, b, 60, 0.2, kwargs["eps1"], kwargs["eps2"],
                                                     kwargs["gamma_max"], kwargs["local_steps"], kwargs["updates"],
                                                     kwargs["bipartition"], kwargs["split_test"], kwargs["weighting"],
                                                     kwargs["first_split_round"], x0)
        np.testing.assert_array_equal(trace.labels[b], labels)
        np.testing.assert_allclose(trace.final_models[b], models, rtol=1e-12, atol=1e-14)
        mine = trace.runs_splits(b)
        assert [(t.round, t.members, t.part, t.split) for t in mine] == [t[:3] + t[4:] for t in tests]
        np.testing.assert_allclose([t.alpha_cross_max for t in mine], [t[3] for t in tests], atol=1e-12)


def test_one_local_step_is_the_gradient_option_with_scaled_thresholds(problem):
    eta = 0.2
    gradients = cosine_cfl(problem, rounds=80, step_size=eta, eps1=0.05, eps2=0.2, gamma_max=0.3)
    updates = cosine_cfl(problem, rounds=80, step_size=eta, eps1=0.05 * eta, eps2=0.2 * eta, gamma_max=0.3,
                         updates="weight-updates")
    np.testing.assert_array_equal(gradients.labels, updates.labels)
    np.testing.assert_allclose(gradients.final_models, updates.final_models, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(gradients.update_norm * eta, updates.update_norm, rtol=1e-9, atol=1e-15)


def test_the_first_split_separates_the_planted_distributions():
    """Two distributions, small relative errors: the first split (near the mixture's stationary
    point) is correct under every bipartition option, and gamma_max above the errors keeps it."""
    problem = make_cfl_quadratics(2, 8, 5, smoothness=3.0, relative_error=0.1, batch_size=4, seed=9)
    for method in ("exhaustive", "exact", "agglomerative"):
        trace = cosine_cfl(problem, rounds=100, step_size=0.3, eps1=0.02, eps2=0.1, gamma_max=0.2, bipartition=method)
        for b in range(4):
            first = trace.runs_splits(b)[0]
            assert first.split and splits_no_distribution(first.part, problem.membership[b][list(first.members)])


def test_the_trace_records_norms_and_labels(problem):
    trace = cosine_cfl(problem, rounds=30, step_size=0.2, eps1=0.05, eps2=0.2, gamma_max=0.3, record_models=True)
    assert trace.labels.shape == (3, 31, 9) and np.all(trace.labels[:, 0] == 0)
    first = problem.federation.client_gradients(np.zeros((3, 1, 4)))[:, 0]  # the updates of round 1 at theta = 0
    np.testing.assert_allclose(trace.update_norm[:, 0], np.linalg.norm(first, axis=-1), rtol=1e-12)
    mean = np.einsum("i,bid->bd", problem.weights, first)  # one cluster, data weights
    np.testing.assert_allclose(trace.cluster_update_norm[:, 0], np.linalg.norm(mean, axis=-1)[:, None] * np.ones(9))
    np.testing.assert_allclose(trace.models[:, -1], trace.final_models)
    np.testing.assert_allclose(trace.models[:, 1], -0.2 * mean[:, None] * np.ones((1, 9, 1)), rtol=1e-12)


def test_a_run_is_the_same_alone_and_in_a_batch(problem):
    options = dict(rounds=60, step_size=0.2, eps1=0.05, eps2=0.2, gamma_max=0.3)
    batch = cosine_cfl(problem, **options)
    alone = cosine_cfl(problem.subset([2]), **options)
    np.testing.assert_array_equal(batch.labels[2:], alone.labels)
    np.testing.assert_allclose(batch.final_models[2:], alone.final_models, rtol=1e-13, atol=1e-15)
    assert [t[1:] for t in batch.runs_splits(2)] == [t[1:] for t in alone.runs_splits(0)]


def test_divergence_is_recorded_never_raised(problem):
    trace = cosine_cfl(problem, rounds=400, step_size=5.0, eps1=0.05, eps2=0.2, gamma_max=0.3)
    assert np.all(trace.diverged) and np.all(trace.diverged_at > 0)
    assert all(t.round < trace.diverged_at[t.run] for t in trace.splits)


def test_learned_clients_train_and_split():
    digits = make_digit_risks(4, 2, train_per_client=20, batch_size=2, seed=1)
    trace = cosine_cfl(digits, rounds=30, step_size=1.0, eps1=0.5, eps2=0.05, split_test="code", gamma_max=None,
                       updates="weight-updates", local_steps=2, bipartition="exact")
    assert trace.final_models.shape == (2, 4, 650) and not trace.diverged.any()
    assert trace.labels.max() >= 1  # the code's test (|c| > 2) splits the four clients at least once


@pytest.mark.parametrize("options, fragment", [
    (dict(gamma_max=0.0), "'gamma_max' parameter"),
    (dict(gamma_max=1.0), "'gamma_max' parameter"),
    (dict(gamma_max=-0.2), "'gamma_max' parameter"),
    (dict(gamma_max=None), "needs 'gamma_max'"),
    (dict(split_test="code"), "leave 'gamma_max' None"),
    (dict(local_steps=2), "'local_steps' must be 1"),
    (dict(eps1=0.0), "'eps1' parameter"),
    (dict(eps2=-1.0), "'eps2' parameter"),
    (dict(bipartition="spectral"), "'bipartition' parameter"),
    (dict(step_size=[0.1, 0.2]), "'step_size' parameter"),
])
def test_bad_input_is_one_line_before_any_work(problem, options, fragment):
    kwargs = {**dict(rounds=3, step_size=0.1, eps1=0.1, eps2=0.2, gamma_max=0.3), **options}
    with pytest.raises(InvalidParameterError) as error:
        cosine_cfl(NoWork(problem), **kwargs)
    assert fragment in str(error.value) and "\n" not in str(error.value)


def test_the_exhaustive_search_is_refused_past_its_limit():
    big = make_cfl_quadratics(2, EXHAUSTIVE_LIMIT + 1, 3, seed=0)
    with pytest.raises(InvalidParameterError, match="exhaustive"):
        cosine_cfl(NoWork(big), rounds=1, step_size=0.1, eps1=0.1, eps2=0.2, gamma_max=0.3, bipartition="exhaustive")


_S = cosine_similarities(np.random.default_rng(0).standard_normal((4, 3)))
VALID_CALLS = {
    cosine_cfl: dict(problem=make_cfl_quadratics(2, 4, 3, seed=0), rounds=1, step_size=0.1, eps1=0.1, eps2=0.2,
                     gamma_max=0.3),
    bipartition: dict(similarities=_S, method="exact"),
    max_cross_similarity: dict(similarities=_S, labels=[0, 0, 1, 1]),
    cross_similarity_max: dict(similarities=_S),
    intra_similarity_min: dict(similarities=_S, membership=[0, 0, 1, 1]),
    splits_no_distribution: dict(labels=[0, 0, 1, 1], membership=[0, 0, 1, 1]),
}


@pytest.mark.parametrize("function, kwargs, name", invalid_calls(VALID_CALLS))
def test_every_parameter_is_validated_with_its_name(function, kwargs, name):
    assert_rejected(function, kwargs, name)
