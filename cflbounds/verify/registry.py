"""The claim registry: every claim of every installed package, found through entry points.

A package adds claims by naming, in the entry-point group ``cflbounds.claims`` of its
``pyproject.toml``, a list of :class:`~cflbounds.verify.claim.Claim` (or a function returning
one). cflbounds registers the five papers' claims the same way, so a plugin claim is checked,
listed, evaluated and reported exactly as a built-in one. cflbounds' own entry points are read
first, so no plugin can take a built-in ID.

A plugin that fails to import, declares something that is not a claim, a malformed claim or an
ID already taken does not stop the others: each problem becomes one :class:`PluginProblem`
line (naming the package, the entry point, the claim and the file:line), which every command
prints on stderr, ``cflbounds claims --check`` lists, and :func:`plugin_problems` returns; the
rest of the claims work. A plugin loses only what it must: a module that fails to import loses
its claims (there are none to keep), a malformed claim is skipped, and a claim whose
:class:`~cflbounds.verify.domain.Domain` is malformed (a ``Parameter`` with ``low > high``,
say) is kept without it: still verified, not falsified.

The entry points are read once, on first use (not at import), and :func:`reload` reads them
again (after installing a package in a running interpreter, or in tests).
"""
from __future__ import annotations

from dataclasses import dataclass
from importlib.metadata import entry_points
from importlib.util import find_spec
from pathlib import Path

from .._validation import InvalidParameterError
from .claim import Claim, ClaimError
from .failure import describe_failure

__all__ = ["GROUP", "PluginProblem", "PluginSource", "claims", "get_claim", "plugin_problems", "plugin_sources",
           "loaded_problems", "declaration_problems", "domain_parameters", "reload", "CLAIMS"]

GROUP = "cflbounds.claims"
_OWN = "cflbounds"


@dataclass(frozen=True)
class PluginProblem:
    """A plugin's declaration that could not be registered (or only in part), and why:
    ``claim`` is the claim's ID when one is concerned, ``where`` the file:line at fault."""

    package: str
    entry_point: str
    message: str
    claim: str = ""
    where: str = ""

    def __str__(self) -> str:
        about = f"claim {self.claim}: " if self.claim and self.claim not in self.message else ""
        at = f" (at {self.where})" if self.where else ""
        return f"plugin {self.package} (entry point {self.entry_point!r}): {about}{self.message}{at}"


@dataclass(frozen=True)
class PluginSource:
    """One entry point of the group: its package, name, target, and the IDs it registered."""

    package: str
    entry_point: str
    value: str
    claims: tuple[str, ...]


_loaded: tuple[dict[str, Claim], list[PluginProblem], list[PluginSource]] | None = None


def _package(entry_point) -> str:
    distribution = getattr(entry_point, "dist", None)
    return distribution.metadata["Name"] if distribution is not None else entry_point.value.split(":")[0]


def _declared(entry_point) -> list:
    target = entry_point.load()
    declared = target() if callable(target) else target
    return list(declared)


def _module_root(entry_point) -> Path | None:
    """The directory (or file) of the entry point's top-level module, found without importing it."""
    top = entry_point.value.split(":")[0].split(".")[0]
    try:
        spec = find_spec(top)
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin in (None, "built-in", "frozen"):
        return None
    origin = Path(spec.origin).resolve()
    return origin.parent if origin.name == "__init__.py" else origin


def _load() -> tuple[dict[str, Claim], list[PluginProblem], list[PluginSource]]:
    registered: dict[str, Claim] = {}
    problems: list[PluginProblem] = []
    sources: list[PluginSource] = []
    points = sorted(entry_points(group=GROUP), key=lambda point: (_package(point) != _OWN, _package(point), point.name))
    for point in points:
        package = _package(point)
        before = set(registered)
        try:
            declared = _declared(point)
        except Exception as error:  # a broken plugin must not take the other claims down with it
            failure = describe_failure(error, "declaration", root=_module_root(point))
            problems.append(PluginProblem(package, point.name, f"failed to load {point.value}: "
                                                               f"{failure.kind}: {failure.message}",
                                          where=failure.where))
            declared = []
        _register(declared, package, point, registered, problems)
        sources.append(PluginSource(package, point.name, point.value,
                                    tuple(claim_id for claim_id in registered if claim_id not in before)))
    return registered, problems, sources


