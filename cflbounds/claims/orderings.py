"""Claimed orderings of methods ("A >= B", "A > B") judged from paired runs over seeds.

:func:`judge_ordering` gives one :class:`OrderingJudgment` from the Student-t interval of the mean
paired difference ``A - B`` (the same seeds for both methods):

* ``supported``: the whole interval is above 0 (A beats B);
* ``contradicted``: the whole interval at the Bonferroni level over the ``comparisons`` judged
  together is below 0 (B beats A);
* ``tied``: neither, but the interval excludes a reversal larger than ``tolerance`` (for ``>=``
  consistent with the claim; for ``>`` no evidence for it);
* ``unresolved``: the interval is too wide to say.

:func:`orderings_verdict` gives the verdict word over several: ``violated`` if any is
contradicted, ``holds`` if every one is consistent, ``inconclusive`` otherwise. The decision rule
:func:`cflbounds.claims.rules.ordering` does all of this for one ordering.

This module is the stable public name of the engine's implementation (``cflbounds.verify.orderings``).
"""
from ..verify.orderings import OrderingJudgment, judge_ordering, orderings_verdict

__all__ = ["OrderingJudgment", "judge_ordering", "orderings_verdict"]
