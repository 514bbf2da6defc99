"""How CFL's claims are measured and judged by their designed experiments (CFL.T1, C1,
C1-CODE, SPLIT, C1-FROM-T1).

Each claim is an inequality or an implication that must hold on every admissible instance
(:func:`cflbounds.claims.rules.deterministic`, tolerance :data:`RTOL`): Theorem 1's two
inequalities on ``alpha`` at ``theta*`` (:mod:`.runs`); Corollary 1 (if ``alpha_intra^min >
alpha_cross^max`` the bipartition splits no distribution: measured the distributions split,
bound 0) on the paper's argmin (``exact``, and ``exhaustive`` where it reaches) and on the
authors' code's complete linkage (``agglomerative``); the split test's guarantee (if every
``gamma_i <= gamma_max`` and ``sqrt((1 - alpha_cross^max)/2) > gamma_max``, the argmin splits no
distribution; at theta* and on the algorithm's own runs, each split at the model it was made
from); and Corollary 1 from Theorem 1 on formulas (Theorem 1's cross ceiling below its
intra floor wherever ``gamma_max < sin(pi/(4(k - 1)))``, the range where its bounds give the
corollary's hypothesis).

The grid: k distributions, clients per distribution, the relative errors gamma (equal, or
spread below gamma), their directions (random; adversarial: rotated by the most gamma allows
towards the nearest other distribution), Hessians shared or not; at the default scale also the
learned case (rotated digits, softmax regression, gamma_i estimated: Theorem 1's bounds at the
upper end of each gamma_i's bootstrap interval).
"""
from __future__ import annotations

from itertools import product

import numpy as np
import pandas as pd

from cflbounds.algorithms.cosine_cfl import cosine_cfl
from cflbounds.bounds import cfl as bounds
from cflbounds.claims import Inequality, VerifyContext, Verdict
from cflbounds.synthetic.cfl_quadratics import make_cfl_quadratics
from cflbounds.synthetic.digit_risks import make_digit_risks
from cflbounds.synthetic.seeding import spawn_seeds
from ..admissible import saved_and_judged
from .runs import gamma_row, problems, separation, split_count

__all__ = ["RTOL", "SIZES", "RUN_OPTIONS", "table_of", "t1_rows", "c1_rows", "split_rows", "run_split_rows",
           "follows_rows", "check_t1", "check_c1",
           "check_c1_code", "check_split", "check_c1_follows"]

# alpha is a float64 cosine of exact gradients, the bounds closed forms of the gamma_i: 1e-9 is
# rounding's allowance, far below the planted errors the tests catch
RTOL = 1e-9
SIZES = {"smoke": {"problems": 3, "k": (2, 3), "per_distribution": (2,), "d": 6, "gamma": (0.2, 0.7, 0.9),
                   "gamma_spread": (0.0,), "directions": ("random", "adversarial"), "hessian_spread": (0.5,),
                   "digits": 0, "runs": {"k": (2, 3), "per_distribution": (2,), "gamma": (0.7,)}},
         "default": {"problems": 4, "k": (2, 3, 4), "per_distribution": (2, 4), "d": 6,
                     "gamma": (0.1, 0.3, 0.5, 0.7, 0.9),
                     "gamma_spread": (0.0, 0.5), "directions": ("random", "adversarial"), "hessian_spread": (0.0, 0.5),
                     "digits": 2, "runs": {"k": (2, 3, 4), "per_distribution": (2, 4), "gamma": (0.3, 0.7)}},
         "paper": {"problems": 8, "k": (2, 3, 4, 6), "per_distribution": (2, 4, 8), "d": 10,
                   "gamma": (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95), "gamma_spread": (0.0, 0.5, 1.0),
                   "directions": ("random", "adversarial"), "hessian_spread": (0.0, 0.5, 1.0), "digits": 4,
                   "runs": {"k": (2, 3, 4, 6), "per_distribution": (2, 4, 8), "gamma": (0.1, 0.3, 0.5, 0.7, 0.9)}}}
