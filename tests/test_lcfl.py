"""Tests of LCFL (``algorithms.lcfl``, ``client_distances``, ``clustering``, ``ifca_models``),
its bounds (``bounds.lcfl``), the bounded problems and Rademacher estimates, the recovery
metrics and the orderings judge. The verdicts themselves are in ``test_verify_lcfl.py``.
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from cflbounds import InvalidParameterError
from cflbounds.algorithms import fedavg, ifca_models, lcfl
from cflbounds.algorithms.client_distances import (
    cross_losses,
    diffnorm_distance,
    discrepancy_from_losses,
    gradcos_distance,
    loss_discrepancy,
)
from cflbounds.algorithms.clustering import cluster_distance_matrices, cluster_medoids
from cflbounds.algorithms.federated import client_gradients, client_losses, clustered_fedavg
from cflbounds.algorithms.ifca_models import _STREAM_IFCA_INIT
from cflbounds.algorithms.small_models import BoundedLinear, SoftmaxRegression, initial_parameters
from cflbounds.bounds import lcfl as bounds
from cflbounds.synthetic import make_bounded_linear_clusters, make_digit_clients
from cflbounds.papers.lcfl.checks import excess_loss_exact
from cflbounds.verify.orderings import judge_ordering, orderings_verdict
from cflbounds.papers.lcfl.rademacher import empirical_rademacher_linear, rademacher_linear
from cflbounds.claims.recovery import adjusted_rand, matched_accuracy, normalized_mutual_info
from cflbounds.verify.stats import mean_interval, paired_difference

from conftest import examples


@pytest.fixture(scope="module")
def digits():
    return make_digit_clients(12, 4, train_per_client=30, test_per_client=10, batch_size=2, seed=5, dtype="float64")


SOFTMAX = SoftmaxRegression(64, 10)


# -- bounds ---------------------------------------------------------------------------------
def test_theorem1_right_side_and_its_options():
    delta, m_i, m_j, r_i, r_j = 0.05, 200, 300, 0.04, 0.03
    result = bounds.theorem1(delta, m_i, m_j, r_i, r_j)
    hoeffding = lambda m: math.sqrt(math.log(2 / delta) / (2 * m))  # noqa: E731
    printed = 2 * hoeffding(m_i) + 2 * hoeffding(m_j) + r_i + r_j
    assert result.value == pytest.approx(printed, rel=1e-14)
    assert result.derived["rhs_r_coefficient_2"] == pytest.approx(printed + r_i + r_j, rel=1e-14)
    assert result.derived["confidence_printed"] == pytest.approx(0.95**4)
    assert result.derived["confidence_union_bound"] == pytest.approx(0.8)
    assert result.derived["failure_printed"] <= result.derived["failure_union_bound"]  # the union bound claims less
    assert result.assumptions_hold  # 0.46 < 2: not vacuous
    assert not bounds.theorem1(delta, 5, 5, 0.2, 0.2).assumptions_hold  # vacuous at 5 samples


def test_theorem1_at_a_subnormal_delta_and_an_overflowing_r():
    """delta = 1e-320: 2/delta overflows, log 2 - log delta = 737.5 does not; the right side
    is finite and vacuous (> 2). R = 1e308 twice over overflows the coefficient-2 side to
    inf, which must be reported vacuous, not as holding (inf <= 2 once counted as true)."""
    result = bounds.theorem1(1e-320, 200, 300, 0.05, 0.04)
    log_ratio = math.log(2) - math.log(1e-320)
    hand = 2 * math.sqrt(log_ratio / 400) + 2 * math.sqrt(log_ratio / 600) + 0.09
    assert result.value == pytest.approx(hand, rel=1e-14) and hand > 2
    assert result.derived["failure_printed"] == pytest.approx(4e-320, rel=1e-3)  # not 1 - 1 = 0
    assert [bool(row.holds) for row in result.assumptions] == [False, False, True]
    overflowing = bounds.theorem1(0.05, 200, 300, 1e308, 0.04)
    assert overflowing.derived["rhs_r_coefficient_2"] == math.inf
    assert not overflowing.assumptions[1].holds and not overflowing.assumptions_hold


@pytest.mark.parametrize("delta, failure", [(0.2, 0.8), (0.25, 1.0), (0.3, 1.0), (0.5, 1.0), (0.9, 1.0)])
def test_union_bound_confidence_is_a_probability_and_vacuous_from_a_quarter(delta, failure):
    result = bounds.theorem1(delta, 200, 300, 0.0, 0.0)
    assert result.derived["failure_union_bound"] == pytest.approx(failure)
    assert result.derived["confidence_union_bound"] == pytest.approx(1 - failure)
    assert bool(result.assumptions[2].holds) == (4 * delta < 1)  # "4 delta < 1", else the reading is vacuous
    assert result.derived["confidence_printed"] == pytest.approx((1 - delta) ** 4)


def test_vacuity_is_one_strict_definition():
    """Vacuous iff the right side is >= 2 (the range of |d - d-hat|), NaN included; the
    assumption rows of theorem1 (which the CLI prints) and the verdicts use this one test."""
    just_below = np.nextafter(2.0, 0.0)
    assert list(bounds.is_vacuous(np.array([just_below, 2.0, np.inf, np.nan]))) == [False, True, True, True]
    assert bool(bounds.range_condition(just_below, "x").holds) and not bounds.range_condition(2.0, "x").holds


@pytest.mark.parametrize("kwargs, name", [
    ({"delta": 0.0}, "delta"), ({"delta": 1.0}, "delta"), ({"m_i": 0}, "m_i"), ({"m_j": 2.5}, "m_j"),
    ({"rademacher_i": -0.1}, "rademacher_i"), ({"rademacher_j": float("nan")}, "rademacher_j"),
])
def test_theorem1_rejects_invalid_values(kwargs, name):
    arguments = {"delta": 0.05, "m_i": 200, "m_j": 300, "rademacher_i": 0.0, "rademacher_j": 0.0, **kwargs}
    with pytest.raises(InvalidParameterError, match=f"'{name}' parameter"):
        bounds.theorem1(**arguments)


def test_linear_rademacher_bound_and_discrepancy_bound():
    assert bounds.linear_rademacher_bound(100, 0.25, 3.0, 2.0) == pytest.approx(0.25 * 3 * 2 / 10)
    assert bounds.discrepancy_bound(0.2).value == pytest.approx(0.4)
    with pytest.raises(InvalidParameterError, match="'disc' parameter"):
        bounds.discrepancy_bound(1.5)


def test_sandwich_sides_and_validation():
    result = bounds.excess_loss_sandwich(2.0, 0.5, 4.0)
    assert (result.terms["lower"], result.terms["upper"]) == (0.5, 4.0)
    with pytest.raises(InvalidParameterError, match="must not exceed"):
        bounds.excess_loss_sandwich(1.0, 2.0, 1.0)


@examples(200)
@given(d=st.integers(1, 6), seed=st.integers(0, 2**32 - 1), log_condition=st.floats(0, 4))
def test_e8_identity_and_sandwich_match_the_population_loss(d, seed, log_condition):
    """The excess loss from E(w^T X - y)^2 = w^T S w - 2 w^T s + Var y (in 50-digit
    arithmetic), against eq. (8)'s identity in float64 (1e-9 relative, the issue's
    tolerance; float64 with condition numbers <= 1e4 is accurate to ~1e-12) and its
    eigenvalue sandwich."""
    rng = np.random.default_rng(seed)
    basis, _ = np.linalg.qr(rng.standard_normal((d, d)))
    eigenvalues = 10.0 ** rng.uniform(-log_condition / 2, log_condition / 2, size=d)
    sigma_xx = (basis * eigenvalues) @ basis.T
    sigma_xx = 0.5 * (sigma_xx + sigma_xx.T)
    s, s_hat = rng.standard_normal(d), rng.standard_normal(d)
    variance_y = s @ np.linalg.solve(sigma_xx, s) + 1.0
    excess = excess_loss_exact(sigma_xx, s, s_hat, variance_y)
    identity = bounds.excess_loss_identity(sigma_xx, s, s_hat)
    assert identity == pytest.approx(excess, rel=1e-9, abs=0)
    sandwich = bounds.excess_loss_sandwich(float(np.sum((s_hat - s) ** 2)), eigenvalues.min(), eigenvalues.max())
    assert sandwich.terms["lower"] <= identity * (1 + 1e-12) + 1e-15
    assert identity <= sandwich.terms["upper"] * (1 + 1e-12) + 1e-15


# -- Rademacher -----------------------------------------------------------------------------
def test_monte_carlo_rademacher_is_below_its_closed_form_bound():
    """R_m(H) <= B_w sqrt(E||x||^2/m) <= B_w B_x/sqrt(m) (Jensen). With 20000 draws the
    estimate's standard error is ~0.3% of it; Jensen's gap on the unit ball in R^5 is a few
    percent, so mean + 5 SE stays below the bound for any seed."""
    problem = make_bounded_linear_clusters(d=5, distribution_seed=3)
    for m in (10, 100):
        estimate = rademacher_linear(problem.atoms, m, 2.0, 20000, np.random.default_rng(1))
        jensen = 2.0 * math.sqrt(problem.second_moment / m)
        closed = bounds.linear_rademacher_bound(m, 1.0, 2.0, problem.input_norm)
        assert estimate.mean + 5 * estimate.standard_error < jensen <= closed
        assert estimate.mean > 0.5 * jensen  # and not trivially small


def test_empirical_rademacher_sup_is_exact_for_the_linear_class():
    """For fixed signs the sup over the ball is attained at w = B s/||s||, s = sum sigma_i x_i:
    no random point of the ball exceeds it, and that w reaches it."""
    rng = np.random.default_rng(0)
    sample = rng.standard_normal((7, 3))
    signs = rng.choice([-1.0, 1.0], size=7)
    s = signs @ sample
    sup = 1.5 / 7 * np.linalg.norm(s)
    w = rng.standard_normal((20000, 3))
    w *= 1.5 * rng.uniform(size=(20000, 1)) ** (1 / 3) / np.linalg.norm(w, axis=1, keepdims=True)
    assert np.max(w @ s / 7) <= sup + 1e-12
    assert (1.5 * s / np.linalg.norm(s)) @ s / 7 == pytest.approx(sup)
    # Jensen for the fixed sample: E||sum sigma_i x_i|| <= sqrt(sum ||x_i||^2)
    estimate = empirical_rademacher_linear(sample, 1.5, 20000, np.random.default_rng(2))
    assert estimate.mean + 5 * estimate.standard_error < 1.5 / 7 * np.sqrt(np.sum(sample**2))


# -- bounded problems -----------------------------------------------------------------------
def test_bounded_problem_population_is_exact_and_samples_come_from_it():
    problem = make_bounded_linear_clusters((4, 6, 5), (0, 1, 1), d=3, atoms=50, label_noise=0.2, batch_size=3, seed=2)
    model = BoundedLinear(3, radius=2.0)
    params = torch.as_tensor(np.random.default_rng(0).standard_normal((3, 2, 3)))
    population = client_losses(model, params[:, None], problem.population)  # (B, k, M)
    scores = np.einsum("ad,bmd->bma", problem.atoms, params.numpy())  # (B, M, A)
    for c in range(2):
        expected = (1.0 / (1.0 + np.exp(problem.atom_labels[c] * scores))).mean(-1)
        np.testing.assert_allclose(population[:, c].numpy(), expected, rtol=1e-12)
    np.testing.assert_array_equal(problem.sizes, [4, 6, 5])
    atoms = {row.tobytes(): a for a, row in enumerate(problem.atoms)}
    for b in range(3):
        for i, c in enumerate(problem.membership):
            real = problem.train.mask[b, i].numpy()
            for x, y in zip(problem.train.features[b, i].numpy()[real], problem.train.labels[b, i].numpy()[real]):
                assert problem.atom_labels[c, atoms[x.tobytes()]] == y
    tv = problem.total_variation()
    assert tv[0, 0] == 0 and tv[0, 1] == np.mean(problem.atom_labels[0] != problem.atom_labels[1])
    alone = make_bounded_linear_clusters((4, 6, 5), (0, 1, 1), d=3, atoms=50, label_noise=0.2, seed=[problem.seeds[1]])
    assert torch.equal(alone.train.features[0], problem.train.features[1])


@pytest.mark.parametrize("kwargs, fragment", [
    ({"client_sizes": (3, 4), "membership": (0,)}, "one entry per client"),
    ({"membership": (0, 2, 2)}, "membership must number"),
    ({"client_sizes": (0, 4, 4)}, "at least one sample"),
    ({"label_noise": 0.6}, "'label_noise' parameter"),
    ({"atoms": 1}, "'atoms' parameter"),
])
def test_bounded_problem_validation(kwargs, fragment):
    with pytest.raises(InvalidParameterError, match=fragment):
        make_bounded_linear_clusters(**kwargs)


# -- distances ------------------------------------------------------------------------------
def test_loss_discrepancy_matches_eq2_by_a_loop(digits):
    models = initial_parameters(SOFTMAX, digits.seeds, digits.m, 1, dtype=torch.float64)
    distances = loss_discrepancy(SOFTMAX, models, digits.train)
    one_sided, _ = discrepancy_from_losses(cross_losses(SOFTMAX, models, digits.train))
    L = lambda b, i, j: client_losses(SOFTMAX, models[b, j][None, None, None], type(digits.train)(  # noqa: E731
        digits.train.features[b:b + 1, i:i + 1], digits.train.labels[b:b + 1, i:i + 1],
        digits.train.mask[b:b + 1, i:i + 1]))[0, 0, 0]
    for b, i, j in [(0, 0, 5), (1, 3, 11), (0, 7, 7)]:
        expected = abs(L(b, i, i) - L(b, i, j)) + abs(L(b, j, i) - L(b, j, j))  # eq. (2)
        torch.testing.assert_close(distances[b, i, j], expected, rtol=1e-12, atol=1e-14)
        torch.testing.assert_close(one_sided[b, i, j], abs(L(b, i, j) - L(b, i, i)), rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(distances, distances.transpose(1, 2))
    assert torch.all(torch.diagonal(distances, dim1=1, dim2=2) == 0)


def test_diffnorm_and_gradcos(digits):
    models = initial_parameters(SOFTMAX, digits.seeds, digits.m, 2, dtype=torch.float64)
    diffnorm = diffnorm_distance(models)
    torch.testing.assert_close(diffnorm[1, 2, 9], torch.linalg.vector_norm(models[1, 2] - models[1, 9]))
    point = models[:, 0]
    cosine = gradcos_distance(SOFTMAX, point, digits.train)
    gradients, _ = client_gradients(SOFTMAX, point[:, None, None], digits.train)
    g, h = gradients[0, 4, 0], gradients[0, 6, 0]
    torch.testing.assert_close(cosine[0, 4, 6], 1 - g @ h / (g.norm() * h.norm()))
    assert float(cosine.min()) >= 0 and float(cosine.max()) <= 2


# -- clustering -----------------------------------------------------------------------------
def _blobs(seed=0):
    """Two trials of 3 well-separated blobs (radius 0.1, centres 10 apart) of 4, 5, 3 points;
    29% of the off-diagonal pairs lie inside a blob, so DBSCAN's eps at the 25th
    percentile of the distances is a within-blob distance that links every blob."""
    rng = np.random.default_rng(seed)
    truth = np.repeat([0, 1, 2], [4, 5, 3])
    centres = np.array([[0, 0], [10, 0], [0, 10]])
    matrices, truths = [], []
    for _ in range(2):
        order = rng.permutation(12)
        points = centres[truth[order]] + 0.1 * rng.uniform(-1, 1, size=(12, 2))
        matrices.append(np.linalg.norm(points[:, None] - points[None], axis=-1))
        truths.append(truth[order])
    return np.stack(matrices), np.stack(truths)


@pytest.mark.parametrize("method", ["kmedoids", "agglomerative", "dbscan"])
def test_clustering_recovers_a_well_separated_partition_exactly(method):
    distances, truth = _blobs()
    found = cluster_distance_matrices(distances, method, k=3, dbscan_percentile=25.0, dbscan_min_samples=2)
    np.testing.assert_array_equal(adjusted_rand(truth, found), [1.0, 1.0])
    assert np.all(found[:, 0] == 0)  # numbered by first appearance


def test_cluster_medoids_minimise_the_summed_distance():
    distances, truth = _blobs()
    medoids = cluster_medoids(distances, truth)
    for b in range(2):
        for cluster in range(3):
            members = np.flatnonzero(truth[b] == cluster)
            sums = distances[b][np.ix_(members, members)].sum(axis=1)
            assert medoids[b, cluster] == members[np.argmin(sums)]


def test_dbscan_noise_points_become_singletons():
    distances, _ = _blobs()
    far = np.full((2, 13, 13), 50.0)
    far[:, :12, :12] = distances
    far[:, np.arange(13), np.arange(13)] = 0.0
    found = cluster_distance_matrices(far, "dbscan", dbscan_percentile=20.0, dbscan_min_samples=2)
    assert np.all(found.max(axis=1) == 3)  # 3 blobs and the isolated point alone
    assert np.all([np.sum(row == row[12]) == 1 for row in found])


def test_recovery_metrics():
    truth = np.array([[0, 0, 1, 1, 2, 2]])
    relabelled = np.array([[2, 2, 0, 0, 1, 1]])
    assert adjusted_rand(truth, relabelled)[0] == 1.0 and normalized_mutual_info(truth, relabelled)[0] == 1.0
    assert matched_accuracy(truth, relabelled)[0] == 1.0
    found = np.array([[0, 1, 1, 1, 2, 3]])
    brute = max(np.mean([perm[f] == t for f, t in zip(found[0], truth[0])]) if len(perm) else 0
                for perm in [dict(zip(range(4), p)) for p in itertools.permutations([0, 1, 2, 9])])
    assert matched_accuracy(truth, found)[0] == pytest.approx(brute)


# -- LCFL pipeline --------------------------------------------------------------------------
def test_lcfl_with_one_common_cluster_is_fedavg_bit_for_bit(digits):
    seeds = np.array(digits.seeds)
    schedule = dict(rounds=3, local_steps=2, step_size=0.3, batch_size=7)
    one = lcfl(SOFTMAX, digits.train, digits.test, seeds=seeds, k=1, cluster_init="common", **schedule)
    assert np.all(one.clusters == 0)
    reference = fedavg(SOFTMAX, digits.train, digits.test, seeds=seeds, **schedule)
    assert torch.equal(one.federated.models, reference.models)
    np.testing.assert_array_equal(one.federated.accuracy, reference.accuracy)


def test_lcfl_recovers_rotated_digits_and_is_batch_invariant(digits):
    """Softmax regression, 12 clients in 4 rotations: the loss metric after T = 10 steps
    separates the rotations (measured ARI 1 in both trials)."""
    seeds = np.array(digits.seeds)
    kwargs = dict(k=4, rounds=2, local_steps=2, step_size=0.5, warmup_steps=10)
    run = lcfl(SOFTMAX, digits.train, digits.test, seeds=seeds, **kwargs)
    np.testing.assert_array_equal(adjusted_rand(digits.membership, run.clusters), [1.0, 1.0])
    alone = lcfl(SOFTMAX, digits.train.subset([1]), digits.test.subset([1]), seeds=seeds[1:], **kwargs)
    np.testing.assert_array_equal(alone.clusters, run.clusters[1:])
    torch.testing.assert_close(alone.federated.models, run.federated.models[1:], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("options", [
    {"metric": "diffnorm", "clustering": "agglomerative", "init": "common"},
    {"metric": "gradcos", "clustering": "dbscan", "k": None},
    {"warmup": "fedavg", "init": "common", "warmup_rounds": 2},
    {"cluster_init": "medoid"},
])
def test_lcfl_options_run(digits, options):
    run = lcfl(SOFTMAX, digits.train, digits.test, seeds=np.array(digits.seeds), rounds=1, local_steps=1,
               warmup_steps=2, **{"k": 4, **options})
    assert run.clusters.shape == (2, 12) and run.distances.shape == (2, 12, 12)
    assert run.federated.models.shape[1] == run.cluster_count.max()
    assert (run.warmup is not None) == (options.get("warmup") == "fedavg")


def test_medoid_cluster_init_starts_from_the_medoids_warmup_model(digits):
    run = lcfl(SOFTMAX, digits.train, digits.test, seeds=np.array(digits.seeds), k=4, rounds=0, warmup_steps=3,
               cluster_init="medoid")
    medoids = torch.as_tensor(cluster_medoids(run.distances, run.clusters))
    assert torch.equal(run.federated.models, run.warmup_models[torch.arange(2)[:, None], medoids])


@pytest.mark.parametrize("options, fragment", [
    ({"k": 13}, "k <= m"), ({"k": None}, "needs k"), ({"warmup": "fedavg"}, "init='common'"),
    ({"metric": "cosine"}, "'metric' parameter"), ({"dbscan_percentile": 0}, "'dbscan_percentile' parameter"),
])
def test_lcfl_validation(digits, options, fragment):
    with pytest.raises(InvalidParameterError, match=fragment):
        lcfl(SOFTMAX, digits.train, digits.test, seeds=np.array(digits.seeds), **options)


# -- IFCA on models -------------------------------------------------------------------------
def test_ifca_with_one_model_is_fedavg_from_its_initial_model(digits):
    seeds = np.array(digits.seeds)
    run = ifca_models(SOFTMAX, digits.train, digits.test, seeds=seeds, k=1, rounds=3, local_steps=2, step_size=0.3)
    init = initial_parameters(SOFTMAX, seeds, 1, _STREAM_IFCA_INIT, dtype=torch.float64)
    groups = torch.zeros((2, 12), dtype=torch.long)
    reference = clustered_fedavg(SOFTMAX, digits.train, digits.test, groups, init, rounds=3, local_steps_count=2,
                                 step_size=0.3)
    torch.testing.assert_close(run.models, reference.models, rtol=0, atol=0)
    np.testing.assert_array_equal(run.accuracy, reference.accuracy)
    assert np.all(run.assignments == 0)


def test_ifca_gradient_round_matches_a_loop(digits):
    seeds = np.array(digits.seeds)
    run = ifca_models(SOFTMAX, digits.train, digits.test, seeds=seeds, k=3, rounds=1, step_size=0.7,
                      aggregation="gradient")
    models = initial_parameters(SOFTMAX, seeds, 3, _STREAM_IFCA_INIT, dtype=torch.float64)
    losses = client_losses(SOFTMAX, models[:, None], digits.train)  # (B, m, k)
    gradients, _ = client_gradients(SOFTMAX, models[:, None], digits.train)  # (B, m, k, P)
    expected = models.clone()
    for b in range(2):
        for i in range(12):
            j = int(losses[b, i].argmin())
            assert run.assignments[b, 0, i] == j
            expected[b, j] -= 0.7 / 12 * gradients[b, i, j]
    torch.testing.assert_close(run.models, expected, rtol=1e-12, atol=1e-12)


# -- statistics and orderings ---------------------------------------------------------------
def test_paired_difference_matches_scipy():
    from scipy import stats

    values = np.array([0.3, 0.1, 0.25, 0.4, 0.2])
    low, high = stats.t.interval(0.9, 4, loc=values.mean(), scale=stats.sem(values))
    difference = paired_difference(values + 1, np.ones(5), 0.9)
    assert (difference.mean, difference.low, difference.high) == pytest.approx((values.mean(), low, high))
    assert tuple(map(float, mean_interval(values, 0.9))) == pytest.approx((difference.mean, low, high))
    with pytest.raises(ValueError, match="2 finite pairs"):
        paired_difference([1.0], [0.0])


def test_ordering_statuses_and_verdict():
    base = np.array([0.80, 0.82, 0.79, 0.81, 0.80])
    better = judge_ordering("A >= B", base + 0.05, base)
    worse = judge_ordering("A >= B", base - 0.05, base)
    tied = judge_ordering("A >= B", base + np.array([0.001, -0.001, 0.0, 0.001, -0.001]), base)
    noisy = judge_ordering("A >= B", base + np.array([0.2, -0.2, 0.1, -0.1, 0.0]), base)
    assert [j.status for j in (better, worse, tied, noisy)] == ["supported", "contradicted", "tied", "unresolved"]
    assert orderings_verdict([better, tied]) == "holds"
    assert orderings_verdict([better, noisy]) == "inconclusive"
    assert orderings_verdict([better, worse]) == "violated"
    strict_tie = judge_ordering("A > B", base, base, relation=">")
    assert strict_tie.status == "tied" and orderings_verdict([strict_tie]) == "inconclusive"


def test_a_contradiction_must_survive_the_bonferroni_correction():
    """Ten seeds with a reversal of mean -0.009 and sd 0.0088: the 95% interval (t_0.975,9 =
    2.26, upper end -0.0027) lies below 0, the one over 10 comparisons (t_0.9975,9 = 3.69,
    upper end +0.0013) does not. Alone it contradicts "A >= B"; as one of 10 orderings (where
    ten true ties would give a false contradiction ~22% of the time) it is unresolved."""
    offsets = np.array([-0.025, -0.005, -0.01, 0.005, -0.02, -0.01, 0.0, -0.015, -0.01, -0.01])
    offsets = offsets - offsets.mean() - 0.009
    base = np.linspace(0.7, 0.9, 10)
    alone = judge_ordering("A >= B", base + offsets, base, tolerance=0.001)
    in_family = judge_ordering("A >= B", base + offsets, base, tolerance=0.001, comparisons=10)
    assert alone.high < 0 and in_family.high == alone.high and in_family.family_high > 0 > alone.family_high
    assert alone.status == "contradicted" and orderings_verdict([alone]) == "violated"
    assert in_family.status == "unresolved" and orderings_verdict([in_family]) == "inconclusive"
    assert "Bonferroni upper end" in in_family.describe()
