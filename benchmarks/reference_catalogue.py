"""Straightforward references for the catalogue's algorithms, written as a paper's own code would:
one run at a time, a Python loop over clients and local steps, NumPy mat-vecs.

* :func:`reference_fedavg`: Li et al.'s FedAvg (Sec. 3): every device runs E SGD steps from the
  server model, the server aggregates the sampled ones as each scheme of Sec. 3.3 writes it;
  with ``moments`` it also keeps ``E[||g||^2 | w] = ||grad F_k(w)||^2 + sigma_k^2`` of every step.
* :func:`reference_scaffold`: SCAFFOLD's Alg. 1 (options I, II) and, with ``option=None``,
  FedAvg with two step sizes.
* :func:`reference_local_gd`: Khaled et al.'s local GD; returns ``x_hat_t`` for ``t = 0..T``.
* :func:`reference_fedprox`: FedProx's round device by device: the sampled devices' local
  problems solved by ``np.linalg.solve`` or by gradient descent on ``h_k`` step by step.
* :func:`reference_cosine_cfl`: Sattler et al.'s CFL as the authors' code is organised
  (github.com/felisat/clustered-federated-learning: a list of clusters of client indices, the
  cosines by a double loop over clients as ``pairwise_angles``, ``AgglomerativeClustering`` on
  ``-S``), with the paper's bipartition by a plain search over ``itertools.product`` or by
  scipy's single linkage (``scipy.cluster.hierarchy``, not the product's spanning tree).

They use the random numbers the batched runs document (:mod:`cflbounds.algorithms.local_updates`):
run key ``hash(problem seed, seed)``, the noise of client ``k`` at local step ``t`` from
``counter_normal(hash(key, 41, k), t, d)``, sampling from ``counter_uniform(hash(key, 43), r, .)``,
option I's control gradients from ``hash(key, 42, k)``; so a reference run and the batched run
are the same numbers. tests/test_*_algorithm.py check the batched runs against these; the
benchmark times them (``bench_catalogue.py``).
"""
from __future__ import annotations

import itertools
import math

import numpy as np
from scipy.cluster.hierarchy import cut_tree, linkage
from scipy.spatial.distance import squareform
from sklearn.cluster import AgglomerativeClustering

from cflbounds.synthetic.counter_random import counter_hash, counter_normal, counter_uniform

__all__ = ["reference_fedavg", "reference_scaffold", "reference_local_gd", "reference_fedprox",
           "reference_cosine_cfl", "run_key"]

NOISE, CONTROL, SAMPLING = 41, 42, 43


def run_key(problem, b: int, seed: int) -> np.uint64:
    return counter_hash(np.uint64(problem.seeds[b]), np.uint64(seed))


def reference_fedavg(problem, b, seed, rounds, E, eta, scheme, K, x0, moments=False):
    """Run ``b`` of FedAvg alone; ``eta(t)`` the step of local step ``t = 0, 1, ...``. Returns the
    server models ``(rounds + 1, d)`` (and the second moments ``(rounds E, N)`` with ``moments``)."""
    key = run_key(problem, b, seed)
    A, optima, p, sigma = problem.hessians_exact[b], problem.optima_exact[b], problem.weights, problem.noise_std
    N, d = optima.shape
    device_keys = [counter_hash(key, NOISE, np.uint64(k)) for k in range(N)]
    sampling_key = counter_hash(key, SAMPLING)
    x = np.array(x0, dtype=float)
    models, second = [x.copy()], np.empty((rounds * E, N))
    for r in range(rounds):
        local = []
        for k in range(N):
            w = x.copy()
            for t in range(r * E, (r + 1) * E):
                exact = A[k] @ (w - optima[k])
                if moments:
                    second[t, k] = exact @ exact + sigma[k] ** 2
                w = w - eta(t) * (exact + sigma[k] / math.sqrt(d) * counter_normal(device_keys[k], t, d))
            local.append(w)
        if scheme == "full":
            x = sum(p[k] * local[k] for k in range(N))
        elif scheme == "scheme-I":
            draws = counter_uniform(sampling_key, r, K)
            chosen = [int(np.argmax(np.cumsum(p) > u * p.sum())) for u in draws]  # inverse CDF
            x = sum(local[k] for k in chosen) / K
        else:
            chosen = sorted(np.argsort(counter_uniform(sampling_key, r, N), kind="stable")[:K].tolist())
            if scheme == "scheme-II":
                x = N / K * sum(p[k] * local[k] for k in chosen)
            else:  # mcmahan
                x = sum(p[k] * local[k] for k in chosen) / sum(p[k] for k in chosen)
        models.append(x)
    return (np.array(models), second) if moments else np.array(models)


