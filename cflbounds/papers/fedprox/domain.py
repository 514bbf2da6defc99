"""FedProx's admissible domains, for ``cflbounds falsify`` (FEDPROX.T4, C7, T11, T6, C7-FROM-T4).

The one-round claims (T4, C7, T11) search noise-free heterogeneous quadratics (``L = 1`` before
curvature) by the devices N, dimension, mu/L, the heterogeneity ``||b_k||``, how much the
Hessians differ, the clients' negative curvature (T4), the start's distance from ``w*``, the
local solves' gamma (0: exact; else gradient descent until gamma-inexact), the slots K and mu as
a multiple of the smallest mu with ``rho > 0`` (C7: its own ``mu = 6 L B^2``, ``B`` a multiple of
``max(B(w^t), B_MIN)`` and ``K`` from ``r = B/sqrt(K) <= 0.5``; T11: equal Hessians and ``eps`` a
fraction of ``||grad f(w^t)||^2``). Each instance is one round's exact expectation
(:func:`.runs.one_round`), judged deterministically; the rows are the theorem's hypotheses
(``rho > 0``, ``mu > L_minus``, realised ``gamma <= 1``, and ``F`` bounded below: a draw whose
``sum_k p_k A_k`` is not positive definite is inadmissible, not an error).

FEDPROX.T6 searches the same problems by the start, ``eps`` as a fraction of
``||grad f(w^0)||^2``, ``K`` as a multiple of ``2 B_eps^2`` (below it no ``mu`` makes rho
positive) and ``mu``; its instance is the exact average of ``E||grad f(w^t)||^2`` over ``T =
ceil(Delta/(rho eps))`` rounds (:func:`.runs.average_gradient_norm_sq`).

FEDPROX.C7-FROM-T4 is on formulas alone: the corollary's rho against Theorem 4's at the
corollary's choices, over ``L``, ``B >= B_MIN`` and ``r = B/sqrt(K)`` up to 0.5.
"""
from __future__ import annotations

import numpy as np

from cflbounds.bounds import fedprox as bounds
from cflbounds.claims import Domain, Inequality, Instance, Parameter
from cflbounds.synthetic.dissimilarity_constants import dissimilarity_sup, gradient_variance_bound
from .checks import B_MIN, corollary_range
from .runs import RTOL, average_gradient_norm_sq, constants, convexity_row, one_round, problems, resolution_row, \
    rho_rows, smallest_mu, starts

__all__ = ["T4_DOMAIN", "C7_DOMAIN", "T11_DOMAIN", "T6_DOMAIN", "FOLLOWS_DOMAIN"]

_PROBLEM = [
    Parameter("clients", 2, 20, integer=True, log=True, description="N devices"),
    Parameter("d", 2, 8, integer=True, description="dimension"),
    Parameter("mu_over_L", 1e-3, 1.0, log=True, simple=0.1, description="mu/L of every Hessian's spectrum"),
    Parameter("heterogeneity", 1e-3, 100.0, log=True, simple=1.0, description="||b_k||, each optimum's norm"),
]
_SPREAD = Parameter("hessian_spread", 0.0, 1.0, simple=0.5, description="how much the Hessians differ (0: shared)")
_CURVATURE = Parameter("negative_curvature", 0.0, 2.0, simple=0.0,
                       description="c: each device's own Hessian has the eigenvalue -c (non-convex once s c > "
                                   "(1-s) mu)")
_DISTANCE = Parameter("distance", 1e-3, 1e3, log=True, simple=1.0, description="||w^t - w*||")
_ROUND = [
    Parameter("gamma", 0.0, 1.0, simple=0.0, description="the local solves' gamma (0: exact proximal solutions; else "
                                                          "gradient descent on h_k until gamma-inexact)"),
    Parameter("K", 1, 100000, integer=True, log=True, description="slots per round (drawn with replacement)"),
    Parameter("mu_factor", 1.0, 100.0, log=True, simple=2.0, description="mu / the smallest mu with rho > 0"),
]
_LARGEST_K = 2.0**53
_RATIO = Parameter("ratio", 1e-3, 0.5, simple=0.1, description="r = B/sqrt(K), at most 0.5 (K = ceil((B/r)^2))")


def _drawn(point, seed, ctx, spread=None):
    """The point's problem, or the row saying why the draw is not a problem (F unbounded below)."""
    try:
        return problems([seed], clients=point["clients"], d=point["d"], mu_over_L=point["mu_over_L"],
                        heterogeneity=point["heterogeneity"],
                        hessian_spread=point.get("hessian_spread", 0.0) if spread is None else spread,
                        negative_curvature=point.get("negative_curvature", 0.0), device=ctx.device), None
    except ValueError as error:
        return None, Inequality(f"F bounded below (sum_k p_k A_k positive definite): {error}", 0.0, 0.0, ">",
                                "FedProx (a problem needs f* > -inf)").as_dict()


def _unbounded(row) -> Instance:
    return Instance(0.0, 1.0, [row], details={"measured": "no problem: its draw is unbounded below"})


