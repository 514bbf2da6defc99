"""The Fig. 2(a) cells the benchmarks measure, and the options that choose them."""
from __future__ import annotations

import argparse

from cflbounds.sweeps.ifca_fig2 import fig2_cells

__all__ = ["add_cell_options", "benchmark_cells"]


def add_cell_options(parser: argparse.ArgumentParser, trials: int) -> None:
    """``--trials`` (default ``trials``), ``--r`` and ``--sigma``: the cells' size and grid."""
    parser.add_argument("--trials", type=int, default=trials, help=f"trials (data seeds) per r (default {trials})")
    parser.add_argument("--r", default="0.25,0.1", help="comma-separated r values of the Fig. 2(a) cell")
    parser.add_argument("--sigma", type=float, default=0.1, help="noise standard deviation (default 0.1)")


def benchmark_cells(args: argparse.Namespace, overrides: dict | None = None, **protocol) -> list[dict]:
    """One paper-size Fig. 2(a) cell per r of ``--r``, in that order (sigma ``--sigma``,
    ``--trials`` trials), with ``overrides`` of other parameters and ``protocol`` settings."""
    grid = {"r": [float(r) for r in args.r.split(",")], "sigma": [args.sigma], **(overrides or {})}
    return fig2_cells(panels=("a",), overrides=grid, trials=args.trials, **protocol)
