"""Certified tight worst cases (performance estimation), their disk cache, the rate over
horizons, the spectral radius, and what happens when a solve cannot be certified.

Precision. A value comes with a certified bracket [lower_bound, upper_bound] (a verified dual
bound and an exact lower bound, bounds/_pep_certificate.py); "tight" means a relative width of at
most 1e-6 on the SDP's metric (||x_T - x*||^2 for the distance); measured against exact rates,
tight values are within about 1e-8. So exact values are asserted to 1e-7 (relative, a margin of
~10 over what is measured and far below any wrong step, sign or start condition, which moves the
factor by >= 1e-2 in every case below), and the agreement with an independent formulation and
solver (SCS at eps 1e-9, accurate to a few 1e-8 on these values) to 1e-6, the certified
precision. Brackets at long horizons and against independent references: test_pep_brackets.py.
"""
from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import cvxpy as cp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import cflbounds.bounds._pep_certificate as certificate
import cflbounds.bounds._pep_sdp as sdp
import cflbounds.bounds.pep as pep
from cflbounds import InvalidParameterError
from cflbounds.bounds._cache import cache_directory
from cflbounds.papers.cfl_mgd import checks, tight
from cflbounds.papers.cfl_mgd.tight import tight_factors
from cflbounds.verify.testing import assert_rejected, invalid_calls

from conftest import examples, interpolation_constraints

EXACT = 1e-7  # relative; see the module docstring
CERTIFIED = 1e-6


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CFLBOUNDS_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _quadratic_lower_bound(L, mu, step, beta, iterations, start, metric="distance"):
    """The worst case over the quadratics (lambda/2)||x - x*||^2, lambda in [mu, L] (a subset of
    F_{mu,L}, so a lower bound on the tight value), by hand: e_T = a e_0 + b e_(-1), and the sup
    over the start set is |a + b| (at rest) or |a| + |b| (state ball) for the distance, and
    (lambda/2) times its square for the function value."""
    best = 0.0
    for curvature in np.linspace(mu, L, 201):
        now, before = np.array([1.0, 0.0]), np.array([0.0, 1.0])
        for _ in range(iterations):
            now, before = (1 + beta - step * curvature) * now - beta * before, now
        error = abs(now.sum()) if start == "at-rest" else np.abs(now).sum()
        best = max(best, curvature / 2 * error**2 if metric == "function-value" else error)
    return best


# -- upper bound holds, lower bound holds, tight where known ----------------------------------------
GRADIENT_GRID = [(mu, eta_L, T) for mu in (0.0, 0.1, 0.25, 0.5) for eta_L in (0.3, 1.0, 2.5, 3.5) for T in (1, 3, 10)]


def test_gradient_descent_is_the_exact_rate_on_a_grid():
    # over F_{mu,L}, x -> x - eta grad f(x) is max(|1 - eta mu|, |1 - eta L|)-Lipschitz and a quadratic attains it,
    # so T steps give exactly that factor to the T-th power, also beyond eta L = 2 (where it is finite, > 1)
    for mu, eta_L, T in GRADIENT_GRID:  # all 48 tight (the certificate before brackets raised on one)
        L = 2.0
        result = pep.heavy_ball_worst_case(L, mu * L, eta_L / L, 0.0, T, "at-rest")
        exact = max(abs(1 - eta_L * mu), abs(1 - eta_L)) ** T
        assert result["worst_case"] == pytest.approx(exact, rel=EXACT) and result["certified"] == "tight"
        assert result["lower_bound"] <= exact * (1 + EXACT) and result["duality_gap"] <= CERTIFIED


