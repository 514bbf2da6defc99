"""Run the checks of a list of claims and collect their verdicts and tables."""
from __future__ import annotations

import fnmatch
import time
from numbers import Integral
from typing import Callable

from .._threads import follow_load
from .._torch import DEVICES, resolve_device
from .._validation import Boolean, Constraint, Interval, InvalidParameterError, NoneOK, Options, validate_params
from ..sweeps.executors import EXECUTORS
from .context import SCALE_OPTION, VerifyContext
from .failure import CONTAINED, ContractError, declaring_root, describe_failure, mark_raised
from .progress import RunDisplay
from .registry import claims, get_claim
from .verdict import Verdict

__all__ = ["verify", "verify_claims", "implemented_claims", "expand_claim_ids"]


def implemented_claims() -> list[str]:
    return [claim.id for claim in claims().values() if claim.check is not None]


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


def _check(claim_id: str, context: VerifyContext, raise_errors: bool = False,
           search: Callable | None = None) -> tuple[Verdict, dict]:
    """The verdict of one claim and the tables its check saved. A check that raises, or returns
    something other than a :class:`Verdict` of this claim, gives the verdict ``error``
    (:func:`error_verdict`) and no tables, unless ``raise_errors``: then the exception goes on.
    ``search(claim, verdict, context, raise_errors)``, when given, may then search the claim's
    domain and return the final verdict (:mod:`cflbounds.falsify.judge`: the engine does not
    know how a search is done, only when it runs)."""
    claim = get_claim(claim_id)
    if claim.check is None:
        return Verdict(claim_id, "not-implemented", {}, context.seed, 0, 0.0,
                       "no check for this claim yet", claim.statement, context.scale), {}
    started = time.perf_counter()
    with context.checking(claim_id, claim.package) as tables:
        try:
            with follow_load():  # at most the cores other processes leave free (cflbounds._threads)
                verdict = claim.check(context)
            _check_returned(claim, verdict)
        except CONTAINED as error:
            if raise_errors:
                raise mark_raised(error, claim_id)
            context.discard_tables()
            verdict = error_verdict(claim, context, error)
    if search is not None:
        verdict = search(claim, verdict, context, raise_errors)
    verdict.statement, verdict.scale = claim.statement, context.scale
    verdict.seconds = time.perf_counter() - started
    return verdict, tables


def _check_returned(claim, verdict) -> None:
    """Raise :class:`ContractError` unless ``verdict`` is a :class:`Verdict` of ``claim``."""
    if not isinstance(verdict, Verdict):
        raise ContractError(f"the check of {claim.id} returned {type(verdict).__name__} {verdict!r:.60}, not a "
                            "cflbounds.claims.Verdict", function=claim.check)
    if verdict.id != claim.id:
        raise ContractError(f"the check of {claim.id} returned a verdict for {verdict.id!r}", function=claim.check)


def error_verdict(claim, context: VerifyContext, error: BaseException) -> Verdict:
    """The verdict ``error`` of ``claim`` whose own code raised ``error`` (or returned what breaks
    the contract): the summary says what raised where (the innermost frame in the claim's
    package, :func:`~cflbounds.verify.failure.describe_failure`); the details carry the type,
    message, place and traceback. The stage is ``contract`` for a :class:`ContractError`,
    ``bound`` when the claim's bound function is on the traceback, else ``check``."""
    bound = getattr(claim.bound, "__wrapped__", claim.bound)
    bound_code = getattr(bound, "__code__", None)
    if isinstance(error, ContractError):
        stage = "contract"
    elif bound_code is not None and any(frame.f_code is bound_code for frame in _frames(error)):
        stage = "bound"
    else:
        stage = "check"
    failure = describe_failure(error, stage, root=declaring_root(claim.check, claim.bound))
    return Verdict(claim.id, "error", {}, context.seed, 0, 0.0, failure.summary, claim.statement, context.scale,
                   details=failure.as_details())


