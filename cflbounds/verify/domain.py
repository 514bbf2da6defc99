"""What a claim declares so that ``cflbounds falsify`` can search for its worst case.

A :class:`Domain` is the set of problems and algorithm settings a claim's statement
quantifies over — :class:`Parameter` ranges (integer or continuous, searched on a log scale
where they are scales) and the theorem's assumptions as constraints — together with an
*instance evaluation*: given points of the domain and a seed for each, build the problems with
exact constants, run the algorithm (batched), and return each point's :class:`Instance`: the
measured quantity, the bound's value and the assumption rows.

How an instance is judged (``Domain.rule``), which decides the search's objective and the
confirmation on fresh seeds:

* ``"deterministic"``: the bound holds on every instance (up to ``rtol``); objective
  ``log(measured / allowed)``, allowed = ``bound + rtol |bound|`` plus float64's smallest normal
  number (:func:`deterministic_allowed`); confirmed by
  :func:`.rules.deterministic` on fresh instances;
* ``"expectation"``: ``E[measured] <= bound``, the instance's ``samples`` being independent
  trials; objective ``log(mean / bound)``; confirmed when the Student-t interval of the mean
  excess over fresh trials lies above 0;
* ``"probability"``: ``P(event) <= allowed``, the instance counting ``exceedances`` out of
  ``trials`` (``measured`` the frequency, ``bound`` the allowed probability); objective
  ``frequency - allowed``; confirmed by :func:`.rules.exceedance_counts` on fresh trials.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from .failure import declaration_site

__all__ = ["Parameter", "Instance", "Domain", "RULES", "UNDERFLOW", "deterministic_allowed", "format_against",
           "format_coordinate", "format_point", "format_ratio", "ratio_of"]

RULES = ("deterministic", "expectation", "probability")
# float64's smallest normal number. Below it there is no relative precision (gradual underflow): two
# routes to one vanishing number differ by a few subnormal quanta, which no rtol covers (falsify once
# reported TEXTBOOK.GD's bound, underflowed to 0 at mu/L near 1 over 87 steps, "exceeded" by a measured
# 1.5e-323). A deterministic bound allows this much more (:func:`deterministic_allowed`).
UNDERFLOW = float(np.finfo(np.float64).tiny)


@dataclass(frozen=True)
class Parameter:
    """One coordinate of a domain: ``low <= value <= high``, an ``integer`` or a float,
    searched on a ``log`` scale (for scales: sizes, noise levels, step sizes) or a linear one.
    ``simple``: the value shrinking moves it toward (default: ``low`` for an integer, else
    the round number of the range nearest ``low``).

    As in scikit-learn, where an estimator's parameters are checked when it is fitted, not when
    it is made, a malformed declaration does not raise where it is written: a plugin module
    declaring one bad parameter still imports, and only the claim that uses it loses its domain
    (the registry names the claim and ``declared_at``, the file:line of the declaration).
    :meth:`problems` says what is wrong, :meth:`validate` raises it."""

    name: str
    low: float
    high: float
    integer: bool = False
    log: bool = False
    simple: float | None = None
    description: str = ""
    declared_at: str = field(default="", init=False, compare=False, repr=False)

    def __post_init__(self):
        object.__setattr__(self, "declared_at", declaration_site())

    def problems(self) -> list[str]:
        """What is wrong with this declaration (empty when nothing is)."""
        name, low, high = self.name, self.low, self.high
        if not isinstance(name, str) or not name:
            return [f"parameter name {name!r} must be a non-empty string"]
        numbers = all(isinstance(v, (int, float, np.number)) and not isinstance(v, bool) for v in (low, high))
        if not (numbers and math.isfinite(low) and math.isfinite(high) and low <= high):
            return [f"parameter {name!r}: needs finite low <= high, got [{low}, {high}]"]
        found = []
        if self.log and low <= 0:
            found.append(f"parameter {name!r}: a log scale needs low > 0, got {low}")
        if self.integer and (low != round(low) or high != round(high)):
            found.append(f"parameter {name!r}: an integer range needs integer ends, got [{low}, {high}]")
        if self.simple is not None and not (isinstance(self.simple, (int, float, np.number))
                                            and low <= self.simple <= high):
            found.append(f"parameter {name!r}: simple = {self.simple} is outside [{low}, {high}]")
        return found

    def validate(self) -> "Parameter":
        """Raise ValueError with :meth:`problems` and where the parameter was declared."""
        found = self.problems()
        if found:
            raise ValueError("; ".join(found) + (f" (declared at {self.declared_at})" if self.declared_at else ""))
        return self

    @property
    def simplest(self) -> float:
        if self.simple is not None:
            return self.simple
        return self.low if self.integer else round_toward(self.low, self.high, self.low)

    def decode(self, unit: float):
        """The value at ``unit`` in [0, 1] (clipped), on the parameter's scale, rounded for an integer."""
        unit = min(max(float(unit), 0.0), 1.0)
        value = (math.exp(math.log(self.low) + unit * (math.log(self.high) - math.log(self.low))) if self.log
                 else self.low + unit * (self.high - self.low))
        value = min(max(value, self.low), self.high)
        return int(round(value)) if self.integer else value

    def encode(self, value) -> float:
        """The unit coordinate of ``value`` (inverse of :meth:`decode` up to rounding)."""
        if self.high == self.low:
            return 0.0
        if self.log:
            return (math.log(value) - math.log(self.low)) / (math.log(self.high) - math.log(self.low))
        return (value - self.low) / (self.high - self.low)

    def contains(self, value) -> bool:
        if self.integer and (not isinstance(value, (int, np.integer)) or isinstance(value, bool)):
            return False
        return isinstance(value, (int, float, np.number)) and self.low <= value <= self.high


