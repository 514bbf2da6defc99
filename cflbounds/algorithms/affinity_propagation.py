"""Affinity propagation (Frey & Dueck, Science 2007) as DSC writes it (eqs. 8-10), batched.

Messages between points i and candidate exemplars k, from all-zero R and A:

* responsibility (eq. 8)  ``R(i,k) = S(i,k) - max_{k' != k} [S(i,k') + A(i,k')]``
* availability   (eq. 9)  ``A(i,k) = min[0, R(k,k) + sum_{i' not in {i,k}} max(0, R(i',k))]``, i != k
* self-availability (eq. 10) ``A(k,k) = sum_{i' != k} max(0, R(i',k))`` (standard AP, the
  default ``self_availability="sum"``); the paper prints ``max_{i' != k}`` in place of the
  sum (``self_availability="max"``, CLAIMS.md's note).

Ties: Gamma (eq. 6) and eq. (12) are symmetric, so DSC's similarities hold exact ties, on
which AP can oscillate between equivalent exemplars and never settle. Frey & Dueck's
reference code and scikit-learn add tiny noise before iterating,
``S <- S + (eps S + 100 tiny) N(0, 1)`` (preferences on the diagonal included; float64's eps
and tiny), and so does this implementation by default (``tie_breaking=True``, for either
eq. 10): ``N(0, 1)`` is ``numpy.random.RandomState(seed_b).standard_normal((n_b, n_b))``
over the ``n_b`` valid points of problem b, scikit-learn's stream for ``random_state=seed_b``
(the two iterate on bit-identical matrices); a problem's noise depends only on its seed.

Messages are damped, ``M <- damping M + (1 - damping) M_new`` (standard; the paper does not
say), and the iteration stops when the exemplar set ``{k : R(k,k) + A(k,k) > 0}`` has not
changed for ``convergence_iter`` iterations ("until the group boundaries do not change for
T_cl consecutive rounds") or after ``max_iter`` iterations. As scikit-learn, a problem whose
similarities are all equal and whose preferences are all equal is not iterated: every point
leads itself when the preference exceeds the similarity, else the first point leads all.

Decision: ``"standard"`` (Frey & Dueck's reference code, as scikit-learn): exemplars are the
points with ``R(k,k) + A(k,k) > 0``; each other point joins its most similar exemplar; each
cluster's exemplar is then refined to the member with the largest summed similarity from
its cluster, and points are reassigned. ``"paper"`` (Sec. III-A): point i is a leader when
the maximum of row i of ``R + A`` lies on the diagonal, else it joins the column of that
maximum; when that column is not a leader the point is left over (assignment -1; DSC joins
it to the nearest group).

Problems of different sizes share one batch through ``valid`` (padding is ignored exactly).
"""
from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np

from .._validation import ArrayLike, Boolean, Constraint, Interval, NoneOK, Options, SeedArray, require, validate_params

__all__ = ["AffinityResult", "affinity_propagation", "median_preference", "SELF_AVAILABILITY", "DECISIONS"]

SELF_AVAILABILITY = ("sum", "max")
DECISIONS = ("standard", "paper")


@dataclass(frozen=True)
class AffinityResult:
    """Per problem of the batch: ``exemplar`` ``(B, n)`` bool, ``assignment`` ``(B, n)``
    (index of each point's exemplar, itself for an exemplar, -1 for a left-over point or
    padding), ``converged`` ``(B,)`` and ``iterations`` ``(B,)``."""

    exemplar: np.ndarray
    assignment: np.ndarray
    converged: np.ndarray
    iterations: np.ndarray


