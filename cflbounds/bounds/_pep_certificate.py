"""The certificate that turns a performance-estimation solve into a value the toolkit may report:
a bracket ``[lower, upper]`` that holds the worst case, both ends proven here.

* **upper**: the solver's dual multipliers, projected onto ``lam >= 0``, give a dual point whose
  bound is computed and verified here (:mod:`._pep_dual`: the dual slack's smallest eigenvalue
  beyond a rounding allowance, the equality constraint's residual bounded through
  ``0 <= f_t <= ||x_t - x*||^2/2``, a negative eigenvalue paid for with a proven bound on
  ``tr(G)``: Jansson, Chaykin & Keil 2007). Weak duality (Drori & Teboulle 2014; Taylor,
  Hendrickx & Glineur 2017) makes it an upper bound whatever the solver did.
* **lower**: the worst quadratic of the class and the solver's primal worst case replayed as
  points, gradients and values and made exactly feasible by mixing in a strictly feasible
  trajectory (:meth:`._pep_sdp.ScaledPEP.replay`): the quadratics' one, or at long horizons,
  where that decays too fast, the worst case of a slightly smaller class.

Each attempt (a solver setting, in a basis) gives a valid bracket, so the least upper and the
largest lower end over the attempts are kept, and the attempts stop at the first tight one.

The result is ``"tight"`` when the bracket's relative width is at most :data:`CERTIFIED_GAP`,
else a ``"bracket"``; the reported value is the upper end (a worst case never understated). A
bracket wider than :data:`MAX_WIDTH` is no value, and neither is a dual that proves nothing (or
an upper end below the lower, which only a wrong SDP can give): those raise
:class:`PerformanceEstimationError`. The solver's status is recorded but decides nothing.

Units. The SDP is well scaled when the unit ``s_t`` is the size of ``x_t`` on the worst case
(:mod:`._pep_sdp`). The worst quadratic of the class is a lower estimate that is good for short
horizons; beyond :data:`BASE_HORIZON` steps the worst case of ``F_{mu,L}`` can decay much more
slowly (heavy ball at mu/L = 1/4, eta L = 1, beta = 0.3: 0.66 per step against 0.55 on the
quadratics, a factor 1e4 in ``s_50^2``). There the units continue a shorter horizon's solution:
the worst-case trajectory at ``ceil(T/2)`` steps (itself solved this way, and cached) up to
three quarters of its horizon, then its rate fitted over the middle, never below the quadratic
units. Units change only the conditioning: any positive units give the same SDP.
"""
from __future__ import annotations

from functools import cached_property
from typing import Callable, Optional

import numpy as np

from ._pep_dual import trace_bound, verified_upper_bound
from ._pep_sdp import BASES, SOLVER, ScaledPEP, cancellation, quadratic_errors

__all__ = ["CERTIFICATE", "ATTEMPTS", "TRACE_SETTINGS", "CERTIFIED_GAP", "MAX_WIDTH", "BASE_HORIZON",
           "PerformanceEstimationError", "certified_worst_case"]

# what the cache key holds of the method: change it with any change of the certificate's logic
CERTIFICATE = "verified-dual-bracket/1"


def _direct_solve() -> dict:
    """faer's supernodal LDL on one thread (it factors the dense PSD block 2-3x faster than the
    default qdldl) where the installed Clarabel has it (not every build or version does), else
    Clarabel's defaults; decided by a one-variable solve."""
    import clarabel
    from scipy import sparse

    faer = {"direct_solve_method": "faer", "max_threads": 1}
    try:
        settings = clarabel.DefaultSettings()
        settings.verbose = False
        for name, value in faer.items():
            setattr(settings, name, value)
        clarabel.DefaultSolver(sparse.csc_matrix((1, 1)), np.ones(1), sparse.csc_matrix(-np.ones((1, 1))),
                               np.zeros(1), [clarabel.NonnegativeConeT(1)], settings).solve()
    except Exception:  # an unknown setting or value: a bare Exception or an AttributeError
        return {}
    return faer


