"""The admissible domains of DSC.T1 and DSC.E14, for ``cflbounds falsify``.

A point is one problem and one run of DSC, the experiment of :mod:`.experiment` at one
configuration: ``clients`` devices in the paper's 100 m square, each holding 400-800 samples
of two of ``labels`` labels, every label a quadratic loss with Hessian eigenvalues in
``[mu, L]`` and one optimum shared by every label (A4 can only hold with a shared optimum:
with heterogeneous optima ``grad F = 0`` at ``w*`` while ``grad F_k != 0``, so no finite delta
exists, and those problems lie outside Theorem 1). DSC groups the devices (both stages of
Alg. 1) and trains ``T`` rounds by eqs. (2)-(5) from ``||w^0 - w*|| = 3``, with upload noise
of scale ``noise_scale`` (eq. 5), at the step size ``lambda = step_fraction x`` the instance's
eq. (14) threshold (delta and W maximised over the ball ``||w - w*|| <= ||w^0 - w*||`` before
the run), i.e. over the whole range that eq. (14) admits.

The constants of Theorem 1 are those :func:`.checks.check_t1` computes (:func:`.checks._constants`),
at its first reading of (L, mu): ``L``, ``mu`` the extreme eigenvalues of F's Hessian (A1 and A2
are stated on F: the tightest valid constants; the check also takes the larger bound of a second
reading, kept here in ``details``); ``delta_intra^2``, ``delta_inter^2`` the
larger of 1, the ball's sup and the sup over every visited iterate of A4's ratios (A4 asks
for them at the iterates ``w^[t]``: a valid, generous delta); ``W`` and ``N`` their largest
value over the rounds (the weights the algorithm used) and the ball. Any valid choice of
constants gives a bound the theorem asserts, so an instance above the bound at these
constants violates it. The instance's assumption rows are A1-A2 and A4 (:func:`bounds.assumptions`),
A4 at ``w*`` (:func:`.checks.a4_at_optimum`) and the bound's own condition ``A <= 1``
(eq. 14, the assumptions :func:`bounds.theorem1` / :func:`bounds.equation14` return), judged at the
final constants (nothing asks ``A >= 0``: where ``A < 0`` the bound is negative at odd ``T``).
``details`` carry the bound under the two more generous readings as well:
``(max_k L_k, min_k mu_k)`` (the check's second reading) and, in addition,
``delta_intra^2 = delta_inter^2 = (max_k L_k / min_k mu_k)^2``, an upper bound of A4's ratios
over every point (for a shared optimum, ``||H_k e|| <= L_k ||e||`` and any convex combination
of the Hessians has ``lambda_min >= min_k mu_k``).

* DSC.T1 (eq. 13, time index read as T): ``E[F(w^T) - F*]`` over ``T1_TRIALS`` independent
  channel-noise sequences of the instance against the bound; rule ``"expectation"`` with the
  per-trial gaps as samples (confirmation pools the gaps of fresh instances against each
  instance's own bound).
* DSC.E14 ("FL surely converges when lambda satisfies (14)", a sufficient condition), in the
  ideal channel (``noise_scale = 0``: eq. 14 does not involve the noise, and without noise
  convergence means ``F(w^t) - F* -> 0`` without ambiguity; with noise the gap converges to a
  floor and the question becomes T1's): the measured per-round rate
  ``((F(w^T) - F*) / (F(w^0) - F*))^(1/T)`` against 1; rule ``"deterministic"`` (one run
  per instance: no noise). A rate above 1 with ``A <= 1`` means the gap grew over ``T >= 20``
  rounds where eq. (14) promises convergence; ``details`` give the rate over the second half
  of the run too, which tells growth from a transient.
"""
from __future__ import annotations

import math

import numpy as np

from cflbounds.bounds import dsc as bounds
from cflbounds.claims import Domain, Instance, Parameter
from . import checks
from .experiment import ProblemConfig, run_configuration

__all__ = ["PROBLEM", "T1_PARAMETERS", "E14_PARAMETERS", "T1_TRIALS", "BALL", "t1_domain", "e14_domain",
           "T1_DOMAIN", "E14_DOMAIN", "measure"]

T1_TRIALS = 16  # channel-noise sequences per instance (DSC.T1's samples)
# the ball search of delta^2 and W (a lower estimate of their sup; the iterates' sups are added, so A4 holds at
# the iterates whatever it misses): within 7 % of 64 points x 100 steps on six configurations (measured)
BALL = {"ball_points": 8, "ball_steps": 20}

