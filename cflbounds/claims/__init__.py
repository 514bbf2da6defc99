"""Declare a claim: the public API for putting any theorem into cflbounds.

A :class:`Claim` holds an ID ``PAPER.NAME``, the statement, a reference, the bound as a
function of named constants validated with :func:`validate_params` (so ``cflbounds bound ID``
and its ``--help`` work for it unchanged; the constants' meanings come from the function's
numpydoc ``Parameters`` section), and a check: a function of the :class:`VerifyContext`
(``scale``, ``seed``, ``device``; ``save_table``, ``shared``, ``checkpoint``) that measures and
returns a :class:`Verdict`, usually through one of the decision :mod:`rules
<cflbounds.verify.rules>` (``deterministic``, ``exceedance``, ``rate``, ``ordering``).

An installed package adds its claims through the entry-point group ``cflbounds.claims``::

    [project.entry-points."cflbounds.claims"]
    textbook = "cflbounds_textbook:CLAIMS"      # a list of Claim (or a function returning one)

A claim whose bound can be evaluated on one instance may also declare a :class:`Domain` (its
admissible :class:`Parameter` ranges and assumptions, and an evaluation returning an
:class:`Instance` per point): ``cflbounds falsify`` then searches it for the worst case.

The five papers' claims are registered the same way from cflbounds' own ``pyproject.toml``.
``examples/textbook/`` is a complete package to copy; ``docs/own-theorem.md`` walks through it.
"""
from .._validation import Interval, InvalidParameterError, Options, require, validate_params
from ..bounds._report import RELATIVE_TOLERANCE, Inequality
from ..verify import rules
from ..verify.checkpoints import checkpoint_type
from ..verify.claim import Claim, ClaimError
from ..verify.context import VerifyContext
from ..verify.domain import Domain, Instance, Parameter
from ..verify.verdict import Verdict
from . import assumptions, orderings, recovery, stats

__all__ = ["Claim", "ClaimError", "checkpoint_type", "Domain", "Inequality", "Instance", "Interval",
           "InvalidParameterError", "Options", "Parameter",
           "require", "rules", "validate_params", "VerifyContext", "Verdict",
           "RELATIVE_TOLERANCE", "assumptions", "orderings", "recovery", "stats"]