def _round_instance(problem, point, mu, B, rho_of, rows) -> Instance:
    """One round at ``mu`` (nan: no mu makes rho positive, an inadmissible instance)."""
    consts = constants(problem)
    L, L_minus = float(consts["L"][0]), float(consts["L_minus"][0])
    usable = np.isfinite(mu)
    gamma = point.get("gamma", 0.0)
    result = one_round(problem, starts(problem, point["distance"]), np.array([mu if usable else 2.0 * L + 1.0]),
                       gamma=gamma if gamma > 0 else None, K=point["K"])
    realised = float(result["gamma"][0])
    rho = float(rho_of(realised, mu)) if usable else -np.inf
    checks = rho_rows(mu=mu if usable else np.nan, gamma=realised, L_minus=L_minus, rho_value=rho) + rows(result)
    before, g = float(result["before"][0]), float(result["gradient_norm_sq"][0])
    return Instance(float(result["after"][0]), before - rho * g if usable else before,
                    [row if isinstance(row, dict) else row.as_dict() for row in checks],
                    details={"mu": float(mu), "B": float(B), "B_at_w": float(result["B"][0]), "gamma": realised,
                             "rho": rho, "L": L, "L_minus": L_minus, "before": before, "gradient_norm_sq": g,
                             "local_steps": int(result["steps"][0]),
                             "measured": "E_(S_t) f(w^(t+1)) - f*, exact (paper's sampling)",
                             "bound": "f(w^t) - f* - rho ||grad f(w^t)||^2"})


def _each(evaluate_one, spread=None):
    """An evaluation: each point's problem drawn (an unbounded draw is an inadmissible instance),
    then ``evaluate_one(point, problem, L, L_minus)``'s instance."""
    def evaluate(points, seeds, ctx) -> list[Instance]:
        instances = []
        for point, seed in zip(points, seeds):
            problem, row = _drawn(point, seed, ctx, spread)
            if problem is None:
                instances.append(_unbounded(row))
                continue
            consts = constants(problem)
            instances.append(evaluate_one(point, problem, float(consts["L"][0]), float(consts["L_minus"][0])))
        return instances
    return evaluate


def _t4(point, problem, L, L_minus) -> Instance:
    K = point["K"]
    B = float(problem.local_dissimilarity(starts(problem, point["distance"])[:, None])[0, 0])
    mu = point["mu_factor"] * smallest_mu(gamma=point["gamma"], B=B, L=L, L_minus=L_minus, K=K)
    return _round_instance(problem, point, mu, B, lambda g, m: bounds.rho(mu=m, gamma=g, B=B, L=L, L_minus=L_minus,
                                                                           K=K), lambda result: [])


def _c7(point, problem, L, L_minus) -> Instance:
    at = float(problem.local_dissimilarity(starts(problem, point["distance"])[:, None])[0, 0])
    B = max(at, B_MIN) * point["B_excess"]
    K = np.ceil((B / point["ratio"]) ** 2)
    if K > _LARGEST_K:  # B(w^t) that large (a start near w*) asks for more slots than an int counts
        return Instance(0.0, 1.0, [Inequality("K = ceil((B/r)^2) <= 2^53", K, _LARGEST_K, "<=",
                                              "cflbounds falsify").as_dict()], details={"B": B})
    result = bounds.corollary7(L=L, B=B, K=int(K))
    instance = _round_instance(problem, {**point, "K": int(K)}, float(result.derived["mu"]), B,
                               lambda g, m: result.value, lambda measured: [
                                   *result.assumptions, convexity_row(problem, 0),
                                   Inequality("B(w^t) <= B", float(measured["B"][0]), B, "<=", "FedProx Corollary 7")])
    instance.details.update(K=int(K), bound="f(w^t) - f* - ||grad f(w^t)||^2/(24 L B^2)")
    return instance


def _t11(point, problem, L, L_minus) -> Instance:
    K = point["K"]
    sigma_sq = float(gradient_variance_bound(problem)[0])
    w = starts(problem, point["distance"])
    epsilon = point["epsilon_fraction"] * float(np.square(problem.gradient(w[:, None])[0, 0]).sum())
    B = float(bounds.dissimilarity_from_variance(sigma_sq, epsilon))
    mu = point["mu_factor"] * smallest_mu(gamma=point["gamma"], B=B, L=L, L_minus=L_minus, K=K)
    instance = _round_instance(problem, point, mu, B, lambda g, m: bounds.theorem11(
        mu=m, gamma=g, sigma_sq=sigma_sq, epsilon=epsilon, L=L, L_minus=L_minus, K=K).value, lambda measured: [
            Inequality("||grad f(w^t)||^2 >= eps", float(measured["gradient_norm_sq"][0]), epsilon, ">=",
                       "FedProx Theorem 11")])
    instance.details.update(sigma_sq=sigma_sq, epsilon=epsilon)
    return instance


