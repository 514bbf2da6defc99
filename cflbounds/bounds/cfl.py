"""Clustered federated learning by cosine splits as code (Sattler, Mueller, Samek, "Clustered
Federated Learning: Model-Agnostic Distributed Multitask Optimization Under Privacy Constraints",
IEEE TNNLS 2021, arXiv:1910.01991).

m clients, client i drawing from distribution I(i) in {1..k}; theta* a stationary point of the
federated objective; alpha_(i,j) the cosine similarity of the clients' gradients at theta*;
gamma_i = ||grad R_I(i)(theta*) - grad r_i(theta*)|| / ||grad R_I(i)(theta*)|| < 1 (empirical
against true risk gradient); H_(i,j) = -gamma_i gamma_j + sqrt(1 - gamma_i^2) sqrt(1 - gamma_j^2)
(= cos(asin gamma_i + asin gamma_j), the smallest cosine two gradients can have when each is
within relative distance gamma of one direction).

Provenance: the statements are CATALOGUE.md's (marked [S] there: from a secondary restatement);
the primary text was not reachable from this machine. A second secondary restatement read here (a
markdown explanation of the paper in a public repository) states Theorem 1, its k = 2 remark and
Corollary 1 exactly as CATALOGUE.md does, and adds the paper's step from Theorem 1 to the split
test: ``alpha_intra^min >= min H_(i,j) >= 1 - 2 gamma_max^2``, hence a correct bipartition when
``gamma_max < sqrt((1 - alpha_cross^max)/2)``. Theorem 1's cross inequality names an H_(i,j)
without saying which pair; as the bound is non-increasing in H, it is evaluated here at the
smallest H (all gamma_i at most gamma_max: H >= 1 - 2 gamma_max^2), which bounds every pair.
The authors' code (github.com/felisat/clustered-federated-learning, fl_devices.py) computes no
bound; its cosine is s1.s2/(||s1|| ||s2|| + 1e-12) on weight updates, not the paper's alpha of
gradients at theta*, and its mean update is unweighted (the paper weights by |D_i|/|D_c|).
"""
from __future__ import annotations

from numbers import Integral, Real

import numpy as np

from .._validation import Interval
from ._constraints import PROBABILITY, bound_params
from ._docstring import appended, parameters
from ._report import BoundResult, Inequality

__all__ = ["H", "cross_similarity_bound", "theorem1", "intra_similarity_floor", "corollary1", "split_threshold",
           "split_criterion"]

_RELATIVE_ERROR = [Interval(Real, 0, 1, closed="left")]  # gamma_i < 1: the empirical gradient keeps its side
_COSINE = [Interval(Real, -1, 1, closed="both")]
_DISTRIBUTIONS = [Interval(Integral, 2, 2**53)]  # k >= 2: a split needs two distributions
_RELATIVE = "relative gradient error gamma = ||grad R(theta*) - grad r(theta*)|| / ||grad R(theta*)||, in [0, 1)"
_ENTRIES = {
    "gamma_i": ("float", f"client i's {_RELATIVE}"),
    "gamma_j": ("float", f"client j's {_RELATIVE}"),
    "H_value": ("float", "H_(i,j), in [-1, 1]"),
    "k": ("int", "the number of distributions (k >= 2)"),
    "gamma_max": ("float", "the largest relative gradient error over the clients, in [0, 1) (Corollary 1: (0, 1))"),
    "alpha_cross_max": ("float", "alpha_cross^max, the largest cross similarity of the argmin bipartition, in "
                                 "[-1, 1]"),
}


def _H(gamma_i, gamma_j):
    return -gamma_i * gamma_j + np.sqrt(1.0 - gamma_i**2) * np.sqrt(1.0 - gamma_j**2)


def _cross(H_value, k):
    if k == 2:  # cos(pi) = -1 and sin(pi) = 0 exactly: the remark's -H (np.sin(np.pi) is 1.2e-16)
        return -float(H_value)
    angle = np.pi / (k - 1)
    if H_value < np.cos(angle):
        return 1.0
    return float(np.cos(angle) * H_value + np.sin(angle) * np.sqrt(max(0.0, 1.0 - H_value**2)))


@appended(parameters(_ENTRIES, "gamma_i", "gamma_j"))
@bound_params({"gamma_i": _RELATIVE_ERROR, "gamma_j": _RELATIVE_ERROR})
def H(gamma_i, gamma_j) -> float:
    """``H_(i,j) = -gamma_i gamma_j + sqrt(1 - gamma_i^2) sqrt(1 - gamma_j^2)``, in (-1, 1]."""
    return float(_H(gamma_i, gamma_j))


@appended(parameters(_ENTRIES, "H_value", "k"))
@bound_params({"H_value": _COSINE, "k": _DISTRIBUTIONS})
def cross_similarity_bound(H_value, k) -> float:
    """Theorem 1's bound on the largest cross similarity of some bipartition:
    ``cos(pi/(k-1)) H + sin(pi/(k-1)) sqrt(1 - H^2)`` if ``H >= cos(pi/(k-1))``, else 1
    (``= cos(pi/(k-1) - acos H)``; -H for k = 2).
    """
    return _cross(H_value, k)


