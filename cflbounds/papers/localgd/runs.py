"""Local GD's measured instances: one problem, one step, one synchronisation gap, at horizons T.

A run is :func:`~cflbounds.algorithms.local_gd_segments` (the per-step loop's iterates at the
horizons, tested equal to :func:`~cflbounds.algorithms.local_gd`), from ``x_0 = x* + D u`` on a
heterogeneous quadratic problem with uniform weights; every constant is exact: ``L`` (the largest
eigenvalue of any ``A_m``), ``sigma^2 = (1/M) sum_m ||grad f_m(x*)||^2``, ``||x_0 - x*||^2 = D^2``.
The measured quantity is ``f(x_bar_T) - f*`` (exact, float64, from the run's iterates), the
trivial reference ``f(x_0) - f*`` (a bound at or above it says nothing the start does not).
"""
from __future__ import annotations

import numpy as np

from cflbounds.algorithms import local_gd_segments
from cflbounds.bounds import localgd as bounds
from cflbounds.claims import Inequality
from ..catalogue_quadratics import starts

__all__ = ["RTOL", "run_cells", "convexity_row", "cell_constants"]

# measured and bound are float64 formulas of the same exact constants and a run of at most 10^4
# steps: their rounding stays below 1e-12 relative (tests/test_local_gd_segments.py: 1e-10 on the
# iterates, far less on the gaps); 1e-9 leaves room and is far below any planted error (>= 1 %)
RTOL = 1e-9


def cell_constants(problem) -> dict:
    """The exact constants of each problem of the batch: ``L``, ``sigma_sq`` (arrays ``(B,)``)."""
    return {"L": np.asarray(problem.smoothness, dtype=float),
            "sigma_sq": np.asarray(problem.optimum_gradient_variance, dtype=float)}


def convexity_row(problem, b: int) -> Inequality:
    """Khaled et al.'s assumption that every f_m is convex: ``min_m lambda_min(A_m) >= 0``."""
    return Inequality("every f_m convex: min_m lambda_min(A_m) >= 0", float(problem.client_strong_convexity[b].min()),
                      0.0, ">=", "Local GD (Khaled et al. 2019), Sec. 2")


def run_cells(problem, *, distance, step_size, sync: int, horizons) -> dict:
    """Local GD on every problem of the batch from ``x* + distance u`` at its own step
    (``step_size``: ``(B,)``), synchronising every ``sync`` steps, read at ``horizons``.

    Returns ``gap`` ``(B, len(horizons))`` (``f(x_bar_T) - f*``), ``trivial`` ``(B,)``
    (``f(x_0) - f*``) and the run's trace."""
    horizons = np.asarray(horizons, dtype=np.int64)
    seeds = problem.seeds
    x0 = starts(problem, distance, seeds)
    trace = local_gd_segments(problem, steps=int(horizons.max()), step_size=np.asarray(step_size, dtype=float),
                              sync=int(sync), horizons=horizons, init=x0, record_syncs=False)
    index = np.searchsorted(trace.steps, horizons)
    return {"gap": trace.averaged_gap[:, index], "trivial": trace.objective_gap[:, 0], "trace": trace}


def theorem1_terms(constants: dict, b: int, distance: float, gamma: float, H: int, T: int):
    """Theorem 1's bound (a BoundResult) for problem ``b`` of a batch."""
    return bounds.theorem1(initial_distance_sq=float(distance) ** 2, sigma_sq=float(constants["sigma_sq"][b]),
                           L=float(constants["L"][b]), gamma=float(gamma), H=int(H), T=int(T))
