"""Certified bounds on the extreme eigenvalues of symmetric matrices, by Cholesky inertia tests.

An estimate (a Ritz value) is not a bound: Lanczos approaches ``lambda_max`` from below, so
``lambda_max`` may lie anywhere above it. A bound comes from a test whose success
is a proof: if the Cholesky factorisation of ``M = A - c I`` runs to completion in floating
point, then (Higham, *Accuracy and Stability of Numerical Algorithms*, Thm. 10.5, with
Cauchy-Schwarz on ``|R^T||R|``)

    R^T R = M + dM,   ||dM||_2 <= gamma_{p+1} / (1 - gamma_{p+1}) trace(M),

with ``gamma_j = j u / (1 - j u)`` and ``u`` the unit roundoff, and ``R^T R`` is positive
semidefinite, so ``lambda_min(A) >= c - ||dM||_2 - u max_i |m_ii|`` (the last term: forming
``A - c I`` rounds the diagonal). The test on ``c I - A`` bounds ``lambda_max(A)`` from above
the same way. Each test costs one factorisation (``p^3/3`` flops), a tenth of ``eigvalsh``.

The tests are placed by cheap estimates: Lanczos' extreme Ritz values (Rayleigh-Ritz on a
Krylov subspace of ``A``), or ``eigh``'s extreme eigenpairs for matrices small enough that it
costs less (``p <= _EIGH_SIZE``); a test that fails (the estimate had not converged) is
repeated further out. A Krylov space started at ``b`` also gives ``A^{-1} b`` for positive
definite ``A`` (:func:`galerkin_solution`, conjugate gradients' iterate), which its residual
certifies or rejects. Gershgorin's row sums give a looser upper
bound with no factorisation, for callers to whom a loose one is as good. Everything is batched
over leading dimensions and runs on the matrices' device.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import torch

__all__ = ["gamma", "gershgorin_upper", "lower_bound", "upper_bound", "extreme_quotients", "rayleigh_quotient",
           "KrylovSpace", "krylov_space", "galerkin_solution"]

# Lanczos steps of the estimates. On Gram matrices of 5 p x p Gaussian points (a Fig. 2(a) cluster
# at p = 1000), 40 steps put the top Ritz value within 0.01 % of lambda_max and the bottom one
# within 0.4 % of lambda_min at p = 100, 400, 1000 (32 steps: 2 % once; 8 steps of power or inverse
# iteration: 8 % and 2 %), so the first test, 1/64 away, passes: one Cholesky test per bound, and
# bounds within 2 % of the eigenvalues (tests/test_spectral_bounds.py); so do spaces started at a
# least-squares problem's b, which the fixed points use (at p = 200, 400)
_LANCZOS_STEPS = 40
_CHECK_STEPS = 5  # a krylov_space's ``enough`` is asked every this many steps
_SLACKS = (1 / 64, 1 / 16, 1 / 4, 1 / 2, 2.0)  # relative distances from the estimate at which the tests are tried
# up to this size eigh's extreme eigenvectors cost less than 40 Lanczos steps, whose Python loop
# of small products dominates there (one thread, torch 2.13, float64: 0.63 against 2.26 ms at
# p = 100, 2.9 against 2.6 ms at p = 200); the IFCA.F2 claim's d = 100 quadratics
_EIGH_SIZE = 160
# eigh's eigenvalues are exact to rounding, so up to _EIGH_SIZE a first test this close passes
# (and a failing one costs a factorisation of a small matrix); Lanczos' bottom estimate lies up
# to 0.4 % above lambda_min, so a test this close would fail at d = 1000, at 13 ms each
_EXACT_SLACK = 2.0 ** -10


def _slacks(p: int) -> tuple[float, ...]:
    """The relative distances from the estimate at which the tests are tried on ``p x p``
    matrices: ``_SLACKS``, after ``_EXACT_SLACK`` where the estimates come from ``eigh``."""
    return ((_EXACT_SLACK,) if p <= _EIGH_SIZE else ()) + _SLACKS


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
    """The default start of the Krylov spaces: one fixed random vector for every matrix of the
    batch (a matrix's bounds do not depend on the batch it is in)."""
    generator = torch.Generator().manual_seed(0)
    v = torch.randn(matrix.shape[-1], dtype=matrix.dtype, generator=generator).to(matrix.device)
    return v.expand(matrix.shape[:-1]).clone()


class KrylovSpace(NamedTuple):
    """An orthonormal basis of ``span{v, Av, ..., A^(s-1) v}`` (the rows of ``basis``, batched
    over leading dimensions; zero rows where the space is exhausted) and ``A`` times each row
    (``images``): Lanczos' vectors, kept orthogonal."""

    basis: torch.Tensor
    images: torch.Tensor

    def projected(self) -> torch.Tensor:
        """``V A V^T``, symmetrised: Rayleigh-Ritz's and Galerkin's small matrix."""
        projected = torch.matmul(self.basis, self.images.transpose(-1, -2))
        return (projected + projected.transpose(-1, -2)) / 2


def krylov_space(matrix: torch.Tensor, start: torch.Tensor | None = None, steps: int = _LANCZOS_STEPS,
                 enough: Callable[[KrylovSpace], bool] | None = None) -> KrylovSpace | None:
    """The Krylov space of ``matrix`` from ``start`` (default :func:`_start`), ``min(steps, p)``
    dimensions, its basis reorthogonalised in full; None up to ``_EIGH_SIZE``, where ``eigh``
    costs less than the Lanczos loop (:func:`extreme_quotients` takes eigh's vectors there).
    ``enough``, asked of the space so far every ``_CHECK_STEPS`` steps, ends it early when True
    (a caller that only solves: :func:`galerkin_solution` converges before the estimates do)."""
    if matrix.shape[-1] <= _EIGH_SIZE:
        return None
    start = _start(matrix) if start is None else start
    steps = min(steps, start.shape[-1])
    basis = start.new_zeros(*start.shape[:-1], steps, start.shape[-1])
    images = torch.empty_like(basis)
    basis[..., 0, :] = torch.nn.functional.normalize(start, dim=-1)
    for step in range(steps):
        image = images[..., step, :] = _row_times(basis[..., step, :], matrix)
        done = step + 1
        if enough is not None and done % _CHECK_STEPS == 0 and done < steps \
                and enough(KrylovSpace(basis[..., :done, :], images[..., :done, :])):
            return KrylovSpace(basis[..., :done, :], images[..., :done, :])
        if step + 1 < steps:
            known = basis[..., :step + 1, :]
            for _ in range(2):  # twice is enough (Kahan's "twice is enough" for Gram-Schmidt)
                image = image - _row_times(_row_times(image, known.transpose(-1, -2)), known)
            basis[..., step + 1, :] = torch.nn.functional.normalize(image, dim=-1)  # zero where exhausted
    return KrylovSpace(basis, images)


def _extreme_ritz_vectors(space: KrylovSpace) -> tuple[torch.Tensor, torch.Tensor]:
    """The unit vectors of ``space`` with the smallest and the largest Rayleigh quotient
    (Rayleigh-Ritz). Estimates only: the callers certify what they use."""
    _, vectors = torch.linalg.eigh(space.projected())
    extremes = []
    for column in (0, -1):
        ritz = _row_times(vectors[..., column], space.basis)
        norm = ritz.norm(dim=-1, keepdim=True)
        extremes.append(torch.where(norm > 0.5, ritz / norm, space.basis[..., 0, :]))  # on zero rows: the start
    return extremes[0], extremes[1]


def galerkin_solution(space: KrylovSpace, rhs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The ``x`` in ``space`` with ``A x - rhs`` orthogonal to it (for positive definite ``A`` and
    ``space`` started at ``rhs``: conjugate gradients' iterate after as many steps), and ``A x``
    from the space's images (no product with ``A``). An approximation; its residual says how
    good. An exhausted space (zero rows: ``rhs`` in an invariant subspace, or zero) makes the
    small system singular; its least-squares solution of least norm is then the solution in the
    smaller space (exact for such an ``rhs``)."""
    coordinates = torch.linalg.lstsq(space.projected(), _row_times(rhs, space.basis.transpose(-1, -2))[..., None],
                                     driver="gelsd").solution[..., 0]
    return _row_times(coordinates, space.basis), _row_times(coordinates, space.images)


def _row_times(vector: torch.Tensor, matrix: torch.Tensor) -> torch.Tensor:
    """``v^T M`` batched (``A v`` for symmetric ``A``): the row-vector form runs 5x faster than
    ``M v`` on a batch of small matrices (torch 2.13, CPU)."""
    return torch.matmul(vector[..., None, :], matrix)[..., 0, :]


def extreme_quotients(matrix: torch.Tensor, space: KrylovSpace | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """``v^T A v`` at the bottom and top Ritz vectors (Lanczos: of ``space``, default
    :func:`krylov_space` from the fixed start; ``eigh``'s eigenvectors up to ``_EIGH_SIZE``,
    where ``space`` is None), the estimates of ``lambda_min`` (from above) and
    ``lambda_max`` (from below) that place the tests. The second is also a bound: ``v^T A v <=
    lambda_max`` for every unit ``v``, up to the rounding of the quotient and of ``||v|| = 1``,
    relative ``gamma_{p+2}``."""
    if matrix.shape[-1] <= _EIGH_SIZE:
        _, vectors = torch.linalg.eigh(matrix)
        bottom, top = vectors[..., 0], vectors[..., -1]
    else:
        bottom, top = _extreme_ritz_vectors(krylov_space(matrix) if space is None else space)
    return tuple((v * _row_times(v, matrix)).sum(-1) for v in (bottom, top))


def rayleigh_quotient(matrix: torch.Tensor) -> torch.Tensor:
    """The top one of :func:`extreme_quotients`: an estimate of ``lambda_max`` and a bound from below."""
    return extreme_quotients(matrix)[1]


def gershgorin_upper(matrix: torch.Tensor, error: float | torch.Tensor = 0.0) -> torch.Tensor:
    """``lambda_max <= max_i sum_j |a_ij|`` (inflated for the sum's rounding), plus ``error``:
    a bound with no factorisation, loose by the off-diagonal mass."""
    p = matrix.shape[-1]
    return matrix.abs().sum(-1).amax(-1) * (1 + 2 * gamma(p + 1, matrix.dtype)) + error


def lower_bound(matrix: torch.Tensor, error: float | torch.Tensor = 0.0,
                estimate: torch.Tensor | None = None) -> torch.Tensor:
    """A certified lower bound on ``lambda_min`` of symmetric ``matrix`` ``(..., p, p)`` minus
    ``error`` (the caller's bound on ``||A_exact - matrix||_2``): the first Cholesky test passed
    below ``estimate`` (default: the bottom one of :func:`extreme_quotients`), ``-inf`` where no
    test passes (the last, at shift 0, tests positive definiteness itself)."""
    smallest = extreme_quotients(matrix)[0] if estimate is None else estimate
    lower = torch.full(matrix.shape[:-2], -torch.inf, dtype=matrix.dtype, device=matrix.device)
    for slack in _slacks(matrix.shape[-1]):  # the first shift that passes is the tightest bound on offer
        todo = torch.isinf(lower)
        if not todo.any():
            break
        # never below 0: a test passed there would prove nothing about positive definiteness
        shift = (smallest * (1 - slack)).clamp(min=0) if slack < 1 else torch.zeros_like(smallest)
        ok, allowance = _passes(matrix, shift, 1.0)
        lower = torch.where(todo & ok, shift - allowance, lower)
    return lower - error


def upper_bound(matrix: torch.Tensor, error: float | torch.Tensor = 0.0,
                estimate: torch.Tensor | None = None) -> torch.Tensor:
    """A certified upper bound on ``lambda_max`` of symmetric ``matrix`` ``(..., p, p)`` plus
    ``error``: the first Cholesky test passed above ``estimate`` (default: :func:`rayleigh_quotient`),
    or Gershgorin's bound if that is lower (or no test passed)."""
    largest = rayleigh_quotient(matrix) if estimate is None else estimate
    upper = gershgorin_upper(matrix)
    bounded = torch.zeros(matrix.shape[:-2], dtype=torch.bool, device=matrix.device)
    for slack in _slacks(matrix.shape[-1]):
        if bounded.all():
            break
        ceiling = largest.abs() * (1 + slack)
        ok, allowance = _passes(matrix, ceiling, -1.0)
        upper = torch.where(ok & ~bounded, torch.minimum(upper, ceiling + allowance), upper)
        bounded = bounded | ok
    return upper + error
