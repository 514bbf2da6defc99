"""FedProx as Li, Sahu, Zaheer, Sanjabi, Talwalkar & Smith write it ("Federated Optimization in
Heterogeneous Networks", MLSys 2020, arXiv:1812.06127; the round as CATALOGUE.md states it),
batched over runs.

Round ``t``: the server picks ``K`` devices ``S_t``; each returns a ``gamma``-inexact minimiser
``w_k`` of its local problem

    h_k(w; w^t) = F_k(w) + (mu/2) ||w - w^t||^2,    ||grad h_k(w_k; w^t)|| <= gamma ||grad F_k(w^t)||

(``grad h_k(w^t; w^t) = grad F_k(w^t)``: gamma = 0 is the exact solution, gamma = 1 allows
``w_k = w^t``), and the server aggregates. Two samplings (``sampling``):

* ``"paper"``: "each device k chosen with probability p_k", ``K`` draws **with replacement**,
  ``w^(t+1) = (1/K) sum_{k in S_t} w_k`` (a device drawn twice counts twice): the analysis'
  scheme (:func:`~.client_sampling.sampled_clients` ``scheme-I``);
* ``"experiments"``: what the authors' code runs (github.com/litian96/FedProx,
  ``flearn/trainers/fedbase.py``: ``select_clients`` draws ``K`` **uniformly without
  replacement**, the solutions are averaged with weights ``n_k``): ``w^(t+1) = sum_{k in S_t}
  p_k w_k / sum_{j in S_t} p_j`` (``mcmahan``; docs/papers.md).

Local solvers (``local_solver``):

* ``"exact"``: the proximal point in closed form, ``(A_k + mu I)^-1 (A_k b_k + mu w^t)`` for
  quadratics (the problem's ``proximal_map``, precomputed once per run);
* ``"gd"``: gradient descent on ``h_k`` from ``w^t`` with full gradients,
  ``w <- w - eta (grad F_k(w) + mu (w - w^t))`` (the shared loop
  :func:`~.local_updates.client_updates` with its proximal term): ``local_steps`` steps, or,
  with ``inexactness = gamma``, until the device's solution is ``gamma``-inexact (it stops at
  the first iterate with ``||grad h_k|| <= gamma ||grad F_k(w^t)||``), at most ``local_steps``.

Every round records, per sampled slot, the realised ``gamma_k^t = ||grad h_k(w_k; w^t)|| /
||grad F_k(w^t)||`` (0 when both are 0), the steps taken and ``||grad F_k(w^t)||``; per iterate,
``||grad f(w^t)||^2`` and FedProx's ``B(w^t)`` (Definition 3), from the devices' gradients at
``w^t`` the round computes anyway (in the problem's dtype; on quadratics the problem's
``local_dissimilarity`` gives B in closed form near ``w*`` too). A run whose
iterate stops being finite is recorded as diverged (:class:`~.iterate_trace.IterateTrace`),
never an exception.

Every device solves its local problem each round and only the sampled ones are aggregated (as
:mod:`.fedavg_noniid` runs FedAvg): the same models as solving the sampled devices alone (the
solves are deterministic), one batched solve for all ``N`` devices rather than a gather of the
``K`` sampled ones' matrices each round (``benchmarks/bench_catalogue.py``). With the stopping
rule the loop runs until every device has stopped (or the cap): the sampled devices' steps and
solutions are their own.

Randomness: the sampling uses the stream of :mod:`.local_updates` (``STREAM_SAMPLING``).
"""
from __future__ import annotations

from dataclasses import dataclass
from numbers import Real
from typing import NamedTuple

import numpy as np
import torch

from .._threads import follow_load
from .._validation import Constraint, Interval, NoneOK, Options, require, validate_params
from ..synthetic.heterogeneous_quadratics import matvec
from .client_sampling import sampled_clients
from .iterate_trace import IterateTrace, trace_of
from .local_updates import (COUNT, INIT, POSITIVE_STEP, PROBLEM, SEED, STREAM_SAMPLING, check_step, client_updates,
                            initial_points, run_keys, step_schedule)
from ..synthetic.counter_random import counter_hash

__all__ = ["fedprox", "FedProxTrace", "local_solutions", "LocalSolutions", "SAMPLINGS", "LOCAL_SOLVERS"]

SAMPLINGS = {"paper": "scheme-I", "experiments": "mcmahan"}  # the client_sampling scheme of each
LOCAL_SOLVERS = ("exact", "gd")

