"""FedProx's dissimilarity constants of heterogeneous quadratics, exactly (Li, Sahu, Zaheer,
Sanjabi, Talwalkar, Smith, MLSys 2020: Definition 3, Theorems 6 and 11).

On :class:`~.heterogeneous_quadratics.HeterogeneousQuadratics`, with ``z = grad f(w) = Abar (w -
w*)`` (every ``z`` is reached: ``Abar`` is invertible), the problem's ``dissimilarity_form``
gives ``E_k ||grad F_k(w)||^2 = z^T Q z + 2 v^T z + s`` (``k ~ p_k``), so that

* ``B(w)^2 = (z^T Q z + 2 v^T z + s) / ||z||^2`` (Definition 3; ``local_dissimilarity``);
* ``B_eps = sup { B(w) : ||grad f(w)||^2 > eps }`` (Theorem 6). Write ``z = r x``, ``||x|| = 1``,
  ``t = 1/r``: ``B^2 = x^T Q x + 2 t v^T x + s t^2``, for each ``x`` a convex function of ``t``
  (``s >= 0``), so its maximum over ``x`` is convex in ``t`` too and its sup over
  ``t in (0, 1/sqrt(eps))`` is at an end: ``t -> 0`` gives ``nu_max`` (``Q``'s largest
  eigenvalue), which the other end beats (``x = +-`` the top eigenvector gives at least
  ``nu_max + s/eps``). Hence ``B_eps^2 = s/eps + max_{||x|| = 1} (x^T Q x + 2 v^T x / sqrt(eps))``,
  the sup reached on the sphere ``||grad f(w)||^2 = eps`` (the set's boundary). The maximum of
  a quadratic on the sphere is a trust-region problem: in ``Q``'s eigenbasis, with
  ``c_j = v_j^2 / eps``, it is ``lambda + sum_j c_j / (lambda - nu_j)`` at the root
  ``lambda > nu_max`` of ``sum_j c_j / (lambda - nu_j)^2 = 1`` (``lambda = nu_max`` in the "hard
  case", ``v`` orthogonal to the top eigenvectors with the sum at ``nu_max`` below 1), and every
  ``lambda > nu_max`` gives the upper bound ``lambda + sum_j c_j / (lambda - nu_j)`` (weak
  duality: ``(lambda I - Q)`` is positive definite). :func:`dissimilarity_sup` returns that upper
  bound at the bisection's upper end, the point of the sphere it comes from, and ``B`` there
  (a lower bound): the two agree to rounding;
* ``E_k ||grad F_k(w) - grad f(w)||^2 = E_k ||grad F_k(w)||^2 - ||grad f(w)||^2 = z^T (Q - I) z +
  2 v^T z + s`` (Theorem 11's variance). ``Q >= I`` with equality iff every ``A_k`` is the same
  matrix ``A`` (then ``v = 0``); so the variance is bounded over all ``w`` exactly when the
  Hessians are equal (``hessian_spread = 0``), and then it is the constant
  ``sigma^2 = sum_k p_k ||A (b_k - bbar)||^2``, ``bbar = sum_k p_k b_k``, at every ``w``.
"""
from __future__ import annotations

from numbers import Real
from typing import NamedTuple

import numpy as np

from .._validation import Constraint, Interval, validate_params

__all__ = ["DissimilaritySup", "gradient_norm_sq", "dissimilarity_sup", "gradient_variance", "gradient_variance_bound"]

_BISECTIONS = 200
_QUADRATICS = Constraint(lambda v: hasattr(v, "dissimilarity_form") and hasattr(v, "local_dissimilarity"),
                         "a HeterogeneousQuadratics batch")


class DissimilaritySup(NamedTuple):
    """``B_eps`` per problem ``(B,)`` (``value``, an upper bound from weak duality), the point
    ``worst_point`` ``(B, d)`` of the sphere ``||grad f(w)||^2 = eps`` it is reached at, and
    ``attained`` ``= B(worst_point)`` (a lower bound), for the threshold ``epsilon``."""

    value: np.ndarray
    worst_point: np.ndarray
    attained: np.ndarray
    epsilon: float


