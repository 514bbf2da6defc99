"""A verdict word means the same at every scale (issue "A newcomer's first hour, third pass").

Every claim is verified at the smoke scale, with the smoke scale's search counted in evaluations
(its seconds would let a faster machine search further), and held to
docs/verdicts.md's table ("Smoke and default"): the smoke column is what this run measures, the
default column is the README's claim table (a real default run: tests/test_cli.py keeps it to
the registry), every row where they differ says why, and no claim is ``violated`` at smoke unless
it is at default too: a smoke violation is a counterexample to the paper, never a sign that the
smoke problems were too small for the theorem.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from cflbounds.falsify import SEARCH_PLANS, SearchPlan
from cflbounds.verify import VerifyContext, verify_claims
from cflbounds.verify.run import implemented_claims

ROOT = Path(__file__).resolve().parents[1]


def _table(text: str, start: str, end: str) -> list[list[str]]:
    body = text.split(start, 1)[1].split(end, 1)[0].strip().splitlines()[2:]
    return [[cell.strip().strip("*") for cell in line.strip().strip("|").split("|")] for line in body]


@pytest.fixture(scope="module")
def documented() -> dict[str, tuple[str, str, str]]:
    rows = _table((ROOT / "docs" / "verdicts.md").read_text(encoding="utf-8"), "<!-- smoke-table:start -->",
                  "<!-- smoke-table:end -->")
    return {claim: (smoke, default, why) for claim, smoke, default, why in rows}


def test_the_default_column_is_the_readmes_final_verdict(documented):
    readme = _table((ROOT / "README.md").read_text(encoding="utf-8"), "<!-- claim-table:start -->",
                    "<!-- claim-table:end -->")
    assert {row[0]: row[3] for row in readme} == {claim: row[1] for claim, row in documented.items()}


def test_no_claim_is_violated_at_smoke_unless_at_default_and_differences_are_explained(documented):
    for claim, (smoke, default, why) in documented.items():
        assert smoke != "violated" or default == "violated", claim
        assert (smoke == default) == (why == ""), f"{claim}: a difference needs its reason, a match none"


def test_every_claims_smoke_verdict_is_the_documented_one(documented):
    ids = implemented_claims()
    assert list(documented) == ids
    # the smoke plan's evaluations alone: its seconds would let a faster machine search further
    plan = SearchPlan(evaluations=SEARCH_PLANS["smoke"][0])
    verdicts = verify_claims(ids, VerifyContext(scale="smoke", seed=0, device="cpu"), search=plan)
    measured = {verdict.id: verdict.verdict for verdict in verdicts}
    assert measured == {claim: row[0] for claim, row in documented.items()}
