"""Tight worst cases of first-order steps, by performance estimation, certified.

A theorem's per-iteration contraction factor is an upper bound over a function class;
performance estimation computes the exact worst case of the same step over the same
class (Drori & Teboulle 2014; Taylor, Hendrickx & Glineur 2017), as a small SDP. So a
report can show, side by side, the paper's factor, the tight factor and the measured one.

The step is heavy ball, ``x+ = x - eta grad f(x) + beta (x - x-)`` (CFL-MGD eq. 7/32;
``beta = 0`` is IFCA's gradient step), over ``F_{mu,L}``, the L-smooth mu-strongly convex
functions, with ``x*`` the minimiser and the start in the unit ball around it:

* ``start="state"``: ``||x_0 - x*|| <= 1`` and ``||x_(-1) - x*|| <= 1`` (the two iterates
  the step depends on lie in the unit ball: a one-step contraction of the state);
* ``start="at-rest"``: ``x_(-1) = x_0`` (CFL-MGD's ``chi^(-1) = chi^(0)``).

Two metrics (CFL-MGD's lemmas use both): ``metric="distance"``, ``sup ||x_T - x*||`` (a factor
on the distance, not its square), and ``metric="function-value"``, ``sup f(x_T) - f*``.
The SDP is solved at ``L = 1`` (``f -> f/L`` maps ``F_{mu,L}`` onto ``F_{mu/L,1}`` and the
step ``eta`` onto ``eta L`` with the same iterates: exact, and better conditioned; a
function value scales back by L) by CLARABEL, an interior-point solver, in a scaled basis
that holds long horizons without cancellation (:mod:`cflbounds.bounds._pep_sdp`), and a value
is returned only with a certificate (:mod:`cflbounds.bounds._pep_certificate`): a bracket
``[lower_bound, upper_bound]`` that holds the worst case, its upper end a dual point of the
SDP whose bound is verified here (never the solver's number), its lower end an exact lower
bound (the worst quadratic of the class, the replayed worst case made exactly feasible).
``certified`` says ``"tight"`` (relative width at most 1e-6) or ``"bracket"``; the value
(``worst_case``) is the upper end. Results are deterministic and cached on disk
(:mod:`cflbounds.bounds._cache`). ``F_{L,L}`` holds only the quadratics
``(L/2)||x - x*||^2 + c``, where the interpolation inequalities divide by ``L - mu``; there
the step is linear and the worst case is computed exactly from its recurrence. When no
bracket narrower than 1% can be proven, :class:`PerformanceEstimationError` is raised; an
uncertified number is never returned. Horizons up to T = 50 are tested: a case at T = 50 takes
25 s to 2 min of CPU (with the solves at T/2 and T/4 that set its units), against 1-3 s at
T = 20. The SDP has T^2 inequalities over a (T+1)-square Gram matrix, so time grows like T^6
and memory like T^4 (about 50 MB at T = 50, 13 GB at T = 200): beyond T = 50 is untested, and
T = 200, though a valid horizon, is out of reach.

Beside them: :func:`heavy_ball_rate`, a per-step rate that is not an artefact of one
horizon, and :func:`heavy_ball_spectral_radius`, the asymptotic rate on the quadratics.
"""
from __future__ import annotations

import hashlib
from importlib.metadata import version
from numbers import Integral, Real
from pathlib import Path

import numpy as np

from .._validation import Interval, Options, require, validate_params
from . import _pep_certificate, _pep_dual, _pep_sdp
from ._cache import cached
from ._constraints import NONNEGATIVE, POSITIVE
from ._pep_certificate import (ATTEMPTS, CERTIFICATE, CERTIFIED_GAP, MAX_WIDTH, TRACE_SETTINGS,
                               PerformanceEstimationError, certified_worst_case)
from ._pep_sdp import SOLVER, quadratic_errors

__all__ = ["heavy_ball_worst_case", "heavy_ball_rate", "heavy_ball_spectral_radius", "PerformanceEstimationError",
           "START", "METRIC"]

START = ("state", "at-rest")
METRIC = ("distance", "function-value")
_STEP = {"smoothness": POSITIVE, "strong_convexity": NONNEGATIVE, "step": POSITIVE,
         "beta": [Interval(Real, 0, 1, closed="left")]}
_HORIZON = [Interval(Integral, 1, 200, closed="both")]