@pytest.mark.parametrize("L, mu, step", [(2.0, 1.0, 0.5), (4.0, 1.0, 0.25), (4.0, 1.0, 0.45), (10.0, 0.5, 0.05)])
def test_gradient_step_is_the_classic_factor_with_its_precision(L, mu, step):
    result = pep.heavy_ball_worst_case(L, mu, step)
    assert result["worst_case"] == pytest.approx(max(abs(1 - step * mu), abs(1 - step * L)), rel=EXACT)
    assert result["solver"] == "CLARABEL via cvxpy, certified"
    assert 0 <= result["duality_gap"] <= CERTIFIED and 0 <= result["primal_residual"] <= CERTIFIED
    assert result["lower_bound"] <= result["worst_case"] <= result["lower_bound"] * (1 + CERTIFIED)
    assert result["tolerances"]["certified_gap"] == CERTIFIED and result["tolerances"]["tol_gap_rel"] <= 1e-8


@pytest.mark.parametrize("metric", pep.METRIC)
@pytest.mark.parametrize("start", pep.START)
@pytest.mark.parametrize("beta, iterations", [(0.5, 1), (0.9, 1), (0.5, 5), (0.3, 8)])
def test_heavy_ball_is_at_least_its_worst_quadratic(beta, iterations, start, metric):
    L, mu, step = 4.0, 1.0, 0.25
    result = pep.heavy_ball_worst_case(L, mu, step, beta, iterations, start, metric)
    assert result["worst_case"] >= _quadratic_lower_bound(L, mu, step, beta, iterations, start, metric)
    assert result["lower_bound"] >= _quadratic_lower_bound(L, mu, step, beta, iterations, start, metric) * (1 - EXACT)


def test_one_heavy_ball_step_from_the_state_ball_is_the_quadratic_worst_case():
    # one step: |1 + beta - eta lambda| + beta over lambda in [mu, L] is attained by F_{mu,L}
    result = pep.heavy_ball_worst_case(4.0, 1.0, 0.25, 0.5, 1, "state")
    assert result["worst_case"] == pytest.approx(max(abs(1.5 - 0.25), abs(1.5 - 1.0)) + 0.5, rel=EXACT)
    assert result["worst_case"] > 1  # momentum alone can move the iterate away


@pytest.mark.parametrize("step, expected", [(100.0, 399.0), (1e6, 4e6 - 1)])
def test_a_huge_step_is_certified_to_its_exact_value(step, expected):
    # eta L = 400 (the case SCS once answered 841 for): |1 + beta - eta L| + beta, now solved at its own scale
    assert pep.heavy_ball_worst_case(4.0, 1.0, step, 0.5)["worst_case"] == pytest.approx(expected, rel=EXACT)


@pytest.mark.parametrize("h", [0.5, 1.0, 1.5, 1.9])
@pytest.mark.parametrize("T", [1, 3, 10])
def test_gradient_descent_function_value_on_smooth_convex_functions_is_the_known_tight_value(h, T):
    # mu = 0: sup f(x_T) - f* = (L R^2 / 2) max(1/(2 T h + 1), (1 - h)^(2T)), h = eta L in (0, 2) (conjectured by
    # Drori & Teboulle 2014 and Taylor, Hendrickx & Glineur 2017, proved by Rotaru, Glineur & Patrinos 2024);
    # L = 3 checks the scaling f -> f/L back to the caller's units
    L = 3.0
    result = pep.heavy_ball_worst_case(L, 0.0, h / L, 0.0, T, "at-rest", "function-value")
    assert result["worst_case"] == pytest.approx(L / 2 * max(1 / (2 * T * h + 1), (1 - h) ** (2 * T)), rel=EXACT)
    assert "per_step" not in result  # a root of a function value per unit squared distance has no meaning