PROBLEM = [
    Parameter("clients", 2, 50, integer=True, log=True, description="devices K (the paper: 50)"),
    Parameter("d", 2, 16, integer=True, log=True, description="model dimension"),
    Parameter("labels", 1, 10, integer=True, description="labels (each device holds two of them; the paper: 10)"),
    Parameter("L", 0.1, 10.0, log=True, simple=1.0, description="largest Hessian eigenvalue of each label's loss"),
    Parameter("mu_over_L", 0.01, 1.0, log=True, simple=0.1,
              description="smallest over largest Hessian eigenvalue of each label's loss"),
    Parameter("step_fraction", 0.01, 1.0, log=True, simple=0.5,
              description="lambda / the instance's eq. (14) threshold (A < 1 below 1)"),
]
T1_PARAMETERS = PROBLEM + [
    Parameter("noise_scale", 1e-4, 1.0, log=True, simple=0.01,
              description="upload noise sigma^2 at the reference SNR (eq. 5; 50 m from the BS)"),
    Parameter("T", 1, 100, integer=True, log=True, description="aggregation rounds"),
]
E14_PARAMETERS = PROBLEM + [
    Parameter("T", 20, 200, integer=True, log=True, simple=20, description="aggregation rounds"),
]


def measure(point: dict, seed: int, ctx, *, noise_scale: float, trials: int) -> tuple:
    """Run the experiment of :mod:`.experiment` at ``point`` with instance seed ``seed``:
    returns the instance's constants (one row of :func:`.checks._constants`), its row of
    per-instance facts and its run table (``trials`` rows, gaps at 0, T/4, T/2 and T)."""
    L = float(point["L"])
    config = ProblemConfig("falsify", clients=int(point["clients"]), d=int(point["d"]), labels=int(point["labels"]),
                           mu=L * float(point["mu_over_L"]), L=L, noise_scale=noise_scale, instances=1)
    scale = {"instances": 1, "reps": trials, "iterations": int(point["T"]), **BALL}
    part = run_configuration(config, seed, scale, 0, instance_seeds=[seed], device=ctx.device,
                             factors=(float(point["step_fraction"]),))
    constants = checks._constants({"runs": part["runs"], "instances": part["instances"]}).iloc[0]
    return constants, part["instances"].iloc[0], part["runs"]


def _assumptions(constants, facts) -> list:
    """A1-A2, A4 (the measured sups against delta^2) and A4 at w*, as rows."""
    rows = bounds.assumptions(L=float(constants["L_exact"]), mu=float(constants["mu_exact"]),
                              delta_intra=math.sqrt(constants["delta_intra2"]),
                              delta_inter=math.sqrt(constants["delta_inter2"]),
                              intra_ratio=float(max(constants["ball_intra_ratio"], constants["visited_intra_ratio"])),
                              inter_ratio=float(max(constants["ball_inter_ratio"], constants["visited_inter_ratio"])))
    at_optimum = checks.a4_at_optimum(float(facts["optimum_client_gradient2"] / facts["start_client_gradient2"]))
    return [row.as_dict() for row in (*rows, at_optimum)]


def _theorem1(constants, initial_gap, T, reading="exact", kappa=False):
    """Theorem 1 at the instance's constants: (L, mu) exact for F or the clients' extremes;
    delta^2 measured, or the clients' condition number squared (``kappa``)."""
    L, mu = float(constants[f"L_{reading}"]), float(constants[f"mu_{reading}"])
    if kappa:
        delta_intra = delta_inter = float(constants["L_clients"] / constants["mu_clients"])
    else:
        delta_intra, delta_inter = math.sqrt(constants["delta_intra2"]), math.sqrt(constants["delta_inter2"])
    return bounds.theorem1(initial_gap=float(initial_gap), L=L, mu=mu, learning_rate=float(constants["step_size"]),
                           delta_inter=delta_inter, delta_intra=delta_intra,
                           weight_factor=min(1.0, float(constants["W"])), noise_factor=float(constants["N"]),
                           iterations=int(T))


def _common_details(constants, facts, T) -> dict:
    step, L = float(constants["step_size"]), float(constants["L_exact"])
    return {"lambda": step, "lambda_L": step * L, "lambda_over_2_over_L": step * L / 2.0,
            "threshold": float(constants["threshold"]), "L": L, "mu": float(constants["mu_exact"]),
            "L_clients": float(constants["L_clients"]), "mu_clients": float(constants["mu_clients"]),
            "delta_intra2": float(constants["delta_intra2"]), "delta_inter2": float(constants["delta_inter2"]),
            "W": float(constants["W"]), "groups": int(facts["groups"]), "T": int(T),
            "A": float(bounds.contraction(L, float(constants["mu_exact"]), step,
                                          math.sqrt(constants["delta_inter2"]), math.sqrt(constants["delta_intra2"]),
                                          min(1.0, float(constants["W"]))))}