def reference_scaffold(problem, b, seed, R, K, eta_l, eta_g, S, option, x0):
    """Alg. 1 for run ``b`` alone, client by client; ``option`` None is FedAvg with two steps."""
    key = run_key(problem, b, seed)
    A, optima, sigma = problem.hessians_exact[b], problem.optima_exact[b], problem.noise_std
    N, d = optima.shape
    noise_keys = [counter_hash(key, NOISE, np.uint64(i)) for i in range(N)]
    control_keys = [counter_hash(key, CONTROL, np.uint64(i)) for i in range(N)]
    sampling_key = counter_hash(key, SAMPLING)

    def g(i, y, key_i, counter):
        return A[i] @ (y - optima[i]) + sigma[i] / math.sqrt(d) * counter_normal(key_i, counter, d)

    x, c, c_i = np.array(x0, dtype=float), np.zeros(d), np.zeros((N, d))
    models = [x.copy()]
    for r in range(R):
        sampled = np.argsort(counter_uniform(sampling_key, r, N), kind="stable")[:S]
        delta_y, delta_c = np.zeros(d), np.zeros(d)
        for i in sampled:
            y = x.copy()
            for k in range(K):
                gradient = g(i, y, noise_keys[i], r * K + k)
                y = y - eta_l * (gradient if option is None else gradient - c_i[i] + c)
            if option == "I":
                c_plus = g(i, x, control_keys[i], r)
            elif option == "II":
                c_plus = c_i[i] - c + (x - y) / (K * eta_l)
            delta_y += (y - x) / S
            if option is not None:
                delta_c += (c_plus - c_i[i]) / S
                c_i[i] = c_plus
        x = x + eta_g * delta_y
        c = c + S / N * delta_c
        models.append(x.copy())
    return np.array(models)


def reference_local_gd(problem, b, T, gamma, times, x0):
    """Local GD for run ``b``: each client's full-gradient steps; at ``t + 1`` in ``times`` every
    client takes the average of the stepped iterates. Returns ``x_hat_t``, ``t = 0..T``."""
    A, optima = problem.hessians_exact[b], problem.optima_exact[b]
    M = optima.shape[0]
    x = [np.array(x0, dtype=float) for _ in range(M)]
    averages = [np.mean(x, axis=0)]
    for t in range(T):
        x = [x[m] - gamma * A[m] @ (x[m] - optima[m]) for m in range(M)]
        if t + 1 in times:
            x = [np.mean(x, axis=0)] * M
        averages.append(np.mean(x, axis=0))
    return np.array(averages)


def _sampled(sampling_key, r, p, K, sampling):
    """FedProx's devices and weights of round ``r``: K draws with replacement ~ p (paper), or K
    uniformly without replacement weighted by p (experiments)."""
    if sampling == "paper":
        chosen = [int(np.argmax(np.cumsum(p) > u * p.sum())) for u in counter_uniform(sampling_key, r, K)]
        return chosen, [1.0 / K] * K
    chosen = sorted(np.argsort(counter_uniform(sampling_key, r, p.size), kind="stable")[:K].tolist())
    return chosen, [p[k] / sum(p[j] for j in chosen) for k in chosen]


def reference_fedprox(problem, b, seed, rounds, mu, K, sampling, solver, steps, step_size, gamma, x0):
    """FedProx for run ``b`` alone. Returns the server models ``(rounds + 1, d)``, the realised
    gamma of every slot ``(rounds, K)`` and the local steps taken ``(rounds, K)``."""
    key = run_key(problem, b, seed)
    A, optima, p = problem.hessians_exact[b], problem.optima_exact[b], problem.weights
    d = optima.shape[1]
    sampling_key = counter_hash(key, SAMPLING)
    w = np.array(x0, dtype=float)
    models, realised, taken = [w.copy()], np.empty((rounds, K)), np.zeros((rounds, K), dtype=int)
    for r in range(rounds):
        chosen, weights = _sampled(sampling_key, r, p, K, sampling)
        new = np.zeros(d)
        for slot, (k, weight) in enumerate(zip(chosen, weights)):
            start_gradient = A[k] @ (w - optima[k])
            if solver == "exact":
                y = np.linalg.solve(A[k] + mu * np.eye(d), A[k] @ optima[k] + mu * w)
            else:
                y = w.copy()
                for _ in range(steps):
                    direction = A[k] @ (y - optima[k]) + mu * (y - w)
                    if gamma is not None and np.linalg.norm(direction) <= gamma * np.linalg.norm(start_gradient):
                        break
                    y = y - step_size * direction
                    taken[r, slot] += 1
            residual = np.linalg.norm(A[k] @ (y - optima[k]) + mu * (y - w))
            realised[r, slot] = 0.0 if residual == 0 else residual / np.linalg.norm(start_gradient)
            new = new + weight * y
        w = new
        models.append(w.copy())
    return np.array(models), realised, taken