@pytest.mark.parametrize("metric", pep.METRIC)
def test_equal_mu_and_l_is_solved_in_closed_form_for_both_metrics(metric):
    # F_{L,L} = {(L/2)||x - x*||^2 + c}: e+ = (1 + beta - eta L) e - beta e-
    result = pep.heavy_ball_worst_case(2.0, 2.0, 0.25, 0.5, 2, "at-rest", metric)
    a = 1 + 0.5 - 0.5
    e1 = (a - 0.5) * 1.0
    e2 = a * e1 - 0.5 * 1.0
    expected = abs(e2) if metric == "distance" else 2.0 / 2 * e2**2
    assert result["worst_case"] == pytest.approx(expected, abs=1e-15)
    assert result["lower_bound"] == result["worst_case"] and result["duality_gap"] == 0.0
    assert "closed form" in result["solver"]
    if metric == "distance":
        assert result["per_step"] == pytest.approx(abs(e2) ** 0.5)
    assert pep.heavy_ball_worst_case(2.0, 2.0, 0.25, 0.0, 1, metric=metric)["worst_case"] == pytest.approx(
        0.5 if metric == "distance" else 0.25, abs=1e-15)


# -- agreement with an independent formulation and solver ---------------------------------------------
def _straightforward_pep(L, mu, step, beta, iterations, start):
    """The textbook PEP, written out: Gram matrix of (x_0 - x*[, x_(-1) - x*], g_0, ..., g_(T-1)) with
    x* = g* = 0 and f* = 0, the F_{mu,L} interpolation inequality (Taylor, Hendrickx & Glineur 2017,
    Thm 4) for every ordered pair of the optimum and the iterates, each iterate a linear combination
    of the basis; solved with SCS, unscaled, at eps 1e-9. Returns sup ||x_T - x*||."""
    starts = 2 if start == "state" else 1
    basis = np.eye(starts + iterations)
    x, previous = basis[0], basis[starts - 1]
    gradients, iterates = basis[starts:], []
    for t in range(iterations):
        iterates.append(x)
        x, previous = x - step * gradients[t] + beta * (x - previous), x
    gram = cp.Variable((len(basis), len(basis)), PSD=True)
    values = cp.Variable(iterations)
    points = [(np.zeros(len(basis)), np.zeros(len(basis)), 0.0)] + list(zip(iterates, gradients, values))
    constraints = [basis[k] @ gram @ basis[k] <= 1 for k in range(starts)]
    constraints += interpolation_constraints(points, gram, L, mu)
    problem = cp.Problem(cp.Maximize(x @ gram @ x), constraints)
    problem.solve(solver=cp.SCS, eps_abs=1e-9, eps_rel=1e-9, max_iters=200_000)
    assert problem.status == "optimal"
    return float(np.sqrt(problem.value))


HEAVY_BALL_CASES = [(4.0, 1.0, 0.125, 0.5, 1, "state"), (4.0, 1.0, 0.125, 0.9, 5, "at-rest"),
                    (1.0, 0.5, 0.5, 0.7, 8, "at-rest"), (1.0, 0.1, 0.3, 0.2, 20, "state"),
                    (1.0, 0.25, 0.1, 0.5, 20, "at-rest")]
SLOW_HEAVY_BALL_CASES = [(1.0, 0.25, 1.0, 0.9, 20, "at-rest"), (2.0, 0.5, 0.25, 0.5, 15, "state")]


@pytest.mark.parametrize("L, mu, step, beta, iterations, start", HEAVY_BALL_CASES + [
    pytest.param(*case, marks=pytest.mark.slow) for case in SLOW_HEAVY_BALL_CASES])
def test_heavy_ball_agrees_with_an_independent_formulation_and_solver(L, mu, step, beta, iterations, start):
    certified = pep.heavy_ball_worst_case(L, mu, step, beta, iterations, start)["worst_case"]
    assert certified == pytest.approx(_straightforward_pep(L, mu, step, beta, iterations, start), rel=CERTIFIED)


# -- the certificate catches planted errors ----------------------------------------------------------
def _tampered(monkeypatch, change):
    """Every metric solve's answer passes through ``change(solution)`` before the certificate sees it
    (in a cache of its own, so no untampered value is read back)."""
    monkeypatch.setenv("CFLBOUNDS_CACHE", str(Path(os.environ["CFLBOUNDS_CACHE"]) / "planted"))
    solve = sdp.ScaledPEP.solve

    def tampered(self, settings, objective="metric"):
        solution = solve(self, settings, objective)
        return change(solution) if objective == "metric" and solution.multipliers is not None else solution

    monkeypatch.setattr(sdp.ScaledPEP, "solve", tampered)