METHODS = ("exact", "exhaustive", "agglomerative")
_KEY = 89


def _cells(ctx):
    size = SIZES[ctx.scale]
    for k, per, gamma, spread, direction, hessian in product(size["k"], size["per_distribution"], size["gamma"],
                                                             size["gamma_spread"], size["directions"],
                                                             size["hessian_spread"]):
        seeds = spawn_seeds(ctx.seed, size["problems"], _KEY, k, per, int(1000 * gamma), int(1000 * spread),
                            size["directions"].index(direction), int(1000 * hessian))
        yield {"k": k, "clients": k * per, "gamma": gamma, "gamma_spread": spread, "direction": direction,
               "hessian_spread": hessian}, seeds


def table_of(ctx: VerifyContext) -> pd.DataFrame:
    """One row per problem of the grid with :func:`.runs.separation`'s quantities (every method),
    the gamma_i used and where they come from; shared by the CFL checks (``ctx.shared``)."""
    return ctx.shared("cfl-separation", lambda: _table(ctx))


def _table(ctx) -> pd.DataFrame:
    size, rows = SIZES[ctx.scale], []
    for cell, seeds in _cells(ctx):
        for b, problem in enumerate(problems(seeds, k=cell["k"], clients=cell["clients"], d=size["d"], mu_over_L=0.1,
                                             hessian_spread=cell["hessian_spread"], gamma=cell["gamma"],
                                             gamma_spread=cell["gamma_spread"], direction=cell["direction"],
                                             device=ctx.device)):
            gamma = problem.realised_relative_errors[0]
            rows.append({"family": f"quadratics, {cell['direction']}", **cell, "problem": b,
                         "gamma_source": "exact", "gammas": gamma.tolist(),
                         "membership": problem.membership[0].tolist(),
                         **separation(problem.similarities[0], problem.membership[0], gamma, cell["k"], METHODS)})
    for b in range(size["digits"]):
        digits = make_digit_risks(8, 4, train_per_client=300, bootstrap=100, batch_size=1,
                                  seed=spawn_seeds(ctx.seed, size["digits"], _KEY, 0)[b], device=ctx.device)
        gamma = digits.relative_error_interval[0, :, 1]  # the bootstrap's upper end: the bounds at a gamma vouched for
        rows.append({"family": "rotated digits (gamma_i estimated)", "k": 4, "clients": 8, "gamma": float(gamma.max()),
                     "gamma_spread": np.nan, "direction": "learned", "hessian_spread": np.nan, "problem": b,
                     "gamma_source": "bootstrap 95% upper end", "gammas": gamma.tolist(),
                     "membership": digits.membership[0].tolist(),
                     **separation(digits.similarities[0], digits.membership[0], np.minimum(gamma, 1 - 1e-12), 4,
                                  METHODS)})
    return pd.DataFrame(rows)


def _where(row) -> str:
    return (f"{row['family']}, k = {int(row['k'])}, m = {int(row['clients'])}, gamma_max = {row['gamma_max']:.3g}, "
            f"problem {int(row['problem'])}")


def t1_rows(table: pd.DataFrame, cross=bounds.cross_similarity_bound) -> pd.DataFrame:
    """CFL.T1's instances: per problem, the cross inequality ``1 + alpha_cross^max <= 1 + ceiling``
    and the intra one ``1 - alpha_intra^min <= 1 - floor`` (``cross``: the ceiling's formula, a
    planted one in tests)."""
    rows = []
    for _, row in table.iterrows():
        checks = [gamma_row(row["gammas"])]
        admissible = all(r.holds for r in checks)
        ceiling = cross(row["H_cross"], int(row["k"])) if admissible else np.nan
        both = [("cross", 1.0 + row["alpha_cross_max"], 1.0 + ceiling),
                ("intra", 1.0 - row["alpha_intra_min"], 1.0 - row["intra_floor"])]
        for inequality, measured, bound in both:
            rows.append({**row.drop(["gammas", "membership"]).to_dict(), "inequality": inequality,
                         "measured": measured, "bound": bound, "ceiling": ceiling, "admissible": admissible,
                         "rows": [r.as_dict() for r in checks]})
    return pd.DataFrame(rows)


