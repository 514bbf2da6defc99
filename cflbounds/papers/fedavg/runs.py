"""FedAvg's measured cells (Li et al., ICLR 2020): replicated runs of one problem and configuration,
each horizon's expectation sample, and the bound with the problem's exact constants and G^2
measured on the runs.

Readings (named options; every claim says which it judges and reports the others):

* the step, :data:`STEP_READINGS`: ``statement`` (judged) ``eta_t = 2/(mu (gamma + t))`` with
  ``t = 1`` the first step, as CATALOGUE.md prints it with the start ``w_1``; ``zero-based``
  ``eta_t = 2/(mu (gamma + t - 1))`` (first step ``2/(mu gamma)``), the schedule under which the
  proof's induction ``Delta_t <= v/(gamma' + t)``, ``gamma' = gamma - 1``, gives the statement's
  ``kappa/(gamma + T - 1)`` and ``(mu gamma / 2) ||w_1 - w*||^2`` exactly (our reconstruction; the
  proof was not read): an off-by-one between the printed step and the printed bound;
  ``official-code`` the authors' ``lr / (round + 1)`` with ``lr`` the statement's first step
  (:class:`~cflbounds.algorithms.RoundDecayingStep`). The code's other differences: its rounds run
  ``10 E`` mini-batch steps (our ``E`` counts local steps, the papers' unit: the code's ``num_epoch``
  is ``E / 10``); it clips every stochastic gradient to norm 60, which never acts here (the
  evidence's largest ``E||g||^2`` is far below 3600, and the Gaussian noise's norm is ``sigma_k``
  times a chi of d degrees); its Scheme II multiplies by ``100 / K`` (N = 100 written in), which is
  the paper's ``N / K`` only at N = 100: FEDAVG.T3's default grid has an N = 100 cell where the two
  readings are one algorithm.
* the horizon: ``w_T`` is the server model after ``T = R E`` local steps (the bound's T), the
  synchronised point the statement names.
* ``G^2`` (Assumption 4, ``E||grad F_k(w_t^k, xi)||^2 <= G^2`` along the iterates): measured,
  the largest over the steps before T and the devices of the mean over the cell's replicates of
  ``E[||g||^2 | w_t^k]`` (exact for quadratics), with its Monte Carlo standard error
  (:func:`~cflbounds.algorithms.measured_gradient_bound`). The bound is reported at that
  estimate; a violation must hold at the estimate plus two standard errors, ``holds`` at the
  estimate minus two (a G^2 the runs cannot pin down cannot decide).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import torch

from cflbounds.algorithms import (DecayingStep, RoundDecayingStep, fedavg_noniid, measured_gradient_bound)
from cflbounds.bounds import fedavg as bounds
from cflbounds.claims import Inequality
from ..catalogue_quadratics import replicate, starts

__all__ = ["STEP_READINGS", "Z", "step_for", "run_cell", "rescaled", "step_constants", "measured_G2", "problem_rows",
           "gradient_row", "theorem_bound"]

STEP_READINGS = {
    "statement": "eta_t = 2/(mu (gamma + t)), t = 1, 2, ... from the start w_1 (CATALOGUE.md's step)",
    "zero-based": "eta_t = 2/(mu (gamma + t - 1)): the first step 2/(mu gamma), the proof's schedule for the "
                  "statement's kappa/(gamma + T - 1) and (mu gamma/2) ||w_1 - w*||^2",
    "official-code": "lr/(round + 1) for every local step of a round (fedavgpy's inverse_prop_decay_learning_rate), "
                     "lr = the statement's first step 2/(mu (gamma + 1))",
}
Z = 2.0  # standard errors of the measured G^2 either side (module docstring)


def step_for(reading: str, mu, gamma, E: int):
    """The step schedule of ``reading`` (:data:`STEP_READINGS`) for ``mu``, ``gamma`` (one per run)."""
    mu, gamma = np.asarray(mu, dtype=float), np.asarray(gamma, dtype=float)
    if reading == "statement":
        return DecayingStep(mu, gamma)
    if reading == "zero-based":
        return DecayingStep(mu, gamma - 1.0)
    return RoundDecayingStep(2.0 / (mu * (gamma + 1.0)), E)


def run_cell(problem, *, distance: float, E: int, rounds: int, scheme: str, K: int | None, step,
             replicates: int):
    """``replicates`` runs of each problem of the batch from ``w* + distance u`` (its own ``u``),
    problem-major; ``step`` one schedule for the replicated batch (per-run arrays of length
    ``problem.batch_size * replicates``). Returns the trace."""
    runs = replicate(problem, replicates)
    start = np.repeat(starts(problem, np.full(problem.batch_size, distance), problem.seeds), replicates, axis=0)
    return fedavg_noniid(runs, rounds=rounds, local_steps=E, step_size=step, scheme=scheme, sampled=K, init=start,
                         seed=np.tile(np.arange(replicates), problem.batch_size))


def rescaled(problem):
    """The remark's balanced problem ``F~_k = p_k N F_k`` with weights 1/N (the same F, w*, F*):
    Hessians and noise scaled by ``p_k N``."""
    scale = problem.weights * problem.clients
    factor = torch.as_tensor(scale, dtype=problem.dtype, device=problem.device)[None, :, None, None]
    return replace(problem, hessians=problem.hessians * factor,
                   hessians_exact=problem.hessians_exact * scale[None, :, None, None],
                   weights=np.full(problem.clients, 1.0 / problem.clients), noise_std=problem.noise_std * scale)


def step_constants(claim, problem, E):
    """``(mu, gamma)`` of the step: the problem's, or for FEDAVG.T3U the remark's ``varsigma mu``
    and ``max(8 nu L/(varsigma mu), E)`` (Theorem 3's step with L~ = nu L, mu~ = varsigma mu)."""
    L, mu = float(problem.smoothness[0]), float(problem.strong_convexity[0])
    if claim == "FEDAVG.T3U":
        nu, varsigma = bounds.unbalance(problem.weights)
        L, mu = nu * L, varsigma * mu
    return mu, bounds.gamma(L, mu, E)


def measured_G2(trace, rows: slice, upto: int, client_scale=None):
    """Assumption 4's ``G^2`` on the runs ``rows`` of a trace over its first ``upto`` local steps
    (a :class:`~cflbounds.algorithms.MeasuredConstant`); ``client_scale`` ``(N,)`` divides each
    device's second moments (FEDAVG.T3U: the F_k's from the rescaled F~_k = p_k N F_k's)."""
    moments = trace.gradient_second_moments[rows, :upto]
    if client_scale is not None:
        moments = moments / np.asarray(client_scale, dtype=float) ** 2
    return measured_gradient_bound(replace(trace, gradient_second_moments=moments))


def problem_rows(problem, b: int) -> list[Inequality]:
    """Assumptions 1-3 and Gamma >= 0 on problem ``b``, with their two sides: every F_k's spectrum
    within [mu, L] (the constants the bound is given: the extremes, so equality), the noise's
    variance sigma_k^2 (exact by construction) and the heterogeneity."""
    largest, smallest = float(problem.client_smoothness[b].max()), float(problem.client_strong_convexity[b].min())
    return [Inequality("A1: max_k lambda_max(A_k) <= L", largest, float(problem.smoothness[b]), "<=",
                       "FedAvg Assumption 1 (exact)"),
            Inequality("A2: min_k lambda_min(A_k) >= mu", smallest, float(problem.strong_convexity[b]), ">=",
                       "FedAvg Assumption 2 (exact)"),
            Inequality("A3: E||g - grad F_k||^2 <= sigma_k^2 (largest k)", float(np.max(problem.noise_std) ** 2),
                       float(np.max(problem.noise_std) ** 2), "<=", "FedAvg Assumption 3 (exact: Gaussian noise of "
                                                                   "variance sigma_k^2)"),
            Inequality("Gamma = F* - sum_k p_k F_k* >= 0", float(problem.heterogeneity[b]), 0.0, ">=",
                       "FedAvg's heterogeneity (exact)")]


def gradient_row(G2, upto: int) -> Inequality:
    """Assumption 4 at its measured constant: the largest mean second moment against the G^2 the
    bound is given (the estimate: equality by construction), labelled as measured."""
    return Inequality(f"A4: E||grad F_k(w_t^k, xi)||^2 <= G^2 along the iterates (measured: max over t < {upto} and "
                      f"k of the mean over {G2.runs} runs, standard error {G2.standard_error:.3g})", G2.estimate,
                      G2.estimate, "<=", "FedAvg Assumption 4 (measured on the run)")


def theorem_bound(claim: str, problem, b: int, *, E: int, T: int, G: float, distance: float, K=None,
                  noise_scaling: str = "printed"):
    """The claim's bound (a BoundResult) for problem ``b`` of the batch at horizon ``T``."""
    common = dict(L=float(problem.smoothness[b]), mu=float(problem.strong_convexity[b]), E=E, T=T, G=float(G),
                  Gamma=float(problem.heterogeneity[b]), initial_distance_sq=float(distance) ** 2)
    if claim == "FEDAVG.T3U":
        nu, varsigma = bounds.unbalance(problem.weights)
        return bounds.theorem3_unbalanced(**common, sigma_sq_sum=float(np.sum(problem.noise_std**2)), nu=nu,
                                          varsigma=varsigma, K=K, N=problem.clients, noise_scaling=noise_scaling)
    variance = bounds.variance_term(problem.weights, problem.noise_std)
    if claim == "FEDAVG.T1":
        return bounds.theorem1(**common, weighted_variance=variance)
    theorem = bounds.theorem2 if claim == "FEDAVG.T2" else bounds.theorem3
    return theorem(**common, weighted_variance=variance, K=K, N=problem.clients)