@pytest.mark.parametrize("change", [
    # the dual bound is sum(tau): a solver claiming half of it
    lambda s: replace(s, start_multipliers=s.start_multipliers / 2),
    # one multiplier dropped (the largest): the dual slack loses a whole inequality
    lambda s: replace(s, multipliers=np.where(np.arange(len(s.multipliers)) == np.argmax(s.multipliers), 0.0,
                                              s.multipliers)),
], ids=["halved-bound", "missing-multiplier"])
def test_a_wrong_dual_is_never_certified(monkeypatch, private_cache, change):
    _tampered(monkeypatch, change)
    with pytest.raises(pep.PerformanceEstimationError, match=r"mu/L=0.25.*could not be certified.*bracket \["):
        pep.heavy_ball_worst_case(4.0, 1.0, 0.25, 0.5, 3, "at-rest")
    assert not list(private_cache.rglob("*.json"))  # a failure is never cached


def test_a_slightly_understated_dual_bound_gives_a_bracket_that_holds_the_worst_case(monkeypatch):
    # planted: the solver's dual bound 1e-4 too small; the verified upper end must not follow it
    truth = pep.heavy_ball_worst_case(4.0, 1.0, 0.25, 0.5, 3, "at-rest")
    assert truth["certified"] == "tight"
    _tampered(monkeypatch, lambda s: replace(s, start_multipliers=s.start_multipliers * (1 - 1e-4)))
    result = pep.heavy_ball_worst_case(4.0, 1.0, 0.25, 0.5, 3, "at-rest")
    assert result["certified"] == "bracket" and result["width"] > CERTIFIED
    assert result["lower_bound"] <= truth["lower_bound"] * (1 + EXACT) and truth["upper_bound"] <= result["upper_bound"]


def test_a_consistent_answer_below_an_exact_lower_bound_is_rejected(monkeypatch):
    # planted: a wrong SDP (objective a quarter of the metric): its primal and dual agree, both a quarter of the
    # truth; the replayed worst case and the worst quadratic, measured on the vectors, expose it
    data = sdp.ScaledPEP._data
    monkeypatch.setattr(sdp.ScaledPEP, "_data", lambda self: replace(data(self), objective=data(self).objective / 4))
    with pytest.raises(pep.PerformanceEstimationError, match="below .* an exact lower bound"):
        pep.heavy_ball_worst_case(4.0, 1.0, 0.25, 0.5)


@pytest.mark.parametrize("stretch", [1.0001, 1.01])
def test_a_worst_case_that_breaks_an_interpolation_inequality_only_lowers_the_lower_end(monkeypatch, stretch):
    # planted: the solver's Gram matrix with every basis vector but x_0 longer (still PSD): the replay must notice,
    # and the lower end (the replay made exactly feasible) must stay below the true worst case; 1% is too far
    truth = pep.heavy_ball_worst_case(4.0, 1.0, 0.25, 0.5, 3, "at-rest")

    def stretched(solution):
        factors = np.ones(len(solution.gram))
        factors[1:] = stretch
        return replace(solution, gram=solution.gram * np.outer(factors, factors))

    _tampered(monkeypatch, stretched)
    if stretch > 1.001:
        with pytest.raises(pep.PerformanceEstimationError, match=r"could not be certified.*relative width 0.1"):
            pep.heavy_ball_worst_case(4.0, 1.0, 0.25, 0.5, 3, "at-rest")
        return
    result = pep.heavy_ball_worst_case(4.0, 1.0, 0.25, 0.5, 3, "at-rest")
    assert result["primal_residual"] > 1e-5 and result["certified"] == "bracket" and result["width"] > 1e-4
    assert result["lower_bound"] <= truth["lower_bound"] and result["upper_bound"] >= truth["lower_bound"]