_MU = Constraint(lambda v: not isinstance(v, (bool, str)) and np.ndim(v) <= 1 and np.size(v) > 0
                 and bool(np.all(np.isfinite(np.asarray(v, dtype=float))))
                 and bool(np.all(np.asarray(v, dtype=float) >= 0)), "a non-negative float or one per run")


@dataclass(frozen=True)
class FedProxTrace(IterateTrace):
    """A batch of FedProx runs: the server models ``w^t`` (``points``, ``t = 0..R``) with
    :class:`IterateTrace`'s gaps and divergence, and

    ``sampled_clients`` ``(B, R, K)`` the devices of each round (repeats possible under the
    paper's sampling), ``slot_weights`` ``(B, R, K)`` their aggregation weights;
    ``inexactness`` ``(B, R, K)`` the realised ``gamma_k^t``; ``local_steps_taken`` ``(B, R, K)``
    (0 for exact solves); ``client_gradient_norm`` ``(B, R, K)`` ``||grad F_k(w^t)||``;
    ``gradient_norm_sq`` ``(B, R + 1)`` ``||grad f(w^t)||^2``; ``dissimilarity`` ``(B, R + 1)``
    ``B(w^t) = sqrt(E_k ||grad F_k(w^t)||^2 / ||grad f(w^t)||^2)`` (``inf`` at a stationary point).
    Entries of a diverged run after its divergence are not finite."""

    sampled_clients: np.ndarray | None = None
    slot_weights: np.ndarray | None = None
    inexactness: np.ndarray | None = None
    local_steps_taken: np.ndarray | None = None
    client_gradient_norm: np.ndarray | None = None
    gradient_norm_sq: np.ndarray | None = None
    dissimilarity: np.ndarray | None = None


@validate_params({
    "problem": [PROBLEM],
    "rounds": COUNT,
    "mu": [_MU],
    "sampled": COUNT,
    "sampling": [Options(tuple(SAMPLINGS))],
    "local_solver": [Options(LOCAL_SOLVERS)],
    "local_steps": [NoneOK, *COUNT],
    "local_step_size": [NoneOK, POSITIVE_STEP],
    "inexactness": [NoneOK, Interval(Real, 0, 1, closed="both")],
    "init": INIT,
    "seed": SEED,
})
@follow_load()
def fedprox(problem, *, rounds: int, mu, sampled: int, sampling: str = "paper", local_solver: str = "exact",
            local_steps: int | None = None, local_step_size=None, inexactness: float | None = None, init=None,
            seed=0) -> FedProxTrace:
    """Run FedProx (module docstring) for ``rounds`` rounds on every run of the batch.

    Parameters
    ----------
    problem : the batch of problems (one run each); ``"exact"`` needs its ``proximal_map``
        (:class:`~cflbounds.synthetic.heterogeneous_quadratics.HeterogeneousQuadratics`).
    mu : the proximal weight (a float or one per run), ``mu > -min_k lambda_min(grad^2 F_k)``
        (``mu > L_minus``: every ``h_k`` strongly convex; 0 is allowed for strongly convex
        clients, where the exact solve is the client's minimiser).
    sampled : K, the devices per round (``K <= N`` under ``"experiments"``).
    sampling : ``"paper"`` or ``"experiments"``.
    local_solver : ``"exact"`` or ``"gd"``.
    local_steps : ``"gd"``: the steps per round, or the most steps with ``inexactness``.
    local_step_size : ``"gd"``'s step (a float or one per run); default ``1/(L + mu)``.
    inexactness : ``"gd"``: gamma in [0, 1], stop each device once its solution is gamma-inexact.
    init : ``w^0``, ``(d,)`` or ``(B, d)``; zeros by default.
    seed : one int, or one per run (the sampling's randomness).
    """
    B, N = problem.batch_size, problem.clients
    mus = _proximal_weights(problem, mu)
    require(sampling == "paper" or sampled <= N, f"The 'sampled' parameter of fedprox must be an int in the range "
            f"[1, {N}] with sampling='experiments' (K of N={N} devices without replacement). Got {sampled!r} instead.")
    solver = _LocalSolver(problem, mus, local_solver, local_steps, local_step_size, inexactness)
    x = initial_points(problem, init)
    keys = run_keys(problem, seed)
    config = {"method": "fedprox", "rounds": rounds, "mu": mus.tolist(), "sampled": sampled, "sampling": sampling,
              "local_solver": local_solver, "local_steps": local_steps, "local_step_size": repr(solver.step_size),
              "inexactness": inexactness, "seed": np.asarray(seed).tolist()}
    return _run(problem, x, keys, rounds, sampled, SAMPLINGS[sampling], solver, config)


