"""DSC's wireless setting, two-stage grouping and hierarchical training."""
import math
import warnings

import numpy as np
import pytest
import torch
from sklearn.cluster import AffinityPropagation

from cflbounds._validation import InvalidParameterError
from cflbounds.algorithms.dsc import (NOISE_READINGS, Hierarchy, angle_weights, dissimilarity_ratios, hierarchical_descent,
                                      hierarchy)
from cflbounds.algorithms.affinity_propagation import affinity_propagation
from cflbounds.algorithms.dsc_grouping import (Grouping, _resolve, channel_similarity, data_similarity, dsc_grouping,
                                               information_matrix, tie_seed)
from cflbounds.synthetic import label_mixture, make_quadratic_federation
from cflbounds.synthetic.wireless import PAPER_CHANNEL, layout_from_positions, make_wireless_layout, upload_noise_variance
from cflbounds.papers.dsc.experiment import EXPERIMENT, build_instances, draw_label_counts
from cflbounds.verify.testing import assert_rejected, invalid_calls


# -- wireless setting -----------------------------------------------------------------------------
def test_path_loss_snr_by_hand():
    """gamma = p G_BS G_D (c/(4 pi f_c d))^P / sigma^2 with the Sec. IV-A constants."""
    d = 20.0
    expected = 0.1 * 10 ** 0.5 * (299_792_458.0 / (4 * math.pi * 915e6 * d)) ** 3.76 / 0.001
    assert PAPER_CHANNEL.snr(d, to_bs=True) == pytest.approx(expected, rel=1e-12)
    assert PAPER_CHANNEL.snr(d, to_bs=False) == pytest.approx(expected / 10 ** 0.5, rel=1e-12)


def test_layout_gamma_matrix_is_symmetric_with_bs_snr_on_the_diagonal():
    layout = make_wireless_layout(12, batch_size=3, seed=4)
    assert np.all(np.abs(layout.positions) <= 50.0)
    gamma = layout.gamma
    np.testing.assert_allclose(gamma, gamma.transpose(0, 2, 1))
    np.testing.assert_allclose(np.diagonal(gamma, axis1=1, axis2=2), layout.snr_to_bs)
    alone = make_wireless_layout(12, batch_size=1, seed=[layout.seeds[1]])
    np.testing.assert_array_equal(alone.positions[0], layout.positions[1])  # a placement depends only on its seed


def test_upload_noise_is_calibrated_at_the_reference_distance():
    reference = PAPER_CHANNEL.snr(50.0, to_bs=True)
    np.testing.assert_allclose(upload_noise_variance([reference, reference / 10, np.inf], 0.2), [0.2, 2.0, 0.0])


# -- grouping -------------------------------------------------------------------------------------
def test_information_matrix_by_hand():
    """eq. (11) as printed, leading minus included: Xi(k,iota) = -(C_k^iota/D) log(D C_k^iota / (D_k C^iota))."""
    counts = np.array([[2.0, 0.0], [1.0, 1.0]])  # D = 4, D_k = (2, 2), C^iota = (3, 1)
    expected = -np.array([[2 / 4 * np.log(4 * 2 / (2 * 3)), 0.0],
                          [1 / 4 * np.log(4 * 1 / (2 * 3)), 1 / 4 * np.log(4 * 1 / (2 * 1))]])
    xi = information_matrix(counts)
    np.testing.assert_allclose(xi, expected)
    assert xi[0, 0] < 0 < xi[1, 0]  # the sign: log(4/3) > 0 > log(2/3)
    similarity = data_similarity(counts)
    np.testing.assert_allclose(similarity[0, 1], (((expected[0] - expected[1]) ** 2).sum()) ** 2)
    assert similarity[0, 0] == 0 and similarity[0, 1] > 0  # eq. (12) is positive by design


def _snr(distance, to_bs):
    """gamma of Sec. IV-A written out: p G_tx G_rx (c / (4 pi f_c d))^P / sigma^2."""
    gain = 10 ** 0.5 if to_bs else 1.0
    return 0.1 * gain * (299_792_458.0 / (4 * math.pi * 915e6 * distance)) ** 3.76 / 0.001