def c1_rows(table: pd.DataFrame, methods) -> pd.DataFrame:
    """Corollary 1's instances under the bipartition ``methods``: admissible when ``alpha_intra^min
    > alpha_cross^max``; measured the distributions the method's bipartition splits, bound 0."""
    rows = []
    for _, row in table.iterrows():
        condition = Inequality("alpha_intra^min > alpha_cross^max (Corollary 1's hypothesis)", row["alpha_intra_min"],
                               row["alpha_cross_max"], ">", "CFL Corollary 1")
        for method in methods:
            if not np.isfinite(row.get(f"split_{method}", np.nan)):
                continue  # the exhaustive search's limit
            rows.append({**row.drop(["gammas", "membership"]).to_dict(), "method": method,
                         "measured": float(row[f"split_{method}"]), "bound": 0.0, "admissible": condition.holds,
                         "margin": row["alpha_intra_min"] - row["alpha_cross_max"], "rows": [condition.as_dict()]})
    return pd.DataFrame(rows)


def split_rows(table: pd.DataFrame, threshold=bounds.split_threshold) -> pd.DataFrame:
    """The split test's instances: ``gamma_max`` the largest gamma_i and 1.25 times it (every
    ``gamma_i <= gamma_max``), admissible when the test passes,
    ``sqrt((1 - alpha_cross^max)/2) > gamma_max``; measured the distributions the argmin splits."""
    rows = []
    for (_, row), factor in product(table.iterrows(), (1.0, 1.25)):
        gamma_max = factor * row["gamma_max"]
        test = Inequality("sqrt((1 - alpha_cross^max)/2) > gamma_max (the split test)",
                          threshold(row["alpha_cross_max"]), gamma_max, ">", "CFL split test")
        rows.append({**row.drop(["gammas", "membership"]).to_dict(), "gamma_max_used": gamma_max,
                     "measured": float(row["split_exact"]), "bound": 0.0, "admissible": test.holds,
                     "margin": test.slack,
                     "rows": [test.as_dict(), Inequality("every gamma_i <= gamma_max", row["gamma_max"], gamma_max,
                                                         "<=", "CFL split test").as_dict()]})
    return pd.DataFrame(rows)


# the runs of the algorithm (CFL.SPLIT): gradients, full participation, the paper's split test
RUN_OPTIONS = {"rounds": 300, "step_size": 0.5, "eps1": 1e-3, "eps2": 0.0, "gamma_max_factor": 1.25}


