"""FedAvg's admissible domains, for ``cflbounds falsify`` (FEDAVG.T1, T2, T3, T3U, T3-FROM-T1,
T3U-FROM-T3).

The theorems (FEDAVG.T1-T3U) search heterogeneous quadratics (``L = 1``: every side scales
alike under ``F -> c F``) by the number of devices N, the sampled K, dimension, mu/L, the
heterogeneity ``||b_k||``, how much the Hessians differ, the noise ``sigma_k`` (one value for
every device), the weights' skew ``p_max/p_min`` (balanced for T3), the start's distance
``||w_1 - w*||``, E and the rounds R (``T = R E`` local steps, at most :data:`MAX_STEPS`: what
one evaluation affords). An instance runs :data:`REPLICATES` replicates of one problem with the
judged readings of :mod:`.checks` (the ``statement`` step; for T3U the rescaled algorithm and
the printed substitution) and is judged in expectation: its samples are the replicates'
``F(w_T) - F*``, its bound the theorem's with the exact constants and ``G^2`` measured on those
replicates, at the estimate plus two standard errors (a G^2 the runs cannot pin down is never
what makes an instance violate). The rows: Assumptions 1-4 (A4 measured), Gamma >= 0, the
step conditions, K <= N and the scheme's weights.

The two reductions are on formulas alone (deterministic): FEDAVG.T3-FROM-T1, Theorem 3 with all
N devices sampled (Scheme II is then full participation, ``C = 0``) against Theorem 1; and
FEDAVG.T3U-FROM-T3, the unbalanced remark at balanced weights (``nu = varsigma = 1``), under both
substitutions, against Theorem 3.
"""
from __future__ import annotations

import numpy as np

from cflbounds.bounds import fedavg as bounds
from cflbounds.claims import Domain, Inequality, Instance, Parameter
from ..catalogue_quadratics import geometric_weights, quadratic_problems, stack
from .runs import (Z, gradient_row, measured_G2, problem_rows, rescaled, run_cell, step_constants, step_for,
                   theorem_bound)

__all__ = ["MAX_STEPS", "REPLICATES", "theorem_parameters", "theorem_domain", "follows_domain", "DOMAINS",
           "FOLLOWS_DOMAINS"]

MAX_STEPS = 64
REPLICATES = 16
SCHEMES = {"FEDAVG.T1": "full", "FEDAVG.T2": "scheme-I", "FEDAVG.T3": "scheme-II", "FEDAVG.T3U": "scheme-II"}


def theorem_parameters(claim: str) -> list[Parameter]:
    """The searched parameters of ``claim`` (module docstring)."""
    parameters = [
        Parameter("clients", 2, 20, integer=True, log=True, description="N devices"),
        Parameter("d", 2, 8, integer=True, description="dimension"),
        Parameter("mu_over_L", 0.01, 1.0, log=True, simple=0.5, description="mu/L of every device's spectrum"),
        Parameter("heterogeneity", 1e-3, 10.0, log=True, simple=1.0, description="||b_k||, each optimum's norm"),
        Parameter("hessian_spread", 0.0, 1.0, simple=0.5, description="how much the Hessians differ (0: shared)"),
        Parameter("noise", 1e-3, 10.0, log=True, simple=0.1, description="sigma_k, every device's gradient noise"),
        Parameter("start_distance", 1e-2, 100.0, log=True, simple=1.0, description="||w_1 - w*||"),
        Parameter("E", 1, 16, integer=True, log=True, description="local steps per round"),
        Parameter("rounds", 1, MAX_STEPS, integer=True, log=True, description="R rounds: T = R E local steps"),
    ]
    if claim != "FEDAVG.T3":
        parameters.append(Parameter("weight_ratio", 1.0, 100.0, log=True, simple=1.0,
                                    description="p_max/p_min of the device weights (geometric in k)"))
    if claim != "FEDAVG.T1":
        parameters.append(Parameter("sampled", 1, 20, integer=True, log=True, description="K devices per round"))
    return parameters


