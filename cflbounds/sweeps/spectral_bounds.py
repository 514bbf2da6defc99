"""Certified bounds on the extreme eigenvalues of symmetric matrices, by Cholesky inertia tests.

An estimate (a Ritz value) is not a bound: power iteration approaches ``lambda_max`` from
below, so ``lambda_max`` may lie anywhere above it. A bound comes from a test whose success
is a proof: if the Cholesky factorisation of ``M = A - c I`` runs to completion in floating
point, then (Higham, *Accuracy and Stability of Numerical Algorithms*, Thm. 10.5, with
Cauchy-Schwarz on ``|R^T||R|``)

    R^T R = M + dM,   ||dM||_2 <= gamma_{p+1} / (1 - gamma_{p+1}) trace(M),

with ``gamma_j = j u / (1 - j u)`` and ``u`` the unit roundoff, and ``R^T R`` is positive
semidefinite, so ``lambda_min(A) >= c - ||dM||_2 - u max_i |m_ii|`` (the last term: forming
``A - c I`` rounds the diagonal). The test on ``c I - A`` bounds ``lambda_max(A)`` from above
the same way. Each test costs one factorisation (``p^3/3`` flops), a tenth of ``eigvalsh``.

The tests are placed by cheap estimates: power iteration for the largest eigenvalue,
inverse iteration with the Cholesky factor of ``A`` for the smallest; a test that fails (the
estimate had not converged) is repeated further out. Gershgorin's row sums give a looser upper
bound with no factorisation, for callers to whom a loose one is as good. Everything is batched
over leading dimensions and runs on the matrices' device.
"""
from __future__ import annotations

import torch

__all__ = ["gamma", "gershgorin_upper", "lower_bound", "upper_bound", "rayleigh_quotient"]

_ESTIMATE_STEPS = 8
_SLACKS = (1 / 16, 1 / 4, 1 / 2, 2.0)  # relative distances from the estimate at which the tests are tried


def gamma(count: int, dtype=torch.float64) -> float:
    """``gamma_j = j u / (1 - j u)``: the relative rounding of ``j`` floating-point operations."""
    u = torch.finfo(dtype).eps / 2
    return count * u / (1 - count * u)


def _passes(matrix: torch.Tensor, shift: torch.Tensor, sign: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Whether ``sign (A - shift I)`` factorises, and the rounding allowance ``||dM|| + u max|m_ii|``
    under which that proves ``sign (A - shift I)`` positive semidefinite."""
    p = matrix.shape[-1]
    shifted = matrix.clone() if sign > 0 else -matrix
    shifted.diagonal(dim1=-2, dim2=-1).sub_(sign * shift[..., None])
    _, info = torch.linalg.cholesky_ex(shifted)
    diagonal = shifted.diagonal(dim1=-2, dim2=-1)
    g = gamma(p + 1, matrix.dtype)
    u = torch.finfo(matrix.dtype).eps / 2
    # trace and max computed in floating point: a factor 2 covers their own rounding
    allowance = 2 * (g / (1 - g) * diagonal.sum(-1).abs() + u * diagonal.abs().amax(-1))
    return info == 0, allowance


def _start(matrix: torch.Tensor) -> torch.Tensor:
    """The iterations' start: one fixed random vector for every matrix of the batch (a matrix's
    bounds do not depend on the batch it is in)."""
    generator = torch.Generator().manual_seed(0)
    v = torch.randn(matrix.shape[-1], dtype=matrix.dtype, generator=generator).to(matrix.device)
    return v.expand(matrix.shape[:-1]).clone()


def rayleigh_quotient(matrix: torch.Tensor) -> torch.Tensor:
    """The Rayleigh quotient ``v^T A v`` at power iteration's unit vector: an estimate of
    ``lambda_max``, and a bound from below (``v^T A v <= lambda_max`` for every unit ``v``, up to
    the rounding of the quotient and of ``||v|| = 1``, relative ``gamma_{p+2}``)."""
    v = _start(matrix)
    for _ in range(_ESTIMATE_STEPS):
        v = torch.nn.functional.normalize(torch.matmul(matrix, v[..., None])[..., 0], dim=-1)
    return (v * torch.matmul(matrix, v[..., None])[..., 0]).sum(-1)


def _smallest_estimate(factor: torch.Tensor) -> torch.Tensor:
    """A Ritz value of inverse iteration with ``A = L L^T`` (an upper estimate of ``lambda_min``)."""
    v = _start(factor)
    for _ in range(_ESTIMATE_STEPS):
        v = torch.nn.functional.normalize(torch.cholesky_solve(v[..., None], factor)[..., 0], dim=-1)
    lower_side = torch.matmul(factor.transpose(-1, -2), v[..., None])[..., 0]  # ||L^T v||^2 = v^T A v
    return (lower_side * lower_side).sum(-1)


def gershgorin_upper(matrix: torch.Tensor, error: float | torch.Tensor = 0.0) -> torch.Tensor:
    """``lambda_max <= max_i sum_j |a_ij|`` (inflated for the sum's rounding), plus ``error``:
    a bound with no factorisation, loose by the off-diagonal mass."""
    p = matrix.shape[-1]
    return matrix.abs().sum(-1).amax(-1) * (1 + 2 * gamma(p + 1, matrix.dtype)) + error


def lower_bound(matrix: torch.Tensor, error: float | torch.Tensor = 0.0) -> tuple[torch.Tensor, torch.Tensor]:
    """A certified lower bound on ``lambda_min`` of symmetric ``matrix`` ``(..., p, p)`` minus
    ``error`` (the caller's bound on ``||A_exact - matrix||_2``), ``-inf`` where no factorisation
    proves the matrix positive definite; and the Cholesky factor of ``matrix`` (for solves)."""
    factor, info = torch.linalg.cholesky_ex(matrix)
    positive = info == 0
    usable = factor if positive.all() else torch.where(positive[..., None, None], factor, torch.eye(
        matrix.shape[-1], dtype=matrix.dtype, device=matrix.device))  # a placeholder where there is no factor
    smallest = _smallest_estimate(usable)
    lower = torch.full(matrix.shape[:-2], -torch.inf, dtype=matrix.dtype, device=matrix.device)
    for slack in _SLACKS:  # the first shift that passes is the tightest bound on offer
        todo = positive & torch.isinf(lower)
        if not todo.any():
            break
        shift = smallest * (1 - slack) if slack < 1 else torch.zeros_like(smallest)
        ok, allowance = _passes(matrix, shift, 1.0)
        lower = torch.where(todo & ok, shift - allowance, lower)
    return lower - error, factor


def upper_bound(matrix: torch.Tensor, error: float | torch.Tensor = 0.0,
                estimate: torch.Tensor | None = None) -> torch.Tensor:
    """A certified upper bound on ``lambda_max`` of symmetric ``matrix`` ``(..., p, p)`` plus
    ``error``: the first Cholesky test passed above ``estimate`` (default: :func:`rayleigh_quotient`),
    or Gershgorin's bound if that is lower (or no test passed)."""
    largest = rayleigh_quotient(matrix) if estimate is None else estimate
    upper = gershgorin_upper(matrix)
    bounded = torch.zeros(matrix.shape[:-2], dtype=torch.bool, device=matrix.device)
    for slack in _SLACKS:
        if bounded.all():
            break
        ceiling = largest.abs() * (1 + slack)
        ok, allowance = _passes(matrix, ceiling, -1.0)
        upper = torch.where(ok & ~bounded, torch.minimum(upper, ceiling + allowance), upper)
        bounded = bounded | ok
    return upper + error
