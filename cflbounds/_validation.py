"""Parameter validation shared by every public function and the CLI.

Modelled on scikit-learn's ``_param_validation``: constraints are declared once per
function with :func:`validate_params`, checked at the public boundary before any work
starts, and every failure raises :class:`InvalidParameterError` with one message shape::

    The 'sigma' parameter of make_mixed_linear_regression must be a float in the
    range [0, inf). Got -1.0 instead.

Private kernels behind a validated function are not re-checked.
"""
from __future__ import annotations

import functools
import inspect
import math
from numbers import Integral, Real
from typing import Any, Callable, Iterable

import numpy as np

__all__ = [
    "InvalidParameterError",
    "Interval",
    "Options",
    "Constraint",
    "ArrayLike",
    "Boolean",
    "NoneOK",
    "SeedArray",
    "validate_params",
    "check_param",
    "describe",
    "require",
]


class InvalidParameterError(ValueError):
    """An invalid public parameter, or an impossible combination of parameters.

    The message names the parameter, its value and the allowed range; the CLI prints it
    as one line and exits with status 2.
    """


def _fits_float(value: int) -> bool:
    try:
        float(value)
    except OverflowError:
        return False
    return True


class Interval:
    """Numbers of ``kind`` (``Integral`` or ``Real``) between ``left`` and ``right``.

    ``closed`` is one of ``"left"``, ``"right"``, ``"both"``, ``"neither"``; ``None`` bounds
    are infinite. NaN never satisfies an interval; booleans are not numbers here.
    """

    def __init__(self, kind, left, right, closed="both"):
        if kind not in (Integral, Real):
            raise TypeError("kind must be numbers.Integral or numbers.Real")
        if closed not in ("left", "right", "both", "neither"):
            raise TypeError(f"closed={closed!r} is not one of left/right/both/neither")
        self.kind, self.left, self.right, self.closed = kind, left, right, closed

    def is_satisfied_by(self, value) -> bool:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, self.kind):
            return False
        if isinstance(value, Integral):
            value = int(value)  # exact: a huge int must not overflow a float conversion
            if self.kind is Real and not _fits_float(value):
                return False  # a real-valued parameter must be representable as a float
        else:
            value = float(value)
            if math.isnan(value):
                return False
        if self.left is not None:
            if self.closed in ("left", "both") and value < self.left:
                return False
            if self.closed in ("right", "neither") and value <= self.left:
                return False
        elif isinstance(value, float) and math.isinf(value) and value < 0:
            return False
        if self.right is not None:
            if self.closed in ("right", "both") and value > self.right:
                return False
            if self.closed in ("left", "neither") and value >= self.right:
                return False
        elif isinstance(value, float) and math.isinf(value) and value > 0:
            return False
        return True

    def __str__(self) -> str:
        noun = "an int" if self.kind is Integral else "a float"
        lo = "-inf" if self.left is None else f"{self.left:g}"
        hi = "inf" if self.right is None else f"{self.right:g}"
        lb = "[" if self.closed in ("left", "both") and self.left is not None else "("
        rb = "]" if self.closed in ("right", "both") and self.right is not None else ")"
        return f"{noun} in the range {lb}{lo}, {hi}{rb}"

    def describe(self, name: str) -> str:
        """The range as people write it: ``sigma >= 0``, ``0 < p <= 1``, ``m >= 1 (integer)``."""
        below = "<=" if self.closed in ("left", "both") else "<"  # relation between left and the value
        above = "<=" if self.closed in ("right", "both") else "<"  # relation between the value and right
        if self.left is not None and self.right is not None:
            text = f"{_number(self.left)} {below} {name} {above} {_number(self.right)}"
        elif self.left is not None:
            text = f"{name} {'>=' if below == '<=' else '>'} {_number(self.left)}"
        elif self.right is not None:
            text = f"{name} {above} {_number(self.right)}"
        else:
            text = f"{name} is finite"
        return text + (" (integer)" if self.kind is Integral else "")


