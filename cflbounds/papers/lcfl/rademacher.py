"""Monte Carlo Rademacher complexities of the norm-bounded linear class (LCFL Defs. 3-4).

For ``H = {x -> <w, x> : ||w|| <= B_w}`` the supremum in the empirical Rademacher
complexity is exact (Cauchy-Schwarz, attained at ``w`` parallel to ``sum_i sigma_i x_i``):

    sup_{||w|| <= B_w} (1/m) sum_i sigma_i <w, x_i> = (B_w / m) ||sum_i sigma_i x_i||,

so only the expectation over sigma (and over the sample S, for ``R_m = E_S R-hat_S``) is
estimated, by plain Monte Carlo with its standard error. Jensen gives
``R_m(H) <= B_w sqrt(E||x||^2 / m) <= B_w B_x / sqrt(m)`` (the closed form of
``bounds.lcfl.linear_rademacher_bound``); a loss class ``l(<w, x>, y)`` with ``l``
L-Lipschitz has ``R_m(G) <= L R_m(H)`` (Talagrand's contraction lemma).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["MonteCarloEstimate", "empirical_rademacher_linear", "rademacher_linear"]


@dataclass(frozen=True)
class MonteCarloEstimate:
    mean: float
    standard_error: float
    draws: int


def _estimate(values: np.ndarray) -> MonteCarloEstimate:
    return MonteCarloEstimate(float(values.mean()), float(values.std(ddof=1) / np.sqrt(values.size)), values.size)


def empirical_rademacher_linear(sample: np.ndarray, weight_norm: float, draws: int,
                                rng: np.random.Generator) -> MonteCarloEstimate:
    """``R-hat_S(H)`` for a fixed sample ``S`` ``(m, d)``: the mean over ``draws`` sign
    vectors of the exact supremum ``(B_w / m) ||sum_i sigma_i x_i||``."""
    signs = rng.choice([-1.0, 1.0], size=(draws, sample.shape[0]))
    return _estimate(weight_norm / sample.shape[0] * np.linalg.norm(signs @ sample, axis=1))


def rademacher_linear(atoms: np.ndarray, m: int, weight_norm: float, draws: int,
                      rng: np.random.Generator, chunk: int = 4096) -> MonteCarloEstimate:
    """``R_m(H) = E_S R-hat_S(H)`` for ``S`` of ``m`` i.i.d. draws from the uniform
    distribution on ``atoms`` ``(A, d)``: each Monte Carlo draw is a fresh (S, sigma)."""
    values = []
    for start in range(0, draws, chunk):
        size = min(chunk, draws - start)
        sample = atoms[rng.integers(atoms.shape[0], size=(size, m))]  # (size, m, d)
        signs = rng.choice([-1.0, 1.0], size=(size, m, 1))
        values.append(weight_norm / m * np.linalg.norm((signs * sample).sum(axis=1), axis=1))
    return _estimate(np.concatenate(values))