def _pairwise_angles(updates):
    """The authors' ``pairwise_angles``: a double loop over clients (without their +1e-12)."""
    angles = np.zeros((len(updates), len(updates)))
    for i, first in enumerate(updates):
        for j, second in enumerate(updates):
            angles[i, j] = first @ second / (np.linalg.norm(first) * np.linalg.norm(second))
    return angles


def _reference_bipartition(S, method):
    """The paper's argmin over bipartitions: ``"exhaustive"`` by a plain search (client 0 in the
    first part, the first minimiser in the order of the bit masks of clients 1..m-1), ``"exact"``
    by scipy's single linkage on 1 - S cut into two clusters; or the authors' clustering."""
    m = len(S)
    if method == "agglomerative":
        labels = AgglomerativeClustering(n_clusters=2, metric="precomputed", linkage="complete").fit(-S).labels_
        return np.asarray(labels != labels[0], dtype=int)
    if method == "exact":
        labels = cut_tree(linkage(squareform(1.0 - S, checks=False), method="single"), n_clusters=2)[:, 0]
        return np.asarray(labels != labels[0], dtype=int)
    best, best_part = np.inf, None
    for bits in itertools.product([0, 1], repeat=m - 1):
        part = np.array((0,) + bits[::-1])  # bit j-1 of the mask <-> client j
        if part.sum() == 0:
            continue
        value = max(S[i, j] for i in range(m) for j in range(m) if part[i] == 0 and part[j] == 1)
        if value < best:
            best, best_part = value, part
    return best_part


def reference_cosine_cfl(problem, b, rounds, eta, eps1, eps2, gamma_max, local_steps, updates, bipartition,
                         split_test, weighting, first_split_round, x0):
    """CFL for run ``b`` of a :class:`~cflbounds.synthetic.cfl_quadratics.CflQuadratics` alone.
    Returns the cluster id of every client after every round ``(rounds + 1, m)``, the final
    models ``(m, d)`` and the split tests ``(round, members, part, alpha_cross_max, split)``."""
    A, optima, p = problem.federation.hessians_exact[b], problem.federation.optima_exact[b], problem.weights
    m = optima.shape[0]
    models = [np.array(x0, dtype=float) for _ in range(m)]
    clusters = {0: list(range(m))}  # cluster id -> its clients, ascending
    record, tests = [np.zeros(m, dtype=int)], []

    def mean_update(cluster, update):
        weights = [p[i] if weighting == "data" else 1.0 for i in cluster]
        return sum(w * update[i] for w, i in zip(weights, cluster)) / sum(weights)

    for r in range(1, rounds + 1):
        update = []
        for i in range(m):
            if updates == "gradients":
                update.append(A[i] @ (models[i] - optima[i]))
            else:
                y = models[i].copy()
                for _ in range(local_steps):
                    y = y - eta * (A[i] @ (y - optima[i]))
                update.append(y - models[i])
        for cluster_id in sorted(clusters):
            cluster = clusters[cluster_id]
            mean_norm = np.linalg.norm(mean_update(cluster, update))
            max_norm = max(np.linalg.norm(update[i]) for i in cluster)
            big_enough = len(cluster) >= 2 if split_test == "paper" else len(cluster) > 2
            if mean_norm < eps1 and max_norm > eps2 and big_enough and r >= first_split_round:
                S = _pairwise_angles([update[i] for i in cluster])
                S = 0.5 * (S + S.T)
                part = _reference_bipartition(S, bipartition)
                cross = max(S[i, j] for i in range(len(cluster)) for j in range(len(cluster))
                            if part[i] == 0 and part[j] == 1)
                split = split_test == "code" or math.sqrt((1 - cross) / 2) > gamma_max
                tests.append((r, tuple(cluster), tuple(part.tolist()), cross, split))
                if split:
                    clusters[cluster_id] = [c for c, s in zip(cluster, part) if s == 0]
                    clusters[len(clusters)] = [c for c, s in zip(cluster, part) if s == 1]
        labels = np.zeros(m, dtype=int)
        for cluster_id, cluster in clusters.items():
            step = mean_update(cluster, update)
            for i in cluster:
                models[i] = models[i] - eta * step if updates == "gradients" else models[i] + step
            labels[cluster] = cluster_id
        record.append(labels)
    return np.array(record), np.array(models), tests
