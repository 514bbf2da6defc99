"""Composable pieces of one round of an IFCA-style method (optax style).

A round (Alg. 1 of IFCA and of CFL-MGD) is cluster estimation followed by an aggregation.
Each aggregation is a pair of pure functions with a NamedTuple state,
``Aggregation(init, update)``: ``init(models)`` -> state, ``update(round, state)`` ->
``(new models, new state)``, where :class:`Round` holds what the server sees in this
round. Methods are compositions, not copies:

* IFCA option I  = ``gradient_averaging()``;           option II = ``model_averaging(H)``;
* CFL-MGD option I, heavy-ball form (eq. 7/32) = ``chain(gradient_averaging(lagged), heavy_ball())``;
* CFL-MGD option I, client/cluster-momentum form (eq. 9, Alg. 1 lines 8-10, 15) = ``client_momentum(lagged)``;
* CFL-MGD option II (eq. 10, LocalUpdate lines 19-22) = ``model_averaging(H, momentum=True)``.

State tensors are per run, ``(B', C, ...)``, so the batch layout can compact them when
runs leave. Hyperparameters that vary over the runs of a grid (step size eta, momentum
beta) come in the round as ``(B', C)`` tensors.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import torch

__all__ = [
    "Round",
    "Aggregation",
    "estimate_clusters",
    "one_hot",
    "cluster_sums",
    "gradient_averaging",
    "model_averaging",
    "heavy_ball",
    "client_momentum",
    "chain",
]


class Round(NamedTuple):
    """What the server's aggregation sees in one round.

    ``kernel`` the problem family's loss kernel; ``gradient`` the round's gradient data;
    ``models`` ``(B, C, k, d)``; ``chosen`` the one-hot assignment ``(B, m, C, k)``
    (non-participants all zero); ``evaluation`` the cluster-estimation evaluation when it
    was computed on the gradient data (else None); ``step`` eta and ``beta`` ``(B, C)``;
    ``machines`` m, the total machine count (Alg. 1 divides by it).
    """

    kernel: object
    gradient: tuple
    models: torch.Tensor
    chosen: torch.Tensor
    evaluation: object
    step: torch.Tensor
    beta: torch.Tensor
    machines: int


class Aggregation(NamedTuple):
    init: Callable
    update: Callable


class NoState(NamedTuple):
    pass


# -- cluster estimation (Alg. 1 lines 5-6) --------------------------------------------------
def estimate_clusters(losses: torch.Tensor, participating: torch.Tensor | None = None) -> torch.Tensor:
    """``argmin_j F_i(theta_j)`` per machine and run, ``(B, m, C)``, from ``(B, m, C, k)`` losses.

    Ties go to the lowest index (``torch.argmin`` returns the first minimum). Machines
    outside M_t get ``-1``.
    """
    assignment = losses.argmin(dim=-1)
    if participating is not None:
        assignment = torch.where(participating, assignment, -1)
    return assignment


def one_hot(assignment: torch.Tensor, k: int, dtype: torch.dtype) -> torch.Tensor:
    """``s_{i,j}`` (``r_{i,p}`` in CFL-MGD) as ``(B, m, C, k)``; non-participants are all-zero.

    A comparison with ``0..k-1``, not ``torch.nn.functional.one_hot`` (which checks the labels'
    range, builds int64 and is cast): the same zeros and ones in less time, every iteration
    (``benchmarks/bench_loop_kernels.py``)."""
    return (assignment[..., None] == torch.arange(k, device=assignment.device)).to(dtype)


def cluster_sums(values: torch.Tensor, membership: torch.Tensor) -> torch.Tensor:
    """``sum_i s_{i,j} values_i``: ``(B, m, C, d)``, one-hot ``(B, m, C, k)`` -> ``(B, C, k, d)``."""
    return torch.einsum("bmck,bmcd->bckd", membership, values)


def _chosen_models(chosen: torch.Tensor, per_cluster: torch.Tensor) -> torch.Tensor:
    """Each machine's copy of its chosen cluster's tensor: ``(B, m, C, k)``, ``(B, C, k, d)`` -> ``(B, m, C, d)``."""
    return torch.einsum("bmck,bckd->bmcd", chosen, per_cluster)


def _cluster_means(values, chosen, fallback):
    """Per-cluster mean of machine ``values`` over the machines that chose it; a cluster
    nobody chose keeps ``fallback``."""
    counts = chosen.sum(dim=1)[..., None]  # (B, C, k, 1)
    averaged = cluster_sums(values, chosen) / counts.clamp(min=1)
    return torch.where(counts > 0, averaged, fallback)


def _per_run(values: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """A ``(B, C)`` hyperparameter broadcast against a ``(B, C, k, d)`` tensor."""
    return values.reshape(values.shape + (1,) * (like.dim() - 2))


# -- option I: gradient averaging -------------------------------------------------------------
class LaggedGradient(NamedTuple):
    previous_sums: torch.Tensor  # (B, C, k, d): the gradient sums of the previous round (0 before the first)


def gradient_averaging(lagged: bool = False) -> Aggregation:
    """IFCA option I: ``theta_j <- theta_j - (eta/m) sum_{i in S_j} grad F_i(theta_j)``.

    ``lagged``: use the previous round's gradient sums (CFL-MGD Alg. 1 line 9 reads
    ``g_i^(t-1)``); before the first round they are 0, so the first round does not move.
    """

    def init(models):
        return LaggedGradient(torch.zeros_like(models)) if lagged else NoState()

    def update(round_: Round, state):
        sums = round_.kernel.cluster_gradient_sums(round_.gradient, round_.models, round_.chosen, round_.evaluation)
        used, state = (state.previous_sums, LaggedGradient(sums)) if lagged else (sums, state)
        return round_.models - (round_.step / round_.machines)[..., None, None] * used, state

    return Aggregation(init, update)


class HeavyBall(NamedTuple):
    previous: torch.Tensor  # chi^(t-1), (B, C, k, d)


def heavy_ball() -> Aggregation:
    """Polyak's term on the server's models (CFL-MGD eq. 7 and eq. 32), a modifier for
    :func:`chain`: ``chi^+ = proposed + beta (chi - chi^-)``, with ``chi^(-1) = chi^(0)``."""

    def init(models):
        return HeavyBall(models)

    def update(round_: Round, state: HeavyBall, proposed):
        models = round_.models
        return proposed + _per_run(round_.beta, models) * (models - state.previous), HeavyBall(models)

    return Aggregation(init, update)


class Chained(NamedTuple):
    base: NamedTuple
    modifier: NamedTuple


def chain(base: Aggregation, modifier: Aggregation) -> Aggregation:
    """``modifier`` applied to the models ``base`` proposes (e.g. heavy-ball on gradient averaging)."""

    def init(models):
        return Chained(base.init(models), modifier.init(models))

    def update(round_: Round, state: Chained):
        proposed, base_state = base.update(round_, state.base)
        models, modifier_state = modifier.update(round_, state.modifier, proposed)
        return models, Chained(base_state, modifier_state)

    return Aggregation(init, update)


class ClientMomentum(NamedTuple):
    machine: torch.Tensor  # u_i, (B, C, m, d): the cluster momentum each machine was last sent
    cluster: torch.Tensor  # u_p, (B, C, k, d)
    previous_gradients: torch.Tensor  # g_i^(t-1), (B, C, m, d): each machine's last gradient (lagged form)


def client_momentum(machines: int, lagged: bool = False) -> Aggregation:
    """CFL-MGD option I as Alg. 1 and eq. (9) write it, with client and cluster momentum:
    ``u_i = beta u_i + g_i`` (``g_i^(t-1)`` if ``lagged``), ``chi_p <- chi_p - (eta/m)
    sum_{i in C_p} u_i``, ``u_p`` the mean of the ``u_i`` of ``C_p``, sent back to the
    machines of ``C_p`` (``u_i <- u_p``). ``u_i^(0) = 0``. A machine outside M_t keeps its
    ``u_i``; a cluster nobody chose keeps its model and ``u_p``. With fixed clusters and
    full participation this is the heavy-ball form (eq. 32).
    """

    def init(models):
        B, C, k, d = models.shape
        buffers = models.new_zeros((B, C, machines, d))
        return ClientMomentum(buffers, torch.zeros_like(models), buffers)

    def update(round_: Round, state: ClientMomentum):
        models, chosen = round_.models, round_.chosen
        present = chosen.sum(dim=-1)[..., None] > 0  # (B, m, C, 1)
        gradients = round_.kernel.machine_gradients(round_.gradient, _chosen_models(chosen, models))  # (B, m, C, d)
        last = state.previous_gradients.transpose(1, 2)
        previous = torch.where(present, gradients, last).transpose(1, 2)
        if lagged:
            gradients = last
        momentum = round_.beta[:, None, :, None] * state.machine.transpose(1, 2) + gradients
        new_models = models - (round_.step / round_.machines)[..., None, None] * cluster_sums(momentum, chosen)
        cluster = _cluster_means(momentum, chosen, state.cluster)
        sent = torch.where(present, _chosen_models(chosen, cluster), state.machine.transpose(1, 2))
        return new_models, ClientMomentum(sent.transpose(1, 2), cluster, previous)

    return Aggregation(init, update)


# -- option II: model averaging -----------------------------------------------------------------
class ClusterMomentum(NamedTuple):
    cluster: torch.Tensor  # u_p, (B, C, k, d)


def local_update(kernel, gradient, start, step, steps: int, beta=None, momentum=None):
    """LocalUpdate (CFL-MGD Alg. 1 lines 19-22; IFCA's local steps when ``beta`` is None):
    ``steps`` full-batch steps per machine from ``start`` ``(B, m, C, d)``;
    ``u <- beta u + grad F_i(w)``, ``w <- w - eta u`` (plain ``w <- w - eta grad F_i(w)``
    without momentum). Returns the local models (and momenta)."""
    eta = step[:, None, :, None]
    models = start
    for _ in range(steps):
        gradients = kernel.machine_gradients(gradient, models)
        if beta is None:
            models = models - eta * gradients
        else:
            momentum = beta[:, None, :, None] * momentum + gradients
            models = models - eta * momentum
    return models, momentum


def model_averaging(local_steps: int, momentum: bool = False) -> Aggregation:
    """Option II: each machine runs ``local_steps`` local steps from its chosen model and the
    server averages the results per cluster (IFCA Alg. 1 line 14; CFL-MGD eq. 10 and Alg. 1
    line 16). With ``momentum`` the local steps are heavy-ball steps started from the
    cluster momentum ``u_p`` (Alg. 1 line 12), and ``u_p`` becomes the cluster's mean
    ``u_i``; ``u_p^(0) = 0``. A cluster nobody chose keeps its model (and ``u_p``)."""

    def init(models):
        return ClusterMomentum(torch.zeros_like(models)) if momentum else NoState()

    def update(round_: Round, state):
        models, chosen = round_.models, round_.chosen
        start = _chosen_models(chosen, models)
        if not momentum:
            local, _ = local_update(round_.kernel, round_.gradient, start, round_.step, local_steps)
            return _cluster_means(local, chosen, models), state
        local, local_momentum = local_update(round_.kernel, round_.gradient, start, round_.step, local_steps,
                                             round_.beta, _chosen_models(chosen, state.cluster))
        return _cluster_means(local, chosen, models), ClusterMomentum(_cluster_means(local_momentum, chosen,
                                                                                      state.cluster))

    return Aggregation(init, update)
