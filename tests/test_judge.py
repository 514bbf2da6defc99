"""One verdict per claim: ``verify`` runs a claim's search after its designed experiment, and the
final verdict is the stronger finding (cflbounds.falsify.judge). The claims here are cheap
planted ones whose truth is known: a bound that promises nothing and is exceeded in a corner the
designed experiment never visits (final: violated, designed: vacuous), a designed violation the
search cannot see (stays violated), a true claim (unchanged), and a search whose evaluation
raises (error)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from cflbounds.claims import Claim, Domain, Instance, Parameter, rules
from cflbounds.cli import main
from cflbounds.falsify import SEARCH_PLANS, SearchPlan, falsify_claim, judge
from cflbounds.verify import VerifyContext, verify_claims
from cflbounds.verify.verdict import PRECEDENCE

from conftest import FakeEntryPoint

# measured = x on [0, 1], bound = 0.9 + 0.1 (1 - x): exceeded only where x > 0.95 (a corner)
def _measured(x):
    return float(x)


def _bound(x):
    return 0.9 + 0.1 * (1.0 - float(x))


def _evaluate(points, seeds, ctx):
    return [Instance(_measured(p["x"]), _bound(p["x"])) for p in points]


def _evaluate_raises(points, seeds, ctx):
    raise RuntimeError("the plugin's evaluation is broken")


DOMAIN = Domain([Parameter("x", 0.0, 1.0)], _evaluate, note="x")


def _designed_vacuous(ctx):
    """The designed experiment visits x <= 0.5 only, where the bound holds but never goes below
    the trivial value 0.9: vacuous."""
    xs = np.linspace(0.0, 0.5, 11)
    return rules.deterministic([_measured(x) for x in xs], [_bound(x) for x in xs],
                               trivial=0.5).as_verdict(ctx.claim, ctx)


def _designed_violated(ctx):
    return rules.deterministic([2.0], [1.0]).as_verdict(ctx.claim, ctx)


def _designed_holds(ctx):
    return rules.deterministic([0.1], [1.0]).as_verdict(ctx.claim, ctx)


TRUE_DOMAIN = Domain([Parameter("x", 0.0, 1.0)], lambda points, seeds, ctx: [Instance(0.5 * p["x"], 1.0)
                                                                             for p in points])
CLAIMS = [Claim("PLANT.CORNER", "x <= 0.9 + 0.1 (1 - x) on [0, 1].", check=_designed_vacuous, domain=DOMAIN),
          Claim("PLANT.DESIGNED", "A designed violation.", check=_designed_violated, domain=TRUE_DOMAIN),
          Claim("PLANT.TRUE", "x / 2 <= 1.", check=_designed_holds, domain=TRUE_DOMAIN),
          Claim("PLANT.RAISES", "A search that raises.", check=_designed_holds,
                domain=Domain([Parameter("x", 0.0, 1.0)], _evaluate_raises))]
PLAN = SearchPlan(evaluations=120)


@pytest.fixture
def planted(plugins):
    plugins(FakeEntryPoint("plant-plugin", "plant", CLAIMS))


def test_a_vacuous_bound_exceeded_in_a_corner_is_violated(planted):
    designed_only = judge("PLANT.CORNER", scale="smoke", search=SearchPlan())
    assert designed_only.verdict == "vacuous" and designed_only.search == {}
    verdict = judge("PLANT.CORNER", scale="smoke", search=PLAN)
    assert verdict.verdict == "violated"
    assert verdict.designed["verdict"] == "vacuous"
    assert verdict.search["outcome"] == "violated" and verdict.search["counterexample"]["parameters"]["x"] > 0.95
    # the deciding reading first, in one short clause; the designed experiment's after it
    assert verdict.summary.startswith("search: violated: measured/allowed ") and " at x = " in verdict.summary
    assert "; designed experiment: vacuous (" in verdict.summary
    assert verdict.evidence["search_violated"] == 1 and verdict.evidence["search_evaluations"] == 120


def test_a_designed_violation_stays_violated_whatever_the_search_finds(planted):
    verdict = judge("PLANT.DESIGNED", scale="smoke", search=PLAN)
    assert verdict.verdict == verdict.designed["verdict"] == "violated"
    # nothing a search finds could change it, so verify does not search it (falsify does)
    assert verdict.search["outcome"] == "not run" and "cflbounds falsify PLANT.DESIGNED" in verdict.search["reason"]


def test_a_true_claim_keeps_its_verdict_and_says_what_the_search_saw(planted):
    verdict = judge("PLANT.TRUE", scale="smoke", search=PLAN)
    assert verdict.verdict == "holds" and verdict.search["outcome"] == "no counterexample found"
    assert "; search: no counterexample found: best measured/allowed " in verdict.summary
    # what the search spent and rules out: in its fields, which the report's verdict block says
    assert verdict.search["evaluations"] == 120 and verdict.search["coverage"]["statement"]
    from cflbounds.reports.content import Paragraph, claim_entry
    said = " ".join(b.text for b in claim_entry(verdict.to_dict()).blocks if isinstance(b, Paragraph))
    assert "120 evaluations" in said and verdict.search["coverage"]["statement"] in said


def test_a_search_that_raises_is_the_claims_error(planted):
    verdict = judge("PLANT.RAISES", scale="smoke", search=PLAN)
    assert verdict.verdict == "error" and verdict.designed["verdict"] == "holds"
    assert verdict.details["error_stage"] == "evaluation" and verdict.details["error_kind"] == "RuntimeError"
    assert "test_judge.py" in verdict.details["error_where"]


@pytest.mark.parametrize("claim_id", ["PLANT.CORNER", "PLANT.DESIGNED", "PLANT.TRUE"])
@pytest.mark.parametrize("evaluations", [10, 60, 120])
def test_verify_never_passes_a_claim_its_own_search_refutes(planted, claim_id, evaluations):
    """The agreement both commands promise: at one seed and budget, falsify's outcome violated
    means verify's final verdict is violated (or error); and verify is never weaker than its
    designed experiment."""
    found = falsify_claim(claim_id, seed=0, max_evaluations=evaluations)
    verdict = judge(claim_id, scale="smoke", search=SearchPlan(evaluations=evaluations))
    if verdict.designed["verdict"] != "violated":  # else not searched: nothing could change it
        assert verdict.search["outcome"] == found["outcome"] and verdict.search["best_ratio"] == found["best_ratio"]
    if found["outcome"] == "violated":
        assert verdict.verdict in ("violated", "error")
    assert PRECEDENCE.index(verdict.verdict) <= PRECEDENCE.index(verdict.designed["verdict"])


def test_the_cli_writes_the_counterexample_and_its_replay_reproduces(planted, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["verify", "PLANT.CORNER", "PLANT.TRUE", "--scale", "smoke", "--search-evaluations", "120",
                 "--out", str(out), "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["metadata"]["search"] == {"evaluations": 120, "seconds": None, "confidence": 0.95}
    corner, true = record["verdicts"]
    assert (corner["verdict"], corner["designed"]["verdict"]) == ("violated", "vacuous")
    replay = corner["search"]["replay"]
    assert replay == f"cflbounds falsify --replay {out / 'counterexamples' / 'PLANT.CORNER.json'}"
    assert main(replay.split()[1:]) == 0
    assert "reproduced exactly" in capsys.readouterr().out
    assert true["search"]["outcome"] == "no counterexample found" and "replay" not in true["search"]


def test_smoke_scale_searches_too_and_resume_needs_the_same_search(planted, tmp_path):
    """A smoke verdict is not the designed experiment with the search left out: the planted corner
    is found at smoke as at default (--search 0 is the designed experiment alone)."""
    out = str(tmp_path / "run")
    assert main(["verify", "PLANT.CORNER", "--scale", "smoke", "--out", out]) == 0
    verdicts = json.loads((tmp_path / "run" / "verdicts.json").read_text())["verdicts"]
    assert verdicts[0]["verdict"] == "violated" and verdicts[0]["designed"]["verdict"] == "vacuous"
    assert verdicts[0]["search"]["evaluations"] >= SEARCH_PLANS["smoke"][0]
    assert main(["verify", "PLANT.CORNER", "--scale", "smoke", "--out", str(tmp_path / "none"), "--search", "0"]) == 0
    alone = json.loads((tmp_path / "none" / "verdicts.json").read_text())["verdicts"]
    assert alone[0]["verdict"] == "vacuous" and alone[0]["search"] == {}
    assert main(["verify", "PLANT.CORNER", "--scale", "smoke", "--out", out, "--resume",
                 "--search-evaluations", "50"]) == 2


def test_search_options_are_validated_before_any_work(tmp_path, capsys):
    for argv in (["--search", "-1"], ["--search-evaluations", "2.5"], ["--search", "1", "--search-evaluations", "3"]):
        assert main(["verify", "IFCA.A2", "--out", str(tmp_path / "x"), *argv]) == 2
        assert not (tmp_path / "x").exists()
    assert "--search" in capsys.readouterr().err


@pytest.mark.slow
def test_verify_and_falsify_give_mgd_l2_one_verdict():
    """The disagreement that started it: the designed experiment calls MGD.L2 vacuous (no decrease
    promised, never exceeded at its placements) while its search confirms heavy-ball momentum
    exceeding the one-step bound. ``verify MGD.L2`` at the default scale and ``falsify MGD.L2``
    with the same evaluations and seed must both say violated, with the same counterexample; and
    the default plan (at least that many evaluations, and seconds) says violated too."""
    evaluations = SEARCH_PLANS["default"][0]
    verdict = judge("MGD.L2", scale="default", search=SearchPlan(evaluations=evaluations))
    searched = falsify_claim("MGD.L2", seed=0, budget=None, max_evaluations=evaluations)
    assert verdict.designed["verdict"] == "vacuous"
    assert searched["outcome"] == verdict.search["outcome"] == "violated"
    assert verdict.verdict == "violated" and verdict.search["counterexample"] == searched["counterexample"]
    assert judge("MGD.L2", scale="default").verdict == "violated"
