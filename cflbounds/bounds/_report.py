"""What a theorem-as-code returns: its value, its terms, and its assumption checks."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["Inequality", "BoundResult"]


def _number(value):
    array = np.asarray(value, dtype=float)
    return float(array) if array.ndim == 0 else array.tolist()


@dataclass(frozen=True)
class Inequality:
    """One inequality of an assumption, with both sides evaluated: ``lhs <relation> rhs``.

    ``slack`` is positive when it holds (``rhs - lhs`` for ``<=``, ``lhs - rhs`` for
    ``>=``); ``ratio`` is ``lhs / rhs``. For the papers' ``x >~ y`` ("there is a large
    enough constant"), ``rhs`` already includes the constant named in ``constant``.
    """

    name: str
    lhs: float
    rhs: float
    relation: str  # "<=" or ">="
    source: str
    constant: float | None = None

    @property
    def slack(self):
        return np.subtract(self.rhs, self.lhs) if self.relation == "<=" else np.subtract(self.lhs, self.rhs)

    @property
    def holds(self):
        """Holds up to floating-point rounding of the two sides (relative 1e-12)."""
        scale = np.maximum(np.abs(self.lhs), np.abs(self.rhs))
        return np.asarray(self.slack) >= -1e-12 * scale

    @property
    def ratio(self):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.divide(self.lhs, self.rhs)

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            "lhs": _number(self.lhs),
            "rhs": _number(self.rhs),
            "relation": self.relation,
            "slack": _number(self.slack),
            "holds": bool(np.all(self.holds)),
            "source": self.source,
            "constant": self.constant,
        }


@dataclass(frozen=True)
class BoundResult:
    """A theorem evaluated at given constants: ``value`` (the bound) and named ``terms``,
    other derived quantities (step size, iteration count) and every assumption check."""

    claim: str
    value: float
    terms: dict = field(default_factory=dict)
    derived: dict = field(default_factory=dict)
    assumptions: tuple = ()
    statement: str = ""

    def __post_init__(self):  # a theorem's docstring -> its claim and formula (two paragraphs), one line
        claim_and_formula = "\n\n".join(self.statement.split("\n\n")[:2])
        object.__setattr__(self, "statement", " ".join(claim_and_formula.replace("``", "").split()))

    @property
    def assumptions_hold(self) -> bool:
        return all(bool(np.all(a.holds)) for a in self.assumptions)

    def as_dict(self) -> dict:
        return {
            "claim": self.claim,
            "statement": self.statement,
            "value": _number(self.value),
            "terms": {k: _number(v) for k, v in self.terms.items()},
            "derived": {k: _number(v) for k, v in self.derived.items()},
            "assumptions": [a.as_dict() for a in self.assumptions],
            "assumptions_hold": self.assumptions_hold,
        }
