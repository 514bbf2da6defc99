"""The performance-estimation SDP of heavy ball over ``F_{kappa,1}``, written in a well-scaled
basis, solved by an interior-point method; the exact lower bound from its primal answer.

The worst case of T heavy-ball steps over ``F_{kappa,1}`` (``L = 1``, see :mod:`.pep`) is the
value of an SDP over the Gram matrix ``G`` of a basis of the points and gradients and over the
function values, under ``F_{mu,L}``'s interpolation inequalities for every ordered pair of the
minimiser and the points that the metric needs (Drori & Teboulle 2014; Taylor, Hendrickx &
Glineur 2017, Thm 4; ``L = 1``, ``x* = 0``, ``g* = 0``, ``f* = 0`` without loss of generality):

    f_i >= f_j + <g_j, x_i - x_j>
           + (||g_i - g_j||^2 + kappa ||x_i - x_j||^2 - 2 kappa <g_i - g_j, x_i - x_j>) / (2 (1 - kappa)),

and the start conditions ``||x_0||^2 <= 1`` (and ``||x_(-1)||^2 <= 1`` from the state ball).

Basis. Heavy ball ties the points and the gradients linearly (eq. 7/32), so either can be the
basis. PEPit's choice, the start points and the gradients (``basis="gradients"``), writes a late
iterate as the start plus gradient steps: when the iterates contract by ``1e-4`` that is a tiny
difference of O(1) coefficients, and an interior-point solver's tolerances swallow it (the
failures at T = 20 of issue 25). The iterates themselves (``basis="iterates"``: the start
points and ``x_1, ..., x_P``, with ``g_t = ((1 + beta) x_t - beta x_(t-1) - x_(t+1)) / eta``)
hold every iterate without cancellation, and a gradient cancels only by about ``1/(eta L)``.
:func:`cancellation` measures both; the certificate solves the one that cancels less first.

Scaling. Every basis vector, gradient and value is written in units of ``s_t``, the expected size
of ``x_t`` (``g_t = s_t u_t`` or ``x_t = s_t y_t``, ``f_t = s_t^2 v_t``), each inequality is divided
by the square of its larger unit and the objective by ``s_T^2``: an exact change of variables
that makes every number O(1) when the units are right (:mod:`._pep_certificate` chooses them).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ._pep_dual import DualData

__all__ = ["SOLVER", "BASES", "heavy_ball_iterates", "quadratic_errors", "cancellation", "ScaledPEP", "Solution",
           "Trajectory", "exact_lower_bound", "interpolation_slack"]

SOLVER = "CLARABEL"
BASES = ("gradients", "iterates")


def heavy_ball_iterates(x, previous, gradient, step, beta, iterations) -> list:
    """``[x_0, ..., x_T]`` of ``x+ = x - eta gradient(t, x) + beta (x - x-)`` (CFL-MGD eq. 7/32),
    for any arrays that support the arithmetic: points, coefficients over a basis, batches."""
    iterates = [x]
    for t in range(iterations):
        x, previous = x - step * gradient(t, x) + beta * (x - previous), x
        iterates.append(x)
    return iterates


def quadratic_errors(curvatures, step, beta, iterations, start) -> np.ndarray:
    """``sup |e_t|`` for t = 0..T over heavy ball on ``(lam/2)||x - x*||^2``, one column per ``lam``
    in ``curvatures``: ``e_t = a e_0 + b e_(-1)`` (the coefficients follow the step with gradient
    ``lam e``), so the sup over the start set is ``|a + b|`` at rest, ``|a| + |b|`` from the state
    ball. Overflow gives ``inf``."""
    curvatures = np.asarray(curvatures, dtype=float)
    start_coefficients = np.stack([np.ones_like(curvatures), np.zeros_like(curvatures)])  # of (e_0, e_(-1))
    with np.errstate(over="ignore", invalid="ignore"):
        coefficients = np.array(heavy_ball_iterates(start_coefficients, start_coefficients[::-1],
                                                    lambda t, e: curvatures * e, step, beta, iterations))
        errors = np.abs(coefficients.sum(axis=1)) if start == "at-rest" else np.abs(coefficients).sum(axis=1)
    return np.where(np.isnan(errors), np.inf, errors)


def _coefficients(step, beta, iterations, start, points, units, basis):
    """(start points, positions x_0..x_(P-1), gradients g_0..g_(P-1), last x_T) as coefficient
    vectors over the scaled basis (module docstring)."""
    starts = 2 if start == "state" else 1
    basis_vectors = np.eye(starts + points)
    if basis == "gradients":  # (x_0[, x_(-1)], u_0, ..., u_(P-1)), g_t = s_t u_t
        gradients = units[:points, None] * basis_vectors[starts:]
        iterates = heavy_ball_iterates(basis_vectors[0], basis_vectors[starts - 1], lambda t, x: gradients[t],
                                       step, beta, iterations)
        return basis_vectors[:starts], np.array(iterates[:points]), gradients, iterates[-1]

    def position(t):  # (x_0[, x_(-1)], y_1, ..., y_P), x_t = s_t y_t
        if t <= 0:
            return basis_vectors[0] if t == 0 else basis_vectors[starts - 1]
        return units[t] * basis_vectors[starts + t - 1]

    gradients = [((1 + beta) * position(t) - beta * position(t - 1) - position(t + 1)) / step for t in range(points)]
    return basis_vectors[:starts], np.array([position(t) for t in range(points)]), np.array(gradients), \
        position(iterations)


def cancellation(step, beta, iterations, start, metric, units, basis) -> float:
    """How much a basis cancels: the largest coefficient norm of an iterate (gradient basis) or of
    a gradient (iterate basis) over its unit ``s_t`` (``||g_t|| <= ||x_t||`` at L = 1)."""
    points = iterations + (metric == "function-value")
    _, positions, gradients, last = _coefficients(step, beta, iterations, start, points, units, basis)
    with np.errstate(over="ignore", invalid="ignore"):
        if basis == "gradients":
            sizes = np.append(np.linalg.norm(positions, axis=1) / units[:points],
                              np.linalg.norm(last) / units[iterations])
        else:
            sizes = np.linalg.norm(gradients, axis=1) / units[:points]
    return float(np.max(np.where(np.isnan(sizes), np.inf, sizes)))


@dataclass
class Solution:
    """A solver's answer: status, primal (scaled Gram matrix, values) and dual (multipliers of the
    interpolation inequalities and of the start conditions); any may be None."""

    status: str
    gram: Optional[np.ndarray]
    values: Optional[np.ndarray]
    multipliers: Optional[np.ndarray]
    start_multipliers: Optional[np.ndarray]


class ScaledPEP:
    """The scaled SDP of T heavy-ball steps over ``F_{kappa,1}`` in a given basis (module
    docstring): its data (:class:`~._pep_dual.DualData`), its solves and its replay."""

    def __init__(self, kappa, step, beta, iterations, start, metric, units, basis):
        self.kappa, self.step, self.beta, self.start, self.metric = kappa, step, beta, start, metric
        self.iterations, self.units, self.basis = iterations, np.asarray(units, dtype=float), basis
        self.points = iterations + (metric == "function-value")  # points whose gradient enters
        self.starts, self.positions, self.gradients, self.last = _coefficients(
            step, beta, iterations, start, self.points, self.units, basis)
        self.data = self._data()

    def _pairs(self):
        """(i, j, unit) for every ordered pair of the points and the minimiser (index -1, last):
        the inequality's terms are of the size of the larger unit squared."""
        size = np.concatenate([self.units[: self.points], [0.0]])
        indices = list(range(self.points)) + [-1]
        return [(i, j, max(size[i], size[j]) ** 2) for i in indices for j in indices if i != j]

    def _data(self) -> DualData:
        dimension = self.starts.shape[1]
        x = np.vstack([self.positions, np.zeros(dimension)])  # x* = g* = 0 last, at index -1
        g = np.vstack([self.gradients, np.zeros(dimension)])
        value_units = self.units[: self.points] ** 2
        constraints, value_rows = [], []
        for i, j, scale in self._pairs():  # <A, G> + <b, v> <= 0 (THG Thm 4), divided by the pair's unit
            dx, dg = x[i] - x[j], g[i] - g[j]
            constraints.append((_sym(g[j], dx) + (_sym(dg, dg) + self.kappa * _sym(dx, dx)
                                                  - 2 * self.kappa * _sym(dg, dx)) / (2 * (1 - self.kappa))) / scale)
            b = np.zeros(self.points)
            if j >= 0:
                b[j] += value_units[j]
            if i >= 0:
                b[i] -= value_units[i]
            value_rows.append(b / scale)
        norm = self.units[self.iterations] ** 2
        objective, objective_values = np.zeros((dimension, dimension)), np.zeros(self.points)
        if self.metric == "function-value":
            objective_values[-1] = value_units[-1] / norm
        else:
            objective = np.outer(self.last, self.last) / norm
        return DualData(np.array(constraints), np.array(value_rows), np.array([np.outer(s, s) for s in self.starts]),
                        objective, objective_values, self.positions, value_units, self.iterations)

    def solve(self, settings, objective="metric") -> Solution:
        """The SDP's primal and dual from CLARABEL via cvxpy, maximising the metric (or, with
        ``objective="trace"``, ``tr(G)``: the dual of that bounds the feasible set,
        :func:`~._pep_dual.trace_bound`). A solver failure is a :class:`Solution` without values."""
        import cvxpy as cp

        data, dimension = self.data, self.starts.shape[1]
        gram, values = cp.Variable((dimension, dimension), PSD=True), cp.Variable(self.points)
        flat = cp.reshape(gram, (dimension * dimension,), order="F")  # A is symmetric: any order of G's entries works
        rows = data.constraints.reshape(len(data.constraints), -1, order="F")
        inequalities = rows @ flat + data.value_rows @ values <= 0
        start_conditions = [cp.sum(cp.multiply(s, gram)) <= 1 for s in data.starts]
        goal = (cp.trace(gram) if objective == "trace"
                else cp.sum(cp.multiply(data.objective, gram)) + data.objective_values @ values)
        problem = cp.Problem(cp.Maximize(goal), [inequalities, *start_conditions])
        try:
            with warnings.catch_warnings():  # cvxpy's "inaccurate" warning: the certificate measures precision
                warnings.simplefilter("ignore")
                problem.solve(solver=SOLVER, **settings)
        except (cp.error.SolverError, ValueError, ArithmeticError) as error:
            return Solution(f"failed ({error})", None, None, None, None)
        duals = [inequalities.dual_value] + [condition.dual_value for condition in start_conditions]
        if any(dual is None for dual in duals):
            return Solution(problem.status, None, None, None, None)
        return Solution(problem.status, gram.value, values.value, np.asarray(duals[0], dtype=float),
                        np.array([float(np.squeeze(dual)) for dual in duals[1:]]))

    def vectors(self, solution: Solution, smoothness=1.0, kappa=None) -> "Trajectory":
        """The solver's worst case as vectors (the Gram matrix factored after projecting it on
        the PSD cone), checked against ``F_{kappa,1}`` (this SDP's class by default); for a
        class ``F_{mu,l}`` solved at ``L = 1`` (``f/l``), ``smoothness=l`` gives back f."""
        eigenvalues, eigenvectors = np.linalg.eigh((solution.gram + solution.gram.T) / 2)
        factor = (eigenvectors * np.sqrt(np.maximum(eigenvalues, 0.0))).T
        return Trajectory.of(self.positions @ factor.T, smoothness * (self.gradients @ factor.T),
                             smoothness * self.data.value_units * solution.values, factor @ self.last,
                             self.starts @ factor.T, self.kappa if kappa is None else kappa, self.metric)

    def replay(self, solution: Solution, inner=()) -> tuple[float, float, float, list]:
        """``(the replayed worst case's metric, its largest violation of an inequality relative to
        the pair's unit or of a start condition, an exact lower bound, its norms ||x_t||, t =
        0..T)``; the lower bound mixes it with :meth:`strictly_feasible` or any of ``inner``
        (strictly feasible trajectories) to make it exactly feasible."""
        point = self.vectors(solution)
        scales = np.array([scale for _, _, scale in self._pairs()])
        residual = max(float(np.max(-point.slack / scales, initial=0.0)), point.radius - 1.0, 0.0)
        lower = max(exact_lower_bound(point, candidate) for candidate in (self.strictly_feasible(), *inner))
        return point.metric, residual, lower, point.norms[: self.iterations + 1].tolist()

    def strictly_feasible(self) -> "Trajectory":
        """Heavy ball on ``sum_k (c_k/2) y_k^2``, 16 curvatures spread strictly inside (kappa, 1),
        from a start of norm 1 (for each pair the slack is ``sum_k d_k^2 (c_k - kappa)(1 - c_k) /
        (2 (1 - kappa)) > 0`` unless the points coincide). It decays no slower than the worst
        quadratic, so its slacks are small where the worst case of the class decays slower."""
        curvatures = self.kappa + (1 - self.kappa) * (np.arange(16) + 0.5) / 16
        x = np.full(16, 0.25)
        previous = x * np.tile([1.0, -1.0], 8) if self.start == "state" else x
        iterates = np.array(heavy_ball_iterates(x, previous, lambda t, y: curvatures * y, self.step, self.beta,
                                                self.iterations))
        points = iterates[: self.points]
        values = 0.5 * np.sum(curvatures * points**2, axis=1)
        starts = np.array([x, previous][: len(self.starts)])
        return Trajectory.of(points, curvatures * points, values, iterates[-1], starts, self.kappa, self.metric)


