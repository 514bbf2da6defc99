"""A straightforward reference for the IFCA Fig. 2 protocol, written as a paper's own code would.

One run at a time (loop over trials, restarts, step sizes), a Python loop over machines in
every iteration, plain NumPy mat-vecs: for machine ``i`` the residuals ``X_i theta_j - y_i``
of every model ``j``, the argmin of the mean squared losses (first index on ties), then the
machine gradient ``(2/n) X_i^T r`` added to its cluster's sum; the server steps
``theta_j <- theta_j - (gamma/m) sum_{i in S_j} g_i``. Every run does all T iterations, even
after its models overflow (the authors' loop does not stop either). float32 by default, like
the authors' torch code; float64 on request.

The data and initial models are the batched run's: the problem comes from
``make_mixed_linear_regression(..., seed=[trial seeds], dtype=...)`` and the inits from
``initial_models(problem, variant, restarts, k, seed=cell['seed'], shared=cell['shared_inits'])``,
exactly as ``run_fig2_cell`` / ``ifca`` build them, so outcomes are comparable run by run.

Usage (one cell, a few trials)::

    from benchmarks.reference_ifca import reference_fig2_cell
    runs, trials = reference_fig2_cell(cell, trials=2)
"""
from __future__ import annotations

import itertools
import time

import numpy as np
import pandas as pd

from cflbounds.algorithms.initialization import initial_models
from cflbounds.sweeps import ifca_fig2
from cflbounds.sweeps.grid import trial_seeds
from cflbounds.sweeps.ifca_fig2 import STEP_SIZES
from cflbounds.synthetic import make_mixed_linear_regression

__all__ = ["reference_run", "reference_fig2_cell", "run_distance", "threshold", "cell_trial_seeds"]


def cell_trial_seeds(cell: dict) -> tuple[int, ...]:
    """The cell's data seeds as ``run_fig2_cell`` derives them (from the cell's problem key when
    the sweep has one, so execution settings such as dtype or early exit keep the data)."""
    key = ifca_fig2._problem_key(cell) if hasattr(ifca_fig2, "_problem_key") else cell
    return trial_seeds(cell["seed"], key, cell["trials"])


def threshold(cell: dict) -> float:
    """Success threshold of the protocol: ``0.6 sigma`` (+0.001 on the noise panels)."""
    return 0.6 * cell["sigma"] + (0.001 if cell["noise_panel"] else 0.0)


def reference_run(X: np.ndarray, Y: np.ndarray, theta0: np.ndarray, step: float, iterations: int) -> np.ndarray:
    """One IFCA run, per machine and per model: ``X`` ``(m, n, d)``, ``Y`` ``(m, n)``,
    ``theta0`` ``(k, d)``; returns the final models ``(k, d)`` in the data's dtype."""
    m, n, _ = X.shape
    k = theta0.shape[0]
    dtype = X.dtype.type
    theta = theta0.astype(X.dtype, copy=True)
    grad_scale = dtype(2.0 / n)
    server_scale = dtype(step / m)
    with np.errstate(all="ignore"):  # a diverging run overflows; it is scored as NaN at the end
        for _ in range(iterations):
            grad_sum = np.zeros_like(theta)
            for i in range(m):
                Xi, yi = X[i], Y[i]
                residuals = [Xi @ theta[j] - yi for j in range(k)]
                losses = [np.mean(r * r) for r in residuals]  # mean squared error per model
                j = int(np.argmin(losses))  # first index on ties (and on NaN)
                grad_sum[j] += grad_scale * (Xi.T @ residuals[j])
            theta -= server_scale * grad_sum
    return theta


def run_distance(theta: np.ndarray, theta_star: np.ndarray) -> tuple[float, float]:
    """``(nearest, matched)`` distances in float64; NaN if the models are not finite."""
    theta = np.asarray(theta, dtype=np.float64)
    if not np.all(np.isfinite(theta)):
        return np.nan, np.nan
    table = np.linalg.norm(theta[:, None, :] - theta_star[None, :, :], axis=-1)  # (k, k*)
    nearest = float(table.min(axis=1).mean())
    k = table.shape[0]
    if k == table.shape[1]:
        matched = min(float(table[np.arange(k), list(p)].mean()) for p in itertools.permutations(range(k)))
    else:
        matched = np.nan
    return nearest, matched


def reference_fig2_cell(cell: dict, trials: int | None = None, dtype: str | None = None,
                        verbose: bool = False) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The first ``trials`` trials of a Fig. 2 cell, one run at a time.

    Returns ``(runs, outcomes)``: one row per run (``trial, restart, step_size,
    dist_nearest, dist_matched, diverged, seconds``) and one row per trial (``trial,
    best_distance, success, seconds``), with the protocol's success rule (NaN runs skipped,
    an all-NaN trial fails).
    """
    trials = cell["trials"] if trials is None else trials
    dtype = cell["dtype"] if dtype is None else dtype
    k, m, n, d = cell["k"], cell["m"], cell["n"], cell["d"]
    variant, restarts = cell["variant"], cell["restarts"]
    steps = STEP_SIZES[k]
    limit = threshold(cell)
    seeds = cell_trial_seeds(cell)[:trials]
    runs, outcomes = [], []
    for trial, seed in enumerate(seeds):  # one data seed at a time
        start = time.perf_counter()
        problem = make_mixed_linear_regression(
            k, m, n, d, sigma=cell["sigma"], truth=variant, scale=cell["r"], batch_size=1,
            seed=[seed], dtype=dtype,
        )
        X, Y = problem.features[0].numpy(), problem.responses[0].numpy()
        theta_star = problem.theta_star_exact[0]
        inits = initial_models(problem, variant, restarts, k, seed=cell["seed"], shared=cell["shared_inits"])[0]
        trial_runs = []
        for restart in range(restarts):
            for step in steps:
                run_start = time.perf_counter()
                theta = reference_run(X, Y, inits[restart], step, cell["iterations"])
                nearest, matched = run_distance(theta, theta_star)
                trial_runs.append({"trial": trial, "restart": restart, "step_size": step, "dist_nearest": nearest,
                                   "dist_matched": matched, "diverged": not np.isfinite(nearest),
                                   "seconds": time.perf_counter() - run_start})
        distance = "dist_nearest" if variant == "official" else "dist_matched"
        finite = [row[distance] for row in trial_runs if np.isfinite(row[distance])]
        best = min(finite) if finite else np.nan
        outcomes.append({"trial": trial, "problem_seed": seed, "best_distance": best,
                         "success": bool(finite) and best < limit, "seconds": time.perf_counter() - start})
        runs += trial_runs
        if verbose:
            print(f"  reference trial {trial}: best {best:.4g} success {outcomes[-1]['success']} "
                  f"({outcomes[-1]['seconds']:.1f} s)", flush=True)
    return pd.DataFrame(runs), pd.DataFrame(outcomes)
