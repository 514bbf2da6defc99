"""Logistic regression on planted heterogeneous data: the catalogue's non-quadratic family.

The data are a :class:`~.logistic_mixture.LogisticMixture`'s (``k`` planted teachers, client
``i`` of cluster ``p`` holds ``n`` points ``x ~ N(0, I_d)``, ``y`` drawn from the teacher
``u_p``), so clients of different clusters disagree. Client ``i``'s objective is its
regularised empirical loss

    F_i(w) = (1/n) sum_l softplus(-y_l <x_l, w>) + (lam/2) ||w||^2,     F = sum_i p_i F_i,

``p_i = 1/N``. A stochastic gradient is the gradient on ``minibatch`` of the client's points
drawn uniformly with replacement from counter-based uniforms keyed by (the caller's client
key, the local step), so runs do not depend on their batch. Constants: ``L = lam + max_i
lambda_max(X_i^T X_i) / (4n)`` exactly (the Hessian's supremum, at ``w = 0``), ``mu = lam``
(its infimum); ``w*`` and ``F*`` by Newton's method in float64 to a gradient norm below 1e-12
(a solver's value, not a closed form). Claims that need closed forms use the quadratics.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np
import torch
from scipy import special

from .._validation import Interval, require, validate_params
from .._torch import TENSOR_CONSTRAINTS
from .counter_random import counter_uniform
from .logistic_mixture import LogisticMixture, make_logistic_mixture
from .seeding import BATCH_CONSTRAINTS

__all__ = ["HeterogeneousLogistic", "LogisticOracle", "make_heterogeneous_logistic"]


class LogisticOracle(NamedTuple):
    """Some clients' data, gathered once per round: ``features`` ``(B, S, n, d)``, ``labels``
    ``(B, S, n)``; ``regularization`` lam; ``minibatch`` points per stochastic gradient."""

    features: torch.Tensor
    labels: torch.Tensor
    regularization: float
    minibatch: int

    @staticmethod
    def _gradient(features, labels, models, regularization):
        margins = labels * torch.matmul(features, models[..., None])[..., 0]  # (B, S, b)
        weights = -labels * torch.sigmoid(-margins) / features.shape[-2]
        return torch.matmul(features.transpose(-1, -2), weights[..., None])[..., 0] + regularization * models

    def gradient(self, models: torch.Tensor) -> torch.Tensor:
        """``grad F_i(w)`` on all the client's points, ``(B, S, d)``."""
        return self._gradient(self.features, self.labels, models, self.regularization)

    def stochastic_gradient(self, models: torch.Tensor, keys: np.ndarray, counter: int):
        """The gradient on ``minibatch`` points drawn with replacement by ``(keys[b, s], counter)``,
        and its squared norm (an unbiased sample of ``E[||g||^2 | w]``)."""
        n = self.features.shape[-2]
        index = torch.as_tensor(np.floor(counter_uniform(keys, counter, self.minibatch) * n).astype(np.int64),
                                device=models.device)  # (B, S, b)
        features = torch.take_along_dim(self.features, index[..., None], dim=-2)
        labels = torch.take_along_dim(self.labels, index, dim=-1)
        gradient = self._gradient(features, labels, models, self.regularization)
        return gradient, gradient.square().sum(-1)


