"""FedAvg as Li, Huang, Yang, Wang & Zhang analyse it ("On the Convergence of FedAvg on Non-IID
Data", ICLR 2020, Sec. 3), batched over runs.

Every device runs ``E`` local SGD *steps* ``w <- w - eta_t grad F_k(w, xi_t^k)`` from the
server's model; every ``E`` steps the server aggregates (Sec. 3.3; weights of
:mod:`.client_sampling`): ``full`` ``sum_k p_k w^k``; ``scheme-I`` ``(1/K) sum_{k in S} w^k``,
``K`` draws with replacement ``~ p_k``; ``scheme-II`` ``(N/K) sum_{k in S} p_k w^k``, ``K``
uniformly without replacement; ``mcmahan`` (control, no guarantee) renormalised ``p_k`` over
``K`` uniform draws. As the paper's analysis does ("we assume that FedAvg always activates all
devices at the beginning of each round and then uses the parameters maintained in only a few
sampled devices"), every device runs its local steps and only the sampled ones are
aggregated: the same models as running the sampled devices alone (a device's noise is its own),
and Assumption 4's ``E||grad F_k(w_t^k, xi)||^2`` is defined, and recorded, for every ``k``.

Step sizes: ``DecayingStep(mu, gamma)``, Theorem 1's ``eta_t = 2/(mu (gamma + t))`` (``paper_step``
gives ``gamma = max(8 kappa, E)``), a constant (Theorem 4's setting), or the official code's
``RoundDecayingStep`` (``lr / (round + 1)``, constant within a round).
"""
from __future__ import annotations

import numpy as np
import torch

from .._threads import follow_load
from .._validation import Boolean, NoneOK, Options, require, validate_params
from .client_sampling import SCHEMES, aggregation_weights
from .iterate_trace import IterateTrace, trace_of
from .local_updates import (COUNT, INIT, PROBLEM, SEED, STEP_SIZE, STREAM_NOISE, STREAM_SAMPLING, check_step,
                            client_updates, client_keys, initial_points, run_keys, step_schedule)
from ..synthetic.counter_random import counter_hash

__all__ = ["fedavg_noniid"]


@validate_params({
    "problem": [PROBLEM],
    "rounds": COUNT,
    "local_steps": COUNT,
    "step_size": [STEP_SIZE],
    "scheme": [Options(SCHEMES)],
    "sampled": [NoneOK, *COUNT],
    "init": INIT,
    "seed": SEED,
    "record_gradients": [Boolean],
})
@follow_load()
def fedavg_noniid(problem, *, rounds: int, local_steps: int, step_size, scheme: str = "full",
                  sampled: int | None = None, init=None, seed=0, record_gradients: bool = True) -> IterateTrace:
    """Run FedAvg (module docstring) for ``rounds`` rounds of ``E = local_steps`` steps
    (``T = rounds E`` SGD steps) on every run of the batch.

    Parameters
    ----------
    problem : the batch of problems (one run each).
    step_size : a constant (float or one per run), a ``DecayingStep`` (the theorems') or a
        ``RoundDecayingStep`` (the authors' code's ``lr / (round + 1)``).
    scheme : ``full``, ``scheme-I``, ``scheme-II`` or ``mcmahan``.
    sampled : K, the devices aggregated per round (``1 <= K <= N``; required unless ``full``).
    init : ``w_1``, ``(d,)`` or ``(B, d)``; zeros by default.
    seed : one int, or one per run (replicates of one problem).
    record_gradients : keep ``E[||g||^2 | w_t^k]`` of every step and device (``(B, T, N)``).

    Returns an :class:`IterateTrace` whose points are the server models after each round.
    """
    N = problem.clients
    require(scheme == "full" or sampled is not None,
            f"The 'sampled' parameter (K) is required with scheme={scheme!r}: K devices of N={N} per round.")
    require(sampled is None or sampled <= N, f"The 'sampled' parameter of fedavg_noniid must be an int in the range "
            f"[1, {N}] (K devices of N={N}). Got {sampled!r} instead.")
    check_step(problem, "step_size", step_size)
    x = initial_points(problem, init)
    keys = run_keys(problem, seed)
    return _run(problem, x, keys, rounds, local_steps, step_size, scheme, sampled or N, record_gradients,
                seed)


def _run(problem, x, keys, R, E, step_size, scheme, K, record_gradients, seed) -> IterateTrace:
    B, N, d = problem.batch_size, problem.clients, problem.d
    step = step_schedule(step_size, B, problem.dtype, problem.device)
    noise_keys = client_keys(keys, N, STREAM_NOISE)
    sampling_keys = counter_hash(keys, STREAM_SAMPLING)
    probabilities = np.asarray(problem.weights, dtype=float)
    oracle = problem.oracle()
    points = np.empty((B, R + 1, d))
    points[:, 0] = x.double().cpu().numpy()
    moments = np.empty((B, R * E, N)) if record_gradients else None

    def observe(t, models, second_moment):
        moments[:, t] = second_moment.double().cpu().numpy()

    for r in range(R):
        weights = torch.as_tensor(aggregation_weights(scheme, sampling_keys, r, probabilities, K),
                                  dtype=problem.dtype, device=problem.device)
        local = client_updates(oracle, x[:, None].expand(B, N, d), noise_keys, first_step=r * E, steps=E, step=step,
                            observe=observe if record_gradients else None)
        x = torch.einsum("bn,bnd->bd", weights, local)
        points[:, r + 1] = x.double().cpu().numpy()
    config = {"method": "fedavg_noniid", "scheme": scheme, "rounds": R, "local_steps": E, "sampled": K,
              "step_size": repr(step_size), "seed": np.asarray(seed).tolist()}
    return trace_of(problem, points, np.arange(R + 1) * E, keys, config, gradient_second_moments=moments)
