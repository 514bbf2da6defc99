"""A claim: its ID, statement, check and bound (the declaration :mod:`cflbounds.claims` offers).

The registry (``cflbounds.verify.registry``) collects every installed package's claims through the
entry-point group ``cflbounds.claims`` and validates each with :meth:`Claim.validate`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Callable

from .context import VerifyContext
from .domain import Domain
from .failure import declaration_site
from .verdict import Verdict

__all__ = ["Claim", "ClaimError", "ID_PATTERN", "ID_LENGTH"]

ID_PATTERN = re.compile(r"[A-Z][A-Z0-9]*\.[A-Za-z0-9][A-Za-z0-9_.\-]*")
# An ID names files of a run (counterexamples/<ID>.json, a table kept as name@<ID>.parquet beside
# another claim's): with table names as long (cflbounds.verify.context.TABLE_NAME_LENGTH), every
# such file name stays well under the 255 bytes a file system takes.
ID_LENGTH = 100


class ClaimError(ValueError):
    """A malformed claim declaration (its ID, statement, check or bound)."""


@dataclass(frozen=True)
class Claim:
    """One claim: ``id`` (``PAPER.NAME``), its ``statement`` in one sentence, a ``check``
    (``ctx -> Verdict``, the designed experiment; ``None`` for the short form, judged by its
    ``domain`` alone, or for a catalogued claim not yet checked), the ``bound`` (a
    function of named constants decorated with :func:`cflbounds.claims.validate_params`,
    returning a number or a :class:`~cflbounds.bounds._report.BoundResult`; ``None`` if it has
    no formula), the ``paper``'s short name (default: the ID's prefix), its ``reference``, the
    ``package`` that declared it (set by the registry from the entry point's distribution), and
    for ``cflbounds falsify`` its admissible ``domain`` (:class:`~cflbounds.verify.domain.Domain`)
    or, when it has none, ``no_domain``: why it cannot be searched (a sentence).
    ``declared_at``: the file:line of the declaration, for the registry's messages.
    """

    id: str
    statement: str
    check: Callable[[VerifyContext], Verdict] | None = None
    bound: Callable | None = None
    paper: str = ""
    reference: str = ""
    package: str = ""
    domain: Domain | None = None
    no_domain: str = ""
    declared_at: str = field(default="", init=False, compare=False, repr=False)

    def __post_init__(self):
        if not self.paper and isinstance(self.id, str):
            object.__setattr__(self, "paper", self.id.split(".")[0])
        object.__setattr__(self, "declared_at", declaration_site())

    @property
    def status(self) -> str:
        """``implemented`` when ``verify`` can judge it: a designed check, or a domain to search
        (the short form: a bound and a domain are a whole claim)."""
        return "implemented" if self.check is not None or self.domain is not None else "not implemented"

    def from_package(self, package: str) -> "Claim":
        return self.replaced(package=package)

    def replaced(self, **changes) -> "Claim":
        """A copy with ``changes`` (``dataclasses.replace``), declared where this one was."""
        copy = replace(self, **changes)
        object.__setattr__(copy, "declared_at", self.declared_at)
        return copy

    def validate(self) -> "Claim":
        """Raise :class:`ClaimError` saying what is wrong with this declaration (its domain's own
        problems are :meth:`Domain.problems`: the registry keeps the claim without it)."""
        if not isinstance(self.id, str) or not ID_PATTERN.fullmatch(self.id):
            raise ClaimError(f"claim ID {self.id!r} is not of the form PAPER.NAME (e.g. TEXTBOOK.GD: upper-case "
                             "paper key, a dot, a name of letters, digits, '_', '-' or '.')")
        if len(self.id) > ID_LENGTH:
            raise ClaimError(f"claim ID {self.id[:40] + '...'!r} is {len(self.id)} characters long, more than "
                             f"{ID_LENGTH} (an ID names files of a run: counterexamples/<ID>.json, tables)")
        if not isinstance(self.statement, str) or not self.statement.strip():
            raise ClaimError(f"claim {self.id}: the statement must be a non-empty string")
        if not isinstance(self.paper, str) or not isinstance(self.reference, str):
            raise ClaimError(f"claim {self.id}: paper and reference must be strings")
        if self.check is not None and not callable(self.check):
            raise ClaimError(f"claim {self.id}: check must be a function of the verify context, got {self.check!r}")
        if self.bound is not None and not hasattr(self.bound, "parameter_constraints"):
            raise ClaimError(f"claim {self.id}: the bound {getattr(self.bound, '__name__', self.bound)!r} must be "
                             "decorated with cflbounds.claims.validate_params (its constants named and validated)")
        if self.bound is not None and not callable(self.bound):
            raise ClaimError(f"claim {self.id}: bound must be a function, got {self.bound!r}")
        if self.domain is not None and not isinstance(self.domain, Domain):
            raise ClaimError(f"claim {self.id}: domain must be a cflbounds.claims.Domain, got {self.domain!r}")
        return self

    def as_dict(self) -> dict:
        return {"id": self.id, "paper": self.paper, "package": self.package, "reference": self.reference,
                "statement": self.statement, "status": self.status,
                "falsify": "yes" if self.domain is not None else (f"no: {self.no_domain}" if self.no_domain else "no"),
                "bound": f"{self.bound.__module__}.{self.bound.__name__}" if self.bound else None}
