"""What every problem of clustered FL by cosine splits shares (Sattler, Mueller & Samek, IEEE
TNNLS 2021): the cosine similarities ``alpha_(i,j)`` of its clients' gradients at ``theta*`` and
their smallest value within a distribution, ``alpha_intra^min`` (Theorem 1).

A subclass holds ``client_gradients`` ``(B, m, p)`` (the ``grad r_i(theta*)``) and
``membership`` ``(B, m)`` (each client's distribution).
"""
from __future__ import annotations

import numpy as np

__all__ = ["GradientSimilarities"]


class GradientSimilarities:
    """``similarities`` and ``intra_similarity_min`` of a batch's client gradients at theta*."""

    @property
    def similarities(self) -> np.ndarray:
        """``alpha_(i,j)``, the cosine similarities of the ``grad r_i(theta*)``, ``(B, m, m)``."""
        unit = self.client_gradients / np.linalg.norm(self.client_gradients, axis=-1, keepdims=True)
        return np.clip(np.einsum("bip,bjp->bij", unit, unit), -1.0, 1.0)

    @property
    def intra_similarity_min(self) -> np.ndarray:
        """``alpha_intra^min``: the smallest ``alpha_(i,j)`` of two clients of one distribution, ``(B,)``."""
        m = self.membership.shape[1]
        same = (self.membership[:, :, None] == self.membership[:, None, :]) & ~np.eye(m, dtype=bool)
        return np.where(same, self.similarities, np.inf).min(axis=(1, 2))
