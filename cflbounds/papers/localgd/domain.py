"""Local GD's admissible domains, for ``cflbounds falsify`` (LOCALGD.T1, C1, C1-FROM-T1).

LOCALGD.T1 and C1 search heterogeneous quadratics (uniform weights, ``L = 1``: both claims are
invariant under ``f -> c f``) by the number of clients M, dimension, mu/L, the heterogeneity
``||b_m||``, how much the clients' Hessians differ, the start's distance ``||x_0 - x*||``, the
synchronisation gap H and the horizon T (and for T1 the step as a fraction of its largest,
``1/(4LH)``; for C1 the corollary's step ``sqrt(M)/(4 L sqrt(T))`` and its range
``H <= sqrt(T/M)``). Each instance is one run: local GD has no randomness, so the rule is
deterministic (:data:`.runs.RTOL`). Convexity of every f_m is a row (always met here: the
spectra lie in ``[mu, L]``, ``mu > 0``).

LOCALGD.C1-FROM-T1 is on formulas alone: Theorem 1's bound at the corollary's step against the
corollary's bound (:func:`cflbounds.bounds.localgd.corollary1_follows`), over the corollary's
whole range of constants (``H <= sqrt(T/M)``, which is where that step lies within Theorem 1's
``gamma <= 1/(4LH)``: the row).
"""
from __future__ import annotations

import numpy as np

from cflbounds.bounds import localgd as bounds
from cflbounds.claims import Domain, Inequality, Instance, Parameter
from ..catalogue_quadratics import quadratic_problems
from .runs import RTOL, cell_constants, convexity_row, run_cells, theorem1_terms

__all__ = ["T1_PARAMETERS", "C1_PARAMETERS", "FOLLOWS_PARAMETERS", "MAX_STEPS", "t1_domain", "c1_domain",
           "follows_domain", "T1_DOMAIN", "C1_DOMAIN", "FOLLOWS_DOMAIN",
           "corollary_horizon"]

MAX_STEPS = 4096  # T: what one evaluation affords (segments of at least one step: 4096 mat-vec pairs)

_PROBLEM = [
    Parameter("clients", 2, 32, integer=True, log=True, description="M clients"),
    Parameter("d", 2, 8, integer=True, description="dimension"),
    Parameter("mu_over_L", 1e-3, 1.0, log=True, simple=0.1, description="mu/L of every client's Hessian spectrum"),
    Parameter("heterogeneity", 1e-3, 100.0, log=True, simple=1.0, description="||b_m||, each client's optimum's norm"),
    Parameter("hessian_spread", 0.0, 1.0, simple=0.5, description="how much the clients' Hessians differ (0: shared)"),
    Parameter("start_distance", 1e-3, 1000.0, log=True, simple=1.0, description="||x_0 - x*||"),
]
T1_PARAMETERS = [*_PROBLEM,
                 Parameter("H", 1, 64, integer=True, log=True, description="synchronisation gap (every H steps)"),
                 Parameter("T", 1, MAX_STEPS, integer=True, log=True,
                           description="horizon: x_bar_T averages x_hat_0 .. x_hat_(T-1)"),
                 Parameter("step_fraction", 1e-3, 1.0, log=True, simple=1.0,
                           description="gamma as a fraction of Theorem 1's largest step 1/(4LH)")]
# Corollary 1's range H <= sqrt(T/M) is T >= M H^2: T is searched as that multiple, so every point is in it
_T_EXCESS = "T / (M H^2) >= 1: the horizon as a multiple of the smallest the corollary allows, T = ceil(M H^2 x)"
C1_PARAMETERS = [*_PROBLEM, Parameter("H", 1, 16, integer=True, log=True, description="synchronisation gap"),
                 Parameter("T_excess", 1.0, 256.0, log=True, simple=1.0, description=_T_EXCESS)]
FOLLOWS_PARAMETERS = [
    Parameter("initial_distance_sq", 1e-6, 1e6, log=True, simple=1.0, description="||x_0 - x*||^2"),
    Parameter("sigma_sq", 1e-6, 1e6, log=True, simple=1.0, description="sigma^2 = (1/M) sum_m ||grad f_m(x*)||^2"),
    Parameter("L", 1e-3, 1e3, log=True, simple=1.0, description="smoothness"),
    Parameter("M", 1, 1024, integer=True, log=True, description="devices"),
    Parameter("H", 1, 1000, integer=True, log=True, description="largest synchronisation gap"),
    Parameter("T_excess", 1.0, 1e4, log=True, simple=1.0, description=_T_EXCESS),
]


def corollary_horizon(M: int, H: int, excess: float) -> int:
    """``T = ceil(M H^2 excess)``: at least ``M H^2``, so ``H <= sqrt(T/M)``."""
    return int(np.ceil(M * H * H * float(excess)))


