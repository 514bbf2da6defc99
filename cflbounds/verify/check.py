"""One claim's check in this process: its own context, its code guarded, its failure contained."""
from __future__ import annotations

import time
from typing import Callable

from .._threads import follow_load
from .context import VerifyContext
from .failure import CONTAINED, ContractError, declaring_root, describe_failure, mark_raised
from .guards import ClaimTimeout, guarded, user_interrupted
from .registry import get_claim
from .verdict import Verdict

__all__ = ["check_claim", "error_verdict"]

NOT_SEARCHED = ("inconclusive: the claim has no designed experiment, so its domain is its check, and this call ran "
                "no search (`cflbounds verify` does; from Python, cflbounds.falsify.judge)")


def check_claim(claim_id: str, context: VerifyContext, raise_errors: bool = False,
           search: Callable | None = None, timeout: float | None = None) -> tuple[Verdict, dict]:
    """The verdict of one claim, checked in this process, and the tables its check saved.

    The check gets a context of its own (:meth:`VerifyContext.for_claim`) and runs
    :func:`~cflbounds.verify.guards.guarded` (its directory given back, its prints on stderr, at
    most ``timeout`` seconds). A check that raises, runs out of time, or returns something
    other than a :class:`Verdict` of this claim gives the verdict ``error``
    (:func:`error_verdict`) and no tables, unless ``raise_errors``: then the exception goes on.
    ``search(claim, verdict, context, raise_errors)``, when given, may then search the claim's
    domain and return the final verdict (:mod:`cflbounds.falsify.judge`: the engine does not
    know how a search is done, only when it runs); for a claim without a designed check (the
    short form: a bound and a domain) the search is the whole check, and it gets ``None`` as the
    designed verdict. A ``KeyboardInterrupt`` stops the run only
    when it is the user's (:func:`~cflbounds.verify.guards.user_interrupted`)."""
    claim = get_claim(claim_id)
    if claim.check is None and claim.domain is None:
        return Verdict(claim_id, "not-implemented", {}, context.seed, 0, 0.0,
                       "no check for this claim yet", claim.statement, context.scale), {}
    started = time.perf_counter()
    ctx = context.for_claim(claim_id, claim.package)
    try:
        with guarded(timeout):
            verdict = _designed(claim, ctx, raise_errors) if claim.check is not None else None
            if search is not None:
                verdict = search(claim, verdict, ctx, raise_errors)
            elif verdict is None:
                verdict = Verdict(claim_id, "inconclusive", {}, context.seed, 0, 0.0, NOT_SEARCHED)
    except (ClaimTimeout, KeyboardInterrupt) as error:
        if raise_errors or (isinstance(error, KeyboardInterrupt) and user_interrupted()):
            raise
        ctx.discard_tables()
        verdict = error_verdict(claim, ctx, error)
    verdict.statement, verdict.scale = claim.statement, context.scale
    verdict.seconds = time.perf_counter() - started
    return verdict, ctx.claim_tables


def _designed(claim, ctx: VerifyContext, raise_errors: bool) -> Verdict:
    """The verdict of ``claim``'s designed experiment (its check), its failure contained."""
    try:
        with follow_load():  # at most the cores other processes leave free (cflbounds._threads)
            verdict = claim.check(ctx)
        _check_returned(claim, verdict)
        return verdict
    except CONTAINED as error:
        if raise_errors:
            raise mark_raised(error, claim.id)
        ctx.discard_tables()
        return error_verdict(claim, ctx, error)


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
