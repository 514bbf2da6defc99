"""The re-sampling device of IFCA's analysis (Sec. 5, before Sec. 5.1).

"We partition the n data points on each machine into 2T disjoint subsets, each with
n' = n/(2T) data points": at iteration t, batch 2t (Z-hat) estimates the cluster identity
and batch 2t + 1 (Z) gives the gradient, so every step sees fresh data independent of the
current iterate. With ``resample="fresh"`` the two batches are instead new draws of n
points each from the population (``MixedLinearRegression.draw``).
"""
from __future__ import annotations

from .._validation import require

__all__ = ["RESAMPLING_MODES", "resampling_batch_size", "estimation_batch", "gradient_batch"]

RESAMPLING_MODES = ("none", "split", "fresh")


def resampling_batch_size(n: int, iterations: int, mode: str) -> int:
    """``n'``, the points per step used for estimation (and, separately, the gradient).

    ``none``: all ``n`` points for both; ``split``: ``n / (2T)``, which must be a whole
    number (no point is silently dropped); ``fresh``: ``n`` new points per batch.
    """
    if mode != "split":
        return n
    require(
        n >= 2 * iterations and n % (2 * iterations) == 0,
        f"Re-sampling splits each machine's n={n} points into 2T={2 * iterations} disjoint "
        f"batches, so n must be a positive multiple of 2T (got n={n}, T={iterations}).",
    )
    return n // (2 * iterations)


def estimation_batch(t: int, n_prime: int) -> slice:
    """Points of Z-hat^(t), the cluster-estimation batch of iteration t (split mode)."""
    return slice(2 * t * n_prime, (2 * t + 1) * n_prime)


def gradient_batch(t: int, n_prime: int) -> slice:
    """Points of Z^(t), the gradient batch of iteration t (split mode)."""
    return slice((2 * t + 1) * n_prime, (2 * t + 2) * n_prime)
