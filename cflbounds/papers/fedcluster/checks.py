"""How FedCluster's claims are measured and judged (claims FC.* of CLAIMS.md).

Theorem 1 is fully explicit, so it is checked at single points: every trial (an
independent problem of a family, see :mod:`cflbounds.papers.fedcluster.runs`) gets its
own exact bound ``2C/sqrt(TME)`` and conditions, and the statistic is the per-trial ratio
measured/bound, whose mean is <= 1 under the theorem (Student-t interval over trials).
Which constants: ``C`` uses ``H_cluster`` as the exact sup over the stated ball (it holds
every iterate, so it is at least the visited max and the bound is the more lenient);
the conditions use ``G^2`` as Assumption 2.3 defines it, the max over every iterate
(local models and their averages), and are also reported with the ball's ``G^2``.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from cflbounds.bounds import fedcluster as fc_bounds
from cflbounds.claims import Inequality, Verdict, VerifyContext
from cflbounds.claims.assumptions import margin_plot
from cflbounds.claims.stats import mean_interval
from .runs import CONFIDENCE, FAMILIES, mean_with_interval, run_set


# Theorem 1 at single points: (family, partition, M, E, horizons T). The ``unequal`` family
# has cluster weights q = (1/4, 3/4), which Theorem 1 allows but its proof does not cover.
T1_RUNS = {
    "smoke": {"trials": 8, "runs": [("quadratic", "random", M, 5, (16, 64)) for M in (1, 2, 4)]
              + [("nonconvex", "random", 4, 5, (16, 64)), ("unequal", "planted", 2, 1, (100, 800))]
              + [("regression", "random", M, 5, (16, 64)) for M in (1, 4)]},
    "default": {"trials": 32, "runs": [("quadratic", "random", M, 5, (16, 32, 64, 128, 256)) for M in (1, 2, 4, 8)]
                + [("nonconvex", "random", M, 5, (16, 64, 256)) for M in (1, 4)]
                + [("unequal", "planted", 2, 1, (100, 400, 1600))]
                + [("regression", "random", M, 5, (16, 64, 256)) for M in (1, 2, 4, 8)]},
    "paper": {"trials": 100, "runs": [("quadratic", "random", M, 5, (16, 64, 256, 1024)) for M in (1, 2, 4, 8)]
              + [("nonconvex", "random", M, 5, (16, 64, 256, 1024)) for M in (1, 4, 8)]
              + [("unequal", "planted", 2, 1, (100, 400, 1600, 6400))]
              + [("regression", "random", M, 5, (16, 64, 256, 1024)) for M in (1, 2, 4, 8)]},
}


# -- experiments (shared by the checks through the context's cache) ------------------------------
def _t1_sets(ctx):
    config = T1_RUNS[ctx.scale]
    return [ctx.checkpoint(("fc", "t1", run), lambda run=run: run_set(ctx, *run, config["trials"]))
            for run in config["runs"]]


# -- FC.T1 ----------------------------------------------------------------------------------------
def _theorem1_rows(run) -> list[dict]:
    """One row per horizon: the per-trial bounds, ratios and conditions of a run set."""
    c, rows = run.constants, []
    for h, T in enumerate(run.horizons):
        bounds, ratios, cond_visited, cond_ball, vacuous, largest_me = [], [], [], [], [], []
        for b in range(run.trials):
            args = dict(L=float(c["L"][b, h]), E=run.E, M=run.M, T=int(T), initial_gap=float(c["gap"][b, h]),
                        H_cluster=float(c["H_cluster_ball"][b, h]), variance=float(c["variance"][b, h]))
            result = fc_bounds.theorem1(**args, G=math.sqrt(c["G2_visited"][b, h]))
            ball = fc_bounds.theorem1(**args, G=math.sqrt(c["G2_ball"][b, h]))
            bounds.append(result.value)
            ratios.append(run.measured[b, h] / result.value)
            cond_visited.append(result.assumptions_hold)
            cond_ball.append(ball.assumptions_hold)
            vacuous.append(result.derived["vacuous"])
            largest_me.append(result.derived["largest_ME"])
        ratio, ratio_low, ratio_high = mean_with_interval(ratios)
        measured, measured_low, measured_high = mean_with_interval(run.measured[:, h])
        rows.append({
            "family": run.family, "partition": run.kind, "M": run.M, "E": run.E, "T": int(T), "trials": run.trials,
            "q_max": float(run.cluster_weights.max()), "q_min": float(run.cluster_weights.min()),
            "measured": measured, "measured_low": measured_low, "measured_high": measured_high,
            "bound": float(np.mean(bounds)), "ratio": ratio, "ratio_low": ratio_low, "ratio_high": ratio_high,
            "ratio_max_trial": float(np.max(ratios)),
            "conditions_hold": float(np.mean(cond_visited)), "conditions_hold_ball_G": float(np.mean(cond_ball)),
            "ME": run.M * run.E, "largest_ME": float(np.min(largest_me)), "vacuous": float(np.mean(vacuous)),
            "C": float(np.mean(2 * c["gap"][:, h] + 4 * c["L"][:, h] * (c["H_cluster_ball"][:, h]
                                                                        + c["variance"][:, h]))),
            **{f"{name}": float(np.mean(c[name][:, h])) for name in
               ("L", "gap", "variance", "H_cluster_ball", "H_cluster_visited", "H_device_ball", "G2_visited", "G2_ball",
                "radius")},
        })
    return rows


def _t1_judgment(table: pd.DataFrame):
    """``violated`` if a point where every trial meets the conditions has its mean-ratio
    interval above 1; ``inconclusive`` if one straddles 1; else ``holds`` (``vacuous``
    when at every such point the bound is not below the trivial G^2)."""
    applicable = table[table["conditions_hold"] == 1.0]
    if applicable.empty:
        return "inconclusive", applicable
    if (applicable["ratio_low"] > 1).any():
        return "violated", applicable
    if (applicable["ratio_high"] > 1).any():
        return "inconclusive", applicable
    return ("vacuous" if (applicable["vacuous"] == 1.0).all() else "holds"), applicable


def check_t1(ctx: VerifyContext) -> Verdict:
    """FC.T1: (1/T) sum E||grad f(W_jM)||^2 against 2C/sqrt(TME) at eta = (TME)^(-1/2), per trial."""
    sets = _t1_sets(ctx)
    table = pd.DataFrame([row for run in sets for row in _theorem1_rows(run)])
    ctx.save_table("fc_t1", table)
    verdict, applicable = _t1_judgment(table)
    equal = table[(table["q_max"] - table["q_min"]) < 1e-12]
    unequal = table[(table["q_max"] - table["q_min"]) >= 1e-12]
    worst = (applicable if not applicable.empty else table).sort_values("ratio").iloc[-1]
    evidence = {
        "points": len(table), "points_conditions_hold": len(applicable),
        "points_violated": int((applicable["ratio_low"] > 1).sum()),
        "points_vacuous": int((applicable["vacuous"] == 1.0).sum()),
        "trials_per_point": int(table["trials"].iloc[0]),
        "measured_over_bound_max": float(worst["ratio"]), "measured_over_bound_max_low": float(worst["ratio_low"]),
        "measured_over_bound_max_high": float(worst["ratio_high"]),
        "worst_T": int(worst["T"]), "worst_M": int(worst["M"]), "worst_E": int(worst["E"]),
        "worst_measured": float(worst["measured"]), "worst_bound": float(worst["bound"]), "worst_C": float(worst["C"]),
        "worst_q_max": float(worst["q_max"]), "worst_H_cluster_ball": float(worst["H_cluster_ball"]),
        "worst_H_cluster_visited": float(worst["H_cluster_visited"]), "worst_H_device_ball": float(worst["H_device_ball"]),
        "worst_G2_visited": float(worst["G2_visited"]), "worst_conditions_hold": float(worst["conditions_hold"]),
        "worst_G2_ball": float(worst["G2_ball"]), "worst_largest_ME": float(worst["largest_ME"]),
        "equal_weights_ratio_max": float(equal["ratio"].max()) if len(equal) else math.nan,
        "equal_weights_ratio_min": float(equal["ratio"].min()) if len(equal) else math.nan,
        "equal_weights_conditions_hold": float(equal["conditions_hold"].mean()) if len(equal) else math.nan,
        "unequal_weights_ratio_max": float(unequal["ratio"].max()) if len(unequal) else math.nan,
        "conditions_hold_with_ball_G": float((table["conditions_hold_ball_G"] == 1.0).mean()),
        **{f"{family}_{name}": value for family, rows in table.groupby("family", sort=False) for name, value in (
            ("points_conditions_hold", int((rows["conditions_hold"] == 1.0).sum())),
            ("ratio_max", float(rows["ratio"].max())), ("ratio_high_max", float(rows["ratio_high"].max())))},
    }
    summary = (
        f"(1/T) sum ||grad f(W_jM)||^2 at eta = (TME)^-1/2 against 2C/sqrt(TME) with exact constants: "
        f"{evidence['points_conditions_hold']}/{len(table)} (family, M, T) points meet both conditions; "
        f"measured/bound up to {worst['ratio']:.3g} [{worst['ratio_low']:.3g}, {worst['ratio_high']:.3g}] "
        f"({worst['family']}, q_max = {worst['q_max']:.2f}, M = {worst['M']}, T = {worst['T']}: measured "
        f"{worst['measured']:.3g} vs bound {worst['bound']:.3g}); equal cluster "
        f"weights: measured/bound in [{evidence['equal_weights_ratio_min']:.3g}, "
        f"{evidence['equal_weights_ratio_max']:.3g}], bound not below the trivial G^2 at "
        f"{evidence['points_vacuous']} points; by family (points meeting the conditions, largest measured/bound): "
        + ", ".join(f"{family} {evidence[f'{family}_points_conditions_hold']}/{len(rows)} "
                    f"{evidence[f'{family}_ratio_max']:.3g}" for family, rows in table.groupby("family", sort=False))
        + ("; with unequal q_K the uniformly reshuffled cycle settles at the minimiser of (1/M) sum_K f_SK, not "
           "of f, so ||grad f||^2 stays put while the bound falls (the proof takes cluster K with probability q_K)"
           if evidence["unequal_weights_ratio_max"] > 1 else "")
    )
    details = {
        "constants": "C with H_cluster = exact sup over the stated ball (center w*, or W_0 for the unequal family; "
                     "radius = the run's farthest iterate), and for the regression s_k^2 too (its variance grows with "
                     "||w||); conditions with G^2 = max over every iterate of Assumption 2.3 (also reported with the "
                     "ball's G^2)",
        "trials": "each trial an independent problem of its family; per-trial ratio measured/bound, mean with a "
                  f"{CONFIDENCE:.0%} Student-t interval",
        "unequal weights": "with q = (1/4, 3/4) reshuffled cycling settles at the minimiser of (1/M) sum_K f_SK, "
                           "not of f = sum_K q_K f_SK (W_0 is put there: Theorem 1 allows any W_0, and from W_0 = w* the "
                           "iterates drift to the same point), so ||grad f|| stays away from 0 while "
                           "2C/sqrt(TME) falls: "
                           "Lemma 1 and step (iv) of the proof take cluster K with probability q_K, but a uniform "
                           "reshuffle gives 1/M",
        "vacuous": "the bound is compared with G^2, which eq. (1) already gives for every ||grad f(W_jM)||^2",
    }
    return Verdict("FC.T1", verdict, evidence, ctx.seed, int(table["trials"].sum()), CONFIDENCE, summary,
                   assumptions=_condition_rows(worst), plot=_t1_plots(sets, table),
                   details=details)


def _condition_rows(row) -> list[dict]:
    """Theorem 1's conditions at the reported point (mean constants over its trials)."""
    rows = fc_bounds.theorem1_conditions(L=row["L"], E=int(row["E"]), M=int(row["M"]), T=int(row["T"]), C=row["C"],
                                         G=math.sqrt(row["G2_visited"]))
    return [{**r.as_dict(), "source": f"{r.source} ({row['family']}, M={row['M']}, T={row['T']}, mean constants)"}
            for r in rows]


