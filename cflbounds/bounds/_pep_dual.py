"""A verified upper bound from a performance-estimation SDP's dual: the solver's multipliers are
taken as a guess, never trusted, and the bound they imply is computed here.

The SDP (:mod:`._pep_sdp`) is ``max <C, G> + c.v`` over a PSD Gram matrix ``G`` and values ``v``,
subject to ``<A_k, G> + b_k.v <= 0`` (interpolation inequalities, Taylor, Hendrickx & Glineur
2017, Thm 4) and ``<S_s, G> <= 1`` (start conditions). For any multipliers ``lam >= 0`` and
``tau >= 0`` (Drori & Teboulle 2014's dual, weak duality), with the dual slack
``Z = sum_k lam_k A_k + sum_s tau_s S_s - C`` and the residual ``d = c - sum_k lam_k b_k`` of the
dual's equality constraint, every feasible point satisfies

    <C, G> + c.v  <=  sum(tau) - <Z - E, G>,      E = sum_t max(d_t, 0) x_t x_t^T / (2 w_t),

because each value lies in ``0 <= f_t <= ||x_t - x*||^2 / 2`` (both are the interpolation
inequalities between x_t and the minimiser, at L = 1; ``f_t = w_t v_t``). So the bound is
``sum(tau)`` when ``Z - E`` is PSD and otherwise ``sum(tau) + max(0, -lambda_min(Z - E)) rho``
for any ``rho >= tr(G)`` over the feasible set (Jansson, Chaykin & Keil 2007, rigorous error
bounds for SDP). Such a ``rho`` comes from another dual point: multipliers ``mu, sigma`` with
``D = sum_k mu_k A_k + sum_s sigma_s S_s`` positive definite give ``tr(G) lambda_min(D - E_D) <=
sum(sigma)`` (the dual of ``max tr(G)``, :meth:`._pep_sdp.ScaledPEP.trace_multipliers`). The
start conditions alone cannot repair a negative eigenvalue: ``S_s`` has rank one and the
deficient directions are gradients' or late iterates'.

Floating point: the smallest eigenvalue is computed by LAPACK (backward stable) and compared
with an allowance of ``4 (m + n + T) eps`` times the size of the terms that form the matrix
(the rounding of the data, of the sums and of the eigenvalue computation), not by interval
arithmetic.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

__all__ = ["DualData", "verified_upper_bound", "trace_bound"]

_EPS = np.finfo(float).eps


@dataclass(frozen=True)
class DualData:
    """The SDP's data, as arrays: ``constraints`` (m, n, n) the ``A_k``, ``value_rows`` (m, P)
    the ``b_k``, ``starts`` (s, n, n) the ``S_s``, ``objective`` (n, n) ``C``,
    ``objective_values`` (P,) ``c``, ``positions`` (P, n) the coefficients of the points whose
    values are variables and ``value_units`` (P,) their units ``w_t`` (``f_t = w_t v_t``)."""

    constraints: np.ndarray
    value_rows: np.ndarray
    starts: np.ndarray
    objective: np.ndarray
    objective_values: np.ndarray
    positions: np.ndarray
    value_units: np.ndarray
    iterations: int

    def allowance(self, *terms: float) -> float:
        """The rounding allowance for a matrix formed from terms of these sizes."""
        m, n = self.value_rows.shape[0], self.objective.shape[0]
        return 4.0 * (m + n + self.iterations) * _EPS * float(sum(terms))

    def certified_minimum(self, multipliers, start_multipliers, objective_sign) -> float:
        """``lambda_min(sum lam A + sum tau S - sign C - E) - allowance``: positive only when the
        matrix is PSD beyond rounding; ``E`` covers the residual of the equality constraint."""
        residual = objective_sign * self.objective_values - multipliers @ self.value_rows
        # the sum's own rounding can only make the residual look smaller than it is
        residual = residual + self.allowance(1.0) * (np.abs(multipliers) @ np.abs(self.value_rows))
        values = np.maximum(residual, 0.0) / (2.0 * self.value_units)
        correction = np.einsum("t,ti,tj->ij", values, self.positions, self.positions)
        slack = (np.einsum("k,kij->ij", multipliers, self.constraints)
                 + np.einsum("s,sij->ij", start_multipliers, self.starts)
                 - objective_sign * self.objective - correction)
        sizes = (multipliers @ np.sqrt(np.einsum("kij,kij->k", self.constraints, self.constraints))
                 + start_multipliers @ np.sqrt(np.einsum("sij,sij->s", self.starts, self.starts))
                 + np.linalg.norm(self.objective) + np.linalg.norm(correction))
        return float(np.linalg.eigvalsh(slack)[0]) - self.allowance(sizes)


def trace_bound(data: DualData, multipliers, start_multipliers) -> Optional[float]:
    """``rho >= tr(G)`` for every feasible ``G`` from the multipliers ``(mu, sigma)`` of ``max
    tr(G)``, or None when they do not prove it (``D - E_D`` not positive definite)."""
    multipliers, start_multipliers = _nonnegative(multipliers), _nonnegative(start_multipliers)
    if multipliers is None or start_multipliers is None:
        return None
    smallest = data.certified_minimum(multipliers, start_multipliers, 0.0)
    if not smallest > 0:
        return None
    return float(np.sum(start_multipliers) * (1 + 4 * _EPS * len(start_multipliers)) / smallest)


def verified_upper_bound(data: DualData, multipliers, start_multipliers,
                         trace: Callable[[], Optional[float]]) -> tuple[Optional[float], float]:
    """The upper bound the multipliers ``(lam, tau)`` prove (module docstring), computed here;
    ``trace()`` (a ``rho``, solved only when the slack is not PSD beyond rounding) may return
    None, and then so does this. Returns ``(bound, lambda_min deficit)``."""
    multipliers, start_multipliers = _nonnegative(multipliers), _nonnegative(start_multipliers)
    if multipliers is None or start_multipliers is None:
        return None, float("inf")
    bound = float(np.sum(start_multipliers)) * (1 + 4 * _EPS * len(start_multipliers))
    deficit = max(0.0, -data.certified_minimum(multipliers, start_multipliers, 1.0))
    if deficit == 0.0:
        return bound, 0.0
    rho = trace()
    return (None if rho is None else bound + deficit * rho), deficit


def _nonnegative(values) -> Optional[np.ndarray]:
    """The multipliers of inequalities projected onto their cone (a solver's may be -1e-12), or
    None when some are missing or not finite."""
    if values is None:
        return None
    values = np.asarray(values, dtype=float)
    return np.maximum(values, 0.0) if values.size and np.all(np.isfinite(values)) else None
