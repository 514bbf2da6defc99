"""SCAFFOLD's admissible domains, for ``cflbounds falsify`` (SCAFFOLD.T1, T4).

The theorems state rounds to eps up to O~, so no single run can exceed them; what one instance
can test is the rate's shape, with the hidden constant ``c`` cancelling: each instance is a pair
of runs on one problem that differ only in the quantity the rate is about, and ``measured`` is
the growth of the rounds between them:

* **T1** (FedAvg): fractional rounds (:func:`.rounds.crossing`) to ``eps = 1e-4`` at the optima
  ``growth h u_i`` over those at ``h u_i`` (G grows about ``growth``-fold, B and the rest stay),
  against the growth of Theorem 1's expression between the two (``c`` the same at both ends: the
  rate's shape in G).
* **T4** (SCAFFOLD on quadratics): rounds per e-fold of accuracy at K local steps over those at
  K = 1, against Theorem 4's ``(beta + delta K)/(K (beta + delta))``; the row ``delta K <= 0.01
  beta`` (the catalogue's "while delta K << beta") and the row that the window (1e-4 to 1e-8 of
  the start's gap) starts after the first round, which runs with control variates at 0 (a window
  crossed inside it measures that warm-up, not the rate: a default search found such points at
  mu/beta near 0.2, K = 32); option I (:mod:`.checks` says why).

T3 ("no G") has no domain: both per-problem readings of its ordering tried here (SCAFFOLD's growth
factor of rounds against FedAvg's; the rounds each adds) are stricter than its O~. SCAFFOLD's
control variates start at 0 (its first round is FedAvg's), so its few rounds grow with G by the
log factor the O~ allows, and on some problems both methods' rounds even fall as G grows: smoke
searches found single problems beyond either reading (docs/papers.md), while the designed sweep's
paired ordering holds.

The ranges keep to the rates' regime: mu/beta <= 0.2, ||optimum_i|| >= 0.5 and G growing at
least 4-fold, where FedAvg's rounds are many and its G term matters.

Runs have no noise (``sigma = 0``, ``S = N``, ``eta_g = 1``: the theorems' other terms vanish) and
take the best constant local step of a geometric grid; rounds are then known only up to the grid's
ratio ``q`` (the best step of the grid is within a factor ``q`` of the best constant step), which
is the domains' ``rtol`` (``q - 1``). A run that does not reach the accuracy within the rounds
one evaluation affords makes its instance inadmissible (a row), never evidence.
"""
from __future__ import annotations

import numpy as np

from cflbounds.bounds import scaffold as bounds
from cflbounds.claims import Domain, Inequality, Instance, Parameter
from ..catalogue_quadratics import quadratic_problems, stack
from .rounds import WINDOW, best_rounds, dissimilarity, fedavg_gaps, t4_rounds_per_efold

__all__ = ["GROWTH_PARAMETERS", "T4_PARAMETERS", "GRID_RATIO", "t1_domain", "t4_domain", "DOMAINS"]

CLIENTS, DIMENSION, ACCURACY, DISTANCE, LOCAL_STEPS = 8, 4, 1e-4, 1.0, 5
GRID_RATIO = 10 ** (1 / 8)  # q: 8 steps a decade
FEDAVG_GRID = np.geomspace(1e-3, 1.0, 25) / LOCAL_STEPS  # eta_l; K eta_l beta from 1e-3 to 1
T4_GRID = 1.5 / GRID_RATIO ** np.arange(9)  # eta_l from 1.5 down to 0.15
FEDAVG_ROUNDS = 1500  # what one domain evaluation affords
AFFORDS = "cflbounds falsify: what one evaluation affords"

GROWTH_PARAMETERS = [
    Parameter("mu_over_beta", 0.02, 0.2, log=True, simple=0.1, description="mu/beta of every client's Hessian spectrum"),
    Parameter("hessian_spread", 0.0, 1.0, simple=0.5, description="how much the clients' Hessians differ (0: shared)"),
    Parameter("heterogeneity", 0.5, 2.0, log=True, simple=1.0, description="||optimum_i|| at the smaller G"),
    Parameter("growth", 4.0, 16.0, log=True, simple=4.0, description="the factor G (the optima) grows by"),
]
T4_PARAMETERS = [
    Parameter("mu_over_beta", 0.05, 0.2, log=True, simple=0.1, description="mu/beta of every client's Hessian spectrum"),
    Parameter("hessian_spread", 0.0, 0.0004, simple=0.0002,
              description="how much the clients' Hessians differ (delta about 0.7 times it)"),
    Parameter("heterogeneity", 0.1, 10.0, log=True, simple=1.0, description="||optimum_i||"),
    Parameter("log2_K", 1, 5, integer=True, description="K = 2^log2_K local steps per round (against K = 1)"),
]


def _growth_runs(points, seeds, ctx) -> dict:
    """Per point, FedAvg's fewest rounds to ``ACCURACY`` (best of its grid) on
    the problem at ``heterogeneity`` and at ``growth`` times it (one seed: the same Hessians and
    directions), with (G, B) and beta, mu of both: arrays ``(points, 2)``."""
    problems = [quadratic_problems([seed], clients=CLIENTS, d=DIMENSION, mu_over_L=point["mu_over_beta"],
                                   heterogeneity=point["heterogeneity"] * level, hessian_spread=point["hessian_spread"],
                                   device=ctx.device)
                for point, seed in zip(points, seeds) for level in (1.0, point["growth"])]
    batch = stack(problems)
    G, B = dissimilarity(batch)
    fedavg, _ = best_rounds(fedavg_gaps(batch, K=LOCAL_STEPS, grid=FEDAVG_GRID, rounds=FEDAVG_ROUNDS,
                                        distance=DISTANCE), ACCURACY)
    shape = (len(points), 2)
    return {"fedavg": fedavg.reshape(shape), "G": G.reshape(shape),
            "B": B.reshape(shape), "beta": np.asarray(batch.smoothness).reshape(shape),
            "mu": np.asarray(batch.strong_convexity).reshape(shape)}


