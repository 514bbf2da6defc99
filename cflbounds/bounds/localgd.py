"""Local GD on heterogeneous data as code (Khaled, Mishchenko, Richtarik, "First Analysis of Local GD
on Heterogeneous Data", 2019, arXiv:1909.04715).

f = (1/M) sum_m f_m, each f_m convex and L-smooth; local gradient descent with full gradients and
step gamma on every device, averaging at synchronisation times at most H steps apart;
sigma^2 = (1/M) sum_m ||grad f_m(x*)||^2 (the dispersion of the devices' gradients at the
optimum); the bound is for x_bar_T = (1/T) sum_(t<T) x_hat_t, x_hat_t the average of the local
iterates.

Provenance: the theorem and the corollary are CATALOGUE.md's (marked [V] there); the primary
text was not reachable from this machine (the stored copies of the paper hold its abstract only),
and the paper has no official code.
"""
from __future__ import annotations

from numbers import Integral

import numpy as np

from .._validation import InvalidParameterError
from ._constraints import COUNT, NONNEGATIVE, POSITIVE, bound_params, within
from ._docstring import appended, parameters
from ._report import BoundResult, Inequality

__all__ = ["assumptions", "theorem1", "corollary1_step", "corollary1", "corollary1_follows"]

_PROBLEM = {"initial_distance_sq": NONNEGATIVE, "sigma_sq": NONNEGATIVE, "L": POSITIVE}
_ENTRIES = {
    "initial_distance_sq": ("float", "||x_0 - x*||^2, the squared distance of the start from the optimum"),
    "sigma_sq": ("float", "sigma^2 = (1/M) sum_m ||grad f_m(x*)||^2, the dispersion of the devices' gradients at the "
                          "optimum"),
    "L": ("float", "smoothness of every f_m"),
    "gamma": ("float", "the step size of every local gradient step (Theorem 1: at most 1/(4LH))"),
    "H": ("int", "the largest gap between two synchronisations, in steps (Corollary 1: at most sqrt(T/M))"),
    "T": ("int", "the number of steps"),
    "M": ("int", "the number of devices"),
}
_COROLLARY = ("initial_distance_sq", "sigma_sq", "L", "H", "T", "M")


@appended(parameters(_ENTRIES, "L", "gamma", "H"))
@bound_params({"L": POSITIVE, "gamma": POSITIVE, "H": COUNT})
def assumptions(*, L, gamma, H) -> tuple[Inequality, ...]:
    """Theorem 1's step range ``gamma <= 1/(4LH)``, with both sides (it holds or not: the
    theorem itself refuses a step outside it).
    """
    return (Inequality("gamma <= 1/(4LH)", gamma, 1.0 / (4.0 * L * H), "<=", "Local GD Theorem 1"),)


def _theorem1(initial_distance_sq, sigma_sq, L, gamma, H, T) -> dict:
    return {"optimisation": 2.0 * initial_distance_sq / (gamma * T),
            "heterogeneity": 24.0 * gamma**2 * sigma_sq * float(H) ** 2 * L if sigma_sq else 0.0}


@appended(parameters(_ENTRIES, "initial_distance_sq", "sigma_sq", "L", "gamma", "H", "T"))
@bound_params({**_PROBLEM, "gamma": POSITIVE, "H": COUNT, "T": COUNT})
def theorem1(*, initial_distance_sq, sigma_sq, L, gamma, H, T) -> BoundResult:
    """Theorem 1: for a step ``gamma <= 1/(4LH)``, after T steps

        f(x_bar_T) - f* <= 2 ||x_0 - x*||^2 / (gamma T) + 24 gamma^2 sigma^2 H^2 L.

    As CATALOGUE.md states it ([V]); the primary text was not reachable here (module
    docstring). A step above 1/(4LH) is refused (outside the theorem's range).
    """
    within("gamma", gamma, "theorem1", 0, 1.0 / (4.0 * L * H), closed="right", rule="Theorem 1's gamma <= 1/(4 L H)")
    terms = _theorem1(initial_distance_sq, sigma_sq, L, gamma, H, T)
    return BoundResult("LOCALGD.T1", sum(terms.values()), terms, {"largest_step": 1.0 / (4.0 * L * H)},
                       assumptions(L=L, gamma=gamma, H=H), theorem1.__doc__)


