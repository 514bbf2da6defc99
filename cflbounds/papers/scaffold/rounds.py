"""SCAFFOLD's measured quantities (Karimireddy et al., ICML 2020): rounds to an accuracy, and the
best gap after R rounds, of SCAFFOLD and of FedAvg with two step sizes, each at the best constant
local step of a grid.

Reading shared by the four claims (the rates' exact step sizes are in the paper's appendix, which
could not be read here): ``sigma = 0`` (the noise terms of the rates vanish; the other terms are
what is tested), all clients every round (``S = N``: the sampling terms vanish too),
``eta_g = 1``, constant local steps ``eta_l`` on a grid and, per problem, the best of them: the
theorems state what suitably chosen steps achieve, and the best step of a grid achieves at least
that much where the grid holds the theorem's step. FedAvg with ``eta_g = 1``, ``S = N`` and full
gradients is local GD synchronising every K steps (tested equal to ``fedavg_two_steps``), computed
by segment maps; SCAFFOLD is :func:`~cflbounds.algorithms.scaffold` (option II unless a claim says
otherwise), its control variates starting at 0. Problems: heterogeneous quadratics with uniform
weights and exact (G, B) (:func:`dissimilarity`) and delta.
"""
from __future__ import annotations

import numpy as np

from cflbounds.algorithms import local_gd_segments, scaffold
from ..catalogue_quadratics import rounds_to, starts

__all__ = ["dissimilarity", "fedavg_gaps", "scaffold_gaps", "best_rounds", "crossing", "rounds_per_efold"]


def dissimilarity(problem) -> tuple[np.ndarray, np.ndarray]:
    """``(G, B)`` of each problem: ``G^2 = 2 (1/N) sum_i ||grad f_i(x*)||^2`` (twice its smallest
    possible value, the dispersion at x*) and the smallest ``B`` that satisfies the (G, B) gradient
    dissimilarity with it (exact). With optima ``h u_i``, G grows like h and B does not change."""
    G = np.sqrt(2.0 * problem.optimum_gradient_variance)
    return G, problem.dissimilarity_B(G)


def _grid_batch(problem, grid, distance):
    """Each problem once per grid step (problem-major) and the starts ``x* + distance u``."""
    B = problem.batch_size
    batch = problem.subset(np.repeat(np.arange(B), len(grid)).tolist())
    x0 = np.repeat(starts(problem, np.full(B, distance), problem.seeds), len(grid), axis=0)
    return batch, x0


def fedavg_gaps(problem, *, K: int, grid, rounds: int, distance: float) -> np.ndarray:
    """FedAvg (two step sizes, ``eta_g = 1``, ``S = N``, ``sigma = 0``) at every local step of
    ``grid``: the gap after every round, ``(B, len(grid), rounds + 1)``."""
    batch, x0 = _grid_batch(problem, grid, distance)
    trace = local_gd_segments(batch, steps=rounds * K, step_size=np.tile(grid, problem.batch_size), sync=K, init=x0)
    return trace.objective_gap.reshape(problem.batch_size, len(grid), -1)


def scaffold_gaps(problem, *, K: int, grid, rounds: int, distance: float, option: str = "II") -> np.ndarray:
    """SCAFFOLD (``eta_g = 1``, ``S = N``, control variates from 0) at every local step of ``grid``:
    the gap after every round, ``(B, len(grid), rounds + 1)``."""
    batch, x0 = _grid_batch(problem, grid, distance)
    trace = scaffold(batch, rounds=rounds, local_steps=K, local_step_size=np.tile(grid, problem.batch_size),
                     option=option, init=x0)
    return trace.objective_gap.reshape(problem.batch_size, len(grid), -1)


def best_rounds(gaps: np.ndarray, accuracy) -> tuple[np.ndarray, np.ndarray]:
    """Per problem, the fewest rounds to a gap at most ``accuracy`` (one per problem, or one for
    all) over the grid, and the grid position that achieved it; ``inf`` where no step does."""
    accuracy = np.broadcast_to(np.asarray(accuracy, dtype=float), gaps.shape[:1])
    rounds = rounds_to(gaps, np.repeat(accuracy[:, None], gaps.shape[1], axis=1))
    return rounds.min(axis=1), rounds.argmin(axis=1)


def crossing(gaps: np.ndarray, accuracy: float) -> np.ndarray:
    """The (fractional) round at which each run's gap first falls to ``accuracy``: between the
    rounds ``r - 1`` and ``r`` around it, interpolated linearly in ``log gap`` (a run that
    converges geometrically crosses there exactly); ``inf`` where it never does."""
    first = rounds_to(gaps, np.full(gaps.shape[:-1], accuracy))
    index = np.where(np.isfinite(first), first, 1).astype(int)
    before = np.take_along_axis(gaps, np.maximum(index - 1, 0)[..., None], axis=-1)[..., 0]
    after = np.take_along_axis(gaps, index[..., None], axis=-1)[..., 0]
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.log(before / accuracy) / np.log(before / after)
    return np.where(np.isfinite(first), np.where(index > 0, index - 1 + np.clip(share, 0.0, 1.0), 0.0), np.inf)


def rounds_per_efold(gaps: np.ndarray, first: float, last: float) -> tuple[np.ndarray, np.ndarray]:
    """Per problem and grid step, the rounds from a gap ``first`` times the start's to ``last``
    times it (:func:`crossing`, so no round's granularity), per e-fold of accuracy
    (``/ ln(first/last)``): the rounds the O~ rates count with their ``log(1/eps)`` factor and any
    warm-up left out; the best over the grid per problem and its position (``inf`` where no step
    reaches ``last``)."""
    relative = gaps / gaps[..., :1]
    with np.errstate(invalid="ignore"):  # neither reached: inf - inf
        reached = crossing(relative, last) - crossing(relative, first)
    per_efold = np.where(np.isfinite(reached), reached, np.inf) / np.log(first / last)
    return per_efold.min(axis=1), per_efold.argmin(axis=1)
