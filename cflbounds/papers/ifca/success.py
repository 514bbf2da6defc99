"""IFCA.F2: success probability of Fig. 2 rises with R, m, n and falls with sigma.

The runs are the ``ifca-fig2`` sweep (DESIGN.md's protocol, ``official`` variant). At the
``paper`` scale the full protocol runs; smaller scales run a reduced protocol (stated in
the verdict) placed where the success probability is neither 0 nor 1, since a saturated
grid carries no information about a trend.

Judgment: along every line of the grid (one axis varies, the rest fixed), a one-sided
Fisher exact test of the first against the last point in the claimed direction, and of
every adjacent pair against it (a reversal); Holm's correction over the tests of an axis.
An axis is ``confirmed`` when some line moves significantly the claimed way, ``reversed``
when some adjacent pair moves significantly the other way.
"""
from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from cflbounds.claims import Verdict, VerifyContext
from cflbounds.claims.stats import clopper_pearson, fisher_one_sided
from cflbounds.sweeps.executors import run_cells
from cflbounds.sweeps.grid import cell_key
from cflbounds.sweeps.ifca_fig2 import AXES, PANELS, fig2_cells, run_fig2_cell, trial_outcomes
from cflbounds.sweeps.store import ResultStore

ALPHA = 0.05
DIRECTIONS = {"r": 1, "m": 1, "n": 1, "sigma": -1}  # the claimed direction of each axis

# panel -> parameter overrides of the reduced protocols. They keep the paper's ratios at a
# tenth of its dimension: d = 100 with r scaled by sqrt(10) keeps ||theta*|| and the
# separation r sqrt(d/2) of Fig. 2, and p m n / d spans the paper's range (5 on panel a, 10 on b).
_REDUCED = {"d": [100]}
SCALES = {
    "smoke": {"panels": {"a": {**_REDUCED, "m": [24], "n": [24], "r": [0.1, 0.79], "sigma": [0.1, 0.4]},
                         "c": {**_REDUCED, "m": [8, 48], "n": [24], "r": [0.32]}},
              "protocol": {"trials": 12, "restarts": 3, "iterations": 150}},
    "default": {"panels": {"a": {**_REDUCED, "m": [32], "n": [32], "r": [0.1, 0.2, 0.32, 0.79],
                                 "sigma": [0.0, 0.1, 0.2, 0.4]},
                           "b": {**_REDUCED, "m": [80], "n": [50], "r": [0.1, 0.32, 0.79], "sigma": [0.0, 0.2, 0.4]},
                           "c": {**_REDUCED, "m": [16, 24, 32, 48], "n": [16, 32], "r": [0.32]},
                           "d": {**_REDUCED, "m": [16, 32, 64], "n": [25, 50], "r": [1.58]}},
                "protocol": {"trials": 40}},
    "paper": {"panels": {panel: {} for panel in PANELS}, "protocol": {}},
}


def run_fractions(rows) -> dict[str, float]:
    """Shares of collapsed and diverged runs among the runs computed: a run its decided trial
    never started (``stopped`` at iteration 0, :mod:`cflbounds.sweeps.step_order`) has no final
    state to count."""
    computed = rows[~((rows["certified"] == "stopped") & (rows["retired_at"] == 0))]
    return {"collapsed_runs_fraction": float(computed["collapsed"].mean()),
            "diverged_runs_fraction": float(computed["diverged"].mean())}


def _holm(p_values: list[float]) -> np.ndarray:
    """Holm-Bonferroni: which of the p-values are significant at family-wise level ALPHA."""
    order = np.argsort(p_values)
    significant = np.zeros(len(p_values), dtype=bool)
    for rank, index in enumerate(order):
        if p_values[index] > ALPHA / (len(p_values) - rank):
            break
        significant[index] = True
    return significant


def monotonicity(outcomes: pd.DataFrame) -> dict:
    """Per swept axis: lines, significant moves in the claimed direction, significant reversals."""
    result = {}
    for axis, direction in DIRECTIONS.items():
        others = [a for a in ("variant", "panel", *AXES) if a != axis]
        counts = outcomes.groupby(others + [axis])["success"].agg(["sum", "count"]).reset_index()
        endpoint_p, reversal_p = [], []
        for _, line in counts.groupby(others):
            line = line.sort_values(axis, ascending=direction > 0)  # claimed: success rises along the line
            if len(line) < 2:
                continue
            wins, totals = line["sum"].to_numpy(), line["count"].to_numpy()
            endpoint_p.append(fisher_one_sided(wins[0], totals[0], wins[-1], totals[-1]))
            reversal_p += [fisher_one_sided(wins[i + 1], totals[i + 1], wins[i], totals[i]) for i in range(len(line) - 1)]
        if not endpoint_p:
            continue
        confirmed, reversed_ = _holm(endpoint_p), _holm(reversal_p)
        result[axis] = {
            "lines": len(endpoint_p),
            "confirmed_lines": int(confirmed.sum()),
            "reversals": int(reversed_.sum()),
            "status": "reversed" if reversed_.any() else "confirmed" if confirmed.any() else "flat",
        }
    return result