def _t6(point, problem, L, L_minus) -> Instance:
    w0 = starts(problem, point["distance"])
    epsilon = point["epsilon_fraction"] * float(np.square(problem.gradient(w0[:, None])[0, 0]).sum())
    delta = float(problem.objective_gap(w0[:, None])[0, 0])
    B = float(dissimilarity_sup(problem, epsilon).value[0])
    K = int(np.ceil(2.0 * B * B * point["K_factor"]))
    mu = point["mu_factor"] * smallest_mu(gamma=0.0, B=B, L=L, L_minus=L_minus, K=K)
    if not np.isfinite(mu):
        rows = rho_rows(mu=mu, gamma=0.0, L_minus=L_minus, rho_value=-np.inf)
        return Instance(0.0, epsilon, [r.as_dict() for r in rows], details={"B": B, "K": K})
    result = bounds.theorem6_rounds(Delta=delta, epsilon=epsilon, mu=mu, gamma=0.0, B=B, L=L, L_minus=L_minus, K=K)
    T = float(result.value)
    affordable = Inequality("T <= 10^15 rounds (what the doubling affords in int64)", T, 1e15, "<=",
                            "cflbounds falsify")
    checks = [*result.assumptions, affordable, resolution_row(problem, 0, mu)]
    measured = float(average_gradient_norm_sq(problem, w0, mu, K, int(T))[0]) if all(r.holds for r in checks) else 0.0
    return Instance(measured, epsilon, [r.as_dict() for r in checks], details={
        "B_eps": B, "K": K, "mu": mu, "rho": float(result.derived["rho"]), "T": T, "Delta": delta, "L": L,
        "L_minus": L_minus, "measured": "(1/T) sum_(t<T) E||grad f(w^t)||^2, exact", "bound": "eps"})


def _follows(points, seeds, ctx) -> list[Instance]:
    instances = []
    for point in points:
        K = int(np.ceil((point["B"] / point["ratio"]) ** 2))
        result = bounds.corollary7_follows(L=point["L"], B=point["B"], K=K)
        instances.append(Instance(float(result.derived["corollary"]), float(result.value),
                                  [row.as_dict() for row in corollary_range(point["B"], K)], details={
                                      "K": K, "B_over_sqrt_K": point["B"] / np.sqrt(K),
                                      "theorem_over_corollary": float(result.derived["ratio"]),
                                      "measured": "Corollary 7's rho 1/(24 L B^2)",
                                      "bound": "Theorem 4's rho at gamma = 0, L_minus = 0, mu = 6 L B^2"}))
    return instances


def _domain(parameters, evaluate, note) -> Domain:
    return Domain(parameters, evaluate, rule="deterministic", rtol=RTOL, note=note)


T4_DOMAIN = _domain([*_PROBLEM, _SPREAD, _CURVATURE, _DISTANCE, *_ROUND], _each(_t4),
                    "quadratics by N, d, mu/L, heterogeneity, Hessian spread, negative curvature, the start's "
                    "distance, "
                    "gamma, K and mu (a multiple of the smallest with rho > 0); one round's exact expectation")
C7_DOMAIN = _domain([*_PROBLEM, _SPREAD, _DISTANCE,
                     Parameter("B_excess", 1.0, 100.0, log=True, simple=1.0,
                               description=f"B / max(B(w^t), {B_MIN:g}): the B used, at least B(w^t)"), _RATIO],
                    _each(_c7),
                    "convex quadratics by N, d, mu/L, heterogeneity, Hessian spread, the start's distance, B and "
                    "r = B/sqrt(K) <= 0.5, at mu = 6 L B^2 and exact solves; one round's exact expectation")
T11_DOMAIN = _domain([*_PROBLEM, _DISTANCE,
                      Parameter("epsilon_fraction", 1e-3, 1.0, log=True, simple=0.1,
                                description="eps / ||grad f(w^t)||^2 (so ||grad f(w^t)||^2 >= eps)"), *_ROUND],
                     _each(_t11, spread=0.0),
                     "equal-Hessian quadratics (sigma^2 finite) by N, d, mu/L, heterogeneity, the start's distance, "
                     "eps, gamma, K and mu; one round's exact expectation")
T6_DOMAIN = _domain([*_PROBLEM, _SPREAD, _CURVATURE, _DISTANCE,
                     Parameter("epsilon_fraction", 1e-4, 0.5, log=True, simple=0.1,
                               description="eps / ||grad f(w^0)||^2"),
                     Parameter("K_factor", 1.01, 100.0, log=True, simple=4.0,
                               description="K / (2 B_eps^2): above 1 some mu makes rho positive"),
                     _ROUND[2]], _each(_t6),
                    "quadratics by N, d, mu/L, heterogeneity, Hessian spread, negative curvature, the start, eps, K "
                    "and mu; the exact average E||grad f(w^t)||^2 over T = ceil(Delta/(rho eps)) rounds")
FOLLOWS_DOMAIN = _domain([Parameter("L", 1e-3, 1e3, log=True, simple=1.0, description="smoothness"),
                          Parameter("B", B_MIN, 1e4, log=True, simple=10.0, description="the dissimilarity bound B"),
                          _RATIO], _follows,
                         f"the constants L, B >= {B_MIN:g} and r = B/sqrt(K) <= 0.5 (the corollary's range)")
