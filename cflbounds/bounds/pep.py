"""Tight worst cases of first-order steps, by performance estimation (PEPit on cvxpy).

A theorem's per-iteration contraction factor is an upper bound over a function class;
performance estimation computes the exact worst case of the same step over the same
class (Drori & Teboulle 2014; Taylor, Hendrickx & Glineur 2017), as a small SDP solved
by cvxpy's default SDP solver through PEPit. So a report can show, side by side, the
paper's factor, the tight factor and the measured one.

The step is heavy ball, ``x+ = x - eta grad f(x) + beta (x - x-)`` (CFL-MGD eq. 7/32;
``beta = 0`` is IFCA's gradient step), over ``F_{mu,L}``, the L-smooth mu-strongly convex
functions, with ``x*`` the minimiser and distances relative to the start:

* ``start="state"``: ``||x_0 - x*|| <= 1`` and ``||x_(-1) - x*|| <= 1`` (the two iterates
  the step depends on lie in the unit ball: a one-step contraction of the state);
* ``start="at-rest"``: ``x_(-1) = x_0`` (CFL-MGD's ``chi^(-1) = chi^(0)``).

The value is ``sup ||x_T - x*||`` (a factor on the distance, not its square). The SDP is
solved at ``L = 1`` (``f -> f/L`` maps ``F_{mu,L}`` onto ``F_{mu/L,1}`` and the step ``eta``
onto ``eta L`` with the same iterates: exact, and better conditioned). Results are
deterministic and cached on disk (:mod:`cflbounds.bounds._cache`). ``F_{L,L}`` holds only
the quadratics ``(L/2)||x - x*||^2 + c``, where PEP's interpolation conditions divide by
``L - mu``; there the step is linear and the worst case is computed exactly from its
recurrence instead. A solve the solver cannot certify raises
:class:`PerformanceEstimationError`; it is never returned as a number.

Beside them: :func:`heavy_ball_rate`, a per-step rate that is not an artefact of one
horizon, and :func:`heavy_ball_spectral_radius`, the asymptotic rate on the quadratics.
"""
from __future__ import annotations

import contextlib
import io
import warnings
from importlib.metadata import version
from numbers import Integral, Real

import numpy as np

from .._validation import Interval, Options, require, validate_params
from ._constraints import NONNEGATIVE, POSITIVE
from ._cache import cached

__all__ = ["heavy_ball_worst_case", "heavy_ball_rate", "heavy_ball_spectral_radius", "PerformanceEstimationError",
           "START"]

START = ("state", "at-rest")
_STEP = {"smoothness": POSITIVE, "strong_convexity": NONNEGATIVE, "step": POSITIVE,
         "beta": [Interval(Real, 0, 1, closed="left")]}
_HORIZON = [Interval(Integral, 1, 200, closed="both")]
_LOWER_BOUND_CURVATURES = 65  # quadratics of F_{mu,L} whose worst case the SDP's value must reach
_SOLVER_SLACK = 1e-3  # SCS's accuracy on the squared factor is ~1e-4; a shortfall beyond 1e-3 is a failed solve


class PerformanceEstimationError(RuntimeError):
    """The SDP solver could not certify a worst case (no optimal status, data outside its
    numerical range, or a value below the worst case of a quadratic of the class)."""


def _normalised(mu, L, step) -> tuple[float, float]:
    """``(mu/L, eta L)``: the problem at ``L = 1``, after checking the pair is admissible."""
    require(mu <= L, f"The 'strong_convexity' parameter (mu={mu}) must not exceed 'smoothness' (L={L}).")
    scaled = float(step) * float(L)
    require(np.isfinite(scaled), f"The step times the smoothness (eta L = {step!r} x {L!r}) must be a finite float.")
    return float(mu) / float(L), scaled


@validate_params({**_STEP, "iterations": _HORIZON, "start": [Options(START)]})
def heavy_ball_worst_case(smoothness, strong_convexity, step, beta=0.0, iterations=1, start="state") -> dict:
    """Tight ``sup ||x_T - x*||`` of ``T = iterations`` heavy-ball steps over ``F_{mu,L}``.

    Returns ``{"worst_case", "per_step", "solver"}``: the factor after T steps, its T-th
    root, and what computed it. ``beta = 0``, one step: the classic
    ``max(|1 - eta mu|, |1 - eta L|)``. ``per_step`` belongs to this one horizon (at rest
    the worst case can vanish at some T, e.g. on ``F_{L,L}``); :func:`heavy_ball_rate` gives
    a rate over every horizon up to T. Raises :class:`PerformanceEstimationError` when the
    SDP solver fails (e.g. ``eta L`` so large that the worst case leaves its range).
    """
    kappa, scaled = _normalised(strong_convexity, smoothness, step)
    beta, iterations = float(beta), int(iterations)
    if kappa == 1.0:
        value = {"worst_case": _quadratic_worst_case(np.array([1.0]), scaled, beta, iterations, start),
                 "solver": "closed form (F_{L,L} is one quadratic)"}
    else:
        key = {"method": "heavy-ball", "L": 1.0, "mu": kappa, "step": scaled, "beta": beta,
               "iterations": iterations, "start": start, "pepit": version("PEPit"), "cvxpy": version("cvxpy")}
        value = cached("pep", key, lambda: _solve(kappa, scaled, beta, iterations, start))
    with np.errstate(over="ignore"):
        return {**value, "per_step": value["worst_case"] ** (1.0 / iterations)}