class Options:
    """One of a fixed set of values (strings, typically)."""

    def __init__(self, values: Iterable):
        self.values = tuple(values)

    def is_satisfied_by(self, value) -> bool:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (str, Integral, Real)):
            return False  # arrays, lists, None...: never an option (and `array in tuple` is ambiguous)
        return value in self.values

    def __str__(self) -> str:
        return "one of {" + ", ".join(repr(v) for v in self.values) + "}"

    def describe(self, name: str) -> str:
        return f"{name} one of " + ", ".join(str(v) for v in self.values)


class Constraint:
    """A custom constraint: a predicate and the phrase that describes what it accepts."""

    def __init__(self, predicate: Callable[[Any], bool], description: str):
        self.predicate, self.description = predicate, description

    def is_satisfied_by(self, value) -> bool:
        try:
            return bool(self.predicate(value))
        except Exception:  # a predicate that cannot even look at the value rejects it
            return False

    def __str__(self) -> str:
        return self.description

    def describe(self, name: str) -> str:
        return f"{name} is {self.description}"


def _is_finite_array(value) -> bool:
    if isinstance(value, (str, bytes, dict)) or value is None:
        return False
    if hasattr(value, "detach"):  # torch tensor
        value = value.detach().cpu().numpy()
    array = np.asarray(value, dtype=float)
    return array.size > 0 and bool(np.all(np.isfinite(array)))


ArrayLike = Constraint(_is_finite_array, "a non-empty array of finite numbers")


def _is_seed_array(value) -> bool:
    if isinstance(value, (str, bytes, dict)) or np.ndim(value) != 1 or len(value) == 0:
        return False
    array = np.asarray(value)
    return array.dtype.kind in "iu" and bool(np.all(array >= 0))


SeedArray = Constraint(_is_seed_array, "a non-empty 1-d array of non-negative ints")
Boolean = Constraint(lambda v: isinstance(v, (bool, np.bool_)), "a bool")
NoneOK = Constraint(lambda v: v is None, "None")


def _describe(constraints) -> str:
    return " or ".join(str(c) for c in constraints)


def _number(bound) -> str:
    """A range's end as people write it: integers exactly (powers of two from 2^20 as such,
    e.g. 2^53, the largest count a float64 holds exactly), other numbers as ``%g``."""
    if isinstance(bound, Integral):
        power = int(bound).bit_length() - 1
        return f"2^{power}" if bound >= 2**20 and bound == 2**power else str(bound)
    return f"{bound:g}"


def describe(name: str, constraints) -> str:
    """What ``name`` may be, as people write it (``0 < p <= 1``); alternatives joined by "or"."""
    if not isinstance(constraints, (list, tuple)):
        constraints = [constraints]
    return " or ".join(c.describe(name) for c in constraints)


def _format_value(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def check_param(name: str, value, constraints, caller: str) -> None:
    """Raise :class:`InvalidParameterError` unless ``value`` satisfies one constraint."""
    if not isinstance(constraints, (list, tuple)):
        constraints = [constraints]
    if any(c.is_satisfied_by(value) for c in constraints):
        return
    raise InvalidParameterError(
        f"The {name!r} parameter of {caller} must be {_describe(constraints)}. "
        f"Got {_format_value(value)} instead."
    )


def require(condition: bool, message: str) -> None:
    """Raise :class:`InvalidParameterError` with ``message`` unless ``condition`` holds.

    For combinations of parameters that are valid alone but impossible together
    (re-sampling needs ``n >= 2T``; IFCA needs ``k <= m``).
    """
    if not condition:
        raise InvalidParameterError(message)


def validate_params(constraints: dict[str, list]):
    """Decorator: check the named parameters of a public function before it runs."""

    def decorator(func):
        signature = inspect.signature(func)
        unknown = set(constraints) - set(signature.parameters)
        if unknown:
            raise TypeError(f"constraints for unknown parameters {sorted(unknown)} of {func.__name__}")

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            for name, allowed in constraints.items():
                check_param(name, bound.arguments[name], allowed, func.__qualname__)
            return func(*args, **kwargs)

        wrapper.parameter_constraints = constraints
        return wrapper

    return decorator