def test_channel_similarities_by_hand():
    """Stage 1's similarity: eq. (7) -gamma_ij^2 (squared) and the SNR gap -(gamma_i^dB - gamma_j^dB)^2."""
    positions = np.array([[10.0, 0.0], [0.0, 20.0], [-30.0, 5.0]])
    layout = layout_from_positions(positions)
    eq7, gap = channel_similarity(layout)[0], channel_similarity(layout, "snr-gap")[0]
    to_bs = [_snr(np.linalg.norm(p), True) for p in positions]
    for i in range(3):
        for j in range(3):
            if i != j:
                between = _snr(np.linalg.norm(positions[i] - positions[j]), False)
                assert eq7[i, j] == pytest.approx(-between**2, rel=1e-12)
                assert gap[i, j] == pytest.approx(-(10 * np.log10(to_bs[i] / to_bs[j])) ** 2, rel=1e-12)


def _two_rings(seed=0):
    """Four clients 3-4 m from the BS and four 40-45 m away (two SNR levels 37 dB apart),
    two-label clients with distinct counts."""
    angles = np.linspace(0, 2 * np.pi, 4, endpoint=False)
    positions = np.r_[np.c_[3 * np.cos(angles), 4 * np.sin(angles)],
                      np.c_[40 * np.cos(angles + 0.3), 45 * np.sin(angles + 0.3)]]
    counts = np.zeros((8, 4))
    for k in range(8):
        counts[k, [0, 1] if k % 2 == 0 else [2, 3]] = [300, 300 + 50 * k]
    return layout_from_positions(positions, seed=seed), counts


@pytest.mark.parametrize("decision", ["standard", "paper"])
def test_two_stages_on_a_hand_built_layout(decision):
    """Stage 1 on the SNR gap separates the rings; stage 2 refines each ring: a data preference
    above every eq. (12) similarity makes every client a leader (8 groups), one below every
    similarity keeps each ring whole (2 groups), as does skipping stage 2."""
    layout, counts = _two_rings()
    options = dict(channel_similarity_kind="snr-gap", decision=decision)
    rings = [0, 0, 0, 0, 1, 1, 1, 1]
    scale = data_similarity(counts).max()
    split = dsc_grouping(layout, counts, data_preference=10 * scale, **options)
    whole = dsc_grouping(layout, counts, data_preference=-10 * scale, **options)
    channel = dsc_grouping(layout, counts, stages="channel", **options)
    for grouping in (split, whole, channel):
        assert grouping.primary[0].tolist() == rings and grouping.converged[0]
    assert split.group[0].tolist() == list(range(8))
    assert whole.group[0].tolist() == rings == channel.group[0].tolist()


def test_left_over_clients_join_the_nearest_leader_by_hand():
    """Leaders 0 (x = 0) and 1 (x = 10): client 2 (x = 3) joins 0, clients 3 (x = 8) and 4
    (x = 100) join 1; with no leader at all the fallback leads everyone."""
    positions = np.array([[0.0, 0.0], [10.0, 0.0], [3.0, 0.0], [8.0, 0.0], [100.0, 1.0]])
    leader, left = _resolve(positions, np.array([0, 1, -1, -1, -1]), fallback=4)
    assert leader.tolist() == [0, 1, 0, 1, 1] and left.tolist() == [False, False, True, True, True]
    leader, left = _resolve(positions, np.full(5, -1), fallback=4)
    assert leader.tolist() == [4] * 5 and left.all()


def test_stage_two_left_overs_join_the_nearest_leader_of_their_own_primary_group():
    """With the paper's decision rule some clients are left over by stage 2; each joins the
    leader nearest to it among the secondary leaders of its own primary group (plain loops)."""
    layout = make_wireless_layout(30, batch_size=12, seed=2)
    counts = draw_label_counts(np.random.default_rng(0), 30, 10)
    grouping = dsc_grouping(layout, counts, decision="paper")
    assert grouping.leftover_data.sum() > 0
    for b in range(12):
        leaders = grouping.client_leader[b]
        for k in np.flatnonzero(grouping.leftover_data[b]):
            own = [c for c in set(leaders) if grouping.primary[b][c] == grouping.primary[b][k] and leaders[c] == c]
            distance = {c: np.linalg.norm(layout.positions[b, k] - layout.positions[b, c]) for c in own}
            assert leaders[k] == min(distance, key=distance.get)


