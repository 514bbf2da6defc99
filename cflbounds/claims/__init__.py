"""Declare a claim: the public API for putting any theorem into cflbounds.

A :class:`Claim` holds an ID ``PAPER.NAME``, the statement, a reference, the bound as a
function of named constants validated with :func:`validate_params` (so ``cflbounds bound ID``
and its ``--help`` work for it unchanged; the constants' meanings come from the function's
numpydoc ``Parameters`` section), and a check: a function of the :class:`VerifyContext`
(``scale``, ``seed``, ``device``; ``save_table``, ``shared``, ``checkpoint``) that measures and
returns a :class:`Verdict`, usually through one of the decision :mod:`rules
<cflbounds.claims.rules>` (``deterministic``, ``exceedance``, ``expectation``, ``rate``,
``ordering``). The check is optional: a claim in the short form, ``Claim(id, statement,
bound=..., domain=...)``, is judged by searching its domain.

An installed package adds its claims through the entry-point group ``cflbounds.claims``::

    [project.entry-points."cflbounds.claims"]
    textbook = "cflbounds_textbook:CLAIMS"      # a list of Claim (or a function returning one)

A claim whose bound can be evaluated on one instance may also declare a :class:`Domain` (its
admissible :class:`Parameter` ranges and assumptions, and an evaluation returning an
:class:`Instance` per point): ``cflbounds falsify`` then searches it for the worst case.
:func:`checked_evaluate` gives a domain's instances at some points as the search gets them
(checked against the contract, a break raised as :class:`ContractError`).

Helpers a check may use, the same ones the five papers' checks use:

* :mod:`cflbounds.claims.stats`: Clopper-Pearson, Bonferroni, rate fits, Fisher, t intervals;
* :mod:`cflbounds.claims.orderings`: claimed orderings of methods from paired runs;
* :mod:`cflbounds.claims.assumptions`: a verdict from assumption inequalities on the problems used;
* :mod:`cflbounds.claims.recovery`: how well a found clustering recovers the planted one (ARI,
  NMI, matched accuracy);
* ``RELATIVE_TOLERANCE``: the rounding allowance an :class:`Inequality` grants (relative to
  its larger side).

This package is the whole plugin API. The five papers (``cflbounds.papers``) are a plugin
like any other: they import this package, ``cflbounds.algorithms``, ``cflbounds.bounds``,
``cflbounds.synthetic`` and ``cflbounds.sweeps``, nothing of the engine (``cflbounds.verify``,
``falsify``, ``reports``, ``cli``), and arrive through the same entry point from cflbounds' own
``pyproject.toml`` (the import contracts in ``pyproject.toml``'s ``[tool.importlinter]``,
checked by ``tests/test_layers.py``). ``examples/textbook/`` is a complete package to copy;
``docs/own-theorem.md`` walks through it.
"""
from .._validation import Interval, InvalidParameterError, Options, require, validate_params
from ..bounds._report import RELATIVE_TOLERANCE, Inequality
from ..verify import rules
from ..verify.checkpoints import checkpoint_type
from ..verify.claim import Claim, ClaimError
from ..verify.context import VerifyContext
from ..verify.contract import checked_evaluate
from ..verify.domain import Domain, Instance, Parameter
from ..verify.failure import ContractError
from ..verify.verdict import Verdict
from . import assumptions, orderings, recovery, stats

__all__ = ["checked_evaluate", "Claim", "ClaimError", "checkpoint_type", "ContractError", "Domain", "Inequality",
           "Instance", "Interval", "InvalidParameterError", "Options", "Parameter", "RELATIVE_TOLERANCE",
           "require", "rules", "validate_params", "VerifyContext", "Verdict",
           "assumptions", "orderings", "recovery", "stats"]
