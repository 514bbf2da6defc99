"""Local gradient descent as Khaled, Mishchenko & Richtárik analyse it ("First Analysis of
Local GD on Heterogeneous Data", 2019, Sec. 2), batched over runs.

Each of ``M`` clients runs full-gradient steps ``x_{t+1}^m = x_t^m - gamma grad f_m(x_t^m)``;
at a synchronisation time ``t + 1 = t_p`` the server averages,
``x_{t+1}^m = (1/M) sum_j (x_t^j - gamma grad f_j(x_t^j))`` for every ``m``. The gaps between
synchronisation times are at most ``H`` (``sync=H``: every ``H`` steps; or given times).
Recorded at every step: ``x_hat_t = (1/M) sum_m x_t^m`` and, for Theorem 1,
``x_bar_T = (1/T) sum_{t<T} x_hat_t``.

The objective is ``f = (1/M) sum_m f_m``: the problem's weights must be uniform.
"""
from __future__ import annotations

from numbers import Integral

import numpy as np

from .._threads import follow_load
from .._validation import Constraint, require, validate_params
from .iterate_trace import IterateTrace, trace_of
from .local_updates import COUNT, INIT, POSITIVE_STEP, PROBLEM, check_step, client_updates, initial_points, \
    step_schedule

__all__ = ["local_gd", "checked_start", "sync_times", "SYNC"]

SYNC = Constraint(lambda v: (isinstance(v, Integral) and not isinstance(v, bool) and v >= 1)
                   or (np.ndim(v) == 1 and len(v) > 0 and np.asarray(v).dtype.kind in "iu"
                       and bool(np.all(np.diff(v) > 0)) and int(np.min(v)) >= 1),
                   "an int H >= 1 (every H steps) or increasing positive ints (the synchronisation times)")


def sync_times(sync, steps: int) -> np.ndarray:
    """The synchronisation times up to ``steps``: ``H, 2H, ...`` for an int ``H``, else those given."""
    times = np.arange(sync, steps + 1, sync) if np.ndim(sync) == 0 else np.asarray(sync, dtype=np.int64)
    return times[times <= steps]


@validate_params({"problem": [PROBLEM], "steps": COUNT, "step_size": [POSITIVE_STEP], "sync": [SYNC],
                  "init": INIT})
@follow_load()
def checked_start(problem, step_size, sync, steps: int, init) -> tuple[np.ndarray, np.ndarray]:
    """What both local GD routines check before any work (uniform weights: the objective is
    ``(1/M) sum_m f_m``; the step), and their start points and synchronisation times."""
    M = problem.clients
    require(np.allclose(problem.weights, 1.0 / M, rtol=1e-12, atol=0.0),
            f"Local GD's objective is (1/M) sum_m f_m: the problem's weights must be uniform (1/{M} each); got "
            f"weights from {np.min(problem.weights)!r} to {np.max(problem.weights)!r}.")
    check_step(problem, "step_size", step_size)
    return initial_points(problem, init), sync_times(sync, steps)


def local_gd(problem, *, steps: int, step_size, sync, init=None) -> IterateTrace:
    """Run local GD (module docstring) for ``T = steps`` steps on every run of the batch.

    Parameters
    ----------
    step_size : gamma (a float, or one per run).
    sync : ``H`` (an int: synchronise every H steps) or the synchronisation times (increasing ints).
    init : ``x_0`` for every client, ``(d,)`` or ``(B, d)``; zeros by default.

    Returns an :class:`IterateTrace` whose points are ``x_hat_t``, ``t = 0..T``, with
    ``averaged_gap[:, T] = f(x_bar_T) - f*`` and the synchronisation times in ``sync_steps``.
    """
    x, times = checked_start(problem, step_size, sync, steps, init)
    B, M, d = problem.batch_size, problem.clients, problem.d
    step = step_schedule(step_size, B, problem.dtype, problem.device)
    oracle = problem.oracle()
    averages = np.empty((B, steps + 1, d))

    def observe(t, models, second_moment):
        averages[:, t] = models.mean(dim=1).double().cpu().numpy()

    models = x[:, None].expand(B, M, d)
    edges = np.unique(np.r_[0, times, steps])
    for start, end in zip(edges[:-1], edges[1:]):
        models = client_updates(oracle, models, None, first_step=int(start), steps=int(end - start), step=step,
                                observe=observe)
        if end in times:
            models = models.mean(dim=1, keepdim=True).expand(B, M, d)
    averages[:, steps] = models.mean(dim=1).double().cpu().numpy()
    running = np.cumsum(averages[:, :-1], axis=1) / np.arange(1, steps + 1)[:, None]  # x_bar_T, T = 1..steps
    with np.errstate(all="ignore"):
        averaged_gap = np.concatenate([np.full((B, 1), np.nan), problem.objective_gap(running)], axis=1)
    gaps = np.where(np.isfinite(running).all(-1), averaged_gap[:, 1:], np.inf)
    averaged_gap[:, 1:] = gaps
    config = {"method": "local_gd", "steps": steps, "step_size": repr(step_size),
              "sync": np.asarray(sync).tolist(), "max_gap": int(np.diff(np.r_[0, times]).max()) if times.size else None}
    return trace_of(problem, averages, np.arange(steps + 1), np.zeros(B, dtype=np.uint64), config,
                    averaged_gap=averaged_gap, sync_steps=times)