def gradient_norm_sq(problem, w) -> np.ndarray:
    """``||grad f(w)||^2``, ``(B, *S)``: the quantity ``eps`` thresholds (Theorem 6)."""
    return np.square(problem.gradient(w)).sum(-1)


@validate_params({"problem": [_QUADRATICS], "epsilon": [Interval(Real, 0, None, closed="neither")]})
def dissimilarity_sup(problem, epsilon: float) -> DissimilaritySup:
    """FedProx's ``B_eps = sup { B(w) : ||grad f(w)||^2 > eps }`` of every problem of a
    :class:`~.heterogeneous_quadratics.HeterogeneousQuadratics` batch, exactly (module
    docstring: the sup is reached on ``||grad f(w)||^2 = eps``)."""
    nu, v, s, vectors = problem.dissimilarity_form
    weight = v**2 / epsilon  # c_j, (B, d)
    top = nu[:, -1]
    scale = np.maximum(top, 1.0)
    degenerate = np.abs(top[:, None] - nu) <= 1e-12 * scale[:, None]  # the top eigenspace
    hard = np.all(np.where(degenerate, weight <= 1e-24 * scale[:, None], True), axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        below = np.where(degenerate, 0.0, weight / (top[:, None] - nu) ** 2).sum(-1)
    hard &= below <= 1.0
    low, high = top.copy(), top + np.sqrt(weight.sum(-1))  # the root lies in (nu_max, nu_max + |c|^(1/2)]
    for _ in range(_BISECTIONS):
        middle = 0.5 * (low + high)
        with np.errstate(divide="ignore", invalid="ignore"):
            secular = np.sum(np.where(weight > 0, weight / (middle[:, None] - nu) ** 2, 0.0), axis=-1)
        above = secular > 1.0
        low, high = np.where(above, middle, low), np.where(above, high, middle)
    lam = np.where(hard, top, high)
    with np.errstate(divide="ignore", invalid="ignore"):
        gap = np.where(degenerate & hard[:, None], np.inf, lam[:, None] - nu)
        coordinates = np.where(weight > 0, v / np.sqrt(epsilon) / gap, 0.0)
        upper = lam + np.where(weight > 0, weight / gap, 0.0).sum(-1)
    fill = np.sqrt(np.maximum(0.0, 1.0 - np.square(coordinates).sum(-1)))
    coordinates[:, -1] += np.where(hard, fill, 0.0)  # hard case: the rest of the sphere on nu_max's vector
    direction = np.einsum("bij,bj->bi", vectors, coordinates)
    direction /= np.linalg.norm(direction, axis=-1, keepdims=True)
    z = np.sqrt(epsilon) * direction
    worst = problem.minimizer + np.linalg.solve(problem.global_hessian, z[..., None])[..., 0]
    value = np.sqrt(s / epsilon + upper)
    return DissimilaritySup(value, worst, problem.local_dissimilarity(worst[:, None])[:, 0], float(epsilon))


def gradient_variance(problem, w) -> np.ndarray:
    """Theorem 11's ``E_k ||grad F_k(w) - grad f(w)||^2`` (``k ~ p_k``) at points ``w``
    ``(B, *S, d)``, ``(B, *S)``."""
    gradients = problem.client_gradients(w)
    mean = np.einsum("...nd,n->...d", gradients, problem.weights)
    return np.square(gradients - mean[..., None, :]).sum(-1) @ problem.weights


def gradient_variance_bound(problem) -> np.ndarray:
    """The smallest ``sigma^2`` with ``E_k ||grad F_k(w) - grad f(w)||^2 <= sigma^2`` for every
    ``w`` (Theorem 11), ``(B,)``: ``sum_k p_k ||A (b_k - bbar)||^2`` where every client has the same
    Hessian ``A`` (the variance is that constant at every ``w``), ``inf`` otherwise (module
    docstring)."""
    hessians, optima, p = problem.hessians_exact, problem.optima_exact, problem.weights
    equal = np.all(hessians == hessians[:, :1], axis=(1, 2, 3))
    centred = optima - np.einsum("n,bnd->bd", p, optima)[:, None]
    constant = np.square(np.einsum("bij,bnj->bni", hessians[:, 0], centred)).sum(-1) @ p
    return np.where(equal, constant, np.inf)
