"""CFL's admissible domains, for ``cflbounds falsify`` (CFL.T1, C1, C1-CODE, SPLIT,
C1-FROM-T1).

The measured claims search quadratic true risks by the distributions k, the clients per
distribution, dimension, mu/L, how much the distributions' Hessians differ, the relative errors
(``gamma``, and how far below it each ``gamma_i`` may lie) and their directions (random, or
adversarial: rotated towards the nearest other distribution by the most gamma allows); each
instance is one problem's exact ``alpha`` at ``theta*`` (:func:`.runs.separation`), judged
deterministically: CFL.T1 by the worse of its two inequalities (the other in the details),
Corollary 1 by the distributions its bipartition splits when ``alpha_intra^min >
alpha_cross^max`` (the hypothesis row), the split test by the argmin's when the test passes at
``gamma_max`` (a multiple of the largest gamma_i).

CFL.C1-FROM-T1 is on formulas: k and gamma_max as a fraction of ``sin(pi/(4(k - 1)))``.
"""
from __future__ import annotations

import numpy as np

from cflbounds.bounds import cfl as bounds
from cflbounds.claims import Domain, Inequality, Instance, Parameter
from .checks import RTOL
from .runs import gamma_row, problems, separation

__all__ = ["T1_DOMAIN", "C1_DOMAIN", "C1_CODE_DOMAIN", "SPLIT_DOMAIN", "FOLLOWS_DOMAIN"]

_PARAMETERS = [
    Parameter("k", 2, 6, integer=True, description="distributions"),
    Parameter("per_distribution", 2, 6, integer=True, description="clients per distribution"),
    Parameter("d", 2, 10, integer=True, description="dimension"),
    Parameter("mu_over_L", 0.01, 1.0, log=True, simple=0.1, description="mu/L of every risk's spectrum"),
    Parameter("hessian_spread", 0.0, 1.0, simple=0.5, description="how much the risks' Hessians differ"),
    Parameter("gamma", 0.0, 0.99, simple=0.3, description="the largest relative error gamma_i"),
    Parameter("gamma_spread", 0.0, 1.0, simple=0.0, description="gamma_i = gamma (1 - spread u_i), u_i uniform"),
    Parameter("adversarial", 0, 1, integer=True, description="1: errors rotated towards the nearest other "
                                                             "distribution; 0: random directions"),
]


def _separated(points, seeds, ctx, methods):
    for point, seed in zip(points, seeds):
        problem, = problems([seed], k=point["k"], clients=point["k"] * point["per_distribution"], d=point["d"],
                            mu_over_L=point["mu_over_L"], hessian_spread=point["hessian_spread"], gamma=point["gamma"],
                            gamma_spread=point["gamma_spread"],
                            direction="adversarial" if point["adversarial"] else "random", device=ctx.device)
        gamma = problem.realised_relative_errors[0]
        yield point, gamma, separation(problem.similarities[0], problem.membership[0], gamma, point["k"], methods)


def _details(values, gamma) -> dict:
    return {**{k: float(v) for k, v in values.items()}, "gamma_min": float(gamma.min())}


def _t1(points, seeds, ctx) -> list[Instance]:
    instances = []
    for point, gamma, values in _separated(points, seeds, ctx, ()):
        both = {"cross": (1.0 + values["alpha_cross_max"], 1.0 + values["cross_bound"]),
                "intra": (1.0 - values["alpha_intra_min"], 1.0 - values["intra_floor"])}
        worse = max(both, key=lambda name: both[name][0] / both[name][1])
        measured, bound = both[worse]
        instances.append(Instance(measured, bound, [gamma_row(gamma).as_dict()], details={
            **_details(values, gamma), "inequality": worse,
            "measured": "1 + alpha_cross^max or 1 - alpha_intra^min, the worse of the two (by ratio)",
            "bound": "1 + Theorem 1's ceiling, or 1 - its floor"}))
    return instances


def _corollary(method):
    def evaluate(points, seeds, ctx) -> list[Instance]:
        instances = []
        for point, gamma, values in _separated(points, seeds, ctx, (method,)):
            condition = Inequality("alpha_intra^min > alpha_cross^max (Corollary 1's hypothesis)",
                                   values["alpha_intra_min"], values["alpha_cross_max"], ">", "CFL Corollary 1")
            instances.append(Instance(float(values[f"split_{method}"]), 0.0, [condition.as_dict()], details={
                **_details(values, gamma), "measured": f"distributions the {method} bipartition splits",
                "bound": "0"}))
        return instances
    return evaluate


def _split(points, seeds, ctx) -> list[Instance]:
    instances = []
    for point, gamma, values in _separated(points, seeds, ctx, ("exact",)):
        gamma_max = min(point["gamma_max_factor"] * float(gamma.max()), 1.0 - 1e-12)
        rows = [Inequality("sqrt((1 - alpha_cross^max)/2) > gamma_max (the split test)",
                           bounds.split_threshold(values["alpha_cross_max"]), gamma_max, ">", "CFL split test"),
                Inequality("every gamma_i <= gamma_max", float(gamma.max()), gamma_max, "<=", "CFL split test")]
        instances.append(Instance(float(values["split_exact"]), 0.0, [row.as_dict() for row in rows], details={
            **_details(values, gamma), "gamma_max_used": gamma_max,
            "measured": "distributions the argmin bipartition splits", "bound": "0"}))
    return instances


def _follows(points, seeds, ctx) -> list[Instance]:
    instances = []
    for point in points:
        k = point["k"]
        gamma_max = point["fraction"] * float(np.sin(np.pi / (4.0 * (k - 1))))
        result = bounds.corollary1(gamma_max=gamma_max, k=k)
        instances.append(Instance(1.0 + float(result.derived["cross_similarity_bound"]),
                                  1.0 + float(result.derived["intra_similarity_floor"]), [], details={
                                      "gamma_max": gamma_max, "measured": "1 + Theorem 1's cross ceiling at "
                                      "H = 1 - 2 gamma_max^2", "bound": "1 + (1 - 2 gamma_max^2)"}))
    return instances


def _domain(parameters, evaluate, note) -> Domain:
    return Domain(parameters, evaluate, rule="deterministic", rtol=RTOL, note=note)


_NOTE = ("quadratic true risks by k, clients per distribution, d, mu/L, Hessian spread, gamma, its spread and the "
         "errors' directions; one problem's exact alpha at theta*")
T1_DOMAIN = _domain(_PARAMETERS, _t1, _NOTE)
C1_DOMAIN = _domain(_PARAMETERS, _corollary("exact"), _NOTE + ", the argmin bipartition")
C1_CODE_DOMAIN = _domain(_PARAMETERS, _corollary("agglomerative"), _NOTE + ", complete linkage on -alpha")
SPLIT_DOMAIN = _domain([*_PARAMETERS, Parameter("gamma_max_factor", 1.0, 2.0, simple=1.0,
                                                description="gamma_max / the largest gamma_i")], _split,
                       _NOTE + ", the split test at gamma_max")
FOLLOWS_DOMAIN = _domain([Parameter("k", 2, 64, integer=True, log=True, description="distributions"),
                          Parameter("fraction", 1e-3, 0.999, simple=0.5,
                                    description="gamma_max / sin(pi/(4(k - 1))), below 1")], _follows,
                         "k and gamma_max below sin(pi/(4(k - 1))) (where Theorem 1's bounds give Corollary 1's "
                         "hypothesis)")
