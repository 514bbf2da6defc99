"""Which clients a round aggregates, and with which weights: the catalogue's sampling schemes.

Every draw is counter-based (:mod:`cflbounds.synthetic.counter_random`): round ``r`` of run
``b`` uses the uniforms of ``(keys[b], r)`` only, so a run samples the same clients however
many runs share its batch. The schemes of Li, Huang, Yang, Wang & Zhang (ICLR 2020, Sec. 3.3)
return aggregation weights over all ``N`` clients, ``(B, N)``, for ``w <- sum_k weight_k w^k``:

* ``full``: ``p_k`` (full participation);
* ``scheme-I``: ``K`` indices drawn with replacement with probabilities ``p_k``, plain
  average ``(1/K) sum_{k in S} w^k`` (a client drawn twice counts twice);
* ``scheme-II``: ``K`` clients uniformly without replacement, ``(N/K) sum_{k in S} p_k w^k``;
* ``mcmahan``: McMahan et al.'s original FedAvg (AISTATS 2017, Alg. 1 server line): ``K``
  uniformly without replacement, ``sum_{k in S} (p_k / sum_{j in S} p_j) w^k``. No guarantee in
  Li et al.: a control. It uses the same uniforms as ``scheme-II``, so both pick the same clients.

Schemes I and II are unbiased (``E weight_k = p_k``); McMahan's is not unless the ``p_k`` are equal.
"""
from __future__ import annotations

import numpy as np

from ..synthetic.counter_random import counter_uniform

__all__ = ["SCHEMES", "uniform_subset", "with_replacement", "sampled_clients", "aggregation_weights"]

SCHEMES = ("full", "scheme-I", "scheme-II", "mcmahan")


def uniform_subset(keys: np.ndarray, round_index: int, clients: int, count: int) -> np.ndarray:
    """``count`` of ``clients`` uniformly without replacement, per run: the positions of the
    ``count`` smallest of the round's ``clients`` uniforms, ascending, ``(B, count)``."""
    uniforms = counter_uniform(keys, round_index, clients)
    return np.sort(np.argsort(uniforms, axis=-1, kind="stable")[:, :count], axis=-1)


def with_replacement(keys: np.ndarray, round_index: int, probabilities: np.ndarray, count: int) -> np.ndarray:
    """``count`` indices i.i.d. with probabilities ``p`` per run (inverse CDF of the round's
    ``count`` uniforms), ``(B, count)``."""
    cumulative = np.cumsum(probabilities)
    uniforms = counter_uniform(keys, round_index, count) * cumulative[-1]
    return np.minimum(np.searchsorted(cumulative, uniforms, side="right"), probabilities.size - 1)


def sampled_clients(scheme: str, keys: np.ndarray, round_index: int, probabilities: np.ndarray,
                    count: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``count`` clients round ``round_index`` aggregates under a sampling ``scheme`` (not
    ``full``) and each one's weight, ``(B, count)`` each: ``scheme-I`` the draws with replacement
    (repeats kept, ``1/K`` each), else the uniform subset with ``(N/K) p_k`` (``scheme-II``) or
    ``p_k / sum_{j in S} p_j`` (``mcmahan``)."""
    if scheme == "scheme-I":
        chosen = with_replacement(keys, round_index, probabilities, count)
        return chosen, np.full(chosen.shape, 1.0 / count)
    chosen = uniform_subset(keys, round_index, probabilities.size, count)
    weights = probabilities[chosen]
    if scheme == "scheme-II":
        return chosen, weights * (probabilities.size / count)
    return chosen, weights / weights.sum(axis=-1, keepdims=True)  # mcmahan


def aggregation_weights(scheme: str, keys: np.ndarray, round_index: int, probabilities: np.ndarray,
                        count: int) -> np.ndarray:
    """The weights ``(B, N)`` of round ``round_index``'s aggregation under ``scheme`` (module
    docstring): :func:`sampled_clients`' weights summed per client."""
    runs, clients = keys.shape[0], probabilities.size
    if scheme == "full":
        return np.broadcast_to(probabilities, (runs, clients)).copy()
    chosen, slot_weights = sampled_clients(scheme, keys, round_index, probabilities, count)
    weights = np.zeros((runs, clients))
    np.add.at(weights, (np.arange(runs)[:, None], chosen), slot_weights)
    return weights
