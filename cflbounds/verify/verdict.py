"""Verdict objects: what a check of one claim concluded, and the evidence behind it."""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field

__all__ = ["VERDICTS", "PASSING", "PRECEDENCE", "strongest", "Verdict", "json_safe", "figure_specs"]

VERDICTS = (
    "holds",  # measured behaviour within the bound at the stated confidence
    "violated",  # a measured counterexample, reproducible from its seed
    "vacuous",  # holds, but the bound is weaker than a trivial one
    "unsatisfiable",  # the theorem's own assumptions cannot hold together
    "rate-consistent",  # universal constants: implied constant stays bounded
    "rate-inconsistent",  # universal constants: implied constant grows along the sweep
    "inconclusive",  # not enough trials or budget to decide
    "not-implemented",  # the claim is catalogued but has no check yet
    "error",  # the claim's own code (check, bound, evaluation) raised or broke the contract: details say where
)
PASSING = ("holds", "rate-consistent")
# Which word a claim ends with when two findings disagree, strongest first: a claim's own code
# failing outranks everything (nothing was judged); a measured counterexample outranks any
# weaker reading (a bound that promises nothing *and* is exceeded is false: violated, not
# vacuous); then a rate the data contradict, assumptions that cannot hold together, a bound
# weaker than a trivial one, too little evidence, and the passing words. not-implemented (no
# check at all) yields to any finding.
PRECEDENCE = ("error", "violated", "rate-inconsistent", "unsatisfiable", "vacuous", "inconclusive", "holds",
              "rate-consistent", "not-implemented")


def strongest(*verdicts: str) -> str:
    """The verdict word that wins among ``verdicts`` (:data:`PRECEDENCE`)."""
    unknown = [word for word in verdicts if word not in PRECEDENCE]
    if unknown or not verdicts:
        raise ValueError(f"strongest() needs verdict words of {PRECEDENCE}; got {verdicts!r}")
    return min(verdicts, key=PRECEDENCE.index)


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


def figure_specs(plot) -> list[dict]:
    """``plot`` as the list of figure specs a verdict holds. verdicts.json files written before
    the list became the only form hold a single spec (a dict, ``{}`` for none): it is wrapped."""
    if plot is None or plot == {}:
        return []
    if isinstance(plot, dict):
        return [plot]
    if isinstance(plot, (list, tuple)) and all(isinstance(spec, dict) for spec in plot):
        return list(plot)
    raise TypeError(f"plot must be a list of figure specs (dicts); got {type(plot).__name__} {plot!r:.80}")


@dataclass
class Verdict:
    """The outcome of checking one claim: the claim's ``id``, the ``verdict`` word (``holds``,
    ``violated``, ``vacuous``, ``unsatisfiable``, ``rate-consistent``, ``rate-inconsistent``,
    ``inconclusive``, ``not-implemented`` or ``error``; ``holds`` and ``rate-consistent``
    pass), the ``seed`` it is reproducible from, its ``trials`` and ``confidence``, a one-line
    ``summary`` with the numbers that decided it, and the claim's ``statement`` and the run's
    ``scale``. What a check returns (usually through :meth:`cflbounds.claims.rules.Decision.as_verdict`),
    what ``verdicts.json`` holds one of per claim and what the report and the pytest plugin show.

    ``evidence`` holds numbers only (rates, frequencies, interval ends, sample sizes);
    ``assumptions`` the assumption checks as ``Inequality.as_dict()`` rows; ``plot`` the
    figures for the report, a list of specs (``{"kind", "x", "series": [{"label", "y", "low",
    "high", "group", "fails"}], "xlabel", "ylabel", "logx", "logy", "ylim", "reference", "title",
    "note"}``, see
    :func:`cflbounds.reports.figures.plot_from_spec`), the one that decided the verdict first;
    ``details`` strings (protocol variant, regime, notes). When ``verify`` also searched the
    claim's domain (:mod:`cflbounds.falsify.judge`), ``designed`` holds the designed
    experiment's own ``verdict`` and ``summary`` and ``search`` what the search found (outcome,
    best ratio, evaluations, counterexample, confirmation, coverage); both are empty otherwise.
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
    plot: list = field(default_factory=list)
    details: dict = field(default_factory=dict)
    seconds: float = 0.0
    designed: dict = field(default_factory=dict)
    search: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError(f"unknown verdict {self.verdict!r}; expected one of {VERDICTS}")
        if not isinstance(self.plot, list):
            raise TypeError(f"Verdict.plot must be a list of figure specs; got {type(self.plot).__name__} "
                            "(wrap a single spec in a list)")

    @property
    def passed(self) -> bool:
        return self.verdict in PASSING

    def to_dict(self) -> dict:
        return json_safe(asdict(self))

    @classmethod
    def from_dict(cls, data: dict) -> "Verdict":
        """The verdict of a ``to_dict()`` dict; an older file's single plot spec is wrapped."""
        return cls(**{**data, "plot": figure_specs(data.get("plot"))})

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, allow_nan=False)
