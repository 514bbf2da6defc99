"""The pieces every catalogue method shares (FedJAX style): keys, step sizes, the local loop.

FedAvg (Li et al.), FedAvg with two step sizes and SCAFFOLD (Karimireddy et al.), local GD
(Khaled et al.), FedProx's inexact local solves (Li et al., MLSys 2020) and CFL's local
updates (Sattler et al.) differ only in their client step (a control variate or a proximal
term added to the gradient; full or stochastic gradients; a stopping rule), their sampling
(:mod:`.client_sampling`) and their server update; they all run :func:`client_updates`, one
batched loop over ``B`` runs x ``S`` clients.

Randomness: run ``b``'s key is ``hash(problem seed b, seed b)``; from it, per client, the
noise keys (stream :data:`STREAM_NOISE`) and option I's control-variate keys, and the sampling
key. The noise of client ``k`` at global local step ``t`` (``t = 0, 1, ...`` counts local
steps since the start, the same in every method) depends on ``(run key, k, t)`` only: a run
draws the same numbers alone or in a batch, sampled or not, so SGD, FedAvg with ``E = 1`` and
SCAFFOLD with ``c = 0`` see the same noise.

A problem (:class:`~cflbounds.synthetic.heterogeneous_quadratics.HeterogeneousQuadratics`,
:class:`~cflbounds.synthetic.heterogeneous_logistic.HeterogeneousLogistic`) provides
``weights``, ``seeds``, ``batch_size``, ``clients``, ``d``, ``dtype``, ``device``,
``oracle(clients)`` (an object with ``gradient(models)`` and ``stochastic_gradient(models,
keys, counter)``), ``objective_gap(points)`` and ``distance_sq(points)``.
"""
from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral
from typing import Callable

import numpy as np
import torch

from .._validation import ArrayLike, Constraint, Interval, SeedArray, require
from ..synthetic.counter_random import counter_hash

__all__ = ["DecayingStep", "RoundDecayingStep", "paper_step", "run_keys", "client_keys", "step_schedule", "client_updates", "check_step",
           "initial_points", "PROBLEM", "STEP_SIZE", "POSITIVE_STEP", "COUNT", "SEED", "INIT",
           "STREAM_NOISE", "STREAM_CONTROL", "STREAM_SAMPLING"]

STREAM_NOISE, STREAM_CONTROL, STREAM_SAMPLING = 41, 42, 43


@dataclass(frozen=True)
class DecayingStep:
    """Li et al.'s step ``eta_t = 2 / (mu (gamma + t))`` (Theorem 1) for the ``t``-th local SGD
    step, ``t = 1, 2, ...`` (the step from ``w_t`` to ``w_{t+1}``, ``w_1`` the start). ``mu`` and
    ``gamma`` are floats or one per run ``(B,)``."""

    mu: object
    gamma: object


@dataclass(frozen=True)
class RoundDecayingStep:
    """The step of Li et al.'s official code (github.com/lx10077/fedavgpy,
    ``inverse_prop_decay_learning_rate``): ``lr / (r + 1)`` for every local step of round
    ``r = 0, 1, ...`` of ``local_steps`` steps, where the theorems decay ``eta_t`` every step.
    ``lr`` is a float or one per run ``(B,)``."""

    lr: object
    local_steps: int


def paper_step(problem, local_steps: int) -> DecayingStep:
    """Theorem 1's step from the problem's exact constants: ``kappa = L/mu``,
    ``gamma = max(8 kappa, E)``, per run."""
    mu = np.asarray(problem.strong_convexity, dtype=float)
    kappa = np.asarray(problem.smoothness, dtype=float) / mu
    return DecayingStep(mu, np.maximum(8.0 * kappa, float(local_steps)))


def _positive(value) -> bool:
    array = np.asarray(value, dtype=float)
    return array.ndim <= 1 and array.size > 0 and bool(np.all(np.isfinite(array))) and bool(np.all(array > 0))


def _is_problem(value) -> bool:
    return all(hasattr(value, name) for name in ("oracle", "weights", "seeds", "objective_gap", "distance_sq"))


PROBLEM = Constraint(_is_problem, "a federated problem (e.g. HeterogeneousQuadratics or HeterogeneousLogistic)")
POSITIVE_STEP = Constraint(lambda v: not isinstance(v, (bool, str)) and _positive(v),
                           "a positive float or one per run")
STEP_SIZE = Constraint(lambda v: isinstance(v, DecayingStep) and _positive(v.mu) and _positive(v.gamma)
                       or isinstance(v, RoundDecayingStep) and _positive(v.lr)
                       and isinstance(v.local_steps, Integral) and v.local_steps >= 1
                       or POSITIVE_STEP.is_satisfied_by(v),
                       "a positive float, one per run, a DecayingStep or a RoundDecayingStep")
COUNT = [Interval(Integral, 1, None, closed="left")]
SEED = [Interval(Integral, 0, None, closed="left"), SeedArray]
INIT = [Constraint(lambda v: v is None or ArrayLike.is_satisfied_by(v), "None or a finite (d,) or (B, d) array")]