def _t1_plots(sets, table):
    """Two figures per family, the families with a violated point first (what decided the
    verdict): measured and bound against T (:func:`_horizon_plot`), and the running average
    over the rounds of the longest run (:func:`_round_plot`)."""
    violated = (table["conditions_hold"] == 1.0) & (table["ratio_low"] > 1)
    families = sorted(dict.fromkeys(table["family"]), key=lambda f: not violated[table["family"] == f].any())
    return [plot for family in families for plot in (_horizon_plot(table[table["family"] == family], violated, family),
                                                      _round_plot(sets, table, family))]


def _horizon_plot(rows, violated, family):
    """Per M (one colour each): the measured (1/T) sum ||grad f(W_jM)||^2 with its interval
    over trials and the bound 2C/sqrt(TME), against T; violated points (conditions met,
    interval above the bound) ringed."""
    series = []
    for M in sorted(rows["M"].unique()):
        at = rows[rows["M"] == M].sort_values("T")
        x = at["T"].tolist()
        series.append({"label": f"M = {M}: measured", "group": f"M = {M}", "x": x, "y": at["measured"].tolist(),
                       "low": at["measured_low"].tolist(), "high": at["measured_high"].tolist(), "style": "line"})
        series.append({"label": f"M = {M}: bound 2C/sqrt(TME)", "group": f"M = {M}", "x": x,
                       "y": at["bound"].tolist(), "style": "dashed"})
    ringed = rows[violated[rows.index]]
    if len(ringed):
        series.append({"label": f"violated: conditions hold, interval above the bound ({len(ringed)})",
                       "x": ringed["T"].tolist(), "y": ringed["measured"].tolist(), "style": "ring",
                       "color": "#d62728"})
    return {"kind": "line", "title": f"FC.T1 ({family}): (1/T) sum ||grad f(W_jM)||^2 at eta = (TME)^-1/2",
            "xlabel": "rounds T", "ylabel": "mean squared gradient norm", "logx": True, "logy": True,
            "x": sorted(rows["T"].unique().tolist()), "series": series}