@dataclass
class Trajectory:
    """A trajectory as checked against ``F_{kappa,1}``: the slack of every interpolation
    inequality (``ScaledPEP._pairs`` order) with its rounding allowance, the metric, the largest
    squared norm of a start point, and the norms ``||x_t||``."""

    slack: np.ndarray
    allowance: np.ndarray
    metric: float
    radius: float
    norms: np.ndarray

    @classmethod
    def of(cls, points, gradients, values, last, starts, kappa, metric) -> "Trajectory":
        slack, size = interpolation_slack(points, gradients, values, kappa, with_size=True)
        allowance = 8 * (points.shape[1] + 8) * np.finfo(float).eps * size
        measured = float(values[-1]) if metric == "function-value" else float(last @ last)
        return cls(slack, allowance, measured, float(np.max(np.sum(starts**2, axis=1))),
                   np.linalg.norm(np.vstack([points, last]), axis=1))


def exact_lower_bound(point: Trajectory, inner: Trajectory) -> float:
    """The metric of a feasible point of the SDP: ``point`` and ``inner``, each shrunk into the
    start ball, mixed with the smallest weight on ``inner`` that makes every slack exceed its
    rounding allowance (a direct sum of trajectories, scaled by ``1 - w`` and ``w``, is a
    trajectory; the inequalities are linear and homogeneous in the Gram matrix and the values).
    0 when no weight does."""
    ours, theirs = max(point.radius, 1.0), max(inner.radius, 1.0)
    a = (point.slack - point.allowance) / ours  # slack of (1 - w) P + w Q is (1 - w) a + w b
    b = (inner.slack - inner.allowance) / theirs
    rising, falling = (a < 0) & (b > a), (a >= 0) & (b < 0)
    if np.any((a < 0) & ~rising):
        return 0.0
    low = float(np.max(-a[rising] / (b[rising] - a[rising]), initial=0.0))
    high = float(np.min(a[falling] / (a[falling] - b[falling]), initial=1.0))
    if low > high:
        return 0.0
    return max(0.0, (1 - low) * point.metric / ours + low * inner.metric / theirs)