def run_split_rows(ctx: VerifyContext) -> pd.DataFrame:
    """The split test's instances on runs of the algorithm (:func:`~cflbounds.algorithms.cosine_cfl.
    cosine_cfl`, the paper's split test and argmin, :data:`RUN_OPTIONS`; ``gamma_max`` 1.25 times
    the problems' gamma): one row per split the test made, at the model theta_c it was made from,
    ``gamma_i(theta_c) = ||e_i|| / ||grad R_I(i)(theta_c)||`` exact for its members (admissible when
    every one is at most gamma_max: a cluster of one distribution near its own optimum, whose true
    gradients vanish, is not); measured the distributions the split separates."""
    size, rows = SIZES[ctx.scale], []
    runs = size["runs"]
    for k, per, gamma, direction, hessian in product(runs["k"], runs["per_distribution"], runs["gamma"],
                                                     size["directions"], size["hessian_spread"]):
        seeds = spawn_seeds(ctx.seed, size["problems"], _KEY, k, per, int(1000 * gamma), 0,
                            size["directions"].index(direction), int(1000 * hessian))
        problem = make_cfl_quadratics(k, k * per, size["d"], strong_convexity=0.1, smoothness=1.0, separation=1.0,
                                      hessian_spread=hessian, relative_error=gamma, error_direction=direction,
                                      batch_size=len(seeds), seed=list(seeds), device=ctx.device)
        gamma_max = min(RUN_OPTIONS["gamma_max_factor"] * gamma, 1.0 - 1e-9)
        options = {name: value for name, value in RUN_OPTIONS.items() if name != "gamma_max_factor"}
        trace = cosine_cfl(problem, gamma_max=gamma_max, record_models=True, **options)
        for test in (test for test in trace.splits if test.split):
            members = np.asarray(test.members)
            theta = trace.models[test.run, test.round - 1, members[0]]  # the cluster's model the round started from
            group = problem.membership[test.run, members]
            true = np.einsum("mkl,ml->mk", problem.risk_hessians[test.run, group],
                             theta - problem.risk_optima[test.run, group])
            at_model = np.linalg.norm(problem.errors[test.run, members], axis=-1) / np.linalg.norm(true, axis=-1)
            condition = Inequality("every member's gamma_i(theta_c) <= gamma_max", float(at_model.max()), gamma_max,
                                   "<=", "CFL split test")
            rows.append({"family": f"cosine_cfl runs, {direction}", "k": k, "clients": k * per, "gamma": gamma,
                         "direction": direction, "hessian_spread": hessian, "problem": test.run, "round": test.round,
                         "cluster_size": members.size, "gamma_max": float(at_model.max()),
                         "gamma_max_used": gamma_max, "alpha_cross_max": test.alpha_cross_max,
                         "measured": float(split_count(np.asarray(test.part), group)), "bound": 0.0,
                         "admissible": condition.holds, "margin": condition.slack, "rows": [
                             Inequality("sqrt((1 - alpha_cross^max)/2) > gamma_max (the split test)", test.threshold,
                                        gamma_max, ">", "CFL split test").as_dict(), condition.as_dict()]})
    return pd.DataFrame(rows)


def follows_rows(corollary=bounds.corollary1) -> pd.DataFrame:
    """CFL.C1-FROM-T1 on formulas: for k and gamma_max a fraction of sin(pi/(4(k - 1))), Theorem 1's
    cross ceiling at ``H = 1 - 2 gamma_max^2`` (measured, ``1 +``) against its intra floor ``1 - 2
    gamma_max^2`` (bound, ``1 +``)."""
    rows = []
    for k, fraction in product((2, 3, 4, 5, 8, 16, 64), (0.01, 0.1, 0.5, 0.9, 0.99, 0.999)):
        limit = float(np.sin(np.pi / (4.0 * (k - 1))))
        result = corollary(gamma_max=fraction * limit, k=k)
        rows.append({"k": k, "fraction": fraction, "gamma_max": fraction * limit,
                     "measured": 1.0 + float(result.derived["cross_similarity_bound"]),
                     "bound": 1.0 + float(result.derived["intra_similarity_floor"]), "admissible": True, "rows": []})
    return pd.DataFrame(rows)


_DETAILS = {"problems": "quadratic true risks (L = 1, mu/L = 0.1, ||c_j|| = 1), theta* the population mixture's "
                        "stationary point, gamma_i and alpha exact; the learned case: rotated digits, softmax "
                        "regression, gamma_i estimated (bootstrap, its 95% upper end used)",
            "bipartitions": "exact: the maximum spanning tree's cut (the argmin, every m); exhaustive: every "
                            "bipartition (m <= 16); agglomerative: scikit-learn's complete linkage on -alpha (the "
                            "authors' code)"}


def check_t1(ctx: VerifyContext, cross=bounds.cross_similarity_bound) -> Verdict:
    """CFL.T1, both inequalities, on the grid (module docstring)."""
    table = t1_rows(table_of(ctx), cross)
    details = {**_DETAILS, "measured": "1 + alpha_cross^max (the argmin's) and 1 - alpha_intra^min",
               "bound": "1 + Theorem 1's ceiling at the smallest H_(i,j) of two distributions' clients, and 1 - the "
                        "smallest H_(i,j) of one distribution's clients"}
    by = {f"{name}_measured_over_bound_max": float((part["measured"] / part["bound"]).max())
          for name, part in table[table["admissible"]].groupby("inequality")}
    return saved_and_judged("CFL.T1", ctx, "cfl_t1", table, RTOL, "1 + alpha_cross^max or 1 - alpha_intra^min",
                            details, lambda row: (
        f"{row['inequality']} inequality, {_where(row)}: {row['measured']:.4g} against {row['bound']:.4g}"),
        evidence=by)