def _t1_instance(point: dict, seed: int, ctx, bound_scale: float) -> Instance:
    """DSC.T1 at one point (module docstring); ``bound_scale`` != 1 plants an error."""
    constants, facts, runs = measure(point, seed, ctx, noise_scale=float(point["noise_scale"]), trials=T1_TRIALS)
    T = int(point["T"])
    samples = runs[f"gap_{T}"].to_numpy(float)
    initial_gap = float(runs["gap_0"].iloc[0])
    result = _theorem1(constants, initial_gap, T)
    bound = bound_scale * result.value
    with np.errstate(over="ignore", invalid="ignore"):
        measured = float(np.mean(samples))
    generous = {name: bound_scale * _theorem1(constants, initial_gap, T, *reading).value
                for name, reading in (("bound_clients_reading", ("clients",)),
                                      ("bound_kappa_reading", ("clients", True)))}
    details = {**_common_details(constants, facts, T), "initial_gap": initial_gap, "N": float(constants["N"]),
               "noise_scale": float(point["noise_scale"]), "trials": len(samples),
               "diverged_trials": int((~np.isfinite(samples)).sum()), "bound_initial_term": bound_scale
               * result.terms["initial"], "bound_noise_term": bound_scale * result.terms["noise"], **generous}
    rows = _assumptions(constants, facts) + [row.as_dict() for row in result.assumptions]
    return Instance(measured, bound, rows, samples=samples.tolist(), details=details)


def _rate(later, earlier, rounds):
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return float(np.power(later / earlier, 1.0 / rounds))


def _e14_instance(point: dict, seed: int, ctx, rate_bound: float) -> Instance:
    """DSC.E14 at one point, in the ideal channel (module docstring)."""
    constants, facts, runs = measure(point, seed, ctx, noise_scale=0.0, trials=1)
    T = int(point["T"])
    gap_0, gap_half, gap_T = (float(runs[f"gap_{t}"].iloc[0]) for t in (0, T // 2, T))
    result = bounds.equation14(L=float(constants["L_exact"]), delta_inter=math.sqrt(constants["delta_inter2"]),
                               delta_intra=math.sqrt(constants["delta_intra2"]),
                               weight_factor=min(1.0, float(constants["W"])), mu=float(constants["mu_exact"]),
                               learning_rate=float(constants["step_size"]))
    details = {**_common_details(constants, facts, T), "initial_gap": gap_0, "final_gap": gap_T,
               "rate_second_half": _rate(gap_T, gap_half, T - T // 2),
               "gd_factor_top": abs(1.0 - float(constants["step_size"]) * float(constants["L_exact"]))}
    rows = _assumptions(constants, facts) + [row.as_dict() for row in result.assumptions]
    return Instance(_rate(gap_T, gap_0, T), rate_bound, rows, details=details)


def _constraints(point: dict) -> list:
    """The parameter-only assumption: mu <= L of the labels' losses (A1, A2)."""
    return [row.as_dict() for row in bounds.assumptions(L=point["L"], mu=point["L"] * point["mu_over_L"],
                                                        delta_intra=1.0, delta_inter=1.0)]


def t1_domain(bound_scale: float = 1.0, parameters=None) -> Domain:
    """DSC.T1's domain; ``bound_scale`` multiplies the bound (a planted error when != 1),
    ``parameters`` narrows the ranges (default :data:`T1_PARAMETERS`)."""
    return Domain(list(parameters or T1_PARAMETERS),
                  lambda points, seeds, ctx: [_t1_instance(p, s, ctx, bound_scale) for p, s in zip(points, seeds)],
                  rule="expectation", constraints=_constraints, confirmation=20,
                  note="DSC on shared-optimum quadratic label mixtures by devices, dimension, labels, L, mu/L, the "
                       "step size as a fraction of eq. (14)'s threshold, upload noise and rounds; E[F(w^T) - F*] over "
                       f"{T1_TRIALS} noise sequences against Theorem 1")


def e14_domain(rate_bound: float = 1.0, parameters=None) -> Domain:
    """DSC.E14's domain; ``rate_bound`` < 1 plants an error (a claimed rate)."""
    return Domain(list(parameters or E14_PARAMETERS),
                  lambda points, seeds, ctx: [_e14_instance(p, s, ctx, rate_bound) for p, s in zip(points, seeds)],
                  rule="deterministic", constraints=_constraints, confirmation=20,
                  note="DSC in the ideal channel on shared-optimum quadratic label mixtures by devices, dimension, "
                       "labels, L, mu/L, the step size as a fraction of eq. (14)'s threshold and rounds; the per-round "
                       "rate of F(w^t) - F* against 1")


T1_DOMAIN = t1_domain()
E14_DOMAIN = e14_domain()