def _affordable(point: dict) -> list[dict]:
    T = corollary_horizon(point["clients"], point["H"], point["T_excess"])
    return [Inequality("T = ceil(M H^2 T_excess) <= MAX_STEPS", T, MAX_STEPS, "<=",
                       "cflbounds falsify: what one evaluation affords").as_dict()]


def _instances(points, seeds, ctx, corollary: bool) -> list[Instance]:
    instances = []
    for point, seed in zip(points, seeds):
        M, H = point["clients"], point["H"]
        T = corollary_horizon(M, H, point["T_excess"]) if corollary else point["T"]
        problem = quadratic_problems([seed], clients=M, d=point["d"], mu_over_L=point["mu_over_L"],
                                     heterogeneity=point["heterogeneity"], hessian_spread=point["hessian_spread"],
                                     device=ctx.device)
        constants = cell_constants(problem)
        L, distance = float(constants["L"][0]), point["start_distance"]
        gamma = bounds.corollary1_step(L, M, T) if corollary else point["step_fraction"] / (4.0 * L * H)
        cells = run_cells(problem, distance=distance, step_size=[gamma], sync=H, horizons=[T])
        if corollary:
            result = bounds.corollary1(initial_distance_sq=distance**2, sigma_sq=float(constants["sigma_sq"][0]),
                                       L=L, H=H, T=T, M=M)
            rows = [*result.assumptions, bounds.assumptions(L=L, gamma=gamma, H=H)[0]]
        else:
            result = theorem1_terms(constants, 0, distance, gamma, H, T)
            rows = list(result.assumptions)
        trivial = float(cells["trivial"][0])
        instances.append(Instance(float(cells["gap"][0, 0]), float(result.value),
                                  [row.as_dict() for row in (*rows, convexity_row(problem, 0))], details={
                                      "gamma": gamma, "L": L, "sigma_sq": float(constants["sigma_sq"][0]),
                                      "trivial_gap": trivial, "informative": float(result.value) < trivial,
                                      **{f"bound_{k}": float(v) for k, v in result.terms.items()},
                                      "measured": "f(x_bar_T) - f* of one local GD run (exact constants)"}))
    return instances


def t1_domain(parameters=None) -> Domain:
    """LOCALGD.T1's domain (``parameters`` narrows the ranges; default :data:`T1_PARAMETERS`)."""
    return Domain(list(parameters or T1_PARAMETERS), lambda points, seeds, ctx: _instances(points, seeds, ctx, False),
                  rule="deterministic", rtol=RTOL,
                  note="quadratics by M, d, mu/L, heterogeneity, Hessian spread, start distance, H, T and the step "
                       "as a fraction of 1/(4LH)")


def c1_domain(parameters=None) -> Domain:
    """LOCALGD.C1's domain: the corollary's step, H within sqrt(T/M) (a row checked before running)."""
    return Domain(list(parameters or C1_PARAMETERS), lambda points, seeds, ctx: _instances(points, seeds, ctx, True),
                  rule="deterministic", rtol=RTOL, constraints=_affordable,
                  note="quadratics by M, d, mu/L, heterogeneity, Hessian spread, start distance, H and T >= M H^2 (the "
                       "corollary's range) at the corollary's step sqrt(M)/(4 L sqrt(T))")


def _follows(points, seeds, ctx) -> list[Instance]:
    instances = []
    for point in points:
        constants = {k: v for k, v in point.items() if k != "T_excess"}
        T = corollary_horizon(point["M"], point["H"], point["T_excess"])
        result = bounds.corollary1_follows(**constants, T=T)
        rows = [row.as_dict() for row in result.assumptions[:-1]]  # the last row is the claim itself
        instances.append(Instance(float(result.value), float(result.derived["corollary"]), rows, details={
            "T": T, "step": float(result.derived["step"]), **{f"theorem1_{k}": float(v) for k, v in result.terms.items()},
            "measured": "Theorem 1's bound at the corollary's step", "bound": "Corollary 1's bound"}))
    return instances


def follows_domain(parameters=None) -> Domain:
    """LOCALGD.C1-FROM-T1's domain (formulas): Theorem 1 at the corollary's step against the
    corollary, over ``H <= sqrt(T/M)``. The two are equal in exact arithmetic (the rounding of
    two float64 routes: relative 1e-15, far inside 1e-9)."""
    return Domain(list(parameters or FOLLOWS_PARAMETERS), _follows, rule="deterministic", rtol=1e-9,
                  note="the constants ||x_0 - x*||^2, sigma^2, L, M, H and T >= M H^2 (the corollary's whole range "
                       "H <= sqrt(T/M))")


T1_DOMAIN, C1_DOMAIN, FOLLOWS_DOMAIN = t1_domain(), c1_domain(), follows_domain()
