"""Flop counts of one IFCA iteration (gradient averaging, squared loss, no re-sampling) and
the run slots the batched loop actually works on.

Counted from the kernels in ``cflbounds/algorithms/squared_loss.py`` and the update in
``cflbounds/algorithms/ifca.py``, per problem with ``C`` run slots of ``k`` models:

* ``residuals``: one GEMM ``(m n x d) @ (d x C k)`` = ``2 m n d C k``, minus the responses
  ``m n C k``;
* ``estimate_clusters``: square and sum over the n points, ``2 m n C k``;
* ``cluster_gradient_sums``: residuals masked by the one-hot choice ``m n C k``, one GEMM
  ``(d x m n) @ (m n x C k)`` = ``2 m n d C k``, then the scale ``C k d``;
* the server step: ``(gamma/m) * sums`` and the subtraction, ``2 C k d``.

The reference does the useful part of this arithmetic per run as ``k + 1`` mat-vecs per
machine (the GEMM form also multiplies the zeroed residuals of the models not chosen).
"""
from __future__ import annotations

import numpy as np

__all__ = ["iteration_flops", "reference_flops", "gemm_flops", "slots_per_iteration"]


def iteration_flops(m: int, n: int, d: int, k: int, slots: int = 1) -> dict[str, float]:
    """Flops of one IFCA iteration of one problem with ``slots`` runs, by kernel."""
    C = slots
    terms = {
        "residuals": 2.0 * m * n * d * C * k + m * n * C * k,
        "estimate_clusters": 2.0 * m * n * C * k,
        "cluster_gradient_sums": 2.0 * m * n * d * C * k + m * n * C * k + C * k * d,
        "update": 2.0 * C * k * d,
    }
    terms["total"] = sum(terms.values())
    return terms


def reference_flops(m: int, n: int, d: int, k: int) -> float:
    """Flops of one reference iteration of one run: per machine ``k`` mat-vecs ``X_i theta_j``
    and one ``X_i^T r`` (``2 n d`` each), the squared losses and the server step."""
    return m * ((k + 1) * 2.0 * n * d + 2.0 * n * k) + 2.0 * k * d


def gemm_flops(rows: int, inner: int, cols: int) -> float:
    """``(rows x inner) @ (inner x cols)``."""
    return 2.0 * rows * inner * cols


def slots_per_iteration(leave_at: np.ndarray, iterations: int) -> tuple[np.ndarray, np.ndarray]:
    """``(problems, width)`` per iteration of the batched loop, ``(T,)`` each.

    ``leave_at`` ``(B, R)`` is the iteration count after which each run left the batch
    (``diverged_at`` or ``retired_at``), ``-1`` if it ran to the end. Iteration ``t``
    (0-based) works on the runs with ``leave_at > t``; the batch keeps the problems with a
    run left and is as wide as the problem with most runs (shorter rows are padded).
    """
    leave_at = np.where(np.asarray(leave_at) < 0, iterations, leave_at)  # (B, R)
    t = np.arange(iterations)
    alive = (leave_at[None, :, :] > t[:, None, None]).sum(axis=2)  # (T, B)
    return (alive > 0).sum(axis=1), alive.max(axis=1)
