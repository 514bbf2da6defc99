"""The Domain contract, checked on every call: what a claim's ``evaluate`` and ``constraints`` must return.

cflbounds never trusts a plugin's return value (as pluggy checks what a hook returns): a
result that breaks a rule raises :class:`~cflbounds.verify.failure.ContractError` naming the
claim, the instance and the rule, and ``falsify`` ends that claim with outcome ``error``
(stage ``contract``). Nothing is truncated, coerced or skipped silently.

An evaluation returns a list (or tuple) of exactly one :class:`~cflbounds.verify.domain.Instance`
per point, in the points' order. Every instance:

* ``measured`` and ``bound``: real numbers;
* ``assumptions``: a list of rows as ``Inequality(...).as_dict()`` gives them: dicts with a
  string ``name``, ``lhs``, ``rhs`` and ``slack`` real numbers (or lists of them; inf and NaN
  allowed, an overflowed side is a legitimate side), a ``relation`` among ``<=, >=, <, >``
  and a bool ``holds``; ``constraints(point)`` returns a list of such rows too;
* ``details``: a dict; ``margin``: None or a real number;
* rule ``probability``: ``exceedances`` and ``trials`` ints with ``0 <= exceedances <= trials``;
  rule ``expectation``: ``samples`` None or a list of real numbers.

An *admissible* instance (every row holds) is judged, so its values must mean something; an
inadmissible one never counts and may leave them unmeasured (NaN, 0 trials: nothing was run):

* ``measured``: not NaN or -inf; ``+inf`` is a diverged run, which exceeds every finite bound
  (DESIGN.md: divergence is an outcome, never a crash);
* ``bound``: not NaN or -inf; ``+inf`` is an overflowed bound, which promises nothing and is
  never violated (its ratio is 0);
* rule ``probability``: ``trials >= 1``; ``bound``, the allowed probability, ``>= 0`` (above 1
  the claim promises nothing there, as :func:`.rules.exceedance_counts` calls it vacuous);
  ``measured`` the frequency ``exceedances / trials``;
* rule ``expectation``: ``samples`` non-empty, each a real number, not NaN or -inf (``+inf``: a
  diverged trial), and ``measured`` their mean.

"Real number": a Python or numpy int or float, never a bool (``measured > bound`` returned by
mistake) nor a tensor or array (call ``float()`` on it).
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from contextlib import contextmanager

import numpy as np

from .._threads import follow_load
from ..bounds._report import _RELATIONS
from .context import VerifyContext
from .domain import Domain, Instance
from .failure import ContractError

__all__ = ["checked_evaluate", "checked_constraint_rows", "check_instances", "check_rows"]

RULE = "the Domain contract"
# measured against exceedances/trials, absolute: a frequency rounded to float32 is off by at most 6e-8;
# measured against the mean of its samples, relative to their mean magnitude: float32 pairwise sums of
# up to 2^20 samples are off by at most ~20 * 6e-8; both far below the error this catches (a
# percentage for a frequency, a median or a maximum for a mean, a count off by one in a million)
FREQUENCY_TOLERANCE = 1e-6
MEAN_TOLERANCE = 1e-5


def checked_evaluate(domain: Domain, points: list, seeds: list, ctx=None, claim: str = "this claim") -> list[Instance]:
    """``domain.evaluate(points, seeds, ctx)``, its result checked against the contract
    (module docstring); raises :class:`ContractError` naming ``claim`` and the broken rule.
    ``ctx``: a :class:`~cflbounds.verify.context.VerifyContext` (default: the default scale, seed
    0, CPU). What ``cflbounds falsify`` gets from a domain, and how a plugin tries its domain
    before a search (``cflbounds.claims.checked_evaluate``, docs/own-theorem.md)."""
    ctx = VerifyContext() if ctx is None else ctx
    with follow_load():  # at most the cores other processes leave free (cflbounds._threads)
        instances = domain.evaluate(list(points), list(seeds), ctx)
    with _returned_by(domain.evaluate):
        return check_instances(domain, points, instances, claim)


def checked_constraint_rows(domain: Domain, point: dict, claim: str = "this claim") -> list[dict]:
    """``domain.constraint_rows(point)``, each row checked (module docstring)."""
    if domain.constraints is None:
        return []
    rows = domain.constraints(point)
    with _returned_by(domain.constraints):
        if not isinstance(rows, (list, tuple)):
            raise ContractError(f"{claim}: constraints({_short(point)}) returned {_kind(rows)}, expected a list of "
                                f"assumption rows ({RULE})")
        return check_rows(list(rows), f"{claim}: constraints({_short(point)})")


@contextmanager
def _returned_by(function):
    """Mark a :class:`ContractError` raised inside with the claim's ``function`` that returned
    the malformed value (its file:line is where the failure is reported)."""
    try:
        yield
    except ContractError as error:
        error.function = function
        raise


def check_instances(domain: Domain, points: list, instances, claim: str = "this claim") -> list[Instance]:
    """``instances`` if they keep the contract for ``points`` (module docstring), else raise."""
    if not isinstance(instances, (list, tuple)):
        raise ContractError(f"{claim}: evaluate returned {_kind(instances)} for {_count(len(points), 'point')}, "
                            f"expected a list of Instance ({RULE}: one Instance per point)")
    if len(instances) != len(points):
        raise ContractError(f"{claim}: evaluate returned {_count(len(instances), 'instance')} for "
                            f"{_count(len(points), 'point')} ({RULE}: one Instance per point)")
    for index, (point, instance) in enumerate(zip(points, instances)):
        where = f"{claim}: evaluate's instance {index + 1} of {len(points)} (point {_short(point)})"
        _check_instance(domain.rule, instance, where)
    return list(instances)


def check_rows(rows, where: str) -> list[dict]:
    """``rows`` if each is an assumption row as ``Inequality.as_dict()`` gives it, else raise."""
    for number, row in enumerate(rows, 1):
        label = f"{where}: assumption row {number}"
        if not isinstance(row, Mapping):
            raise ContractError(f"{label} is {_kind(row)}, expected a dict as Inequality(...).as_dict() gives ({RULE})")
        missing = [key for key in ("name", "lhs", "relation", "rhs", "slack", "holds") if key not in row]
        if missing:
            raise ContractError(f"{label} lacks {', '.join(missing)} (an assumption row is Inequality(...).as_dict(): "
                                f"name, lhs, relation, rhs, slack, holds)")
        if not isinstance(row["name"], str):
            raise ContractError(f"{label}: its name is {_kind(row['name'])}, expected a string ({RULE})")
        if row["relation"] not in _RELATIONS:
            raise ContractError(f"{label} ({row['name']}): relation {row['relation']!r} is not one of "
                                f"{', '.join(_RELATIONS)} ({RULE})")
        if not isinstance(row["holds"], (bool, np.bool_)):
            raise ContractError(f"{label} ({row['name']}): holds is {_kind(row['holds'])}, expected a bool ({RULE})")
        for side in ("lhs", "rhs", "slack"):
            if not _numbers(row[side]):
                raise ContractError(f"{label} ({row['name']}): {side} is {_kind(row[side])}, expected a real number "
                                    f"or a list of them ({RULE})")
    return list(rows)


def _check_instance(rule: str, instance, where: str) -> None:
    if not isinstance(instance, Instance):
        raise ContractError(f"{where} is {_kind(instance)}, expected a cflbounds.claims.Instance ({RULE})")
    if not isinstance(instance.assumptions, (list, tuple)):
        raise ContractError(f"{where}: assumptions is {_kind(instance.assumptions)}, expected a list of rows ({RULE})")
    check_rows(instance.assumptions, where)
    if not isinstance(instance.details, Mapping):
        raise ContractError(f"{where}: details is {_kind(instance.details)}, expected a dict ({RULE})")
    for name in ("measured", "bound"):
        if not _real(getattr(instance, name)):
            raise ContractError(f"{where}: {name} is {_kind(getattr(instance, name))}, expected a real number ({RULE}: "
                                "a Python or numpy int or float; float() a tensor or an array)")
    if instance.margin is not None and not _real(instance.margin):
        raise ContractError(f"{where}: margin is {_kind(instance.margin)}, expected None or a real number ({RULE})")
    if rule == "probability":
        _check_counts(instance, where)
    if rule == "expectation" and instance.samples is not None and not _numbers(instance.samples, flat=True):
        raise ContractError(f"{where}: samples is {_kind(instance.samples)}, expected a list of real numbers ({RULE})")
    if instance.admissible:
        _check_values(rule, instance, where)


def _check_counts(instance: Instance, where: str) -> None:
    counts = {"exceedances": instance.exceedances, "trials": instance.trials}
    for name, value in counts.items():
        if not _integer(value):
            raise ContractError(f"{where}: {name} is {_kind(value)}, expected an int (rule 'probability' counts "
                                f"exceedances out of trials; {RULE})")
    if not 0 <= instance.exceedances <= instance.trials:
        raise ContractError(f"{where}: exceedances {instance.exceedances} out of {instance.trials} trials "
                            f"({RULE}: 0 <= exceedances <= trials)")


def _check_values(rule: str, instance: Instance, where: str) -> None:
    """The rules of an admissible instance (module docstring)."""
    for name in ("measured", "bound"):
        value = getattr(instance, name)
        if math.isnan(value) or value == -math.inf:
            what = "a diverged run" if name == "measured" else "an overflowed bound"
            raise ContractError(f"{where}: {name} is {_show(value)} at an admissible instance ({RULE}: a real number, "
                                f"not NaN or -inf; +inf for {what})")
    if rule == "probability":
        if instance.trials < 1:
            raise ContractError(f"{where}: 0 trials at an admissible instance ({RULE}: an admissible instance of "
                                "rule 'probability' has trials >= 1; one that ran nothing must fail an assumption row)")
        if instance.bound < 0:
            raise ContractError(f"{where}: bound (the allowed probability) is {_show(instance.bound)} ({RULE}: "
                                "an allowed probability is >= 0)")
        frequency = instance.exceedances / instance.trials
        if not abs(instance.measured - frequency) <= FREQUENCY_TOLERANCE:
            raise ContractError(f"{where}: measured {_show(instance.measured)} is not the frequency "
                                f"{instance.exceedances}/{instance.trials} = {frequency:.6g} ({RULE}: rule "
                                "'probability' measures exceedances / trials)")
    if rule == "expectation":
        _check_samples(instance, where)


def _check_samples(instance: Instance, where: str) -> None:
    if instance.samples is None or len(instance.samples) == 0:
        raise ContractError(f"{where}: {'no' if instance.samples is None else 'empty'} samples at an admissible "
                            f"instance ({RULE}: rule 'expectation' gives the per-trial samples that measured averages)")
    samples = np.asarray(instance.samples, dtype=float)
    bad = np.isnan(samples) | (samples == -np.inf)
    if bad.any():
        first = int(np.argmax(bad))
        raise ContractError(f"{where}: sample {first + 1} of {samples.size} is {samples[first]} ({RULE}: samples "
                            "are real numbers, not NaN or -inf; +inf for a diverged trial)")
    with np.errstate(over="ignore", invalid="ignore"):
        mean, magnitude = float(samples.mean()), float(np.abs(samples).mean())
    agrees = (instance.measured == mean if not math.isfinite(mean) else
              abs(instance.measured - mean) <= MEAN_TOLERANCE * magnitude)
    if not agrees:
        raise ContractError(f"{where}: measured {_show(instance.measured)} is not the mean of its {samples.size} "
                            f"samples, {mean:.6g} ({RULE}: rule 'expectation' measures the samples' mean)")


def _real(value) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


def _integer(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _numbers(value, flat: bool = False) -> bool:
    """A real number, or a list (tuple, array) of them (nested unless ``flat``)."""
    if isinstance(value, np.ndarray):
        return value.dtype.kind in "iuf" and (not flat or value.ndim == 1)
    if isinstance(value, (list, tuple)):
        return all(_real(v) if flat else _numbers(v) for v in value)
    return not flat and _real(value)


def _kind(value) -> str:
    """``a str ('x')``: the type and, where it says something, the value."""
    if value is None:
        return "None"
    name = type(value).__name__
    shown = repr(value)
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name}" + ("" if shown.startswith("<") else f" ({_show(value)})")


def _show(value, width: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= width else text[:width - 3] + "..."


def _short(point) -> str:
    return _show(point, 120)


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"
