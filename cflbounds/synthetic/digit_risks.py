"""A learned case for clustered FL by cosine splits: multinomial logistic regression on rotated
digits, with each client's relative gradient deviation ``gamma_i`` *estimated* (Sattler, Mueller &
Samek, IEEE TNNLS 2021: ``gamma_i = ||grad R_I(i)(theta*) - grad r_i(theta*)|| /
||grad R_I(i)(theta*)||``).

Clients are :func:`~.digits.make_digit_clients`' rotation structure (``k <= 4`` distributions,
the images of distribution ``j`` rotated by ``90 j`` degrees, the papers' Rotated MNIST on
scikit-learn's digits; ``n`` training images each, contiguous blocks of equal size). The model
is softmax regression with ridge ``lam`` (the parameter layout of
:class:`cflbounds.algorithms.small_models.SoftmaxRegression`: ``[vec(W), b]``, ``W`` ``(64, 10)``):

    r_i(theta) = (1/n) sum_{l in D_i} CE(theta; x_l, y_l) + (lam/2) ||theta||^2,

and distribution ``j``'s true risk ``R_j`` is estimated by the same loss over the large sample:
all 1797 images rotated by ``90 j`` degrees. ``theta*`` is the stationary point of the mixture
``sum_j pi_j R_j`` (``pi_j`` the distribution's share of the clients' data), found by damped
Newton with the exact Hessian in float64 (``stationarity`` reports the gradient norm reached,
about 1e-13); the ridge makes it unique.

``gamma_i`` is then an estimate (``relative_errors``): the large sample's mean gradient stands
for the population's. Its uncertainty (``relative_error_se``, ``relative_error_interval``) is a
bootstrap over the large sample (its images resampled with replacement, the same resample for
every rotation, ``theta*`` and the clients' gradients held fixed; ``bootstrap`` resamples from a
fixed stream, so a trial's numbers do not depend on its batch). Known limits, reported rather
than corrected: the clients' images are part of the large sample (``n/1797`` of it each), and
``theta*``'s own sampling error is not propagated.

``oracle()`` gives the clients' full-batch gradients in torch for the training algorithms
(:func:`cflbounds.algorithms.cosine_cfl.cosine_cfl`).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, lru_cache
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np
import torch
from scipy import special

from .._torch import TENSOR_CONSTRAINTS
from .._validation import Interval, require, validate_params
from .digits import CLASSES, PIXELS, ROTATIONS, DigitClients, _digits, _rotate, make_digit_clients
from .gradient_similarities import GradientSimilarities
from .mixed_linear_regression import cluster_sizes
from .seeding import BATCH_CONSTRAINTS

__all__ = ["DigitRisks", "DigitOracle", "make_digit_risks", "PARAMETERS"]

PARAMETERS = (PIXELS + 1) * CLASSES
_BOOTSTRAP_SEED = 20210101


def _unpack(theta: np.ndarray):
    return theta[..., : PIXELS * CLASSES].reshape(*theta.shape[:-1], PIXELS, CLASSES), theta[..., PIXELS * CLASSES:]


def _residuals(theta: np.ndarray, features: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """``softmax(x W + b) - onehot(y)`` per sample, ``(..., n, C)``."""
    weight, bias = _unpack(theta)
    logits = np.einsum("...np,...pc->...nc", features, weight) + bias[..., None, :]
    return special.softmax(logits, axis=-1) - np.eye(CLASSES)[labels]


def _loss_gradient(theta, features, labels) -> np.ndarray:
    """The mean cross-entropy's gradient (no ridge), ``(..., P)``."""
    residuals = _residuals(theta, features, labels)
    n = features.shape[-2]
    grad_w = np.einsum("...np,...nc->...pc", features, residuals) / n
    return np.concatenate([grad_w.reshape(*grad_w.shape[:-2], -1), residuals.mean(axis=-2)], axis=-1)


def _per_sample_gradients(theta, features, labels) -> np.ndarray:
    """Each sample's cross-entropy gradient, ``(n, P)``."""
    residuals = _residuals(theta, features, labels)
    grad_w = np.einsum("np,nc->npc", features, residuals).reshape(features.shape[0], -1)
    return np.concatenate([grad_w, residuals], axis=-1)


def _rotated_pool(k: int) -> tuple[np.ndarray, np.ndarray]:
    """The large sample of each distribution: all images rotated, ``(k, 1797, 64)``, labels ``(1797,)``."""
    images, labels = _digits()
    return np.stack([_rotate(images, ROTATIONS[j]).reshape(len(images), PIXELS) for j in range(k)]), labels