@validate_params({**_STEP, "horizon": _HORIZON, "start": [Options(START)]})
def heavy_ball_rate(smoothness, strong_convexity, step, beta=0.0, horizon=10, start="at-rest") -> dict:
    """The per-step rate over every horizon up to ``T = horizon``:

        max_{1 <= t <= T} (sup ||x_t - x*||)^(1/t),

    the smallest r with ``sup ||x_t - x*|| <= r^t`` for every t <= T (from the tight worst
    cases of :func:`heavy_ball_worst_case`). Unlike one horizon's T-th root it cannot vanish
    where the worst case happens to cross zero at T (on ``F_{2,2}`` with ``eta = 1/8``,
    ``beta = 1/2`` from rest it is 0 at t = 6 and 10, 0.707 at t = 8). Returns ``{"rate",
    "horizon"`` (the t attaining it)``, "rates", "worst_cases"}`` (per t = 1..T).
    """
    worst = np.array([heavy_ball_worst_case(smoothness, strong_convexity, step, beta, t, start)["worst_case"]
                      for t in range(1, horizon + 1)])
    with np.errstate(over="ignore"):
        rates = worst ** (1.0 / np.arange(1, horizon + 1))
    best = int(np.argmax(rates))
    return {"rate": float(rates[best]), "horizon": best + 1, "rates": rates.tolist(), "worst_cases": worst.tolist()}


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


def _solve(kappa, step, beta, iterations, start) -> dict:
    """The SDP at ``L = 1``; its value is checked against the worst quadratic of the class."""
    import cvxpy
    from PEPit import PEP
    from PEPit.functions import SmoothStronglyConvexFunction

    problem = PEP()
    function = problem.declare_function(SmoothStronglyConvexFunction, mu=kappa, L=1.0)
    optimum = function.stationary_point()
    x = problem.set_initial_point()
    problem.set_initial_condition((x - optimum) ** 2 <= 1)
    previous = x
    if start == "state":
        previous = problem.set_initial_point()
        problem.set_initial_condition((previous - optimum) ** 2 <= 1)
    for _ in range(iterations):
        x, previous = x - step * function.gradient(x) + beta * (x - previous), x
    problem.set_performance_metric((x - optimum) ** 2)
    setting = f"mu/L={kappa!r}, eta L={step!r}, beta={beta!r}, T={iterations}, start={start!r}"
    try:  # the solver's own warnings and PEPit's prints are replaced by the status check below
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            squared = problem.solve(verbose=0)
    except (ValueError, ArithmeticError, cvxpy.error.SolverError) as error:
        raise PerformanceEstimationError(f"The performance-estimation SDP ({setting}) could not be solved: "
                                         f"{error}") from None
    status = problem.wrapper.prob.status
    if squared is None or status != "optimal" or not np.isfinite(squared):
        raise PerformanceEstimationError(f"The performance-estimation SDP ({setting}) was not solved: solver "
                                         f"{problem.wrapper.solver_name} ended with status {status!r}.")
    lower = _quadratic_worst_case(np.linspace(kappa, 1.0, _LOWER_BOUND_CURVATURES), step, beta, iterations, start)
    if squared < lower**2 - _SOLVER_SLACK * max(1.0, lower**2):
        raise PerformanceEstimationError(f"The performance-estimation SDP ({setting}) returned {squared:.6g}, below "
                                         f"{lower**2:.6g}, the squared worst case of a quadratic of the class: the "
                                         f"solver's answer is wrong.")
    return {"worst_case": float(np.sqrt(max(squared, 0.0))), "solver": f"PEPit/cvxpy {problem.wrapper.solver_name}"}


def _quadratic_worst_case(curvatures, step, beta, iterations, start) -> float:
    """The worst case over the quadratics ``(lam/2)||x - x*||^2``, ``lam`` in ``curvatures``
    (exact on ``F_{L,L}``, a lower bound on ``F_{mu,L}``): the errors obey ``e+ = (1 + beta -
    eta lam) e - beta e-``, so ``e_T = a e_0 + b e_(-1)`` and the sup is ``|a + b|`` at rest
    and ``|a| + |b|`` from the state ball."""
    now = np.stack([np.ones_like(curvatures), np.zeros_like(curvatures)])  # coefficients of (e_0, e_(-1))
    before = np.stack([np.zeros_like(curvatures), np.ones_like(curvatures)])
    with np.errstate(over="ignore", invalid="ignore"):
        for _ in range(iterations):
            now, before = (1 + beta - step * curvatures) * now - beta * before, now
        values = np.abs(now.sum(axis=0)) if start == "at-rest" else np.abs(now).sum(axis=0)
    return float(np.max(np.where(np.isnan(values), np.inf, values)))
