"""Certified early exit (cflbounds.sweeps.certificate) never changes a Fig. 2 outcome.

Every cell is run twice from the same seeds: with ``early_exit=True`` (runs leave once their
final distance is certainly on one side of the threshold) and ``early_exit=False`` (every
run goes to T). The per-trial successes must agree exactly, and every certificate must be
true of the full run: a certified failure ended at or above the threshold, a certified
success below it, and the final distance lies inside the certified interval.
"""
import numpy as np
import pandas as pd
import pytest

from cflbounds.sweeps.ifca_fig2 import fig2_cells, run_fig2_cell, trial_outcomes



KEYS = ["trial", "restart", "step_size"]
# the certificate is exact arithmetic in float64; the runs are float32, whose rounding over a few
# hundred steps of size <= 1 on O(1) models stays far below 1e-4
FLOAT32_TOLERANCE = 1e-4


def run_both(panel, variant, overrides, **protocol):
    """[(cell, early-exit rows, full rows)] for every cell of the grid."""
    pairs = []
    early = fig2_cells((panel,), (variant,), overrides, seed=0, early_exit=True, **protocol)
    full = fig2_cells((panel,), (variant,), overrides, seed=0, early_exit=False, **protocol)
    for early_cell, full_cell in zip(early, full):
        assert {k: v for k, v in early_cell.items() if k != "early_exit"} == \
               {k: v for k, v in full_cell.items() if k != "early_exit"}
        pairs.append((early_cell, run_fig2_cell(early_cell), run_fig2_cell(full_cell)))
    return pairs


def check_certificates(pairs):
    """The assertions of the module docstring; returns how many certificates of each kind were checked."""
    counts = {"success": 0, "failure": 0, "stopped": 0}
    for cell, early, full in pairs:
        label = f"{cell['variant']} panel {cell['panel']} r={cell['r']} sigma={cell['sigma']}"
        assert (full["certified"] == "").all()
        early_trials, full_trials = trial_outcomes(early), trial_outcomes(full)
        assert early_trials["trial"].tolist() == full_trials["trial"].tolist()
        assert early_trials["success"].tolist() == full_trials["success"].tolist(), label

        column = "dist_nearest" if cell["variant"] == "official" else "dist_matched"
        merged = early[KEYS + ["certified", "final_lower", "final_upper", "threshold"]].merge(
            full[KEYS + [column, "diverged"]], on=KEYS, how="outer", validate="one_to_one", indicator=True)
        assert (merged["_merge"] == "both").all(), label  # the same runs in both
        distance = merged[column].to_numpy()
        for outcome in ("success", "failure"):
            rows = merged[merged["certified"] == outcome]
            counts[outcome] += len(rows)
            if rows.empty:
                continue
            assert not rows["diverged"].any(), label
            final = rows[column].to_numpy()
            assert np.isfinite(final).all(), label
            if outcome == "failure":
                assert (final >= rows["threshold"]).all(), (label, rows)
            else:
                assert (final < rows["threshold"]).all(), (label, rows)
            assert (rows["final_lower"] <= rows["final_upper"]).all()
            assert (final >= rows["final_lower"] - FLOAT32_TOLERANCE).all(), (label, rows)
            assert (final <= rows["final_upper"] + FLOAT32_TOLERANCE).all(), (label, rows)
        counts["stopped"] += int((merged["certified"] == "stopped").sum())
        uncertified = merged["certified"] == ""
        assert np.isfinite(distance[uncertified & ~merged["diverged"]]).all()
    return counts


PROTOCOL = {"trials": 10, "restarts": 3, "iterations": 150}


@pytest.mark.parametrize("variant", ["official", "paper-text"])
def test_early_exit_keeps_outcomes_small_cells(variant):
    pairs = run_both("a", variant, {"d": [64], "m": [24], "n": [24], "r": [0.25, 0.5], "sigma": [0.0, 0.1, 0.4]},
                     **PROTOCOL)
    counts = check_certificates(pairs)
    # the grid is placed where both kinds of certificate are issued (seeded: same counts every run),
    # so the test exercises success, failure and the trial-level stop
    assert counts["success"] > 0 and counts["failure"] > 0 and counts["stopped"] > 0, counts


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["official", "paper-text"])
@pytest.mark.parametrize("panel, overrides", [
    ("a", {"d": [100], "m": [32], "n": [32], "r": [0.1, 0.25, 1.0], "sigma": [0.0, 0.2]}),
    ("a", {"d": [50], "m": [16], "n": [16], "r": [0.1, 0.5], "sigma": [0.1, 0.4]}),
    ("c", {"d": [64], "m": [16, 32], "n": [24], "r": [0.25]}),  # threshold 0.6 sigma without the +0.001
])
def test_early_exit_keeps_outcomes_larger_grid(variant, panel, overrides):
    pairs = run_both(panel, variant, overrides, trials=10, restarts=3, iterations=300)
    check_certificates(pairs)


def test_certified_runs_are_marked_and_bounded():
    """Rows of the early-exit run: certified ones name their outcome and carry finite bounds;
    the others carry NaN bounds."""
    (cell,) = fig2_cells(("a",), ("paper-text",), {"d": [64], "m": [24], "n": [24], "r": [0.5], "sigma": [0.1]},
                         seed=0, early_exit=True, **PROTOCOL)
    rows = run_fig2_cell(cell)
    assert set(rows["certified"]) <= {"", "success", "failure", "stopped"}
    decided = rows["certified"].isin(["success", "failure"])
    assert decided.any()
    assert np.isfinite(rows.loc[decided, ["final_lower", "final_upper"]].to_numpy()).all()
    assert rows.loc[~decided, ["final_lower", "final_upper"]].isna().all().all()
    assert isinstance(rows, pd.DataFrame)