def round_toward(low: float, high: float, value: float) -> float:
    """The roundest number in ``[low, high]`` nearest ``value``: fewest significant digits first."""
    for digits in range(1, 16):
        rounded = float(f"{value:.{digits}g}")
        if low <= rounded <= high:
            return rounded
    return value


@dataclass
class Instance:
    """One evaluated point: ``measured`` against ``bound`` and the assumption rows
    (``Inequality.as_dict()``) at this instance. ``samples`` (expectation claims): the
    per-trial values ``measured`` averages; ``exceedances`` out of ``trials`` (probability
    claims): ``measured`` is their frequency, ``bound`` the allowed probability.
    ``details``: what else a reader of the counterexample needs (numbers or short strings).
    ``margin`` (optional): how close the instance came to the event, e.g. the largest deviation
    over its trials divided by the threshold (below 1: no trial exceeded); the search follows it
    where no event is observed yet, the verdict never uses it."""

    measured: float
    bound: float
    assumptions: list = field(default_factory=list)
    samples: list | None = None
    exceedances: int | None = None
    trials: int | None = None
    details: dict = field(default_factory=dict)
    margin: float | None = None

    @property
    def admissible(self) -> bool:
        """Every assumption row holds at this instance (an inadmissible instance never counts)."""
        return all(bool(row["holds"]) for row in self.assumptions)

    @property
    def ratio(self) -> float:
        """``measured / bound``; ``inf`` when a non-positive bound is exceeded, 0 when the bound
        is ``+inf``."""
        return ratio_of(self.measured, self.bound)

    def as_dict(self) -> dict:
        data = {"measured": self.measured, "bound": self.bound, "ratio": self.ratio, "assumptions": self.assumptions,
                "details": self.details}
        if self.samples is not None:
            data["samples"] = len(self.samples)
        if self.trials is not None:
            data.update(exceedances=self.exceedances, trials=self.trials)
        return data


