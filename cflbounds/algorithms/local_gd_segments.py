"""Local GD on quadratics by whole segments: the same iterates as :func:`~.local_gd.local_gd` at
the times a claim reads, without the steps in between.

On client ``m``'s quadratic ``f_m(x) = 1/2 (x - b_m)^T A_m (x - b_m)`` a gradient step is affine,
``x - b_m <- M_m (x - b_m)`` with ``M_m = I - gamma A_m``, so ``n`` steps from ``x_s`` give

    x_{s+n}^m = M_m^n (x_s^m - b_m) + b_m,      sum_{j<n} x_{s+j}^m = S_n^m (x_s^m - b_m) + n b_m,

``S_n = sum_{j<n} M^j``. Both come from ``O(log n)`` matrix products by doubling
(``M^(a+b) = M^a M^b``, ``S_(a+b) = S_a + M^a S_b``: polynomials in one matrix commute), once per
segment length. A segment that starts synchronised (every client at the same ``x``) is then an
affine map of ``x`` alone, the clients' maps averaged, and costs two ``d x d`` mat-vecs per run
instead of ``n`` steps of ``M`` clients' mat-vecs; one that starts elsewhere (after a horizon
inside a period) two mat-vecs per client. The
segments end at the synchronisation times (where every client takes the average, Khaled,
Mishchenko & Richtárik 2019, Sec. 2), at the requested ``horizons`` and at ``steps``; the running
sum of ``x_hat_t = (1/M) sum_m x_t^m`` gives ``x_bar_T = (1/T) sum_{t<T} x_hat_t`` (Theorem 1's
averaged iterate) at every segment end. The numbers are those of the per-step loop up to
rounding (products in another order: tests/test_local_gd_segments.py, within 1e-10 relative).

With full gradients and uniform weights, FedAvg with ``E`` local steps and full participation is
this algorithm with ``sync=E`` (tested): the route to a constant-step FedAvg's limit (Li et al.,
Theorem 4) in thousands of rounds.
"""
from __future__ import annotations

import numpy as np
import torch

from .._threads import follow_load
from .._validation import Boolean, Constraint, require, validate_params
from .iterate_trace import IterateTrace, trace_of
from .local_gd import SYNC, checked_start
from .local_updates import COUNT, INIT, POSITIVE_STEP, PROBLEM, check_step, initial_points, step_schedule
from ..synthetic.heterogeneous_quadratics import matvec

__all__ = ["local_gd_segments", "segment_maps"]

_HORIZONS = Constraint(lambda v: v is None or (np.ndim(v) == 1 and np.asarray(v).dtype.kind in "iu"
                                               and bool(np.all(np.asarray(v) >= 1))),
                       "None or positive ints (the steps T at which to record x_hat_T and x_bar_T)")


def _product(left: torch.Tensor, right: torch.Tensor) -> torch.Tensor:
    """``left @ right`` for stacks of small matrices; on the CPU through NumPy's stacked matmul
    (4x torch's batched GEMM for 100 x 20 matrices of 20 x 20 here, as :func:`matvec`)."""
    if left.device.type != "cpu":
        return left @ right
    with np.errstate(all="ignore"):  # a diverging step's powers overflow: its run's outcome
        return torch.from_numpy(np.matmul(left.numpy(), right.numpy()))


