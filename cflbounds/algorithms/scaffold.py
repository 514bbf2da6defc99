"""SCAFFOLD and FedAvg with two step sizes as Karimireddy, Kale, Mohri, Reddi, Stich & Suresh
write them ("SCAFFOLD: Stochastic Controlled Averaging for Federated Learning", ICML 2020,
Algorithm 1 and the FedAvg of Sec. 2), batched over runs.

Round ``r`` (Alg. 1 lines 2-17): ``S`` clients sampled uniformly without replacement
(:func:`~.client_sampling.uniform_subset`); each starts ``y_i <- x`` (line 6) and takes ``K``
steps ``y_i <- y_i - eta_l (g_i(y_i) - c_i + c)`` (lines 7-10); then

* option I  (line 12): ``c_i+ = g_i(x)``, a fresh stochastic gradient at the server model;
* option II (line 12): ``c_i+ = c_i - c + (x - y_i) / (K eta_l)``;

the server (lines 16-17) sets ``x <- x + (eta_g / S) sum_{i in S} (y_i - x)`` and
``c <- c + (1/N) sum_{i in S} (c_i+ - c_i)``; ``c_i <- c_i+`` for the sampled clients (line 14).
``c`` and every ``c_i`` start at 0 (the paper leaves them as inputs).

FedAvg with two step sizes (Sec. 2): the same with ``c = c_i = 0`` throughout (``control=None``),
``y_i <- y_i - eta_l g_i(y_i)`` and the same server step.

The objective is ``f = (1/N) sum_i f_i``: the problem's weights must be uniform.
"""
from __future__ import annotations

import numpy as np
import torch

from .._threads import follow_load
from .._validation import NoneOK, Options, require, validate_params
from .client_sampling import uniform_subset
from .iterate_trace import IterateTrace, trace_of
from .local_updates import (COUNT, INIT, POSITIVE_STEP, PROBLEM, SEED, STREAM_CONTROL, STREAM_NOISE,
                            STREAM_SAMPLING, check_step, client_keys, client_updates, initial_points, run_keys,
                            step_schedule)
from ..synthetic.counter_random import counter_hash

__all__ = ["scaffold", "fedavg_two_steps", "CONTROL_OPTIONS"]

CONTROL_OPTIONS = ("I", "II")

_CONSTRAINTS = {
    "problem": [PROBLEM],
    "rounds": COUNT,
    "local_steps": COUNT,
    "local_step_size": [POSITIVE_STEP],
    "global_step_size": [POSITIVE_STEP],
    "sampled": [NoneOK, *COUNT],
    "init": INIT,
    "seed": SEED,
}


@validate_params({**_CONSTRAINTS, "option": [Options(CONTROL_OPTIONS)]})
@follow_load()
def scaffold(problem, *, rounds: int, local_steps: int, local_step_size, global_step_size=1.0,
             sampled: int | None = None, option: str = "II", init=None, seed=0) -> IterateTrace:
    """Run SCAFFOLD (Alg. 1, module docstring) for ``R = rounds`` rounds of ``K = local_steps``
    local steps on every run of the batch.

    Parameters
    ----------
    local_step_size, global_step_size : eta_l and eta_g (floats, or one per run).
    sampled : S, clients per round (``1 <= S <= N``); None: all N.
    option : the control-variate update, ``I`` or ``II``.
    init : the start ``x``, ``(d,)`` or ``(B, d)``; zeros by default.
    seed : one int, or one per run.

    Returns an :class:`IterateTrace` whose points are the server models after each round.
    """
    return _checked_run(problem, rounds, local_steps, local_step_size, global_step_size, sampled, option, init, seed)


@validate_params(_CONSTRAINTS)
@follow_load()
def fedavg_two_steps(problem, *, rounds: int, local_steps: int, local_step_size, global_step_size=1.0,
                     sampled: int | None = None, init=None, seed=0) -> IterateTrace:
    """FedAvg with local and global step sizes (SCAFFOLD paper, Sec. 2): :func:`scaffold`'s round
    with ``c = c_i = 0``; same parameters, same random numbers."""
    return _checked_run(problem, rounds, local_steps, local_step_size, global_step_size, sampled, None, init, seed)


def _checked_run(problem, R, K, eta_l, eta_g, S, option, init, seed) -> IterateTrace:
    N = problem.clients
    require(np.allclose(problem.weights, 1.0 / N, rtol=1e-12, atol=0.0),
            f"SCAFFOLD's objective is (1/N) sum_i f_i: the problem's weights must be uniform (1/{N} each); got "
            f"weights from {np.min(problem.weights)!r} to {np.max(problem.weights)!r}.")
    require(S is None or S <= N, f"The 'sampled' parameter must be an int in the range [1, {N}] (S clients of "
            f"N={N}). Got {S!r} instead.")
    check_step(problem, "local_step_size", eta_l)
    check_step(problem, "global_step_size", eta_g)
    return _run(problem, initial_points(problem, init), run_keys(problem, seed), R, K, eta_l, eta_g, S or N, option,
                seed)


def _run(problem, x, keys, R, K, eta_l, eta_g, S, option, seed) -> IterateTrace:
    B, N, d = problem.batch_size, problem.clients, problem.d
    device, dtype = problem.device, problem.dtype
    step = step_schedule(eta_l, B, dtype, device)
    global_step = step_schedule(eta_g, B, dtype, device)(0)[:, :, 0]  # (B, 1)
    inverse_step = 1.0 / (K * step(0))  # (B, 1, 1): option II's 1/(K eta_l)
    noise_keys, control_keys = client_keys(keys, N, STREAM_NOISE), client_keys(keys, N, STREAM_CONTROL)
    sampling_keys = counter_hash(keys, STREAM_SAMPLING)
    rows = np.arange(B)[:, None]
    c = torch.zeros((B, d), dtype=dtype, device=device)
    c_clients = torch.zeros((B, N, d), dtype=dtype, device=device)
    points = np.empty((B, R + 1, d))
    points[:, 0] = x.double().cpu().numpy()
    for r in range(R):
        chosen = uniform_subset(sampling_keys, r, N, S)  # (B, S), distinct per row
        clients = torch.as_tensor(chosen, device=device)
        oracle = problem.oracle(clients)
        start = x[:, None].expand(B, S, d)
        if option is None:
            local = client_updates(oracle, start, noise_keys[rows, chosen], first_step=r * K, steps=K, step=step)
        else:
            own = c_clients[torch.arange(B, device=device)[:, None], clients]  # c_i, (B, S, d)
            local = client_updates(oracle, start, noise_keys[rows, chosen], first_step=r * K, steps=K, step=step,
                                   correction=c[:, None] - own)
            if option == "I":
                updated = oracle.stochastic_gradient(start, control_keys[rows, chosen], r)[0]
            else:
                updated = own - c[:, None] + (start - local) * inverse_step
            c = c + (updated - own).sum(dim=1) / N
            c_clients[torch.arange(B, device=device)[:, None], clients] = updated
        x = x + global_step * (local - start).mean(dim=1)
        points[:, r + 1] = x.double().cpu().numpy()
    config = {"method": "fedavg_two_steps" if option is None else "scaffold", "option": option, "rounds": R,
              "local_steps": K, "sampled": S, "local_step_size": repr(eta_l), "global_step_size": repr(eta_g),
              "seed": np.asarray(seed).tolist()}
    return trace_of(problem, points, np.arange(R + 1) * K, keys, config)
