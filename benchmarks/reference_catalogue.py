"""Straightforward references for the catalogue's algorithms, written as a paper's own code would:
one run at a time, a Python loop over clients and local steps, NumPy mat-vecs.

* :func:`reference_fedavg`: Li et al.'s FedAvg (Sec. 3): every device runs E SGD steps from the
  server model, the server aggregates the sampled ones as each scheme of Sec. 3.3 writes it;
  with ``moments`` it also keeps ``E[||g||^2 | w] = ||grad F_k(w)||^2 + sigma_k^2`` of every step.
* :func:`reference_scaffold`: SCAFFOLD's Alg. 1 (options I, II) and, with ``option=None``,
  FedAvg with two step sizes.
* :func:`reference_local_gd`: Khaled et al.'s local GD; returns ``x_hat_t`` for ``t = 0..T``.

They use the random numbers the batched runs document (:mod:`cflbounds.algorithms.local_updates`):
run key ``hash(problem seed, seed)``, the noise of client ``k`` at local step ``t`` from
``counter_normal(hash(key, 41, k), t, d)``, sampling from ``counter_uniform(hash(key, 43), r, .)``,
option I's control gradients from ``hash(key, 42, k)``; so a reference run and the batched run
are the same numbers. tests/test_*_algorithm.py check the batched runs against these; the
benchmark times them (``bench_catalogue.py``).
"""
from __future__ import annotations

import math

import numpy as np

from cflbounds.synthetic.counter_random import counter_hash, counter_normal, counter_uniform

__all__ = ["reference_fedavg", "reference_scaffold", "reference_local_gd", "run_key"]

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
