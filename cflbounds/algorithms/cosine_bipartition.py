"""The bipartition of clustered FL by cosine splits (Sattler, Mueller & Samek, "Clustered Federated
Learning: Model-Agnostic Distributed Multitask Optimization Under Privacy Constraints", IEEE
TNNLS 2021; as CATALOGUE.md states it), and the similarity quantities of its Theorem 1.

``alpha_(i,j)`` is the cosine similarity of clients ``i`` and ``j``'s updates (the paper: their
gradients at a stationary point ``theta*``). The paper splits a cluster into

    c_1, c_2 = argmin over bipartitions of  max_{i in c_1, j in c_2} alpha_(i,j),

whose value is ``alpha_cross^max``. Three ways to compute it (``BIPARTITIONS``):

* ``"exhaustive"``: every bipartition (client 0 of the cluster in ``c_1``: ``2^(m-1) - 1`` of
  them, at most ``EXHAUSTIVE_LIMIT`` clients), the first one (in the order of the bit masks of
  clients 1..m-1 in ``c_2``) that reaches the minimum;
* ``"exact"``: the split of a maximum spanning tree of the complete graph weighted by alpha at its
  lightest edge (single linkage cut into two clusters). It is an argmin: for a maximum spanning
  tree ``T`` with lightest edge ``e*`` of weight ``w*``, (i) every edge ``(i, j)`` across the cut
  ``T - e*`` makes has ``alpha_(i,j) <= w*`` (else exchanging it for ``e*`` gives a heavier
  spanning tree: the tree path from ``i`` to ``j`` crosses the cut only at ``e*``), so the cut's
  largest cross similarity is ``w*``; (ii) every bipartition is crossed by some edge of ``T``
  (``T`` is connected), whose weight is at least ``w*``. So ``w* = alpha_cross^max``, for every
  ``m``; on ties any minimiser may come out (``tests/test_cfl_algorithm.py`` checks the value
  against the exhaustive search for every ``m`` it reaches, and the partition where the argmin is
  unique). The tree is Prim's, grown from client 0 by comparisons of alpha alone (no arithmetic on
  alpha, so no rounding; O(m^2));
* ``"agglomerative"``: what the authors' code computes (github.com/felisat/clustered-federated-
  learning, ``fl_devices.py``, ``Server.cluster_clients``): scikit-learn's
  ``AgglomerativeClustering(linkage="complete")`` with two clusters on ``-alpha`` as a
  precomputed distance. Not an argmin in general; its ``alpha_cross^max`` is that of the split
  it returns.

Labels are 0/1 per client, the cluster's first client in part 0. A bipartition is *correct*
when no distribution is split across it (Corollary 1); ``alpha_intra^min`` is the smallest
similarity of two clients of one distribution.
"""
from __future__ import annotations

import numpy as np
import torch

from .._validation import ArrayLike, Constraint, Options, require, validate_params

__all__ = ["BIPARTITIONS", "EXHAUSTIVE_LIMIT", "cosine_similarities", "bipartition", "max_cross_similarity",
           "cross_similarity_max", "intra_similarity_min", "splits_no_distribution", "bipartition_kernel"]

BIPARTITIONS = ("exhaustive", "exact", "agglomerative")
EXHAUSTIVE_LIMIT = 16
_CHUNK = 4096  # bipartitions per vectorised block of the exhaustive search

_SIMILARITIES = Constraint(lambda v: ArrayLike.is_satisfied_by(v) and np.ndim(v) == 2 and np.shape(v)[0] >= 2
                           and np.shape(v)[0] == np.shape(v)[1],
                           "a finite square (m, m) array with m >= 2")
_LABELS = Constraint(lambda v: np.ndim(v) == 1 and np.asarray(v).dtype.kind in "iub", "a 1-d array of ints")


def cosine_similarities(vectors) -> np.ndarray:
    """``alpha_(i,j) = <v_i, v_j> / (||v_i|| ||v_j||)`` of the rows of ``vectors`` ``(..., m, d)``
    (a tensor or an array), float64 ``(..., m, m)``, exactly symmetric; a zero vector's similarities are 0."""
    array = torch.as_tensor(vectors).double()
    unit = torch.nn.functional.normalize(array, dim=-1, eps=float(np.finfo(float).tiny))
    products = unit @ unit.transpose(-1, -2)  # symmetric up to the matmul's rounding: made exactly so
    return (0.5 * (products + products.transpose(-1, -2))).clamp(-1.0, 1.0).cpu().numpy()


def _symmetric(similarities) -> np.ndarray:
    matrix = np.asarray(similarities, dtype=float)
    return 0.5 * (matrix + matrix.T)


def _canonical(labels: np.ndarray) -> np.ndarray:
    """0/1 labels with the first client in part 0."""
    labels = np.asarray(labels, dtype=np.int64)
    return labels ^ labels[0]