def _sklearn_two_stages(layout, counts, b):
    """DSC's grouping of problem b written with scikit-learn's AP (seeded as DSC's stages):
    stage 1 on eq. (7), stage 2 on eq. (12) inside each primary group; each client's leader."""
    def run(S, seed):
        preference = np.median(S[~np.eye(len(S), dtype=bool)]) if len(S) > 1 else 0.0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = AffinityPropagation(affinity="precomputed", preference=preference, random_state=seed).fit(S)
        return np.asarray(model.cluster_centers_indices_)[model.labels_]

    primary_leader = run(channel_similarity(layout)[b], tie_seed(layout.seeds[b], 1))
    leader = np.empty(layout.clients, int)
    similarity = data_similarity(counts)
    for g, primary in enumerate(np.unique(primary_leader)):
        ix = np.flatnonzero(primary_leader == primary)
        leader[ix] = ix[run(similarity[np.ix_(ix, ix)], tie_seed(layout.seeds[b], 2, g))]
    return leader


def test_two_stage_grouping_equals_sklearn_composed():
    """Both stages against an independent composition of scikit-learn runs; on these layouts
    stage 2 splits primary groups in most problems, so skipping it cannot pass."""
    layout = make_wireless_layout(30, batch_size=6, seed=2)
    counts = draw_label_counts(np.random.default_rng(0), 30, 10)
    grouping = dsc_grouping(layout, counts)
    assert grouping.converged.all() and (grouping.groups > grouping.primary.max(1) + 1).sum() >= 4
    for b in range(6):
        np.testing.assert_array_equal(grouping.client_leader[b], _sklearn_two_stages(layout, counts, b))


def test_grouping_reports_convergence_and_left_overs_per_stage():
    """The smoke 'small' instances: before tie-breaking stage 1 never converged and left all 3
    clients over; now both stages converge with no left-over client. Without tie-breaking the
    failure is reported, not hidden."""
    config = EXPERIMENT["smoke"]["configs"][0]
    layout, counts = build_instances(config, 0, 2, key=(0,)).layout, build_instances(config, 0, 2, key=(0,)).counts
    grouping = dsc_grouping(layout, counts)
    assert grouping.converged_channel.all() and grouping.converged_data.all()
    assert not grouping.leftover_channel.any() and not grouping.leftover_data.any()
    exact = dsc_grouping(layout, counts, tie_breaking=False)
    assert not exact.converged_channel[0] and exact.leftover_channel[0].all() and not exact.converged[0]
    # AP cannot converge within fewer iterations than convergence_iter: each stage says so
    short = dict(max_iter=5, convergence_iter=10)
    data_only = dsc_grouping(layout, counts, stages="data", **short)
    assert data_only.converged_channel.all() and not data_only.converged_data.any()
    channel_only = dsc_grouping(layout, counts, stages="channel", **short)
    assert not channel_only.converged_channel.any() and channel_only.converged_data.all()


@pytest.mark.parametrize("options", [{}, {"stages": "data"}, {"stages": "channel"}, {"decision": "paper"},
                                     {"channel_similarity_kind": "snr-gap"}, {"self_availability": "max"}])
def test_grouping_is_a_partition_with_leaders_inside_their_groups(options):
    layout = make_wireless_layout(30, batch_size=3, seed=2)
    counts = draw_label_counts(np.random.default_rng(0), 30, 10)
    grouping = dsc_grouping(layout, counts, **options)
    for b in range(3):
        leaders = grouping.leader[b][grouping.leader[b] >= 0]
        assert len(leaders) == grouping.groups[b] == grouping.group[b].max() + 1
        np.testing.assert_array_equal(grouping.group[b][leaders], np.arange(len(leaders)))
        for g in range(grouping.groups[b]):  # secondary groups never cross primary groups
            assert len(set(grouping.primary[b][grouping.group[b] == g])) == 1