def _normalised(mu, L, step) -> tuple[float, float]:
    """``(mu/L, eta L)``: the problem at ``L = 1``, after checking the pair is admissible."""
    require(mu <= L, f"The 'strong_convexity' parameter (mu={mu}) must not exceed 'smoothness' (L={L}).")
    scaled = float(step) * float(L)
    require(np.isfinite(scaled), f"The step times the smoothness (eta L = {step!r} x {L!r}) must be a finite float.")
    return float(mu) / float(L), scaled


@validate_params({**_STEP, "iterations": _HORIZON, "start": [Options(START)], "metric": [Options(METRIC)]})
def heavy_ball_worst_case(smoothness, strong_convexity, step, beta=0.0, iterations=1, start="state",
                          metric="distance") -> dict:
    """Tight ``sup ||x_T - x*||`` (``metric="distance"``) or ``sup f(x_T) - f*``
    (``metric="function-value"``) of ``T = iterations`` heavy-ball steps over ``F_{mu,L}``, or a
    certified bracket on it.

    Returns ``{"worst_case", "lower_bound", "upper_bound", "width", "certified", "duality_gap",
    "primal_residual", "solver", "tolerances"}`` and, for the distance, ``"per_step"`` (the T-th
    root of the value): the value (the upper end of the bracket, so never understated), the
    bracket's two ends (the worst case lies in ``[lower_bound, upper_bound]``), its relative
    width ``(upper - lower)/upper``, ``"tight"`` (width at most 1e-6, on ``||x_T - x*||^2`` for
    the distance) or ``"bracket"``, the relative gap on the SDP's own metric
    (``||x_T - x*||^2`` for the distance), the replay's largest relative violation of an
    interpolation inequality, and what computed it with which tolerances.
    ``beta = 0``, one step: the classic ``max(|1 - eta mu|, |1 - eta L|)``. ``per_step``
    belongs to this one horizon (at rest the worst case can vanish at some T, e.g. on
    ``F_{L,L}``); :func:`heavy_ball_rate` gives a rate over every horizon up to T. Raises
    :class:`PerformanceEstimationError` when no bracket narrower than 1% is proven.
    """
    kappa, scaled = _normalised(strong_convexity, smoothness, step)
    beta, iterations, L = float(beta), int(iterations), float(smoothness)
    with np.errstate(over="ignore"):
        if kappa == 1.0:
            error = float(quadratic_errors([1.0], scaled, beta, iterations, start)[-1, 0])
            exact = L * error**2 / 2 if metric == "function-value" else error
            result = {"worst_case": exact, "lower_bound": exact, "upper_bound": exact, "width": 0.0,
                      "certified": "tight", "duality_gap": 0.0, "primal_residual": 0.0,
                      "solver": "closed form (F_{L,L} is one quadratic)", "tolerances": {}}
        else:
            solved = _certified(kappa, scaled, beta, iterations, start, metric)
            # the SDP's metric at L = 1: the distance is its square root, a function value scales by L
            to_units = (lambda value: L * value) if metric == "function-value" else np.sqrt
            lower, upper = float(to_units(solved["lower_bound"])), float(to_units(solved["upper_bound"]))
            result = {"worst_case": upper, "lower_bound": lower, "upper_bound": upper,
                      "width": (upper - lower) / upper if upper > 0 else 0.0, "certified": solved["certified"],
                      "duality_gap": solved["duality_gap"], "primal_residual": solved["primal_residual"],
                      "solver": f"{SOLVER} via cvxpy, certified",
                      "tolerances": {"certified_gap": CERTIFIED_GAP, "max_width": MAX_WIDTH,
                                     **solved["solver_settings"]}}
        if metric == "distance":
            result["per_step"] = result["worst_case"] ** (1.0 / iterations)
    return result


def _code_digest() -> str:
    """SHA-256 of the source of the SDP, its dual check, the certificate and this module (which
    chooses the units): any change of their logic is a new cache key, even one that forgets to
    bump :data:`CERTIFICATE`."""
    digest = hashlib.sha256()
    for path in (_pep_sdp.__file__, _pep_dual.__file__, _pep_certificate.__file__, __file__):
        digest.update(Path(path).read_bytes())
    return digest.hexdigest()


_CODE = _code_digest()