def _constraints(point: dict) -> list[dict]:
    rows = [Inequality("T = R E <= MAX_STEPS", point["rounds"] * point["E"], MAX_STEPS, "<=",
                       "cflbounds falsify: what one evaluation affords").as_dict()]
    if "sampled" in point:
        rows.append(Inequality("K <= N", point["sampled"], point["clients"], "<=", "FedAvg Theorems 2-3").as_dict())
    return rows


def _problems(point, seeds, device):
    N = point["clients"]
    return quadratic_problems(seeds, clients=N, d=point["d"], mu_over_L=point["mu_over_L"],
                              heterogeneity=point["heterogeneity"], hessian_spread=point["hessian_spread"],
                              noise=point["noise"], weights=geometric_weights(N, point.get("weight_ratio", 1.0)),
                              device=device)


def _evaluate(claim, points, seeds, ctx) -> list[Instance]:
    """Identical points (a confirmation's fresh seeds) run as one batch; each problem of it only
    ever sees its own seed's draws."""
    groups: dict = {}
    for position, point in enumerate(points):
        groups.setdefault(tuple(sorted(point.items())), []).append(position)
    instances = [None] * len(points)
    for key, positions in groups.items():
        point = dict(key)
        problem = _problems(point, [seeds[i] for i in positions], ctx.device)
        for position, instance in zip(positions, _instances(claim, point, problem)):
            instances[position] = instance
    return instances


def _instances(claim, point, problem) -> list[Instance]:
    E, T, K = point["E"], point["rounds"] * point["E"], point.get("sampled")
    singles = [problem.subset([b]) for b in range(problem.batch_size)]
    constants = np.array([step_constants(claim, single, E) for single in singles])  # each problem's exact mu, gamma
    mu, gamma = (np.repeat(column, REPLICATES) for column in constants.T)
    batch = stack([rescaled(p) for p in singles]) if claim == "FEDAVG.T3U" else problem
    trace = run_cell(batch, distance=point["start_distance"], E=E, rounds=point["rounds"], scheme=SCHEMES[claim], K=K,
                     step=step_for("statement", mu, gamma, E), replicates=REPLICATES)
    scale = problem.weights * problem.clients if claim == "FEDAVG.T3U" else None
    instances = []
    for b, single in enumerate(singles):
        rows = slice(b * REPLICATES, (b + 1) * REPLICATES)
        G2 = measured_G2(trace, rows, T, scale)
        G_high = np.sqrt(G2.estimate + Z * G2.standard_error) if np.isfinite(G2.estimate) else np.inf
        samples = trace.objective_gap[rows, point["rounds"]]
        result = theorem_bound(claim, single, 0, E=E, T=T, G=G_high if np.isfinite(G_high) else 1e300,
                               distance=point["start_distance"], K=K)
        assumptions = [*problem_rows(single, 0), *result.assumptions, gradient_row(G2, T)]
        if claim == "FEDAVG.T3":
            assumptions.append(Inequality("balanced data: max_k p_k <= 1/N", float(np.max(problem.weights)),
                                          1.0 / problem.clients, "<=", "FedAvg Theorem 3 (Scheme II)"))
        trivial = float(trace.objective_gap[rows, 0][0])
        instances.append(Instance(float(np.mean(samples)), float(result.value), [r.as_dict() for r in assumptions],
                                  samples=samples.tolist(), details={
                                      "G2_measured": G2.estimate, "G2_standard_error": G2.standard_error,
                                      "G2_used": "estimate + 2 standard errors", "trivial_gap": trivial,
                                      "informative": float(result.value) < trivial,
                                      "gamma": float(constants[b, 1]),
                                      **{f"bound_{k}": float(v) for k, v in result.terms.items()},
                                      "reading": "statement step; w_T after T = R E steps" + (
                                          "; rescaled algorithm, printed substitution" if claim == "FEDAVG.T3U" else ""),
                                      "measured": f"mean F(w_T) - F* over {REPLICATES} replicates"}))
    return instances


