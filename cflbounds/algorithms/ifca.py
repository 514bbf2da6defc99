"""IFCA, Algorithm 1 of Ghosh et al. (NeurIPS 2020), batched over problems and runs.

One call runs ``B`` problems x ``restarts`` x ``len(step_sizes)`` runs as one tensor
computation (no Python loop over machines, runs or restarts per iteration). Each
iteration (Alg. 1 lines 2-16):

1. machines in M_t pick ``j^ = argmin_j F_i(theta_j)`` (line 5; on Z-hat^(t) when
   re-sampling);
2. option I, gradient averaging (line 13): ``theta_j <- theta_j - (gamma/m) sum_{i in S_j}
   grad F_i(theta_j)`` (on Z^(t) when re-sampling; ``/m`` is the total machine count, as
   in Alg. 1 and the authors' code), or option II, model averaging (line 14): each machine
   runs ``local_steps`` gradient steps from ``theta_j^`` and the center averages the
   results per cluster; a cluster nobody chose keeps its model.

The theory version of Sec. 5 is ``aggregation="gradient", participation=1,
resample="split"``; the Fig. 2 experiments use ``resample="none"`` with random inits.
A run whose models become NaN/inf is recorded as diverged and leaves the batch; it is
never an error.

The loop (:func:`run_rounds`) is shared by the IFCA-style methods: the problem family
enters through its loss kernel (:mod:`cflbounds.algorithms.kernels`), the method through
a composition of round pieces (:mod:`cflbounds.algorithms.rounds`); CFL-MGD
(:mod:`cflbounds.algorithms.cfl_mgd`) is this loop with momentum pieces.
"""
from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral, Real
from typing import Callable

import numpy as np
import torch

from .._threads import follow_load
from .._validation import (
    ArrayLike,
    Boolean,
    Constraint,
    Interval,
    NoneOK,
    Options,
    require,
    validate_params,
)
from ..synthetic.resampling import RESAMPLING_MODES
from ..synthetic.seeding import stream
from ._random import counter_hash, participation_mask
from ._slots import SlotBatch
from .initialization import INIT_SCHEMES, initial_models
from .losses import PROBLEM_NAMES, is_supported_problem, kernel_for
from .rounds import Aggregation, Round, estimate_clusters, gradient_averaging, model_averaging, one_hot
from .squared_loss import LOSS_CONVENTIONS
from .trace import ClusteringTrace

__all__ = ["ifca", "SlotView", "run_rounds", "RUN_PARAMETERS"]

_STREAM_RUNS = 3


@dataclass(frozen=True)
class SlotView:
    """What a monitor sees after ``iteration`` completed iterations (read-only).

    ``models`` ``(B', C, k, d)``, ``step_size`` and ``beta`` ``(B', C)``, ``assignment``
    ``(B', C, m)`` (each machine's choice in the last step); ``problem[b']`` and
    ``run[b', c]`` (``-1`` = empty slot) locate each slot in the trace; ``data`` the active
    problems' tensors (``features``/``responses`` for mixed linear regression).
    """

    iteration: int
    problem: np.ndarray
    run: np.ndarray
    models: torch.Tensor
    step_size: torch.Tensor
    assignment: torch.Tensor
    data: dict
    beta: torch.Tensor

    @property
    def features(self) -> torch.Tensor:
        return self.data["features"]

    @property
    def responses(self) -> torch.Tensor:
        return self.data["responses"]


_STEP_SIZES = Constraint(
    lambda v: ArrayLike.is_satisfied_by(v) and np.ndim(v) <= 1 and np.asarray(v).dtype != bool
    and not any(isinstance(x, (bool, np.bool_)) for x in np.atleast_1d(np.asarray(v, dtype=object)))
    and bool(np.all(np.asarray(v, float) > 0)),
    "a positive float or a non-empty sequence of positive floats",
)
_INIT = [Options(INIT_SCHEMES), ArrayLike]
# the parameters every IFCA-style method shares (CFL-MGD adds its own to these)
RUN_PARAMETERS = {
    "problem": [Constraint(is_supported_problem, PROBLEM_NAMES)],
    "iterations": [Interval(Integral, 1, None, closed="left")],
    "step_sizes": [_STEP_SIZES],
    "restarts": [Interval(Integral, 1, None, closed="left")],
    "k": [NoneOK, Interval(Integral, 1, None, closed="left")],
    "aggregation": [Options(("gradient", "model"))],
    "local_steps": [Interval(Integral, 1, None, closed="left")],
    "resample": [Options(RESAMPLING_MODES)],
    "participation": [Interval(Real, 0, 1, closed="right")],
    "init": _INIT,
    "init_distance_ratio": [Interval(Real, 0, None, closed="left")],
    "shared_inits": [Boolean],
    "loss": [Options(tuple(LOSS_CONVENTIONS))],
    "samples": [NoneOK, Interval(Integral, 1, None, closed="left")],
    "seed": [Interval(Integral, 0, None, closed="left")],
    "record_assignments": [Boolean],
    "monitor": [NoneOK, Constraint(callable, "a callable")],
    "monitor_every": [Interval(Integral, 1, None, closed="left")],
}


