"""pytest helpers: assert that a claim's check passed, or that measurements respect a bound.

    from cflbounds.verify import verify
    from cflbounds.verify.testing import assert_claim, assert_within_bound

    def test_ifca_one_step():
        assert_claim(verify("IFCA.T1", scale="smoke"))

    def test_my_method_error():
        assert_within_bound(errors, bound, failure_probability=0.05, confidence=0.95)
"""
from __future__ import annotations

from numbers import Integral

import numpy as np
import pytest

from .._validation import Interval, InvalidParameterError, Options
from .stats import clopper_pearson
from .verdict import PASSING, Verdict

__all__ = ["assert_claim", "assert_within_bound", "invalid_values", "invalid_calls", "assert_rejected"]


def assert_claim(verdict: Verdict, allowed=PASSING) -> Verdict:
    """Fail the test unless the verdict is one of ``allowed`` (``holds``/``rate-consistent``);
    the failure message carries the summary, the evidence and the seed to reproduce it."""
    if verdict.verdict not in allowed:
        evidence = ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                             for k, v in verdict.evidence.items())
        raise AssertionError(
            f"{verdict.id}: {verdict.verdict} (expected {' or '.join(allowed)}) at scale {verdict.scale!r}, "
            f"seed {verdict.seed}, {verdict.trials} trials, confidence {verdict.confidence}.\n"
            f"{verdict.summary}\nevidence: {evidence}"
        )
    return verdict


def assert_within_bound(measured, bound, *, failure_probability: float = 0.0, confidence: float = 0.95):
    """Fail unless ``measured <= bound`` except with probability at most ``failure_probability``,
    at the given confidence: the Clopper-Pearson upper end of the exceedance rate must not
    exceed ``failure_probability`` (with ``failure_probability = 0`` any exceedance fails).

    ``measured`` and ``bound`` broadcast (one bound per sample, or one for all). Returns the
    number of exceedances and the interval. Fails too when there are too few samples for
    the test to ever pass, saying how many would be needed.
    """
    measured, bound = np.broadcast_arrays(np.asarray(measured, dtype=float), np.asarray(bound, dtype=float))
    if measured.size == 0 or not np.all(np.isfinite(measured)):
        raise AssertionError("assert_within_bound needs a non-empty array of finite measurements")
    exceed = int(np.sum(measured > bound))
    trials = measured.size
    low, high = clopper_pearson(exceed, trials, confidence)
    if failure_probability == 0.0:
        if exceed:
            worst = float(np.max(measured - bound))
            raise AssertionError(f"{exceed}/{trials} measurements exceed the bound (worst excess {worst:.4g})")
        return exceed, (float(low), float(high))
    if high > failure_probability:
        # with no exceedance the upper end is 1 - (alpha/2)^(1/N): it reaches the level once
        # N >= log(alpha/2) / log(1 - level)
        needed = int(np.ceil(np.log((1 - confidence) / 2) / np.log(1 - failure_probability)))
        hint = f"; even with no exceedance {needed} samples are needed" if needed > trials else ""
        raise AssertionError(
            f"{exceed}/{trials} measurements exceed the bound: exceedance rate in [{low:.4g}, {high:.4g}] "
            f"at confidence {confidence}, above the allowed {failure_probability}{hint}"
        )
    return exceed, (float(low), float(high))


def invalid_values(constraints) -> list:
    """Values that violate every constraint of a parameter (``validate_params`` lists): text,
    None, NaN, the infinite end, and the edges just outside each interval (for a generic
    test that every parameter of a public function is validated with its name)."""
    bad = ["abc", None]
    for constraint in constraints:
        if isinstance(constraint, Options):
            bad.append("not-an-option")
        if isinstance(constraint, Interval):
            bad += [float("nan"), float("inf") if constraint.right is None else float("-inf")]
            if constraint.left is not None:
                bad.append(constraint.left - 1)
                if constraint.closed in ("right", "neither"):
                    bad.append(constraint.left)
            if constraint.right is not None:
                bad.append(constraint.right + 1)
                if constraint.closed in ("left", "neither"):
                    bad.append(constraint.right)
            if constraint.kind is Integral:
                bad.append(2.5)
    return [value for value in bad if not any(c.is_satisfied_by(value) for c in constraints)]


def invalid_calls(valid_calls: dict) -> list:
    """For a generic validation test: ``valid_calls`` maps validated public functions to valid
    keyword arguments; the result has one ``pytest.param(function, kwargs, name)`` per declared
    parameter and per :func:`invalid_values` of it, ``kwargs`` the valid call with that one
    parameter made invalid. Use with :func:`assert_rejected`::

        @pytest.mark.parametrize("function, kwargs, name", invalid_calls(VALID))
        def test_every_parameter_is_validated_with_its_name(function, kwargs, name):
            assert_rejected(function, kwargs, name)
    """
    return [pytest.param(function, {**kwargs, name: value}, name, id=f"{function.__name__}-{name}-{value!r}")
            for function, kwargs in valid_calls.items()
            for name, constraints in function.parameter_constraints.items() for value in invalid_values(constraints)]


def assert_rejected(function, kwargs: dict, name: str) -> None:
    """Fail unless ``function(**kwargs)`` raises ``InvalidParameterError`` in the one shape of
    ``validate_params``: naming the parameter, the function and the value it got."""
    try:
        function(**kwargs)
    except InvalidParameterError as error:
        message = str(error)
        if not (f"'{name}'" in message and function.__name__ in message and "Got" in message):
            raise AssertionError(f"{function.__name__}: the error for {name}={kwargs[name]!r} does not name the "
                                 f"parameter, the function and the value: {message}") from error
        return
    raise AssertionError(f"{function.__name__} accepted {name}={kwargs[name]!r}")