# passed through cvxpy to clarabel.DefaultSettings. The degenerate SDPs stall at dual residuals
# of a few 1e-8, where the solver's default tol_feas = 1e-8 ends "almost solved"; the precision
# that counts is the one the certificate measures. Tight iterative refinement and a larger
# static regularisation keep the KKT solves accurate near the optimum. A case that one setting
# cannot certify tightly is tried with the next (and in the other basis, when it is usable).
_BASE = {"tol_gap_abs": 1e-9, "tol_gap_rel": 1e-9, "tol_feas": 1e-7, "max_iter": 400,
         "iterative_refinement_reltol": 1e-15, "iterative_refinement_abstol": 1e-16,
         "iterative_refinement_max_iter": 30, "iterative_refinement_stop_ratio": 1.1, **_direct_solve()}
ATTEMPTS = ({**_BASE, "static_regularization_constant": 1e-6}, {**_BASE, "static_regularization_constant": 1e-7},
            {**_BASE, "static_regularization_constant": 1e-6, "equilibrate_enable": False})
# max tr(G) needs no precision: its dual only has to be positive definite with room to spare
TRACE_SETTINGS = {**_BASE, "tol_gap_abs": 1e-3, "tol_gap_rel": 1e-3, "tol_feas": 1e-6}
CERTIFIED_GAP = 1e-6  # largest relative width (upper - lower)/upper of a "tight" value
MAX_WIDTH = 1e-2  # largest relative width of a bracket returned as a value
BASE_HORIZON = 20  # horizons up to this use the quadratic units
_USABLE = 1e3  # a basis that cancels more (relative) is not worth a solve
_INNER_MARGIN = 0.1  # the strictly feasible trajectory's class, F_{kappa + d, 1 - d}, d = 0.1 (1 - kappa)
_CURVATURE_GRID = 257  # quadratics of F_{kappa,1} whose worst case is the lower bound and the units


class PerformanceEstimationError(RuntimeError):
    """No certified value: no dual point proved an upper bound, the bracket is wider than
    :data:`MAX_WIDTH`, or the bounds contradict each other (a wrong SDP or solver)."""


class _Uncertified(Exception):
    """One solver setting's answer proves no bracket (the reason, without the case)."""