def claim_cells(scale: str, seed: int) -> list[dict]:
    """The sweep cells the claim runs at ``scale`` (:data:`SCALES`) from root ``seed``."""
    cfg = SCALES[scale]
    return [cell for panel, overrides in cfg["panels"].items()
            for cell in fig2_cells((panel,), ("official",), overrides, seed=seed, **cfg["protocol"])]


def _success_table(ctx: VerifyContext) -> pd.DataFrame:
    cells = claim_cells(ctx.scale, ctx.seed)
    with contextlib.ExitStack() as stack:  # without a workdir the store lives only for this check
        directory = (Path(ctx.workdir) / "sweeps" / "ifca-fig2" if ctx.workdir
                     else Path(stack.enter_context(tempfile.TemporaryDirectory())))
        store = ResultStore(directory)
        run_cells(cells, run_fig2_cell, store, executor=ctx.executor, progress=ctx.progress,
                  shared={"device": ctx.device})
        rows = store.read()
    return rows[rows["cell"].isin({cell_key(cell) for cell in cells})]  # a reused store may hold others


def _plot(outcomes: pd.DataFrame) -> dict:
    """Success probability on the panel whose cells differ most (the first such): vs R per
    sigma on a noise panel (Fig. 2 (a) style), vs m per n on a sample panel. A panel where
    every cell succeeds equally often (all 0 at the smoke scale's panel a) shows no trend;
    the report's Fig. 2 page shows every panel."""
    spread = outcomes.groupby(["panel", *AXES])["success"].mean().groupby(level="panel").agg(lambda p: p.max() - p.min())
    first = outcomes[outcomes["panel"] == spread.idxmax()]
    x_axis, group = ("r", "sigma") if first["r"].nunique() > 1 else ("m", "n")
    xs = sorted(first[x_axis].unique())
    series = []
    for value, part in first.groupby(group):
        counts = part.groupby(x_axis)["success"].agg(["sum", "count"]).reindex(xs)
        low, high = clopper_pearson(counts["sum"], counts["count"])
        series.append({"label": f"{group} = {value:g}", "y": (counts["sum"] / counts["count"]).tolist(),
                       "low": low.tolist(), "high": high.tolist(), "style": "line"})
    return {"kind": "line", "title": f"IFCA.F2: success probability, panel {first['panel'].iloc[0]}",
            "xlabel": x_axis, "ylabel": "success probability", "logx": False, "logy": False,
            "x": [float(x) for x in xs], "series": series}


def check_f2(ctx: VerifyContext) -> Verdict:
    rows = _success_table(ctx)
    ctx.save_table("ifca_fig2_runs", rows)
    outcomes = trial_outcomes(rows)
    ctx.save_table("ifca_fig2_trials", outcomes)
    axes = monotonicity(outcomes)
    statuses = {axis: info["status"] for axis, info in axes.items()}
    if "reversed" in statuses.values():
        verdict = "violated"
    elif statuses and all(s == "confirmed" for s in statuses.values()):
        verdict = "holds"
    else:
        verdict = "inconclusive"
    evidence = {"trials": int(len(outcomes)), "cells": int(outcomes.groupby(["panel", *AXES]).ngroups),
                "success_rate_overall": float(outcomes["success"].mean()),
                **run_fractions(rows)}
    for axis, info in axes.items():
        evidence.update({f"{axis}_{key}": value for key, value in info.items() if key != "status"})
    summary = "; ".join(f"{axis}: {status}" for axis, status in statuses.items())
    scale = SCALES[ctx.scale]
    return Verdict(
        "IFCA.F2", verdict, evidence, ctx.seed, int(len(outcomes)), 1 - ALPHA,
        f"trend of success probability per axis (Fisher exact, Holm, alpha {ALPHA}): {summary}",
        plot=[_plot(outcomes)],
        details={"protocol": "official (authors' code): Bernoulli*r centers, Bernoulli inits, nearest-truth distance",
                 "grid": "full Fig. 2 protocol" if ctx.scale == "paper" else
                 f"reduced protocol: {_grid_text(scale)} (r scaled by sqrt(10))",
                 **{f"axis {axis}": status for axis, status in statuses.items()}},
    )


def _grid_text(scale: dict) -> str:
    """A scale's reduced Fig. 2 grid in words: ``panel a: d = 100, m = 24, r in {0.1, 0.79}; ...;
    12 trials, 3 restarts, 150 iterations``."""
    def values(name, items):
        return f"{name} = {items[0]:g}" if len(items) == 1 else f"{name} in {{{', '.join(f'{v:g}' for v in items)}}}"

    panels = "; ".join(f"panel {panel}: " + ", ".join(values(name, items) for name, items in axes.items())
                       for panel, axes in scale["panels"].items())
    protocol = ", ".join(f"{count} {name}" for name, count in scale["protocol"].items())
    return f"{panels}; {protocol}"
