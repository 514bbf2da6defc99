"""The engine: claim registry, runs, context, decision rules, statistics, verdicts, run records,
progress and costs (the papers are in :mod:`cflbounds.papers`, a plugin like any other)."""
from .context import SCALES, VerifyContext
from .progress import run_display
from .record import RunRecord, read_record
from .claim import Claim
from .registry import claims, get_claim, plugin_problems
from .run import implemented_claims, verify, verify_claims
from .testing import assert_claim, assert_within_bound
from .verdict import PASSING, VERDICTS, Verdict

__all__ = [
    "verify",
    "verify_claims",
    "implemented_claims",
    "assert_claim",
    "assert_within_bound",
    "Verdict",
    "VERDICTS",
    "PASSING",
    "claims",
    "Claim",
    "get_claim",
    "plugin_problems",
    "SCALES",
    "VerifyContext",
    "RunRecord",
    "read_record",
    "run_display",
]
