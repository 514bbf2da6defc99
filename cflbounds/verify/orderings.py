"""Judging claimed orderings of methods ("A >= B", "A > B") from paired runs over seeds.

Each ordering gets the Student-t interval of the mean paired difference
(:func:`.stats.paired_difference`) and a status:

* ``supported``: the whole interval is above 0 (A beats B);
* ``contradicted``: the whole Bonferroni interval (confidence ``1 - (1 - confidence) /
  comparisons``) is below 0 (B beats A);
* ``tied``: neither, but the interval excludes a reversal larger than ``tolerance``
  (for ``>=`` this is consistent with the claim; for ``>`` it is not evidence for it);
* ``unresolved``: the interval is too wide to say (or a reversal that is not significant
  over the family of comparisons).

The verdict over several orderings: ``violated`` if any is contradicted; ``holds`` if
every one is supported (or, for ``>=``, tied); ``inconclusive`` otherwise. "Holds" needs
every ordering (an intersection-union test: each at ``confidence`` keeps the family's
error at most ``1 - confidence``); "violated" needs any one (a union: without the
Bonferroni correction, ten true ties would give a false contradiction ~22% of the time),
so ``comparisons`` is the number of orderings the verdict is judged over.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .stats import bonferroni_confidence, paired_difference

__all__ = ["OrderingJudgment", "judge_ordering", "orderings_verdict"]


@dataclass(frozen=True)
class OrderingJudgment:
    """One claimed ordering judged from paired runs: ``name`` (what is compared), the claimed
    ``relation`` (``>=`` or ``>``), the mean paired difference ``A - B`` over ``samples`` seeds
    with its Student-t interval ``[low, high]`` (and ``family_high``, the upper end at the
    Bonferroni level over the orderings judged together), and the ``status`` those intervals give:
    ``supported`` (A beats B), ``tied``, ``unresolved`` or ``contradicted`` (B beats A), as the
    module docstring defines them. ``consistent`` is whether the claimed ordering survives it;
    :func:`orderings_verdict` turns several into one verdict word."""

    name: str
    relation: str  # ">=" or ">"
    mean: float
    low: float
    high: float
    samples: int
    status: str
    family_high: float = np.nan  # upper end of the Bonferroni interval (judges "contradicted")

    @property
    def consistent(self) -> bool:
        return self.status == "supported" or (self.status == "tied" and self.relation == ">=")

    def as_evidence(self, prefix: str) -> dict:
        return {f"{prefix}_difference": self.mean, f"{prefix}_low": self.low, f"{prefix}_high": self.high}

    def describe(self) -> str:
        family = f"; Bonferroni upper end {self.family_high:+.3f}" if self.high < 0 else ""
        return f"{self.name}: {self.status} ({self.mean:+.3f} [{self.low:+.3f}, {self.high:+.3f}]{family})"


def judge_ordering(name: str, a, b, *, relation: str = ">=", tolerance: float = 0.01,
                   confidence: float = 0.95, comparisons: int = 1) -> OrderingJudgment:
    """Judge ``A relation B`` from paired samples ``a``, ``b`` (one per seed), as one of
    ``comparisons`` orderings judged together (module docstring)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    interval = paired_difference(a, b, confidence)
    family = paired_difference(a, b, bonferroni_confidence(confidence, comparisons))
    if interval.low > 0:
        status = "supported"
    elif family.high < 0:
        status = "contradicted"
    elif interval.low >= -tolerance:
        status = "tied"
    else:
        status = "unresolved"
    return OrderingJudgment(name, relation, interval.mean, interval.low, interval.high, interval.samples, status,
                            family.high)


def orderings_verdict(judgments) -> str:
    """The verdict over several :class:`OrderingJudgment`: ``violated`` if any is contradicted,
    ``holds`` if every one is consistent with its claim, ``inconclusive`` otherwise."""
    judgments = list(judgments)
    if any(j.status == "contradicted" for j in judgments):
        return "violated"
    return "holds" if all(j.consistent for j in judgments) else "inconclusive"
