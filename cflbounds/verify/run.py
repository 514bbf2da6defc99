"""Run the checks of a list of claims and collect their verdicts and tables."""
from __future__ import annotations

import fnmatch
from dataclasses import replace
from numbers import Integral
from typing import Callable

from .._torch import DEVICES, resolve_device
from .._validation import Boolean, Constraint, Interval, InvalidParameterError, NoneOK, Options, validate_params
from ..sweeps.executors import EXECUTORS
from .check import check_claim
from .context import SCALE_OPTION, VerifyContext
from .progress import RunDisplay
from .registry import claims, get_claim
from .verdict import Verdict
from .worker_check import SharedExperiments, check_in_worker

__all__ = ["ISOLATIONS", "CLAIM_TIMEOUTS", "verify", "verify_claims", "implemented_claims", "expand_claim_ids"]

# Where each claim's code runs (verify_claims): a worker process of its own, or this process.
ISOLATIONS = ("process", "none")
# Seconds a claim may take at each scale before it is stopped with the verdict error (verify's
# --claim-timeout default): ten times and more the slowest claim measured there (claim_costs.json:
# 4 s at smoke, 182 s at default on a quiet 2-core machine; paper-scale claims take hours on a CPU).
CLAIM_TIMEOUTS = {"smoke": 600.0, "default": 3600.0, "paper": 86400.0}


def implemented_claims() -> list[str]:
    """The claims ``verify`` can judge: those with a designed check or a domain to search."""
    return [claim.id for claim in claims().values() if claim.status == "implemented"]


def expand_claim_ids(ids, among: list[str] | None = None, kind: str = "implemented") -> list[str]:
    """Claim IDs and shell-style patterns (``MGD.*``, ``IFCA.T?``) as a list of IDs, in the
    given order without repeats. A pattern stands for the claims of ``among`` it matches
    (default: the implemented ones; ``kind`` names them in the error) and must match at least
    one; a plain ID must exist (it may lack a check).
    """
    candidates = implemented_claims() if among is None else among
    expanded: list[str] = []
    for item in ids:
        if any(char in item for char in "*?["):
            matches = fnmatch.filter(candidates, item)
            if not matches:
                folded = fnmatch.filter([c.casefold() for c in candidates], item.casefold())
                hint = (f" Claim IDs are upper-case: did you mean {item.upper()!r}?"
                        if folded and fnmatch.filter(candidates, item.upper()) else "")
                raise InvalidParameterError(f"The claim pattern {item!r} matches no {kind} claim; "
                                            f"`cflbounds claims` lists them.{hint}")
        else:
            matches = [get_claim(item).id]
        expanded += [claim_id for claim_id in matches if claim_id not in expanded]
    return expanded


def _check_on_ray_worker(claim_id: str, scale: str, seed: int, device: str, raise_errors: bool = False,
                         search: Callable | None = None, timeout: float | None = None) -> tuple[Verdict, dict]:
    """One claim's check (and search) as a Ray task: its sweeps run as tasks of their own, and
    nothing is written on the worker's disk (no run directory: the driver writes what comes back)."""
    context = VerifyContext(scale=scale, seed=seed, device=device, executor="ray", progress=False)
    return check_claim(claim_id, context, raise_errors, search, timeout)


def _checks_on_ray(todo: list[str], context: VerifyContext, display: RunDisplay, raise_errors: bool, search,
                   timeout):
    """Every claim of ``todo`` as a Ray task at once; ``(claim ID, verdict, tables)`` as each finishes.
    Each task is guarded as a check in this process is (:func:`~cflbounds.verify.guards.guarded`),
    its time limit counted from when it starts on its worker."""
    from ..sweeps.ray_cluster import as_finished, connect, submitter

    ray = connect()
    submit = submitter(ray, _check_on_ray_worker, context.device)
    futures = {submit(claim_id, context.scale, context.seed, context.device, raise_errors, search, timeout): claim_id
               for claim_id in todo}
    display.claims_scheduled(todo)
    for claim_id, (verdict, tables) in as_finished(ray, futures):
        context.adopt_tables(tables, claim_id)
        yield claim_id, verdict, tables


def _checks_here(todo: list[str], context: VerifyContext, display: RunDisplay, raise_errors: bool, search, timeout):
    """The claims of ``todo`` one after the other in this process; ``(claim ID, verdict, tables)`` each."""
    for claim_id in todo:
        display.claim_started(claim_id)
        yield claim_id, *check_claim(claim_id, context, raise_errors, search, timeout)


def _checks_in_workers(todo: list[str], context: VerifyContext, display: RunDisplay, raise_errors: bool, search,
                       timeout):
    """The claims of ``todo`` one after the other, each in a worker process of its own
    (:mod:`.worker_check`); ``(claim ID, verdict, tables)`` each."""
    shared = SharedExperiments()
    preload = (type(search).__module__,) if search is not None else ()
    on_cells = context.progress if callable(context.progress) else None
    try:
        for claim_id in todo:
            display.claim_started(claim_id)
            yield claim_id, *check_in_worker(claim_id, context, search=search, timeout=timeout, shared=shared,
                                             on_cells=on_cells, preload=preload)
    finally:
        shared.close()