def run_keys(problem, seed) -> np.ndarray:
    """Each run's key ``(B,)`` uint64 from its problem's seed and ``seed`` (one int for every run,
    or one per run: ``B`` copies of one problem with seeds ``0..B-1`` are ``B`` replicates)."""
    seeds = np.asarray(seed, dtype=np.uint64)
    require(seeds.ndim == 0 or seeds.shape == (problem.batch_size,),
            f"The 'seed' parameter must be one int or {problem.batch_size} (one per run); got shape {seeds.shape}.")
    return counter_hash(np.asarray(problem.seeds, dtype=np.uint64), seeds)


def client_keys(keys: np.ndarray, clients: int, stream: int) -> np.ndarray:
    """Per-run, per-client keys of one stream, ``(B, N)`` uint64."""
    return counter_hash(keys[:, None], stream, np.arange(clients, dtype=np.uint64))


def step_schedule(step_size, runs: int, dtype, device) -> Callable[[int], torch.Tensor]:
    """The step of global local step ``t`` (0-based) per run, as a ``(B, 1, 1)`` tensor."""
    if isinstance(step_size, DecayingStep):
        mu = np.broadcast_to(np.asarray(step_size.mu, dtype=float), (runs,))
        gamma = np.broadcast_to(np.asarray(step_size.gamma, dtype=float), (runs,))
        return lambda t: torch.as_tensor(2.0 / (mu * (gamma + t + 1.0)), dtype=dtype, device=device)[:, None, None]
    if isinstance(step_size, RoundDecayingStep):
        lr = np.broadcast_to(np.asarray(step_size.lr, dtype=float), (runs,))
        E = int(step_size.local_steps)
        return lambda t: torch.as_tensor(lr / (1.0 + t // E), dtype=dtype, device=device)[:, None, None]
    constant = torch.as_tensor(np.broadcast_to(np.asarray(step_size, dtype=float), (runs,)).copy(), dtype=dtype,
                               device=device)[:, None, None]
    return lambda t: constant


def _per_run(problem, name: str, value):
    array = np.asarray(value, dtype=float)
    require(array.ndim == 0 or array.shape == (problem.batch_size,),
            f"The {name!r} parameter must be one value or {problem.batch_size} (one per run); got shape {array.shape}.")


def check_step(problem, name: str, step_size) -> None:
    """A step given per run must have one value per run."""
    if isinstance(step_size, DecayingStep):
        _per_run(problem, f"{name}.mu", step_size.mu)
        _per_run(problem, f"{name}.gamma", step_size.gamma)
    elif isinstance(step_size, RoundDecayingStep):
        _per_run(problem, f"{name}.lr", step_size.lr)
    else:
        _per_run(problem, name, step_size)


def initial_points(problem, init) -> torch.Tensor:
    """The start ``(B, d)``: zeros (None), one ``(d,)`` point for every run, or ``(B, d)``."""
    B, d = problem.batch_size, problem.d
    start = np.zeros((B, d)) if init is None else np.asarray(init, dtype=float)
    start = np.tile(start, (B, 1)) if start.ndim == 1 else start
    require(start.shape == (B, d), f"The 'init' parameter must be (d,) = ({d},) or (B, d) = ({B}, {d}); "
            f"got shape {np.shape(init)}.")
    return torch.as_tensor(start, dtype=problem.dtype, device=problem.device)


def client_updates(oracle, start: torch.Tensor, keys: np.ndarray | None, *, first_step: int, steps: int,
                   step: Callable[[int], torch.Tensor], correction: torch.Tensor | None = None,
                   proximal: torch.Tensor | None = None, observe: Callable | None = None,
                   done: Callable[[torch.Tensor], torch.Tensor] | None = None) -> torch.Tensor:
    """``steps`` local steps of every run's ``S`` clients from ``start`` ``(B, S, d)``:
    ``y <- y - eta_t (g(y) + correction + proximal (y - start))``, ``g`` the oracle's stochastic
    gradient keyed by ``keys`` ``(B, S)`` and the global step ``t = first_step, first_step + 1,
    ...``, or its full gradient when ``keys`` is None (local GD). ``correction`` ``(B, S, d)`` is
    SCAFFOLD's ``c - c_i``; ``proximal`` ``(B, 1, 1)`` FedProx's ``mu``, whose term makes the step
    one on ``h_k(y; start) = F_k(y) + (mu/2)||y - start||^2`` (None: plain SGD/GD).
    ``observe(t, models, second_moment)`` sees each step's models before the step
    (``second_moment`` ``(B, S)``, None for full gradients). ``done(direction)`` (the step's
    full direction, ``(B, S, d)``) returns a ``(B, S)`` bool tensor of the clients that stop
    here: they keep their models from then on (their step is 0), and the loop ends early once
    every client has stopped."""
    models = start
    for t in range(first_step, first_step + steps):
        if keys is None:
            gradient, second_moment = oracle.gradient(models), None
        else:
            gradient, second_moment = oracle.stochastic_gradient(models, keys, t)
        if observe is not None:
            observe(t, models, second_moment)
        if correction is not None:
            gradient = gradient + correction
        if proximal is not None:
            gradient = gradient + proximal * (models - start)
        eta = step(t)
        if done is not None:
            stopped = done(gradient)
            if bool(stopped.all()):
                return models
            eta = eta * (~stopped)[..., None].to(gradient.dtype)
        models = models - eta * gradient
    return models
