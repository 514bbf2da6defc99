"""How IFCA's claims are measured and judged (claims IFCA.* of CLAIMS.md).

The theory checks (A2, T1, T2c, C1) run the theory version of IFCA (gradient averaging,
full participation, re-sampling with n' points per batch, inits at distance Delta/4) on
mixed linear regression with ``k = 2`` equal clusters and ``theta*_j`` of norm 1
(``truth="paper-text"``, so ``max ||theta*|| <~ 1`` holds). Every verdict is computed from
the measurements of this call; the papers' universal constants are never fitted into a
bound: rates are judged by log-log fits (CLAIMS.md, "Universal constants").
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from cflbounds.algorithms import ifca
from cflbounds.bounds import ifca as bounds
from cflbounds.claims import Verdict, VerifyContext
from cflbounds.claims.assumptions import assumption_verdict, labelled
from cflbounds.claims.stats import clopper_pearson, fit_rate
from cflbounds.synthetic import make_mixed_linear_regression
from cflbounds.synthetic.mixed_linear_regression import draw_ground_truth, loss_variance
from cflbounds.synthetic.seeding import spawn_seeds

CONFIDENCE = 0.95
K, TRUTH, RADIUS = 2, "paper-text", 1.0  # theory problems: two equal clusters, ||theta*_j|| = 1
P = 1.0 / K
C1_STEP = 0.5  # gamma = c1/p with c1 = 1/2: the exact population step for f = (y - <x,theta>)^2

# one-step experiments (T1, T2c): a contraction regime and a floor sweep over m (>= 1.5 decades of m n')
ONE_STEP = {
    # smoke: small, but inside Assumption 6 like the larger scales (d = 10 drew centers closer than
    # Delta >= n'^(-1/5) asks, and m = 10 broke p >~ log(m n')/m: a smoke verdict must not rest on
    # problems outside the theorem)
    "smoke": {"d": 20, "m": 40, "n_prime": 20, "sigma": 0.01, "trials": 160,
              "floor_m": (16, 32, 64, 128, 256, 512), "floor_trials": 30},
    "default": {"d": 20, "m": 200, "n_prime": 25, "sigma": 0.01, "trials": 800,
                "floor_m": (16, 32, 64, 128, 256, 512), "floor_trials": 100},
    "paper": {"d": 100, "m": 1000, "n_prime": 50, "sigma": 0.01, "trials": 4000,
              "floor_m": (32, 64, 128, 256, 512, 1024, 2048), "floor_trials": 400},
}
CONVERGENCE = {  # Corollary 1: full runs of T = log(Delta/(4 eps)) iterations over a sweep of m
    "smoke": {"d": 10, "n_prime": 20, "sigma": 0.1, "m": (8, 16, 32, 64, 128, 256), "trials": 20},
    "default": {"d": 10, "n_prime": 20, "sigma": 0.1, "m": (8, 16, 32, 64, 128, 256, 512), "trials": 60},
    "paper": {"d": 50, "n_prime": 50, "sigma": 0.1, "m": (16, 32, 64, 128, 256, 512, 1024, 2048), "trials": 200},
}
_CHUNK_BYTES = 256 << 20


# -- experiments -------------------------------------------------------------------------
def _theory_runs(ctx, *, m, n_prime, d, sigma, trials, iterations, step_sizes, init_ratio, key):
    """Theory-version IFCA runs from ``init_ratio * Delta``; returns the traces per chunk."""
    seeds = spawn_seeds(ctx.seed, trials, *key)
    n = 2 * n_prime * iterations
    chunk = max(1, _CHUNK_BYTES // (m * n * d * 8))
    for start in range(0, trials, chunk):
        problem = make_mixed_linear_regression(
            K, m, n, d, sigma=sigma, truth=TRUTH, scale=RADIUS, batch_size=len(seeds[start:start + chunk]),
            seed=list(seeds[start:start + chunk]), device=ctx.device,
        )
        yield problem, ifca(problem, iterations=iterations, step_sizes=step_sizes, resample="split",
                            init="near-truth", init_distance_ratio=init_ratio, seed=ctx.seed)


def _one_step_table(ctx, m, trials, init_ratio, key) -> pd.DataFrame:
    """One step from ``||theta_j - theta*_j|| = init_ratio * Delta`` for every step size of
    the T1/T2c checks; one row per (trial, step size, cluster)."""
    cfg = ONE_STEP[ctx.scale]
    steps = _one_step_sizes()
    frames = []
    for problem, trace in _theory_runs(ctx, m=m, n_prime=cfg["n_prime"], d=cfg["d"], sigma=cfg["sigma"],
                                       trials=trials, iterations=1, step_sizes=steps, init_ratio=init_ratio, key=key):
        labelled = trace.labelled_distance  # (B, S, 2, k)
        B, S = labelled.shape[:2]
        frames.append(pd.DataFrame({
            "m": m,
            "n_prime": cfg["n_prime"],
            "d": cfg["d"],
            "sigma": cfg["sigma"],
            "trial": np.repeat(np.arange(B), S * K) + sum(len(f) for f in frames) // (S * K),
            "problem_seed": np.repeat(np.array(problem.seeds, dtype=np.uint64), S * K),
            "separation": np.repeat(problem.separation, S * K),
            "step_size": np.tile(np.repeat(steps, K), B),
            "cluster": np.tile(np.arange(K), B * S),
            "before": labelled[:, :, 0].ravel(),
            "after": labelled[:, :, 1].ravel(),
            "misassigned": np.repeat(trace.misassigned_labelled[:, :, 0], K, axis=1).ravel(),
        }))
    return pd.concat(frames, ignore_index=True)


def _one_step_sizes():
    """c1 in {1/4, 1/2, 3/4} (T1's gamma = c1/p) and gamma = 1/L (T2); L = 2 here."""
    return np.unique([c / P for c in (0.25, C1_STEP, 0.75)] + [1.0 / 2.0])


def _contraction_table(ctx):
    cfg = ONE_STEP[ctx.scale]
    return ctx.shared(("ifca-one-step", ctx.scale), lambda: _one_step_table(
        ctx, cfg["m"], cfg["trials"], 0.25, key=(1,)))


def _floor_tables(ctx):
    cfg = ONE_STEP[ctx.scale]
    return ctx.shared(("ifca-floor", ctx.scale), lambda: pd.concat(
        [_one_step_table(ctx, m, cfg["floor_trials"], 0.0, key=(2, m)) for m in cfg["floor_m"]],
        ignore_index=True))


# -- judgments -------------------------------------------------------------------------------
def _worst_per_trial(table, step, column):
    """Per trial, the largest over clusters of ``column`` at one step size."""
    rows = table[np.isclose(table["step_size"], step)]
    return rows.groupby("trial")[column].max().to_numpy()


def _contraction_judgment(table, step, factor, level):
    """Is ``||theta+ - theta*|| <= factor ||theta - theta*||`` for all clusters, except with
    probability <= ``level``? Clopper-Pearson on the per-trial violation frequency."""
    rows = table[np.isclose(table["step_size"], step)].assign(ratio=lambda t: t["after"] / t["before"])
    worst = rows.groupby("trial")["ratio"].max().to_numpy()
    violations, trials = int(np.sum(worst > factor)), worst.size
    low, high = clopper_pearson(violations, trials, CONFIDENCE)
    outcome = "holds" if high < level else "violated" if low > level else "inconclusive"
    evidence = {
        "claimed_factor": factor, "violation_level": level, "violations": violations, "trials": trials,
        "violation_rate": violations / trials, "violation_rate_low": float(low), "violation_rate_high": float(high),
        "measured_factor_median": float(np.median(worst)), "measured_factor_q95": float(np.quantile(worst, 0.95)),
        "measured_factor_max": float(worst.max()),
    }
    return outcome, evidence, worst


def _floor_fit(ctx, floor, step, predicted_of_m):
    ms = sorted(floor["m"].unique())
    errors = [_worst_per_trial(floor[floor["m"] == m], step, "after") for m in ms]
    fit = fit_rate([predicted_of_m(m) for m in ms], errors, scaling=[m * floor["n_prime"].iloc[0] for m in ms],
                   quantile=0.9, confidence=CONFIDENCE, seed=ctx.seed)
    return ms, fit


def _rate_plot(ms, n_prime, fit, title, ylabel):
    x = [m * n_prime for m in ms]
    median_constant = float(np.median(fit.implied_constant))
    return {
        "kind": "rate", "title": title, "xlabel": "m n'", "ylabel": ylabel, "logx": True, "logy": True, "x": x,
        "series": [
            {"label": f"measured {int(fit.quantile * 100)}% quantile", "y": fit.measured.tolist(), "style": "points"},
            {"label": f"predicted term x median implied constant ({median_constant:.3g})",
             "y": (fit.predicted * median_constant).tolist(), "style": "dashed"},
        ],
    }


def _assumption_rows(sigma, d, m, n_prime, separation, init_distance=None):
    """Assumptions 1-2 at the worst case of the problems used: the smallest Delta (every
    inequality of Assumption 2 is hardest there; ``max ||theta*_j|| = 1`` for all)."""
    rows = bounds.assumption2(sigma=sigma, p=P, d=d, m=m, n_prime=n_prime, separation=float(separation),
                              max_center_norm=RADIUS)
    if init_distance is not None:
        rows = bounds.assumption1(init_distance, float(separation)) + rows
    return [row.as_dict() for row in rows]


def check_t1(ctx: VerifyContext) -> Verdict:
    """IFCA.T1: contraction <= 1/2 from Delta/4 w.p. >= 1 - 1/poly(m) (judged at level 1/m),
    and the floor scales as (sigma/p) sqrt(d/(m n')) (judged as a rate)."""
    cfg = ONE_STEP[ctx.scale]
    table, floor = _contraction_table(ctx), _floor_tables(ctx)
    ctx.save_table("ifca_one_step", table)
    ctx.save_table("ifca_one_step_floor", floor)
    step = C1_STEP / P
    outcome, evidence, _ = _contraction_judgment(table, step, 0.5, 1.0 / cfg["m"])
    for c in (0.25, 0.75):
        evidence[f"violations_c1_{c}"] = _contraction_judgment(table, c / P, 0.5, 1.0 / cfg["m"])[1]["violations"]
    ms, fit = _floor_fit(ctx, floor, step, lambda m: bounds.statistical_term(cfg["sigma"], P, cfg["d"], m, cfg["n_prime"]))
    min_sep = float(table["separation"].min())
    stat = bounds.statistical_term(cfg["sigma"], P, cfg["d"], cfg["m"], cfg["n_prime"])
    evidence.update(fit.as_evidence())
    evidence.update({
        "c1": C1_STEP, "step_size": step, "m": cfg["m"], "n_prime": cfg["n_prime"], "d": cfg["d"],
        "sigma": cfg["sigma"], "min_separation": min_sep,
        "floor_term_over_half_distance": stat / (0.5 * 0.25 * min_sep),
        "exponential_term": float(bounds.exponential_term(min_sep, cfg["sigma"], cfg["n_prime"])),
    })
    if outcome == "violated":
        verdict = "violated"
    elif not fit.consistent:
        verdict = "rate-inconsistent"
    else:
        verdict = outcome
    summary = (
        f"one step from Delta/4 with gamma = {C1_STEP}/p: contraction > 1/2 in {evidence['violations']}/"
        f"{evidence['trials']} trials (95% CI of the rate [{evidence['violation_rate_low']:.4f}, "
        f"{evidence['violation_rate_high']:.4f}] vs level 1/m = {1 / cfg['m']:.4f}); median factor "
        f"{evidence['measured_factor_median']:.3f}; floor slope {fit.slope:.2f} "
        f"[{fit.slope_interval[0]:.2f}, {fit.slope_interval[1]:.2f}] in (sigma/p)sqrt(d/(mn')) over "
        f"{fit.decades:.2f} decades of m n'"
    )
    return Verdict(
        "IFCA.T1", verdict, evidence, ctx.seed, int(evidence["trials"]), CONFIDENCE, summary,
        assumptions=_assumption_rows(cfg["sigma"], cfg["d"], cfg["m"], cfg["n_prime"], min_sep, 0.25 * min_sep),
        plot=[_rate_plot(ms, cfg["n_prime"], fit, "IFCA.T1 floor: error after one step from theta*",
                         "max_j ||theta_j^+ - theta*_j||")],
        details={"regime": "contraction measured where the predicted floor (c2 = 1) is "
                           f"{evidence['floor_term_over_half_distance']:.2%} of (1/2) Delta/4",
                 "step": "gamma = c1/p, c1 = 1/2 fixed before measuring (c1 = 1/4, 3/4 reported)",
                 "probability": "1 - 1/poly(m) judged at level 1/m (poly(m) >= m)"},
    )


def check_t2c(ctx: VerifyContext) -> Verdict:
    """IFCA.T2c: per-iteration contraction 1 - p lambda/(8L) with gamma = 1/L, plus a floor
    O~(1/sqrt(mn') + 1/n' + 1/(n' sqrt(m)))."""
    cfg = ONE_STEP[ctx.scale]
    lam = L = 2.0  # Assumption 3 for f = (y - <x,theta>)^2: Hessian 2I
    factor = bounds.theorem2_contraction(P, lam, L)
    table, floor = _contraction_table(ctx), _floor_tables(ctx)
    step = 1.0 / L
    outcome, evidence, worst = _contraction_judgment(table, step, factor, 1.0 / cfg["m"])
    shape = lambda m: 1 / math.sqrt(m * cfg["n_prime"]) + 1 / cfg["n_prime"] + 1 / (cfg["n_prime"] * math.sqrt(m))
    ms, fit = _floor_fit(ctx, floor, step, shape)
    evidence.update(fit.as_evidence())
    evidence.update({"looseness": factor / evidence["measured_factor_q95"], "step_size": step,
                     "strong_convexity": lam, "smoothness": L, "p": P})
    verdict = "violated" if outcome == "violated" else "rate-inconsistent" if not fit.consistent else outcome
    min_sep = float(table["separation"].min())
    # eta^2 on the ball of Assumption 6 (radius Delta/4) under every cluster's data: for two
    # centers the farthest reach is Delta + Delta/4 (MixedLinearRegression.variance_bounds)
    eta2 = float(loss_variance(1.25 * min_sep, cfg["sigma"]))
    assumptions = bounds.assumption6(init_distance=0.25 * min_sep, p=P, m=cfg["m"], k=K, n_prime=cfg["n_prime"],
                                     separation=min_sep, strong_convexity=lam, smoothness=L, loss_variance=eta2,
                                     max_center_norm=RADIUS)
    summary = (
        f"claimed factor 1 - p lambda/(8L) = {factor:.4f}; measured 95% quantile {evidence['measured_factor_q95']:.3f} "
        f"(bound {evidence['looseness']:.1f}x loose), exceeded in {evidence['violations']}/{evidence['trials']} trials; "
        f"floor slope {fit.slope:.2f} [{fit.slope_interval[0]:.2f}, {fit.slope_interval[1]:.2f}] over {fit.decades:.2f} "
        "decades of m n'"
    )
    return Verdict(
        "IFCA.T2c", verdict, evidence, ctx.seed, int(evidence["trials"]), CONFIDENCE, summary,
        assumptions=[a.as_dict() for a in assumptions],
        plot=[_rate_plot(ms, cfg["n_prime"], fit, "IFCA.T2c floor: error after one step from theta*",
                         "max_j ||theta_j^+ - theta*_j||")],
        details={"problem": "mixed linear regression: lambda = L = 2, eta^2 and v^2 as sups over the ball of "
                            "radius Delta/4 around the centers, all data distributions"},
    )


def _convergence_table(ctx) -> pd.DataFrame:
    cfg = CONVERGENCE[ctx.scale]
    frames = []
    for m in cfg["m"]:
        seeds = spawn_seeds(ctx.seed, cfg["trials"], 3, m)
        # T from Corollary 1 with c5 = c6 = 1 at the median separation of these problems
        separation = float(np.median(_separations(cfg["d"], seeds)))
        result = bounds.corollary1(sigma=cfg["sigma"], p=P, d=cfg["d"], m=m, n_prime=cfg["n_prime"],
                                   separation=separation, c1=C1_STEP)
        T = max(1, math.ceil(result.derived["iterations"]))
        for problem, trace in _theory_runs(ctx, m=m, n_prime=cfg["n_prime"], d=cfg["d"], sigma=cfg["sigma"],
                                           trials=cfg["trials"], iterations=T, step_sizes=C1_STEP / P,
                                           init_ratio=0.25, key=(3, m)):
            final = trace.labelled_distance[:, 0, -1]  # (B, k)
            frames.append(pd.DataFrame({
                "m": m, "n_prime": cfg["n_prime"], "d": cfg["d"], "sigma": cfg["sigma"], "iterations": T,
                "problem_seed": np.array(problem.seeds, dtype=np.uint64), "separation": problem.separation,
                "initial_error": trace.labelled_distance[:, 0, 0].max(axis=-1),
                "final_error": final.max(axis=-1),
                "predicted_error": result.value,
                "misassigned_last": trace.misassigned_labelled[:, 0, -1],
            }))
    return pd.concat(frames, ignore_index=True)


def _separations(d, seeds):
    centers = draw_ground_truth(K, d, TRUTH, RADIUS, seeds)
    return np.linalg.norm(centers[:, 0] - centers[:, 1], axis=-1)


def check_c1(ctx: VerifyContext) -> Verdict:
    """IFCA.C1: after T = log(Delta/(4 eps)) iterations the error is <= eps ~ (sigma/p) sqrt(d/(m n'))
    (+ an exp(-n') term): judged as a rate over >= 1.5 decades of m n'."""
    cfg = CONVERGENCE[ctx.scale]
    table = _convergence_table(ctx)
    ctx.save_table("ifca_convergence", table)
    ms = sorted(table["m"].unique())
    predicted = [bounds.statistical_term(cfg["sigma"], P, cfg["d"], m, cfg["n_prime"]) for m in ms]
    errors = [table.loc[table["m"] == m, "final_error"].to_numpy() for m in ms]
    fit = fit_rate(predicted, errors, scaling=[m * cfg["n_prime"] for m in ms], quantile=0.9,
                   confidence=CONFIDENCE, seed=ctx.seed)
    min_sep = float(table["separation"].min())
    exp_term = float(bounds.exponential_term(min_sep, cfg["sigma"], cfg["n_prime"]))
    evidence = fit.as_evidence()
    evidence.update({
        "trials_per_point": cfg["trials"], "points": len(ms), "n_prime": cfg["n_prime"], "d": cfg["d"],
        "sigma": cfg["sigma"], "iterations_min": int(table["iterations"].min()),
        "iterations_max": int(table["iterations"].max()),
        "exponential_term_over_statistical_max": exp_term / min(predicted),
        "final_over_initial_median": float(np.median(table["final_error"] / table["initial_error"])),
    })
    verdict = "rate-consistent" if fit.consistent else "rate-inconsistent"
    summary = (
        f"90% quantile of the final error vs (sigma/p)sqrt(d/(m n')) over {fit.decades:.2f} decades of m n': "
        f"slope {fit.slope:.2f} [{fit.slope_interval[0]:.2f}, {fit.slope_interval[1]:.2f}], implied constant "
        f"{fit.implied_constant[0]:.3g} -> {fit.implied_constant[-1]:.3g}; exp(-n') term negligible "
        f"(<= {evidence['exponential_term_over_statistical_max']:.1e} of the statistical term)"
    )
    return Verdict(
        "IFCA.C1", verdict, evidence, ctx.seed, int(cfg["trials"] * len(ms)), CONFIDENCE, summary,
        assumptions=_assumption_rows(cfg["sigma"], cfg["d"], min(ms), cfg["n_prime"], min_sep, 0.25 * min_sep),
        plot=[_rate_plot(ms, cfg["n_prime"], fit, "IFCA.C1: final error after T = log(Delta/(4 eps)) iterations",
                         "max_j ||theta_j^(T) - theta*_j||")],
        details={"iterations": "T = ceil(ln(Delta/(4 eps))) with eps from c5 = c6 = 1 (natural log, as printed)",
                 "step": f"gamma = c1/p with c1 = {C1_STEP}"},
    )


def check_a1(ctx: VerifyContext) -> Verdict:
    """IFCA.A1: the initial distances the T1 check measured, against Delta/4 per problem.

    T1's runs start at exactly Delta/4 (``init_distance_ratio=0.25``), A1's boundary, so the
    measured distance equals Delta/4 up to float64 rounding (a slack of either sign, about
    1e-16): the row holds within the ``tolerance`` it states (:class:`~cflbounds.bounds.Inequality`)."""
    table = _contraction_table(ctx)
    first = table[np.isclose(table["step_size"], C1_STEP / P)]
    worst = first.assign(ratio=first["before"] / (first["separation"] / 4)).sort_values("ratio").iloc[-1]
    rows = labelled([row.as_dict() for row in bounds.assumption1(float(worst["before"]), float(worst["separation"]))],
                     f"T1 contraction, largest of {len(first)} measured initial distances relative to Delta/4")
    return assumption_verdict(ctx, "IFCA.A1", rows, 1, "measured ||theta_j^(0) - theta*_j|| of every run; they start "
                              "at Delta/4 exactly, so the row is an equality up to rounding and holds within its "
                              "stated tolerance")


def check_a2(ctx: VerifyContext) -> Verdict:
    """IFCA.A2: Assumption 2's inequalities (with ``>~`` read as ``>= 1 x``) on every problem
    the T1 and C1 checks use, at the worst case (smallest separation) of each configuration."""
    rows = []
    one, conv = ONE_STEP[ctx.scale], CONVERGENCE[ctx.scale]
    configs = [("T1 contraction", one, one["m"], one["trials"], (1,))]
    configs += [(f"T1 floor m={m}", one, m, one["floor_trials"], (2, m)) for m in one["floor_m"]]
    configs += [(f"C1 m={m}", conv, m, conv["trials"], (3, m)) for m in conv["m"]]
    for label, cfg, m, trials, key in configs:
        separation = float(_separations(cfg["d"], spawn_seeds(ctx.seed, trials, *key)).min())
        rows += labelled(_assumption_rows(cfg["sigma"], cfg["d"], m, cfg["n_prime"], separation), label)
    return assumption_verdict(ctx, "IFCA.A2", rows, len(configs),
                               "x >~ y read as x >= C y with C = 1 (a parameter of cflbounds.bounds.ifca.assumption2); "
                               "the problems are exact, not estimated")


def check_a36(ctx: VerifyContext) -> Verdict:
    """IFCA.A3-6 on the problems of the T2c check: lambda = L = 2 exactly (A3); eta^2, v^2
    as their sups over the ball of radius Delta/4 under every cluster's data (A4-5, closed
    forms); Assumption 6's inequalities with their constants 1."""
    one = ONE_STEP[ctx.scale]
    rows = []
    configs = [("T2c contraction", one["m"], one["trials"], (1,))]
    configs += [(f"T2c floor m={m}", m, one["floor_trials"], (2, m)) for m in one["floor_m"]]
    for label, m, trials, key in configs:
        separation = float(_separations(one["d"], spawn_seeds(ctx.seed, trials, *key)).min())
        eta2 = float(loss_variance(1.25 * separation, one["sigma"]))
        rows += labelled([r.as_dict() for r in bounds.assumption6(
            init_distance=0.25 * separation, p=P, m=m, k=K, n_prime=one["n_prime"], separation=separation,
            strong_convexity=2.0, smoothness=2.0, loss_variance=eta2, max_center_norm=RADIUS)], label)
    return assumption_verdict(ctx, "IFCA.A3-6", rows, len(configs),
                               "A3-A5 hold exactly on a ball (lambda = L = 2; eta^2, v^2 finite sups); A6's "
                               ">~ and O~ read with constant 1")