def _frames(error: BaseException) -> list:
    frames, tb = [], error.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    return frames


def _check_on_worker(claim_id: str, scale: str, seed: int, device: str, raise_errors: bool = False,
                     search: Callable | None = None) -> tuple[Verdict, dict]:
    """One claim's check (and search) as a Ray task: its sweeps run as tasks of their own, and
    nothing is written on the worker's disk (no run directory: the driver writes what comes back)."""
    return _check(claim_id, VerifyContext(scale=scale, seed=seed, device=device, executor="ray", progress=False),
                  raise_errors, search)


def _checks_on_ray(todo: list[str], context: VerifyContext, display: RunDisplay, raise_errors: bool, search):
    """Every claim of ``todo`` as a Ray task at once; ``(claim ID, verdict, tables)`` as each finishes."""
    from ..sweeps.ray_cluster import as_finished, connect, submitter

    ray = connect()
    submit = submitter(ray, _check_on_worker, context.device)
    futures = {submit(claim_id, context.scale, context.seed, context.device, raise_errors, search): claim_id
               for claim_id in todo}
    display.claims_scheduled(todo)
    for claim_id, (verdict, tables) in as_finished(ray, futures):
        context.tables.update(tables)
        yield claim_id, verdict, tables


def _checks_here(todo: list[str], context: VerifyContext, display: RunDisplay, raise_errors: bool, search):
    """The claims of ``todo`` one after the other in this process; ``(claim ID, verdict, tables)`` each."""
    for claim_id in todo:
        display.claim_started(claim_id)
        yield claim_id, *_check(claim_id, context, raise_errors, search)


def verify_claims(ids=None, context: VerifyContext | None = None, *, skip=(),
                  on_verdict: Callable[[Verdict, dict], None] | None = None,
                  display: RunDisplay | None = None, raise_errors: bool = False,
                  search: Callable | None = None) -> list[Verdict]:
    """Check each claim (all implemented ones if ``ids`` is empty) and return their verdicts in
    the given order; ``ids`` may hold patterns such as ``MGD.*`` (:func:`expand_claim_ids`).

    ``skip``: claim IDs not to check (done by an earlier run being resumed). As each claim
    finishes, ``on_verdict(verdict, tables)`` gets its verdict and the tables its check saved
    (to store them there and then), then ``display`` (a :class:`~cflbounds.verify.progress.RunDisplay`)
    is told, and a running sweep reports its cells to that display instead of a bar of its own.

    With ``context.executor == "ray"`` every claim is a Ray task and they all run at once, so
    they finish (and reach ``on_verdict``) in any order; their checks are the same as here, and
    so are their verdicts. A claim's check that raises gives that claim the verdict ``error``
    (:func:`error_verdict`) and the others run on, on either executor; with ``raise_errors``
    the first such exception stops the run instead (``verify --raise``). ``search``: called
    after each claim's check to search its domain and give the final verdict
    (:class:`cflbounds.falsify.judge.SearchPlan`; None: the designed experiment alone).
    """
    context = context or VerifyContext()
    ids = implemented_claims() if not ids else expand_claim_ids(ids)  # validated before any work starts
    todo = [claim_id for claim_id in ids if claim_id not in set(skip)]
    sweep_progress = context.progress
    if display is None:
        display = RunDisplay()
    else:
        context.progress = display.cells
        no_check = {claim_id: 0.0 for claim_id in todo if get_claim(claim_id).check is None}  # instant, no cost on file
        display.costs = {**no_check, **display.costs}
    display.start(todo, kept=len(ids) - len(todo))
    verdicts = {}
    checks = _checks_on_ray if context.executor == "ray" else _checks_here
    try:
        for claim_id, verdict, tables in checks(todo, context, display, raise_errors, search):
            if on_verdict is not None:
                on_verdict(verdict, tables)
            display.claim_finished(verdict)
            verdicts[claim_id] = verdict
    finally:
        display.close()
        context.progress = sweep_progress
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
    return _check(claim_id, context)[0]