@dataclass(frozen=True, eq=False)
class HeterogeneousLogistic:
    """A batch of ``B`` federated logistic regressions (module docstring) over a mixture's data."""

    mixture: LogisticMixture
    minibatch: int

    @property
    def batch_size(self) -> int:
        return self.mixture.batch_size

    @property
    def clients(self) -> int:
        return self.mixture.m

    @property
    def d(self) -> int:
        return self.mixture.d

    @property
    def seeds(self) -> tuple[int, ...]:
        return self.mixture.seeds

    @property
    def device(self) -> torch.device:
        return self.mixture.features.device

    @property
    def dtype(self) -> torch.dtype:
        return self.mixture.features.dtype

    @property
    def weights(self) -> np.ndarray:
        return np.full(self.clients, 1.0 / self.clients)

    @cached_property
    def _data(self) -> tuple[np.ndarray, np.ndarray]:
        return self.mixture.features.double().cpu().numpy(), self.mixture.labels.double().cpu().numpy()

    @cached_property
    def smoothness(self) -> np.ndarray:
        """``L = lam + max_i lambda_max(X_i^T X_i) / (4n)``, ``(B,)``."""
        features, _ = self._data
        gram = np.einsum("bmnd,bmne->bmde", features, features) / (4 * features.shape[2])
        return self.mixture.regularization + np.linalg.eigvalsh(gram)[..., -1].max(axis=1)

    @property
    def strong_convexity(self) -> np.ndarray:
        """``mu = lam``, ``(B,)``."""
        return np.full(self.batch_size, self.mixture.regularization)

    def _terms(self, w):
        w = np.asarray(w.detach().cpu().double() if isinstance(w, torch.Tensor) else w, dtype=float)
        require(w.ndim >= 2 and w.shape[0] == self.batch_size and w.shape[-1] == self.d,
                f"Points must have shape (B, ..., d) = ({self.batch_size}, ..., {self.d}); got {w.shape}.")
        features, labels = self._data
        flat = w.reshape(self.batch_size, -1, self.d)
        margins = labels[:, None] * np.einsum("bmnd,bpd->bpmn", features, flat)  # (B, P, m, n)
        return w, flat, features, labels, margins

    def objective(self, w) -> np.ndarray:
        """``F(w)``, ``(B, *S)``."""
        w, flat, _, _, margins = self._terms(w)
        loss = np.logaddexp(0.0, -margins).mean(axis=(-2, -1)) + 0.5 * self.mixture.regularization * np.square(
            flat).sum(-1)
        return loss.reshape(w.shape[:-1])

    def gradient(self, w) -> np.ndarray:
        """``grad F(w)``, ``(B, *S, d)``."""
        w, flat, features, labels, margins = self._terms(w)
        weights = -labels[:, None] * special.expit(-margins) / (features.shape[1] * features.shape[2])
        gradient = np.einsum("bpmn,bmnd->bpd", weights, features) + self.mixture.regularization * flat
        return gradient.reshape(w.shape)

    @cached_property
    def minimizer(self) -> np.ndarray:
        """``w* = argmin F`` by damped Newton in float64 from 0 (gradient norm below 1e-12), ``(B, d)``."""
        features, labels = self._data
        lam, count = self.mixture.regularization, features.shape[1] * features.shape[2]
        w = np.zeros((self.batch_size, self.d))
        for _ in range(100):
            gradient = self.gradient(w[:, None])[:, 0]
            if np.max(np.linalg.norm(gradient, axis=-1)) < 1e-12:
                break
            margins = labels * np.einsum("bmnd,bd->bmn", features, w)
            curvature = special.expit(margins) * special.expit(-margins) / count
            hessian = np.einsum("bmn,bmnd,bmne->bde", curvature, features, features) + lam * np.eye(self.d)
            direction = np.linalg.solve(hessian, gradient[..., None])[..., 0]
            scale = np.ones(self.batch_size)
            current = self.objective(w[:, None])[:, 0]
            for _ in range(30):  # backtracking: never increase F
                worse = self.objective((w - scale[:, None] * direction)[:, None])[:, 0] > current
                if not worse.any():
                    break
                scale = np.where(worse, scale / 2, scale)
            w = w - scale[:, None] * direction
        return w

    @cached_property
    def min_value(self) -> np.ndarray:
        return self.objective(self.minimizer[:, None])[:, 0]

    def objective_gap(self, w) -> np.ndarray:
        """``F(w) - F*``, ``(B, *S)``."""
        return self.objective(w) - self.min_value.reshape(self.batch_size, *([1] * (np.ndim(w) - 2)))

    def distance_sq(self, w) -> np.ndarray:
        w = np.asarray(w.detach().cpu().double() if isinstance(w, torch.Tensor) else w, dtype=float)
        return np.square(w - self.minimizer.reshape(self.batch_size, *([1] * (w.ndim - 2)), self.d)).sum(-1)

    def oracle(self, clients: torch.Tensor | None = None) -> LogisticOracle:
        """Every client's data, or the ``(B, S)`` client positions ``clients``, gathered once."""
        features, labels = self.mixture.features, self.mixture.labels
        if clients is not None:
            rows = torch.arange(self.batch_size, device=self.device)[:, None]
            features, labels = features[rows, clients], labels[rows, clients]
        return LogisticOracle(features, labels, self.mixture.regularization, self.minibatch)

    def subset(self, index) -> "HeterogeneousLogistic":
        return HeterogeneousLogistic(self.mixture.subset(index), self.minibatch)


@validate_params({
    "k": [Interval(Integral, 1, None, closed="left")],
    "clients": [Interval(Integral, 1, None, closed="left")],
    "n": [Interval(Integral, 1, None, closed="left")],
    "d": [Interval(Integral, 2, None, closed="left")],
    "separation": [Interval(Real, 0, None, closed="neither")],
    "regularization": [Interval(Real, 0, None, closed="neither")],
    "minibatch": [Interval(Integral, 1, None, closed="left")],
    **BATCH_CONSTRAINTS,
    **TENSOR_CONSTRAINTS,
})
def make_heterogeneous_logistic(k: int = 2, clients: int = 10, n: int = 50, d: int = 5, *, separation: float = 2.0,
                                regularization: float = 0.1, minibatch: int = 10, batch_size: int = 1, seed=0,
                                dtype: str = "float64", device: str = "cpu") -> HeterogeneousLogistic:
    """Draw ``batch_size`` federated logistic regressions: ``clients`` clients in ``k`` planted
    clusters (teachers ``separation`` apart, :func:`~.logistic_mixture.make_logistic_mixture`),
    ``n`` points each, ridge ``regularization``, stochastic gradients on ``minibatch`` points."""
    mixture = make_logistic_mixture(k, clients, n, d, separation=separation, regularization=regularization,
                                    batch_size=batch_size, seed=seed, dtype=dtype, device=device)
    return HeterogeneousLogistic(mixture, int(minibatch))