@validate_params(RUN_PARAMETERS)
def ifca(
    problem,
    *,
    iterations: int = 300,
    step_sizes=0.1,
    restarts: int = 1,
    k: int | None = None,
    aggregation: str = "gradient",
    local_steps: int = 1,
    resample: str = "none",
    participation: float = 1.0,
    init="official",
    init_distance_ratio: float = 0.25,
    shared_inits: bool = False,
    loss: str = "mean",
    samples: int | None = None,
    seed: int = 0,
    record_assignments: bool = False,
    monitor: Callable[[SlotView], np.ndarray] | None = None,
    monitor_every: int = 10,
) -> ClusteringTrace:
    """Run IFCA (Alg. 1) on every problem of the batch; see the module docstring.

    Parameters
    ----------
    problem : the batch of problems (data on the problem's device and dtype): mixed linear
        regression, a logistic mixture or per-client quadratics (:mod:`cflbounds.algorithms.kernels`).
    iterations : T, the number of parallel iterations.
    step_sizes : gamma; a sequence makes a step-size grid inside the batch.
    restarts : independent initialisations per problem (and per step size).
    k : number of models (default: the problem's number of clusters).
    aggregation : ``"gradient"`` (option I) or ``"model"`` (option II, ``local_steps`` = tau).
    resample : ``"none"`` (all n points each step), ``"split"`` (Sec. 5: 2T disjoint
        batches of n' = n/(2T)), ``"fresh"`` (two new draws of n points per step).
    participation : fraction of machines in M_t, drawn per run and iteration.
    init, init_distance_ratio, shared_inits : see :mod:`cflbounds.algorithms.initialization`.
    loss : loss convention, see :mod:`cflbounds.algorithms.squared_loss`.
    samples : points per client and batch of a problem without a stored data set
        (a ``QuadraticFederation``; see :mod:`cflbounds.algorithms.quadratic_loss`).
    seed : seed of the runs' initialisations and participation draws (combined with each
        problem's own seed).
    record_assignments : keep every machine's choice at every iteration.
    monitor : called every ``monitor_every`` iterations with a :class:`SlotView`; returns
        a ``(B', C)`` boolean mask of runs to retire (e.g. once their outcome is certain).
    """
    k = problem.k if k is None else k
    kernel = kernel_for(problem, loss, samples)
    require(k <= kernel.machines, f"IFCA needs k <= m: got k={k} models for m={kernel.machines} machines.")
    n_prime = kernel.n_prime(iterations, resample)
    steps = np.atleast_1d(np.asarray(step_sizes, dtype=float))
    init_models = initial_models(problem, init, restarts, k, seed, distance_ratio=init_distance_ratio,
                                 shared=shared_inits, **kernel.geometry())
    aggregate = gradient_averaging() if aggregation == "gradient" else model_averaging(local_steps)
    config = {"method": "ifca", "iterations": iterations, "k": k, "aggregation": aggregation,
              "local_steps": local_steps, "resample": resample, "n_prime": n_prime, "participation": participation,
              "loss": loss, "seed": seed}
    return run_rounds(problem, kernel, aggregate, k=k, iterations=iterations, steps=steps, betas=(0.0,),
                      restarts=restarts, init_models=init_models, resample=resample, n_prime=n_prime,
                      participation=participation, seed=seed, record_assignments=record_assignments, monitor=monitor,
                      monitor_every=monitor_every, config=config)


