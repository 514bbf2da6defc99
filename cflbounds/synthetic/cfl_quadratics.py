"""Quadratic true risks for clustered FL by cosine splits, with every quantity of its Theorem 1
exact (Sattler, Mueller & Samek, IEEE TNNLS 2021; CATALOGUE.md's CFL section).

``k`` distributions with true risks ``R_j(theta) = 1/2 (theta - c_j)^T H_j (theta - c_j)``
(``H_j``, ``c_j`` drawn as the catalogue's heterogeneous quadratics draw a client's: spectrum
``geomspace(mu, L, d)``, ``H_j = (1 - s) H_0 + s H_j'``, ``||c_j|| = separation``). Client ``i``
draws from distribution ``I(i)`` (contiguous blocks of equal size, ``membership``) and has
weight ``p_i`` (its share of the data, uniform by default); ``pi_j = sum_{I(i)=j} p_i``.

* ``theta*``, the stationary point of the population mixture ``sum_j pi_j R_j``:
  ``(sum_j pi_j H_j)^-1 sum_j pi_j H_j c_j`` (``stationary_point``);
* client ``i``'s empirical risk ``r_i(theta) = R_I(i)(theta) + e_i^T (theta - theta*)``, so
  ``grad r_i(theta*) = grad R_I(i)(theta*) + e_i`` with ``||e_i|| = gamma_i ||grad R_I(i)(theta*)||``:
  the relative deviation ``gamma_i`` (the paper's) is set exactly. ``r_i`` is the quadratic
  ``1/2 (theta - b_i)^T H_I(i) (theta - b_i) + const`` with ``b_i = c_I(i) - H_I(i)^-1 e_i``:
  ``federation`` holds the clients as a
  :class:`~.heterogeneous_quadratics.HeterogeneousQuadratics` (noise-free) for the training
  algorithms. Its own stationary point, the federated objective's, is
  ``theta* - (sum_i p_i H_I(i))^-1 sum_i p_i e_i`` (``empirical_mean_gradient`` is
  ``sum_i p_i grad r_i(theta*) = sum_i p_i e_i``);
* directions of ``e_i`` (``error_direction``): ``"random"``, uniform on the sphere;
  ``"adversarial"``, rotating client ``i``'s gradient by the largest angle a relative deviation
  ``gamma_i`` allows, ``asin(gamma_i)``, towards the gradient of the nearest other distribution
  (the largest cosine with ``grad R_I(i)(theta*)``): with ``a`` the true gradient and ``u`` the
  unit component of that gradient orthogonal to ``a``, ``e_i = gamma_i ||a|| (-gamma_i a/||a|| +
  sqrt(1 - gamma_i^2) u)`` (``e_i`` is orthogonal to ``a + e_i``; the cosine of ``a + e_i`` with
  ``a`` is ``sqrt(1 - gamma_i^2)``). When the other gradient is parallel to ``a`` (always for
  ``k = 2``: the two weighted gradients sum to 0) every orthogonal direction moves towards it
  equally, and ``u`` is a random one;
* the cosine similarities ``alpha_(i,j)`` of the ``grad r_i(theta*)`` (``similarities``) and
  ``alpha_intra^min`` (``intra_similarity_min``; :class:`~.gradient_similarities.GradientSimilarities`);
  ``alpha_cross^max`` and the bipartitions are :mod:`cflbounds.algorithms.cosine_bipartition`'s.

``B`` problems are drawn at once, problem ``b`` from its own seed (stream 0: risks, as
:func:`~.heterogeneous_quadratics.make_heterogeneous_quadratics` draws its clients; stream 1:
the error directions).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from numbers import Integral, Real

import numpy as np
import torch

from .._torch import TENSOR_CONSTRAINTS, resolve_device, resolve_dtype
from .._validation import ArrayLike, Constraint, Interval, NoneOK, Options, require, validate_params
from .gradient_similarities import GradientSimilarities
from .heterogeneous_quadratics import HeterogeneousQuadratics, _draw_problem, client_weights, per_client
from .mixed_linear_regression import cluster_sizes
from .seeding import BATCH_CONSTRAINTS, problem_seeds, stream

__all__ = ["CflQuadratics", "make_cfl_quadratics", "ERROR_DIRECTIONS"]

ERROR_DIRECTIONS = ("random", "adversarial")
_STREAM_RISKS, _STREAM_ERRORS = 0, 1


@dataclass(frozen=True, eq=False)
class CflQuadratics(GradientSimilarities):
    """A batch of ``B`` clustered problems (module docstring): ``risk_hessians`` ``(B, k, d, d)``,
    ``risk_optima`` ``(B, k, d)`` (the ``c_j``), ``membership`` ``(B, m)`` (``I(i)``), ``errors``
    ``(B, m, d)`` (the ``e_i``), ``relative_errors`` ``(m,)`` (the ``gamma_i`` asked for),
    ``federation`` (the clients' empirical risks, for training)."""

    federation: HeterogeneousQuadratics
    risk_hessians: np.ndarray
    risk_optima: np.ndarray
    membership: np.ndarray
    errors: np.ndarray
    relative_errors: np.ndarray
    error_direction: str
    seeds: tuple[int, ...]

    @property
    def batch_size(self) -> int:
        return self.risk_optima.shape[0]

    @property
    def k(self) -> int:
        return self.risk_optima.shape[1]

    @property
    def m(self) -> int:
        return self.membership.shape[1]

    @property
    def d(self) -> int:
        return self.risk_optima.shape[2]

    @property
    def clients(self) -> int:
        return self.m

    @property
    def dtype(self) -> torch.dtype:
        return self.federation.dtype

    @property
    def device(self) -> torch.device:
        return self.federation.device

    @property
    def weights(self) -> np.ndarray:
        """The clients' ``p_i``, ``(m,)``."""
        return self.federation.weights

    def oracle(self, clients=None):
        """The clients' gradient oracle (``grad r_i``), the federation's."""
        return self.federation.oracle(clients)

    @property
    def mixture_weights(self) -> np.ndarray:
        """``pi_j = sum_{I(i)=j} p_i``, ``(B, k)``."""
        return np.stack([np.bincount(row, self.weights, minlength=self.k) for row in self.membership])

    @cached_property
    def stationary_point(self) -> np.ndarray:
        """``theta* = (sum_j pi_j H_j)^-1 sum_j pi_j H_j c_j``, ``(B, d)``."""
        pi = self.mixture_weights
        hessian = np.einsum("bj,bjkl->bkl", pi, self.risk_hessians)
        moment = np.einsum("bj,bjkl,bjl->bk", pi, self.risk_hessians, self.risk_optima)
        return np.linalg.solve(hessian, moment[..., None])[..., 0]

    @cached_property
    def risk_gradients(self) -> np.ndarray:
        """``grad R_j(theta*) = H_j (theta* - c_j)``, ``(B, k, d)`` (they sum to 0 with weights ``pi_j``)."""
        return np.einsum("bjkl,bjl->bjk", self.risk_hessians, self.stationary_point[:, None] - self.risk_optima)

    @property
    def true_client_gradients(self) -> np.ndarray:
        """``grad R_I(i)(theta*)`` of every client, ``(B, m, d)``."""
        return np.take_along_axis(self.risk_gradients, self.membership[..., None], axis=1)

    @property
    def client_gradients(self) -> np.ndarray:
        """``grad r_i(theta*) = grad R_I(i)(theta*) + e_i``, ``(B, m, d)``."""
        return self.true_client_gradients + self.errors

    @property
    def realised_relative_errors(self) -> np.ndarray:
        """``gamma_i = ||e_i|| / ||grad R_I(i)(theta*)||`` recomputed from the gradients, ``(B, m)``."""
        return np.linalg.norm(self.errors, axis=-1) / np.linalg.norm(self.true_client_gradients, axis=-1)

    @property
    def empirical_mean_gradient(self) -> np.ndarray:
        """``sum_i p_i grad r_i(theta*) = sum_i p_i e_i``, ``(B, d)``: 0 iff ``theta*`` is also the
        federated (empirical) objective's stationary point."""
        return np.einsum("i,bid->bd", self.weights, self.errors)

    def subset(self, index) -> "CflQuadratics":
        """The problems at ``index`` (batch positions) as a new batch."""
        index = list(index)
        return CflQuadratics(self.federation.subset(index), self.risk_hessians[index], self.risk_optima[index],
                             self.membership[index], self.errors[index], self.relative_errors, self.error_direction,
                             tuple(self.seeds[i] for i in index))


def _unit(vectors: np.ndarray) -> np.ndarray:
    return vectors / np.linalg.norm(vectors, axis=-1, keepdims=True)


def _orthogonal_unit(rng, direction: np.ndarray, target: np.ndarray) -> np.ndarray:
    """The unit component of ``target`` orthogonal to the unit ``direction``; a random unit
    vector orthogonal to it when ``target`` is (numerically) parallel."""
    rest = target - (target @ direction) * direction
    if np.linalg.norm(rest) <= 1e-12 * np.linalg.norm(target):
        rest = rng.standard_normal(direction.size)
        rest -= (rest @ direction) * direction
    return rest / np.linalg.norm(rest)


def _errors(rng, gradients: np.ndarray, membership: np.ndarray, gamma: np.ndarray, direction: str) -> np.ndarray:
    """``e_i`` of one problem, ``(m, d)``, from the distributions' gradients at theta* ``(k, d)``."""
    true = gradients[membership]
    if direction == "random":
        return (gamma * np.linalg.norm(true, axis=-1))[:, None] * _unit(rng.standard_normal(true.shape))
    unit = _unit(gradients)
    cosines = unit @ unit.T
    np.fill_diagonal(cosines, -np.inf)
    nearest = np.argmax(cosines, axis=1)  # the nearest other distribution of each distribution
    errors = np.empty_like(true)
    for i, j in enumerate(membership):
        a = unit[j]
        u = _orthogonal_unit(rng, a, gradients[nearest[j]])
        errors[i] = gamma[i] * np.linalg.norm(true[i]) * (-gamma[i] * a + np.sqrt(1.0 - gamma[i] ** 2) * u)
    return errors


_RELATIVE = Constraint(lambda v: ArrayLike.is_satisfied_by(v) and np.ndim(v) <= 1 and not isinstance(v, bool)
                       and bool(np.all((np.asarray(v, dtype=float) >= 0) & (np.asarray(v, dtype=float) < 1))),
                       "a float in [0, 1) or one per client")


@validate_params({
    "k": [Interval(Integral, 1, None, closed="left")],
    "clients": [Interval(Integral, 1, None, closed="left")],
    "d": [Interval(Integral, 2, None, closed="left")],
    "strong_convexity": [Interval(Real, 0, None, closed="neither")],
    "smoothness": [Interval(Real, 0, None, closed="neither")],
    "separation": [Interval(Real, 0, None, closed="neither")],
    "hessian_spread": [Interval(Real, 0, 1, closed="both")],
    "relative_error": [_RELATIVE],
    "error_direction": [Options(ERROR_DIRECTIONS)],
    "weights": [NoneOK, ArrayLike],
    **BATCH_CONSTRAINTS,
    **TENSOR_CONSTRAINTS,
})
def make_cfl_quadratics(k: int = 2, clients: int = 10, d: int = 10, *, strong_convexity: float = 1.0,
                        smoothness: float = 10.0, separation: float = 1.0, hessian_spread: float = 0.5,
                        relative_error=0.1, error_direction: str = "random", weights=None, batch_size: int = 1,
                        seed=0, dtype: str = "float64", device: str = "cpu") -> CflQuadratics:
    """Draw ``batch_size`` clustered problems (module docstring).

    Parameters
    ----------
    k, clients, d : distributions, clients m (at least one per distribution), dimension.
    strong_convexity, smoothness : mu <= L, the ends of every ``H_j``'s spectrum.
    separation : ``||c_j||``, each distribution's optimum's distance from the origin.
    hessian_spread : s in [0, 1], the weight of each distribution's own Hessian (0: one shared H).
    relative_error : gamma_i in [0, 1), one value or one per client: ``||e_i|| / ||grad R_I(i)(theta*)||``.
    error_direction : ``"random"`` or ``"adversarial"`` (towards the nearest other distribution; k >= 2).
    weights : the clients' ``p_i`` (positive, summing to 1); None: ``1/m`` each.
    batch_size, seed, dtype, device : as for :func:`~.heterogeneous_quadratics.make_heterogeneous_quadratics`.
    """
    require(strong_convexity <= smoothness, f"The 'strong_convexity' parameter of make_cfl_quadratics must be at most "
            f"'smoothness' (mu <= L). Got mu={strong_convexity!r} > L={smoothness!r} instead.")
    require(k <= clients, f"make_cfl_quadratics needs at least one client per distribution: k={k} > clients={clients}.")
    require(error_direction == "random" or k >= 2, "error_direction='adversarial' rotates towards another "
            "distribution's gradient: it needs k >= 2.")
    gamma = per_client(relative_error, clients, "relative_error")
    p = client_weights(weights, clients)
    membership = np.repeat(np.arange(k), cluster_sizes(clients, k))
    pi = np.bincount(membership, p, minlength=k)
    seeds = problem_seeds(seed, batch_size)
    eigenvalues = np.geomspace(float(strong_convexity), float(smoothness), d)
    hessians, optima, errors = [], [], []
    for s in seeds:  # set-up, once per problem: not a hot path
        H, c = _draw_problem(stream(s, _STREAM_RISKS), k, eigenvalues, float(hessian_spread), float(separation))
        theta = np.linalg.solve(np.einsum("j,jkl->kl", pi, H), np.einsum("j,jkl,jl->k", pi, H, c))
        gradients = np.einsum("jkl,jl->jk", H, theta - c)
        hessians.append(H), optima.append(c)
        errors.append(_errors(stream(s, _STREAM_ERRORS), gradients, membership, gamma, error_direction))
    H, c, e = np.stack(hessians), np.stack(optima), np.stack(errors)
    client_hessians = H[:, membership]
    client_optima = c[:, membership] - np.linalg.solve(client_hessians, e[..., None])[..., 0]  # b_i = c - H^-1 e_i
    torch_device, torch_dtype = resolve_device(device), resolve_dtype(dtype)
    federation = HeterogeneousQuadratics(
        hessians=torch.as_tensor(client_hessians, dtype=torch_dtype, device=torch_device),
        optima=torch.as_tensor(client_optima, dtype=torch_dtype, device=torch_device),
        hessians_exact=client_hessians, optima_exact=client_optima, weights=p, noise_std=np.zeros(clients),
        seeds=seeds)
    return CflQuadratics(federation, H, c, np.tile(membership, (len(seeds), 1)), e, gamma, error_direction, seeds)
