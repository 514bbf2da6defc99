"""Certified brackets on heavy ball's worst case at long horizons (issue 25, section 5).

* Gradient descent (beta = 0) against its exact closed form: over F_{mu,L}, x -> x - eta grad f(x)
  is max(|1 - eta mu|, |1 - eta L|)-Lipschitz around x* and a quadratic of curvature mu or L
  attains it, so T steps from the unit ball give exactly that factor to the T-th power; beta = 0
  ignores x_(-1), so both starts have this value. A certified bracket must hold it up to rounding
  (1e-12, relative: both ends are exact bounds), so its value, the upper end, agrees to the
  bracket's width (at most 1e-6 when tight; measured at most 1.5e-7 up to T = 50).
* The three cases that raised "could not be certified" (mu/L = 1/4, eta L = 1, beta = 0.3 and 0.5;
  mu/L = 0.1, eta L = 1, beta = 0.5; T = 20), against an independent solve: the textbook PEP written
  over the Gram matrix of the iterates with the caller's L (no units, no scaling, no rescaled
  rows), solved by CLARABEL at tolerances 1e-12. That reference is itself inexact (its status is
  often "optimal_inaccurate"; measured 2e-5 to 2e-4 from the brackets, while PEPit's gradient form
  solved the same way misses by up to 56%), so it is asserted to 1e-3.
* The same cases at T = 50 (slow: about a minute per solve on a quiet core, several on a busy
  one), against an independent upper bound from shorter horizons: after t steps from rest, x_t
  and x_(t-1) lie within R = max(W_t, W_(t-1)) of x*, and F_{mu,L} is closed under
  x -> R x, f -> R^2 f(./R), so W_(t+s)(rest) <= R W_s(state ball).
* The verified dual bound (bounds/_pep_dual.py) on hand-made SDPs whose answer is known, with
  planted wrong multipliers that a trusting certificate would report below the truth.
"""
from __future__ import annotations

import json
import warnings

import cvxpy as cp
import numpy as np
import pytest

import cflbounds.bounds._pep_certificate as certificate
import cflbounds.bounds._pep_dual as dual
import cflbounds.bounds.pep as pep
from conftest import interpolation_constraints

EXACT = 1e-7
ROUNDING = 1e-12  # both ends are exact bounds: a closed form lies in the bracket up to rounding
REFERENCE = 1e-3  # the independent, unscaled solve's own precision (module docstring)


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CFLBOUNDS_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _holds(result, value, rel=ROUNDING):
    """The certified bracket holds ``value`` (up to ``rel``: the rounding of a closed form, or an
    inexact reference's precision), so the value, its upper end, agrees with it to its stated
    precision (the bracket's width), which for a tight one is at most 1e-6."""
    assert result["lower_bound"] <= value * (1 + rel) and value * (1 - rel) <= result["upper_bound"]
    assert result["worst_case"] == result["upper_bound"] >= result["lower_bound"]
    assert result["width"] == pytest.approx((result["upper_bound"] - result["lower_bound"]) / result["upper_bound"])
    if result["certified"] == "tight":
        assert result["width"] <= certificate.CERTIFIED_GAP


# -- gradient descent: the exact closed form, up to T = 50 -----------------------------------------------
GRID = [(ratio, eta_L) for ratio in (0.0, 0.1, 0.5) for eta_L in (0.5, 1.0, 1.9)]


def _gradient_descent(ratio, eta_L, T, start):
    L = 2.0
    result = pep.heavy_ball_worst_case(L, ratio * L, eta_L / L, 0.0, T, start)
    _holds(result, max(abs(1 - eta_L * ratio), abs(1 - eta_L)) ** T)
    return result


@pytest.mark.parametrize("start", pep.START)
@pytest.mark.parametrize("T", [1, 5, 10, 20])
def test_gradient_descent_brackets_hold_the_closed_form(T, start):
    results = [_gradient_descent(ratio, eta_L, T, start) for ratio, eta_L in GRID]
    assert sum(result["certified"] == "tight" for result in results) >= len(GRID) - 1


def test_gradient_descent_at_thirty_steps_continues_the_units_of_fifteen(private_cache):
    result = _gradient_descent(0.1, 1.0, 30, "at-rest")
    assert result["certified"] == "tight"
    keys = [json.loads(path.read_text())["key"] for path in private_cache.rglob("*.json")]
    assert sorted(key["iterations"] for key in keys) == [15, 30]  # the shorter horizon's worst case, cached