def median_preference(similarity: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """The median of each problem's off-diagonal similarities between valid points, ``(B,)``;
    0 for a single point. This is Frey & Dueck's default (the median of the input
    similarities s(i,k), i != k). scikit-learn's default differs: ``np.median(S)`` over the
    whole matrix, diagonal included (pass it as ``preference`` to reproduce scikit-learn)."""
    pairs = valid[:, :, None] & valid[:, None, :] & ~np.eye(similarity.shape[-1], dtype=bool)
    return np.array([np.median(s[p]) if p.any() else 0.0 for s, p in zip(similarity, pairs)])


_MAX_SEED = 2**32 - 1  # numpy.random.RandomState's seed range
_SEED_PER_PROBLEM = Constraint(lambda v: SeedArray.is_satisfied_by(v) and int(np.max(v)) <= _MAX_SEED,
                               f"one int in [0, {_MAX_SEED}] per problem (B,)")


def _break_ties(S, valid, seeds):
    """Frey & Dueck's (and scikit-learn's) degeneracy removal on each problem's valid block,
    in place: ``S += (eps S + 100 tiny) N(0, 1)`` with scikit-learn's stream for its seed."""
    finfo = np.finfo(S.dtype)
    for b, seed in enumerate(seeds):
        ix = np.ix_(np.flatnonzero(valid[b]), np.flatnonzero(valid[b]))
        block = S[b][ix]
        noise = np.random.RandomState(int(seed)).standard_normal(size=block.shape)
        S[b][ix] = block + (finfo.eps * block + finfo.tiny * 100) * noise


def _degenerate(S, valid):
    """scikit-learn's shortcut for problems of >= 2 points whose similarities are all equal and
    whose preferences are all equal (e.g. any 2-point problem at the median preference):
    ``(B,)`` masks of those problems and of those where every point is an exemplar
    (preference above the similarity; else point 0 leads all)."""
    degenerate, split = np.zeros(len(S), bool), np.zeros(len(S), bool)
    for b in np.flatnonzero(valid.sum(-1) >= 2):
        points = np.flatnonzero(valid[b])
        block = S[b][np.ix_(points, points)]
        off, diagonal = block[~np.eye(len(points), dtype=bool)], np.diagonal(block)
        degenerate[b] = np.all(off == off[0]) and np.all(diagonal == diagonal[0])
        split[b] = diagonal[0] > off[0]
    return degenerate, degenerate & split


def _responsibility(S, A, pairs):
    """eq. (8) with the max over valid k' != k (top-two trick)."""
    AS = np.where(pairs, S + A, -np.inf)
    best = np.argmax(AS, axis=-1)
    first = np.take_along_axis(AS, best[..., None], -1)
    np.put_along_axis(AS, best[..., None], -np.inf, -1)
    second = AS.max(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore"):
        R = S - first
        np.put_along_axis(R, best[..., None], np.take_along_axis(S, best[..., None], -1) - second, -1)
    return np.where(pairs, R, 0.0)


def _availability(R, pairs, eye, self_availability):
    """eqs. (9)-(10); ``R`` is zero outside valid pairs, so sums over i' see valid points only."""
    positive = np.where(eye, R, np.maximum(R, 0.0))
    column = positive.sum(axis=-2, keepdims=True)  # R(k,k) + sum_{i' != k} max(0, R(i',k))
    A = np.minimum(column - positive, 0.0)
    if self_availability == "sum":
        self_term = column[..., 0, :] - np.diagonal(R, axis1=-2, axis2=-1)
    else:
        self_term = np.where(eye | ~pairs, 0.0, np.maximum(R, 0.0)).max(axis=-2)
    A = np.where(eye, self_term[:, None, :], A)
    return np.where(pairs, A, 0.0)


def _standard_decision(S, exemplar, valid):
    """Frey & Dueck's final step: assign to the most similar exemplar, refine each cluster's
    exemplar to its member with the largest summed within-cluster similarity, reassign."""
    n = S.shape[-1]
    idx = np.arange(n)

    def assign(ex):
        scores = np.where(ex[:, None, :], S, -np.inf)
        choice = np.argmax(scores, axis=-1)
        choice = np.where(ex, idx, choice)
        return np.where(valid & ex.any(-1, keepdims=True), choice, -1)

    label = assign(exemplar)
    same = (label[:, :, None] == label[:, None, :]) & (label[:, :, None] >= 0)
    summed = np.where(same, S, 0.0).sum(axis=-2)  # point j: sum of S(i, j) over i in j's cluster
    best_in_cluster = np.argmax(np.where(same, summed[:, None, :], -np.inf), axis=-1)  # per point: its cluster's best
    refined = np.zeros_like(exemplar)
    rows, points = np.nonzero(label >= 0)
    refined[rows, best_in_cluster[rows, points]] = True
    return refined, assign(refined)


def _paper_decision(C, valid, pairs):
    n = C.shape[-1]
    choice = np.argmax(np.where(pairs | np.eye(n, dtype=bool), C, -np.inf), axis=-1)
    leader = (choice == np.arange(n)) & valid
    joined = np.take_along_axis(leader, choice, -1)
    return leader, np.where(valid & joined, choice, -1)


@validate_params({
    "similarity": [ArrayLike],
    "preference": [NoneOK, Options(("median",)), Interval(Real, None, None), ArrayLike],
    "valid": [NoneOK, Constraint(lambda v: np.asarray(v).dtype == bool, "a boolean array")],
    "damping": [Interval(Real, 0.5, 1, closed="left")],
    "max_iter": [Interval(Integral, 1, None, closed="left")],
    "convergence_iter": [Interval(Integral, 1, None, closed="left")],
    "self_availability": [Options(SELF_AVAILABILITY)],
    "decision": [Options(DECISIONS)],
    "tie_breaking": [Boolean],
    "seed": [Interval(Integral, 0, _MAX_SEED, closed="both"), _SEED_PER_PROBLEM],
})
def affinity_propagation(similarity, *, preference="median", valid=None, damping: float = 0.5, max_iter: int = 200,
                         convergence_iter: int = 15, self_availability: str = "sum", decision: str = "standard",
                         tie_breaking: bool = True, seed=0) -> AffinityResult:
    """Run affinity propagation on ``similarity`` ``(n, n)`` or ``(B, n, n)`` (see the module
    docstring). ``preference``: ``None`` keeps the diagonal given, ``"median"`` uses each
    problem's median off-diagonal similarity, or a number or an array ``(n,)``/``(B, n)``.
    ``valid`` ``(B, n)`` marks the real points of padded problems. ``tie_breaking`` adds
    scikit-learn's tiny noise, drawn from ``seed`` (one int for all problems, or one per
    problem ``(B,)``); ``False`` iterates on the similarities exactly as given."""
    S = np.array(similarity, dtype=float)
    single = S.ndim == 2
    S = S[None] if single else S
    require(S.ndim == 3 and S.shape[1] == S.shape[2],
            f"The 'similarity' parameter must be (n, n) or (B, n, n). Got shape {np.shape(similarity)}.")
    B, n = S.shape[:2]
    valid = np.ones((B, n), bool) if valid is None else np.broadcast_to(np.asarray(valid, bool), (B, n)).copy()
    eye = np.eye(n, dtype=bool)
    pairs = valid[:, :, None] & valid[:, None, :]
    if preference is not None:
        values = median_preference(S, valid)[:, None] if isinstance(preference, str) else np.asarray(preference, float)
        S[:, eye] = np.broadcast_to(values, (B, n))
    degenerate, split = _degenerate(S, valid)
    if tie_breaking:
        require(np.ndim(seed) == 0 or np.size(seed) == B,
                f"The 'seed' parameter must be one int or {B} of them (one per problem). Got {np.size(seed)}.")
        _break_ties(S, valid, np.broadcast_to(np.asarray(seed), (B,)))
    R, A = np.zeros_like(S), np.zeros_like(S)
    history = np.zeros((B, n, convergence_iter), dtype=bool)
    exemplar = np.zeros((B, n), dtype=bool)
    iterations = np.zeros(B, dtype=int)
    converged = valid.sum(-1) <= 1  # a lone point is its own exemplar
    exemplar[converged] = valid[converged]
    active = np.flatnonzero(~converged & ~degenerate)
    for it in range(max_iter):
        if active.size == 0:
            break
        S_a, P_a = S[active], pairs[active]
        R[active] = damping * R[active] + (1 - damping) * _responsibility(S_a, A[active], P_a)
        A[active] = damping * A[active] + (1 - damping) * _availability(R[active], P_a, eye, self_availability)
        current = (np.diagonal(R[active] + A[active], axis1=1, axis2=2) > 0) & valid[active]
        exemplar[active] = current
        history[active, :, it % convergence_iter] = current
        iterations[active] = it + 1
        if it >= convergence_iter:
            stable = history[active].all(-1) | ~history[active].any(-1)
            done = stable.all(-1) & current.any(-1)
            converged[active[done]] = True
            active = active[~done]
    if decision == "standard":
        exemplar, assignment = _standard_decision(S, exemplar, valid)
    else:
        exemplar, assignment = _paper_decision(R + A, valid, pairs)
    if degenerate.any():  # as scikit-learn: no iteration, all points or the first one lead
        first = np.argmax(valid, axis=-1)
        lead = np.where(split[:, None], valid, np.arange(n) == first[:, None])
        exemplar[degenerate] = lead[degenerate]
        assignment[degenerate] = np.where(valid, np.where(split[:, None], np.arange(n), first[:, None]), -1)[degenerate]
        converged |= degenerate
    result = AffinityResult(exemplar, assignment, converged, iterations)
    if single:
        return AffinityResult(exemplar[0], assignment[0], converged[0], iterations[0])
    return result