def _check_c1(claim_id, ctx, methods) -> Verdict:
    table = c1_rows(table_of(ctx), methods)
    kept = table[table["admissible"]]
    details = {**_DETAILS, "measured": "the distributions the bipartition splits", "bound": "0 (a correct bipartition)",
               "methods": ", ".join(methods)}
    evidence = {"margin_min": float(kept["margin"].min()) if len(kept) else np.nan,
                "instances_split": int((kept["measured"] > 0).sum())}
    return saved_and_judged(claim_id, ctx, claim_id.lower().replace(".", "_").replace("-", "_"), table, RTOL,
                            "distributions split", details, lambda row: (
        f"{row['method']}, {_where(row)}: {int(row['measured'])} distribution(s) split, alpha_intra^min - "
        f"alpha_cross^max = {row['margin']:.3g}"), evidence=evidence)


def check_c1(ctx: VerifyContext) -> Verdict:
    """CFL.C1 on the paper's argmin (spanning-tree cut, and the exhaustive search where it reaches)."""
    return _check_c1("CFL.C1", ctx, ("exact", "exhaustive"))


def check_c1_code(ctx: VerifyContext) -> Verdict:
    """CFL.C1 on the authors' code's bipartition (complete linkage on -alpha)."""
    return _check_c1("CFL.C1-CODE", ctx, ("agglomerative",))


def check_split(ctx: VerifyContext, threshold=bounds.split_threshold) -> Verdict:
    """The split test's guarantee on the grid (module docstring)."""
    table = pd.concat([split_rows(table_of(ctx), threshold), run_split_rows(ctx)], ignore_index=True)
    details = {**_DETAILS, "measured": "the distributions the argmin bipartition splits", "bound": "0",
               "gamma_max": "at theta*: the largest gamma_i, and 1.25 times it; on the algorithm's runs 1.25 times the "
                            "problems' gamma, each split judged at the model it was made from (gamma_i there exact)",
               "runs": ", ".join(f"{name} {value:g}" for name, value in RUN_OPTIONS.items())}
    return saved_and_judged("CFL.SPLIT", ctx, "cfl_split", table, RTOL, "distributions split", details, lambda row: (
        f"{_where(row)}, gamma_max used {row['gamma_max_used']:.3g}: {int(row['measured'])} distribution(s) split"),
        evidence={"instances_split": int((table[table['admissible']]["measured"] > 0).sum()),
                  "algorithm_splits": int(table["family"].str.startswith("cosine_cfl").sum()),
                  "algorithm_splits_admissible": int((table["family"].str.startswith("cosine_cfl")
                                                      & table["admissible"]).sum())})


def check_c1_follows(ctx: VerifyContext, corollary=bounds.corollary1) -> Verdict:
    """CFL.C1-FROM-T1 on formulas (module docstring)."""
    table = follows_rows(corollary)
    details = {"measured": "1 + Theorem 1's cross ceiling at H = 1 - 2 gamma_max^2",
               "bound": "1 + (1 - 2 gamma_max^2), "
               "Theorem 1's intra floor", "range": "gamma_max = fraction x sin(pi/(4(k - 1))), fraction < 1"}
    return saved_and_judged("CFL.C1-FROM-T1", ctx, "cfl_c1_follows", table, RTOL, "1 + the cross ceiling",
                            details, lambda row: (
        f"k = {int(row['k'])}, gamma_max = {row['gamma_max']:.4g} ({row['fraction']:g} of the limit): "
        f"{row['measured']:.6g} against {row['bound']:.6g}"))