@lru_cache(maxsize=8)
def _stationary_point(k: int, mixture: tuple[float, ...], regularization: float) -> tuple[np.ndarray, float]:
    """``argmin sum_j pi_j R_j(theta) + (lam/2)||theta||^2`` by damped Newton from 0 with the
    exact Hessian (module docstring), and its gradient norm."""
    pool, labels = _rotated_pool(k)
    n = labels.size
    features = np.concatenate([pool, np.ones((*pool.shape[:2], 1))], axis=-1).reshape(-1, PIXELS + 1)  # x~ = [x, 1]
    targets = np.eye(CLASSES)[np.tile(labels, k)]
    sample_weights = np.repeat(np.asarray(mixture) / n, n)  # pi_j / n for each image of distribution j
    # theta = vec of W~ = [W; b^T] (65, 10), row-major: the parameter layout of _unpack

    def logits(theta):
        return features @ theta.reshape(PIXELS + 1, CLASSES)

    def value(theta):
        z = logits(theta)
        losses = special.logsumexp(z, axis=-1) - (z * targets).sum(-1)
        return sample_weights @ losses + 0.5 * regularization * theta @ theta

    def gradient(theta):
        residuals = (special.softmax(logits(theta), axis=-1) - targets) * sample_weights[:, None]
        return (features.T @ residuals).ravel() + regularization * theta

    def hessian(theta):
        """``sum_n w_n (diag(p_n) - p_n p_n^T) (x) x~_n x~_n^T + lam I`` in the (feature, class) layout."""
        probabilities = special.softmax(logits(theta), axis=-1)
        outer = (features[:, :, None] * probabilities[:, None, :]).reshape(len(features), -1)  # x~ (x) p
        weighted = outer * sample_weights[:, None]
        diagonal = (weighted.T @ features).reshape(PIXELS + 1, CLASSES, PIXELS + 1)  # sum_n w_n p_nc x~ x~^T
        blocks = np.zeros((PIXELS + 1, CLASSES, PIXELS + 1, CLASSES))
        classes = np.arange(CLASSES)
        blocks[:, classes, :, classes] = diagonal.transpose(1, 0, 2)
        return blocks.reshape(PARAMETERS, PARAMETERS) - weighted.T @ outer + regularization * np.eye(PARAMETERS)

    theta = np.zeros(PARAMETERS)
    for _ in range(50):
        current = gradient(theta)
        if np.linalg.norm(current) < 1e-12:
            break
        direction = np.linalg.solve(hessian(theta), current)
        scale, start = 1.0, value(theta)
        while value(theta - scale * direction) > start and scale > 1e-8:  # backtracking: never increase
            scale /= 2
        theta = theta - scale * direction
    return theta, float(np.linalg.norm(gradient(theta)))


class DigitOracle(NamedTuple):
    """The clients' data ``(B, m, n, 64)``, labels ``(B, m, n)`` and the ridge: full-batch gradients."""

    features: torch.Tensor
    labels: torch.Tensor
    regularization: float

    def gradient(self, models: torch.Tensor) -> torch.Tensor:
        """``grad r_i(theta_i)`` of each client's model ``(B, m, P)``, ``(B, m, P)``."""
        weight = models[..., : PIXELS * CLASSES].unflatten(-1, (PIXELS, CLASSES))
        logits = torch.matmul(self.features, weight) + models[..., None, PIXELS * CLASSES:]
        residuals = torch.softmax(logits, dim=-1) - torch.nn.functional.one_hot(self.labels, CLASSES).to(models.dtype)
        grad_w = torch.matmul(self.features.transpose(-1, -2), residuals) / self.features.shape[-2]
        return torch.cat([grad_w.flatten(-2), residuals.mean(dim=-2)], dim=-1) + self.regularization * models


