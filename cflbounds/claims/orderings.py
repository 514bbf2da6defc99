"""Claimed orderings of methods ("A >= B", "A > B") judged from paired runs over seeds:
:func:`judge_ordering` gives one :class:`OrderingJudgment` (supported, tied, unresolved or
contradicted, from the Student-t interval of the mean paired difference) and
:func:`orderings_verdict` the verdict word over several (``violated`` if any is contradicted,
``holds`` if every one is consistent, ``inconclusive`` otherwise).

The implementation lives in the engine (:mod:`cflbounds.verify.orderings`, behind the
``ordering`` decision rule); this module is its stable public name.
"""
from ..verify.orderings import OrderingJudgment, judge_ordering, orderings_verdict

__all__ = ["OrderingJudgment", "judge_ordering", "orderings_verdict"]
