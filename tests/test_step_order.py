"""The two waves of step sizes (cflbounds.sweeps.step_order) decide which runs are computed,
never a trial's outcome or a run's trajectory."""
import numpy as np
import pytest

from cflbounds.sweeps import ifca_fig2
from cflbounds.sweeps.ifca_fig2 import STEP_SIZES, fig2_cells, run_fig2_cell, trial_outcomes
from cflbounds.sweeps.step_order import step_waves

from test_certificate import check_certificates

STEPS = STEP_SIZES[2]  # (1.0, 0.1, 0.01)


class Contracting:
    """Stands in for a problem's ClusterQuadratics: the true partition's contraction per step."""

    def __init__(self, factors):
        self.factors = factors

    def true_contraction(self, step):
        return self.factors[step]


def test_the_step_that_decided_most_trials_goes_first():
    quadratics = [Contracting({1.0: None, 0.1: 0.97, 0.01: 0.997})]
    assert step_waves(STEPS, {1.0: 0, 0.1: 0, 0.01: 3}, quadratics) == [(0.01,), (1.0, 0.1)]
    assert step_waves(STEPS, {1.0: 2, 0.1: 1, 0.01: 0}, quadratics) == [(1.0,), (0.1, 0.01)]


def test_ties_go_to_the_faster_contraction_then_to_the_protocol_order():
    quadratics = [Contracting({1.0: None, 0.1: 0.97, 0.01: 0.997})]
    assert step_waves(STEPS, dict.fromkeys(STEPS, 0), quadratics) == [(0.1,), (1.0, 0.01)]
    # no contraction counts as 1: a step that does not contract on the true partition goes last
    two = [Contracting({1.0: None, 0.1: 0.5, 0.01: 0.9}), Contracting({1.0: 0.2, 0.1: 0.5, 0.01: 0.9})]
    assert step_waves(STEPS, dict.fromkeys(STEPS, 0), two) == [(0.1,), (1.0, 0.01)]  # means 0.6, 0.5, 0.9
    same = [Contracting(dict.fromkeys(STEPS, 0.5))]
    assert step_waves(STEPS, dict.fromkeys(STEPS, 0), same) == [(1.0,), (0.1, 0.01)]
    # only the tied steps are compared
    assert step_waves(STEPS, {1.0: 1, 0.1: 0, 0.01: 1}, quadratics) == [(0.01,), (1.0, 0.1)]


def test_one_step_size_is_one_wave():
    assert step_waves((0.5,), {0.5: 0}, [Contracting({0.5: 0.9})]) == [(0.5,)]


# a float32 GEMM rounds a run's columns differently in batches of other widths; runs at step 1.0,
# which oscillate, amplify that to 6e-4 relative by T = 150 here (the others stay below 2e-6):
# the benchmark's tolerance for runs that finished in both implementations
WIDTH_RTOL = 1e-3
GRID = {"d": [64], "m": [24], "n": [24], "r": [0.25, 0.5], "sigma": [0.1]}
PROTOCOL = {"trials": 8, "restarts": 3, "iterations": 150}


@pytest.mark.parametrize("first", STEPS)
def test_any_first_wave_gives_the_full_runs_outcomes(monkeypatch, first):
    """Whichever step size goes first (forced here, also the worst), every trial's outcome and
    every certificate agree with the runs taken to T without early exit, runs computed in both
    end at the same distance, and the rows come in the order of the full run."""
    monkeypatch.setattr(ifca_fig2, "step_waves",
                        lambda steps, decided, quadratics: [(first,), tuple(s for s in steps if s != first)])
    pairs = []
    for cell in fig2_cells(("a",), ("official",), GRID, seed=0, early_exit=True, **PROTOCOL):
        full_cell = {**cell, "early_exit": False}
        early, full = run_fig2_cell(cell), run_fig2_cell(full_cell)
        pairs.append((cell, early, full))
        keys = ["trial", "restart", "step_size"]
        assert early[keys].equals(full[keys])
        assert early.dtypes.equals(full.dtypes)  # a store's cells share one schema, whatever ran them
        ran = (early["certified"] == "").to_numpy()
        np.testing.assert_allclose(early["dist_nearest"][ran], full["dist_nearest"][ran], rtol=WIDTH_RTOL)
        # a run never started belongs to a trial its first wave decided, and is not of that wave
        unstarted = ((early["certified"] == "stopped") & (early["retired_at"] == 0)).to_numpy()
        successes = trial_outcomes(early).set_index("trial")["success"]
        assert successes[early["trial"][unstarted]].all()
        assert (early["step_size"][unstarted] != first).all()
        assert early["dist_nearest"][unstarted].isna().all()
    counts = check_certificates(pairs)
    assert counts["success"] > 0 and counts["stopped"] > 0, counts


def test_the_cell_learns_which_step_decides(monkeypatch):
    """The tally handed to step_waves counts, per step size, the trials a run at it succeeded in
    so far: it starts at zero and ends at the successes the rows show. One trial per batch, as
    at paper size on the CPU."""
    seen = []
    original = ifca_fig2.step_waves

    def spy(steps, decided, quadratics):
        seen.append(dict(decided))
        return original(steps, decided, quadratics)

    monkeypatch.setattr(ifca_fig2, "step_waves", spy)
    monkeypatch.setitem(ifca_fig2._BATCH_BYTES, "cpu", 1)
    (cell,) = fig2_cells(("a",), ("official",), {**GRID, "r": [0.5]}, seed=0, early_exit=True, **PROTOCOL)
    rows = run_fig2_cell(cell)
    assert len(seen) == PROTOCOL["trials"] and seen[0] == dict.fromkeys(STEPS, 0)
    succeeded = rows[ifca_fig2._run_succeeded(rows)]
    last = {step: succeeded.loc[(succeeded["step_size"] == step) & (succeeded["trial"] < PROTOCOL["trials"] - 1),
                                "trial"].nunique() for step in STEPS}
    assert seen[-1] == last and sum(last.values()) > 0


def test_run_fractions_count_only_the_runs_computed():
    """IFCA.F2's collapsed and diverged shares: 2 computed runs (one collapsed, one diverged),
    one retired by its trial's success (counted: it ran), three never started (not counted)."""
    import pandas as pd

    from cflbounds.papers.ifca.success import run_fractions

    rows = pd.DataFrame({"certified": ["", "", "stopped", "stopped", "stopped", "stopped"],
                         "retired_at": [-1, -1, 40, 0, 0, 0],
                         "collapsed": [True, False, False, False, False, False],
                         "diverged": [False, True, False, False, False, False]})
    assert run_fractions(rows) == {"collapsed_runs_fraction": 1 / 3, "diverged_runs_fraction": 1 / 3}
