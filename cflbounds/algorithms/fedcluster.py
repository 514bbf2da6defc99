"""FedCluster with local SGD, Algorithm 1 of Chen, Chen, Zhou & Kailkhura (2020), batched.

One call runs ``B`` problems x ``C`` step sizes as one tensor computation (no Python loop
over devices, problems or runs). Round ``j`` (Alg. 1; Appendix A's reshuffle):

1. the cluster order ``sigma_j`` is a uniform random permutation, drawn per problem and
   round (``reshuffle=False`` keeps the order 1..M);
2. with partial participation (the remark after Alg. 1) each cluster activates
   ``max(1, round(participation * |S_K|))`` of its devices, uniformly, per round;
3. cycle ``K``: the active devices of ``S_sigma_j(K+1)`` start from ``W_{jM+K}`` and run
   ``E`` single-sample SGD steps ``w <- w - eta_{j,K,t} grad f(w; xi)`` in parallel; the
   server sets ``W_{jM+K+1} = sum_k (p_k / q) w_k``.

FedAvg is the same code with one cluster holding every device (:func:`fedavg`): per
round every device downloads once, runs ``E`` local steps and uploads once in both, so
equal rounds and local steps mean equal resources (Assumption 1).

Samples: each device is active in exactly one cycle per round, so device ``k``'s ``E``
samples of round ``j`` are ``problem.draw(E, j)[:, k]`` (counter-based, keyed by (round,
device, local step)): a run's samples do not depend on how problems are batched. The
``C`` runs of a problem share its samples and cluster orders (common random numbers).

A ``monitor`` sees every iterate that Assumption 2.3 speaks of: it is called before each
local step with the active cluster's local models ``w_{j,K,t}`` ``(B, S, C, d)``, their
device positions ``(B, S)`` and aggregation weights ``(B, S)`` (0 = padding or inactive;
``w_bar_{j,K,t} = sum weight * w``). The method itself never computes a constant.

A problem provides ``weights``, ``seeds``, ``draw(n, draw_index)`` ``(B, N, n, ...)`` (n
samples per device, each whatever its ``sample_gradients`` reads: a point, or an (x, y)
row) and ``sample_gradients(models, samples, clients=...)`` on a ``(B, N')`` subset of devices
(:class:`~cflbounds.synthetic.quadratics.QuadraticFederation`,
:class:`~cflbounds.synthetic.nonconvex.NonconvexFederation`,
:class:`~cflbounds.synthetic.device_regression.DeviceRegression`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable
from numbers import Integral, Real

import numpy as np
import torch

from .._threads import follow_load
from .._validation import ArrayLike, Boolean, Constraint, Interval, NoneOK, Options, require, validate_params
from ..synthetic.counter_random import counter_hash, counter_uniform

__all__ = ["FedClusterTrace", "fedcluster", "fedavg", "SCHEDULES", "PARTIAL_WEIGHTS"]

SCHEDULES = ("constant", "inverse-sqrt")  # eta_{j,K,t} = eta, or eta / sqrt(j + 1) (non-increasing, Lemma 2)
PARTIAL_WEIGHTS = ("renormalized", "paper")  # p_k / sum_{active} p_k, or p_k / q_K as printed in Alg. 1
_STREAM_ORDER, _STREAM_PARTICIPATION = 21, 22


@dataclass(frozen=True)
class FedClusterTrace:
    """A batch of FedCluster runs: ``B`` problems x ``C`` step sizes, ``T`` rounds.

    ``round_models[b, c, j]`` is ``W_{jM}`` (the model at the start of round j; ``j = T``
    the output), float64. ``orders[b, j]`` is round j's cluster order (0-based labels).
    """

    round_models: np.ndarray  # (B, C, T + 1, d)
    diverged: np.ndarray  # (B, C) bool: a model became NaN/inf
    step_sizes: np.ndarray  # (C,)
    problem_seeds: tuple
    orders: np.ndarray | None = None  # (B, T, M)
    config: dict = field(default_factory=dict)

    @property
    def rounds(self) -> int:
        return self.round_models.shape[2] - 1


def _is_device_problem(problem) -> bool:
    return all(hasattr(problem, name) for name in ("weights", "seeds", "draw", "sample_gradients", "batch_size"))


_PROBLEM = Constraint(_is_device_problem,
                      "a device problem (e.g. QuadraticFederation, NonconvexFederation or DeviceRegression)")
_LABELS = Constraint(lambda v: np.ndim(v) == 1 and len(v) > 0 and np.asarray(v).dtype.kind in "iu"
                     and bool(np.all(np.asarray(v) >= 0)), "a 1-d array of non-negative int cluster labels")
_STEP_SIZES = Constraint(
    lambda v: ArrayLike.is_satisfied_by(v) and np.ndim(v) <= 1 and np.asarray(v).dtype.kind in "fiu"
    and bool(np.all(np.asarray(v, float) > 0)),
    "a positive float or a non-empty sequence of positive floats",
)
_COUNT = [Interval(Integral, 1, None, closed="left")]


@validate_params({
    "problem": [_PROBLEM],
    "membership": [_LABELS],
    "rounds": _COUNT,
    "local_steps": _COUNT,
    "step_sizes": [_STEP_SIZES],
    "init": [ArrayLike],
    "schedule": [Options(SCHEDULES)],
    "participation": [Interval(Real, 0, 1, closed="right")],
    "partial_weights": [Options(PARTIAL_WEIGHTS)],
    "reshuffle": [Boolean],
    "monitor": [NoneOK, Constraint(callable, "a callable")],
    "seed": [Interval(Integral, 0, None, closed="left")],
    "record_orders": [Boolean],
})
@follow_load()
def fedcluster(problem, membership, *, rounds: int, local_steps: int, step_sizes, init, schedule: str = "constant",
               participation: float = 1.0, partial_weights: str = "renormalized", reshuffle: bool = True,
               monitor: Callable | None = None, seed: int = 0, record_orders: bool = False) -> FedClusterTrace:
    """Run FedCluster (Alg. 1) on every problem of the batch; see the module docstring.

    Parameters
    ----------
    problem : the batch of device problems.
    membership : cluster label of each device ``(N,)``, labels ``0..M-1`` all used.
    rounds, local_steps : T and E.
    step_sizes : eta (``(C,)``: one run per step size); Theorem 1 uses ``(TME)^(-1/2)``.
    init : ``W_0``, ``(d,)`` for every problem or ``(B, d)``.
    schedule : ``constant`` or ``inverse-sqrt`` (``eta / sqrt(j + 1)`` in round j).
    participation : fraction of each cluster's devices active per round (1 = full).
    partial_weights : aggregation under partial participation: ``renormalized``
        (``p_k / sum_active p_k``) or ``paper`` (``p_k / q_K`` as printed in Alg. 1).
    reshuffle : a new random cluster order every round (the theorem's setting).
    monitor : called as ``monitor(local, clients, weight)`` before every local step (module docstring).
    seed : seed of the cluster orders and participation draws (with each problem's seed).
    record_orders : keep every round's cluster order.
    """
    membership = np.asarray(membership, dtype=np.int64)
    N = membership.size
    M = int(membership.max()) + 1
    weights = np.asarray(problem.weights, dtype=float)
    require(weights.shape == (N,), f"membership needs one label per device: {N} labels for {weights.size} devices.")
    require(np.array_equal(np.unique(membership), np.arange(M)), f"cluster labels must be 0..M-1, each used; "
            f"got {sorted(set(membership.tolist()))}.")
    B, d = problem.batch_size, problem.d
    init = np.tile(np.asarray(init, dtype=float), (B, 1)) if np.ndim(init) == 1 else np.asarray(init, dtype=float)
    require(init.shape == (B, d), f"init must be (d,) = ({d},) or (B, d) = ({B}, {d}); got {np.shape(init)}.")
    steps = np.atleast_1d(np.asarray(step_sizes, dtype=float))
    return _run(problem, membership, M, rounds, local_steps, steps, init, schedule, participation, partial_weights,
                reshuffle, monitor, seed, record_orders)


def fedavg(problem, **options) -> FedClusterTrace:
    """FedAvg with local SGD: :func:`fedcluster` with one cluster holding every device
    (same options; equal ``rounds`` and ``local_steps`` mean equal resources)."""
    return fedcluster(problem, np.zeros(len(problem.weights), dtype=np.int64), **options)


def _cluster_table(membership, weights, M):
    """Each cluster's devices ``(M, S)`` (padded with the cluster's first device) and their
    aggregation weights ``p_k / q_K`` (0 on padding)."""
    sizes = np.bincount(membership, minlength=M)
    S = int(sizes.max())
    members = np.zeros((M, S), dtype=np.int64)
    share = np.zeros((M, S))
    q = np.bincount(membership, weights=weights, minlength=M)
    for K in range(M):  # set-up, once per call
        devices = np.flatnonzero(membership == K)
        members[K] = np.concatenate([devices, np.full(S - devices.size, devices[0])])
        share[K, :devices.size] = weights[devices] / q[K]
    return members, share, sizes


def _orders(seeds, j, M, reshuffle):
    """Round j's cluster order per problem ``(B, M)``: a permutation keyed by (seed, j)."""
    if not reshuffle:
        return np.tile(np.arange(M), (seeds.size, 1))
    return np.argsort(counter_uniform(seeds, j, M), axis=-1, kind="stable")


def _participation_share(seeds, j, members, share, sizes, fraction, partial_weights):
    """Aggregation weights ``(B, M, S)`` after each cluster activates ``max(1, round(fraction
    |S_K|))`` uniformly chosen devices in round j (0 for inactive devices)."""
    B = seeds.size
    if fraction >= 1.0:
        return np.repeat(share[None], B, axis=0)
    uniforms = counter_uniform(seeds, j, members.max() + 1)[:, members]  # (B, M, S)
    uniforms = np.where(share > 0, uniforms, np.inf)  # padding is never chosen
    rank = np.argsort(np.argsort(uniforms, axis=-1, kind="stable"), axis=-1, kind="stable")
    active = rank < np.maximum(1, np.round(fraction * sizes)).astype(int)[None, :, None]
    chosen = np.where(active, share, 0.0)
    if partial_weights == "renormalized":
        chosen = chosen / chosen.sum(axis=-1, keepdims=True)
    return chosen


def _run(problem, membership, M, T, E, steps, init, schedule, participation, partial_weights, reshuffle, monitor,
         seed, record_orders) -> FedClusterTrace:
    B, d, C = problem.batch_size, problem.d, steps.size
    device, dtype = problem.device, problem.dtype
    members, share, sizes = _cluster_table(membership, np.asarray(problem.weights, dtype=float), M)
    base = np.asarray(problem.seeds, dtype=np.uint64)
    order_seeds = counter_hash(base, _STREAM_ORDER, seed)
    participation_seeds = counter_hash(base, _STREAM_PARTICIPATION, seed)
    members_t = torch.as_tensor(members, device=device)
    rows = torch.arange(B, device=device)[:, None]
    eta = torch.as_tensor(steps, dtype=dtype, device=device)[None, None, :, None]  # (1, 1, C, 1)

    W = torch.as_tensor(init, dtype=dtype, device=device)[:, None, :].repeat(1, C, 1)  # (B, C, d)
    round_models = np.empty((B, C, T + 1, d))
    round_models[:, :, 0] = W.double().cpu().numpy()
    orders = np.empty((B, T, M), dtype=np.int32) if record_orders else None

    for j in range(T):
        samples = problem.draw(E, j)  # (B, N, E, ...): device k's samples of round j
        order = _orders(order_seeds, j, M, reshuffle)
        if orders is not None:
            orders[:, j] = order
        if j == 0 or participation < 1.0:
            round_share = torch.as_tensor(
                _participation_share(participation_seeds, j, members, share, sizes, participation, partial_weights),
                dtype=dtype, device=device)  # (B, M, S)
        scale = 1.0 if schedule == "constant" else 1.0 / np.sqrt(j + 1.0)
        order_t = torch.as_tensor(order, device=device)
        for K in range(M):
            cluster = order_t[:, K]  # (B,)
            clients = members_t[cluster]  # (B, S)
            weight = round_share[rows[:, 0], cluster]  # (B, S)
            local_samples = samples[rows, clients]  # (B, S, E, ...)
            local = W[:, None].expand(B, clients.shape[1], C, d)
            for t in range(E):
                if monitor is not None:
                    monitor(local, clients, weight)
                gradient = problem.sample_gradients(local, local_samples[:, :, t:t + 1], clients=clients)
                local = local - (scale * eta) * gradient
            W = torch.einsum("bs,bscd->bcd", weight, local)
        round_models[:, :, j + 1] = W.double().cpu().numpy()

    return FedClusterTrace(
        round_models=round_models,
        diverged=~np.isfinite(round_models).all(axis=(2, 3)),
        step_sizes=steps,
        problem_seeds=tuple(problem.seeds),
        orders=orders,
        config={"method": "fedcluster" if M > 1 else "fedavg", "clusters": M, "rounds": T, "local_steps": E,
                "schedule": schedule, "participation": participation, "partial_weights": partial_weights,
                "reshuffle": reshuffle, "seed": seed},
    )