def test_grouping_of_a_batch_equals_each_problem_alone():
    layout = make_wireless_layout(20, batch_size=3, seed=9)
    counts = draw_label_counts(np.random.default_rng(1), 20, 10)
    together = dsc_grouping(layout, counts)
    for b in range(3):
        alone = dsc_grouping(layout.subset([b]), counts)
        np.testing.assert_array_equal(alone.group[0], together.group[b])
        np.testing.assert_array_equal(alone.primary[0], together.primary[b])
        assert alone.converged_data[0] == together.converged_data[b]


# -- eq. (3) weights --------------------------------------------------------------------------------
def _tree(groups, sizes, count):
    """A noise-free tree of given groups ``(B, K)`` and data sizes (weights G_l from the sizes)."""
    groups = torch.as_tensor(groups)
    sizes = torch.as_tensor(sizes, dtype=torch.float64)
    totals = torch.stack([torch.bincount(g, weights=w, minlength=count) for g, w in zip(groups, sizes)])
    zeros = torch.zeros_like(sizes)
    return Hierarchy(groups, sizes, totals / totals.sum(-1, keepdim=True), zeros, torch.zeros_like(totals))


def test_angle_weights_by_hand_and_sum_to_one_per_group():
    """Two groups: {0, 1} and {2}. Group 0's reference is the data-weighted sum of its received
    gradients; G_k = |D_k| e^{f(theta_k)} / sum_i |D_i| e^{f(theta_i)}, f(t) = 1 - exp(-exp(-(t - 1)))."""
    gradients = torch.tensor([[[[1.0, 0.0]], [[0.0, 2.0]], [[3.0, 3.0]]]], dtype=torch.float64)  # (B=1, K=3, S=1, q=2)
    tree = _tree([[0, 0, 1]], [[100.0, 300.0, 50.0]], 2)
    weights = angle_weights(gradients, tree)[0, :, 0].numpy()
    reference = 0.25 * np.array([1.0, 0.0]) + 0.75 * np.array([0.0, 2.0])
    theta = [np.arccos(reference @ g / (np.linalg.norm(reference) * np.linalg.norm(g)))
             for g in ([1.0, 0.0], [0.0, 2.0])]
    f = [1 - np.exp(-np.exp(-(t - 1))) for t in theta]
    score = np.array([100 * np.exp(f[0]), 300 * np.exp(f[1])])
    np.testing.assert_allclose(weights[:2], score / score.sum(), rtol=1e-12)
    assert weights[2] == pytest.approx(1.0)  # a lone client carries its whole group
    np.testing.assert_allclose(tree.group_sums(angle_weights(gradients, tree)).numpy(), 1.0)
    data = angle_weights(gradients, tree, weighting="data")[0, :, 0].numpy()
    np.testing.assert_allclose(data, [0.25, 0.75, 1.0])
    alpha0 = angle_weights(gradients, tree, alpha=0.0)[0, :, 0].numpy()
    np.testing.assert_allclose(alpha0, data)  # f = 0 when alpha = 0


@pytest.mark.parametrize("alpha", [0.5, 5.0])
def test_fedadp_alpha_weights_by_hand(alpha):
    """FedAdp's Gompertz weighting, alpha inside and outside: f(theta) = alpha (1 - exp(-exp(-alpha
    (theta - 1)))), G_k = |D_k| e^{f(theta_k)} / sum_i |D_i| e^{f(theta_i)}; three clients in one group."""
    gradients = torch.tensor([[[[1.0, 0.0]], [[0.0, 2.0]], [[-1.0, 0.5]]]], dtype=torch.float64)
    sizes = np.array([100.0, 300.0, 200.0])
    tree = _tree([[0, 0, 0]], sizes[None], 1)
    reference = (sizes[:, None] * gradients[0, :, 0].numpy()).sum(0) / sizes.sum()
    theta = np.array([np.arccos(reference @ g / (np.linalg.norm(reference) * np.linalg.norm(g)))
                      for g in gradients[0, :, 0].numpy()])
    score = sizes * np.exp(alpha * (1 - np.exp(-np.exp(-alpha * (theta - 1)))))
    np.testing.assert_allclose(angle_weights(gradients, tree, alpha=alpha)[0, :, 0].numpy(), score / score.sum(),
                               rtol=1e-12)


