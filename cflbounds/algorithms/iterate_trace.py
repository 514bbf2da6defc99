"""What a batched run of a catalogue method records, and the constants measured on it.

:class:`IterateTrace` holds one point per recorded time (the server model after each round,
or local GD's average of the local iterates after each step) with its exact objective gap
and squared distance to the minimiser, computed by the problem in float64; which runs
diverged (a non-finite point) and when; and, where the method records it, the second moment
of every stochastic gradient it used (FedAvg's Assumption 4 is a bound on it along the run).

:func:`measured_gradient_bound` turns those second moments into the measured ``G^2`` with
its Monte Carlo standard error: a constant the theorem defines along the iterates is
measured, never computed, and is reported as such.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["IterateTrace", "MeasuredConstant", "measured_gradient_bound", "trace_of"]


@dataclass(frozen=True)
class IterateTrace:
    """A batch of ``B`` runs of one method.

    ``points`` ``(B, P, d)`` float64: round ``r``'s server model (``r = 0`` the start), or for
    local GD the average ``x_hat_t`` of the local iterates at step ``t``; ``steps`` ``(P,)``
    the local steps done by each point (``r E`` for FedAvg and SCAFFOLD). ``objective_gap``
    ``F(point) - F*`` and ``distance_sq`` ``||point - w*||^2``, ``(B, P)``. ``diverged``
    ``(B,)``: some point is not finite (NaN/inf), first at point index ``diverged_at`` (-1
    if never); later entries are not finite either, never an exception.

    ``gradient_second_moments`` ``(B, T, N)`` (FedAvg): ``E[||g||^2 | w_t^k]`` of the gradient
    client ``k`` used at local step ``t`` (exact for the quadratics, an unbiased sample
    otherwise). ``averaged_gap`` ``(B, P)`` (local GD): ``F(x_bar_T) - F*`` at ``T = steps``,
    ``x_bar_T = (1/T) sum_{t<T} x_hat_t`` (NaN at ``T = 0``). ``sync_steps``: local GD's
    synchronisation times. ``run_keys`` ``(B,)``: the counter keys of the runs' randomness.
    """

    points: np.ndarray
    steps: np.ndarray
    objective_gap: np.ndarray
    distance_sq: np.ndarray
    diverged: np.ndarray
    diverged_at: np.ndarray
    run_keys: np.ndarray
    config: dict = field(default_factory=dict)
    gradient_second_moments: np.ndarray | None = None
    averaged_gap: np.ndarray | None = None
    sync_steps: np.ndarray | None = None

    @property
    def final_gap(self) -> np.ndarray:
        """``F(w_last) - F*`` per run, ``(B,)``."""
        return self.objective_gap[:, -1]

    @property
    def final_distance_sq(self) -> np.ndarray:
        return self.distance_sq[:, -1]


def trace_of(problem, points: np.ndarray, steps, run_keys, config: dict, kind=IterateTrace, **extra) -> IterateTrace:
    """The trace of ``points`` ``(B, P, d)``: their exact gaps and distances, and divergence;
    ``kind`` an :class:`IterateTrace` subclass whose own fields ``extra`` fills."""
    finite = np.isfinite(points).all(axis=-1)  # (B, P)
    diverged = ~finite.all(axis=-1)
    with np.errstate(all="ignore"):  # a diverged run's points are inf/NaN: their gaps are too
        gap = problem.objective_gap(np.where(finite[..., None], points, 0.0))
        distance = problem.distance_sq(np.where(finite[..., None], points, 0.0))
    return kind(
        points=points, steps=np.asarray(steps), objective_gap=np.where(finite, gap, np.inf),
        distance_sq=np.where(finite, distance, np.inf), diverged=diverged,
        diverged_at=np.where(diverged, np.argmin(finite, axis=-1), -1), run_keys=np.asarray(run_keys),
        config=config, **extra)


@dataclass(frozen=True)
class MeasuredConstant:
    """A constant measured on runs: ``estimate`` with its Monte Carlo ``standard_error``,
    ``runs`` the sample size, ``where`` the cell the estimate was taken at."""

    estimate: float
    standard_error: float
    runs: int
    where: tuple
    measured: bool = True


def measured_gradient_bound(trace: IterateTrace) -> MeasuredConstant:
    """FedAvg's ``G^2`` (Assumption 4: ``E||grad F_k(w_t^k, xi_t^k)||^2 <= G^2`` for all ``k``
    and ``t``) measured on a trace: the largest over (step, client) of the mean over the
    batch's runs of ``E[||g||^2 | w_t^k]``, with the standard error of that mean (sample standard
    deviation over the runs / sqrt(runs)). The runs must be independent replicates of one
    problem and configuration. The maximum of noisy means is biased upwards by at most a few
    standard errors; with the exact conditional moments of the quadratics the noise is that of
    the iterates only. A diverged run makes the estimate ``inf``."""
    moments = trace.gradient_second_moments
    if moments is None:
        raise ValueError("This trace holds no gradient second moments (run with record_gradients=True).")
    runs = moments.shape[0]
    if not np.all(np.isfinite(moments)):
        return MeasuredConstant(float("inf"), float("nan"), runs, ())
    means = moments.mean(axis=0)  # (T, N)
    step, client = np.unravel_index(np.argmax(means), means.shape)
    spread = moments[:, step, client].std(ddof=1) if runs > 1 else float("nan")
    return MeasuredConstant(float(means[step, client]), float(spread / np.sqrt(runs)), runs,
                            (int(step), int(client)))