def certified_worst_case(kappa, step, beta, iterations, start, metric,
                         trajectory: Optional[Callable[[int], list]] = None) -> dict:
    """The certified bracket on the worst case of ``metric`` (``"distance"``: ``||x_T - x*||^2``;
    ``"function-value"``: ``f(x_T) - f*``) after T heavy-ball steps over ``F_{kappa,1}``
    (``kappa < 1``) from the unit start ball. ``trajectory(T0)`` gives the worst-case norms
    ``||x_t||`` (t = 0..T0) of a shorter horizon (or None), for the units beyond
    :data:`BASE_HORIZON`.

    Returns ``{"value", "lower_bound", "upper_bound", "width", "certified", "duality_gap",
    "primal_residual", "trajectory", "basis", "status", "solver_settings"}``: the upper end (the
    value), the two ends, the relative width (also under its old name ``duality_gap``), "tight"
    or "bracket", the replay's largest relative violation of an inequality, the replayed
    worst case's norms, the basis, the solver's status and the settings of the kept bracket.
    """
    setting = f"mu/L={kappa!r}, eta L={step!r}, beta={beta!r}, T={iterations}, start={start!r}, metric={metric!r}"
    quadratic, units = _quadratics(kappa, step, beta, iterations, start, metric, setting)
    shorter = trajectory(-(-iterations // 2)) if iterations > BASE_HORIZON and trajectory is not None else None
    if shorter is not None:
        units = continued_units(units, shorter)
    formulations = _formulations(kappa, step, beta, iterations, start, metric, units)
    best, lower, reasons = None, quadratic, []
    # every bracket is valid: keep the least upper and the largest lower end over the attempts
    for n, (settings, formulation) in enumerate((s, f) for s in ATTEMPTS for f in formulations):
        try:
            bounds = _bounds(formulation, settings, lower)
        except _Uncertified as reason:
            reasons.append(f"attempt {n + 1} ({formulation.basis}): {reason}")
            continue
        lower = max(lower, bounds["lower_bound"])
        if best is None or bounds["upper_bound"] < best["upper_bound"]:
            best = {**bounds, "solver_settings": settings}
        if best["upper_bound"] < lower * (1 - 1e-9):
            raise PerformanceEstimationError(
                f"The performance-estimation SDP ({setting}) could not be certified: the verified dual bound "
                f"{best['upper_bound']:.10g} is below {lower:.10g}, an exact lower bound (the worst quadratic of the "
                f"class or a replayed worst case): the SDP or the solver is wrong")
        best = _with_lower(best, lower)
        if best["certified"] == "tight":
            break
        reasons.append(f"attempt {n + 1} ({formulation.basis}): a bracket [{best['lower_bound']:.10g}, "
                       f"{best['upper_bound']:.10g}] of relative width {best['width']:.2g}")
    if best is None or best["width"] > MAX_WIDTH:
        raise PerformanceEstimationError(f"The performance-estimation SDP ({setting}) could not be certified (no "
                                         f"bracket of relative width at most {MAX_WIDTH:g} on its metric at L = 1): "
                                         + "; ".join(reasons))
    return best


def _quadratics(kappa, step, beta, iterations, start, metric, setting) -> tuple[float, np.ndarray]:
    """The worst case of the metric over the quadratics of ``F_{kappa,1}`` (an exact lower bound)
    and their worst ``||x_t||`` for t = 0..T+1 (the short horizons' units), or a named error
    when either leaves the float range."""
    curvatures = np.linspace(kappa, 1.0, _CURVATURE_GRID)
    errors = quadratic_errors(curvatures, step, beta, iterations + 1, start)
    with np.errstate(over="ignore"):
        final = errors[iterations]
        quadratic = float(np.max(curvatures / 2 * final**2 if metric == "function-value" else final**2))
        units = errors.max(axis=1)
        representable = np.isfinite(quadratic) and np.all(np.isfinite(units**2))
    if not representable:
        raise PerformanceEstimationError(f"The performance-estimation SDP ({setting}) was not solved: the worst case "
                                         f"over the quadratics of the class already leaves the float range.")
    # an at-rest worst case over the quadratics can vanish at some t; any positive unit is exact,
    # this one keeps every product of two units a normal float
    return quadratic, np.maximum(units, np.finfo(float).tiny ** 0.25)


class _Formulation:
    """One basis's scaled SDP with what its certificates share, each built or solved at most once
    and only on demand: the SDP, a proven bound on ``tr(G)`` and a strictly feasible trajectory."""

    def __init__(self, kappa, step, beta, iterations, start, metric, units, basis):
        self.basis, self._arguments = basis, (kappa, step, beta, iterations, start, metric, units, basis)

    @cached_property
    def sdp(self) -> ScaledPEP:
        return ScaledPEP(*self._arguments)

    @cached_property
    def trace(self) -> Optional[float]:
        """A proven ``rho >= tr(G)`` over the feasible set, from the dual of ``max tr(G)`` (a
        loose solve: its dual only has to be positive definite with room to spare), or None."""
        answer = self.sdp.solve(TRACE_SETTINGS, objective="trace")
        return trace_bound(self.sdp.data, answer.multipliers, answer.start_multipliers)

    @cached_property
    def inner(self) -> tuple:
        """A strictly feasible trajectory that decays like the worst case: the worst case of the
        smaller class ``F_{kappa + d, 1 - d}`` (``d`` = :data:`_INNER_MARGIN` ``(1 - kappa)``, a
        loose solve), checked against ``F_{kappa,1}``, where its slacks are a fraction of each
        pair's size. Mixed with a replayed worst case that breaks inequalities by ``r``
        (relative), it costs about ``r T`` of the metric, where the quadratics' trajectory
        (which decays faster) can cost all of it at T = 50. Empty when the solve fails."""
        sdp = self.sdp
        margin = _INNER_MARGIN * (1 - sdp.kappa)
        low, high = sdp.kappa + margin, 1 - margin
        smaller = ScaledPEP(low / high, sdp.step * high, sdp.beta, sdp.iterations, sdp.start, sdp.metric, sdp.units,
                            sdp.basis)
        solution = smaller.solve(TRACE_SETTINGS)
        if solution.gram is None or solution.values is None:
            return ()
        return (smaller.vectors(solution, smoothness=high, kappa=sdp.kappa),)


def _formulations(kappa, step, beta, iterations, start, metric, units) -> list:
    """The bases worth a solve, the one that cancels least first (:func:`._pep_sdp.cancellation`;
    it misjudges close calls, so the other is tried too unless it cancels beyond
    :data:`_USABLE`), each built when first used."""
    cancels = {basis: cancellation(step, beta, iterations, start, metric, units, basis) for basis in BASES}
    order = sorted(BASES, key=cancels.get)
    usable = [order[0]] + [basis for basis in order[1:] if cancels[basis] <= _USABLE]
    return [_Formulation(kappa, step, beta, iterations, start, metric, units, basis) for basis in usable]


def _bounds(formulation: _Formulation, settings, lower: float) -> dict:
    """Solve with ``settings`` and prove the bounds the answer gives (module docstring): the
    verified dual bound (with the formulation's bound on ``tr(G)`` when the slack is not PSD
    beyond rounding) and the exact lower bound (mixed with its strictly feasible trajectory when
    the quadratics' leaves the bracket wider than :data:`CERTIFIED_GAP`), or raise
    :class:`_Uncertified`."""
    sdp = formulation.sdp
    solution = sdp.solve(settings)
    if solution.gram is None or solution.values is None:
        raise _Uncertified(f"{SOLVER} returned no answer (status {solution.status!r})")
    upper, deficit = verified_upper_bound(sdp.data, solution.multipliers, solution.start_multipliers,
                                          lambda: formulation.trace)
    if upper is None:
        raise _Uncertified(f"{SOLVER} (status {solution.status!r}) gave a dual whose slack is not PSD "
                           f"(by {deficit:.2g}) and no proven bound on the feasible set to repair it")
    upper *= sdp.units[sdp.iterations] ** 2  # the SDP's objective is divided by s_T^2
    _, residual, replayed, norms = sdp.replay(solution)
    if upper - max(lower, replayed) > CERTIFIED_GAP * upper:
        _, residual, replayed, norms = sdp.replay(solution, formulation.inner)
    return {"upper_bound": float(upper), "lower_bound": float(max(lower, replayed)),
            "primal_residual": float(residual), "trajectory": norms, "basis": sdp.basis, "status": solution.status}


def _with_lower(bounds: dict, lower: float) -> dict:
    """The bracket ``[lower, upper]`` as reported: its value (the upper end), relative width and
    kind."""
    upper = max(bounds["upper_bound"], lower)
    width = (upper - lower) / upper if upper > 0 else 0.0
    return {**bounds, "value": float(upper), "upper_bound": float(upper), "lower_bound": float(lower),
            "width": float(width), "duality_gap": float(width),
            "certified": "tight" if width <= CERTIFIED_GAP else "bracket"}


def continued_units(units: np.ndarray, trajectory: list) -> np.ndarray:
    """Units for a long horizon from the worst-case norms ``||x_t||`` (t = 0..T0) of a shorter one
    (module docstring): the norms up to ``3 T0/4``, then their rate fitted over
    ``[T0/3, 3 T0/4]``, never below ``units`` (the quadratic ones)."""
    norms = np.maximum(np.asarray(trajectory, dtype=float), np.finfo(float).tiny ** 0.25)
    horizon = len(norms) - 1
    cut = horizon - max(2, horizon // 4)  # the last steps of a horizon bend its worst case
    window = np.arange(horizon // 3, cut + 1)
    if len(window) < 2 or not np.all(np.isfinite(np.log(norms))):
        return units
    slope = np.polyfit(window, np.log(norms[window]), 1)[0]
    steps = np.arange(len(units))
    with np.errstate(over="ignore", under="ignore"):
        continued = np.where(steps <= cut, norms[np.minimum(steps, cut)], norms[cut] * np.exp(slope * (steps - cut)))
    continued = np.where(np.isfinite(continued), continued, units)
    return np.maximum(units, continued)
