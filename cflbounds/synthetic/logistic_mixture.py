"""A mixture of regularized logistic regressions across clients, with its exact constants.

Client ``i`` of cluster ``p`` holds ``n`` points ``(x, y)``, ``x ~ N(0, I_d)``,
``y in {-1, +1}`` with ``P(y = 1 | x) = sigmoid(<x, u_p>)``, and the per-point loss

    f(w; x, y) = log(1 + exp(-y <x, w>)) + (lam/2) ||w||^2.

The cluster's population loss ``F_p(w) = E f`` is minimised exactly at the planted
center ``theta*_p``: the centers are ``Delta/sqrt(2)`` times ``k`` orthonormal vectors
(a random rotation), so every pair is exactly ``Delta`` apart, and the teacher is
``u_p = alpha theta*_p`` with ``alpha`` solving the stationarity condition. With
``h(s) = E[sigmoid'(s z)]``, ``h2(s) = E[z^2 sigmoid'(s z)]`` and ``Psi(r) = E[softplus(r z)]``
for ``z ~ N(0, 1)`` (Stein's lemma gives ``E[sigmoid(<x, v>) x] = h(||v||) v``):

* ``grad F_p(w) = (h(||w||) + lam) w - h(||u_p||) u_p``, so ``theta*_p`` is the minimiser iff
  ``alpha h(alpha a) = h(a) + lam`` with ``a = ||theta*_p||`` (solvable iff
  ``h(a) + lam < 1/(a sqrt(2 pi))``, the supremum of the left side);
* ``F_p(w) = Psi(||w||) - h(||u_p||) <w, u_p> + (lam/2) ||w||^2``;
* Hessian ``lam I + h(s) (I - w w^T/s^2) + h2(s) w w^T/s^2`` (``s = ||w||``; ``h2 <= h``, both
  decreasing), so globally ``L = lam + 1/4`` (at ``w = 0``) and ``mu = lam`` (the infimum as
  ``||w|| -> inf``); on ``||w|| <= S``: ``mu_S = lam + h2(S)``.

These are exact up to one-dimensional quadrature (error below 1e-12 for arguments up to
``S_MAX = 30``; the rule cannot resolve ``sigmoid'(s z)``, a spike of width 1/s, much beyond:
its error is 4e-9 at s = 100 and 6e-3 at s = 1000). So the generator only builds problems
whose teacher norm ``||u_p||`` is at most ``S_MAX``, and whose separation is at least
``1e-150`` (distances are computed from squared coordinates, which underflow below). The loss and
gradient variances (sigma^2, v^2 of CFL-MGD Assumption 3) are two-dimensional integrals
over ``(<x, w>, <x, u_p>)``, evaluated by quadrature at given points
(:meth:`LogisticMixture.loss_variance`, :meth:`~LogisticMixture.gradient_variance`);
:meth:`~LogisticMixture.monte_carlo` estimates every constant from samples with its
standard error (the tests confirm the quadrature with it).
"""
from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
import torch
from scipy import optimize, special

from .._torch import TENSOR_CONSTRAINTS, resolve_device, resolve_dtype
from .._validation import ArrayLike, Interval, NoneOK, require, validate_params
from .batch_draws import draw_batch, gaussian_features
from .mixed_linear_regression import cluster_sizes
from .planted_clusters import PlantedClusters
from .seeding import BATCH_CONSTRAINTS, problem_seeds, stream

__all__ = ["LogisticMixture", "make_logistic_mixture", "teacher_scale", "normal_expectation", "S_MAX"]

_STREAM_DATA, _STREAM_FRESH = 0, 1
_HALF_NODES, _Z_MAX = 160, 12.0
S_MAX = 30.0  # largest argument of h at which the quadrature keeps its 1e-12 accuracy (module docstring)
_SEPARATION_MIN = 1e-150  # below it squared coordinates underflow and distances come out 0