def _round_plot(sets, table, family):
    """For each M of ``family``: the running average (1/t) sum_{j<t} ||grad f(W_jM)||^2 over
    the rounds t of the run at the theorem's step size for its longest horizon T (mean over
    trials, Student-t band), with that T's bound 2C/sqrt(TME) (mean over trials) as a line."""
    series, horizons = [], set()
    for run in (run for run in sets if run.family == family):
        T = int(run.horizons.max())
        horizons.add(T)
        running = np.cumsum(run.curve[:, :T], axis=1) / np.arange(1, T + 1)
        mean, low, high = mean_interval(running, CONFIDENCE, axis=0)
        bound = table.loc[(table["family"] == family) & (table["M"] == run.M) & (table["partition"] == run.kind)
                          & (table["T"] == T), "bound"].iloc[0]
        rounds = list(range(1, T + 1))
        series += [{"label": f"M = {run.M}: (1/t) sum_(j<t) ||grad f(W_jM)||^2", "group": f"M = {run.M}", "x": rounds,
                    "y": mean.tolist(), "low": low.tolist(), "high": high.tolist(), "style": "line"},
                   {"label": f"M = {run.M}: bound 2C/sqrt(TME) at T = {T}", "group": f"M = {run.M}", "x": [1, T],
                    "y": [float(bound)] * 2, "style": "dashed"}]
    horizon = "/".join(map(str, sorted(horizons)))
    return {"kind": "line", "title": f"FC.T1 ({family}): running average of ||grad f(W_jM)||^2 over rounds t of the "
                                     f"run with eta = (TME)^-1/2, T = {horizon}; the bound applies at t = T "
                                     f"({CONFIDENCE:.0%} band over trials)",
            "xlabel": "round t", "ylabel": "(1/t) sum_(j<t) ||grad f(W_jM)||^2", "logx": True, "logy": True,
            "x": [], "series": series}


