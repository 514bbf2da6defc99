"""Every registered theorem-as-code, fed extreme values: a clear error or an honest number.

One generic test over all bounds (scikit-learn's habit): for each claim's bound function,
each numeric parameter is replaced by extreme values one at a time (huge, tiny, huge
integers, the largest exact count). The call must either raise ``InvalidParameterError``
naming that parameter, or return a result with no NaN anywhere (inf is an honest value
for an overflowing bound); never another exception. An assumption row with an infinite
side (an overflowed bound or threshold) must be decided exactly: it may hold only where the
strict comparison of its two sides does (``inf <= 2`` must not hold).
"""
from __future__ import annotations

import math
import operator

import numpy as np
import pytest

from cflbounds import InvalidParameterError
from cflbounds.bounds import BoundResult, Inequality
from cflbounds.verify.registry import CLAIMS

LINEAR = {"sigma": 0.1, "p": 0.5, "d": 10, "m": 100, "n_prime": 20, "separation": 1.0}
STRONG = {"p": 0.5, "m": 100, "k": 2, "n_prime": 20, "separation": 1.0, "strong_convexity": 2.0, "smoothness": 2.0,
          "loss_variance": 1.0}
MGD = {"v": 1.0, "sigma": 0.5, "L": 4.0, "mu": 1.0, "l": 0.5, "m": 100, "n_prime": 100, "P": 2, "delta": 1.0,
       "beta": 0.5}
DSC = {"L": 1.0, "mu": 0.5, "delta_inter": 1.0, "delta_intra": 1.0, "weight_factor": 0.02, "learning_rate": 0.1}
FEDAVG = {"L": 4.0, "mu": 1.0, "E": 5, "T": 100, "G": 1.0, "Gamma": 0.5, "weighted_variance": 0.1,
          "initial_distance_sq": 2.0}
SCAFFOLD = {"sigma_sq": 1.0, "mu": 0.5, "beta": 2.0, "K": 10, "N": 10, "epsilon": 0.01}
FEDPROX = {"mu": 10.0, "gamma": 0.1, "B": 1.5, "L": 1.0, "L_minus": 0.5, "K": 100}
VALID = {
    "IFCA.A1": {"init_distance": 0.1, "separation": 1.0},
    "IFCA.A2": LINEAR,
    "IFCA.T1": {"distance": 0.2, **LINEAR},
    "IFCA.C1": LINEAR,
    "IFCA.A3-6": {"init_distance": 0.1, **STRONG},
    "IFCA.T2": {**STRONG, "gradient_variance": 1.0},
    "IFCA.T2c": {"p": 0.5, "strong_convexity": 2.0, "smoothness": 2.0},
    "MGD.A1-5": {"init_distance": 0.1, "delta": 1.0, "mu": 1.0, "L": 4.0, "sigma": 0.5, "n_prime": 100, "P": 2,
                 "l": 0.5, "m": 100, "d": 10},
    "MGD.L1": {"sigma": 0.5, "delta": 1.0, "mu": 2.0, "n_prime": 100},
    "MGD.L2": {"distance": 0.1, **MGD},
    "MGD.T1": MGD,
    "MGD.MA": {"eps0": 0.1, "step": 0.25, "L": 4.0, "cluster_size": 10, "beta": 0.5, "T": 10},
    "FC.T1": {"L": 0.1, "E": 5, "M": 4, "T": 1000, "initial_gap": 1.0, "H_cluster": 0.1, "variance": 0.1, "G": 1.0},
    "FC.SPEEDUP": {"M": 4, "E": 5, "T": 1000, "C": 1.0, "C_fedavg": 1.0},
    "FC.TRADEOFF": {"n": 16, "L": 0.1, "initial_gap": 1.0, "H_device": 1.0, "mean_variance": 0.1},
    "LCFL.E4": {"disc": 0.3},
    "LCFL.T1": {"delta": 0.05, "m_i": 200, "m_j": 300, "rademacher_i": 0.05, "rademacher_j": 0.04},
    "LCFL.E8": {"difference_norm_sq": 0.1, "lambda_min": 1.0, "lambda_max": 2.0},
    "DSC.A1-4": {"L": 1.0, "mu": 0.5, "delta_intra": 1.0, "delta_inter": 1.0},
    "DSC.T1": {"initial_gap": 1.0, **DSC, "noise_factor": 0.1, "iterations": 10},
    "DSC.E14": DSC,
    "FEDAVG.T1": FEDAVG,
    "FEDAVG.T2": {**FEDAVG, "K": 5, "N": 10},
    "FEDAVG.T3": {**FEDAVG, "K": 5, "N": 10},
    "FEDAVG.T3U": {**{k: v for k, v in FEDAVG.items() if k != "weighted_variance"}, "sigma_sq_sum": 1.0, "nu": 1.5,
                   "varsigma": 0.5, "K": 5, "N": 10},
    "FEDAVG.T4": {"E": 5, "eta": 0.1},
    "FEDAVG.T3-FROM-T1": {**FEDAVG, "K": 10, "N": 10},
    "FEDAVG.T3U-FROM-T3": {**{k: v for k, v in FEDAVG.items() if k != "weighted_variance"}, "sigma_sq_sum": 1.0,
                           "nu": 1.0, "varsigma": 1.0, "K": 5, "N": 10},
    "LOCALGD.T1": {"initial_distance_sq": 1.0, "sigma_sq": 1.0, "L": 1.0, "gamma": 0.05, "H": 4, "T": 100},
    "LOCALGD.C1": {"initial_distance_sq": 1.0, "sigma_sq": 1.0, "L": 1.0, "H": 3, "T": 100, "M": 10},
    "LOCALGD.C1-FROM-T1": {"initial_distance_sq": 1.0, "sigma_sq": 1.0, "L": 1.0, "H": 3, "T": 100, "M": 10},
    "SCAFFOLD.T1": {**SCAFFOLD, "G": 1.0, "B": 1.0, "S": 5},
    "SCAFFOLD.T2": {"G": 1.0, "mu": 0.5, "R": 10},
    "SCAFFOLD.T3": {**SCAFFOLD, "S": 5},
    "SCAFFOLD.T4": {**SCAFFOLD, "delta": 0.1},
    "FEDPROX.T4": FEDPROX,
    "FEDPROX.C7": {"L": 1.0, "B": 2.0, "K": 100},
    "FEDPROX.T6": {**FEDPROX, "Delta": 1.0, "epsilon": 0.01},
    "FEDPROX.T11": {**{k: v for k, v in FEDPROX.items() if k != "B"}, "sigma_sq": 1.0, "epsilon": 1.0},
    "CFL.T1": {"gamma_i": 0.2, "gamma_j": 0.3, "k": 3},
    "CFL.C1": {"gamma_max": 0.3, "k": 2},
    "FEDPROX.C7-FROM-T4": {"L": 1.0, "B": 4.0, "K": 100},
    "CFL.C1-CODE": {"gamma_max": 0.3, "k": 3},
    "CFL.SPLIT": {"gamma_max": 0.3, "alpha_cross_max": -0.2},
    "CFL.C1-FROM-T1": {"gamma_max": 0.2, "k": 4},
}
EXTREMES = (1e308, 1e300, 1e-300, 10**400, 2**53, 2**53 + 1, 5e-324)  # 1e308 also overflows sums of two terms