@appended(parameters(_ENTRIES, "L", "M", "T"))
@bound_params({"L": POSITIVE, "M": COUNT, "T": COUNT})
def corollary1_step(L, M, T) -> float:
    """Corollary 1's step ``gamma = sqrt(M) / (4 L sqrt(T))``."""
    return np.sqrt(M) / (4.0 * L * np.sqrt(T))


def _corollary1_terms(initial_distance_sq, sigma_sq, L, H, T, M) -> dict:
    return {"optimisation": 8.0 * L * initial_distance_sq / np.sqrt(float(M) * T),
            "heterogeneity": 3.0 * M * sigma_sq * float(H) ** 2 / (2.0 * L * T)}


def _check_corollary_range(H, T, M, caller):
    within("H", H, caller, 1, np.sqrt(T / M), kind=Integral, rule="Corollary 1's H <= sqrt(T/M)")


@appended(parameters(_ENTRIES, *_COROLLARY))
@bound_params({**_PROBLEM, "H": COUNT, "T": COUNT, "M": COUNT})
def corollary1(*, initial_distance_sq, sigma_sq, L, H, T, M) -> BoundResult:
    """Corollary 1: if ``H <= sqrt(T/M)`` and ``gamma = sqrt(M)/(4 L sqrt(T))``,

        f(x_bar_T) - f* <= 8 L ||x_0 - x*||^2 / sqrt(M T) + 3 M sigma^2 H^2 / (2 L T).

    As CATALOGUE.md states it ([V]); the primary text was not reachable here. H above
    sqrt(T/M) is refused (outside the corollary's range); ``derived["step"]`` is its gamma.
    """
    _check_corollary_range(H, T, M, "corollary1")
    terms = _corollary1_terms(initial_distance_sq, sigma_sq, L, H, T, M)
    return BoundResult("LOCALGD.C1", sum(terms.values()), terms, {"step": corollary1_step(L, M, T)},
                       (Inequality("H <= sqrt(T/M)", float(H), np.sqrt(T / M), "<=", "Local GD Corollary 1"),),
                       corollary1.__doc__)


@appended(parameters(_ENTRIES, *_COROLLARY))
@bound_params({**_PROBLEM, "H": COUNT, "T": COUNT, "M": COUNT})
def corollary1_follows(*, initial_distance_sq, sigma_sq, L, H, T, M) -> BoundResult:
    """Corollary 1 from Theorem 1: Theorem 1's bound at the corollary's step
    ``gamma = sqrt(M)/(4 L sqrt(T))`` against the corollary's right-hand side, for H in the
    corollary's range ``H <= sqrt(T/M)`` (where that step is within Theorem 1's ``1/(4LH)``).

    ``value`` is Theorem 1's bound at that step; ``derived["corollary"]`` the corollary's bound.
    The rows: Theorem 1's step range at the corollary's step, and "Theorem 1 <= Corollary 1"
    (the corollary follows from the theorem where it holds; algebraically the two are equal).
    """
    _check_corollary_range(H, T, M, "corollary1_follows")
    step = corollary1_step(L, M, T)
    constants = (f"initial_distance_sq = {initial_distance_sq!r}, sigma_sq = {sigma_sq!r}, L = {L!r}, H = {H!r}, "
                 f"T = {T!r}, M = {M!r}")
    if not (np.isfinite(step) and step > 0):  # L near float64's ends: the step under- or overflows
        raise InvalidParameterError(f"The 'L' parameter of corollary1_follows gives the step sqrt(M)/(4 L sqrt(T)) = "
                                    f"{float(step)!r}, not a positive finite float ({constants}).")
    theorem = _theorem1(initial_distance_sq, sigma_sq, L, step, H, T)
    corollary = sum(_corollary1_terms(initial_distance_sq, sigma_sq, L, H, T, M).values())
    if not (np.isfinite(sum(theorem.values())) and np.isfinite(corollary)):  # nothing to compare: both overflow
        raise InvalidParameterError(f"The constants of corollary1_follows overflow float64: Theorem 1's bound "
                                    f"{float(sum(theorem.values()))!r} against Corollary 1's {float(corollary)!r} "
                                    f"({constants}).")
    rows = (*assumptions(L=L, gamma=step, H=H),
            Inequality("Theorem 1 at gamma = sqrt(M)/(4L sqrt(T)) <= Corollary 1's bound", sum(theorem.values()),
                       corollary, "<=", "Local GD Corollary 1 from Theorem 1"))
    return BoundResult("LOCALGD.C1", sum(theorem.values()), theorem, {"step": step, "corollary": corollary}, rows,
                       corollary1_follows.__doc__)