@appended(parameters(_ENTRIES, "gamma_i", "gamma_j", "k"))
@bound_params({"gamma_i": _RELATIVE_ERROR, "gamma_j": _RELATIVE_ERROR, "k": _DISTRIBUTIONS})
def theorem1(*, gamma_i, gamma_j, k) -> BoundResult:
    """Theorem 1 (separation theorem), both inequalities at one pair's H_(i,j): some bipartition
    has largest cross similarity

        alpha_cross^max <= cos(pi/(k-1)) H_(i,j) + sin(pi/(k-1)) sqrt(1 - H_(i,j)^2)  if H_(i,j) >= cos(pi/(k-1)),
                           else 1,
        alpha_intra^min >= min_(I(i)=I(j)) H_(i,j);   for k = 2: alpha_cross^max <= max(-H_(i,j)).

    As CATALOGUE.md states it ([S]); the primary text was not reachable here (module
    docstring). ``value`` is the cross bound at H = H(gamma_i, gamma_j), ``derived`` has H (the
    intra floor the pair gives) and cos(pi/(k-1)); gamma_i = gamma_j = gamma_max gives the
    bounds every pair meets (H is decreasing in each gamma, the cross bound non-increasing in H).
    """
    H_value = float(_H(gamma_i, gamma_j))
    threshold = np.cos(np.pi / (k - 1))
    rows = (Inequality("H_(i,j) >= cos(pi/(k-1)) (else the cross bound is the trivial 1)", H_value, threshold, ">=",
                       "CFL Theorem 1"),)
    return BoundResult("CFL.T1", _cross(H_value, k), {}, {"H": H_value, "intra_similarity_floor": H_value,
                                                          "cos_pi_over_k_minus_1": threshold}, rows,
                       theorem1.__doc__)


@appended(parameters(_ENTRIES, "gamma_max"))
@bound_params({"gamma_max": _RELATIVE_ERROR})
def intra_similarity_floor(gamma_max) -> float:
    """``1 - 2 gamma_max^2 = H(gamma_max, gamma_max)``: every H_(i,j), hence (Theorem 1)
    alpha_intra^min, is at least this when every gamma_i <= gamma_max.
    """
    return 1.0 - 2.0 * gamma_max**2


@appended(parameters(_ENTRIES, "gamma_max", "k"))
@bound_params({"gamma_max": PROBABILITY, "k": _DISTRIBUTIONS})
def corollary1(*, gamma_max, k) -> BoundResult:
    """Corollary 1 with Theorem 1's bounds: if alpha_intra^min > alpha_cross^max the argmin
    bipartition is correct; Theorem 1 guarantees it when every gamma_i <= gamma_max and

        1 - 2 gamma_max^2 > cross bound at H = 1 - 2 gamma_max^2,   i.e.  gamma_max < sin(pi/(4(k-1))).

    ``value`` is the guaranteed gap, intra floor minus cross ceiling (the Corollary's condition
    is that it be positive); ``derived["gamma_max_limit"]`` is sin(pi/(4(k-1))) (1/sqrt(2) for
    k = 2). As CATALOGUE.md states Theorem 1 and Corollary 1 ([S]); the gap is this encoding's
    combination of the two.
    """
    floor = 1.0 - 2.0 * gamma_max**2
    ceiling = _cross(floor, k)
    rows = (Inequality("1 - 2 gamma_max^2 > Theorem 1's cross bound (Corollary 1's condition)", floor, ceiling, ">",
                       "CFL Theorem 1 and Corollary 1"),)
    return BoundResult("CFL.C1", floor - ceiling, {}, {"intra_similarity_floor": floor, "cross_similarity_bound":
                                                       ceiling, "gamma_max_limit": np.sin(np.pi / (4.0 * (k - 1)))},
                       rows, corollary1.__doc__)


@appended(parameters(_ENTRIES, "alpha_cross_max"))
@bound_params({"alpha_cross_max": _COSINE})
def split_threshold(alpha_cross_max) -> float:
    """The split test's ``sqrt((1 - alpha_cross^max)/2)``: the bipartition is certainly correct
    when gamma_max is below it.
    """
    return float(np.sqrt((1.0 - alpha_cross_max) / 2.0))


@appended(parameters(_ENTRIES, "gamma_max", "alpha_cross_max"))
@bound_params({"gamma_max": PROBABILITY, "alpha_cross_max": _COSINE})
def split_criterion(*, gamma_max, alpha_cross_max) -> BoundResult:
    """The split test and what it stands for: ``gamma_max < sqrt((1 - alpha_cross^max)/2)``
    (the test), and ``1 - 2 gamma_max^2 > alpha_cross^max`` (Theorem 1's intra floor above the
    cross similarity, Corollary 1's condition): the test follows from Theorem 1 and Corollary 1
    when the two rows agree, which they must for every gamma_max and alpha_cross^max.

    ``value`` is the threshold sqrt((1 - alpha_cross^max)/2).
    """
    threshold = float(np.sqrt((1.0 - alpha_cross_max) / 2.0))
    rows = (Inequality("gamma_max < sqrt((1 - alpha_cross^max)/2) (the split test)", gamma_max, threshold, "<",
                       "CFL split test"),
            Inequality("1 - 2 gamma_max^2 > alpha_cross^max (Theorem 1's intra floor)", 1.0 - 2.0 * gamma_max**2,
                       alpha_cross_max, ">", "CFL Theorem 1 and Corollary 1"))
    return BoundResult("CFL.C1", threshold, {}, {"intra_similarity_floor": 1.0 - 2.0 * gamma_max**2}, rows,
                       split_criterion.__doc__)