def _numbers(value):
    """Every number inside a bound's result (dicts, lists, Inequality rows)."""
    if isinstance(value, dict):
        for item in value.values():
            yield from _numbers(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _numbers(item.as_dict() if hasattr(item, "as_dict") else item)
    elif isinstance(value, (float, np.floating)):
        yield float(value)


def _as_plain(result):
    return result.as_dict() if hasattr(result, "as_dict") else result


def test_every_registered_bound_has_a_valid_example():
    assert set(VALID) == {claim.id for claim in CLAIMS.values() if claim.bound is not None}
    for claim_id, kwargs in VALID.items():
        numbers = list(_numbers(_as_plain(CLAIMS[claim_id].bound(**kwargs))))
        assert numbers and all(math.isfinite(x) for x in numbers), claim_id


CASES = [(claim_id, name, value) for claim_id, kwargs in VALID.items() for name in kwargs for value in EXTREMES]


@pytest.mark.parametrize("claim_id, name, value", CASES, ids=[f"{c}-{n}-{v!r:.12}" for c, n, v in CASES])
def test_extreme_values_give_a_named_error_or_no_nan(claim_id, name, value):
    bound = CLAIMS[claim_id].bound
    try:
        result = bound(**{**VALID[claim_id], name: value})
    except InvalidParameterError as error:
        assert repr(name) in str(error) or name in str(error), str(error)
        return
    assert not any(math.isnan(x) for x in _numbers(_as_plain(result))), f"NaN in {claim_id} with {name}={value!r}"


def test_inequality_decides_infinite_sides_and_strict_relations_exactly():
    """Rounding leeway (1e-12 relative) only between finite sides of a non-strict relation."""
    inf, nan = math.inf, math.nan
    cases = [((inf, 2.0, "<="), False), ((inf, inf, "<="), False), ((1.0, inf, "<="), True),
             ((-inf, 1.0, ">="), False), ((inf, 1e308, ">="), True), ((nan, 1.0, "<="), False),
             ((2.0, 2.0, "<="), True), ((2.0, 2.0, "<"), False), ((2.0, 2.0, ">"), False),
             ((0.1 + 0.2, 0.3, "<="), True), ((0.1 + 0.2, 0.3, "<"), False), ((1e308, -1e308, "<="), False)]
    for (lhs, rhs, relation), expected in cases:
        assert bool(Inequality("case", lhs, rhs, relation, "test").holds) == expected, (lhs, relation, rhs)
    rows = Inequality("array", np.array([1.0, inf, 2.0, nan]), 2.0, "<=", "test")
    assert rows.holds.tolist() == [True, False, True, False]
    with pytest.raises(ValueError, match="relation"):
        Inequality("typo", 1.0, 2.0, "=<", "test")


_STRICTLY = {"<=": operator.lt, "<": operator.lt, ">=": operator.gt, ">": operator.gt}



def _rows(result):
    if isinstance(result, BoundResult):
        return result.assumptions
    return tuple(row for row in result if isinstance(row, Inequality)) if isinstance(result, tuple) else ()


@pytest.mark.parametrize("claim_id, name, value", CASES, ids=[f"{c}-{n}-{v!r:.12}" for c, n, v in CASES])
def test_a_row_with_an_infinite_side_holds_only_if_it_strictly_does(claim_id, name, value):
    try:
        result = CLAIMS[claim_id].bound(**{**VALID[claim_id], name: value})
    except InvalidParameterError:
        return
    for row in _rows(result):
        for lhs, rhs, holds in zip(*np.broadcast_arrays(np.ravel(row.lhs), np.ravel(row.rhs), np.ravel(row.holds))):
            if not (math.isfinite(lhs) and math.isfinite(rhs)):
                assert not holds or _STRICTLY[row.relation](float(lhs), float(rhs)), \
                    f"{claim_id} with {name}={value!r}: '{row.name}' reported as holding at {lhs} {row.relation} {rhs}"
