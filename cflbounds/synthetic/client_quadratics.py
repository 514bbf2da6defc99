"""What every batch of per-client quadratics ``1/2 (w - b_k)^T A_k (w - b_k)`` shares: its shapes
and the curvature constants of its Hessians (:class:`~.quadratics.QuadraticFederation`,
:class:`~.heterogeneous_quadratics.HeterogeneousQuadratics`).

A subclass holds ``hessians_exact`` ``(B, N, d, d)`` and ``optima_exact`` ``(B, N, d)`` (float64)
and the tensor ``optima`` the algorithms use.
"""
from __future__ import annotations

from functools import cached_property

import numpy as np
import torch

__all__ = ["ClientQuadratics"]


class ClientQuadratics:
    """Shapes, device and ``L``/``mu`` of a batch of per-client quadratics."""

    @property
    def batch_size(self) -> int:
        return self.optima_exact.shape[0]

    @property
    def clients(self) -> int:
        return self.optima_exact.shape[1]

    @property
    def d(self) -> int:
        return self.optima_exact.shape[2]

    @property
    def device(self) -> torch.device:
        return self.optima.device

    @property
    def dtype(self) -> torch.dtype:
        return self.optima.dtype

    @cached_property
    def _eigenvalues(self) -> np.ndarray:
        return np.linalg.eigvalsh(self.hessians_exact)  # (B, N, d), ascending

    @property
    def client_smoothness(self) -> np.ndarray:
        """``lambda_max(A_k)``, the smoothness of client ``k``'s loss (and of every sample's loss of a
        :class:`~.quadratics.QuadraticFederation`, FedCluster's A2), ``(B, N)``."""
        return self._eigenvalues[..., -1]

    @property
    def client_strong_convexity(self) -> np.ndarray:
        """``lambda_min(A_k)``, ``(B, N)``."""
        return self._eigenvalues[..., 0]

    @property
    def smoothness(self) -> np.ndarray:
        """``L = max_k lambda_max(A_k)``: every client's loss is L-smooth, ``(B,)``."""
        return self.client_smoothness.max(axis=1)

    @property
    def strong_convexity(self) -> np.ndarray:
        """``mu = min_k lambda_min(A_k)``: every client's loss is mu-strongly convex, ``(B,)``
        (negative for non-convex clients)."""
        return self.client_strong_convexity.min(axis=1)

    @property
    def curvature_floor(self) -> np.ndarray:
        """FedProx's ``L_minus = max(0, -min_k lambda_min(A_k))``, the smallest ``L_minus >= 0``
        with ``grad^2 F_k >= -L_minus I`` for every client (0 for convex clients), ``(B,)``."""
        return np.maximum(0.0, -self.strong_convexity)