def _sym(u, v) -> np.ndarray:
    """The symmetric matrix Q with ``<Q, G> = <u, v>`` for the vectors of coefficients u, v."""
    return (np.outer(u, v) + np.outer(v, u)) / 2


def interpolation_slack(points, gradients, values, kappa, with_size=False):
    """``f_i - f_j - <g_j, x_i - x_j> - q_ij`` (THG 2017 Thm 4, ``L = 1``; nonnegative iff the
    inequality holds) for every ordered pair of distinct indices of the given points and the
    minimiser (``x = g = f = 0``, last), in the order of ``ScaledPEP._pairs``; with
    ``with_size``, also the sum of its terms' magnitudes (the scale of its rounding error)."""
    points = np.vstack([points, np.zeros_like(points[:1])])
    gradients = np.vstack([gradients, np.zeros_like(gradients[:1])])
    values = np.concatenate([values, [0.0]])
    dx = points[:, None, :] - points[None, :, :]
    dg = gradients[:, None, :] - gradients[None, :, :]
    inner = lambda u, v: np.sum(u * v, axis=-1)  # noqa: E731
    quadratic = (inner(dg, dg) + kappa * inner(dx, dx) - 2 * kappa * inner(dg, dx)) / (2 * (1 - kappa))
    linear = np.einsum("jd,ijd->ij", gradients, dx)
    slack = values[:, None] - values[None, :] - linear - quadratic
    off_diagonal = ~np.eye(len(values), dtype=bool)
    if not with_size:
        return slack[off_diagonal]
    size = np.abs(values)[:, None] + np.abs(values)[None, :] + np.abs(linear) + (
        inner(dg, dg) + kappa * inner(dx, dx) + 2 * kappa * np.abs(inner(dg, dx))) / (2 * (1 - kappa))
    return slack[off_diagonal], size[off_diagonal]
