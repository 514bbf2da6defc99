"""CFL's measured instances: the clients' gradients at theta*, their cosine similarities, the
bipartitions and Theorem 1's bounds, per problem.

Problems are :func:`~cflbounds.synthetic.cfl_quadratics.make_cfl_quadratics` (``L = 1``; the
cosines do not depend on the scale): ``theta*`` the population mixture's stationary point
(``sum_j pi_j grad R_j(theta*) = 0``, what the separation argument uses), every ``gamma_i``
exact (``realised_relative_errors``), ``alpha`` exact. The learned case is
:func:`~cflbounds.synthetic.digit_risks.make_digit_risks` (rotated digits, softmax regression):
``gamma_i`` is estimated there, and the bounds use the upper end of its bootstrap interval (the
bounds weaken as gamma grows: the claim is judged at the gamma it can vouch for).

Theorem 1's ``H_(i,j)`` (:func:`cflbounds.bounds.cfl.H`) is read per pair, as its proof uses it:
the intra floor is ``min H_(i,j)`` over pairs of one distribution; the cross ceiling is
:func:`~cflbounds.bounds.cfl.cross_similarity_bound` at the smallest ``H_(i,j)`` over pairs of
different distributions (each cross pair's cosine can grow by at most ``asin gamma_i + asin
gamma_j``; the ceiling is non-increasing in H, so the smallest H bounds every pair). Both
inequalities are written with non-negative sides: ``1 + alpha_cross^max <= 1 + ceiling`` and
``1 - alpha_intra^min <= 1 - floor``.
"""
from __future__ import annotations

import numpy as np

from cflbounds.algorithms.cosine_bipartition import (EXHAUSTIVE_LIMIT, bipartition, cross_similarity_max,
                                                     max_cross_similarity)
from cflbounds.bounds import cfl as bounds
from cflbounds.claims import Inequality
from cflbounds.synthetic.cfl_quadratics import make_cfl_quadratics
from cflbounds.synthetic.seeding import stream

__all__ = ["problems", "gammas", "separation", "split_count", "gamma_row"]

_STREAM_GAMMA = 67


def gammas(seed: int, clients: int, gamma: float, spread: float) -> np.ndarray:
    """Each client's ``gamma_i = gamma (1 - spread u_i)``, ``u_i`` uniform in [0, 1) from ``seed``'s
    own stream (``spread`` 0: all equal)."""
    return float(gamma) * (1.0 - float(spread) * stream(int(seed), _STREAM_GAMMA).random(clients))


def problems(seeds, *, k: int, clients: int, d: int, mu_over_L: float, hessian_spread: float, gamma: float,
             gamma_spread: float, direction: str, device: str = "cpu") -> list:
    """One clustered problem per seed (a list: each seed has its own ``gamma_i``)."""
    return [make_cfl_quadratics(k, clients, d, strong_convexity=float(mu_over_L), smoothness=1.0, separation=1.0,
                                hessian_spread=float(hessian_spread),
                                relative_error=gammas(seed, clients, gamma, gamma_spread), error_direction=direction,
                                batch_size=1, seed=[int(seed)], device=device) for seed in seeds]


def split_count(labels, membership) -> int:
    """How many distributions the bipartition ``labels`` splits (0: correct)."""
    labels, membership = np.asarray(labels), np.asarray(membership)
    return int(sum(np.unique(labels[membership == g]).size > 1 for g in np.unique(membership)))


def separation(alpha: np.ndarray, membership: np.ndarray, gamma: np.ndarray, k: int, methods=("exact",)) -> dict:
    """Theorem 1's and Corollary 1's quantities of one problem: ``alpha`` ``(m, m)``, ``membership``
    ``(m,)``, ``gamma`` ``(m,)`` (each in [0, 1)); ``methods`` the bipartitions to compute
    (:data:`~cflbounds.algorithms.cosine_bipartition.BIPARTITIONS`; ``exhaustive`` only up to
    its limit). Returns ``alpha_cross_max`` (the argmin's), ``alpha_intra_min``, ``H_cross``,
    ``H_intra``, ``cross_bound``, ``intra_floor``, and per method its labels' ``split_<method>``
    (distributions split), ``cross_<method>`` (its largest cross similarity)."""
    m = membership.size
    same = membership[:, None] == membership[None, :]
    off = ~np.eye(m, dtype=bool)
    H = np.array([[bounds.H(gamma[i], gamma[j]) if i != j else 1.0 for j in range(m)] for i in range(m)])
    H_intra = float(H[same & off].min()) if (same & off).any() else np.inf
    H_cross = float(H[~same].min())
    result = {"alpha_cross_max": cross_similarity_max(alpha),
              "alpha_intra_min": float(alpha[same & off].min()) if (same & off).any() else np.inf,
              "H_cross": H_cross, "H_intra": H_intra, "gamma_max": float(gamma.max()),
              "cross_bound": bounds.cross_similarity_bound(H_cross, k), "intra_floor": H_intra}
    for method in methods:
        if method == "exhaustive" and m > EXHAUSTIVE_LIMIT:
            continue
        labels = bipartition(alpha, method)
        result[f"split_{method}"] = split_count(labels, membership)
        result[f"cross_{method}"] = max_cross_similarity(alpha, labels)
    return result


def gamma_row(gamma) -> Inequality:
    """Theorem 1's ``gamma_i < 1`` for every client (the empirical gradient keeps its side)."""
    return Inequality("every gamma_i < 1", float(np.max(gamma)), 1.0, "<", "CFL Theorem 1")