class LocalSolutions(NamedTuple):
    """Every device's local solution of one round from ``w^t``: ``solutions`` ``(B, N, d)``
    float64, the realised ``inexactness`` ``gamma_k = ||grad h_k(w_k; w^t)|| / ||grad F_k(w^t)||``
    ``(B, N)`` (0 when both are 0), ``local_steps_taken`` ``(B, N)`` (0 for exact solves) and
    ``client_gradient_norm`` ``||grad F_k(w^t)||`` ``(B, N)``."""

    solutions: np.ndarray
    inexactness: np.ndarray
    local_steps_taken: np.ndarray
    client_gradient_norm: np.ndarray


@validate_params({
    "problem": [PROBLEM],
    "points": INIT,
    "mu": [_MU],
    "local_solver": [Options(LOCAL_SOLVERS)],
    "local_steps": [NoneOK, *COUNT],
    "local_step_size": [NoneOK, POSITIVE_STEP],
    "inexactness": [NoneOK, Interval(Real, 0, 1, closed="both")],
})
def local_solutions(problem, points, *, mu, local_solver: str = "exact", local_steps: int | None = None,
                    local_step_size=None, inexactness: float | None = None) -> LocalSolutions:
    """The local work of one FedProx round from ``w^t = points`` (``(d,)`` or ``(B, d)``): every
    device's solution of ``h_k(.; w^t)`` by the round's own solver (the options as for
    :func:`fedprox`), before any sampling. What the expectation over ``S_t`` of Theorem 4 is
    taken over: the paper's sampling averages ``K`` of these drawn i.i.d. from ``p_k``."""
    solver = _LocalSolver(problem, _proximal_weights(problem, mu), local_solver, local_steps, local_step_size,
                          inexactness)
    x = initial_points(problem, points)
    _, local, realised, taken, norm = solver.solve(x)
    return LocalSolutions(local.double().cpu().numpy(), realised.double().cpu().numpy(), taken,
                          norm.double().cpu().numpy())


def _proximal_weights(problem, mu) -> np.ndarray:
    """``mu`` as one value per run, each above ``L_minus`` (every ``h_k`` strongly convex)."""
    B = problem.batch_size
    mus = np.broadcast_to(np.asarray(mu, dtype=float), (B,)).copy() if np.ndim(mu) == 0 or np.size(mu) == B else None
    require(mus is not None, f"The 'mu' parameter must be one value or {B} (one per run); got shape {np.shape(mu)}.")
    floor = -np.asarray(problem.strong_convexity, dtype=float)
    bad = int(np.argmax(mus <= floor))
    require(bool(np.all(mus > floor)), f"The 'mu' parameter of fedprox must be greater than L_minus = -min_k "
            f"lambda_min(grad^2 F_k) = {floor[bad]!r} (every h_k strongly convex). Got {mus[bad]!r} instead (run {bad}).")
    return mus


class _LocalSolver:
    """The devices' local solver of a batch of runs (module docstring), checked and set up once:
    :meth:`solve` gives every device's solution from the round's start."""

    def __init__(self, problem, mus, solver, E, eta, gamma):
        if solver == "exact":
            require(E is None and eta is None and gamma is None,
                    "local_steps, local_step_size and inexactness apply to local_solver='gd' only; the exact solver "
                    "takes none of them.")
            require(hasattr(problem, "proximal_map"), f"local_solver='exact' needs the problem's proximal map in "
                    f"closed form (quadratics); {type(problem).__name__} has none: use local_solver='gd'.")
        else:
            require(E is not None, "local_solver='gd' needs 'local_steps' (the steps, or the most steps with "
                    "'inexactness').")
            if eta is not None:
                check_step(problem, "local_step_size", eta)
            else:
                eta = 1.0 / (np.asarray(problem.smoothness, dtype=float) + mus)
        self.problem, self.solver, self.steps, self.step_size, self.gamma = problem, solver, E, eta, gamma
        self.oracle = problem.oracle()
        self.mu = torch.as_tensor(mus, dtype=problem.dtype, device=problem.device)[:, None, None]
        if solver == "exact":
            self.operator, self.offset = problem.proximal_map(mus)
        else:
            self.step = step_schedule(eta, problem.batch_size, problem.dtype, problem.device)

    def solve(self, x: torch.Tensor):
        """From ``w^t = x`` ``(B, d)``: the devices' gradients there ``(B, N, d)``, their solutions
        ``(B, N, d)``, realised gamma ``(B, N)``, steps taken ``(B, N)`` (NumPy) and
        ``||grad F_k(w^t)||`` ``(B, N)``."""
        B, N, d = self.problem.batch_size, self.problem.clients, self.problem.d
        start = x[:, None].expand(B, N, d).contiguous()
        start_gradient = self.oracle.gradient(start)
        start_norm = start_gradient.norm(dim=-1)  # ||grad F_k(w^t)|| = ||grad h_k(w^t; w^t)||, (B, N)
        taken = np.zeros((B, N), dtype=np.int64)
        if self.solver == "exact":
            local = matvec(self.operator, start) + self.offset
        else:
            local = _gradient_descent(self.oracle, start, start_norm, self.mu, self.step, self.steps, self.gamma, taken)
        residual = (self.oracle.gradient(local) + self.mu * (local - start)).norm(dim=-1)
        realised = torch.where(residual == 0, torch.zeros_like(residual), residual / start_norm)
        return start_gradient, local, realised, taken, start_norm


