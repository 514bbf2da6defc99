"""Flop counts of one IFCA iteration (gradient averaging, squared loss, no re-sampling) and
the run slots the batched loop actually works on.

The batched loop's count, ``iteration_flops(m, n, d, k, slots)``, lives beside the kernels it
counts (``cflbounds/algorithms/squared_loss.py``), where ``cflbounds sweep`` uses it for its
time estimate; it is re-exported here. Its GEMMs, ``(m n x d) @ (d x C k)`` (every model's
residuals) and, per machine, ``(C x n) @ (n x d)`` (the chosen model's gradient), dominate.

The reference does the same arithmetic per run as ``k + 1`` mat-vecs per machine.
"""
from __future__ import annotations

import numpy as np

from cflbounds.algorithms.squared_loss import iteration_flops  # the sweep's time estimate uses it too

__all__ = ["iteration_flops", "reference_flops", "gemm_flops", "slots_per_iteration"]


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