def verify_claims(ids=None, context: VerifyContext | None = None, *, skip=(),
                  on_verdict: Callable[[Verdict, dict], None] | None = None,
                  display: RunDisplay | None = None, raise_errors: bool = False,
                  search: Callable | None = None, isolation: str = "none",
                  timeout: float | None = None) -> list[Verdict]:
    """Check each claim (all implemented ones if ``ids`` is empty) and return their verdicts in
    the given order; ``ids`` may hold patterns such as ``MGD.*`` (:func:`expand_claim_ids`).

    ``skip``: claim IDs not to check (done by an earlier run being resumed). As each claim
    finishes, ``on_verdict(verdict, tables)`` gets its verdict and the tables its check saved
    (to store them there and then), then ``display`` (a :class:`~cflbounds.verify.progress.RunDisplay`)
    is told, and a running sweep reports its cells to that display instead of a bar of its own.

    Each claim's check gets a context of its own, with the run's settings read-only. Where it
    runs (:data:`ISOLATIONS`): ``isolation="process"`` runs each claim in a worker process of its
    own (:mod:`.workers`: an exit, a hang, a patched module stay there; what ``cflbounds
    verify`` does by default), ``"none"`` in this process, guarded
    (:mod:`.guards`); with ``context.executor == "ray"`` every claim is a Ray task and they all
    run at once, so they finish (and reach ``on_verdict``) in any order. Their checks are the
    same everywhere, and so are their verdicts. ``timeout``: seconds a claim may take (check and
    search together) before it is stopped with the verdict ``error``; None: no limit. A claim's
    check that raises gives that claim the verdict ``error`` (:func:`~cflbounds.verify.check.error_verdict`) and the
    others run on; with ``raise_errors`` the first such exception stops the run instead
    (``verify --raise``; it needs the claims in this process). ``search``: called after each
    claim's check to search its domain and give the final verdict
    (:class:`cflbounds.falsify.judge.SearchPlan`; None: the designed experiment alone).
    """
    context = context or VerifyContext()
    if isolation not in ISOLATIONS:
        raise InvalidParameterError(f"The 'isolation' parameter must be one of {ISOLATIONS}. Got {isolation!r} instead.")
    if raise_errors and isolation == "process":
        raise InvalidParameterError("raise_errors needs the claims in this process (isolation='none'): an exception "
                                    "cannot reach it from a worker process.")
    ids = implemented_claims() if not ids else expand_claim_ids(ids)  # validated before any work starts
    todo = [claim_id for claim_id in ids if claim_id not in set(skip)]
    if display is None:
        display = RunDisplay()
    else:
        context = replace(context, progress=display.cells)  # the same run: its tables and experiments
        no_check = {claim_id: 0.0 for claim_id in todo if get_claim(claim_id).status != "implemented"}  # instant
        display.costs = {**no_check, **display.costs}
    display.start(todo, kept=len(ids) - len(todo))
    verdicts = {}
    checks = (_checks_on_ray if context.executor == "ray" else
              _checks_in_workers if isolation == "process" else _checks_here)
    try:
        for claim_id, verdict, tables in checks(todo, context, display, raise_errors, search, timeout):
            if on_verdict is not None:
                on_verdict(verdict, tables)
            display.claim_finished(verdict)
            verdicts[claim_id] = verdict
    finally:
        display.close()
    return [verdicts[claim_id] for claim_id in todo]


@validate_params({
    "claim_id": [Constraint(lambda value: isinstance(value, str) and value in claims(),
                            "a registered claim ID (`cflbounds claims` lists them)")],
    "scale": [SCALE_OPTION],
    "seed": [Interval(Integral, 0, None, closed="left")],
    "device": [DEVICES],
    "executor": [Options(EXECUTORS)],
    "progress": [NoneOK, Boolean],
})
def verify(claim_id: str, *, scale: str = "default", seed: int = 0, device: str = "auto",
           executor: str = "local", progress: bool | None = False) -> Verdict:
    """Check one claim on its designed experiment and return that :class:`Verdict`.

    ``cflbounds verify ID`` also searches a claim that declares a domain, and its final verdict
    is the stronger of the two findings: :func:`cflbounds.falsify.judge` is its Python form.

    >>> from cflbounds.verify import verify, assert_claim
    >>> assert_claim(verify("IFCA.T1", scale="smoke"))  # doctest: +SKIP
    """
    context = VerifyContext(scale=scale, seed=seed, device=str(resolve_device(device)), executor=executor,
                            progress=progress)
    return check_claim(claim_id, context)[0]
