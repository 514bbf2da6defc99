"""Heterogeneous quadratics with Gaussian gradient noise: the catalogue's problem family.

Client ``k`` of ``N`` holds (FedAvg on non-iid data, local GD, SCAFFOLD, FedProx)

    F_k(w) = 1/2 (w - b_k)^T A_k (w - b_k),        weight p_k,    F = sum_k p_k F_k,

and answers a query at ``w`` with the stochastic gradient ``g = A_k (w - b_k) + (sigma_k /
sqrt(d)) z``, ``z ~ N(0, I_d)``, so ``E g = grad F_k(w)`` and ``E||g - grad F_k(w)||^2 =
sigma_k^2`` exactly, at every ``w``. Every constant the papers name is a closed form of the
``A_k``, ``b_k``, ``p_k``, ``sigma_k`` (each a property or method below): ``L``, ``mu``,
``w* = Abar^-1 sum p_k A_k b_k`` with ``Abar = sum p_k A_k``, ``F* = F(w*)``, ``F_k* = 0``,
``Gamma = F* - sum p_k F_k*``, ``sigma^2 = sum p_k ||grad F_k(w*)||^2`` (local GD), the
``(G, B)`` gradient dissimilarity and ``delta`` (SCAFFOLD), FedProx's ``B(w)``. The gap
``F(w) - F* = 1/2 (w - w*)^T Abar (w - w*)`` is evaluated in that form (no cancellation).

Hessians: eigenvalues ``geomspace(mu, L, d)``; a shared ``A_0 = R_0 diag R_0^T`` and per client
``A_k' = R_k diag R_k^T`` (Haar rotations), ``A_k = (1 - s) A_0 + s A_k'`` with
``s = hessian_spread``: every spectrum lies in ``[mu, L]`` (at ``s`` = 0 or 1 the extremes are
exactly ``mu`` and ``L``; in between the properties give the exact extremes), and ``delta``
grows with ``s`` from 0. Optima: ``b_k = heterogeneity * u_k``, ``u_k`` uniform on the unit
sphere.

Non-convex clients (FedProx's ``grad^2 F_k >= -L_minus I``): with ``negative_curvature = c > 0``
the smallest eigenvalue of every client's own ``A_k'`` is ``-c`` instead of ``mu``, so
``lambda_min(A_k) >= (1 - s) mu - s c`` (``-c`` exactly at ``s = 1``); ``curvature_floor`` is
the exact ``L_minus = max(0, -min_k lambda_min(A_k))``. ``F`` must stay bounded below: every
drawn ``Abar`` must be positive definite (always so when ``s c < (1 - s) mu``), else the draw is
refused. A non-convex ``F_k`` has no minimum (``F_k* = -inf``).

``B`` problems are drawn at once, problem ``b`` from its own seed only
(:mod:`~.seeding`). The noise of a query is counter-based (:mod:`~.counter_random`), keyed
by the caller's per-client key and a counter (the global local-step index), so a run draws
the same numbers however many runs share its batch and whichever clients are queried with it.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np
import torch

from .._torch import TENSOR_CONSTRAINTS, resolve_device, resolve_dtype
from .._validation import ArrayLike, Constraint, Interval, NoneOK, require, validate_params
from .client_quadratics import ClientQuadratics
from .counter_random import counter_hash, counter_uniform
from .quadratics import _haar_rotation
from .seeding import BATCH_CONSTRAINTS, problem_seeds, stream

__all__ = ["HeterogeneousQuadratics", "QuadraticOracle", "gaussian_noise", "matvec", "make_heterogeneous_quadratics", "client_weights",
           "per_client"]


def gaussian_noise(keys: np.ndarray, counter: int, d: int, dtype, device) -> torch.Tensor:
    """The standard normals of :func:`~.counter_random.counter_normal` ``(keys, counter, d)``,
    ``keys.shape + (d,)``: its uniforms, with Box-Muller's logarithm and cosine taken in torch
    (half the time of NumPy's here; the values agree to within a rounding of those functions)."""
    keys = np.asarray(keys, dtype=np.uint64)
    radius = torch.from_numpy(counter_uniform(counter_hash(keys, 1), counter, d)).neg_().log1p_().mul_(-2.0).sqrt_()
    angle = torch.from_numpy(counter_uniform(counter_hash(keys, 2), counter, d)).mul_(2.0 * np.pi).cos_()
    return radius.mul_(angle).to(dtype=dtype, device=device)


def matvec(matrices: torch.Tensor, vectors: torch.Tensor) -> torch.Tensor:
    """``matrices @ vectors`` for stacks of small matrices ``(..., d, d)`` and vectors ``(..., d)``.
    On the CPU through NumPy's stacked ``matmul`` on the tensors' memory (no copy): at the
    catalogue's sizes (100 x 20 matrices of 20 x 20) it runs 3-4x faster than torch's batched
    GEMM path for tiny matrices (``benchmarks/bench_catalogue.py``, docs/performance.md)."""
    if matrices.device.type != "cpu":
        return torch.matmul(matrices, vectors[..., None])[..., 0]
    with np.errstate(all="ignore"):  # a diverged run's inf/NaN is its outcome, as in torch
        return torch.from_numpy(np.matmul(matrices.numpy(), vectors.numpy()[..., None])[..., 0])


class QuadraticOracle(NamedTuple):
    """The gradient oracle of some clients of every problem, gathered once per round:
    ``hessians`` ``(B, S, d, d)``, ``optima`` ``(B, S, d)``, ``noise_std`` ``(B, S)`` (sigma_k)."""

    hessians: torch.Tensor
    optima: torch.Tensor
    noise_std: torch.Tensor

    def gradient(self, models: torch.Tensor) -> torch.Tensor:
        """``grad F_k(w) = A_k (w - b_k)`` of each client's model ``(B, S, d)``."""
        return matvec(self.hessians, models - self.optima)

    def stochastic_gradient(self, models: torch.Tensor, keys: np.ndarray, counter: int):
        """``g = grad F_k(w) + (sigma_k / sqrt(d)) z`` with ``z`` the standard normals of
        ``(keys[b, s], counter)``, and ``E[||g||^2 | w] = ||grad F_k(w)||^2 + sigma_k^2``
        (exact: the noise is independent of ``w`` with mean 0), ``(B, S, d)`` and ``(B, S)``."""
        exact = self.gradient(models)
        if not bool(self.noise_std.any()):  # sigma_k = 0: g is the gradient (exact + 0 z), no normals drawn
            return exact, exact.square().sum(-1)
        d = models.shape[-1]
        normals = gaussian_noise(keys, counter, d, models.dtype, models.device)
        gradient = exact + (self.noise_std / np.sqrt(d))[..., None] * normals
        return gradient, exact.square().sum(-1) + self.noise_std.square()


@dataclass(frozen=True, eq=False)
class HeterogeneousQuadratics(ClientQuadratics):
    """A batch of ``B`` heterogeneous quadratic problems and their exact constants.

    ``hessians`` ``(B, N, d, d)``, ``optima`` ``(B, N, d)`` (the ``b_k``) are the tensors the
    algorithms use; ``*_exact`` the float64 arrays every constant is computed from.
    ``weights`` ``(N,)`` are the ``p_k``, ``noise_std`` ``(N,)`` the ``sigma_k``.
    """

    hessians: torch.Tensor
    optima: torch.Tensor
    hessians_exact: np.ndarray
    optima_exact: np.ndarray
    weights: np.ndarray
    noise_std: np.ndarray
    seeds: tuple[int, ...]

    # shapes, device, L and mu: ClientQuadratics

    @cached_property
    def global_hessian(self) -> np.ndarray:
        """``Abar = sum_k p_k A_k``, the Hessian of ``F``, ``(B, d, d)``."""
        return np.einsum("n,bnij->bij", self.weights, self.hessians_exact)

    @cached_property
    def hessian_dissimilarity(self) -> np.ndarray:
        """SCAFFOLD's ``delta = max_k ||A_k - Abar||_2`` (spectral norm), ``(B,)``: the smallest
        delta with ``||grad^2 F_k(w) - grad^2 F(w)|| <= delta`` everywhere."""
        difference = self.hessians_exact - self.global_hessian[:, None]
        return np.abs(np.linalg.eigvalsh(difference)).max(axis=(1, 2))

    # -- optimum ---------------------------------------------------------------------------------------
    @cached_property
    def minimizer(self) -> np.ndarray:
        """``w* = Abar^-1 sum_k p_k A_k b_k``, ``(B, d)``."""
        moment = np.einsum("n,bnij,bnj->bi", self.weights, self.hessians_exact, self.optima_exact)
        return np.linalg.solve(self.global_hessian, moment[..., None])[..., 0]

    @cached_property
    def min_value(self) -> np.ndarray:
        """``F* = F(w*)``, ``(B,)``."""
        return self.objective(self.minimizer[:, None])[:, 0]

    @property
    def client_min_values(self) -> np.ndarray:
        """``F_k* = min F_k = F_k(b_k) = 0``, ``(B, N)``; ``-inf`` for a non-convex client."""
        return np.where(self.client_strong_convexity >= 0, 0.0, -np.inf)

    @property
    def heterogeneity(self) -> np.ndarray:
        """FedAvg's ``Gamma = F* - sum_k p_k F_k*`` (>= 0), ``(B,)``."""
        return self.min_value - self.client_min_values @ self.weights

    @cached_property
    def optimum_gradients(self) -> np.ndarray:
        """``grad F_k(w*)``, ``(B, N, d)`` (they sum to 0 with weights ``p_k``)."""
        return self.client_gradients(self.minimizer[:, None])[:, 0]

    @property
    def optimum_gradient_variance(self) -> np.ndarray:
        """Local GD's ``sigma^2 = sum_k p_k ||grad F_k(x*)||^2`` (``(1/M) sum_m`` for uniform
        weights, as Khaled et al. define it), ``(B,)``."""
        return np.square(self.optimum_gradients).sum(-1) @ self.weights

    # -- SCAFFOLD's (G, B) gradient dissimilarity ---------------------------------------------------
    @cached_property
    def dissimilarity_form(self):
        """With ``u = w - w*``, ``c_k = grad F_k(w*)`` and ``z = Abar u`` (``grad F(w) = z``):
        ``sum_k p_k ||grad F_k(w)||^2 = z^T Q z + 2 v^T z + s``, where
        ``Q = Abar^-1 (sum p_k A_k^2) Abar^-1``, ``v = Abar^-1 sum p_k A_k c_k``,
        ``s = sum p_k ||c_k||^2``. Returns the eigenvalues ``nu`` of ``Q`` (ascending, ``(B, d)``),
        the coordinates of ``v`` in its eigenvectors ``(B, d)``, ``s`` ``(B,)`` and the eigenvectors
        (columns, ``(B, d, d)``). ``Q >= I`` (``E_k ||grad F_k||^2 >= ||grad f||^2``)."""
        inverse = np.linalg.inv(self.global_hessian)
        second = np.einsum("n,bnij,bnjk->bik", self.weights, self.hessians_exact, self.hessians_exact)
        form = inverse @ second @ inverse
        form = 0.5 * (form + np.swapaxes(form, -1, -2))
        linear = np.einsum("bij,n,bnjk,bnk->bi", inverse, self.weights, self.hessians_exact, self.optimum_gradients)
        nu, vectors = np.linalg.eigh(form)
        return nu, np.einsum("bij,bi->bj", vectors, linear), self.optimum_gradient_variance, vectors

    def dissimilarity_G(self, B) -> np.ndarray:
        """The smallest ``G`` with ``sum_k p_k ||grad F_k(w)||^2 <= G^2 + B^2 ||grad F(w)||^2`` for
        every ``w`` (SCAFFOLD's (G, B)-BGD; its ``(1/N) sum_i`` when the weights are uniform), at
        the given ``B``, ``(B_problems,)``; ``inf`` where no G works.

        Derivation: in ``z = grad F(w)`` the condition is ``z^T (B^2 I - Q) z - 2 v^T z + G^2 - s
        >= 0`` for all ``z`` (:attr:`dissimilarity_form`). It needs ``B^2 >= nu_max``; for
        ``B^2 > nu_max`` the minimum over ``z`` gives ``G^2 = s + sum_j v_j^2 / (B^2 - nu_j)``.
        At ``B^2 = nu_max`` G is finite only if ``v`` has no component on ``nu_max``'s eigenvectors."""
        nu, v, s, _ = self.dissimilarity_form
        b2 = np.asarray(B, dtype=float) ** 2
        gap = b2[..., None] - nu
        scale = np.maximum(nu[..., -1:], 1.0)
        tolerance = 1e-12 * scale
        feasible = np.all(gap > -tolerance, axis=-1)
        tight = np.abs(gap) <= tolerance
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(tight, np.where(np.abs(v) <= 1e-12 * np.sqrt(scale), 0.0, np.inf),
                             v**2 / np.where(tight | (gap <= 0), 1.0, gap))
        return np.where(feasible, np.sqrt(s + terms.sum(-1)), np.inf)

    def dissimilarity_B(self, G) -> np.ndarray:
        """The smallest ``B`` with the inequality of :meth:`dissimilarity_G` for every ``w`` at the
        given ``G``, ``(B_problems,)``; ``inf`` where no B works (``G^2 < s``, the value at w*).

        For ``G^2 > s`` the form is non-negative iff ``B^2 I - Q - v v^T / (G^2 - s)`` is positive
        semidefinite (Schur complement), so ``B^2 = lambda_max(Q + v v^T / (G^2 - s))``: in ``Q``'s
        eigenbasis, the largest root ``x > nu_max`` of the secular equation
        ``1 = sum_j v_j^2 / ((G^2 - s)(x - nu_j))`` (or ``nu_max`` when ``v = 0``), found by bisection
        on its monotone left side. At ``G^2 = s`` it is ``sqrt(nu_max)`` if ``v = 0``, else inf."""
        nu, v, s, _ = self.dissimilarity_form
        excess = np.asarray(G, dtype=float) ** 2 - s
        weight = v**2 / np.where(excess > 0, excess, np.inf)[..., None]  # (B, d)
        top = nu[..., -1]
        low, high = top.copy(), top + weight.sum(-1)  # the root lies in (nu_max, nu_max + sum w_j]
        for _ in range(200):
            middle = 0.5 * (low + high)
            with np.errstate(divide="ignore", invalid="ignore"):
                value = np.sum(np.where(weight > 0, weight / (middle[..., None] - nu), 0.0), axis=-1)
            above = value > 1.0
            low, high = np.where(above, middle, low), np.where(above, high, middle)
        b2 = np.where(weight.sum(-1) > 0, high, top)
        zero_v = np.all(np.abs(v) <= 1e-12 * np.sqrt(np.maximum(top, 1.0))[..., None], axis=-1)
        at_s = np.isclose(excess, 0.0, rtol=0.0, atol=1e-12 * np.maximum(s, 1e-300))
        return np.where(excess > 0, np.sqrt(b2), np.where(at_s & zero_v, np.sqrt(top), np.inf))

    # -- exact functions of points w of shape (B, *S, d) -------------------------------------------------
    def _points(self, w) -> np.ndarray:
        w = np.asarray(w.detach().cpu().double() if isinstance(w, torch.Tensor) else w, dtype=float)
        require(w.ndim >= 2 and w.shape[0] == self.batch_size and w.shape[-1] == self.d,
                f"Points must have shape (B, ..., d) = ({self.batch_size}, ..., {self.d}); got {w.shape}.")
        return w

    def client_gradients(self, w) -> np.ndarray:
        """``grad F_k(w) = A_k (w - b_k)`` for every client, ``(B, *S, N, d)``."""
        w = self._points(w)
        flat = w.reshape(self.batch_size, -1, self.d)
        diff = flat[:, :, None, :] - self.optima_exact[:, None]
        gradients = np.einsum("bnij,bpnj->bpni", self.hessians_exact, diff)
        return gradients.reshape(*w.shape[:-1], self.clients, self.d)

    def client_objectives(self, w) -> np.ndarray:
        """``F_k(w)`` for every client, ``(B, *S, N)``."""
        w = self._points(w)
        diff = w[..., None, :] - self.optima_exact.reshape(self.batch_size, *([1] * (w.ndim - 2)), self.clients, self.d)
        return 0.5 * np.sum(diff * self.client_gradients(w), axis=-1)

    def objective(self, w) -> np.ndarray:
        """``F(w) = sum_k p_k F_k(w)``, ``(B, *S)``."""
        return self.client_objectives(w) @ self.weights

    def gradient(self, w) -> np.ndarray:
        """``grad F(w) = Abar (w - w*)``, ``(B, *S, d)``."""
        return np.einsum("...nd,n->...d", self.client_gradients(w), self.weights)

    def objective_gap(self, w) -> np.ndarray:
        """``F(w) - F* = 1/2 (w - w*)^T Abar (w - w*)``, ``(B, *S)`` (exact, no cancellation)."""
        w = self._points(w)
        u = (w.reshape(self.batch_size, -1, self.d) - self.minimizer[:, None])
        gap = 0.5 * np.einsum("bpi,bij,bpj->bp", u, self.global_hessian, u)
        return gap.reshape(w.shape[:-1])

    def distance_sq(self, w) -> np.ndarray:
        """``||w - w*||^2``, ``(B, *S)``."""
        w = self._points(w)
        u = w.reshape(self.batch_size, -1, self.d) - self.minimizer[:, None]
        return np.square(u).sum(-1).reshape(w.shape[:-1])

    def local_dissimilarity(self, w) -> np.ndarray:
        """FedProx's ``B(w) = sqrt(sum_k p_k ||grad F_k(w)||^2 / ||grad F(w)||^2)`` (Definition 3;
        ``E_k`` over ``k ~ p_k``), ``(B, *S)``; ``inf`` at a stationary point."""
        gradients = self.client_gradients(w)
        spread = np.square(gradients).sum(-1) @ self.weights
        u = self._points(w) - self.minimizer.reshape(self.batch_size, *([1] * (np.ndim(w) - 2)), self.d)
        mean = np.square(np.einsum("bij,b...j->b...i", self.global_hessian, u)).sum(-1)  # ||Abar (w - w*)||^2
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(mean > 0, np.sqrt(spread / np.where(mean > 0, mean, 1.0)), np.inf)

    def proximal_map(self, mu) -> tuple[torch.Tensor, torch.Tensor]:
        """FedProx's exact local solution ``argmin_w h_k(w; w^t) = F_k(w) + (mu/2)||w - w^t||^2
        = (A_k + mu I)^-1 (A_k b_k + mu w^t) = P_k w^t + q_k`` as the pair ``P_k = mu (A_k + mu
        I)^-1`` ``(B, N, d, d)``, ``q_k = (A_k + mu I)^-1 A_k b_k`` ``(B, N, d)``, computed once in
        float64 (``mu`` one value or one per problem; ``A_k + mu I`` must be positive definite,
        ``mu > -lambda_min(A_k)``)."""
        mu = np.broadcast_to(np.asarray(mu, dtype=float), (self.batch_size,))[:, None, None, None]
        shifted = self.hessians_exact + mu * np.eye(self.d)
        operator = mu * np.linalg.inv(shifted)
        offset = np.linalg.solve(shifted, np.einsum("bnij,bnj->bni", self.hessians_exact, self.optima_exact)[..., None])
        return (torch.as_tensor(operator, dtype=self.dtype, device=self.device),
                torch.as_tensor(offset[..., 0], dtype=self.dtype, device=self.device))

    # -- batched oracle -------------------------------------------------------------------------------------
    def oracle(self, clients: torch.Tensor | None = None) -> QuadraticOracle:
        """The oracle of every client (``clients`` None) or of the ``(B, S)`` client positions
        ``clients`` (each row its own, repeats allowed), gathered once."""
        noise = torch.as_tensor(self.noise_std, dtype=self.dtype, device=self.device)
        if clients is None:
            return QuadraticOracle(self.hessians, self.optima, noise.expand(self.batch_size, self.clients))
        rows = torch.arange(self.batch_size, device=self.device)[:, None]
        return QuadraticOracle(self.hessians[rows, clients], self.optima[rows, clients], noise[clients])

    def subset(self, index) -> "HeterogeneousQuadratics":
        """The problems at ``index`` (batch positions) as a new batch."""
        index = list(index)
        position = torch.as_tensor(index, device=self.device)
        return HeterogeneousQuadratics(
            hessians=self.hessians.index_select(0, position), optima=self.optima.index_select(0, position),
            hessians_exact=self.hessians_exact[index], optima_exact=self.optima_exact[index], weights=self.weights,
            noise_std=self.noise_std, seeds=tuple(self.seeds[i] for i in index))


def per_client(value, clients: int, name: str) -> np.ndarray:
    """One value for every client, or one per client, as a float64 ``(N,)`` array."""
    array = np.asarray(value, dtype=float)
    array = np.full(clients, float(array)) if array.ndim == 0 else array
    require(array.shape == (clients,), f"The {name!r} parameter must be one value or {clients} (one per client); "
            f"got shape {array.shape}.")
    return array.copy()


def client_weights(weights, clients: int) -> np.ndarray:
    """The clients' ``p_k``: ``1/N`` each when None, else positive and summing to 1 (to 1e-9)."""
    if weights is None:
        return np.full(clients, 1.0 / clients)
    p = per_client(weights, clients, "weights")
    require(bool(np.all(p > 0)) and abs(p.sum() - 1.0) <= 1e-9,
            f"The 'weights' parameter must be {clients} positive values summing to 1 (within 1e-9). "
            f"Got values summing to {p.sum()!r} (smallest {p.min()!r}) instead.")
    return p


def _draw_problem(rng: np.random.Generator, clients: int, eigenvalues: np.ndarray, spread: float,
                  heterogeneity: float, own_eigenvalues: np.ndarray | None = None):
    """One problem's Hessians and optima (float64): the shared Hessian first, then each client's
    (with the spectrum ``own_eigenvalues``, default ``eigenvalues``)."""
    d = eigenvalues.size

    def hessian(spectrum):
        rotation = _haar_rotation(rng, d)
        matrix = (rotation * spectrum) @ rotation.T
        return 0.5 * (matrix + matrix.T)

    shared = hessian(eigenvalues)
    own = np.stack([hessian(eigenvalues if own_eigenvalues is None else own_eigenvalues) for _ in range(clients)])
    directions = rng.standard_normal((clients, d))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    return (1.0 - spread) * shared + spread * own, heterogeneity * directions


_PER_CLIENT = Constraint(lambda v: ArrayLike.is_satisfied_by(v) and np.ndim(v) <= 1 and not isinstance(v, bool)
                         and bool(np.all(np.asarray(v, dtype=float) >= 0)),
                         "a non-negative float or one per client")


@validate_params({
    "clients": [Interval(Integral, 1, None, closed="left")],
    "d": [Interval(Integral, 1, None, closed="left")],
    "strong_convexity": [Interval(Real, 0, None, closed="neither")],
    "smoothness": [Interval(Real, 0, None, closed="neither")],
    "heterogeneity": [Interval(Real, 0, None, closed="left")],
    "hessian_spread": [Interval(Real, 0, 1, closed="both")],
    "negative_curvature": [Interval(Real, 0, None, closed="left")],
    "noise_std": [_PER_CLIENT],
    "weights": [NoneOK, ArrayLike],
    **BATCH_CONSTRAINTS,
    **TENSOR_CONSTRAINTS,
})
def make_heterogeneous_quadratics(clients: int = 10, d: int = 10, *, strong_convexity: float = 1.0,
                                  smoothness: float = 10.0, heterogeneity: float = 1.0, hessian_spread: float = 0.5,
                                  negative_curvature: float = 0.0, noise_std=0.1, weights=None, batch_size: int = 1, seed=0, dtype: str = "float64",
                                  device: str = "cpu") -> HeterogeneousQuadratics:
    """Draw ``batch_size`` heterogeneous quadratic problems (see the module docstring).

    Parameters
    ----------
    clients, d : N clients, dimension.
    strong_convexity, smoothness : mu <= L, the ends of every ``A_k``'s spectrum (``d = 1``
        needs ``mu = L``).
    heterogeneity : ``||b_k||``, the distance of every client's optimum from the origin.
    hessian_spread : s in [0, 1], the weight of each client's own Hessian (0: one shared
        Hessian, delta = 0).
    negative_curvature : c >= 0; c > 0 gives each client's own Hessian the eigenvalue -c in
        place of mu (non-convex clients once s c > (1 - s) mu; module docstring).
    noise_std : sigma_k >= 0, the gradient noise's root mean square norm, one value or one per client.
    weights : the ``p_k`` (positive, summing to 1); None: ``1/N`` each.
    batch_size, seed, dtype, device : as for :func:`~.quadratics.make_quadratic_federation`.
    """
    require(strong_convexity <= smoothness, f"The 'strong_convexity' parameter of make_heterogeneous_quadratics must "
            f"be at most 'smoothness' (mu <= L). Got mu={strong_convexity!r} > L={smoothness!r} instead.")
    require(d > 1 or strong_convexity == smoothness,
            f"With d=1 a Hessian has one eigenvalue: mu={strong_convexity!r} and L={smoothness!r} must be equal.")
    noise = per_client(noise_std, clients, "noise_std")
    p = client_weights(weights, clients)
    seeds = problem_seeds(seed, batch_size)
    eigenvalues = np.geomspace(float(strong_convexity), float(smoothness), d)
    own = None if negative_curvature == 0 else np.r_[-float(negative_curvature), eigenvalues[1:]]
    drawn = [_draw_problem(stream(s, 0), clients, eigenvalues, float(hessian_spread), float(heterogeneity), own)
             for s in seeds]  # set-up, once per problem: not a hot path
    hessians, optima = (np.stack(parts) for parts in zip(*drawn))
    if own is not None:
        floor = np.linalg.eigvalsh(np.einsum("n,bnij->bij", p, hessians))[:, 0]
        require(bool(np.all(floor > 0)), f"With negative_curvature={negative_curvature!r} and hessian_spread="
                f"{hessian_spread!r} the objective F is unbounded below for seed {seeds[int(np.argmin(floor))]} "
                f"(lambda_min(sum_k p_k A_k) = {floor.min():.3g}): lower either, or raise strong_convexity.")
    torch_device, torch_dtype = resolve_device(device), resolve_dtype(dtype)
    return HeterogeneousQuadratics(
        hessians=torch.as_tensor(hessians, dtype=torch_dtype, device=torch_device),
        optima=torch.as_tensor(optima, dtype=torch_dtype, device=torch_device),
        hessians_exact=hessians, optima_exact=optima, weights=p, noise_std=noise, seeds=seeds)