# -- FC.H -----------------------------------------------------------------------------------------
def _heterogeneity_rows(sets) -> pd.DataFrame:
    rows = []
    for run in sets:
        c = run.constants
        for h, T in enumerate(run.horizons):
            for measure in ("ball", "visited"):
                cluster, device = c[f"H_cluster_{measure}"][:, h], c[f"H_device_{measure}"][:, h]
                with np.errstate(divide="ignore", invalid="ignore"):
                    ratio = np.where(device > 0, cluster / device, 0.0)
                rows.append({"family": run.family, "partition": run.kind, "M": run.M, "T": int(T), "measure": measure,
                             "trivial": run.M in (1, run.membership.size), "pairs": run.trials,
                             "H_cluster": float(cluster.mean()), "H_device": float(device.mean()),
                             "ratio_max": float(ratio.max()), "ratio_mean": float(ratio.mean()),
                             "exceed": int(np.sum(cluster > device * (1 + 1e-9) + 1e-15))})
    return pd.DataFrame(rows)


def check_h(ctx: VerifyContext) -> Verdict:
    """FC.H: H_cluster <= H_device for every problem, partition and run of the FC checks,
    both as sups over the stated ball and as maxima over the visited W_jM."""
    from .rates import TRADEOFF_KINDS, tradeoff_sets

    sets = _t1_sets(ctx) + [run for runs in tradeoff_sets(ctx).values() for run in runs]
    table = _heterogeneity_rows(sets)
    ctx.save_table("fc_heterogeneity", table)
    evidence = _heterogeneity_evidence(table)
    by_kind = {key[len("ratio_mean_"):]: value for key, value in evidence.items() if key.startswith("ratio_mean_")}
    rate = table[(table["measure"] == "ball") & (table["family"] == "tradeoff")]  # what the figure draws
    drawn = ", ".join(f"{kind} {value:.3g}" for kind, value in rate[~rate["trivial"]].groupby("partition")["ratio_mean"]
                      .mean().items())
    others = ", ".join(f"{kind} {value:.3g}" for kind, value in by_kind.items() if kind not in TRADEOFF_KINDS)
    summary = (f"H_cluster <= H_device in {evidence['comparisons'] - evidence['exceed']}/{evidence['comparisons']} "
               f"comparisons with 1 < M < n (ball sup and visited max; the {evidence['trivial_comparisons']} with "
               f"M = 1 or M = n, where H_cluster = 0 or H_device, apart: {evidence['trivial_exceed']} exceed); "
               f"largest H_cluster/H_device {evidence['ratio_max_ball']:.3g} (ball); on average {drawn} on the "
               f"trade-off problems (the figure's partitions)"
               + (f", {others} on FC.T1's problems (not drawn)" if others else ""))
    # the verdict counts every trial's exceedance: the figure shows the largest ratio, as ratio_max_ball does
    plot = {"kind": "line", "title": "FC.H: largest H_cluster / H_device over the trials (sup over the stated ball) "
                                     "by partition of the trade-off problems",
            "caption": "The trade-off problems' partitions; FC.T1's problems (the planted partition among them) are "
                       "counted in the summary and the evidence, not drawn.",
            "xlabel": "clusters M", "ylabel": "max H_cluster / H_device", "logx": True,
            "x": sorted(rate["M"].unique().tolist()),
            "series": [{"label": kind, "x": rows["M"].tolist(), "y": rows["ratio_max"].tolist()}
                       for kind, rows in ((k, rate[rate["partition"] == k].groupby("M", as_index=False)["ratio_max"]
                                           .max()) for k in TRADEOFF_KINDS) if len(rows)],
            "reference": [{"y": 1.0, "label": "H_cluster = H_device; above: violated"}]}
    exceed = evidence["exceed"] + evidence["trivial_exceed"]
    return Verdict("FC.H", "holds" if exceed == 0 else "violated", evidence, ctx.seed, evidence["comparisons"], 1.0,
                   summary, plot=[plot],
                   details={"measures": "ball: exact sups over the ball holding the run's iterates (trust-region "
                                        "dual, certified); visited: max over the W_jM of the run",
                            "tolerance": "H_cluster > H_device (1 + 1e-9) counts as an exceedance"})