@pytest.mark.slow
@pytest.mark.parametrize("start", pep.START)
@pytest.mark.parametrize("T", [30, 50])
def test_gradient_descent_brackets_hold_the_closed_form_at_long_horizons(T, start):
    results = [_gradient_descent(ratio, eta_L, T, start) for ratio, eta_L in GRID]
    assert sum(result["certified"] == "tight" for result in results) >= len(GRID) - 1


# -- the three cases of issue 25 ----------------------------------------------------------------------
ISSUE_CASES = [(2.0, 0.5, 0.5, 0.3), (2.0, 0.5, 0.5, 0.5), (1.0, 0.1, 1.0, 0.5)]  # L, mu, eta, beta


def _iterate_gram_pep(L, mu, step, beta, T, start):
    """sup ||x_T - x*||^2 by the textbook PEP over the Gram matrix of (x_(-1), x_0, ..., x_T), x* = 0,
    f* = 0, g_t = ((1 + beta) x_t - beta x_(t-1) - x_(t+1))/eta, every F_{mu,L} interpolation inequality
    (Taylor, Hendrickx & Glineur 2017, Thm 4) written out; at rest x_(-1) = x_0 (its slot pinned to 0)."""
    dimension = T + 2
    basis = np.eye(dimension)

    def x(t):
        return basis[t + 1] if t >= 0 or start == "state" else basis[1]

    def g(t):
        return ((1 + beta) * x(t) - beta * x(t - 1) - x(t + 1)) / step

    gram, values = cp.Variable((dimension, dimension), PSD=True), cp.Variable(T)
    points = [(np.zeros(dimension), np.zeros(dimension), 0.0)] + [(x(t), g(t), values[t]) for t in range(T)]
    constraints = [x(0) @ gram @ x(0) <= 1, (x(-1) @ gram @ x(-1) <= 1) if start == "state" else gram[0, 0] == 0]
    constraints += interpolation_constraints(points, gram, L, mu)
    problem = cp.Problem(cp.Maximize(x(T) @ gram @ x(T)), constraints)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        problem.solve(solver=cp.CLARABEL, tol_gap_abs=1e-15, tol_gap_rel=1e-12, tol_feas=1e-12, max_iter=500)
    assert problem.status in ("optimal", "optimal_inaccurate")
    return float(problem.value)


def _issue_case(L, mu, step, beta, T, start):
    result = pep.heavy_ball_worst_case(L, mu, step, beta, T, start)
    assert result["certified"] in ("tight", "bracket") and result["solver"] == "CLARABEL via cvxpy, certified"
    return result


@pytest.mark.parametrize("start", ["at-rest", pytest.param("state", marks=pytest.mark.slow)])
@pytest.mark.parametrize("L, mu, step, beta", ISSUE_CASES)
def test_the_issue_cases_at_twenty_steps_hold_an_independent_solve(L, mu, step, beta, start):
    result = _issue_case(L, mu, step, beta, 20, start)
    _holds(result, np.sqrt(_iterate_gram_pep(L, mu, step, beta, 20, start)), rel=REFERENCE / 2)
    assert result["width"] <= 1e-4  # measured: at most 1e-6 from rest, 7e-6 from the state ball


@pytest.mark.slow
@pytest.mark.parametrize("L, mu, step, beta", ISSUE_CASES)
def test_the_issue_cases_at_fifty_steps_are_bracketed_below_a_composition_of_shorter_horizons(L, mu, step, beta):
    result = _issue_case(L, mu, step, beta, 50, "at-rest")
    assert result["width"] <= 1e-3  # measured: at most 1e-5
    first = max(pep.heavy_ball_worst_case(L, mu, step, beta, t, "at-rest")["upper_bound"] for t in (24, 25))
    rest = pep.heavy_ball_worst_case(L, mu, step, beta, 25, "state")["upper_bound"]
    assert result["lower_bound"] <= first * rest  # W_50(rest) <= max(W_25, W_24)(rest) W_25(state)
    quadratics = [abs(np.linalg.matrix_power(np.array([[1 + beta - step * c, -beta], [1.0, 0.0]]), 50)[0].sum())
                  for c in np.linspace(mu, L, 201)]  # e_50 from rest on (c/2)||x||^2, by the matrix power
    assert result["lower_bound"] >= max(quadratics) * (1 - EXACT)


