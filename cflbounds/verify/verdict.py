"""Verdict objects: what a check of one claim concluded, and the evidence behind it."""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field

__all__ = ["VERDICTS", "PASSING", "Verdict", "json_safe"]

VERDICTS = (
    "holds",  # measured behaviour within the bound at the stated confidence
    "violated",  # a measured counterexample, reproducible from its seed
    "vacuous",  # holds, but the bound is weaker than a trivial one
    "unsatisfiable",  # the theorem's own assumptions cannot hold together
    "rate-consistent",  # universal constants: implied constant stays bounded
    "rate-inconsistent",  # universal constants: implied constant grows along the sweep
    "inconclusive",  # not enough trials or budget to decide
    "not-implemented",  # the claim is catalogued but has no check yet
)
PASSING = ("holds", "rate-consistent")


def json_safe(value):
    """``value`` as strict JSON (RFC 8259 has no Infinity or NaN): non-finite numbers become the
    strings ``"inf"``, ``"-inf"``, ``"nan"`` (``float()`` and numpy read them back, so an
    overflowed bound stays distinguishable from a missing value), numpy scalars and arrays
    become Python numbers and lists."""
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if hasattr(value, "tolist"):
        return json_safe(value.tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


@dataclass
class Verdict:
    """The outcome of checking one claim.

    ``evidence`` holds numbers only (rates, frequencies, interval ends, sample sizes);
    ``assumptions`` the assumption checks as ``Inequality.as_dict()`` rows; ``plot`` a
    figure spec for the report (``{"kind", "x", "series": [{"label", "y", "low",
    "high"}], "xlabel", "ylabel", "logx", "logy", "title"}``, see
    :func:`cflbounds.reports.figures.plot_from_spec`) or a list of them; ``details`` strings
    (protocol variant, regime, notes).
    """

    id: str
    verdict: str
    evidence: dict
    seed: int
    trials: int
    confidence: float
    summary: str = ""
    statement: str = ""
    scale: str = ""
    assumptions: list = field(default_factory=list)
    plot: dict | list = field(default_factory=dict)
    details: dict = field(default_factory=dict)
    seconds: float = 0.0

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError(f"unknown verdict {self.verdict!r}; expected one of {VERDICTS}")

    @property
    def passed(self) -> bool:
        return self.verdict in PASSING

    def to_dict(self) -> dict:
        return json_safe(asdict(self))

    @classmethod
    def from_dict(cls, data: dict) -> "Verdict":
        return cls(**data)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, allow_nan=False)