def _split_legendre(nodes: int = _HALF_NODES, z_max: float = _Z_MAX):
    """Nodes and N(0,1)-weights of Gauss-Legendre on [-z_max, 0] and [0, z_max]: the
    split at 0 resolves steep sigmoids ``sigmoid(s z)``; the tails beyond 12 weigh < 1e-32."""
    x, w = np.polynomial.legendre.leggauss(nodes)
    z = np.concatenate([(x - 1) * z_max / 2, (x + 1) * z_max / 2])
    weights = np.concatenate([w, w]) * z_max / 2 * np.exp(-z**2 / 2) / np.sqrt(2 * np.pi)
    return z, weights


_Z, _W = _split_legendre()
_Z1, _W1 = np.polynomial.hermite_e.hermegauss(48)
_W1 = _W1 / np.sqrt(2 * np.pi)  # Gauss-Hermite (probabilists') weights of N(0, 1)


def normal_expectation(function) -> np.ndarray:
    """``E[function(z)]``, ``z ~ N(0, 1)``, for a function broadcasting over a last axis of nodes."""
    return np.sum(function(_Z) * _W, axis=-1)


def _sigmoid_slope(t):
    return special.expit(t) * special.expit(-t)


def _h(s):
    """``h(s) = E[sigmoid'(s z)]``, elementwise."""
    s = np.asarray(s, dtype=float)[..., None]
    return normal_expectation(lambda z: _sigmoid_slope(s * z))


def _h2(s):
    """``h2(s) = E[z^2 sigmoid'(s z)]``, elementwise."""
    s = np.asarray(s, dtype=float)[..., None]
    return normal_expectation(lambda z: z**2 * _sigmoid_slope(s * z))


def _psi(r):
    """``Psi(r) = E[softplus(r z)]``, elementwise."""
    r = np.asarray(r, dtype=float)[..., None]
    return normal_expectation(lambda z: np.logaddexp(0.0, r * z))


def teacher_scale(center_norm: float, regularization: float) -> float:
    """``alpha`` with ``alpha h(alpha a) = h(a) + lam``: the teacher ``u = alpha theta*`` whose
    regularized population minimiser is ``theta*`` (``a = ||theta*||``), with ``alpha a <= S_MAX``
    (the range where ``h`` is computed to 1e-12; ``alpha h(alpha a)`` increases in alpha)."""
    a, lam = center_norm, regularization
    target = float(_h(a)) + lam
    require(target < 1.0 / (a * np.sqrt(2 * np.pi)),
            f"A logistic mixture with ||theta*|| = {a:.4g} and regularization {lam:.4g} has no teacher: the "
            f"stationarity condition needs h(a) + lam < 1/(a sqrt(2 pi)) ({target:.4g} >= "
            f"{1.0 / (a * np.sqrt(2 * np.pi)):.4g}); use a smaller separation or regularization.")
    gap = lambda alpha: alpha * float(_h(alpha * a)) - target
    largest = S_MAX / a
    low, high = 1.0, min(2.0, largest)
    while gap(high) < 0 and high < largest:
        low, high = high, min(2.0 * high, largest)
    require(a <= S_MAX and gap(high) >= 0,
            f"A logistic mixture with ||theta*|| = {a:.4g} and regularization {lam:.4g} needs a teacher of norm "
            f"above {S_MAX:g}, beyond the range where its constants are computed exactly (h(s) to 1e-12); use a "
            f"smaller separation or a larger regularization.")
    return optimize.brentq(gap, low, high, xtol=1e-14, rtol=1e-14)


