"""Linear regression on finite device data sets, every constant of FedCluster's Theorem 1 exact.

Device ``k`` of ``N`` holds ``n_k`` points ``(x_ki, y_ki)`` and the per-sample loss

    f(w; xi) = 1/2 (x^T w - y)^2,        xi uniform on the device's data

(Alg. 1 samples a local data point uniformly; ``p_k = n_k / sum_l n_l``, Sec. III-A). The
devices' distributions differ: cluster ``c`` has a design covariance ``Sigma_c`` and each
device its own optimum ``theta_k`` (the Hessians and optima of a
:func:`~cflbounds.synthetic.quadratics.make_quadratic_federation` draw: eigenvalues
``geomspace(design_min, design_max, d)`` under a Haar rotation, per cluster, per device or
shared; ``theta_k = c_cluster(k) + spread u_k`` with the cluster centers ``separation``
apart). Inputs are bounded: ``x = Sigma^(1/2) z`` with ``z`` uniform on the sphere of radius
``sqrt(d)`` (``E z z^T = I``), so ``||x||^2 <= d lambda_max(Sigma)``; ``y = x^T theta_k + noise_std eps``,
``eps`` standard normal. Because each data set is finite, everything is a finite sum, exactly:

* ``f_k(w) = 1/2 w^T A_k w - c_k^T w + 1/2 e_k``, ``A_k = X^T X / n_k``, ``c_k = X^T y / n_k``:
  gradient ``A_k (w - b_k)`` with ``b_k = A_k^-1 c_k`` (the device's least squares), so the
  full-gradient problem is a :class:`QuadraticFederation` (:meth:`DeviceRegression.as_quadratic_federation`),
  up to one constant per device in the losses;
* per-sample smoothness ``L_k = max_i ||x_ki||^2`` (the Hessian ``x x^T`` has that norm);
  per-sample losses are ``>= 0``; ``inf f`` by least squares;
* the local gradient variance (Assumption 2.2) and second moment (Assumption 2.3)

      s_k^2(w) = (1/n_k) sum_i ||(x_i x_i^T - A_k) w - (x_i y_i - c_k)||^2,
      E||grad f(w; xi)||^2 = (1/n_k) sum_i ||x_i x_i^T w - x_i y_i||^2

  are convex quadratics in w, unbounded on R^d: their sups over a stated ball are
  trust-region problems, solved exactly by :func:`~cflbounds.synthetic.heterogeneity.ball_max_residual`;
* ``H_cluster`` and ``H_device`` are those of the full-gradient quadratics (exact sups over
  a ball with :func:`~cflbounds.synthetic.heterogeneity.quadratic_spread_sup`, which
  accepts this class as it is).

A logistic loss is not offered: its variance and heterogeneity terms are not quadratics
in w, so their sups over a ball have no zero-duality-gap certificate; a certified value
would need a global (branch-and-bound) maximisation per device and partition.

``B`` independent problems are drawn at once; problem ``b`` depends only on its own seed.
Samples are counter-based uniform indices keyed by ``(seed, draw index)``, so any step of
any algorithm draws the same data points however the problems are batched.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from numbers import Integral, Real

import numpy as np
import torch

from .._torch import TENSOR_CONSTRAINTS, resolve_device, resolve_dtype
from .._validation import ArrayLike, Constraint, Interval, NoneOK, Options, require, validate_params
from .counter_random import counter_hash, counter_uniform
from .heterogeneity import BallMaximum, ball_max_residual
from .quadratics import HESSIAN_MODES, QuadraticFederation, make_quadratic_federation
from .seeding import BATCH_CONSTRAINTS, problem_seeds, stream

__all__ = ["DeviceRegression", "make_device_regression"]

_STREAM_DATA, _STREAM_SAMPLES = 19, 23


@dataclass(frozen=True, eq=False)
class DeviceRegression:
    """A batch of ``B`` device regression problems (module docstring).

    ``inputs`` ``(B, N, n_max, d)`` and ``targets`` ``(B, N, n_max)`` hold each device's data
    in float64, zero-padded beyond ``sizes[k]`` (``(N,)``, the same for every problem);
    ``optima_true`` ``(B, N, d)`` are the ``theta_k`` that generated the targets,
    ``centers_exact`` ``(B, K, d)`` the planted cluster centers, ``membership`` ``(N,)``
    the planted clusters, ``weights`` ``p_k = n_k / sum n``.
    """

    inputs: np.ndarray
    targets: np.ndarray
    sizes: np.ndarray
    optima_true: np.ndarray
    centers_exact: np.ndarray
    membership: np.ndarray
    weights: np.ndarray
    seeds: tuple[int, ...]
    dtype: torch.dtype
    device: torch.device

    # -- shapes ---------------------------------------------------------------------------------
    batch_size = property(lambda self: self.inputs.shape[0])
    clients = property(lambda self: self.inputs.shape[1])
    d = property(lambda self: self.inputs.shape[3])

    @property
    def _mask(self) -> np.ndarray:
        return np.arange(self.inputs.shape[2])[None, :] < self.sizes[:, None]  # (N, n_max)

    # -- the full-gradient problem -------------------------------------------------------------------
    @cached_property
    def _moments(self):
        """``A_k = X^T X / n_k`` ``(B, N, d, d)`` and ``c_k = X^T y / n_k`` ``(B, N, d)``."""
        n = self.sizes[None, :, None]
        return (np.einsum("bnid,bnie->bnde", self.inputs, self.inputs) / n[..., None],
                np.einsum("bnid,bni->bnd", self.inputs, self.targets) / n)

    @cached_property
    def _quadratic(self) -> QuadraticFederation:
        hessians, moments = self._moments
        optima = np.linalg.solve(hessians, moments[..., None])[..., 0]
        as_tensor = lambda a: torch.as_tensor(a, dtype=self.dtype, device=self.device)
        return QuadraticFederation(hessians=as_tensor(hessians), optima=as_tensor(optima), hessians_exact=hessians,
                                   optima_exact=optima, centers_exact=self.centers_exact, membership=self.membership,
                                   weights=self.weights, noise_std=np.zeros(self.clients), seeds=self.seeds)

    def as_quadratic_federation(self) -> QuadraticFederation:
        """The full-gradient problem: noise-free quadratics ``1/2 (w - b_k)^T A_k (w - b_k)``
        with the same gradients ``grad f_k`` at every w, hence the same minimiser and gaps
        ``f(w) - inf f`` (each device's loss differs by its constant ``f_k(b_k)``)."""
        return self._quadratic

    hessians_exact = property(lambda self: self._quadratic.hessians_exact)  # A_k
    optima_exact = property(lambda self: self._quadratic.optima_exact)  # b_k, the device's least squares
    global_hessian = property(lambda self: self._quadratic.global_hessian)
    global_minimizer = property(lambda self: self._quadratic.global_minimizer)

    def client_gradients(self, w) -> np.ndarray:
        """``grad f_k(w) = A_k w - c_k`` for every device, ``(B, *S, N, d)``."""
        return self._quadratic.client_gradients(w)

    def global_gradient(self, w) -> np.ndarray:
        """``grad f(w)``, ``(B, *S, d)``."""
        return self._quadratic.global_gradient(w)

    # -- exact constants -------------------------------------------------------------------------------
    @property
    def client_smoothness(self) -> np.ndarray:
        """``L_k = max_i ||x_ki||^2``, the per-sample smoothness of device k, ``(B, N)``."""
        return np.square(self.inputs).sum(-1).max(-1)

    @property
    def smoothness(self) -> np.ndarray:
        """``L = max_k L_k``, ``(B,)``."""
        return self.client_smoothness.max(axis=1)

    @cached_property
    def global_min_value(self) -> np.ndarray:
        """``inf f = f(w*)`` (least squares), ``(B,)``."""
        return self.global_loss(self.global_minimizer[:, None, :])[:, 0]

    def client_losses(self, w) -> np.ndarray:
        """``f_k(w) = (1/n_k) sum_i 1/2 (x_ki^T w - y_ki)^2``, ``(B, *S, N)``."""
        shape, flat = self._points(w)
        residuals = np.einsum("bnid,bpd->bpni", self.inputs, flat) - self.targets[:, None]  # 0 on padding
        losses = 0.5 * np.square(residuals).sum(-1) / self.sizes
        return losses.reshape(*shape, self.clients)

    def global_loss(self, w) -> np.ndarray:
        """``f(w) = sum_k p_k f_k(w)``, ``(B, *S)``."""
        return self.client_losses(w) @ self.weights

    @cached_property
    def _second_moment_forms(self):
        """``E||grad f(w; xi)||^2 = w^T S_k w - 2 t_k^T w + u_k``: ``S_k = (1/n) sum ||x||^2 x x^T``,
        ``t_k = (1/n) sum ||x||^2 y x``, ``u_k = (1/n) sum ||x||^2 y^2``."""
        norms = np.square(self.inputs).sum(-1) / self.sizes[:, None]  # (B, N, n): ||x||^2 / n_k (0 on padding)
        return (np.einsum("bni,bnid,bnie->bnde", norms, self.inputs, self.inputs),
                np.einsum("bni,bni,bnid->bnd", norms, self.targets, self.inputs),
                np.einsum("bni,bni->bn", norms, np.square(self.targets)))

    def gradient_variances(self, w) -> np.ndarray:
        """``s_k^2(w) = E||grad f(w; xi) - grad f_k(w)||^2`` for every device, ``(B, *S, N)``."""
        shape, flat = self._points(w)
        S, t, u = self._second_moment_forms
        second = np.einsum("bpd,bnde,bpe->bpn", flat, S, flat) - 2 * np.einsum("bnd,bpd->bpn", t, flat) + u[:, None]
        mean = np.square(self.client_gradients(flat)).sum(-1)
        return np.maximum(second - mean, 0.0).reshape(*shape, self.clients)

    def _points(self, w):
        w = np.asarray(w, dtype=float)
        require(w.ndim >= 2 and w.shape[0] == self.batch_size and w.shape[-1] == self.d,
                f"Points must have shape (B, ..., d) = ({self.batch_size}, ..., {self.d}); got {w.shape}.")
        return w.shape[:-1], w.reshape(self.batch_size, -1, self.d)

    def variance_sup(self, center, radius) -> BallMaximum:
        """``sup_{||w - center|| <= radius} s_k^2(w)`` per device, ``(B, N)``: exact (trust region)."""
        hessians, moments = self._moments
        outer = np.einsum("bnid,bnie->bnide", self.inputs, self.inputs)
        products = self.inputs * self.targets[..., None]
        return self._ball_sup(outer - hessians[:, :, None], products - moments[:, :, None], center, radius)

    def second_moment_sup(self, center, radius) -> BallMaximum:
        """``sup_{||w - center|| <= radius} E||grad f(w; xi)||^2`` per device, ``(B, N)``
        (Assumption 2.3's G^2 over the ball): exact (trust region)."""
        outer = np.einsum("bnid,bnie->bnide", self.inputs, self.inputs)
        return self._ball_sup(outer, self.inputs * self.targets[..., None], center, radius)

    def _ball_sup(self, per_sample_matrix, per_sample_offset, center, radius) -> BallMaximum:
        """``sup_{||w - center|| <= R} (1/n_k) sum_i ||P_i w - y_i||^2`` per device, for
        per-sample ``P_i`` ``(B, N, n, d, d)`` and ``y_i`` ``(B, N, n, d)`` (padding dropped)."""
        B, N, n, d = self.inputs.shape
        scale = (self._mask / np.sqrt(self.sizes)[:, None])[None, :, :, None]  # (1, N, n, 1)
        P = per_sample_matrix * scale[..., None]
        y = (per_sample_offset - np.einsum("bnide,be->bnid", per_sample_matrix, np.asarray(center, float))) * scale
        radius = np.broadcast_to(np.asarray(radius, dtype=float), (B,))[:, None]
        return ball_max_residual(P.reshape(B, N, n * d, d), y.reshape(B, N, n * d), radius)

    # -- samples and batched kernels ---------------------------------------------------------------
    def draw(self, n: int, draw_index: int) -> torch.Tensor:
        """``n`` data points per device, drawn uniformly with replacement from its data set, as
        ``(x, y)`` rows ``(B, N, n, d + 1)``; draw ``draw_index`` of problem ``b`` depends only on
        ``(seeds[b], draw_index)``."""
        require(isinstance(n, Integral) and n >= 1, f"The 'n' parameter of draw must be an int >= 1; got {n!r}.")
        require(isinstance(draw_index, Integral) and draw_index >= 0,
                f"The 'draw_index' parameter of draw must be an int >= 0; got {draw_index!r}.")
        keys = counter_hash(np.asarray(self.seeds, dtype=np.uint64), _STREAM_SAMPLES)
        uniforms = counter_uniform(keys, int(draw_index), self.clients * n).reshape(self.batch_size, self.clients, n)
        index = np.floor(uniforms * self.sizes[None, :, None]).astype(np.int64)  # in 0..n_k - 1
        x = np.take_along_axis(self.inputs, index[..., None], axis=2)
        y = np.take_along_axis(self.targets, index, axis=2)
        return torch.as_tensor(np.concatenate([x, y[..., None]], axis=-1), dtype=self.dtype, device=self.device)

    def sample_gradients(self, models: torch.Tensor, samples: torch.Tensor, clients=None) -> torch.Tensor:
        """``(1/n) sum_l x_l (x_l^T w - y_l)`` of each device's models: models ``(B, N', C, d)``,
        samples ``(B, N', n, d + 1)`` (from :meth:`draw`) -> ``(B, N', C, d)``. The samples carry
        their data, so ``clients`` (the device positions, FedCluster's interface) is not needed."""
        require(samples.dim() == 4 and samples.shape[-1] == self.d + 1 and samples.shape[:2] == models.shape[:2],
                f"Samples must have shape (B, N', n, d + 1) = ({models.shape[0]}, {models.shape[1]}, n, "
                f"{self.d + 1}); got {tuple(samples.shape)}.")
        x, y = samples[..., :-1], samples[..., -1]
        residuals = torch.einsum("bnld,bncd->bncl", x, models) - y[:, :, None, :]
        return torch.einsum("bnld,bncl->bncd", x, residuals) / samples.shape[2]

    @cached_property
    def _second_moment_tensors(self):
        return tuple(torch.as_tensor(a, dtype=self.dtype, device=self.device) for a in self._second_moment_forms)

    def second_moments(self, models: torch.Tensor, clients: torch.Tensor | None = None) -> torch.Tensor:
        """``E_xi ||grad f(w; xi)||^2`` of each device at its models, in torch: models
        ``(B, N', C, d)`` of the devices at positions ``clients`` ``(B, N')`` (all if None) -> ``(B, N', C)``."""
        S, t, u = self._second_moment_tensors
        if clients is not None:
            rows = torch.arange(self.batch_size, device=self.device)[:, None]
            S, t, u = S[rows, clients], t[rows, clients], u[rows, clients]
        return (torch.einsum("bncd,bnde,bnce->bnc", models, S, models)
                - 2 * torch.einsum("bnd,bncd->bnc", t, models) + u[..., None])


_SIZES = Constraint(
    lambda v: (isinstance(v, Integral) and not isinstance(v, bool)) or (
        np.ndim(v) == 1 and len(v) > 0 and all(isinstance(s, Integral) and not isinstance(s, bool) for s in v)),
    "an int or a non-empty sequence of ints (one per device)",
)


@validate_params({
    "clients": [Interval(Integral, 1, None, closed="left")],
    "d": [Interval(Integral, 1, None, closed="left")],
    "samples": [_SIZES],
    "clusters": [Interval(Integral, 1, None, closed="left")],
    "proportions": [NoneOK, ArrayLike],
    "designs": [Options(HESSIAN_MODES)],
    "design_min": [Interval(Real, 0, None, closed="neither")],
    "design_max": [Interval(Real, 0, None, closed="neither")],
    "separation": [Interval(Real, 0, None, closed="neither")],
    "spread": [Interval(Real, 0, None, closed="left")],
    "noise_std": [Interval(Real, 0, None, closed="left")],
    **BATCH_CONSTRAINTS,
    **TENSOR_CONSTRAINTS,
})
def make_device_regression(clients: int = 16, d: int = 4, *, samples=20, clusters: int = 2, proportions=None,
                           designs: str = "cluster", design_min: float = 0.5, design_max: float = 1.0,
                           separation: float = 2.0, spread: float = 0.5, noise_std: float = 0.5, batch_size: int = 1,
                           seed=0, dtype: str = "float64", device: str = "cpu") -> DeviceRegression:
    """Draw ``batch_size`` independent device regression problems (see the module docstring).

    Parameters
    ----------
    clients, d : N devices and the dimension.
    samples : n_k, the size of each device's data set (one int for all, or one per device),
        each ``>= d`` so that ``A_k`` is invertible; ``p_k = n_k / sum n``.
    clusters, proportions : planted clusters K (``K <= N``, ``K <= d``) and their proportions
        of the devices (None: equal contiguous blocks).
    designs : one design covariance for all devices (``shared``), one per cluster or per device.
    design_min, design_max : the extreme eigenvalues of every design covariance
        (``d = 1`` needs them equal).
    separation, spread : distance between every two cluster centers; distance of each
        device's optimum ``theta_k`` from its cluster's center.
    noise_std : the standard deviation of the target noise.
    batch_size, seed, dtype, device : as for :func:`make_quadratic_federation`.
    """
    sizes = np.broadcast_to(np.asarray(samples, dtype=np.int64), (clients,)).copy() if np.ndim(samples) == 0 \
        else np.asarray(samples, dtype=np.int64)
    require(sizes.shape == (clients,), f"The 'samples' parameter must be one int or {clients} (one per device); "
            f"got {len(sizes)} values.")
    require(bool(np.all(sizes >= d)), f"The 'samples' parameter must give every device at least d={d} points (so "
            f"that its least squares is unique); got {sizes.min()}.")
    require(clusters <= clients, f"Each planted cluster needs a device: clusters={clusters} > clients={clients}.")
    require(clusters <= d, f"Cluster centers at equal distances need clusters <= d: got clusters={clusters}, d={d}.")
    require(design_min <= design_max, f"The 'design_min' parameter ({design_min}) must not exceed 'design_max' "
            f"({design_max}).")
    require(d > 1 or design_min == design_max, f"With d=1 a covariance has one eigenvalue: design_min={design_min} "
            f"and design_max={design_max} must be equal.")
    seeds = problem_seeds(seed, batch_size)
    design = make_quadratic_federation(clients, d, clusters=clusters, proportions=proportions, hessians=designs,
                                       strong_convexity=design_min, smoothness=design_max, separation=separation,
                                       spread=spread, noise_std=0.0, batch_size=batch_size, seed=seeds)
    values, vectors = np.linalg.eigh(design.hessians_exact)
    roots = np.einsum("bnij,bnj,bnkj->bnik", vectors, np.sqrt(np.maximum(values, 0.0)), vectors)  # Sigma^(1/2)
    n_max = int(sizes.max())
    directions, noise = [], []
    for s in seeds:  # set-up, once per problem
        rng = stream(s, _STREAM_DATA)
        directions.append(rng.standard_normal((clients, n_max, d)))
        noise.append(rng.standard_normal((clients, n_max)))
    z = np.stack(directions)
    z *= np.sqrt(d) / np.linalg.norm(z, axis=-1, keepdims=True)  # uniform on the sphere of radius sqrt(d)
    mask = (np.arange(n_max)[None, :] < sizes[:, None])[None]  # (1, N, n_max)
    inputs = np.einsum("bnij,bnsj->bnsi", roots, z) * mask[..., None]
    targets = (np.einsum("bnsi,bni->bns", inputs, design.optima_exact) + noise_std * np.stack(noise)) * mask
    return DeviceRegression(inputs=inputs, targets=targets, sizes=sizes, optima_true=design.optima_exact,
                            centers_exact=design.centers_exact, membership=design.membership,
                            weights=sizes / sizes.sum(), seeds=seeds, dtype=resolve_dtype(dtype),
                            device=resolve_device(device))