def test_random_weights_sum_to_one_per_group():
    rng = np.random.default_rng(0)
    group = rng.integers(0, 4, size=(3, 12))
    group[:, :4] = np.arange(4)
    tree = _tree(group, rng.uniform(400, 800, size=(3, 12)), 4)
    gradients = torch.as_tensor(rng.normal(size=(3, 12, 2, 5)))
    for alpha in (1.0, 5.0):
        weights = angle_weights(gradients, tree, alpha=alpha)
        assert torch.all(weights > 0)
        np.testing.assert_allclose(tree.group_sums(weights).numpy(), 1.0, rtol=1e-12)


# -- training -------------------------------------------------------------------------------------------
def _setup(batch=3, clients=12, d=4, seed=5):
    counts = draw_label_counts(np.random.default_rng(seed), clients, 5)
    labels = make_quadratic_federation(5, d, clusters=1, hessians="client", strong_convexity=0.5, smoothness=3.0,
                                       noise_std=0.0, spread=0.5, batch_size=batch, seed=seed)
    problem = label_mixture(labels, counts)
    layout = make_wireless_layout(clients, batch_size=batch, seed=list(problem.seeds))
    grouping = dsc_grouping(layout, counts)
    return problem, layout, grouping, counts.sum(1)


def test_batched_training_equals_each_run_alone():
    problem, layout, grouping, sizes = _setup()
    steps = np.array([[0.05, 0.2], [0.1, 0.3], [0.02, 0.4]])
    w0 = torch.as_tensor(problem.global_minimizer + 1.0)
    tree = hierarchy(grouping, layout, sizes, noise_scale=0.05)
    gap = lambda w: (w - torch.as_tensor(problem.global_minimizer)[:, None]).pow(2).sum(-1)
    together = hierarchical_descent(problem.population_gradients, w0, tree, step_sizes=steps, iterations=15,
                                    seeds=problem.seeds, loss=gap)
    for b in range(3):
        sub = problem.subset([b])
        sub_gap = lambda w: (w - torch.as_tensor(sub.global_minimizer)[:, None]).pow(2).sum(-1)
        for s in range(2):
            alone = hierarchical_descent(sub.population_gradients, w0[[b]],
                                         hierarchy(grouping.subset([b]), layout.subset([b]), sizes, noise_scale=0.05),
                                         step_sizes=steps[b, s], iterations=15, seeds=[problem.seeds[b]], loss=sub_gap)
            torch.testing.assert_close(alone.final[0, 0], together.final[b, s], rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(alone.loss[0, 0], together.loss[b, s], rtol=1e-12)


def test_looped_reference_of_eqs_2_to_4():
    """One round by a plain loop over groups and clients (ideal channel): the update of eq. (4)
    with eq. (2)'s aggregate and eq. (3)'s weights."""
    problem, layout, grouping, sizes = _setup(batch=1)
    w0 = problem.global_minimizer + 0.7
    step = 0.1
    trace = hierarchical_descent(problem.population_gradients, torch.as_tensor(w0),
                                 hierarchy(grouping, layout, sizes), step_sizes=step, iterations=1,
                                 seeds=problem.seeds)
    gradients = problem.client_gradients(w0[:, None])[0, 0]
    aggregate = np.zeros(problem.d)
    for g in range(grouping.groups[0]):
        members = np.flatnonzero(grouping.group[0] == g)
        reference = sum(sizes[k] * gradients[k] for k in members) / sizes[members].sum()
        score = []
        for k in members:
            cos = reference @ gradients[k] / (np.linalg.norm(reference) * np.linalg.norm(gradients[k]))
            theta = np.arccos(np.clip(cos, -1 + 1e-12, 1 - 1e-12))
            score.append(sizes[k] * np.exp(1 - np.exp(-np.exp(-(theta - 1)))))
        G_k = np.array(score) / sum(score)
        aggregate += sizes[members].sum() / sizes.sum() * (G_k[:, None] * gradients[members]).sum(0)
    np.testing.assert_allclose(trace.final[0, 0].numpy(), w0[0] - step * aggregate, rtol=1e-10)


def test_fedavg_is_singleton_groups_with_data_weights():
    """FedAvg in an ideal channel: w - lambda sum_k (|D_k|/D) grad F_k, whatever the weighting."""
    problem, layout, _, sizes = _setup(batch=2)
    w0 = torch.as_tensor(problem.global_minimizer - 0.3)
    tree = hierarchy(Grouping.singletons(2, problem.clients), layout, sizes)
    trace = hierarchical_descent(problem.population_gradients, w0, tree, step_sizes=0.1, iterations=1,
                                 seeds=problem.seeds)
    expected = w0.numpy() - 0.1 * np.einsum("k,bkd->bd", sizes / sizes.sum(),
                                            problem.client_gradients(w0.numpy()[:, None])[:, 0])
    np.testing.assert_allclose(trace.final[:, 0].numpy(), expected, rtol=1e-12)
    assert np.all(trace.weight_factor[..., 0] == pytest.approx(((sizes / sizes.sum()) ** 2).sum()))


@pytest.mark.parametrize("reading", NOISE_READINGS)
def test_noise_has_the_variance_of_eq5(reading):
    """At a fixed point (zero gradients) one round moves w by lambda times the noise; its mean
    squared norm is lambda^2 N with, per upload, N = sum_l G_l^2 (sigma_l^2 + sum_k G_k^2 sigma_k^2)
    and, per receiver (eq. 5 as printed), N = max_l G_l^2 sigma_l^2 + sum_l G_l^2 max_k G_k^2 sigma_k^2."""
    problem, layout, grouping, sizes = _setup(batch=1, clients=8)
    tree = hierarchy(grouping, layout, sizes, noise_scale=0.3)
    zero = lambda w: torch.zeros(*w.shape[:2], problem.clients, w.shape[-1], dtype=w.dtype)
    steps = np.linspace(0.5, 1.5, 400)  # 400 independent noise draws (one per step size)
    trace = hierarchical_descent(zero, torch.zeros(1, 50, dtype=torch.float64), tree, step_sizes=steps,
                                 iterations=1, seeds=[3], weighting="data", noise_reading=reading)
    moved = (trace.final[0].pow(2).sum(-1) / torch.as_tensor(steps) ** 2).numpy()
    G_l, sigma_l = tree.group_weights[0].numpy(), tree.group_noise[0].numpy()
    G_k = angle_weights(torch.ones(1, 8, 1, 1, dtype=torch.float64), tree, weighting="data")[0, :, 0].numpy()
    sigma_k, group = tree.client_noise[0].numpy(), grouping.group[0]
    intra = [(G_k[group == g] ** 2 * sigma_k[group == g]) for g in range(len(G_l))]
    if reading == "per-upload":
        exact = sum(G_l[g] ** 2 * (sigma_l[g] + intra[g].sum()) for g in range(len(G_l)))
    else:
        exact = max(G_l**2 * sigma_l) + sum(G_l[g] ** 2 * intra[g].max() for g in range(len(G_l)))
    assert sigma_k.max() > 0 and len(G_l) > 1  # both levels carry noise
    # mean of 400 draws of a weighted chi-square: relative standard error <= sqrt(2/(400 * 50)) * 2 < 2%
    assert moved.mean() == pytest.approx(exact, rel=0.1)


def test_readings_of_eq5_agree_for_a_single_sender():
    """One client, its own leader, uploading to the BS: one upload, one receiver, one noise;
    both readings move the model identically (the same normal, the same variance)."""
    problem, layout, _, sizes = _setup(batch=1, clients=1)
    tree = hierarchy(Grouping.singletons(1, 1), layout, sizes, noise_scale=0.3)
    runs = [hierarchical_descent(problem.population_gradients, torch.as_tensor(problem.global_minimizer + 1.0), tree,
                                 step_sizes=[0.1, 0.2], iterations=5, seeds=[4], noise_reading=reading).final
            for reading in NOISE_READINGS]
    assert tree.group_noise[0, 0] > 0
    torch.testing.assert_close(runs[0], runs[1], rtol=0, atol=0)


def test_dissimilarity_ratios_are_at_least_one():
    problem, layout, grouping, sizes = _setup()
    tree = hierarchy(grouping, layout, sizes)
    w = torch.as_tensor(problem.global_minimizer[:, None] + np.random.default_rng(0).normal(size=(3, 7, 4)))
    gradients = problem.population_gradients(w).transpose(1, 2)
    intra, inter, weight = dissimilarity_ratios(gradients, angle_weights(gradients, tree), tree)
    assert torch.all(intra >= 1 - 1e-12) and torch.all(inter >= 1 - 1e-12)
    assert torch.all((weight > 0) & (weight <= 1))


def test_diverged_runs_are_frozen_not_errors():
    problem, layout, grouping, sizes = _setup(batch=1)
    trace = hierarchical_descent(problem.population_gradients, torch.as_tensor(problem.global_minimizer + 1.0),
                                 hierarchy(grouping, layout, sizes), step_sizes=[0.1, 50.0], iterations=300,
                                 seeds=problem.seeds, loss=lambda w: w.pow(2).sum(-1))
    assert trace.diverged.tolist() == [[False, True]] and np.isinf(trace.loss[0, 1, -1])


def test_invalid_training_parameters():
    problem, layout, grouping, sizes = _setup(batch=1)
    tree = hierarchy(grouping, layout, sizes)
    with pytest.raises(InvalidParameterError, match="step_sizes"):
        hierarchical_descent(problem.population_gradients, torch.zeros(1, 4, dtype=torch.float64), tree,
                             step_sizes=-0.1, iterations=3, seeds=problem.seeds)
    with pytest.raises(InvalidParameterError, match="weighting"):
        hierarchical_descent(problem.population_gradients, torch.zeros(1, 4, dtype=torch.float64), tree,
                             step_sizes=0.1, iterations=3, seeds=problem.seeds, weighting="cosine")
    with pytest.raises(InvalidParameterError, match="noise_scale"):
        hierarchy(grouping, layout, sizes, noise_scale=-1.0)


# -- validation of every public parameter ---------------------------------------------------------------
def _valid_calls():
    layout = make_wireless_layout(6, batch_size=2, seed=1)
    counts = draw_label_counts(np.random.default_rng(0), 6, 4)
    grouping = dsc_grouping(layout, counts)
    return {
        make_wireless_layout: dict(clients=6, side=100.0, batch_size=2, seed=1),
        layout_from_positions: dict(positions=layout.positions, side=100.0, seed=[1, 2]),
        upload_noise_variance: dict(snr=[1e-8, 1e-9], noise_scale=0.5, reference_distance=50.0),
        affinity_propagation: dict(similarity=np.random.default_rng(0).normal(size=(5, 5)), damping=0.5, max_iter=50,
                                   convergence_iter=5),
        dsc_grouping: dict(layout=layout, label_counts=counts, damping=0.6, max_iter=50, convergence_iter=5),
        information_matrix: dict(label_counts=counts),
        hierarchy: dict(grouping=grouping, layout=layout, data_sizes=counts.sum(1), noise_scale=0.1,
                        reference_distance=50.0),
    }


VALID_CALLS = _valid_calls()
@pytest.mark.parametrize("function, kwargs, name", invalid_calls(VALID_CALLS))
def test_every_parameter_is_validated_with_its_name(function, kwargs, name):
    assert_rejected(function, kwargs, name)


@pytest.mark.parametrize("function", list(VALID_CALLS), ids=lambda f: f.__name__)
def test_valid_calls_run(function):
    assert function(**VALID_CALLS[function]) is not None