@dataclass(frozen=True, eq=False)
class LogisticMixture(PlantedClusters):
    """A batch of ``B`` logistic-mixture problems and their exact constants.

    ``features`` ``(B, m, n, d)``, ``labels`` ``(B, m, n)`` in {-1, +1}, ``theta_star``
    ``(B, k, d)`` (the population minimisers); float64 ``theta_star_exact`` and
    ``teachers_exact`` ``(B, k, d)``; ``membership[i]`` machine i's cluster.
    """

    features: torch.Tensor
    labels: torch.Tensor
    theta_star: torch.Tensor
    theta_star_exact: np.ndarray
    teachers_exact: np.ndarray
    membership: np.ndarray
    regularization: float
    seeds: tuple[int, ...]
    scale: float  # ||theta*_p|| = Delta / sqrt(2), the same for every cluster

    # shapes, proportions, center distances, separation, max center norm: PlantedClusters

    @property
    def smoothness(self) -> float:
        """``L = lam + 1/4``: ``sigmoid' <= 1/4`` and ``E[x x^T] = I``, attained at ``w = 0``."""
        return self.regularization + 0.25

    @property
    def strong_convexity(self) -> float:
        """``mu = lam``: the Hessian's smallest eigenvalue ``lam + h2(||w||)`` tends to ``lam``."""
        return self.regularization

    def curvature_on_ball(self, radius) -> tuple[np.ndarray, np.ndarray]:
        """``(mu, L)`` of every ``F_p`` on the balls ``||w - theta*_p|| <= radius`` (exact):
        ``mu = lam + h2(a + radius)``, ``L = lam + h(max(a - radius, 0))``."""
        radius = np.asarray(radius, dtype=float)
        return (self.regularization + _h2(self.scale + radius),
                self.regularization + _h(np.maximum(self.scale - radius, 0.0)))

    # -- exact population functions (1-D quadrature) ------------------------------------------
    def population_loss(self, w, cluster) -> np.ndarray:
        """``F_p(w)`` for points ``w`` ``(B, ..., d)`` and a cluster ``p`` (int), ``(B, ...)``."""
        w = np.asarray(w, dtype=float)
        u = self.teachers_exact[:, cluster].reshape((self.batch_size,) + (1,) * (w.ndim - 2) + (self.d,))
        u_norm = np.linalg.norm(u, axis=-1)
        norm = np.linalg.norm(w, axis=-1)
        return _psi(norm) - _h(u_norm) * np.sum(w * u, axis=-1) + 0.5 * self.regularization * norm**2

    def population_gradient(self, w, cluster) -> np.ndarray:
        """``grad F_p(w) = (h(||w||) + lam) w - h(||u_p||) u_p``, ``(B, ..., d)``."""
        w = np.asarray(w, dtype=float)
        u = self.teachers_exact[:, cluster].reshape((self.batch_size,) + (1,) * (w.ndim - 2) + (self.d,))
        u_norm = np.linalg.norm(u, axis=-1, keepdims=True)
        return (_h(np.linalg.norm(w, axis=-1, keepdims=True)) + self.regularization) * w - _h(u_norm) * u

    def min_loss(self) -> np.ndarray:
        """``F_p(theta*_p)`` per problem and cluster, ``(B, k)``."""
        return np.stack([self.population_loss(self.theta_star_exact[:, p], p) for p in range(self.k)], axis=1)

    # -- variances (2-D quadrature) ----------------------------------------------------------------
    def _pair(self, w, cluster):
        """``(s1, s2)`` coefficients: ``<x, w> = a1 z2 + b1 z1``, ``<x, u> = c z2`` with ``z1, z2`` i.i.d. N(0,1)."""
        w = np.asarray(w, dtype=float)
        u = self.teachers_exact[:, cluster].reshape((self.batch_size,) + (1,) * (w.ndim - 2) + (self.d,))
        c = np.linalg.norm(u, axis=-1)
        a1 = np.sum(w * u, axis=-1) / c
        b1 = np.sqrt(np.maximum(np.sum(w * w, axis=-1) - a1**2, 0.0))
        return a1, b1, c

    def _expect(self, w, cluster, integrand):
        """``E[integrand(s1, s2, z1, z2)]``: Gauss-Hermite in ``z1`` (the integrands are smooth in
        it) times the split Legendre rule in ``z2`` (it carries the steep ``sigmoid(c z2)``),
        over chunks of points to bound the memory."""
        pair = self._pair(w, cluster)
        shape = pair[0].shape
        a1, b1, c = (v.ravel() for v in pair)
        out = np.empty(a1.size)
        z1, z2, weights = _Z1[:, None], _Z[None, :], _W1[:, None] * _W[None, :]
        for start in range(0, a1.size, 256):
            part = slice(start, start + 256)
            s1 = a1[part, None, None] * z2 + b1[part, None, None] * z1
            out[part] = np.sum(integrand(s1, c[part, None, None] * z2, z1, z2) * weights, axis=(-2, -1))
        return out.reshape(shape)

    def loss_variance(self, w, cluster) -> np.ndarray:
        """``Var_{(x,y) ~ D_p} f(w; x, y)`` at points ``w`` ``(B, ..., d)`` (sigma^2 of Assumption 3)."""
        second = self._expect(w, cluster, lambda s1, s2, z1, z2: special.expit(s2) * np.logaddexp(0.0, -s1) ** 2
                              + special.expit(-s2) * np.logaddexp(0.0, s1) ** 2)
        first = self.population_loss(w, cluster) - 0.5 * self.regularization * np.sum(np.square(w), axis=-1)
        return second - first**2

    def gradient_variance(self, w, cluster) -> np.ndarray:
        """``E||grad f(w; x, y) - grad F_p(w)||^2`` at points ``w`` (v^2 of Assumption 3).

        ``grad f = g x + lam w`` with ``g = -y sigmoid(-y <x, w>)``; in the plane of ``(w, u_p)``
        ``x = z1 e1 + z2 e2 + x_perp`` with ``x_perp`` (d - 2 dims) independent of ``g``, so
        ``v^2 = E[g^2 (z1^2 + z2^2)] + (d - 2) E[g^2] - E[g z1]^2 - E[g z2]^2``."""
        g2 = lambda s1, s2: special.expit(s2) * special.expit(-s1) ** 2 + special.expit(-s2) * special.expit(s1) ** 2
        mean_g = lambda s1, s2: special.expit(s1) - special.expit(s2)
        squared = self._expect(w, cluster, lambda s1, s2, z1, z2: g2(s1, s2) * (z1**2 + z2**2 + self.d - 2))
        along1 = self._expect(w, cluster, lambda s1, s2, z1, z2: mean_g(s1, s2) * z1)
        along2 = self._expect(w, cluster, lambda s1, s2, z1, z2: mean_g(s1, s2) * z2)
        return squared - along1**2 - along2**2

    def monte_carlo(self, w, cluster, samples: int = 100_000, seed: int = 0) -> dict:
        """Sample estimates of ``F_p(w)``, ``Var f`` and ``E||grad f - grad F_p||^2`` at one point
        ``w`` ``(B, d)`` per problem, each as ``(estimate, standard error)`` arrays ``(B,)``."""
        rng = np.random.default_rng(seed)
        w = np.asarray(w, dtype=float)
        x = rng.standard_normal((self.batch_size, samples, self.d))
        teacher = self.teachers_exact[:, cluster]
        probability = special.expit(np.einsum("bsd,bd->bs", x, teacher))
        y = np.where(rng.random((self.batch_size, samples)) < probability, 1.0, -1.0)
        margin = y * np.einsum("bsd,bd->bs", x, w)
        loss = np.logaddexp(0.0, -margin) + 0.5 * self.regularization * np.sum(w**2, axis=-1)[:, None]
        gradient = (-y * special.expit(-margin))[..., None] * x + self.regularization * w[:, None]
        exact_loss = self.population_loss(w, cluster)[:, None]
        exact_gradient = self.population_gradient(w, cluster)[:, None]
        mean_se = lambda values: (values.mean(axis=1), values.std(axis=1, ddof=1) / np.sqrt(samples))
        return {
            "loss": mean_se(loss),
            "loss_variance": mean_se((loss - exact_loss) ** 2),
            "gradient_variance": mean_se(np.sum((gradient - exact_gradient) ** 2, axis=-1)),
        }

    # -- fresh samples -------------------------------------------------------------------------------
    def draw(self, n: int, draw_index: int, index=None) -> tuple[torch.Tensor, torch.Tensor]:
        """``n`` new points per machine, ``(B, m, n, d)`` and ``(B, m, n)``; draw ``draw_index``
        of problem ``b`` depends only on ``(seeds[b], draw_index)``."""
        index = range(self.batch_size) if index is None else index
        return _sample_batch([stream(self.seeds[b], _STREAM_FRESH, draw_index) for b in index],
                             self.teachers_exact[list(index)], self.membership, n, self.dtype, self.device)

    def subset(self, index) -> "LogisticMixture":
        index = list(index)
        position = torch.as_tensor(index, device=self.device)
        return LogisticMixture(
            features=self.features.index_select(0, position), labels=self.labels.index_select(0, position),
            theta_star=self.theta_star.index_select(0, position), theta_star_exact=self.theta_star_exact[index],
            teachers_exact=self.teachers_exact[index], membership=self.membership,
            regularization=self.regularization, seeds=tuple(self.seeds[i] for i in index), scale=self.scale)