def _exhaustive(matrix: np.ndarray) -> np.ndarray:
    m = matrix.shape[0]
    bits = 1 << np.arange(m - 1)
    best_value, best_mask = np.inf, 0
    for first in range(1, 2 ** (m - 1), _CHUNK):
        masks = np.arange(first, min(first + _CHUNK, 2 ** (m - 1)))
        second = np.zeros((masks.size, m), dtype=bool)
        second[:, 1:] = (masks[:, None] & bits) != 0  # clients in c_2
        cross = second[:, None, :] & ~second[:, :, None]  # i in c_1, j in c_2
        values = np.where(cross, matrix, -np.inf).max(axis=(1, 2))
        position = int(np.argmin(values))
        if values[position] < best_value:
            best_value, best_mask = values[position], masks[position]
    return np.r_[0, (best_mask & bits) != 0].astype(np.int64)


def _spanning_tree_cut(matrix: np.ndarray) -> np.ndarray:
    """Prim's algorithm for a maximum spanning tree from client 0 (comparisons of alpha only: no
    rounding), then the cut at its first lightest edge: the subtree below it is part 1."""
    m = matrix.shape[0]
    in_tree = np.zeros(m, dtype=bool)
    in_tree[0] = True
    best, parent = matrix[0].copy(), np.zeros(m, dtype=np.int64)  # strongest link of each vertex to the tree
    order, weights = [0], []
    for _ in range(m - 1):
        vertex = int(np.argmax(np.where(in_tree, -np.inf, best)))
        order.append(vertex)
        weights.append(best[vertex])
        in_tree[vertex] = True
        closer = ~in_tree & (matrix[vertex] > best)
        best[closer], parent[closer] = matrix[vertex][closer], vertex
    child = order[1 + int(np.argmin(weights))]  # the tree edge (parent[child], child) of the smallest similarity
    below = np.zeros(m, dtype=bool)
    for vertex in order[1:]:  # parents join the tree before their children
        below[vertex] = vertex == child or below[parent[vertex]]
    return below.astype(np.int64)


def _agglomerative(matrix: np.ndarray) -> np.ndarray:
    from sklearn.cluster import AgglomerativeClustering

    clustering = AgglomerativeClustering(n_clusters=2, metric="precomputed", linkage="complete").fit(-matrix)
    return _canonical(clustering.labels_)


_METHODS = {"exhaustive": _exhaustive, "exact": _spanning_tree_cut, "agglomerative": _agglomerative}


@validate_params({"similarities": [_SIMILARITIES], "method": [Options(BIPARTITIONS)]})
def bipartition(similarities, method: str = "exact") -> np.ndarray:
    """The bipartition of ``m`` clients by their similarities ``(m, m)`` (symmetrised) under
    ``method`` (module docstring): 0/1 labels ``(m,)``, client 0 in part 0."""
    matrix = _symmetric(similarities)
    m = matrix.shape[0]
    require(method != "exhaustive" or m <= EXHAUSTIVE_LIMIT, f"The exhaustive bipartition searches 2^(m-1) - 1 "
            f"bipartitions: m={m} clients is over its limit of {EXHAUSTIVE_LIMIT}; use method='exact' (the same argmin).")
    return bipartition_kernel(matrix, method)


def bipartition_kernel(matrix: np.ndarray, method: str) -> np.ndarray:
    """:func:`bipartition` on a symmetric matrix, unchecked (the training loop's call)."""
    return _METHODS[method](matrix)


@validate_params({"similarities": [_SIMILARITIES], "labels": [_LABELS]})
def max_cross_similarity(similarities, labels) -> float:
    """``max_{i in part 0, j in part 1} alpha_(i,j)`` of a bipartition (``-inf`` if a part is empty)."""
    matrix, side = _symmetric(similarities), np.asarray(labels) != 0
    cross = ~side[:, None] & side[None, :]
    return float(np.where(cross, matrix, -np.inf).max())


@validate_params({"similarities": [_SIMILARITIES]})
def cross_similarity_max(similarities) -> float:
    """``alpha_cross^max = min over bipartitions of the largest cross similarity`` (the
    spanning-tree cut's, exact for every ``m``)."""
    matrix = _symmetric(similarities)
    return max_cross_similarity(matrix, _spanning_tree_cut(matrix))


@validate_params({"similarities": [_SIMILARITIES], "membership": [_LABELS]})
def intra_similarity_min(similarities, membership) -> float:
    """``alpha_intra^min = min over pairs i != j of one distribution of alpha_(i,j)`` (``inf``
    when no distribution has two clients)."""
    matrix, group = _symmetric(similarities), np.asarray(membership)
    same = (group[:, None] == group[None, :]) & ~np.eye(group.size, dtype=bool)
    return float(np.where(same, matrix, np.inf).min())


@validate_params({"labels": [_LABELS], "membership": [_LABELS]})
def splits_no_distribution(labels, membership) -> bool:
    """Whether the bipartition ``labels`` is correct: every distribution of ``membership``
    (one entry per client) lies on one side."""
    labels, group = np.asarray(labels), np.asarray(membership)
    return all(np.unique(labels[group == g]).size == 1 for g in np.unique(group))