@follow_load()
def run_rounds(problem, kernel, aggregation: Aggregation, *, k, iterations, steps, betas, restarts, init_models,
               resample, n_prime, participation, seed, record_assignments, monitor, monitor_every, config,
               record_models=False) -> ClusteringTrace:
    """The batched loop of IFCA-style methods: every round estimates the clusters (Alg. 1
    lines 5-6) and applies ``aggregation`` (:mod:`cflbounds.algorithms.rounds`) to all runs.

    Runs are restarts x step sizes x momenta (``betas``; innermost), run ``r`` being restart
    ``r // (S NB)``, step size ``steps[(r // NB) % S]``, momentum ``betas[r % NB]``. A run's
    participation draws are keyed by (problem seed, ``seed``, restart, step size) only, so
    runs that differ only in beta see the same machines (common random numbers).
    """
    T, B, m, d, K = iterations, problem.batch_size, kernel.machines, problem.d, problem.k
    S, NB = len(steps), len(betas)
    R = restarts * S * NB
    device, dtype = problem.device, problem.dtype

    models = torch.as_tensor(np.repeat(init_models, S * NB, axis=1), dtype=dtype, device=device)  # (B, R, k, d)
    per_run = lambda values: torch.as_tensor(values, dtype=dtype, device=device).expand(B, R).clone()
    step = per_run(np.tile(np.repeat(steps, NB), restarts))
    beta = per_run(np.tile(betas, restarts * S))
    run_seeds = np.repeat(_run_seeds(problem.seeds, seed, restarts, steps), NB, axis=1)
    no_choice = torch.full((B, R, m), -1, device=device)
    aggregation_state = aggregation.init(models)
    state = {"models": models, "step": step, "beta": beta, "assignment": no_choice,
             **_flatten(aggregation_state)}
    batch = SlotBatch(kernel.data(), state, run_seeds)
    membership = torch.as_tensor(problem.membership, device=device)

    distances = np.full((B, R, T + 1, k, K), np.nan)
    misassigned = np.full((B, R, T), -1, dtype=np.int32)
    misassigned_labelled = np.full((B, R, T), -1, dtype=np.int32)
    assignments = np.full((B, R, T, m), -1, dtype=np.int8 if k < 128 else np.int32) if record_assignments else None
    iterates = np.full((B, R, T + 1, k, d), np.nan) if record_models else None
    diverged_at = np.full((B, R), -1)
    retired_at = np.full((B, R), -1)
    final_models = np.full((B, R, k, d), np.nan)

    def record_distances(t):
        table = _distance_table(batch.state["models"], batch.data["truth"])
        rows, slots = np.nonzero(batch.occupied)
        distances[batch.problem[rows], batch.run[rows, slots], t] = table[rows, slots]
        if iterates is not None:
            models = batch.state["models"][rows, slots]
            iterates[batch.problem[rows], batch.run[rows, slots], t] = models.double().cpu().numpy()
        return table

    def keep_final(mask):
        """Store the models of the slots in ``mask`` as their runs' final models; return the runs."""
        rows, slots = np.nonzero(mask)
        runs = (batch.problem[rows], batch.run[rows, slots])
        final_models[runs] = batch.state["models"][rows, slots].double().cpu().numpy()
        return runs

    def leave(mask, at, when):
        at[keep_final(mask)] = when
        batch.retire(mask)

    table = record_distances(0)
    for t in range(T):
        estimation, gradient = kernel.batches(batch.data, batch.problem, t, resample, n_prime)
        participating = None
        if participation < 1.0:
            mask = participation_mask(batch.seeds, t, m, participation)  # (B', C, m)
            participating = torch.as_tensor(np.swapaxes(mask, 1, 2), device=device)
        models = batch.state["models"]
        evaluation = kernel.evaluate(estimation, models)
        assignment = estimate_clusters(kernel.losses(evaluation), participating)  # (B', m, C)
        _record_assignment(batch, t, assignment, table, membership, misassigned, misassigned_labelled, assignments)
        batch.state["assignment"] = assignment.transpose(1, 2)

        reusable = evaluation if resample == "none" else None  # estimation and gradient on the same data
        round_ = Round(kernel, gradient, models, one_hot(assignment, k, dtype), reusable, batch.state["step"],
                       batch.state["beta"], m)
        updated, aggregation_state = aggregation.update(round_, _unflatten(aggregation_state, batch.state))

        finite = torch.isfinite(updated).flatten(2).all(dim=-1).cpu().numpy() & batch.occupied
        blown = batch.occupied & ~finite
        batch.state["models"] = torch.where(torch.as_tensor(finite, device=device)[..., None, None], updated, models)
        batch.state.update(_flatten(aggregation_state))
        if blown.any():
            leave(blown, diverged_at, t + 1)
        if batch.empty:
            break
        table = record_distances(t + 1)
        if monitor is not None and (t + 1) % monitor_every == 0 and t + 1 < T:
            view = SlotView(t + 1, batch.problem, batch.run, batch.state["models"], batch.state["step"],
                            batch.state["assignment"], batch.data, batch.state["beta"])
            done = np.asarray(monitor(view), dtype=bool) & batch.occupied
            if done.any():
                leave(done, retired_at, t + 1)
                if batch.empty:
                    break
                table = _distance_table(batch.state["models"], batch.data["truth"])

    if not batch.empty:
        keep_final(batch.occupied)
    return ClusteringTrace(
        distances=distances,
        misassigned=misassigned,
        misassigned_labelled=misassigned_labelled,
        diverged=diverged_at >= 0,
        diverged_at=diverged_at,
        retired_at=retired_at,
        final_models=final_models,
        step_sizes=steps,
        restarts=restarts,
        problem_seeds=problem.seeds,
        assignments=assignments,
        config=config,
        betas=np.asarray(betas, dtype=float),
        models=iterates,
    )


