"""MGD.L1: how often a client is estimated into the wrong cluster, against Lemma 1's
explicit bound ``128 sigma^2/(Delta^4 mu^2 n')``.

Each cell of a grid over (family, Delta, noise, n') runs one cluster-estimation step
(Alg. 1 line 5, on n' fresh points) with both models placed at the edge of Assumption 4's
ball along the line of centers, the hardest case for cluster 0's clients in the proof
(own model ``(1/4)sqrt(mu/L) Delta`` away, the other ``Delta - (1/4)sqrt(mu/L) Delta``).
sigma^2 is the larger loss variance under cluster 0's data at the two models: the
smallest value Assumption 3 may take where the proof applies Chebyshev's inequality,
so the bound is as strict as the lemma allows. The misassignment frequency of cluster
0's clients gets an exact Clopper-Pearson interval (clients are independent given the
models). A cell is ``vacuous`` when the bound is >= 1.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from cflbounds.algorithms.losses import kernel_for
from cflbounds.algorithms.rounds import estimate_clusters
from cflbounds.bounds import cfl_mgd as bounds
from cflbounds.claims import Verdict, VerifyContext
from cflbounds.claims.stats import clopper_pearson
from cflbounds.synthetic.seeding import spawn_seeds
from .problems import Family, init_radius, placed_models

__all__ = ["check_l1", "judge_lemma1", "misassignment_table", "cluster_estimates"]

CONFIDENCE = 0.95
_N_PRIMES = {"smoke": (2, 8, 32, 128), "default": (2, 4, 8, 16, 32, 64, 128, 256),
             "paper": (2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)}
SCALES = {
    "smoke": {"trials": 30, "m": 40, "mlr": {"delta": (0.5, 1.0), "noise": (0.1, 0.5)},
              "quadratics": {"delta": (1.0,), "noise": (0.3, 1.0)}, "logistic": (8, 64, 512)},
    "default": {"trials": 120, "m": 40, "mlr": {"delta": (0.5, 1.0, 1.4), "noise": (0.1, 0.5, 1.0)},
                "quadratics": {"delta": (0.5, 1.0), "noise": (0.3, 1.0)}, "logistic": (8, 32, 128, 512, 2048)},
    "paper": {"trials": 1000, "m": 100, "mlr": {"delta": (0.5, 1.0, 1.4), "noise": (0.1, 0.5, 1.0)},
              "quadratics": {"delta": (0.5, 1.0, 1.4), "noise": (0.3, 1.0)}, "logistic": (8, 32, 128, 512, 2048)},
}
D = 5
DATA_BUDGET = 2 * 10**7  # numbers drawn per cell at most: cells with large n' get fewer trials (>= 20)


def _cells(scale):
    cfg = SCALES[scale]
    for kind in ("mlr", "quadratics"):
        for delta in cfg[kind]["delta"]:
            for noise in cfg[kind]["noise"]:
                for n_prime in _N_PRIMES[scale]:
                    yield Family(kind, D, delta=delta, noise=noise), n_prime
    for n_prime in cfg["logistic"]:
        yield Family("logistic", D, delta=1.0, noise=0.0), n_prime


def cluster_estimates(family: Family, seeds, m, n_prime, place, *, device="cpu"):
    """One cluster-estimation step (Alg. 1 line 5, eq. 21) on the first of Sec. 5's batches of
    n' points, at given models: ``place(truth)`` maps the exact optima ``(B, 2, d)`` to them.
    It is IFCA's and CFL-MGD's own step (the loss kernel and :func:`~cflbounds.algorithms.rounds.
    estimate_clusters` that :func:`cflbounds.algorithms.ifca` runs), kept apart to return the
    losses too. Returns ``(problem, models, losses, choice)``: ``losses`` ``(B, m, 2)`` each
    client's empirical loss at each model (up to a positive factor: the squared loss sums), and
    ``choice`` ``(B, m)`` its argmin, the estimated cluster (ties to the lower index)."""
    problem, options = family.problems(seeds, m, n_prime, iterations=1, resample="split", device=device)
    models = place(family.truth(problem))
    kernel = kernel_for(problem, "mean", options.get("samples"))
    estimation, _ = kernel.batches(kernel.data(), np.arange(problem.batch_size), 0, "split", n_prime)
    losses = kernel.losses(kernel.evaluate(estimation, torch.as_tensor(models[:, None], dtype=problem.dtype,
                                                                       device=problem.device)))  # (B, m, 1, 2)
    choice = estimate_clusters(losses)[:, :, 0]
    return problem, models, losses[:, :, 0].double().cpu().numpy(), choice.cpu().numpy()


def _cell(ctx, index, family: Family, n_prime, trials, m) -> dict:
    problem, models, _, choice = cluster_estimates(family, spawn_seeds(ctx.seed, trials, 1, index), m, n_prime,
                                                   lambda truth: placed_models(truth, init_radius(family)),
                                                   device=ctx.device)
    own = problem.membership == 0
    sigma2 = float(np.max([family.loss_variance(problem, models[:, j], 0) for j in range(2)]))
    scale = sigma2 / (family.delta**4 * family.strong_convexity**2 * n_prime)  # the bound is c1 times this
    return {"family": family.kind, "label": family.label, "delta": family.delta, "noise": family.noise,
            "n_prime": n_prime, "trials": trials, "clients": int(own.sum() * trials),
            "misassigned": int((choice[:, own] != 0).sum()),
            "misassigned_other_cluster": int((choice[:, ~own] != 1).sum()),
            "sigma2": sigma2, "mu": family.strong_convexity, "L": family.smoothness, "scale": scale,
            "radius": init_radius(family)}


def misassignment_table(ctx: VerifyContext) -> pd.DataFrame:
    cfg = SCALES[ctx.scale]
    trials = lambda n_prime: min(cfg["trials"], max(20, DATA_BUDGET // (cfg["m"] * 2 * n_prime * D)))
    rows = [_cell(ctx, i, family, n_prime, trials(n_prime), cfg["m"]) for i, (family, n_prime) in
            enumerate(_cells(ctx.scale))]
    return pd.DataFrame(rows)


def judge_lemma1(table: pd.DataFrame, c1: float = bounds.C1_LEMMA1, confidence: float = CONFIDENCE):
    """Each cell against ``c1 sigma^2/(Delta^4 mu^2 n')``; returns ``(verdict, evidence, cells)``.

    Cells: ``violated`` (the interval's lower end above the bound), ``holds`` (upper end
    at most the bound), ``vacuous`` (bound >= 1), else ``inconclusive``. Overall:
    ``violated`` if any cell is, ``vacuous`` if every cell is, ``holds`` if every
    non-vacuous cell holds. The evidence names the smallest constant the data allow
    (the largest ``lower end / (sigma^2/(Delta^4 mu^2 n'))`` over the cells).
    """
    cells = table.copy()
    low, high = clopper_pearson(cells["misassigned"], cells["clients"], confidence)
    cells["frequency"] = cells["misassigned"] / cells["clients"]
    cells["ci_low"], cells["ci_high"] = low, high
    cells["bound"] = c1 * cells["scale"]
    cells["looseness"] = cells["bound"] / cells["ci_high"]
    cells["cell_verdict"] = np.select(
        [cells["ci_low"] > cells["bound"], cells["bound"] >= 1, cells["ci_high"] <= cells["bound"]],
        ["violated", "vacuous", "holds"], "inconclusive")
    counts = cells["cell_verdict"].value_counts()
    informative = cells["cell_verdict"] != "vacuous"
    if counts.get("violated", 0):
        verdict = "violated"
    elif not informative.any():
        verdict = "vacuous"
    elif (cells.loc[informative, "cell_verdict"] == "holds").all():
        verdict = "holds"
    else:
        verdict = "inconclusive"
    allowed = float((cells["ci_low"] / cells["scale"]).max())
    evidence = {
        "c1": c1, "cells": len(cells), **{f"cells_{name}": int(counts.get(name, 0))
                                          for name in ("holds", "violated", "vacuous", "inconclusive")},
        "clients_counted": int(cells["clients"].sum()), "misassigned_total": int(cells["misassigned"].sum()),
        "max_frequency": float(cells["frequency"].max()),
        "smallest_constant_allowed": allowed,
        "smallest_constant_point_estimate": float((cells["frequency"] / cells["scale"]).max()),
        "c1_over_smallest_allowed": c1 / allowed if allowed > 0 else np.inf,
        "looseness_min_non_vacuous": float(cells.loc[informative, "looseness"].min()) if informative.any() else np.nan,
        "looseness_median_non_vacuous": float(cells.loc[informative, "looseness"].median())
        if informative.any() else np.nan,
        "misassigned_other_cluster_total": int(cells["misassigned_other_cluster"].sum()),
    }
    return verdict, evidence, cells


def _plot(cells) -> dict:
    """Every cell's bound against the 95% upper end of its misassignment probability: cells
    under the diagonal hold; bounds right of 1 are vacuous."""
    series = [{"label": kind, "x": rows["bound"].tolist(), "y": rows["ci_high"].tolist(), "style": "points"}
              for kind, rows in cells.groupby("family", sort=False)]
    ends = [float(cells["bound"].min()), float(cells["bound"].max())]
    series += [{"label": "probability = bound (above: violated)", "x": ends, "y": ends, "style": "dashed",
                "color": "black"}]
    return {"kind": "rate", "title": "MGD.L1 per cell: 95% upper end of the misassignment probability vs "
                                     "128 sigma^2/(Delta^4 mu^2 n')",
            "xlabel": "Lemma 1's bound", "ylabel": "misassignment probability (95% upper end)", "logx": True,
            "logy": True, "series": series, "reference": [{"x": 1.0, "label": "bound = 1: vacuous to the right"}]}


def check_l1(ctx: VerifyContext) -> Verdict:
    """MGD.L1 (Lemma 1 with its explicit c1 = 128) over the grid of cells."""
    table = ctx.shared(("mgd-l1", ctx.scale), lambda: misassignment_table(ctx))
    verdict, evidence, cells = judge_lemma1(table)
    ctx.save_table("mgd_misassignment", cells)
    summary = (
        f"{evidence['cells_holds']} cells hold, {evidence['cells_vacuous']} vacuous (bound >= 1), "
        f"{evidence['cells_violated']} violated, {evidence['cells_inconclusive']} inconclusive of {evidence['cells']}; "
        f"{evidence['misassigned_total']}/{evidence['clients_counted']} clients misassigned; the data allow any "
        f"c1 >= {evidence['smallest_constant_allowed']:.3g} (128 is {evidence['c1_over_smallest_allowed']:.3g}x that); "
        f"non-vacuous bounds exceed the 95% upper end by x{evidence['looseness_min_non_vacuous']:.3g} or more"
    )
    union = bounds.lemma1(1.0, 1.0, 1.0, 1.0)  # P = 2: one wrong cluster, both union forms as in eq. (23)
    return Verdict(
        "MGD.L1", verdict, evidence, ctx.seed, int(evidence["clients_counted"]), CONFIDENCE, summary,
        plot=[_plot(cells)],
        details={"placement": "both models at the edge of Assumption 4's ball along the line of centers (hardest "
                              "case of the proof for cluster 0's clients); cluster 1's clients are counted apart",
                 "sigma2": "largest loss variance under cluster 0's data at the two models (exact)",
                 "union": f"P = 2: eq. (23) prints P x the bound ({union.derived['union_as_printed']:g}x the "
                          "per-cluster value at unit constants); one wrong cluster needs only (P - 1) x",
                 "confidence": "95% Clopper-Pearson per cell"},
    )
