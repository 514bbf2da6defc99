"""Affinity propagation (DSC eqs. 8-10) against scikit-learn, padding, and the paper's variants."""
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn.cluster import AffinityPropagation

from cflbounds._validation import InvalidParameterError
from cflbounds.algorithms.affinity_propagation import (_availability, _paper_decision, _responsibility,
                                                       affinity_propagation, median_preference)
from cflbounds.algorithms.dsc_grouping import channel_similarity, data_similarity
from cflbounds.synthetic.wireless import make_wireless_layout
from cflbounds.papers.dsc.experiment import EXPERIMENT, build_instances, draw_label_counts

from conftest import examples


def assert_equals_sklearn(S, preference, seed, **options):
    """Ours on the raw ``S`` (its default tie-breaking noise drawn from ``seed``) against
    scikit-learn with ``random_state=seed``: the same RandomState stream, hence bit-identical
    noisy matrices, so exemplars, labels and iteration counts must agree exactly."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = AffinityPropagation(affinity="precomputed", preference=preference, random_state=seed).fit(S)
    ours = affinity_propagation(S, preference=preference, seed=seed, **options)
    centers = np.asarray(model.cluster_centers_indices_, dtype=int)
    assert ours.iterations == model.n_iter_
    if model.n_iter_ < 200:
        assert ours.converged
    np.testing.assert_array_equal(np.flatnonzero(ours.exemplar), centers)
    expected = centers[model.labels_] if centers.size else np.full(len(S), -1)
    np.testing.assert_array_equal(ours.assignment, expected)
    return ours, model


@examples(60)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(3, 30), symmetric=st.booleans(),
       preference_scale=st.floats(0.2, 3.0))
def test_standard_ap_equals_sklearn(seed, n, symmetric, preference_scale):
    rng = np.random.default_rng(seed)
    if symmetric:  # negative squared distances, as AP's usual input
        points = rng.normal(size=(n, 2))
        S = -((points[:, None] - points[None]) ** 2).sum(-1)
    else:
        S = rng.normal(size=(n, n))
    preference = float(np.median(S[~np.eye(n, dtype=bool)]) * preference_scale)
    assert_equals_sklearn(S, preference, seed)


def _dsc_similarity(kind, clients, seed):
    """One raw DSC similarity (eq. 7, the SNR gap, or eq. 12 of two-label clients), as DSC's
    stages see it: symmetric, with exact ties."""
    if kind == "eq12":
        return data_similarity(draw_label_counts(np.random.default_rng(seed), clients, 10))
    return channel_similarity(make_wireless_layout(clients, seed=seed), kind)[0]


@examples(80)
@given(seed=st.integers(0, 2**32 - 1), clients=st.integers(2, 30), kind=st.sampled_from(["eq7", "snr-gap", "eq12"]))
def test_standard_ap_equals_sklearn_on_raw_dsc_similarities(seed, clients, kind):
    """On DSC's own symmetric inputs, with its median preference, no noise added by the test:
    scikit-learn's degeneracy removal is part of the algorithm compared."""
    S = _dsc_similarity(kind, clients, seed)
    preference = float(median_preference(S[None], np.ones((1, clients), bool))[0])
    assert_equals_sklearn(S, preference, seed)


def test_smoke_small_instance_converges_as_sklearn():
    """The audit's case: eq. 7 of the smoke 'small' instance 0 (3 clients). Without tie-breaking
    AP oscillates for 200 iterations and finds no exemplar; with it, as scikit-learn, it
    converges at iteration 60 with exemplar 2."""
    config = EXPERIMENT["smoke"]["configs"][0]
    S = channel_similarity(build_instances(config, 0, 2, key=(0,)).layout)[0]
    untied = affinity_propagation(S, tie_breaking=False)
    assert not untied.converged and untied.iterations == 200 and not untied.exemplar.any()
    preference = float(median_preference(S[None], np.ones((1, 3), bool))[0])
    ours, _ = assert_equals_sklearn(S, preference, 0)
    assert ours.converged and ours.iterations == 60 and np.flatnonzero(ours.exemplar).tolist() == [2]