@dataclass(frozen=True)
class Domain:
    """What a claim's statement quantifies over, and how one instance of it is measured: the
    ``parameters`` (each a :class:`Parameter` range) span the search space; ``evaluate`` builds
    and runs the problem at each point and returns its :class:`Instance` (measured quantity,
    bound, assumption rows); ``rule`` says how an instance is judged (``deterministic``,
    ``expectation`` or ``probability``: the module docstring). ``cflbounds falsify`` searches a
    domain for the point where the measured quantity most exceeds the bound, and ``cflbounds
    verify`` searches it after the claim's designed experiment, or as the whole claim when there
    is none (the short form ``Claim(id, statement, bound=..., domain=...)``).

    ``evaluate(points, seeds, ctx)``: a list of points (dicts of parameter values) and one seed
    per point, returning a list of one :class:`Instance` per point; it may batch them (the result
    of a point must not depend on the others). What it returns is checked on every call, never
    trusted (:mod:`.contract` lists the rules; a break is the claim's ``error``). ``constraints(point)``: assumption rows that depend
    on the parameters alone, checked before evaluating (a point breaking one is never
    evaluated); rows that depend on the drawn problem come back in the instance.
    ``confirmation``: fresh seeds used to confirm a counterexample; ``rtol``: a deterministic
    bound's numerical tolerance. ``note``: what the search varies, in a sentence.

    Checked lazily, like :class:`Parameter`: :meth:`problems` lists what is wrong (its
    parameters' problems with their file:line included), :meth:`validate` raises it; the
    registry keeps a claim whose domain is malformed, without the domain."""

    parameters: Sequence[Parameter]
    evaluate: Callable
    rule: str = "deterministic"
    constraints: Callable[[dict], list] | None = None
    confirmation: int = 20
    rtol: float = 1e-9
    note: str = ""
    declared_at: str = field(default="", init=False, compare=False, repr=False)

    def __post_init__(self):
        object.__setattr__(self, "declared_at", declaration_site())

    def problems(self) -> list[str]:
        """What is wrong with this declaration (empty when nothing is), each with its file:line."""
        here = f" (declared at {self.declared_at})" if self.declared_at else ""
        try:
            parameters = list(self.parameters)
        except TypeError:
            return [f"a domain's parameters must be a list of cflbounds.claims.Parameter{here}"]
        found = []
        for parameter in parameters:
            if not isinstance(parameter, Parameter):
                found.append(f"{parameter!r:.60} is not a cflbounds.claims.Parameter{here}")
            else:
                at = f" (declared at {parameter.declared_at})" if parameter.declared_at else here
                found += [problem + at for problem in parameter.problems()]
        names = [getattr(p, "name", None) for p in parameters]
        if not names or len(set(names)) != len(names):
            found.append(f"a domain needs distinct parameter names, got {names}{here}")
        if self.rule not in RULES:
            found.append(f"domain rule must be one of {RULES}, got {self.rule!r}{here}")
        if not callable(self.evaluate) or (self.constraints is not None and not callable(self.constraints)):
            found.append(f"a domain's evaluate (and constraints) must be functions{here}")
        if not (isinstance(self.confirmation, int) and self.confirmation >= 2):
            found.append(f"a domain needs an int >= 2 of confirmation seeds, got {self.confirmation!r}{here}")
        if not (isinstance(self.rtol, (int, float)) and math.isfinite(self.rtol) and self.rtol >= 0):
            found.append(f"a domain's rtol must be a finite number >= 0, got {self.rtol!r}{here}")
        return found

    def validate(self) -> "Domain":
        """Raise ValueError with :meth:`problems`."""
        found = self.problems()
        if found:
            raise ValueError("; ".join(found))
        return self

    def decode(self, unit) -> dict:
        return {p.name: p.decode(u) for p, u in zip(self.parameters, unit)}

    def encode(self, point: dict) -> np.ndarray:
        return np.array([p.encode(point[p.name]) for p in self.parameters])

    def check_point(self, point: dict) -> None:
        """Raise ValueError unless ``point`` names every parameter with a value in its range."""
        missing = [p.name for p in self.parameters if p.name not in point]
        unknown = sorted(set(point) - {p.name for p in self.parameters})
        if missing or unknown:
            raise ValueError(f"point {point}: missing {missing}, unknown {unknown}")
        bad = [p.name for p in self.parameters if not p.contains(point[p.name])]
        if bad:
            raise ValueError(f"point {point}: {bad} outside the domain")

    def constraint_rows(self, point: dict) -> list:
        return list(self.constraints(point)) if self.constraints is not None else []

    def allowed(self, instance: Instance) -> float:
        """What the claim allows at ``instance``: a deterministic bound with its numerical
        tolerance (:func:`deterministic_allowed`, as :func:`.rules.deterministic` judges it), else the bound."""
        if self.rule == "deterministic":
            return float(deterministic_allowed(instance.bound, self.rtol))
        return instance.bound

    def ratio(self, instance: Instance) -> float:
        """``measured / allowed``: above 1 exactly when the instance violates the claim."""
        return ratio_of(instance.measured, self.allowed(instance))

    def score(self, instance: Instance) -> float:
        """The search's objective, positive exactly when the instance violates the claim:
        ``log(measured / allowed)``, or for a probability ``frequency - allowed``."""
        if self.rule == "probability":
            return instance.measured - instance.bound
        ratio = self.ratio(instance)
        return math.inf if math.isinf(ratio) else (math.log(ratio) if ratio > 0 else -math.inf)


