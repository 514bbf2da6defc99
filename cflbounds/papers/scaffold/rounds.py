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

__all__ = ["dissimilarity", "fedavg_gaps", "scaffold_gaps", "best_rounds", "crossing", "rounds_per_efold",
           "WINDOW", "t4_rounds_per_efold"]

# T4's window: from 1e-4 to 1e-8 of the start's gap. Earlier, the round's first steps (fast directions,
# control variates from 0) are not yet the rate; later, option II's control variates started at 0 leave a
# component near 1e-9 of the start's gap that decays by about one local step per round (seen on these
# problems at K = 32: docs/papers.md)
WINDOW = (1e-4, 1e-8)


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


def best_rounds(gaps: np.ndarray, accuracy: float) -> tuple[np.ndarray, np.ndarray]:
    """Per problem, the fewest (fractional: :func:`crossing`) rounds to a gap at most ``accuracy``
    over the grid, and the grid position that achieved it; ``inf`` where no step does."""
    rounds = crossing(gaps, accuracy)
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


def t4_rounds_per_efold(problem, K: int, grid, option: str) -> tuple[np.ndarray, np.ndarray]:
    """SCAFFOLD's rounds per e-fold of accuracy in :data:`WINDOW` (:func:`rounds_per_efold`) at K
    local steps, the best of ``grid`` per problem, run from ``||x_0 - x*|| = 1`` for
    ``ln(1/WINDOW[1]) / (K mu) + 10`` rounds (the smallest mu of the batch: enough for a step of
    ``1/(2 beta)`` or more to cross the window; the best step of these runs is the grid's largest)."""
    mu = float(np.min(problem.strong_convexity))
    rounds = int(np.ceil(np.log(1.0 / WINDOW[1]) / (K * mu))) + 10
    return rounds_per_efold(scaffold_gaps(problem, K=K, grid=grid, rounds=rounds, distance=1.0, option=option), *WINDOW)