def test_paper_self_availability_breaks_ties_too():
    """eq. 10 as printed follows the same rule: seeded noise by default (one seed, one run),
    and on the tied 'small' input it changes the run; ``tie_breaking=False`` is the exact input."""
    S = _dsc_similarity("eq7", 3, 0)
    first, again = (affinity_propagation(S, self_availability="max", seed=0) for _ in range(2))
    np.testing.assert_array_equal(first.assignment, again.assignment)
    assert first.iterations == again.iterations
    exact = affinity_propagation(S, self_availability="max", tie_breaking=False)
    assert (exact.iterations, exact.converged, exact.assignment.tolist()) != \
        (first.iterations, first.converged, first.assignment.tolist())


@pytest.mark.parametrize("n, similarity, preference", [(2, -3.0, -3.0), (2, -3.0, -2.0), (3, 1.5, 1.5), (4, 0.0, 2.0)])
def test_equal_similarities_and_preferences_as_sklearn(n, similarity, preference):
    """scikit-learn's degenerate case (every 2-client group of stage 2 at the median preference):
    not iterated, all points lead when the preference exceeds the similarity, else point 0;
    the same inside a padded batch."""
    S = np.full((n, n), similarity)
    ours, _ = assert_equals_sklearn(S, preference, 0)
    assert ours.converged and ours.iterations == 0
    padded = np.zeros((2, n + 1, n + 1))
    padded[1, 1:, 1:] = S
    valid = np.arange(n + 1)[None] >= np.array([[n + 1], [1]])  # problem 0: empty; problem 1: points 1..n
    batch = affinity_propagation(padded, preference=preference, valid=valid)
    np.testing.assert_array_equal(batch.assignment[1, 1:], ours.assignment + 1)
    assert batch.assignment[1, 0] == -1 and (batch.assignment[0] == -1).all()


def test_random_asymmetric_similarities_need_no_tie_breaking():
    """On continuous random similarities the tie-breaking noise changes nothing."""
    rng = np.random.default_rng(7)
    for _ in range(20):
        S = rng.normal(size=(15, 15))
        preference = float(np.median(S))
        exact = affinity_propagation(S, preference=preference, tie_breaking=False)
        ours, _ = assert_equals_sklearn(S, preference, 0)
        np.testing.assert_array_equal(exact.assignment, ours.assignment)


def test_median_preference_is_the_off_diagonal_median_not_sklearns_default():
    """Frey & Dueck's default: the median of s(i,k), i != k. scikit-learn's np.median(S) includes
    the diagonal; on DSC's inputs (zero diagonal) the two differ, and passing sklearn's value
    reproduces sklearn's default run."""
    S = _dsc_similarity("eq12", 12, 3)
    off = S[~np.eye(12, dtype=bool)]
    ours = median_preference(S[None], np.ones((1, 12), bool))[0]
    assert ours == np.median(off) and ours != np.median(S)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        default = AffinityPropagation(affinity="precomputed", random_state=5).fit(S)
    reproduced = affinity_propagation(S, preference=float(np.median(S)), seed=5)
    np.testing.assert_array_equal(np.flatnonzero(reproduced.exemplar), default.cluster_centers_indices_)
    padded = np.zeros((1, 14, 14))
    padded[0, :12, :12] = S + 7.0 * np.eye(12)  # neither the diagonal nor padding counts
    assert median_preference(padded, np.arange(14)[None] < 12)[0] == ours


def test_padded_batch_equals_each_problem_alone():
    rng = np.random.default_rng(3)
    sizes = [2, 5, 9, 1, 7]
    seeds = [11, 12, 13, 14, 15]
    batch = np.zeros((len(sizes), 9, 9))
    valid = np.zeros((len(sizes), 9), bool)
    for b, n in enumerate(sizes):
        points = rng.normal(size=(n, 2)).round(1)  # rounded: ties, so the noise matters
        batch[b, :n, :n], valid[b, :n] = -((points[:, None] - points[None]) ** 2).sum(-1), True
    for decision in ("standard", "paper"):
        together = affinity_propagation(batch, preference="median", valid=valid, decision=decision, seed=seeds)
        for b, n in enumerate(sizes):
            single = affinity_propagation(batch[b, :n, :n], preference="median", decision=decision, seed=seeds[b])
            np.testing.assert_array_equal(together.exemplar[b, :n], single.exemplar)
            np.testing.assert_array_equal(together.assignment[b, :n], single.assignment)
            assert together.iterations[b] == single.iterations
            assert not together.exemplar[b, n:].any() and (together.assignment[b, n:] == -1).all()
    assert together.exemplar[3, 0] and together.converged[3]  # a lone point leads itself