def deterministic_allowed(bound, rtol: float, atol: float = 0.0):
    """What a deterministic ``bound`` allows (an array or a float): ``bound + rtol |bound| + atol``
    plus ``UNDERFLOW`` (an excess inside float64's subnormal range is rounding, never a
    violation); an infinite bound allows itself."""
    bound = np.asarray(bound, dtype=float)
    with np.errstate(invalid="ignore", over="ignore"):
        return np.where(np.isinf(bound), bound, bound + rtol * np.abs(bound) + atol + UNDERFLOW)


def ratio_of(measured: float, bound: float) -> float:
    """``measured / bound``: ``inf`` when a non-positive bound is exceeded (else 0), 0 against ``+inf``."""
    if bound == math.inf:  # an overflowed bound promises nothing: never approached, even by a diverged run
        return 0.0
    if bound > 0:
        return measured / bound
    return math.inf if measured > bound else 0.0


NEAR_ONE = 1e-4  # below this distance from 1 a ratio is written as 1 + excess: decimals would run long


def format_ratio(ratio: float) -> str:
    """``ratio`` with the digits that show how far it is from 1, the line a verdict is drawn
    at: ``1.0103`` (not ``1.01``: three significant digits of the excess), ``0.9998``,
    ``1 + 2.1e-10`` and ``1 - 3.4e-05`` near 1 (where a fixed number of significant digits
    prints ``1`` and a reader takes a violation for rounding), ``1`` only when it is exactly 1;
    far from 1 (below 0.5 or from 10 on) four significant digits, ``inf`` and ``nan`` by name.
    Trailing zeros are dropped (``1.25``, ``2``)."""
    ratio = float(ratio)
    if not math.isfinite(ratio) or ratio < 0.5 or ratio >= 10:
        return f"{ratio:.4g}"
    distance = abs(ratio - 1.0)
    if distance == 0:
        return "1"
    if distance < NEAR_ONE:
        return f"1 {'+' if ratio > 1 else '-'} {distance:.2g}"
    decimals = max(3, 2 - math.floor(math.log10(distance)))  # three significant digits of the distance
    return f"{ratio:.{decimals}f}".rstrip("0").rstrip(".")


SHOWN_DIGITS = 4  # significant digits of a point's coordinate, where no more are needed


def format_coordinate(value, ends: Sequence[float] = ()) -> str:
    """A point's coordinate in the digits that matter: an integer (or an integral float) and a
    number of at most :data:`SHOWN_DIGITS` significant digits exactly (``0.87``); another
    number to :data:`SHOWN_DIGITS` significant digits, trailing zeros kept so that it
    does not read as a rounder number than it is (``0.010000964778`` is ``0.01000``, not
    ``0.01``), and with as many more as it takes not to print it at or past one of ``ends`` (its
    domain's edges) that it lies inside of (``0.9999989`` below an edge at ``0.999999`` is
    ``0.9999989``, not ``1.000``). The exact value is what a run's files store and a replay uses."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
        return str(value)
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    value = float(value)
    if not math.isfinite(value) or (value == round(value) and abs(value) < 1e15):
        return f"{value:g}"
    if float(f"{value:.{SHOWN_DIGITS}g}") == value:  # a short number (0.5, 0.87, 1e-07): as it is
        return f"{value:.{SHOWN_DIGITS}g}"
    for digits in range(SHOWN_DIGITS, 18):
        text = f"{value:#.{digits}g}"
        shown = float(text)
        if all((shown > end) - (shown < end) == (value > end) - (value < end) for end in ends):
            return text
    return repr(value)


def format_point(point: dict, parameters: Sequence[Parameter] | None = None) -> str:
    """``name = value, ...`` of a domain's ``point``, each coordinate by :func:`format_coordinate`
    against its :class:`Parameter`'s range when ``parameters`` are given."""
    ranges = {p.name: (p.low, p.high) for p in parameters or ()}
    return ", ".join(f"{name} = {format_coordinate(value, ranges.get(name, ()))}" for name, value in
                     (point or {}).items())


def format_against(measured: float, bound: float) -> tuple[str, str]:
    """``measured`` and ``bound`` with the fewest significant digits (at least 4, at most 17)
    that tell them apart: never "measured 0.9998 > bound 0.9998"."""
    for digits in range(4, 18):
        shown = f"{float(measured):.{digits}g}", f"{float(bound):.{digits}g}"
        if shown[0] != shown[1] or float(measured) == float(bound):
            return shown
    return shown