@dataclass(frozen=True, eq=False)
class DigitRisks(GradientSimilarities):
    """A batch of ``B`` rotated-digit federations (module docstring): ``data`` the
    :class:`~.digits.DigitClients`, ``regularization`` lam, ``bootstrap`` resamples."""

    data: DigitClients
    regularization: float
    bootstrap: int

    @property
    def batch_size(self) -> int:
        return self.data.batch_size

    @property
    def clients(self) -> int:
        return self.data.m

    @property
    def k(self) -> int:
        return len(self.data.rotations)

    @property
    def d(self) -> int:
        return PARAMETERS

    @property
    def seeds(self) -> tuple[int, ...]:
        return self.data.seeds

    @property
    def membership(self) -> np.ndarray:
        return self.data.membership

    @property
    def dtype(self) -> torch.dtype:
        return self.data.dtype

    @property
    def device(self) -> torch.device:
        return self.data.device

    @property
    def weights(self) -> np.ndarray:
        """``p_i = n_i / n`` (equal sizes: ``1/m``), ``(m,)``."""
        return np.full(self.clients, 1.0 / self.clients)

    @property
    def mixture_weights(self) -> np.ndarray:
        """``pi_j``, ``(k,)``."""
        return cluster_sizes(self.clients, self.k) / self.clients

    @cached_property
    def _solution(self) -> tuple[np.ndarray, float]:
        return _stationary_point(self.k, tuple(self.mixture_weights.tolist()), float(self.regularization))

    @property
    def stationary_point(self) -> np.ndarray:
        """``theta*`` (the same for every trial), ``(B, P)``."""
        return np.tile(self._solution[0], (self.batch_size, 1))

    @property
    def stationarity(self) -> float:
        """``||grad (sum_j pi_j R_j)(theta*)||``: the solver's residual."""
        return self._solution[1]

    @cached_property
    def _pool_gradients(self) -> np.ndarray:
        """Each large-sample image's gradient at theta* under each rotation, ``(k, 1797, P)``."""
        pool, labels = _rotated_pool(self.k)
        return np.stack([_per_sample_gradients(self._solution[0], pool[j], labels) for j in range(self.k)])

    @property
    def risk_gradients(self) -> np.ndarray:
        """``grad R_j(theta*)`` estimated on the large sample, ``(k, P)``."""
        return self._pool_gradients.mean(axis=1) + self.regularization * self._solution[0]

    @cached_property
    def client_gradients(self) -> np.ndarray:
        """``grad r_i(theta*)`` on each client's training images, ``(B, m, P)``."""
        features = self.data.train.features.double().cpu().numpy()
        labels = self.data.train.labels.cpu().numpy()
        return _loss_gradient(self._solution[0], features, labels) + self.regularization * self._solution[0]

    def _relative(self, risk_gradients: np.ndarray) -> np.ndarray:
        true = risk_gradients[..., self.membership, :]  # (..., B, m, P)
        return np.linalg.norm(true - self.client_gradients, axis=-1) / np.linalg.norm(true, axis=-1)

    @property
    def relative_errors(self) -> np.ndarray:
        """The estimate of ``gamma_i``, ``(B, m)``."""
        return self._relative(self.risk_gradients)

    @cached_property
    def _bootstrap_relative_errors(self) -> np.ndarray:
        """``gamma_i`` under each bootstrap resample of the large sample, ``(bootstrap, B, m)``."""
        gradients = self._pool_gradients
        size = gradients.shape[1]
        counts = np.random.default_rng(_BOOTSTRAP_SEED).multinomial(size, np.full(size, 1.0 / size), self.bootstrap)
        resampled = np.einsum("rn,jnp->rjp", counts / size, gradients) + self.regularization * self._solution[0]
        return np.stack([self._relative(replicate) for replicate in resampled])

    @property
    def relative_error_se(self) -> np.ndarray:
        """The bootstrap standard error of each ``gamma_i`` estimate, ``(B, m)``."""
        return self._bootstrap_relative_errors.std(axis=0, ddof=1)

    @property
    def relative_error_interval(self) -> np.ndarray:
        """The bootstrap's 95 % percentile interval of each ``gamma_i``, ``(B, m, 2)``."""
        return np.moveaxis(np.percentile(self._bootstrap_relative_errors, [2.5, 97.5], axis=0), 0, -1)

    def oracle(self, clients=None) -> DigitOracle:
        """Every client's training data (``clients`` must be None: the training uses all)."""
        require(clients is None, "DigitRisks.oracle gathers every client (clients=None).")
        return DigitOracle(self.data.train.features, self.data.train.labels, float(self.regularization))


@validate_params({
    "clients": [Interval(Integral, 1, None, closed="left")],
    "k": [Interval(Integral, 2, len(ROTATIONS), closed="both")],
    "train_per_client": [Interval(Integral, 1, None, closed="left")],
    "regularization": [Interval(Real, 0, None, closed="neither")],
    "bootstrap": [Interval(Integral, 2, None, closed="left")],
    **BATCH_CONSTRAINTS,
    **TENSOR_CONSTRAINTS,
})
def make_digit_risks(clients: int = 8, k: int = 4, *, train_per_client: int = 300, regularization: float = 1e-2,
                     bootstrap: int = 200, batch_size: int = 1, seed=0, dtype: str = "float64",
                     device: str = "cpu") -> DigitRisks:
    """Draw ``batch_size`` rotated-digit federations of ``clients`` clients in ``k`` rotations
    (module docstring); ``regularization`` is the ridge lam > 0, ``bootstrap`` the resamples of
    the large sample behind each ``gamma_i``'s uncertainty."""
    data = make_digit_clients(clients, k, structure="rotation", train_per_client=train_per_client, test_per_client=1,
                              batch_size=batch_size, seed=seed, dtype=dtype, device=device)
    return DigitRisks(data, float(regularization), int(bootstrap))