def _heterogeneity_evidence(table: pd.DataFrame) -> dict:
    """Counts and extremes over the non-trivial partitions (1 < M < n); the trivial ones
    (M = 1: H_cluster = 0; M = n: H_cluster = H_device) are counted apart. At the largest
    H_device, the largest H_cluster of any partition is reported."""
    trivial, table = table[table["trivial"]], table[~table["trivial"]]
    ball = table[table["measure"] == "ball"]
    at_largest = table[table["H_device"] == table["H_device"].max()]  # every partition of that problem
    largest = at_largest.loc[at_largest["H_cluster"].idxmax()]  # the closest comparison there
    return {"comparisons": int(table["pairs"].sum()), "exceed": int(table["exceed"].sum()),
            "trivial_comparisons": int(trivial["pairs"].sum()), "trivial_exceed": int(trivial["exceed"].sum()),
            "H_cluster_at_largest_H_device": float(largest["H_cluster"]), "H_device_largest": float(largest["H_device"]),
            "ratio_max_ball": float(ball["ratio_max"].max()),
            "ratio_max_visited": float(table.loc[table["measure"] == "visited", "ratio_max"].max()),
            **{f"ratio_mean_{kind}": float(value)
               for kind, value in ball.groupby("partition")["ratio_mean"].mean().items()},
            **{f"comparisons_{family}": int(pairs)
               for family, pairs in table.groupby("family", sort=False)["pairs"].sum().items()}}


