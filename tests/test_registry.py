"""Claims as an open API: the registry reads the entry-point group ``cflbounds.claims``; a broken
plugin is one line and the other claims still work; a plugin claim is checked, evaluated and
listed exactly as a built-in one (the textbook example, loaded from ``examples/textbook``)."""
from __future__ import annotations

import json

import pytest

from cflbounds.cli import main
from cflbounds.claims import Claim, validate_params
from cflbounds.papers import CLAIMS as PAPERS
from cflbounds.verify import registry, verify
from cflbounds.verify.verdict import Verdict

from conftest import REAL_ENTRY_POINTS, FakeEntryPoint


@validate_params({})
def _no_constants():
    return 1.0


def _holds(ctx):
    return Verdict("PLUGIN.OK", "holds", {"measured": 1.0}, ctx.seed, 1, 1.0, "measured")


GOOD = Claim("PLUGIN.OK", "A plugin claim that holds.", check=_holds, bound=_no_constants)


def test_the_papers_come_through_the_entry_point_group():
    claims = registry.claims()
    assert {claim.package for claim in claims.values()} == {"cflbounds"}
    ids = list(claims)  # CLAIMS.md's order, then CATALOGUE.md's
    assert ids[:2] == ["IFCA.A1", "IFCA.A2"] and ids[ids.index("DSC.ACC") + 1] == "FEDAVG.T1" and ids[-1] == "CFL.C1-FROM-T1"
    assert registry.plugin_problems() == []
    point, = [p for p in REAL_ENTRY_POINTS(group=registry.GROUP) if p.dist.metadata["Name"] == "cflbounds"]
    assert point.value == "cflbounds.papers:CLAIMS"


def test_a_plugin_adds_its_claims_after_the_papers(plugins):
    plugins(FakeEntryPoint("my-plugin", "mine", [GOOD]))
    claims = registry.claims()
    assert list(claims)[-1] == "PLUGIN.OK" and claims["PLUGIN.OK"].package == "my-plugin"
    assert claims["PLUGIN.OK"].paper == "PLUGIN"
    assert verify("PLUGIN.OK", scale="smoke").verdict == "holds"


def test_an_entry_point_may_name_a_function_returning_the_claims(plugins):
    plugins(FakeEntryPoint("my-plugin", "mine", lambda: (GOOD,)))
    assert "PLUGIN.OK" in registry.claims()


@pytest.mark.parametrize("target, words", [
    (ModuleNotFoundError("No module named 'plugin_module'"), ["failed to load plugin_module:CLAIMS",
                                                             "ModuleNotFoundError", "plugin_module"]),
    (RuntimeError("boom at import"), ["failed to load", "RuntimeError: boom at import"]),
    (["not a claim"], ["'not a claim'", "not a cflbounds.claims.Claim"]),
    ([Claim("IFCA.T1", "a plugin taking a built-in ID")], ["IFCA.T1", "already declared by cflbounds"]),
    ([Claim("lower.case", "x")], ["'lower.case'", "PAPER.NAME"]),
    ([Claim("PLUGIN.EMPTY", "  ")], ["PLUGIN.EMPTY", "statement"]),
    ([Claim("PLUGIN.BOUND", "x", bound=lambda x: x)], ["PLUGIN.BOUND", "validate_params"]),
    ([Claim("PLUGIN.CHECK", "x", check="not callable")], ["PLUGIN.CHECK", "check must be a function"]),
])
def test_a_broken_plugin_is_one_line_and_the_others_still_work(plugins, target, words):
    plugins(FakeEntryPoint("broken-plugin", "bad", target), FakeEntryPoint("my-plugin", "mine", [GOOD]))
    problems = registry.plugin_problems()
    assert len(problems) == 1
    text = str(problems[0])
    assert "\n" not in text and text.startswith("plugin broken-plugin (entry point 'bad'): ")
    assert all(word in text for word in words), text
    claims = registry.claims()
    assert "PLUGIN.OK" in claims and len([c for c in claims.values() if c.package == "cflbounds"]) == len(PAPERS)
    assert claims["IFCA.T1"].package == "cflbounds"  # a built-in ID is never taken over


