"""Which runs of a Fig. 2 trial go first: the trial ends at its first certified success.

A trial (data seed) succeeds when *some* run ends below the threshold, so with the early-exit
certificate (:mod:`cflbounds.sweeps.certificate`) a successful trial costs its batch's width
times the iterations until its first certified success. The runs of one step size usually
decide it: on panel (a) at paper size every certified success of the official variant came
from step 0.1, while the runs at step 1.0 diverge and those at 0.01 move slowly. So the runs
go in two waves: the step size most likely to succeed first, alone; the others only for the
trials the first wave did not decide. A wave that decides its trial costs a third of the
width; a trial that fails runs every run to its own end either way, in two narrower batches.

"Most likely" is, in order:

1. the step size that has decided most trials of the cell so far (the cell's trials run in
   sequence; the tally is empirical and the cell's own);
2. for step sizes tied there (the first trial: all), the smaller contraction factor of the
   true partition's quadratics at that step (:meth:`ClusterQuadratics.true_contraction`, mean
   over the batch's problems; no contraction counts as 1): in exact arithmetic a run that has
   found the true partition approaches its fixed points at that rate, and no faster;
3. the protocol's order of the step sizes.

The order changes only which runs are computed, never a run: a run's trajectory depends on its
problem, restart and step size alone (initial models are per restart; runs share nothing), and
a trial's outcome is the same whichever of its runs decides it. A run its trial no longer needs
is reported ``stopped`` at iteration 0, exactly like a run retired when another run of its trial
certified success.
"""
from __future__ import annotations

import numpy as np

__all__ = ["step_waves"]


def step_waves(steps, decided: dict, quadratics) -> list[tuple[float, ...]]:
    """``[(first step size,), (the others, in the protocol's order)]`` (one wave if there is
    one step size), from ``decided[step]`` (trials of the cell a run at ``step`` succeeded in so
    far) and the batch's :class:`~cflbounds.sweeps.cluster_quadratics.ClusterQuadratics`."""
    steps = tuple(steps)
    if len(steps) == 1:
        return [steps]
    best = max(decided[step] for step in steps)
    tied = [step for step in steps if decided[step] == best]
    if len(tied) > 1:
        factors = {step: np.mean([_factor(quadratics_of, step) for quadratics_of in quadratics]) for step in tied}
        first = min(tied, key=lambda step: (factors[step], steps.index(step)))
    else:
        first = tied[0]
    return [(first,), tuple(step for step in steps if step != first)]


def _factor(quadratics, step: float) -> float:
    factor = quadratics.true_contraction(step)
    return 1.0 if factor is None else factor