def _run(problem, x, keys, R, K, scheme, solver, config) -> FedProxTrace:
    B, N, d = problem.batch_size, problem.clients, problem.d
    dtype, device = problem.dtype, problem.device
    rows = torch.arange(B, device=device)[:, None]
    sampling_keys = counter_hash(keys, STREAM_SAMPLING)
    probabilities = np.asarray(problem.weights, dtype=float)
    points = np.empty((B, R + 1, d))
    points[:, 0] = x.double().cpu().numpy()
    record = {name: np.empty((B, R, K)) for name in ("slot_weights", "inexactness", "client_gradient_norm")}
    chosen_all = np.empty((B, R, K), dtype=np.int64)
    steps_taken = np.zeros((B, R, K), dtype=np.int64)
    client_weights = torch.as_tensor(probabilities, dtype=dtype, device=device)
    spread, mean_sq = np.empty((B, R + 1)), np.empty((B, R + 1))  # E_k ||grad F_k(w^t)||^2, ||grad f(w^t)||^2
    for r in range(R):
        chosen, weights = sampled_clients(scheme, sampling_keys, r, probabilities, K)
        clients = torch.as_tensor(chosen, device=device)
        start_gradient, local, realised, taken, start_norm = solver.solve(x)
        spread[:, r], mean_sq[:, r] = _moments(start_gradient, start_norm, client_weights)
        x = torch.einsum("bk,bkd->bd", torch.as_tensor(weights, dtype=dtype, device=device), local[rows, clients])
        points[:, r + 1] = x.double().cpu().numpy()
        chosen_all[:, r], record["slot_weights"][:, r] = chosen, weights
        record["inexactness"][:, r] = realised[rows, clients].double().cpu().numpy()
        record["client_gradient_norm"][:, r] = start_norm[rows, clients].double().cpu().numpy()
        steps_taken[:, r] = np.take_along_axis(taken, chosen, axis=1)
    last = solver.oracle.gradient(x[:, None].expand(B, N, d).contiguous())
    spread[:, R], mean_sq[:, R] = _moments(last, last.norm(dim=-1), client_weights)
    with np.errstate(all="ignore"):
        dissimilarity = np.where(mean_sq > 0, np.sqrt(spread / mean_sq), np.inf)
    return trace_of(problem, points, np.arange(R + 1), keys, config, kind=FedProxTrace, sampled_clients=chosen_all,
                    local_steps_taken=steps_taken, gradient_norm_sq=mean_sq, dissimilarity=dissimilarity, **record)


def _moments(gradients, norms, weights):
    """``(E_k ||grad F_k||^2, ||sum_k p_k grad F_k||^2)`` per run from every device's gradient."""
    mean = torch.einsum("n,bnd->bd", weights, gradients)
    return (norms.square() @ weights).double().cpu().numpy(), mean.square().sum(-1).double().cpu().numpy()


def _gradient_descent(oracle, start, start_norm, mu, step, E, gamma, taken) -> torch.Tensor:
    """``E`` gradient steps on every ``h_k(.; w^t)`` (or until gamma-inexact); counts each
    device's steps into ``taken`` ``(B, N)``."""
    if gamma is None:
        taken[:] = E
        return client_updates(oracle, start, None, first_step=0, steps=E, step=step, proximal=mu)
    threshold = gamma * start_norm

    def done(direction):
        stopped = direction.norm(dim=-1) <= threshold
        taken[:] += (~stopped).cpu().numpy()
        return stopped

    return client_updates(oracle, start, None, first_step=0, steps=E, step=step, proximal=mu, done=done)
