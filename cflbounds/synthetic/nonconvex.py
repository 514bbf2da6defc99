"""Non-convex smooth device problems with exact constants: quadratics plus a shared ripple.

Device ``k`` holds the per-sample loss (FedCluster's Theorem 1 needs no convexity)

    f(w; xi) = psi(w) + 1/2 (w - xi)^T A_k (w - xi),      xi ~ N(b_k, tau_k^2 I),
    psi(w)   = alpha sum_i cos(omega z_i + phi_i),        z = V^T (w - wbar),

on a :class:`~cflbounds.synthetic.quadratics.QuadraticFederation` (``A_k``, ``b_k``, ``tau_k``),
where ``V`` holds the eigenvectors of the global Hessian ``A = sum_k p_k A_k``, ``wbar``
the quadratic part's minimiser and ``phi_i`` random phases. Exactly:

* per-sample smoothness ``L_k = lambda_max(A_k) + alpha omega^2`` for every xi (the ripple's
  Hessian ``-alpha omega^2 V diag(cos) V^T`` reaches ``+-alpha omega^2 I`` at some w);
  non-convex once ``alpha omega^2 > lambda_min(A)``;
* gradient variance ``tau_k^2 ||A_k||_F^2`` and the gradients' differences between devices
  are those of the quadratic part (psi is shared), so ``H_cluster``/``H_device`` are the
  quadratic part's (exact sups over balls in :mod:`~cflbounds.synthetic.heterogeneity`);
* ``f = const + sum_i g_i(z_i)`` with ``g_i(z) = alpha cos(omega z + phi_i) + 1/2 lambda_i z^2``
  separates, so ``inf f`` is certified by a grid over ``|z| <= 2 sqrt(alpha/lambda_i)``
  (outside it ``g_i > alpha >= g_i(0)``): ``g_i >= min(grid) - (alpha omega^2 + lambda_i) h^2/8``
  (interpolation error), and the refined grid minimum is an attained value.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from numbers import Integral, Real

import numpy as np
import torch

from .._validation import Interval, validate_params
from .heterogeneity import quadratic_gradient_sup
from .quadratics import QuadraticFederation, make_quadratic_federation
from .seeding import stream

__all__ = ["NonconvexFederation", "make_nonconvex_federation"]

_STREAM_PHASES = 13
_GRID = 20001  # points per coordinate for the certified minimum
_NEWTON = 30


@dataclass(frozen=True, eq=False)
class NonconvexFederation:
    """A batch of quadratic device problems plus the shared ripple psi (module docstring)."""

    quadratic: QuadraticFederation
    amplitude: float  # alpha
    frequency: float  # omega
    basis: np.ndarray  # V, (B, d, d): eigenvectors of A (columns)
    curvatures: np.ndarray  # lambda_i of A, (B, d)
    phases: np.ndarray  # phi, (B, d)

    # -- shapes and data shared with the quadratic part ----------------------------------------
    batch_size = property(lambda self: self.quadratic.batch_size)
    clients = property(lambda self: self.quadratic.clients)
    d = property(lambda self: self.quadratic.d)
    weights = property(lambda self: self.quadratic.weights)
    seeds = property(lambda self: self.quadratic.seeds)
    membership = property(lambda self: self.quadratic.membership)
    device = property(lambda self: self.quadratic.device)
    dtype = property(lambda self: self.quadratic.dtype)
    gradient_variance = property(lambda self: self.quadratic.gradient_variance)

    @property
    def center(self) -> np.ndarray:
        """``wbar``, the minimiser of the quadratic part, ``(B, d)``."""
        return self.quadratic.global_minimizer

    # -- exact constants --------------------------------------------------------------------------
    @property
    def ripple_smoothness(self) -> float:
        return self.amplitude * self.frequency**2

    @property
    def client_smoothness(self) -> np.ndarray:
        """``lambda_max(A_k) + alpha omega^2``, ``(B, N)``."""
        return self.quadratic.client_smoothness + self.ripple_smoothness

    @property
    def smoothness(self) -> np.ndarray:
        return self.client_smoothness.max(axis=1)

    @property
    def ripple_gradient_bound(self) -> float:
        """``sup_w ||grad psi(w)|| <= alpha omega sqrt(d)``."""
        return self.amplitude * self.frequency * np.sqrt(self.d)

    @cached_property
    def _certified_minimum(self):
        """Per coordinate: (certified lower bound, attained value, minimiser) of g_i."""
        alpha, omega = self.amplitude, self.frequency
        lam, phi = self.curvatures, self.phases  # (B, d)
        reach = 2.0 * np.sqrt(alpha / lam)
        grid = np.linspace(-1.0, 1.0, _GRID)[None, None, :] * reach[..., None]  # (B, d, G)
        values = alpha * np.cos(omega * grid + phi[..., None]) + 0.5 * lam[..., None] * grid**2
        spacing = 2.0 * reach / (_GRID - 1)
        lower = values.min(axis=-1) - (alpha * omega**2 + lam) * spacing**2 / 8.0
        z = np.take_along_axis(grid, values.argmin(axis=-1)[..., None], axis=-1)[..., 0]
        for _ in range(_NEWTON):  # polish the grid minimiser; only kept where it lowers g
            slope = -alpha * omega * np.sin(omega * z + phi) + lam * z
            curvature = -alpha * omega**2 * np.cos(omega * z + phi) + lam
            candidate = np.where(curvature > 0, z - slope / np.where(curvature > 0, curvature, 1.0), z)
            better = self._coordinate_value(candidate) < self._coordinate_value(z)
            z = np.where(better & (np.abs(candidate - z) <= spacing), candidate, z)
        return lower, self._coordinate_value(z), z

    def _coordinate_value(self, z):
        return self.amplitude * np.cos(self.frequency * z + self.phases) + 0.5 * self.curvatures * z**2

    @property
    def global_min_value(self) -> np.ndarray:
        """A certified lower bound of ``inf f`` (within ``global_min_gap`` of an attained value), ``(B,)``."""
        return self.quadratic.global_min_value + self._certified_minimum[0].sum(-1)

    @property
    def global_min_gap(self) -> np.ndarray:
        """Attained value minus ``global_min_value``: the certificate's width, ``(B,)``."""
        lower, attained, _ = self._certified_minimum
        return (attained - lower).sum(-1)

    @property
    def global_minimizer(self) -> np.ndarray:
        """A point attaining ``global_min_value + global_min_gap``, ``(B, d)``."""
        return self.center + np.einsum("bij,bj->bi", self.basis, self._certified_minimum[2])

    def gradient_sup(self, center, radius):
        """``(lower, upper)`` of ``sup_{||w - center|| <= radius} ||grad f_k(w)||^2`` per device,
        ``(B, N)``: the quadratic part's exact sup (``s``), then ``(sqrt(s) + sup||grad psi||)^2``
        above and the value at the quadratic part's maximiser below."""
        quadratic = quadratic_gradient_sup(self.quadratic, center, radius)
        upper = np.square(np.sqrt(quadratic.upper) + self.ripple_gradient_bound)
        points = np.asarray(center, dtype=float)[:, None, :] + quadratic.argmax  # (B, N, d)
        gradients = self.client_gradients(points)  # (B, N, N, d): every device at every point
        own = np.square(np.diagonal(gradients, axis1=1, axis2=2)).sum(axis=1)  # device k at its own point
        return own, upper

    # -- exact functions of points w of shape (B, *S, d) -----------------------------------------
    def _ripple(self, w):
        w = np.asarray(w, dtype=float)
        shape = w.shape
        flat = w.reshape(self.batch_size, -1, self.d) - self.center[:, None, :]
        z = np.einsum("bpi,bij->bpj", flat, self.basis)
        angle = self.frequency * z + self.phases[:, None, :]
        value = self.amplitude * np.cos(angle).sum(-1)
        gradient = np.einsum("bij,bpj->bpi", self.basis, -self.amplitude * self.frequency * np.sin(angle))
        return value.reshape(shape[:-1]), gradient.reshape(shape)

    def client_losses(self, w) -> np.ndarray:
        return self.quadratic.client_losses(w) + self._ripple(w)[0][..., None]

    def client_gradients(self, w) -> np.ndarray:
        return self.quadratic.client_gradients(w) + self._ripple(w)[1][..., None, :]

    def global_loss(self, w) -> np.ndarray:
        return self.quadratic.global_loss(w) + self._ripple(w)[0]

    def global_gradient(self, w) -> np.ndarray:
        return self.quadratic.global_gradient(w) + self._ripple(w)[1]

    # -- samples and batched kernels -------------------------------------------------------------
    def draw(self, n: int, draw_index: int, index=None) -> torch.Tensor:
        return self.quadratic.draw(n, draw_index, index)

    @cached_property
    def _tensors(self):
        as_tensor = lambda a: torch.as_tensor(a, dtype=self.dtype, device=self.device)
        return as_tensor(self.basis), as_tensor(self.center), as_tensor(self.phases)

    def sample_gradients(self, models: torch.Tensor, samples: torch.Tensor, index=None,
                         clients: torch.Tensor | None = None) -> torch.Tensor:
        """The quadratic part's per-sample gradients plus ``grad psi`` at each model
        (shapes as :meth:`QuadraticFederation.sample_gradients`)."""
        basis, center, phases = self._tensors
        if index is not None:
            position = torch.as_tensor(list(index), device=self.device)
            basis, center, phases = basis[position], center[position], phases[position]
        shape = models.shape
        flat = models.reshape(shape[0], -1, shape[-1]) - center[:, None, :]
        angle = self.frequency * torch.einsum("bpi,bij->bpj", flat, basis) + phases[:, None, :]
        ripple = torch.einsum("bij,bpj->bpi", basis, -self.amplitude * self.frequency * torch.sin(angle))
        return self.quadratic.sample_gradients(models, samples, index, clients) + ripple.reshape(shape)


@validate_params({"clients": [Interval(Integral, 1, None, closed="left")],
                  "d": [Interval(Integral, 1, None, closed="left")],
                  "amplitude": [Interval(Real, 0, None, closed="neither")],
                  "frequency": [Interval(Real, 0, None, closed="neither")]})  # the rest: make_quadratic_federation's
def make_nonconvex_federation(clients: int = 20, d: int = 10, *, amplitude: float = 0.5, frequency: float = 2.0,
                              **quadratic_options) -> NonconvexFederation:
    """Draw quadratic device problems (:func:`make_quadratic_federation` with
    ``quadratic_options``) and add the ripple ``psi`` of amplitude alpha and frequency
    omega (module docstring); the phases come from each problem's seed."""
    quadratic = make_quadratic_federation(clients, d, **quadratic_options)
    curvatures, basis = np.linalg.eigh(quadratic.global_hessian)
    phases = np.stack([stream(s, _STREAM_PHASES).uniform(0.0, 2.0 * np.pi, d) for s in quadratic.seeds])
    return NonconvexFederation(quadratic=quadratic, amplitude=float(amplitude), frequency=float(frequency),
                               basis=basis, curvatures=curvatures, phases=phases)