def segment_maps(contraction: torch.Tensor, length: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(M^n, S_n = sum_{j<n} M^j)`` for stacks of matrices ``M`` ``(..., d, d)`` and ``n =
    length >= 1``, by binary doubling (``2 log2 n`` products or fewer)."""
    identity = torch.eye(contraction.shape[-1], dtype=contraction.dtype, device=contraction.device)
    power, total = None, None  # the segment built so far: None is the empty one
    base_power, base_total = contraction, identity.expand_as(contraction)
    while True:
        if length & 1:
            if power is None:
                power, total = base_power, base_total
            else:
                total = total + _product(power, base_total)
                power = _product(power, base_power)
        length >>= 1
        if not length:
            return power, total
        base_total = base_total + _product(base_power, base_total)
        base_power = _product(base_power, base_power)


def _averaged_maps(power, total, optima, length):
    """A segment from a synchronised ``x`` in terms of ``x`` alone: ``x_hat_end = P x + q`` and
    ``sum_{j<n} x_hat_{s+j} = Q x + r``, the clients' maps averaged (``P = mean_m M_m^n``,
    ``q = mean_m (b_m - M_m^n b_m)``, ``Q = mean_m S_n^m``, ``r = mean_m (n b_m - S_n^m b_m)``)."""
    return (power.mean(dim=1), (optima - matvec(power, optima)).mean(dim=1), total.mean(dim=1),
            (length * optima - matvec(total, optima)).mean(dim=1))


def _quadratic(problem) -> bool:
    return hasattr(problem, "hessians") and hasattr(problem, "optima")


def _chained(averaged_power, shift, averaged_total, total_shift, x, running, periods: int):
    """``periods`` identical synchronised periods at once: the state ``z = (x, running sum, 1)``
    moves by ``A = [[P, 0, q], [Q, I, r], [0, 0, 1]]`` a period, so ``A^periods z`` by squaring
    (``O(log periods)`` products of ``(2d + 1)``-square matrices per run)."""
    B, d = x.shape
    step = torch.zeros((B, 2 * d + 1, 2 * d + 1), dtype=x.dtype, device=x.device)
    step[:, :d, :d], step[:, :d, -1] = averaged_power, shift
    step[:, d:2 * d, :d], step[:, d:2 * d, d:2 * d], step[:, d:2 * d, -1] = averaged_total, torch.eye(d), total_shift
    step[:, -1, -1] = 1.0
    state = torch.cat([x, running, torch.ones((B, 1), dtype=x.dtype, device=x.device)], dim=1)
    while True:
        if periods & 1:
            state = matvec(step, state)
        periods >>= 1
        if not periods:
            return state[:, :d], state[:, d:2 * d]
        step = _product(step, step)


@validate_params({"problem": [PROBLEM, Constraint(_quadratic, "a quadratic problem (hessians and optima)")],
                  "steps": COUNT, "step_size": [POSITIVE_STEP], "sync": [SYNC], "horizons": [_HORIZONS],
                  "init": INIT, "record_syncs": [Boolean]})
@follow_load()
def local_gd_segments(problem, *, steps: int, step_size, sync, horizons=None, init=None,
                      record_syncs: bool = True) -> IterateTrace:
    """Local GD (:func:`~.local_gd.local_gd`'s parameters) on quadratic clients, recorded at the
    segment ends only: ``t = 0``, the synchronisation times (unless ``record_syncs`` is False),
    ``horizons`` (steps ``<= steps``) and ``steps``. Without ``record_syncs``, a stretch of equal
    synchronised periods between two recorded times is one affine map raised to their number
    (:func:`_chained`): thousands of rounds in a few dozen products.

    Returns an :class:`IterateTrace` whose ``steps`` are the recorded times, ``points`` ``x_hat_t``
    there and ``averaged_gap`` ``f(x_bar_t) - f*`` (NaN at ``t = 0``), ``sync_steps`` the
    synchronisation times.
    """
    x, times = checked_start(problem, step_size, sync, steps, init)
    wanted = np.asarray([] if horizons is None else horizons, dtype=np.int64)
    recorded = np.unique(np.r_[times if record_syncs else [], wanted[wanted <= steps], steps]).astype(np.int64)
    events = np.unique(np.r_[times, recorded]).astype(np.int64).tolist()
    is_sync, is_recorded = set(times.tolist()), set(recorded.tolist())
    B, d = problem.batch_size, problem.d
    gamma = step_schedule(step_size, B, problem.dtype, problem.device)(0)[..., None]  # (B, 1, 1, 1)
    identity = torch.eye(d, dtype=problem.dtype, device=problem.device)
    contraction = identity - gamma * problem.hessians  # M = I - gamma A, (B, M, d, d)
    optima = problem.optima
    maps, reduced = {}, {}
    synchronised, models = True, None  # every client holds x (at the start and after each averaging)
    running = torch.zeros((B, d), dtype=problem.dtype, device=problem.device)  # sum_{t<end} x_hat_t
    points, averaged = [x.double().cpu().numpy()], [np.full((B, d), np.nan)]
    start, i = 0, 0
    while i < len(events):
        end = events[i]
        length = end - start
        if length not in maps:
            maps[length] = segment_maps(contraction, length)
        power, total = maps[length]
        if synchronised:  # the clients' affine maps averaged: (B, d, d) mat-vecs only
            if length not in reduced:
                reduced[length] = _averaged_maps(power, total, optima, length)
            averaged_power, shift, averaged_total, total_shift = reduced[length]
            periods = 1  # equal synchronised periods, every one but the last ending unrecorded
            while (end in is_sync and events[i + periods - 1] not in is_recorded and i + periods < len(events)
                   and events[i + periods] - events[i + periods - 1] == length
                   and events[i + periods] in is_sync):
                periods += 1
            if periods > 1:
                x, running = _chained(averaged_power, shift, averaged_total, total_shift, x, running, periods)
                i, start = i + periods, events[i + periods - 1]
                if start in is_recorded:
                    points.append(x.double().cpu().numpy())
                    averaged.append((running / start).double().cpu().numpy())
                continue
            running = running + matvec(averaged_total, x) + total_shift
            if end not in is_sync:  # a horizon inside a period: the clients part ways
                models = matvec(power, x[:, None] - optima) + optima
                synchronised = False
            x = matvec(averaged_power, x) + shift
        else:
            offset = models - optima
            running = running + (matvec(total, offset) + length * optima).mean(dim=1)
            models = matvec(power, offset) + optima
            x = models.mean(dim=1)
            synchronised = end in is_sync
        if end in is_recorded:
            points.append(x.double().cpu().numpy())
            averaged.append((running / end).double().cpu().numpy())
        start, i = end, i + 1
    running_points = np.stack(averaged, axis=1)
    finite = np.isfinite(running_points).all(-1)
    with np.errstate(all="ignore"):
        averaged_gap = problem.objective_gap(np.where(finite[..., None], running_points, 0.0))
    averaged_gap = np.where(finite, averaged_gap, np.inf)
    averaged_gap[:, 0] = np.nan
    config = {"method": "local_gd_segments", "steps": steps, "step_size": repr(step_size),
              "sync": np.asarray(sync).tolist(), "recorded": np.r_[0, recorded].tolist(),
              "max_gap": int(np.diff(np.r_[0, times]).max()) if times.size else None}
    return trace_of(problem, np.stack(points, axis=1), np.r_[0, recorded], np.zeros(B, dtype=np.uint64), config,
                    averaged_gap=averaged_gap, sync_steps=times)
