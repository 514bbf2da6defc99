"""Per-client stochastic quadratics with every constant exact (CFL-MGD, FedCluster, DSC).

Client ``k`` of ``N`` holds the per-sample loss

    f(w; xi) = 1/2 (w - xi)^T A_k (w - xi),        xi ~ N(b_k, tau_k^2 I_d),

so, with ``u = w - b_k``, exactly:

* client population loss   ``f_k(w) = 1/2 u^T A_k u + 1/2 tau_k^2 tr(A_k)``
* gradients                ``grad f_k(w) = A_k u``, per sample ``A_k (w - xi)``
* per-sample smoothness    ``lambda_max(A_k)`` for every xi (FedCluster's A2 asks it per
  sample); strong convexity ``lambda_min(A_k)``
* gradient variance        ``E||A_k (w - xi) - A_k u||^2 = tau_k^2 ||A_k||_F^2`` (constant in w)
* loss variance            ``Var f(w; xi) = tau_k^2 u^T A_k^2 u + 1/2 tau_k^4 ||A_k||_F^2``
  (``w - xi ~ N(u, tau^2 I)``; Gaussian quadratic-form moments)
* the global objective ``f = sum_k p_k f_k`` has Hessian ``A = sum_k p_k A_k``, minimiser
  ``A^-1 sum_k p_k A_k b_k`` and minimum value in closed form.

Planted clusters: the centers ``c_1..c_K`` are ``Delta/sqrt(2)`` times ``K`` orthonormal
vectors (a Haar-random rotation), so every pair is at distance exactly ``Delta``; client
``k``'s optimum is ``b_k = c_{cluster(k)} + spread * u_k`` with ``u_k`` uniform on the
unit sphere. Hessians have eigenvalues ``geomspace(mu, L, d)`` under a Haar-random
rotation, drawn once (``shared``), per cluster or per client.

``B`` independent problems are drawn at once; problem ``b`` depends only on its own seed.
Samples come from counter-based normals keyed by ``(seed, draw index)``, so any step of
any algorithm draws the same fresh samples however the problems are batched.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from numbers import Integral, Real

import numpy as np
import torch

from .._torch import TENSOR_CONSTRAINTS, resolve_device, resolve_dtype
from .._validation import (
    ArrayLike,
    Constraint,
    Interval,
    NoneOK,
    Options,
    require,
    validate_params,
)
from .client_quadratics import ClientQuadratics
from .counter_random import counter_hash, counter_normal
from .mixed_linear_regression import cluster_sizes
from .seeding import BATCH_CONSTRAINTS, problem_seeds, stream

__all__ = ["QuadraticFederation", "make_quadratic_federation", "label_mixture", "HESSIAN_MODES"]

HESSIAN_MODES = ("shared", "cluster", "client")
_STREAM_SAMPLES = 7


@dataclass(frozen=True, eq=False)
class QuadraticFederation(ClientQuadratics):
    """A batch of ``B`` per-client quadratic problems and their exact constants.

    ``hessians`` ``(B, N, d, d)`` and ``optima`` ``(B, N, d)`` are the tensors algorithms
    use; the ``*_exact`` arrays are the float64 values every constant is computed from.
    ``membership[k]`` is client ``k``'s planted cluster, ``weights[k]`` its ``p_k``.
    """

    hessians: torch.Tensor
    optima: torch.Tensor
    hessians_exact: np.ndarray
    optima_exact: np.ndarray
    centers_exact: np.ndarray
    membership: np.ndarray
    weights: np.ndarray
    noise_std: np.ndarray
    seeds: tuple[int, ...]

    # shapes, device, L and mu: ClientQuadratics
    @property
    def k(self) -> int:
        return self.centers_exact.shape[1]

    @cached_property
    def separation(self) -> np.ndarray:
        """``Delta = min_{j != j'} ||c_j - c_j'||`` per problem, ``(B,)``; inf if K = 1."""
        diff = self.centers_exact[:, :, None, :] - self.centers_exact[:, None, :, :]
        distances = np.linalg.norm(diff, axis=-1) + np.where(np.eye(self.k, dtype=bool), np.inf, 0.0)
        return distances.min(axis=(1, 2))

    @property
    def gradient_variance(self) -> np.ndarray:
        """``E||grad f(w; xi) - grad f_k(w)||^2 = tau_k^2 ||A_k||_F^2`` for every w, ``(B, N)``."""
        return np.square(self.noise_std) * np.square(self.hessians_exact).sum(axis=(-2, -1))

    def loss_variance_bound(self, radius) -> np.ndarray:
        """``sup_{||w - b_k|| <= radius} Var f(w; xi) = tau_k^2 radius^2 lambda_max(A_k)^2
        + 1/2 tau_k^4 ||A_k||_F^2``, ``(B, N)``."""
        tau2 = np.square(self.noise_std)
        frobenius2 = np.square(self.hessians_exact).sum(axis=(-2, -1))
        return tau2 * float(radius) ** 2 * np.square(self.client_smoothness) + 0.5 * tau2**2 * frobenius2

    @property
    def cluster_weights(self) -> np.ndarray:
        """``q_j = sum_{k in cluster j} p_k``, ``(K,)``."""
        return np.bincount(self.membership, weights=self.weights, minlength=self.k)

    def _weighted(self, groups: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
        """Hessian and minimiser of ``sum_{k in group} p_k f_k / q_group`` for each group."""
        indicator = np.eye(count)[groups] * self.weights[:, None]  # (N, G)
        totals = indicator.sum(axis=0)
        hessian = np.einsum("ng,bnij->bgij", indicator, self.hessians_exact) / totals[:, None, None]
        moment = np.einsum("ng,bnij,bnj->bgi", indicator, self.hessians_exact, self.optima_exact) / totals[:, None]
        return hessian, np.linalg.solve(hessian, moment[..., None])[..., 0]

    @cached_property
    def cluster_hessians(self) -> np.ndarray:
        """Hessian of each planted cluster's objective ``sum_{k in j} p_k f_k / q_j``, ``(B, K, d, d)``."""
        return self._weighted(self.membership, self.k)[0]

    @cached_property
    def cluster_minimizers(self) -> np.ndarray:
        """Minimiser of each planted cluster's objective, ``(B, K, d)`` (the centers when the
        cluster's clients share one distribution)."""
        return self._weighted(self.membership, self.k)[1]

    @cached_property
    def global_hessian(self) -> np.ndarray:
        """``A = sum_k p_k A_k``, ``(B, d, d)``."""
        return self._weighted(np.zeros(self.clients, dtype=int), 1)[0][:, 0]

    @cached_property
    def global_minimizer(self) -> np.ndarray:
        """``argmin f = A^-1 sum_k p_k A_k b_k``, ``(B, d)``."""
        return self._weighted(np.zeros(self.clients, dtype=int), 1)[1][:, 0]

    @cached_property
    def global_min_value(self) -> np.ndarray:
        """``inf f = f(argmin f)``, ``(B,)``."""
        return self.global_loss(self.global_minimizer[:, None, :])[:, 0]

    # -- exact functions of points w of shape (B, *S, d) -------------------------------------
    def _client_terms(self, w):
        w = np.asarray(w, dtype=float)
        require(w.ndim >= 2 and w.shape[0] == self.batch_size and w.shape[-1] == self.d,
                f"Points must have shape (B, ..., d) = ({self.batch_size}, ..., {self.d}); got {w.shape}.")
        flat = w.reshape(self.batch_size, -1, self.d)
        diff = flat[:, :, None, :] - self.optima_exact[:, None, :, :]  # (B, P, N, d)
        gradient = np.einsum("bnij,bpnj->bpni", self.hessians_exact, diff)
        return w.shape[:-1], diff, gradient

    def client_losses(self, w) -> np.ndarray:
        """``f_k(w)`` for every client, ``(B, *S, N)``."""
        shape, diff, gradient = self._client_terms(w)
        traces = np.trace(self.hessians_exact, axis1=-2, axis2=-1)  # (B, N)
        losses = 0.5 * np.sum(diff * gradient, axis=-1) + 0.5 * np.square(self.noise_std) * traces[:, None, :]
        return losses.reshape(*shape, self.clients)

    def client_gradients(self, w) -> np.ndarray:
        """``grad f_k(w) = A_k (w - b_k)`` for every client, ``(B, *S, N, d)``."""
        shape, _, gradient = self._client_terms(w)
        return gradient.reshape(*shape, self.clients, self.d)

    def global_loss(self, w) -> np.ndarray:
        """``f(w) = sum_k p_k f_k(w)``, ``(B, *S)``."""
        return self.client_losses(w) @ self.weights

    def global_gradient(self, w) -> np.ndarray:
        """``grad f(w)``, ``(B, *S, d)``."""
        return np.einsum("...nd,n->...d", self.client_gradients(w), self.weights)

    # -- samples and batched kernels ----------------------------------------------------------
    def draw(self, n: int, draw_index: int, index=None) -> torch.Tensor:
        """``n`` fresh samples ``xi`` per client, ``(B, N, n, d)`` on the problem's device.

        Draw ``draw_index`` of problem ``b`` depends only on ``(seeds[b], draw_index)``;
        ``index`` restricts the draw to some problems of the batch.
        """
        require(isinstance(n, Integral) and n >= 1, f"The 'n' parameter of draw must be an int >= 1; got {n!r}.")
        require(isinstance(draw_index, Integral) and draw_index >= 0,
                f"The 'draw_index' parameter of draw must be an int >= 0; got {draw_index!r}.")
        index = list(range(self.batch_size)) if index is None else list(index)
        keys = counter_hash(np.array([self.seeds[b] for b in index], dtype=np.uint64), _STREAM_SAMPLES)
        normals = counter_normal(keys, int(draw_index), self.clients * n * self.d).reshape(
            len(index), self.clients, n, self.d)
        samples = self.optima_exact[index][:, :, None, :] + self.noise_std[None, :, None, None] * normals
        return torch.as_tensor(samples, dtype=self.dtype, device=self.device)

    def _hessians_of(self, samples: torch.Tensor, index, clients=None) -> torch.Tensor:
        """The Hessians of the problems the samples belong to (all, or those at ``index``),
        and of their clients (all, or the ``(B, N')`` positions ``clients``, per row)."""
        hessians = self.hessians if index is None else self.hessians[torch.as_tensor(list(index), device=self.device)]
        width = self.clients if clients is None else clients.shape[1]
        require(samples.dim() == 4 and samples.shape[0] == hessians.shape[0]
                and (samples.shape[1], samples.shape[3]) == (width, self.d)
                and (clients is None or clients.shape[0] == hessians.shape[0]),
                f"Samples must have shape (B, N, n, d) = ({hessians.shape[0]}, {width}, n, {self.d}); "
                f"got {tuple(samples.shape)}.")
        if clients is None:
            return hessians
        rows = torch.arange(hessians.shape[0], device=self.device)[:, None]
        return hessians[rows, clients]

    def sample_losses(self, models: torch.Tensor, samples: torch.Tensor, index=None) -> torch.Tensor:
        """Client ``i``'s empirical loss ``(1/n) sum_l f(w; xi_il)`` of every model:
        models ``(B, C, J, d)``, samples ``(B, N, n, d)`` -> ``(B, N, C, J)`` (``index``: the
        batch positions the rows belong to, as in :meth:`draw`).

        Uses ``(1/n) sum_l f(w; xi_l) = f(w; mean xi) + (1/2n) sum_l (xi_l - mean)^T A (xi_l - mean)``.
        """
        hessians = self._hessians_of(samples, index)
        mean = samples.mean(dim=2)  # (B, N, d)
        diff = models[:, None] - mean[:, :, None, None, :]  # (B, N, C, J, d)
        quadratic = 0.5 * torch.einsum("bncjd,bnde,bncje->bncj", diff, hessians, diff)
        centred = samples - mean[:, :, None, :]
        spread = 0.5 * torch.einsum("bnld,bnde,bnle->bn", centred, hessians, centred) / samples.shape[2]
        return quadratic + spread[:, :, None, None]

    def sample_gradients(self, models: torch.Tensor, samples: torch.Tensor, index=None,
                         clients: torch.Tensor | None = None) -> torch.Tensor:
        """``(1/n) sum_l A_i (w - xi_il) = A_i (w - mean_l xi_il)`` of each client's model:
        models ``(B, N, C, d)``, samples ``(B, N, n, d)`` -> ``(B, N, C, d)``. With ``clients``,
        a ``(B, N')`` long tensor of client positions (each row its own, e.g. FedCluster's
        active cluster), models and samples hold only those clients, ``N'`` instead of ``N``."""
        hessians = self._hessians_of(samples, index, clients)
        diff = models - samples.mean(dim=2)[:, :, None, :]
        return torch.einsum("bnde,bnce->bncd", hessians, diff)

    def population_gradients(self, models: torch.Tensor) -> torch.Tensor:
        """``grad f_k(w) = A_k (w - b_k)`` of every client at each model, in torch:
        models ``(B, C, d)`` -> ``(B, C, N, d)`` (full-gradient methods such as DSC)."""
        require(models.dim() == 3 and models.shape[0] == self.batch_size and models.shape[2] == self.d,
                f"Models must have shape (B, C, d) = ({self.batch_size}, C, {self.d}); got {tuple(models.shape)}.")
        return torch.einsum("bnde,bcne->bcnd", self.hessians, models[:, :, None, :] - self.optima[:, None])

    def subset(self, index) -> "QuadraticFederation":
        """The problems at ``index`` (a sequence of batch positions) as a new batch."""
        index = list(index)
        position = torch.as_tensor(index, device=self.device)
        return QuadraticFederation(
            hessians=self.hessians.index_select(0, position),
            optima=self.optima.index_select(0, position),
            hessians_exact=self.hessians_exact[index],
            optima_exact=self.optima_exact[index],
            centers_exact=self.centers_exact[index],
            membership=self.membership,
            weights=self.weights,
            noise_std=self.noise_std,
            seeds=tuple(self.seeds[i] for i in index),
        )


def _haar_rotation(rng: np.random.Generator, d: int) -> np.ndarray:
    """A Haar-random orthogonal matrix (QR of a Gaussian matrix with the signs fixed)."""
    q, r = np.linalg.qr(rng.standard_normal((d, d)))
    return q * np.sign(np.diag(r))


def _hessian(rng, eigenvalues: np.ndarray) -> np.ndarray:
    rotation = _haar_rotation(rng, eigenvalues.size)
    hessian = (rotation * eigenvalues) @ rotation.T
    return 0.5 * (hessian + hessian.T)


def _draw_problem(rng, membership, k, d, mode, eigenvalues, separation, spread):
    """One problem: cluster centers, per-client Hessians and optima (float64)."""
    clients = membership.size
    centers = separation / np.sqrt(2.0) * _haar_rotation(rng, d)[:, :k].T  # (k, d), pairwise distance Delta
    count = {"shared": 1, "cluster": k, "client": clients}[mode]
    drawn = np.stack([_hessian(rng, eigenvalues) for _ in range(count)])
    owner = {"shared": np.zeros(clients, dtype=int), "cluster": membership, "client": np.arange(clients)}[mode]
    directions = rng.standard_normal((clients, d))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    return centers, drawn[owner], centers[membership] + spread * directions


def _per_client(value, clients: int, name: str, positive: bool) -> np.ndarray:
    array = np.broadcast_to(np.asarray(value, dtype=float), (clients,)) if np.ndim(value) == 0 else np.asarray(
        value, dtype=float)
    require(array.shape == (clients,), f"The {name!r} parameter must be one value or {clients} (one per client); "
            f"got shape {array.shape}.")
    require(bool(np.all(array > 0)) if positive else bool(np.all(array >= 0)),
            f"The {name!r} parameter must hold {'positive' if positive else 'non-negative'} values; got "
            f"{array.tolist()}.")
    return array.copy()


_NOISE = Constraint(lambda v: ArrayLike.is_satisfied_by(v) and np.ndim(v) <= 1 and not isinstance(v, bool),
                    "a non-negative float or one per client")


@validate_params(
    {
        "clients": [Interval(Integral, 1, None, closed="left")],
        "d": [Interval(Integral, 1, None, closed="left")],
        "clusters": [Interval(Integral, 1, None, closed="left")],
        "proportions": [NoneOK, ArrayLike],
        "hessians": [Options(HESSIAN_MODES)],
        "strong_convexity": [Interval(Real, 0, None, closed="neither")],
        "smoothness": [Interval(Real, 0, None, closed="neither")],
        "separation": [Interval(Real, 0, None, closed="neither")],
        "spread": [Interval(Real, 0, None, closed="left")],
        "noise_std": [_NOISE],
        "weights": [NoneOK, ArrayLike],
        **BATCH_CONSTRAINTS,
        **TENSOR_CONSTRAINTS,
    }
)
def make_quadratic_federation(
    clients: int = 20,
    d: int = 10,
    *,
    clusters: int = 2,
    proportions=None,
    hessians: str = "cluster",
    strong_convexity: float = 1.0,
    smoothness: float = 4.0,
    separation: float = 1.0,
    spread: float = 0.0,
    noise_std=0.1,
    weights=None,
    batch_size: int = 1,
    seed=0,
    dtype: str = "float64",
    device: str = "cpu",
) -> QuadraticFederation:
    """Draw ``batch_size`` independent per-client quadratic problems (see the module docstring).

    Parameters
    ----------
    clients, d, clusters : N clients, dimension, planted clusters K (``K <= N``, ``K <= d``).
    proportions : cluster proportions (``p_j * N`` whole numbers); None splits the clients
        equally in contiguous blocks.
    hessians : one Hessian for all clients (``shared``), one per cluster or one per client.
    strong_convexity, smoothness : mu and L, the extreme eigenvalues of every ``A_k``
        (``mu <= L``; ``d = 1`` needs ``mu = L``).
    separation : Delta, the distance between every two cluster centers.
    spread : distance of each client's optimum from its cluster's center.
    noise_std : tau, the sample noise, one value or one per client.
    weights : the clients' ``p_k`` (None: ``1/N`` each).
    batch_size, seed, dtype, device : as for :func:`make_mixed_linear_regression`.
    """
    require(clusters <= clients, f"Each planted cluster needs a client: clusters={clusters} > clients={clients}.")
    require(clusters <= d, f"Cluster centers at equal distances need clusters <= d: got clusters={clusters}, d={d}.")
    require(strong_convexity <= smoothness,
            f"The 'strong_convexity' parameter (mu={strong_convexity}) must not exceed 'smoothness' (L={smoothness}).")
    require(d > 1 or strong_convexity == smoothness,
            f"With d=1 a Hessian has one eigenvalue: mu={strong_convexity} and L={smoothness} must be equal.")
    membership = np.repeat(np.arange(clusters), cluster_sizes(clients, clusters, proportions))
    noise = _per_client(noise_std, clients, "noise_std", positive=False)
    if weights is None:
        client_weights = np.full(clients, 1.0 / clients)
    else:
        client_weights = _per_client(weights, clients, "weights", positive=True)
        require(abs(client_weights.sum() - 1.0) < 1e-9,
                f"The 'weights' parameter must sum to 1; got {client_weights.sum()!r}.")
    seeds = problem_seeds(seed, batch_size)
    eigenvalues = np.geomspace(float(strong_convexity), float(smoothness), d)
    drawn = [_draw_problem(stream(s, 0), membership, clusters, d, hessians, eigenvalues, float(separation),
                           float(spread)) for s in seeds]  # set-up, once per problem: not a hot path
    centers, hessian_arrays, optima = (np.stack(parts) for parts in zip(*drawn))
    torch_device, torch_dtype = resolve_device(device), resolve_dtype(dtype)
    return QuadraticFederation(
        hessians=torch.as_tensor(hessian_arrays, dtype=torch_dtype, device=torch_device),
        optima=torch.as_tensor(optima, dtype=torch_dtype, device=torch_device),
        hessians_exact=hessian_arrays,
        optima_exact=optima,
        centers_exact=centers,
        membership=membership,
        weights=client_weights,
        noise_std=noise,
        seeds=seeds,
    )


@validate_params({
    "labels": [Constraint(lambda p: isinstance(p, QuadraticFederation), "a QuadraticFederation")],
    "label_counts": [ArrayLike],
})
def label_mixture(labels: QuadraticFederation, label_counts) -> QuadraticFederation:
    """Clients holding mixtures of labels: each client of ``labels`` is one label's loss
    ``f_iota``, and client ``k`` with ``C_k^iota`` samples of label ``iota`` holds
    ``f_k = sum_iota (C_k^iota / D_k) f_iota`` (``D_k = sum_iota C_k^iota``), weighted
    ``p_k = D_k / D`` in the global objective (DSC's clients of two labels each).

    ``label_counts`` ``(K, labels)``, non-negative, every client with a sample. The mixture
    has Hessian ``A_k = sum pi_iota A_iota`` and optimum ``A_k^-1 sum pi_iota A_iota b_iota``,
    exactly; labels must be noise-free (a mixture of Gaussians is not one), and when label
    optima differ ``client_losses`` omit a constant per client (gaps ``f(w) - inf f`` stay exact).
    """
    counts = np.asarray(label_counts, dtype=float)
    require(counts.ndim == 2 and counts.shape[1] == labels.clients and np.all(counts >= 0)
            and np.all(counts.sum(1) > 0),
            f"The 'label_counts' parameter must be (K, {labels.clients}) non-negative counts with a sample per "
            f"client; got shape {counts.shape}.")
    require(not np.any(labels.noise_std), "label_mixture needs noise-free labels (noise_std = 0).")
    mixing = counts / counts.sum(1, keepdims=True)  # (K, labels)
    hessians = np.einsum("kl,blij->bkij", mixing, labels.hessians_exact)
    moment = np.einsum("kl,blij,blj->bki", mixing, labels.hessians_exact, labels.optima_exact)
    optima = np.linalg.solve(hessians, moment[..., None])[..., 0]
    return QuadraticFederation(
        hessians=torch.as_tensor(hessians, dtype=labels.dtype, device=labels.device),
        optima=torch.as_tensor(optima, dtype=labels.dtype, device=labels.device),
        hessians_exact=hessians,
        optima_exact=optima,
        centers_exact=labels.centers_exact,
        membership=counts.argmax(1),
        weights=counts.sum(1) / counts.sum(),
        noise_std=np.zeros(len(counts)),
        seeds=labels.seeds,
    )
