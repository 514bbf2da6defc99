"""How local GD's claims are measured and judged by their designed experiments (LOCALGD.T1, C1).

Local GD has no randomness: a problem, a step and a synchronisation gap give one number,
``f(x_bar_T) - f*``, and each theorem is an inequality that must hold on every instance
(:func:`cflbounds.claims.rules.deterministic`, tolerance :data:`.runs.RTOL`). The grid: three
problem families (heterogeneous and well conditioned; nearly flat, mu/L = 1e-3, every Hessian its
own; a start far from x* with little heterogeneity), M clients, the synchronisation gap H, and for
Theorem 1 the step as a fraction of its largest, ``1/(4LH)``; horizons T up to 10^4 steps. An
instance whose bound is at or above the trivial ``f(x_0) - f*`` is counted as uninformative; the
verdict is ``vacuous`` when every instance is.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from cflbounds.bounds import localgd as bounds
from cflbounds.claims import VerifyContext, Verdict, rules
from cflbounds.synthetic.seeding import spawn_seeds
from ..catalogue_quadratics import quadratic_problems
from .runs import RTOL, cell_constants, convexity_row, run_cells, theorem1_terms

__all__ = ["FAMILIES", "SIZES", "check_t1", "check_c1"]

# (name, mu/L, heterogeneity ||b_m||, Hessian spread, ||x_0 - x*||)
FAMILIES = (("heterogeneous", 0.1, 1.0, 0.5, 1.0), ("nearly flat", 1e-3, 1.0, 1.0, 1.0),
            ("far start", 0.1, 0.1, 0.5, 10.0))
SIZES = {"smoke": {"problems": 2, "clients": (4,), "d": 4, "H": (1, 4), "horizons": (10, 100, 1000)},
         "default": {"problems": 4, "clients": (4, 16), "d": 5, "H": (1, 4, 16),
                     "horizons": (10, 100, 1000, 10000)},
         "paper": {"problems": 16, "clients": (4, 16, 64), "d": 10, "H": (1, 2, 4, 8, 16, 32),
                   "horizons": (10, 100, 1000, 10000, 100000)}}
STEP_FRACTIONS = (1.0, 0.1)  # Theorem 1's gamma as a fraction of 1/(4LH)
_KEY_PROBLEMS = 71


def _family_problems(ctx):
    """Each family's problems for each M: ``(family, M, problem, distance, constants)``."""
    size = SIZES[ctx.scale]
    for family in FAMILIES:
        name, mu_over_L, heterogeneity, spread, distance = family
        for M in size["clients"]:
            seeds = spawn_seeds(ctx.seed, size["problems"], _KEY_PROBLEMS, M, FAMILIES.index(family))
            problem = quadratic_problems(seeds, clients=M, d=size["d"], mu_over_L=mu_over_L,
                                         heterogeneity=heterogeneity, hessian_spread=spread, device=ctx.device)
            yield family, M, problem, distance, cell_constants(problem)


def _t1_rows(ctx) -> pd.DataFrame:
    size, rows = SIZES[ctx.scale], []
    for family, M, problem, distance, constants in _family_problems(ctx):
        for H in size["H"]:
            for fraction in STEP_FRACTIONS:
                gamma = fraction / (4.0 * constants["L"] * H)
                cells = run_cells(problem, distance=distance, step_size=gamma, sync=H, horizons=size["horizons"])
                for b in range(problem.batch_size):
                    for h, T in enumerate(size["horizons"]):
                        result = theorem1_terms(constants, b, distance, gamma[b], H, T)
                        rows.append({"family": family[0], "M": M, "problem": b, "H": H, "step_fraction": fraction,
                                     "gamma": float(gamma[b]), "T": int(T), "L": float(constants["L"][b]),
                                     "sigma_sq": float(constants["sigma_sq"][b]),
                                     "initial_distance_sq": distance**2, "measured": float(cells["gap"][b, h]),
                                     "bound": float(result.value), "trivial": float(cells["trivial"][b]),
                                     **{f"bound_{k}": float(v) for k, v in result.terms.items()},
                                     "convex": bool(convexity_row(problem, b).holds)})
    return pd.DataFrame(rows)


