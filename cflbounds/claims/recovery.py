"""How well a found clustering of clients recovers the planted one.

* ARI (adjusted Rand index; 1 = identical partitions, about 0 = chance) and NMI
  (normalised mutual information), from scikit-learn;
* the Hungarian-matched accuracy: the largest fraction of clients whose found cluster
  maps to their planted cluster under a one-to-one map between found and planted
  clusters (scipy's ``linear_sum_assignment`` on the contingency table; with more found
  than planted clusters, the unmatched found clusters count as errors).

Each takes ``(B, m)`` label arrays and returns ``(B,)``.
"""
from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment
from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score
from sklearn.metrics.cluster import contingency_matrix

__all__ = ["adjusted_rand", "normalized_mutual_info", "matched_accuracy", "recovery_scores"]


def _rows(truth, found):
    truth, found = np.atleast_2d(truth), np.atleast_2d(found)
    if truth.shape != found.shape:
        raise ValueError(f"planted and found labels differ in shape: {truth.shape} vs {found.shape}")
    return zip(truth, found)


def adjusted_rand(truth, found) -> np.ndarray:
    """Adjusted Rand index of each row of ``found`` against ``truth`` (``(B, m)`` or ``(m,)``
    labels; 1 = the same partition up to relabelling, about 0 = chance)."""
    return np.array([adjusted_rand_score(t, f) for t, f in _rows(truth, found)])


def normalized_mutual_info(truth, found) -> np.ndarray:
    """Normalised mutual information of each row of ``found`` against ``truth`` (1 = the same
    partition up to relabelling, 0 = independent)."""
    return np.array([normalized_mutual_info_score(t, f) for t, f in _rows(truth, found)])


def matched_accuracy(truth, found) -> np.ndarray:
    """The largest fraction of clients whose found cluster maps to their planted one under a
    one-to-one map between found and planted clusters (Hungarian matching on the contingency
    table); found clusters left without a partner count as errors."""
    scores = []
    for t, f in _rows(truth, found):
        table = contingency_matrix(t, f)
        rows, cols = linear_sum_assignment(table, maximize=True)
        scores.append(table[rows, cols].sum() / t.size)
    return np.array(scores)


def recovery_scores(truth, found) -> dict[str, np.ndarray]:
    """All three scores, ``{"ari", "nmi", "matched_accuracy"}``, each ``(B,)``."""
    return {"ari": adjusted_rand(truth, found), "nmi": normalized_mutual_info(truth, found),
            "matched_accuracy": matched_accuracy(truth, found)}