# -- FC.A2 ----------------------------------------------------------------------------------------
def check_a2(ctx: VerifyContext) -> Verdict:
    """FC.A2 on the problems of the FC.T1 check: the exact constants, with both sides."""
    sets, rows = _t1_sets(ctx), []
    for run in sets:
        c = run.constants
        source = f"FedCluster Assumption 2 ({run.family}, M={run.M})"
        worst = np.unravel_index(np.argmax(c["G2_visited"] / c["G2_ball"]), c["G2_ball"].shape)
        spread = np.unravel_index(np.argmax(c["s2_visited"] - c["s2_ball"]), c["s2_ball"].shape)
        hessian = _hessian_sup(run)  # (B,)
        smooth = int(np.argmax(hessian - c["L"][:, 0]))
        rows += [Inequality("sup_{w,xi} ||Hess f(w; xi)|| <= L (L-smooth per sample), worst trial",
                            float(hessian[smooth]), float(c["L"][smooth, 0]), "<=", source),
                 Inequality("max over the visited W_jM of E||grad f(w; xi) - grad f_k(w)||^2 <= max_k s_k^2, worst "
                            "trial", float(c["s2_visited"][spread]), float(c["s2_ball"][spread]), "<=", source),
                 Inequality("max over the iterates of E||grad f(w; xi)||^2 <= G^2 (sup over the ball), worst trial",
                            float(c["G2_visited"][worst]), float(c["G2_ball"][worst]), "<=", source)]
    failing = sum(not bool(row.holds) for row in rows)
    ratio = np.concatenate([(run.constants["G2_visited"] / run.constants["G2_ball"]).ravel() for run in sets])
    evidence = {"inequalities": len(rows), "failing": failing,
                "L_max": float(max(run.constants["L"].max() for run in sets)),
                "G2_visited_over_ball_min": float(ratio.min()), "G2_visited_over_ball_max": float(ratio.max())}
    summary = (f"{len(rows) - failing}/{len(rows)} inequalities hold on the FC.T1 problems ("
               + ", ".join(dict.fromkeys(run.family for run in sets)) + "): per-sample smoothness exact (quadratic "
               f"Hessians plus alpha omega^2 for the ripple; max ||x||^2 for the regression), local variance s_k^2 exact "
               f"(tau^2 ||A_k||_F^2, or its sup over the stated ball for the regression), G^2 along the iterates "
               f"{ratio.min():.2f}-{ratio.max():.2f} of its sup over the stated ball")
    return Verdict("FC.A2", "holds" if failing == 0 else "violated", evidence, ctx.seed, len(sets), 1.0, summary,
                   assumptions=[row.as_dict() for row in rows],
                   plot=[margin_plot("FC.A2", [row.as_dict() for row in rows])],
                   details={"bounded below": "quadratic and squared-error per-sample losses are >= 0; the ripple is "
                                             ">= -alpha d",
                            "variance": "quadratic devices: E||grad f(w; xi) - grad f_k(w)||^2 = tau_k^2 ||A_k||_F^2 at "
                                        "every w (exact); regression: a convex quadratic in w, unbounded on R^d, so "
                                        "s_k^2 is its exact sup over the stated ball (trust region), compared with its "
                                        "max over the visited W_jM",
                            "regression": "finite device data sets with bounded inputs, so L = max ||x||^2 is the "
                                          "per-sample Hessian's norm; a Gaussian design would fail A2.1 (x x^T "
                                          "unbounded); no logistic variant (its variance and heterogeneity are not "
                                          "quadratics in w: no exact sup over a ball)"})


def _hessian_sup(run) -> np.ndarray:
    """``sup_{w, xi} ||Hess f(w; xi)||`` per trial ``(B,)``, computed apart from the L the
    bound uses: the generator's largest eigenvalue (plus the ripple's alpha omega^2) for
    quadratic devices, the largest eigenvalue of ``x x^T`` over the data for the regression."""
    spec = FAMILIES[run.family]
    if spec["kind"] == "regression":
        outer = np.einsum("bnid,bnie->bnide", run.problem.inputs, run.problem.inputs)
        return np.linalg.eigvalsh(outer)[..., -1].max(axis=(1, 2))
    return np.full(run.trials, spec["smoothness"] + spec.get("amplitude", 0.0) * spec.get("frequency", 0.0) ** 2)