def test_an_id_declared_twice_keeps_the_first(plugins):
    plugins(FakeEntryPoint("my-plugin", "mine", [GOOD, Claim("PLUGIN.OK", "the same ID again")]))
    problem, = registry.plugin_problems()
    assert "claim PLUGIN.OK is already declared by my-plugin; ignored" in str(problem)
    assert registry.claims()["PLUGIN.OK"].statement == GOOD.statement


def test_the_cli_names_a_broken_plugin_on_stderr_and_carries_on(plugins, capsys):
    plugins(FakeEntryPoint("broken-plugin", "bad", ImportError("cannot import name 'x'")),
            FakeEntryPoint("my-plugin", "mine", [GOOD]))
    assert main(["claims", "--json"]) == 0
    captured = capsys.readouterr()
    warnings = captured.err.strip().splitlines()
    assert len(warnings) == 1 and warnings[0].startswith("cflbounds claims: warning: plugin broken-plugin")
    rows = {row["id"]: row for row in json.loads(captured.out)}
    assert rows["PLUGIN.OK"]["package"] == "my-plugin" and rows["IFCA.A1"]["package"] == "cflbounds"


def test_an_unknown_id_without_any_registered_claim_says_why(plugins, monkeypatch, capsys):
    monkeypatch.setattr(registry, "entry_points", lambda group: [])
    registry.reload()
    assert main(["verify", "IFCA.T1", "--scale", "smoke"]) == 2
    assert "no claim is registered: is cflbounds installed" in capsys.readouterr().err


# -- the textbook example, loaded as an installed plugin would be ------------------------------------
def test_the_textbook_claims_are_verified_as_built_in_ones(textbook, tmp_path, capsys):
    assert [c for c in textbook if c.startswith("TEXTBOOK.")] == [
        "TEXTBOOK.GD-CONVEX", "TEXTBOOK.GD-CONVEX-PLANTED", "TEXTBOOK.GAUSSIAN-MAX", "TEXTBOOK.GAUSSIAN-MAX-PLANTED",
        "TEXTBOOK.GD", "TEXTBOOK.GD-PLANTED", "TEXTBOOK.HOEFFDING", "TEXTBOOK.HOEFFDING-PLANTED"]
    assert main(["verify", "TEXTBOOK.*", "--scale", "smoke", "--out", str(tmp_path / "run"), "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    verdicts = {v["id"]: v for v in record["verdicts"]}
    assert {i: v["verdict"] for i, v in verdicts.items()} == {
        "TEXTBOOK.GD-CONVEX": "holds", "TEXTBOOK.GD-CONVEX-PLANTED": "violated", "TEXTBOOK.GAUSSIAN-MAX": "holds",
        "TEXTBOOK.GAUSSIAN-MAX-PLANTED": "violated", "TEXTBOOK.GD": "holds", "TEXTBOOK.GD-PLANTED": "violated",
        "TEXTBOOK.HOEFFDING": "holds", "TEXTBOOK.HOEFFDING-PLANTED": "violated"}
    for short_form in ("TEXTBOOK.GD-CONVEX-PLANTED", "TEXTBOOK.GAUSSIAN-MAX-PLANTED"):  # a bound and a domain
        assert verdicts[short_form]["search"]["counterexample"] is not None
        assert (tmp_path / "run" / "counterexamples" / f"{short_form}.json").exists()
    assert verdicts["TEXTBOOK.GD-PLANTED"]["evidence"]["violations"] > 0
    assert verdicts["TEXTBOOK.HOEFFDING-PLANTED"]["evidence"]["refuted_configurations"] > 0
    assert (tmp_path / "run" / "tables" / "textbook_gd.parquet").exists()
    assert (tmp_path / "run" / "report.pdf").exists()


def test_bound_works_for_a_plugin_claim(textbook, capsys):
    assert main(["bound", "TEXTBOOK.GD", "--help"]) == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert "strong convexity: the smallest eigenvalue of the Hessian" in help_text and "mu > 0" in help_text
    assert main(["bound", "TEXTBOOK.GD", "--mu", "1", "--L", "3", "--eta", "0.5", "--T", "2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["value"] == 0.25
    assert main(["bound", "TEXTBOOK.GD", "--mu", "-1", "--L", "3", "--eta", "0.5", "--T", "2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "'mu'" in err[0] and "-1" in err[0]