def _flatten(state) -> dict:
    """An aggregation's (nested) NamedTuple state as flat per-run tensors ``{"agg.path": tensor}``."""
    flat = {}

    def walk(node, prefix):
        for name, value in zip(node._fields, node):
            if isinstance(value, tuple):
                walk(value, f"{prefix}{name}.")
            else:
                flat[prefix + name] = value

    walk(state, "agg.")
    return flat


def _unflatten(template, tensors: dict):
    """The NamedTuple of ``template``'s structure with the (compacted) tensors of the batch."""

    def build(node, prefix):
        return type(node)(*(build(value, f"{prefix}{name}.") if isinstance(value, tuple) else tensors[prefix + name]
                            for name, value in zip(node._fields, node)))

    return build(template, "agg.")


def _run_seeds(problem_seeds, seed, restarts, steps) -> np.ndarray:
    """``(B, R)`` seeds of the runs' participation draws, keyed by (problem seed, seed,
    restart, step size): a run is the same run inside any grid of restarts and step sizes."""
    base = np.array([stream(s, _STREAM_RUNS, seed).integers(2**62) for s in problem_seeds], dtype=np.uint64)
    restart = np.repeat(np.arange(restarts, dtype=np.uint64), len(steps))
    step_bits = np.tile(steps.astype(np.float64).view(np.uint64), restarts)
    return counter_hash(base[:, None], restart[None, :], step_bits[None, :])


def _distance_table(models: torch.Tensor, theta_star: torch.Tensor) -> np.ndarray:
    """``||theta_j - theta*_j'||`` in float64, ``(B', C, k, k*)``, computed without the
    ``|a|^2 - 2ab + |b|^2`` expansion (no cancellation near the truth)."""
    B, C, k, d = models.shape
    table = torch.cdist(models.double().reshape(B, C * k, d), theta_star.double(),
                        compute_mode="donot_use_mm_for_euclid_dist")
    return table.reshape(B, C, k, -1).cpu().numpy()


def _record_assignment(batch, t, assignment, table, membership, misassigned, misassigned_labelled, assignments):
    choice = assignment.cpu().numpy()  # (B', m, C)
    present = choice >= 0
    nearest_truth = np.argmin(np.nan_to_num(table, nan=np.inf), axis=-1)  # (B', C, k)
    truth_of_choice = np.take_along_axis(
        np.swapaxes(nearest_truth, 1, 2), np.clip(choice, 0, None), axis=1
    )  # (B', m, C): nearest truth of each machine's model
    true_cluster = membership.cpu().numpy()[None, :, None]
    wrong_nearest = ((truth_of_choice != true_cluster) & present).sum(axis=1)
    wrong_labelled = ((choice != true_cluster) & present).sum(axis=1)
    rows, slots = np.nonzero(batch.occupied)
    runs = (batch.problem[rows], batch.run[rows, slots])
    misassigned[runs[0], runs[1], t] = wrong_nearest[rows, slots]
    misassigned_labelled[runs[0], runs[1], t] = wrong_labelled[rows, slots]
    if assignments is not None:
        assignments[runs[0], runs[1], t] = choice[rows, :, slots]
