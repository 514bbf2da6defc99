"""The parameter constraints every theorem-as-code shares, and the decorator that applies them.

A bound is evaluated in float64: :func:`bound_params` validates the parameters up front
(:func:`cflbounds._validation.validate_params`), then passes every real-valued one as
``np.float64``, so a huge but valid constant yields ``inf`` (an honest, if useless,
bound) instead of Python's ``OverflowError`` from float arithmetic. Counts are integers
up to ``2**53``, where they are still exact as floats.
"""
from __future__ import annotations

import functools
import inspect
from numbers import Integral, Real

import numpy as np

from .._validation import Constraint, Interval, check_param, validate_params

__all__ = ["POSITIVE", "NONNEGATIVE", "PROBABILITY", "PROPORTION", "UNIT", "AT_LEAST_ONE", "COUNT",
           "NONNEGATIVE_COUNT", "bound_params", "within"]

_EXACT = 2**53
POSITIVE = [Interval(Real, 0, None, closed="neither")]
NONNEGATIVE = [Interval(Real, 0, None, closed="left")]
PROBABILITY = [Interval(Real, 0, 1, closed="neither")]
PROPORTION = [Interval(Real, 0, 1, closed="right")]
UNIT = [Interval(Real, 0, 1, closed="both")]
AT_LEAST_ONE = [Interval(Real, 1, None, closed="left")]
COUNT = [Interval(Integral, 1, _EXACT)]
NONNEGATIVE_COUNT = [Interval(Integral, 0, _EXACT)]


def _real_valued(constraints) -> bool:
    return any(isinstance(c, Interval) and c.kind is Real for c in constraints)


def bound_params(constraints: dict[str, list]):
    """``validate_params(constraints)``, then real-valued numbers as ``np.float64`` and
    overflow and division by zero to inf without a warning."""
    floats = {name for name, allowed in constraints.items() if _real_valued(allowed)}

    def decorator(function):
        signature = inspect.signature(function)

        @functools.wraps(function)
        def in_float64(*args, **kwargs):
            bound = signature.bind(*args, **kwargs)
            for name in floats & set(bound.arguments):
                value = bound.arguments[name]
                if isinstance(value, Real) and not isinstance(value, (bool, np.bool_)):
                    bound.arguments[name] = np.float64(value)
            with np.errstate(over="ignore", divide="ignore"):
                return function(*bound.args, **bound.kwargs)

        return validate_params(constraints)(in_float64)

    return decorator


def within(name: str, value, caller, low=None, high=None, closed="both", kind=Real, rule="") -> None:
    """A range that depends on other parameters (``K <= N``, ``mu <= L``, a step at most
    ``1/(4LH)``), refused with :func:`validate_params`' one message, the ``rule`` naming the
    parameters it comes from: "The 'K' parameter of theorem3 must be an int in the range
    [1, 10] (K <= N). Got 12 instead." ``caller`` is the public function's name."""
    interval = Interval(kind, low, high, closed=closed)
    value = value.item() if isinstance(value, np.generic) else value  # the message shows 5.0, not np.float64(5.0)
    check_param(name, value, [Constraint(interval.is_satisfied_by, f"{interval} ({rule})") if rule else interval],
                caller)