def test_a_solve_without_optimal_status_gives_no_value(monkeypatch):
    # planted: three interior-point iterations end with status 'user_limit': the dual proves only a wide bracket
    attempts = tuple({**settings, "max_iter": 3} for settings in certificate.ATTEMPTS)
    monkeypatch.setattr(certificate, "ATTEMPTS", attempts)
    monkeypatch.setattr(pep, "ATTEMPTS", certificate.ATTEMPTS)
    with pytest.raises(pep.PerformanceEstimationError, match="could not be certified"):
        pep.heavy_ball_worst_case(4.0, 1.0, 0.25, 0.5, 3, "at-rest")


def test_the_exact_lower_bound_is_below_the_exact_rate():
    # the replayed worst case, mixed with a strictly feasible trajectory where it breaks an inequality, is a
    # feasible point of the PEP: never above the true worst case (gradient descent: 0.75^10)
    result = pep.heavy_ball_worst_case(4.0, 1.0, 0.25, 0.0, 10, "at-rest")
    assert result["lower_bound"] <= 0.75**10 * (1 + 1e-12) <= result["worst_case"] * (1 + EXACT)
    assert result["upper_bound"] == result["worst_case"] and result["certified"] == "tight"


# -- cache ---------------------------------------------------------------------------------------------
def test_second_call_reads_the_cache_without_solving(private_cache, monkeypatch):
    first = pep.heavy_ball_worst_case(4.0, 1.0, 0.25, 0.5, 3, "at-rest")
    assert len(list(private_cache.rglob("*.json"))) == 1

    def no_solver(*args, **kwargs):
        raise AssertionError("the solver was called for a cached value")

    monkeypatch.setattr(pep, "certified_worst_case", no_solver)
    assert pep.heavy_ball_worst_case(4.0, 1.0, 0.25, 0.5, 3, "at-rest") == first
    for other in (dict(beta=0.6), dict(metric="function-value")):  # another parameter is another key
        with pytest.raises(AssertionError, match="solver was called"):
            pep.heavy_ball_worst_case(**{**dict(smoothness=4.0, strong_convexity=1.0, step=0.25, beta=0.5,
                                                iterations=3, start="at-rest"), **other})


def test_the_cache_key_holds_the_certificate_the_solver_its_settings_and_the_metric(private_cache):
    pep.heavy_ball_worst_case(4.0, 1.0, 0.25, 0.5)
    (path,) = private_cache.rglob("*.json")
    key = json.loads(path.read_text())["key"]
    assert key["solver"] == "CLARABEL" and key["metric"] == "distance"
    assert key["certificate"] == certificate.CERTIFICATE and key["max_width"] == certificate.MAX_WIDTH
    assert key["attempts"] == json.loads(json.dumps(certificate.ATTEMPTS)) and key["certified_gap"] == CERTIFIED
    assert key["trace_settings"] == json.loads(json.dumps(certificate.TRACE_SETTINGS))
    assert key["code"] == pep._code_digest() and len(key["code"]) == 64  # the certificate's source
    # entries of the uncertified SCS solves ('pep/') and of the certificate that raised instead of bracketing
    # ('pep-certified/') are never read
    assert path.parent.name == "pep-verified"


@pytest.mark.parametrize("name, changed", [("CERTIFICATE", "verified-dual-bracket/next"), ("_CODE", "0" * 64)])
def test_an_entry_of_another_certificate_is_not_read(private_cache, monkeypatch, name, changed):
    first = pep.heavy_ball_worst_case(4.0, 1.0, 0.25, 0.5)
    (path,) = private_cache.rglob("*.json")
    stored = json.loads(path.read_text())
    path.write_text(json.dumps({**stored, "value": {**stored["value"], "value": -1.0}}))  # poisoned
    monkeypatch.setattr(pep, name, changed)  # a new version or a changed line of the certificate
    assert pep.heavy_ball_worst_case(4.0, 1.0, 0.25, 0.5) == first  # a new key, solved again
    assert len(list(private_cache.rglob("*.json"))) == 2