# -- the verified dual bound on hand-made SDPs ------------------------------------------------------------
def _toy():
    """max v over the Gram matrix G of (x, g) and a value v, subject to v <= ||x||^2/2 (as f <= L||x||^2/2),
    v >= 0, ||g||^2 <= ||x||^2 and ||x||^2 <= 1: the answer is 1/2 (dual: lam_1 = 1, tau = 1/2)."""
    e0, e1 = np.outer([1.0, 0.0], [1.0, 0.0]), np.outer([0.0, 1.0], [0.0, 1.0])
    return dual.DualData(constraints=np.array([-e0 / 2, np.zeros((2, 2)), e1 - e0]),
                         value_rows=np.array([[1.0], [-1.0], [0.0]]), starts=np.array([e0]),
                         objective=np.zeros((2, 2)), objective_values=np.array([1.0]),
                         positions=np.array([[1.0, 0.0]]), value_units=np.array([1.0]), iterations=1)


def _no_trace():
    raise AssertionError("a PSD dual slack needs no bound on the feasible set")


def test_the_toys_optimal_dual_proves_its_value_up_to_the_rounding_allowance():
    # at the optimum the slack is singular (complementary to the worst case): only rounding is paid for
    trace = lambda: dual.trace_bound(_toy(), [0.0, 0.0, 1.0], [2.0])  # noqa: E731
    bound, deficit = dual.verified_upper_bound(_toy(), [1.0, 0.0, 0.0], [0.5], trace)
    assert 0.5 <= bound <= 0.5 * (1 + 1e-12) and 0 < deficit < 1e-13
    # a slack PSD beyond the allowance needs no bound on the feasible set
    assert dual.verified_upper_bound(_toy(), [1.0, 0.0, 0.1], [0.7], _no_trace) == (pytest.approx(0.7), 0.0)


def test_the_trace_bound_of_the_toy_is_proven_from_its_dual():
    # tr(G) = ||x||^2 + ||g||^2 <= 2 ||x||^2 <= 2: D = 1 (e1 - e0) + 2 e0 = I
    assert dual.trace_bound(_toy(), [0.0, 0.0, 1.0], [2.0]) == pytest.approx(2.0, rel=1e-12)
    assert dual.trace_bound(_toy(), [0.0, 0.0, 1.0], [1.0]) is None  # D = e1: not positive definite
    assert dual.trace_bound(_toy(), [0.0, 0.0, np.nan], [2.0]) is None


@pytest.mark.parametrize("multipliers, start_multipliers", [
    ([0.9, 0.0, 0.0], [0.45]),  # the equality's residual 0.1 unpaid: trusted, this proves 0.45 < 1/2
    ([1.0, 0.0, 0.0], [0.4]),  # tau too small: the slack has eigenvalue -0.1
    ([0.5, -0.5, 0.0], [0.25]),  # a negative multiplier (of v >= 0) cancels the residual: trusted, proves 1/4
    ([1.2, 0.2, 0.0], [0.3]),  # both residual-free and wrong: eigenvalue -0.3
])
def test_a_planted_wrong_multiplier_never_proves_less_than_the_value(multipliers, start_multipliers):
    trace = lambda: dual.trace_bound(_toy(), [0.0, 0.0, 1.0], [2.0])  # noqa: E731
    bound, deficit = dual.verified_upper_bound(_toy(), multipliers, start_multipliers, trace)
    assert deficit > 0 and bound >= 0.5
    assert dual.verified_upper_bound(_toy(), multipliers, start_multipliers, lambda: None)[0] is None


def test_missing_multipliers_prove_nothing():
    assert dual.verified_upper_bound(_toy(), None, [0.5], _no_trace) == (None, float("inf"))
    assert dual.verified_upper_bound(_toy(), [np.inf, 0.0, 0.0], [0.5], _no_trace)[0] is None


def test_continued_units_follow_a_shorter_worst_case_and_never_drop_below_the_quadratics():
    quadratic = 0.5 ** np.arange(31)
    shorter = 0.8 ** np.arange(16)  # the worst case at 15 steps decays at 0.8
    units = certificate.continued_units(quadratic, shorter.tolist())
    assert np.all(units >= quadratic)
    assert units[30] == pytest.approx(0.8**30, rel=1e-9)  # its rate fitted and continued
    assert np.array_equal(certificate.continued_units(quadratic, [1.0, np.inf, 0.5]), quadratic)