def _sample_batch(rngs, teachers, membership, n, dtype, device):
    """Gaussian features and teacher labels, problem ``b`` from ``rngs[b]`` (the problems at
    once, one per thread: :func:`~.batch_draws.draw_batch`)."""
    m, d = membership.shape[0], teachers.shape[-1]

    def one_problem(rng, b, rows):
        features, labels = rows
        probability = special.expit(gaussian_features(rng, features, teachers[b][membership]))
        labels.copy_(torch.from_numpy(np.where(rng.random((m, n)) < probability, 1.0, -1.0)))

    return tuple(draw_batch(rngs, one_problem, [(m, n, d), (m, n)], dtype, device))


def _centers(rng, k, d, norm):
    """``norm`` times ``k`` orthonormal vectors of a uniformly random rotation."""
    q, r = np.linalg.qr(rng.standard_normal((d, d)))
    return norm * (q * np.sign(np.diag(r)))[:, :k].T


@validate_params({
    "k": [Interval(Integral, 1, None, closed="left")],
    "m": [Interval(Integral, 1, None, closed="left")],
    "n": [Interval(Integral, 1, None, closed="left")],
    "d": [Interval(Integral, 2, None, closed="left")],
    "separation": [Interval(Real, 0, None, closed="neither")],
    "regularization": [Interval(Real, 0, None, closed="neither")],
    "proportions": [NoneOK, ArrayLike],
    **BATCH_CONSTRAINTS,
    **TENSOR_CONSTRAINTS,
})
def make_logistic_mixture(k: int = 2, m: int = 20, n: int = 50, d: int = 5, *, separation: float = 1.0,
                          regularization: float = 0.1, proportions=None, batch_size: int = 1, seed=0,
                          dtype: str = "float64", device: str = "cpu") -> LogisticMixture:
    """Draw ``batch_size`` logistic-mixture problems (see the module docstring).

    Parameters
    ----------
    k, m, n, d : clusters, clients, points per client, dimension (``k <= m``, ``k <= d``).
    separation : Delta, the exact distance between every pair of minimisers
        (``||theta*_p|| = Delta/sqrt(2)``), at least 1e-150.
    regularization : lam > 0, the ridge weight (the global strong convexity). Not every pair
        has a teacher: the stationarity condition, and a teacher norm of at most ``S_MAX``,
        bound the separation for a given lam (an ``InvalidParameterError`` says so).
    proportions, batch_size, seed, dtype, device : as in ``make_mixed_linear_regression``.
    """
    require(k <= m, f"A logistic mixture needs at least one client per cluster: k={k} > m={m}.")
    require(separation >= _SEPARATION_MIN, f"The 'separation' parameter of make_logistic_mixture must be at least "
                                           f"{_SEPARATION_MIN:g} (distances underflow below). Got {separation!r}.")
    require(k <= d, f"A logistic mixture places k orthonormal centers in R^d, so it needs k <= d: k={k} > d={d}.")
    sizes = cluster_sizes(m, k, proportions)
    membership = np.repeat(np.arange(k), sizes)
    seeds = problem_seeds(seed, batch_size)
    norm = float(separation) / np.sqrt(2.0)
    alpha = teacher_scale(norm, float(regularization))
    rngs = [stream(s, _STREAM_DATA) for s in seeds]
    centers = np.stack([_centers(rng, k, d, norm) for rng in rngs])  # each stream: centers first, then data
    torch_device, torch_dtype = resolve_device(device), resolve_dtype(dtype)
    features, labels = _sample_batch(rngs, alpha * centers, membership, n, torch_dtype, torch_device)
    return LogisticMixture(
        features=features, labels=labels, theta_star=torch.as_tensor(centers, dtype=torch_dtype, device=torch_device),
        theta_star_exact=centers, teachers_exact=alpha * centers, membership=membership,
        regularization=float(regularization), seeds=seeds, scale=norm)