def test_a_damaged_or_foreign_cache_file_is_recomputed(private_cache):
    first = pep.heavy_ball_worst_case(4.0, 1.0, 0.25, 0.5)
    (path,) = private_cache.rglob("*.json")
    stored = json.loads(path.read_text())
    path.write_text(json.dumps({"key": {**stored["key"], "beta": 0.7}, "value": {"value": -1.0}}))
    assert pep.heavy_ball_worst_case(4.0, 1.0, 0.25, 0.5) == first
    path.write_text("{not json")
    assert pep.heavy_ball_worst_case(4.0, 1.0, 0.25, 0.5) == first


def test_cache_directory_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("CFLBOUNDS_CACHE", str(tmp_path / "mine"))
    assert cache_directory() == tmp_path / "mine"
    monkeypatch.delenv("CFLBOUNDS_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_directory() == tmp_path / "xdg" / "cflbounds"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_directory() == tmp_path / "home" / ".cache" / "cflbounds"


@pytest.mark.parametrize("kwargs, name", [
    (dict(smoothness=0.0), "smoothness"), (dict(strong_convexity=-1.0), "strong_convexity"),
    (dict(strong_convexity=5.0), "strong_convexity"), (dict(step=0.0), "step"), (dict(beta=1.0), "beta"),
    (dict(iterations=0), "iterations"), (dict(iterations=201), "iterations"), (dict(start="rest"), "start"),
    (dict(metric="gradient-norm"), "metric"),
])
def test_invalid_values_name_the_parameter(kwargs, name):
    with pytest.raises(InvalidParameterError, match=name):
        pep.heavy_ball_worst_case(**{**dict(smoothness=4.0, strong_convexity=1.0, step=0.25), **kwargs})


# -- a rate that is not an artefact of one horizon (the MLR evidence once read 0.0) -------------------
def _at_rest_errors(curvature, step, beta, horizon):
    """|e_t| for t = 1..horizon of heavy ball from rest on (curvature/2)||x||^2, e_0 = 1 (by hand)."""
    errors, now, before = [], 1.0, 1.0
    for _ in range(horizon):
        now, before = (1 + beta - step * curvature) * now - beta * before, now
        errors.append(abs(now))
    return np.array(errors)


def test_one_horizon_can_vanish_where_the_rate_over_horizons_does_not():
    # F_{2,2}, eta = 1/4 (MLR's effective step), beta = 1/2 from rest: the worst case is exactly 0 at t = 6 and 10
    errors = _at_rest_errors(2.0, 0.25, 0.5, 10)
    assert errors[5] == errors[9] == 0.0 and errors[7] > 0
    assert pep.heavy_ball_worst_case(2.0, 2.0, 0.25, 0.5, 10, "at-rest")["per_step"] == 0.0
    rate = pep.heavy_ball_rate(2.0, 2.0, 0.25, 0.5, 10)
    expected = errors ** (1 / np.arange(1, 11))
    assert rate["rate"] == pytest.approx(expected.max(), abs=1e-15)
    assert rate["horizon"] == int(np.argmax(expected)) + 1 and rate["rates"] == pytest.approx(expected.tolist())
    assert rate["rate"] >= errors[7] ** (1 / 8) > 0.7  # t = 8: 0.707
    assert rate["duality_gap"] == rate["primal_residual"] == 0.0  # closed form
    # the MLR row of the L2 check (mu = L = 2, l = 1/2, so eta l/L = 1/4) reports it, with the spectral radius
    row, = tight_factors(2.0, 2.0, 0.5, [0.5], 10)
    assert row["pep_rate_from_rest"] == pytest.approx(expected.max(), abs=1e-15)
    assert row["spectral_radius"] == pytest.approx(np.sqrt(0.5))
    assert row["pep_duality_gap_max"] == row["pep_primal_residual_max"] == 0.0


def test_rate_over_horizons_is_the_max_of_the_tight_roots_and_grows_with_the_horizon():
    L, mu, step, beta = 4.0, 1.0, 0.125, 0.5
    rate = pep.heavy_ball_rate(L, mu, step, beta, 6)
    solved = [pep.heavy_ball_worst_case(L, mu, step, beta, t, "at-rest") for t in range(1, 7)]
    assert rate["rates"] == pytest.approx([result["per_step"] for result in solved], abs=1e-12)
    assert rate["rate"] == max(result["per_step"] for result in solved)
    assert rate["duality_gap"] == max(result["duality_gap"] for result in solved) <= CERTIFIED
    assert pep.heavy_ball_rate(L, mu, step, beta, 3)["rate"] <= rate["rate"]
    # never below the worst quadratic of the class at any horizon
    for t in range(1, 7):
        assert rate["rate"] >= _quadratic_lower_bound(L, mu, step, beta, t, "at-rest") ** (1 / t)


def test_the_l2_rows_report_the_precision_of_their_tight_factors():
    row, = tight_factors(1.0, 4.0, 0.5, [0.5], 3)
    assert 0 < row["pep_duality_gap_max"] <= CERTIFIED and 0 <= row["pep_primal_residual_max"] <= CERTIFIED
    assert row["pep_brackets"] == 0 and 0 < row["pep_width_max"] <= CERTIFIED


def test_a_bracketed_tight_factor_is_said_in_the_rows_the_plot_and_the_summary(monkeypatch):
    solve = pep.heavy_ball_worst_case

    def bracketed(*args, **kwargs):  # every solve reported as a bracket of width 1e-4
        result = solve(*args, **kwargs)
        return {**result, "certified": "bracket", "width": 1e-4, "lower_bound": result["upper_bound"] * (1 - 1e-4)}

    monkeypatch.setattr(pep, "heavy_ball_worst_case", bracketed)
    monkeypatch.setattr(tight, "heavy_ball_worst_case", bracketed)
    row, = tight_factors(1.0, 4.0, 0.5, [0.5], 3)
    assert row["pep_brackets"] == 3 + 2 and row["pep_width_max"] == 1e-4  # 3 horizons from rest, 2 one-step
    assert pep.heavy_ball_rate(4.0, 1.0, 0.125, 0.5, 3)["certified"] == "bracket"
    plot = tight.factor_plot("t", [row], {}, 3)
    assert all("upper ends of certified brackets" in series["label"] for series in plot["series"][1:3])
    note = checks._bracket_note({"quadratics_beta0.5_pep_brackets": 5, "quadratics_beta0.5_pep_width_max": 1e-4})
    assert "5 of the tight worst cases are certified brackets" in note and "width up to 0.0001" in note
    assert checks._bracket_note({"quadratics_beta0_pep_brackets": 0, "quadratics_beta0_pep_width_max": 0.0}) == ""


@examples(80)
@given(st.floats(0.1, 10), st.floats(0.0, 1.0), st.floats(1e-3, 3.0), st.floats(0.0, 0.99))
def test_spectral_radius_is_the_largest_eigenvalue_modulus_over_the_curvatures(L, ratio, eta_L, beta):
    mu, step = ratio * L, eta_L / L
    largest = max(np.abs(np.linalg.eigvals([[1 + beta - step * lam, -beta], [1.0, 0.0]])).max()
                  for lam in np.linspace(mu, L, 301))  # a dense grid holding both ends
    assert pep.heavy_ball_spectral_radius(L, mu, step, beta) == pytest.approx(largest, rel=1e-6, abs=1e-9)


# -- solver failures and hostile values ---------------------------------------------------------------
def test_a_worst_case_beyond_the_float_range_is_a_named_error():
    # eta L = 2.5e299: the worst quadratic alone overflows; once a TypeError, now named before any solve
    with pytest.raises(pep.PerformanceEstimationError, match="performance-estimation SDP.*float range"):
        pep.heavy_ball_worst_case(1e300, 1.0, 0.25, 0.5)


def test_the_sdp_is_solved_at_unit_smoothness_with_the_same_value():
    # f -> f/L maps F_{mu,L} with step eta onto F_{mu/L,1} with step eta L: one cached value serves both
    assert pep.heavy_ball_worst_case(1e-300, 5e-301, 1e300, 0.5) == pep.heavy_ball_worst_case(1.0, 0.5, 1.0, 0.5)
    assert pep.heavy_ball_worst_case(4.0, 1.0, 0.1, 0.3, 2) == pep.heavy_ball_worst_case(8.0, 2.0, 0.05, 0.3, 2)
    # a function value scales with L
    double = pep.heavy_ball_worst_case(4.0, 1.0, 0.1, 0.3, 2, metric="function-value")["worst_case"]
    assert double == pytest.approx(2 * pep.heavy_ball_worst_case(2.0, 0.5, 0.2, 0.3, 2, metric="function-value")[
        "worst_case"], rel=1e-15)


@examples(50)
@given(st.one_of(st.floats(-300, 300).map(lambda exponent: 10.0**exponent), st.floats(0.1, 10)),
       st.sampled_from([0.0, 1e-300, 0.25, 0.999, 1.0]), st.sampled_from([1e-6, 0.5, 1.9, 10.0, 1e3, 1e7]),
       st.sampled_from([0.0, 0.5, 0.99]), st.integers(1, 3), st.sampled_from(pep.START), st.sampled_from(pep.METRIC))
def test_extreme_valid_values_give_a_named_solver_error_or_a_certified_worst_case(L, ratio, eta_L, beta, iterations,
                                                                                 start, metric):
    # extreme scales of L (mu = ratio L, eta = eta_L / L) and huge steps: a certified worst case or the named error
    mu, step = ratio * L, eta_L / L
    try:
        result = pep.heavy_ball_worst_case(L, mu, step, beta, iterations, start, metric)
    except pep.PerformanceEstimationError as error:
        assert "performance-estimation SDP" in str(error)
        return
    value = result["worst_case"]
    assert value >= 0 and not np.isnan(value) and value == result["upper_bound"] >= result["lower_bound"]
    assert result["width"] <= certificate.MAX_WIDTH
    assert result["certified"] == ("tight" if result["duality_gap"] <= CERTIFIED else "bracket")
    lower = _quadratic_lower_bound(1.0, mu / L, step * L, beta, iterations, start, metric)
    if metric == "function-value":
        with np.errstate(over="ignore"):
            lower *= L  # the bound is at L = 1; a function value scales with L
    assert result["lower_bound"] >= lower * (1 - EXACT)  # never below the worst quadratic, beyond rounding


STEP = dict(smoothness=4.0, strong_convexity=1.0, step=0.25, beta=0.5)
VALID = {pep.heavy_ball_worst_case: dict(STEP, iterations=2, start="state", metric="distance"),
         pep.heavy_ball_rate: dict(STEP, horizon=2, start="at-rest"), pep.heavy_ball_spectral_radius: STEP}
@pytest.mark.parametrize("function, kwargs, name", invalid_calls(VALID))
def test_every_parameter_is_validated_with_its_name(function, kwargs, name):
    assert_rejected(function, kwargs, name)


@pytest.mark.parametrize("kwargs", [dict(strong_convexity=5.0), dict(step=1e300, smoothness=1e300)])
def test_impossible_combinations_are_rejected_before_solving(kwargs):
    for function in (pep.heavy_ball_worst_case, pep.heavy_ball_spectral_radius):
        with pytest.raises(InvalidParameterError, match="strong_convexity|step"):
            function(**{**dict(smoothness=4.0, strong_convexity=1.0, step=0.25), **kwargs})