def _t1_instances(points, seeds, ctx) -> list[Instance]:
    runs = _growth_runs(points, seeds, ctx)
    instances = []
    for i in range(len(points)):
        fedavg = runs["fedavg"][i]
        row = Inequality(f"FedAvg reaches eps = {ACCURACY:g} at both ends within its rounds", float(np.max(fedavg)),
                         float(FEDAVG_ROUNDS), "<=", AFFORDS).as_dict()
        expressions = [bounds.theorem1_rounds(sigma_sq=0.0, G=float(runs["G"][i, j]), B=float(runs["B"][i, j]),
                                              mu=float(runs["mu"][i, j]), beta=float(runs["beta"][i, j]), K=LOCAL_STEPS,
                                              S=CLIENTS, N=CLIENTS, epsilon=ACCURACY).value for j in (0, 1)]
        measured = float(fedavg[1] / fedavg[0]) if np.all(np.isfinite(fedavg)) else np.inf
        instances.append(Instance(measured, float(expressions[1] / expressions[0]), [row], details={
            "G": float(runs["G"][i, 0]), "G_grown": float(runs["G"][i, 1]), "B": float(runs["B"][i, 0]),
            "fedavg_rounds": float(fedavg[0]), "fedavg_rounds_grown": float(fedavg[1]),
            "measured": "FedAvg's rounds to eps at the grown G over those at G",
            "bound": "Theorem 1's expression at the grown G over that at G (c cancels)"}))
    return instances


def _domain(parameters, evaluate, note: str) -> Domain:
    """A deterministic domain whose tolerance is the step grid's resolution (module docstring)."""
    return Domain(list(parameters), evaluate, rule="deterministic", rtol=GRID_RATIO - 1.0, note=note)


def t1_domain(parameters=None) -> Domain:
    """SCAFFOLD.T1's domain (module docstring; ``parameters`` narrows the ranges)."""
    return _domain(parameters or GROWTH_PARAMETERS, _t1_instances,
                   "quadratics (N = 8, d = 4, beta = 1) by mu/beta, Hessian spread, heterogeneity and the factor G grows "
                   "by: FedAvg's rounds to eps grow no more than Theorem 1's expression")


def _t4_instances(points, seeds, ctx) -> list[Instance]:
    """All points' problems in one batch: one run at K = 1 and one per distinct K (the runs'
    cost is per round, not per problem)."""
    problem = stack([quadratic_problems([seed], clients=CLIENTS, d=DIMENSION, mu_over_L=point["mu_over_beta"],
                                        heterogeneity=point["heterogeneity"], hessian_spread=point["hessian_spread"],
                                        device=ctx.device) for point, seed in zip(points, seeds)])
    beta, mu, delta = problem.smoothness, problem.strong_convexity, problem.hessian_dissimilarity
    Ks = np.array([2 ** point["log2_K"] for point in points])
    one, _ = t4_rounds_per_efold(problem, 1, T4_GRID, "I")
    many = np.empty(len(points))
    for K in np.unique(Ks):
        at = np.flatnonzero(Ks == K)
        many[at] = t4_rounds_per_efold(problem.subset(at.tolist()), int(K), T4_GRID, "I")[0]
    instances = []
    for i, K in enumerate(Ks):
        expression = [bounds.theorem4_rounds(sigma_sq=0.0, mu=float(mu[i]), beta=float(beta[i]), delta=float(delta[i]),
                                             K=int(k), N=CLIENTS, epsilon=1.0).value for k in (1, K)]
        reached = bool(np.isfinite(one[i]) and np.isfinite(many[i]))
        rows = [Inequality("delta K <= 0.01 beta (delta K << beta)", float(delta[i] * K), 0.01 * float(beta[i]), "<=",
                           "CATALOGUE.md: SCAFFOLD's rounds fall like 1/K while delta K << beta").as_dict(),
                Inequality("the runs reach the window's end (rounds per e-fold finite)", float(reached), 1.0, ">=",
                           AFFORDS).as_dict(),
                Inequality("the window starts after the first round: rounds per e-fold at K times ln(1/1e-4) >= 1",
                           float(many[i] * np.log(1.0 / WINDOW[0])) if reached else 0.0, 1.0, ">=",
                           "the measurement: the first round runs with control variates at 0 (FedAvg's)").as_dict()]
        instances.append(Instance(float(many[i] / one[i]) if reached else np.inf,
                                  float(expression[1] / expression[0]), rows, details={
            "K": int(K), "delta": float(delta[i]), "rounds_per_efold_K1": float(one[i]),
            "rounds_per_efold_K": float(many[i]),
            "measured": "SCAFFOLD's (option I) rounds per e-fold at K over those at K = 1",
            "bound": "Theorem 4's (beta + delta K)/(mu K) at K over its value at K = 1 (c cancels)"}))
    return instances


def t4_domain(parameters=None) -> Domain:
    """SCAFFOLD.T4's domain (module docstring; ``parameters`` narrows the ranges)."""
    return _domain(parameters or T4_PARAMETERS, _t4_instances,
                   "quadratics (N = 8, d = 4, beta = 1) by mu/beta, a small Hessian spread, heterogeneity and K = 2..32: "
                   "SCAFFOLD's rounds per e-fold at K over K = 1 within Theorem 4's (beta + delta K)/(K (beta + delta))")


DOMAINS = {"SCAFFOLD.T1": t1_domain(), "SCAFFOLD.T4": t4_domain()}