def theorem_domain(claim: str, parameters=None) -> Domain:
    """The domain of FEDAVG.T1, T2, T3 or T3U (``parameters`` narrows the ranges)."""
    return Domain(list(parameters or theorem_parameters(claim)),
                  lambda points, seeds, ctx: _evaluate(claim, points, seeds, ctx), rule="expectation",
                  constraints=_constraints,
                  note="quadratics by N, d, mu/L, heterogeneity, Hessian spread, noise, start distance, E, rounds"
                       + ("" if claim == "FEDAVG.T3" else ", weight skew") + ("" if claim == "FEDAVG.T1" else ", K"))


# -- the reductions, on formulas ------------------------------------------------------------------
FOLLOWS_PARAMETERS = [
    Parameter("L", 1e-3, 1e3, log=True, simple=1.0, description="smoothness"),
    Parameter("mu_over_L", 1e-4, 1.0, log=True, simple=0.5, description="mu/L"),
    Parameter("E", 1, 100, integer=True, log=True, description="local steps per round"),
    Parameter("rounds", 1, 10**5, integer=True, log=True, description="T = R E"),
    Parameter("G", 1e-3, 1e3, log=True, simple=1.0, description="Assumption 4's G"),
    Parameter("Gamma", 1e-6, 1e3, log=True, simple=1.0, description="heterogeneity Gamma"),
    Parameter("sigma", 1e-3, 1e3, log=True, simple=1.0, description="every device's sigma_k"),
    Parameter("initial_distance_sq", 1e-6, 1e6, log=True, simple=1.0, description="||w_1 - w*||^2"),
    Parameter("N", 1, 1000, integer=True, log=True, description="devices (all sampled: K = N)"),
]


def _follows(claim, points, seeds, ctx) -> list[Instance]:
    instances = []
    for point in points:
        N, mu = point["N"], point["mu_over_L"] * point["L"]
        common = dict(L=point["L"], mu=mu, E=point["E"], T=point["rounds"] * point["E"], G=point["G"],
                      Gamma=point["Gamma"], initial_distance_sq=point["initial_distance_sq"])
        balanced = bounds.variance_term(np.full(N, 1.0 / N), np.full(N, point["sigma"]))
        theorem3 = bounds.theorem3(**common, weighted_variance=balanced, K=N, N=N)
        if claim == "FEDAVG.T3-FROM-T1":
            other = bounds.theorem1(**common, weighted_variance=balanced)
            measured, bound = theorem3.value, other.value
            details = {"theorem3_at_K_equal_N": theorem3.value, "theorem1": other.value, "C": theorem3.derived["C"]}
        else:
            remarks = {scaling: bounds.theorem3_unbalanced(**common, sigma_sq_sum=N * point["sigma"] ** 2, nu=1.0,
                                                           varsigma=1.0, K=N, N=N, noise_scaling=scaling).value
                       for scaling in bounds.NOISE_SCALINGS}
            measured, bound = max(remarks.values()), theorem3.value
            details = {**{f"remark_{k}": v for k, v in remarks.items()}, "theorem3": theorem3.value}
        instances.append(Instance(float(measured), float(bound), [row.as_dict() for row in theorem3.assumptions],
                                  details=details))
    return instances


def follows_domain(claim: str) -> Domain:
    """FEDAVG.T3-FROM-T1 or FEDAVG.T3U-FROM-T3 (formulas; equal in exact arithmetic, rtol 1e-9)."""
    return Domain(FOLLOWS_PARAMETERS, lambda points, seeds, ctx: _follows(claim, points, seeds, ctx),
                  rule="deterministic", rtol=1e-9,
                  note="the constants L, mu/L, E, T, G, Gamma, sigma, ||w_1 - w*||^2 and N (K = N, balanced weights)")


DOMAINS = {claim: theorem_domain(claim) for claim in SCHEMES}
FOLLOWS_DOMAINS = {claim: follows_domain(claim) for claim in ("FEDAVG.T3-FROM-T1", "FEDAVG.T3U-FROM-T3")}