def test_paper_decision_by_hand():
    """Sec. III-A on a hand-made C = R + A: row 0 peaks on its diagonal (leader); row 2 peaks in
    column 0 (joins leader 0); row 1 peaks in column 2, which is not a leader: left over (-1);
    row 3 is padding."""
    C = np.array([[5.0, 1.0, 0.0, 9.0], [0.0, 2.0, 3.0, 9.0], [4.0, 0.0, 1.0, 9.0], [9.0, 9.0, 9.0, 9.0]])[None]
    valid = np.array([[True, True, True, False]])
    leader, assignment = _paper_decision(C, valid, valid[:, :, None] & valid[:, None, :])
    assert leader[0].tolist() == [True, False, False, False]
    assert assignment[0].tolist() == [0, -1, 0, -1]


def test_paper_decision_agrees_with_the_standard_one_on_separated_pairs():
    """Two far apart pairs: both rules find one leader per pair and the same memberships."""
    points = np.array([[0.0, 0.0], [0.1, 0.0], [5.0, 5.0], [5.1, 5.0]])
    S = -((points[:, None] - points[None]) ** 2).sum(-1)
    standard = affinity_propagation(S, preference="median")
    paper = affinity_propagation(S, preference="median", decision="paper")
    assert standard.exemplar.sum() == 2 and paper.exemplar.sum() == 2
    np.testing.assert_array_equal(paper.assignment, standard.assignment)
    assert standard.assignment[0] == standard.assignment[1] != standard.assignment[2] == standard.assignment[3]


def test_availability_updates_by_hand():
    """eqs. (9)-(10) on a 3x3 responsibility matrix, computed by hand: A(i,k) = min(0, R(k,k)
    + sum_{i' not in {i,k}} max(0, R(i',k))); A(k,k) = sum (standard) or max (as printed)
    over i' != k of max(0, R(i',k))."""
    R = np.array([[-1.0, 2.0, 0.5], [3.0, -2.0, -1.0], [1.0, 4.0, 0.2]])[None]
    pairs = np.ones((1, 3, 3), bool)
    eye = np.eye(3, dtype=bool)
    expected_off = np.array([[0, min(0, -2 + 4), min(0, 0.2 + 0)],
                             [min(0, -1 + 1), 0, min(0, 0.2 + 0.5)],
                             [min(0, -1 + 3), min(0, -2 + 2), 0]])
    standard = _availability(R, pairs, eye, "sum")[0]
    printed = _availability(R, pairs, eye, "max")[0]
    np.testing.assert_allclose(standard[~eye], expected_off[~eye])
    np.testing.assert_allclose(printed[~eye], expected_off[~eye])
    np.testing.assert_allclose(np.diag(standard), [3 + 1, 2 + 4, 0.5 + 0])
    np.testing.assert_allclose(np.diag(printed), [3, 4, 0.5])


def test_responsibility_by_hand():
    """eq. (8): R(i,k) = S(i,k) - max_{k' != k} [S(i,k') + A(i,k')]."""
    S = np.array([[-1.0, -2.0, -4.0], [-3.0, -1.0, -0.5], [-2.0, -6.0, -1.0]])[None]
    A = np.array([[0.5, -1.0, 0.0], [0.0, 0.2, -0.3], [-1.0, 0.0, 1.0]])[None]
    total = S + A
    expected = np.array([[S[0, i, k] - max(total[0, i, j] for j in range(3) if j != k) for k in range(3)]
                         for i in range(3)])
    np.testing.assert_allclose(_responsibility(S, A, np.ones((1, 3, 3), bool))[0], expected)


@pytest.mark.parametrize("kwargs, name", [
    ({"damping": 0.2}, "damping"), ({"decision": "vote"}, "decision"), ({"max_iter": 0}, "max_iter"),
    ({"self_availability": "min"}, "self_availability"), ({"preference": "mean"}, "preference"),
    ({"seed": -1}, "seed"), ({"seed": 2**32}, "seed"), ({"seed": [1, 2]}, "seed"), ({"tie_breaking": 1}, "tie_breaking"),
])
def test_invalid_parameters_name_themselves(kwargs, name):
    with pytest.raises(InvalidParameterError, match=name):
        affinity_propagation(np.zeros((3, 3)), **kwargs)


def test_similarity_must_be_square():
    with pytest.raises(InvalidParameterError, match="similarity"):
        affinity_propagation(np.zeros((3, 4)))