def _register(declared, package: str, point, registered: dict, problems: list) -> None:
    """Validate and register the claims one entry point declared (problems appended)."""
    for claim in declared:
        if not isinstance(claim, Claim):
            problems.append(PluginProblem(package, point.name, f"declares {claim!r:.80}, which is not a "
                                                               "cflbounds.claims.Claim; ignored"))
            continue
        try:
            claim.validate()
        except ClaimError as error:
            problems.append(PluginProblem(package, point.name, f"{error}; ignored", where=claim.declared_at))
            continue
        if claim.id in registered:
            problems.append(PluginProblem(package, point.name, f"claim {claim.id} is already declared by "
                                                               f"{registered[claim.id].package}; ignored",
                                          claim=claim.id, where=claim.declared_at))
            continue
        domain_problems = claim.domain.problems() if claim.domain is not None else []
        if domain_problems:
            reason = "its declared domain is malformed: " + "; ".join(domain_problems)
            problems.append(PluginProblem(package, point.name, f"{reason}; the claim is kept without it "
                                                               "(verify checks it, falsify cannot search it)",
                                          claim=claim.id))
            claim = claim.replaced(domain=None, no_domain=reason)
        registered[claim.id] = claim.from_package(package)


def _registry() -> tuple[dict[str, Claim], list[PluginProblem], list[PluginSource]]:
    global _loaded
    if _loaded is None:
        _loaded = _load()
    return _loaded


def reload() -> None:
    """Read the entry points again on next use."""
    global _loaded
    _loaded = None


def claims() -> dict[str, Claim]:
    """Every registered claim by ID: cflbounds' own first, in declaration order, then plugins'."""
    return _registry()[0]


def domain_parameters(claim_id: str):
    """The parameters of the registered claim's domain (their ranges decide how a point of it is
    printed: :func:`cflbounds.verify.domain.format_point`), None for a claim without a domain
    or not installed here (a run's files read elsewhere)."""
    claim = claims().get(claim_id)
    return claim.domain.parameters if claim is not None and claim.domain is not None else None


def plugin_problems() -> list[PluginProblem]:
    """What could not be registered (see the module docstring)."""
    return list(_registry()[1])


def plugin_sources() -> list[PluginSource]:
    """Every entry point of the group, cflbounds' own first, with the claims it registered."""
    return list(_registry()[2])


def declaration_problems(claim: Claim) -> list[str]:
    """What a registered claim's declaration lacks for the commands that use it (``cflbounds
    claims --check``; nothing here runs the claim): a check that cannot take the context, a
    bound whose constants ``cflbounds bound ID --help`` cannot explain, a domain evaluation
    that cannot take ``(points, seeds, ctx)``."""
    import inspect

    from ..bounds._docstring import parameter_descriptions

    found = []
    for name, function, arguments in (("check", claim.check, 1),
                                      ("domain's evaluate", getattr(claim.domain, "evaluate", None), 3)):
        if function is None:
            continue
        try:
            inspect.signature(function).bind(*range(arguments))
        except TypeError:
            found.append(f"its {name} cannot be called with {arguments} argument(s)")
        except ValueError:  # no signature to read (a builtin): nothing to say
            pass
    if claim.bound is not None:
        described = parameter_descriptions(claim.bound)
        missing = [name for name in claim.bound.parameter_constraints if not described.get(name)]
        if missing:
            found.append(f"its bound {claim.bound.__name__} does not describe {', '.join(missing)} in its docstring's "
                         "Parameters section (what `cflbounds bound ID --help` shows)")
    return found


def loaded_problems() -> list[PluginProblem]:
    """:func:`plugin_problems` if the entry points have been read in this process, else none
    (so a command that never needed the claims does not read them just to report)."""
    return [] if _loaded is None else list(_loaded[1])


def suggestion(name: str, candidates) -> str:
    """`` Did you mean 'IFCA.T1'?`` for a name that matches a candidate but for its case, or is
    close to one (difflib); empty otherwise."""
    import difflib

    candidates = list(candidates)
    same = [c for c in candidates if c.casefold() == str(name).casefold()]
    close = same or difflib.get_close_matches(str(name), candidates, n=3, cutoff=0.75)
    return f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""


def get_claim(claim_id: str) -> Claim:
    registered = claims()
    if claim_id not in registered:
        hint = ("no claim is registered: is cflbounds installed (pip install -e .)? Its claims come from the "
                f"entry points of group {GROUP!r}") if not registered else \
            f"`cflbounds claims` lists the {len(registered)} IDs (e.g. {next(iter(registered))})"
        raise InvalidParameterError(f"Unknown claim ID {claim_id!r}; {hint}.{suggestion(claim_id, registered)}")
    return registered[claim_id]


def __getattr__(name):  # CLAIMS: the registered claims, read from the entry points on first use
    if name == "CLAIMS":
        return claims()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