def _certified(kappa, step, beta, iterations, start, metric) -> dict:
    """:func:`~cflbounds.bounds._pep_certificate.certified_worst_case`, cached under a key holding
    the certificate's version and code, the solver, its settings and the tolerances (so no value
    computed otherwise is ever read back). A long horizon's units come from the cached worst case
    at half the horizon (same start and metric)."""
    key = {"method": "heavy-ball", "L": 1.0, "mu": kappa, "step": step, "beta": beta, "iterations": iterations,
           "start": start, "metric": metric, "certificate": CERTIFICATE, "code": _CODE, "solver": SOLVER,
           "attempts": ATTEMPTS, "trace_settings": TRACE_SETTINGS, "certified_gap": CERTIFIED_GAP,
           "max_width": MAX_WIDTH, "cvxpy": version("cvxpy"), "clarabel": version("clarabel")}

    def trajectory(horizon):
        try:
            return _certified(kappa, step, beta, horizon, start, metric)["trajectory"]
        except PerformanceEstimationError:
            return None

    return cached("pep-verified", key, lambda: certified_worst_case(kappa, step, beta, iterations, start, metric,
                                                                   trajectory))


@validate_params({**_STEP, "horizon": _HORIZON, "start": [Options(START)]})
def heavy_ball_rate(smoothness, strong_convexity, step, beta=0.0, horizon=10, start="at-rest") -> dict:
    """The per-step rate over every horizon up to ``T = horizon``:

        max_{1 <= t <= T} (sup ||x_t - x*||)^(1/t),

    the smallest r with ``sup ||x_t - x*|| <= r^t`` for every t <= T (from the tight worst
    cases of :func:`heavy_ball_worst_case`). Unlike one horizon's T-th root it cannot vanish
    where the worst case happens to cross zero at T (on ``F_{2,2}`` with ``eta = 1/8``,
    ``beta = 1/2`` from rest it is 0 at t = 6 and 10, 0.707 at t = 8). Returns ``{"rate",
    "horizon"`` (the t attaining it)``, "rates", "worst_cases"`` (per t = 1..T)``,
    "duality_gap", "primal_residual", "width"}`` (the largest over the T solves)``, "brackets"``
    (how many of them are certified brackets rather than tight values)``, "certified"}``
    (``"tight"`` if none is). From brackets the rate is an upper bound (their upper ends).
    """
    solved = [heavy_ball_worst_case(smoothness, strong_convexity, step, beta, t, start) for t in range(1, horizon + 1)]
    worst = np.array([result["worst_case"] for result in solved])
    with np.errstate(over="ignore"):
        rates = worst ** (1.0 / np.arange(1, horizon + 1))
    best = int(np.argmax(rates))
    brackets = sum(result["certified"] == "bracket" for result in solved)
    return {"rate": float(rates[best]), "horizon": best + 1, "rates": rates.tolist(), "worst_cases": worst.tolist(),
            "duality_gap": max(result["duality_gap"] for result in solved),
            "primal_residual": max(result["primal_residual"] for result in solved),
            "width": max(result["width"] for result in solved), "brackets": brackets,
            "certified": "bracket" if brackets else "tight"}


@validate_params(_STEP)
def heavy_ball_spectral_radius(smoothness, strong_convexity, step, beta=0.0) -> float:
    """The asymptotic per-step rate of heavy ball on the quadratics of ``F_{mu,L}``: the
    largest spectral radius of the iteration matrix ``[[1 + beta - eta lam, -beta], [1, 0]]``
    over curvatures ``lam in [mu, L]``.

    Its eigenvalues solve ``z^2 - a z + beta = 0`` (``a = 1 + beta - eta lam``): modulus
    ``sqrt(beta)`` when ``a^2 < 4 beta``, else ``(|a| + sqrt(a^2 - 4 beta))/2``, which grows
    with ``|a|``, and ``|a|`` is convex in ``lam``: the maximum is at ``lam = mu`` or ``L``.
    A reference, not a bound over all of ``F_{mu,L}``: there heavy ball can be slower than
    on its quadratics (Lessard, Recht & Packard 2016).
    """
    _normalised(strong_convexity, smoothness, step)
    with np.errstate(over="ignore", invalid="ignore"):
        a = np.abs(1.0 + beta - float(step) * np.array([float(strong_convexity), float(smoothness)]))
        real = (a + np.sqrt(np.maximum(a * a - 4.0 * beta, 0.0))) / 2.0
    return float(np.max(np.where(a * a < 4.0 * beta, np.sqrt(beta), real)))