def _c1_rows(ctx) -> pd.DataFrame:
    size, rows = SIZES[ctx.scale], []
    for family, M, problem, distance, constants in _family_problems(ctx):
        horizons = [T for T in size["horizons"] if T >= M]  # H = 1 <= sqrt(T/M) needs T >= M
        largest = int(np.floor(np.sqrt(max(horizons) / M)))
        for H in sorted({1, max(1, largest // 4), largest}):
            ok = [T for T in horizons if H <= np.sqrt(T / M)]  # the corollary's range
            if not ok:
                continue
            batch = problem.subset(np.repeat(np.arange(problem.batch_size), len(ok)).tolist())
            steps = np.array([bounds.corollary1_step(float(constants["L"][b]), M, T)
                              for b in range(problem.batch_size) for T in ok])
            cells = run_cells(batch, distance=distance, step_size=steps, sync=H, horizons=ok)
            for i, (b, T) in enumerate((b, T) for b in range(problem.batch_size) for T in ok):
                result = bounds.corollary1(initial_distance_sq=distance**2, sigma_sq=float(constants["sigma_sq"][b]),
                                           L=float(constants["L"][b]), H=H, T=T, M=M)
                rows.append({"family": family[0], "M": M, "problem": b, "H": H, "T": T, "gamma": float(steps[i]),
                             "L": float(constants["L"][b]), "sigma_sq": float(constants["sigma_sq"][b]),
                             "initial_distance_sq": distance**2, "measured": float(cells["gap"][i, ok.index(T)]),
                             "bound": float(result.value), "trivial": float(cells["trivial"][i]),
                             **{f"bound_{k}": float(v) for k, v in result.terms.items()}})
    return pd.DataFrame(rows)


def judged(claim_id: str, ctx, table: pd.DataFrame, quantity: str, details: dict, assumptions) -> Verdict:
    """``rules.deterministic`` on every row, ``vacuous`` when no row's bound is below its trivial
    ``f(x_0) - f*``; the summary adds measured/bound and where the bound is informative."""
    decision = rules.deterministic(table["measured"].to_numpy(), table["bound"].to_numpy(), rtol=RTOL,
                                   quantity=quantity, title=f"{claim_id}: {quantity} over the bound, per instance")
    informative = table["bound"] < table["trivial"]
    verdict = "vacuous" if decision.verdict == "holds" and not informative.any() else decision.verdict
    ratio = table["measured"] / table["bound"]
    worst = table.loc[ratio.idxmax()]
    tight = table[informative].loc[ratio[informative].idxmax()] if informative.any() else worst
    evidence = {"informative_instances": int(informative.sum()),
                "measured_over_bound_max": float(ratio.max()), "measured_over_bound_median": float(ratio.median()),
                "measured_over_bound_max_informative": float(ratio[informative].max()) if informative.any() else np.nan,
                "bound_over_trivial_min": float((table["bound"] / table["trivial"]).min())}
    summary = (f"{verdict}: {decision.summary.split(': ', 1)[1]}; the bound is below the trivial f(x_0) - f* on "
               f"{int(informative.sum())} of {len(table)} instances (smallest bound/trivial "
               f"{evidence['bound_over_trivial_min']:.3g}); closest informative instance: {tight['family']}, M = "
               f"{int(tight['M'])}, H = {int(tight['H'])}, T = {int(tight['T'])}: measured {tight['measured']:.4g} "
               f"against {tight['bound']:.4g}")
    return replace(decision, verdict=verdict).as_verdict(claim_id, ctx, summary=summary, evidence=evidence,
                                                         assumptions=assumptions, details=details)


def check_t1(ctx: VerifyContext) -> Verdict:
    """LOCALGD.T1 on the grid (module docstring)."""
    table = _t1_rows(ctx)
    ctx.save_table("localgd_t1", table)
    return judged("LOCALGD.T1", ctx, table, "f(x_bar_T) - f*", _details(table, "gamma = fraction x 1/(4LH), fractions "
                  f"{STEP_FRACTIONS}"), _rows(table))


def check_c1(ctx: VerifyContext) -> Verdict:
    """LOCALGD.C1 at the corollary's step on the grid (module docstring), H within sqrt(T/M)."""
    table = _c1_rows(ctx)
    ctx.save_table("localgd_c1", table)
    return judged("LOCALGD.C1", ctx, table, "f(x_bar_T) - f*", _details(table, "gamma = sqrt(M)/(4 L sqrt(T)), "
                  "H in {1, floor(sqrt(T_max/M))/4, floor(sqrt(T_max/M))} where H <= sqrt(T/M)"), _rows(table, c1=True))


def _details(table, step) -> dict:
    return {"problems": "heterogeneous quadratics, uniform weights, L = 1 (the claims are invariant under f -> c f); "
                        "families (mu/L, ||b_m||, Hessian spread, ||x_0 - x*||): "
                        + "; ".join(f"{n} ({m:g}, {h:g}, {s:g}, {d:g})" for n, m, h, s, d in FAMILIES),
            "step": step, "constants": "exact: L = max_m lambda_max(A_m), sigma^2 = (1/M) sum_m ||grad f_m(x*)||^2, "
                                       "||x_0 - x*||^2 = D^2",
            "algorithm": "local GD (Khaled et al. 2019, Sec. 2), synchronising every H steps, computed by segment "
                         "maps (cflbounds.algorithms.local_gd_segments: the per-step loop's iterates, tested)",
            "vacuous": "an instance whose bound is at or above f(x_0) - f* is uninformative",
            "instances": f"{len(table)} (problem, H, step, T)"}


def _rows(table, c1=False) -> list[dict]:
    """The assumption rows at the instance nearest its bound (largest measured/bound)."""
    worst = table.loc[(table["measured"] / table["bound"]).idxmax()]
    step_row = bounds.assumptions(L=float(worst["L"]), gamma=float(worst["gamma"]), H=int(worst["H"]))[0]
    rows = [step_row.as_dict()]
    if c1:
        rows.append({**bounds.corollary1(initial_distance_sq=float(worst["initial_distance_sq"]),
                                         sigma_sq=float(worst["sigma_sq"]), L=float(worst["L"]), H=int(worst["H"]),
                                         T=int(worst["T"]), M=int(worst["M"])).assumptions[0].as_dict()})
    return [{**row, "source": f"{row['source']} ({worst['family']}, M = {int(worst['M'])}, T = {int(worst['T'])})"}
            for row in rows]
