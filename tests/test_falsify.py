"""``cflbounds falsify``: the search finds what is planted in toy domains with known answers, never
counts an inadmissible point, shrinks toward the simplest violating point, refuses a winner's
curse (a best point that is only noise does not confirm on fresh seeds), replays exactly, emits a
test that fails, and refuses bad input with one line before any work."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cflbounds.cli import main
from cflbounds.claims import Claim, Domain, Inequality, Instance, Parameter, validate_params
from cflbounds.falsify import falsify_claim, read_counterexample, replay_counterexample
from cflbounds.falsify.search import search
from cflbounds.falsify.shrink import simpler_values
from cflbounds.verify.context import VerifyContext
from cflbounds.verify.domain import round_toward
from conftest import FakeEntryPoint, examples


@validate_params({})
def _one():
    return 1.0


def _line_domain(slope: float, limit: float | None = None) -> Domain:
    """measured = slope * x against the bound 1, x in [0, 1]: violated exactly where x > 1/slope;
    ``limit``: the assumption x <= limit (a parameter-only constraint)."""
    def evaluate(points, seeds, ctx):
        return [Instance(slope * p["x"], 1.0) for p in points]

    constraints = None if limit is None else (lambda p: [Inequality("x <= limit", p["x"], limit, "<=", "the toy's assumption").as_dict()])
    return Domain([Parameter("x", 0.0, 1.0), Parameter("n", 1, 50, integer=True)], evaluate, constraints=constraints)


def _counting_domain() -> Domain:
    """measured = n (an integer in [1, 100]) against the bound 10: the simplest violation is n = 11."""
    return Domain([Parameter("n", 1, 100, integer=True, log=True), Parameter("scale", 0.1, 10.0, log=True)],
                  lambda points, seeds, ctx: [Instance(float(p["n"]), 10.0) for p in points])


def _noise_domain() -> Domain:
    """E[measured] = bound exactly everywhere, measured with noise: any 'violation' is the search's luck."""
    def evaluate(points, seeds, ctx):
        out = []
        for point, seed in zip(points, seeds):
            samples = 1.0 + np.random.default_rng(seed).normal(0.0, 0.3, size=4)
            out.append(Instance(float(samples.mean()), 1.0, samples=list(samples)))
        return out

    return Domain([Parameter("x", 0.0, 1.0)], evaluate, rule="expectation")


def _coin_domain(allowed: float) -> Domain:
    """An event of probability p in [0.05, 0.5] against the allowed probability ``allowed``."""
    def evaluate(points, seeds, ctx):
        out = []
        for point, seed in zip(points, seeds):
            hits = int(np.sum(np.random.default_rng(seed).random(400) < point["p"]))
            out.append(Instance(hits / 400, allowed, exceedances=hits, trials=400))
        return out

    return Domain([Parameter("p", 0.05, 0.5)], evaluate, rule="probability")


def _lucky_domain() -> Domain:
    """E[measured] = 0.8 + x against the bound 1 (violated for x > 0.2), but an even seed adds 1 and
    an odd one takes it away: at an even seed even x = 0 'violates' by more than half the log-ratio
    of x = 1 (log 1.8 against log 2.8), which fresh seeds refute."""
    def evaluate(points, seeds, ctx):
        out = []
        for point, seed in zip(points, seeds):
            samples = 0.8 + point["x"] + (1.0 if seed % 2 == 0 else -1.0) + np.random.default_rng(seed).normal(0, 0.01, 4)
            out.append(Instance(float(samples.mean()), 1.0, samples=list(samples)))
        return out

    return Domain([Parameter("x", 0.0, 1.0)], evaluate, rule="expectation")


TOYS = {"TOY.LUCKY": _lucky_domain(), "TOY.LINE": _line_domain(1.0), "TOY.STEEP": _line_domain(2.0), "TOY.CONSTRAINED": _line_domain(2.0, 0.4),
        "TOY.COUNT": _counting_domain(), "TOY.NOISE": _noise_domain(), "TOY.COIN": _coin_domain(0.3),
        "TOY.RARE": _coin_domain(0.6)}


@pytest.fixture
def toys(plugins):
    claims = [Claim(claim_id, "a toy claim with a known answer", bound=_one, domain=domain)
              for claim_id, domain in TOYS.items()]
    claims.append(Claim("TOY.NODOMAIN", "a claim with nothing to search", bound=_one,
                        no_domain="its constants are universal and unspecified"))
    plugins(FakeEntryPoint("toys", "toys", claims))


def _falsify(claim_id, evaluations=300, seed=0):
    return falsify_claim(claim_id, seed=seed, budget=None, max_evaluations=evaluations)


def test_a_tight_bound_ends_with_no_counterexample_and_best_ratio_one(toys):
    result = _falsify("TOY.LINE")
    assert result["outcome"] == "no counterexample found"
    assert 0.99 < result["best_ratio"] <= 1.0  # the search climbs to the tight corner x = 1, never above
    assert result["counterexample"] is None and result["evaluations"] == 300


def test_a_violation_is_found_shrunk_and_confirmed(toys):
    result = _falsify("TOY.STEEP")
    assert result["outcome"] == "violated" and result["best_ratio"] > 1.9
    example = result["counterexample"]
    assert example["parameters"]["x"] > 0.5 and example["measured"] > example["bound"]
    assert example["parameters"]["n"] == 1  # n plays no part: shrunk to its simplest value
    assert result["confirmation"]["violated"] and result["confirmation"]["trials"] == 20


def test_inadmissible_points_are_never_evaluated_or_counted(toys, monkeypatch):
    from cflbounds.falsify import search as search_module

    result = _falsify("TOY.CONSTRAINED")
    assert result["outcome"] == "no counterexample found"
    assert result["search"]["rejected"] > 0 and result["best_ratio"] <= 0.8 + 1e-12
    evaluations = []
    search_module.search(TOYS["TOY.CONSTRAINED"], VerifyContext(), seed=0, max_evaluations=200,
                         observe=evaluations.append)
    assert len(evaluations) == 200
    for evaluation in evaluations:
        assert (evaluation.instance is None) == (evaluation.point["x"] > 0.4)


def test_shrinking_walks_an_integer_down_to_the_simplest_point_that_keeps_half_the_excess(toys):
    """The best point n = 100 exceeds the bound 10 by log(10); the simplest point keeping half of
    that is n = 32 (32 / 10 >= sqrt(10)), not the simplest violation n = 11 (ratio 1.1)."""
    result = _falsify("TOY.COUNT", evaluations=100)
    assert result["outcome"] == "violated"
    assert result["counterexample"]["parameters"] == {"n": 32, "scale": 0.1}  # scale: its range's low end
    assert result["counterexample"]["shrunk"] and result["search"]["shrink"]["accepted"]


def test_the_winners_curse_is_refused_on_fresh_seeds(toys):
    result = _falsify("TOY.NOISE", evaluations=200)
    assert result["raw_best"]["ratio"] > 1.1  # the search's best is luck (E[measured] = bound everywhere) ...
    assert result["confirmation"] is not None and not result["confirmation"]["violated"]
    assert result["outcome"] == "no counterexample found"  # ... and the fresh seeds say so
    low, high = result["confirmed"]["interval"]
    assert low < 1 < high and result["best_ratio"] == result["confirmed"]["ratio"] < result["raw_best"]["ratio"]


def test_a_shrunk_point_that_does_not_confirm_falls_back_to_the_search_best(toys):
    result = _falsify("TOY.LUCKY", evaluations=60)
    assert result["search"]["shrunk_point_confirmed"] is False  # x shrunk to 0: a lucky seed's violation
    assert result["outcome"] == "violated" and result["counterexample"]["parameters"]["x"] > 0.2
    assert result["counterexample"]["parameters"] == result["search"]["best"]["parameters"]


def test_a_probability_bound_is_judged_by_exceedance_frequency(toys):
    violated, holds = _falsify("TOY.COIN", evaluations=150), _falsify("TOY.RARE", evaluations=150)
    assert violated["outcome"] == "violated" and violated["counterexample"]["parameters"]["p"] > 0.3
    low, high = violated["confirmation"]["interval"]
    assert 0.3 < low < high and violated["confirmation"]["trials"] == 20 * 400
    assert holds["outcome"] == "no counterexample found" and holds["best_ratio"] < 1


def test_the_same_seed_gives_the_same_search_path(toys):
    paths = [[] for _ in range(3)]
    for path, seed in zip(paths, (5, 5, 6)):
        search(TOYS["TOY.STEEP"], VerifyContext(), seed=seed, max_evaluations=80,
               observe=lambda e, path=path: path.append((e.point, e.seed, e.score)))
    assert len(paths[0]) == 80 and paths[0] == paths[1] and paths[0] != paths[2]


def test_a_replay_reproduces_the_ratio_exactly_and_the_emitted_test_fails(textbook, tmp_path, capsys, pytester):
    out, test_file = tmp_path / "run", tmp_path / "test_regression.py"
    assert main(["falsify", "TEXTBOOK.GD-PLANTED", "--evaluations", "200", "--out", str(out), "--json",
                 "--emit-test", str(test_file)]) == 0
    result, = json.loads(capsys.readouterr().out)["results"]
    assert result["outcome"] == "violated"
    path = out / "counterexamples" / "TEXTBOOK.GD-PLANTED.json"
    record = read_counterexample(path)
    assert replay_counterexample(record).ratio == record["ratio"] == float(result["counterexample"]["ratio"])
    assert main(["falsify", "--replay", str(path)]) == 0
    assert "reproduced exactly" in capsys.readouterr().out
    pytester.syspathinsert()
    outcome = pytester.runpytest_inprocess(str(test_file), "-p", "no:cacheprovider")
    outcome.assert_outcomes(failed=1)
    assert f"measured {record['measured']:.6g} > bound {record['bound']:.6g}" in outcome.stdout.str()


def test_the_textbook_gd_bound_is_not_falsified_but_its_planted_twin_is(textbook):
    holds, planted = _falsify("TEXTBOOK.GD", 400), _falsify("TEXTBOOK.GD-PLANTED", 400)
    assert holds["outcome"] == "no counterexample found" and holds["best_ratio"] <= 1.0
    assert planted["outcome"] == "violated" and planted["confirmation"]["violated"]


def test_the_json_output_has_every_field_the_issue_names(toys, tmp_path, capsys):
    assert main(["falsify", "TOY.STEEP", "TOY.LINE", "--evaluations", "120", "--out", str(tmp_path), "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in record["results"]] == ["TOY.STEEP", "TOY.LINE"]
    for result in record["results"]:
        assert {"id", "outcome", "best_ratio", "evaluations", "seconds", "counterexample", "confirmation"} <= set(result)
    steep = record["results"][0]
    assert {"parameters", "seed", "measured", "bound", "assumptions"} <= set(steep["counterexample"])
    assert {"trials", "confidence", "interval", "seeds"} <= set(steep["confirmation"])
    assert json.loads((tmp_path / "falsify.json").read_text()) == record
    assert (tmp_path / "report.pdf").stat().st_size > 0
    assert sorted(p.name for p in (tmp_path / "counterexamples").iterdir()) == ["TOY.STEEP.json"]


@pytest.mark.parametrize("args, words", [
    (["NOPE.X"], "Unknown claim ID 'NOPE.X'"),
    (["TOY.NODOMAIN"], "declares no domain to search: its constants are universal"),
    (["NOPE.*"], "matches no falsifiable claim"),
    (["TOY.LINE", "--budget", "0"], "--budget: must be a number > 0"),
    (["TOY.LINE", "--budget", "-5"], "--budget: must be a number > 0"),
    (["TOY.LINE", "--budget", "nan"], "--budget: must be a number > 0"),
    (["TOY.LINE", "--evaluations", "0"], "--evaluations: must be an int > 0"),
    (["TOY.LINE", "--budget", "5", "--evaluations", "5"], "not allowed with argument"),
    (["TOY.LINE", "--seed", "-1"], "'--seed' option must be a non-negative int"),
    (["TOY.LINE", "--seed", str(2**64)], "'--seed' option must be a non-negative int of at most 63 bits"),
    (["TOY.LINE", "--budget", "1e308"], "--budget: must be a number > 0 and <= 604800"),
    (["TOY.LINE", "--evaluations", str(10**23)], "--evaluations: must be an int > 0 and <= 10000000"),
    (["TOY.LINE", "--confidence", "1"], "'--confidence' option must be in (0, 1)"),
    (["TOY.LINE", "TOY.STEEP", "--emit-test", "t.py"], "needs exactly one claim"),
    (["TOY.LINE", "--emit-test", "t.txt"], "must name a .py file"),
    (["--replay", "missing.json"], "missing.json: cannot be read (No such file or directory)"),
    (["--replay", "bad.json"], "bad.json: has no 'parameters'"),
    (["TOY.LINE", "--replay", "bad.json"], "takes no claim IDs"),
    (["TOY.LINE", "--out", "a-file"], "must name a directory"),
])
def test_bad_input_is_one_line_and_exit_2_before_any_work(toys, tmp_path, monkeypatch, capsys, args, words):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.json").write_text(json.dumps({"id": "TOY.LINE"}))
    (tmp_path / "a-file").write_text("")
    assert main(["falsify", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0], err
    assert not (tmp_path / "reports").exists()


def test_the_claim_list_says_which_claims_can_be_falsified_and_why_not(toys, capsys):
    assert main(["claims", "--json"]) == 0
    rows = {row["id"]: row["falsify"] for row in json.loads(capsys.readouterr().out)}
    assert rows["TOY.LINE"] == "yes"
    assert rows["TOY.NODOMAIN"] == "no: its constants are universal and unspecified"
    assert main(["claims"]) == 0
    assert "TOY.NODOMAIN  its constants are universal and unspecified" in capsys.readouterr().out


@given(unit=st.floats(0, 1), low=st.floats(1e-3, 10), span=st.floats(1.0, 1e4), integer=st.booleans(),
       log=st.booleans())
@examples(200)
def test_decoding_stays_in_range_and_encoding_inverts_it(unit, low, span, integer, log):
    low, high = (math.floor(low), math.floor(low) + math.ceil(span)) if integer else (low, low * span)
    if integer and log:
        low = max(low, 1)
    parameter = Parameter("p", low, high, integer=integer, log=log)
    value = parameter.decode(unit)
    assert parameter.contains(value) and low <= value <= high
    assert parameter.decode(parameter.encode(value)) == pytest.approx(value, rel=1e-9)


@given(low=st.floats(-100, 100), width=st.floats(1e-6, 100), at=st.floats(0, 1))
@examples(200)
def test_shrinking_candidates_are_simpler_and_in_range(low, width, at):
    parameter = Parameter("p", low, low + width)
    value = low + at * width
    rounded = round_toward(parameter.low, parameter.high, value)
    assert parameter.low <= rounded <= parameter.high
    for candidate in simpler_values(parameter, value):
        assert candidate != value and parameter.low <= candidate <= parameter.high
        assert abs(candidate - parameter.simplest) <= abs(value - parameter.simplest)


def test_a_domain_refuses_malformed_declarations():
    """Checked when validated, not when made (a plugin module with one bad parameter still
    imports: tests/test_containment.py), each problem with the line that declared it."""
    bad_range = Parameter("x", 1.0, 0.0)  # this line is named in the error
    with pytest.raises(ValueError, match=r"needs finite low <= high.*declared at .*test_falsify.py:\d+"):
        bad_range.validate()
    with pytest.raises(ValueError, match="log scale needs low > 0"):
        Parameter("x", 0.0, 1.0, log=True).validate()
    with pytest.raises(ValueError, match="distinct parameter names"):
        Domain([Parameter("x", 0, 1), Parameter("x", 0, 2)], lambda *a: []).validate()
    with pytest.raises(ValueError, match="rule must be one of"):
        Domain([Parameter("x", 0, 1)], lambda *a: [], rule="sometimes").validate()
    assert Domain([Parameter("x", 0, 1)], lambda *a: []).problems() == []


def test_a_time_budget_is_kept_within_one_chunk_of_evaluations():
    """A generation is evaluated in chunks of the base population, the clock read between them:
    IPOP's doubled populations cannot overrun the budget by a whole generation."""
    evaluated = []

    def evaluate(points, seeds, ctx):
        evaluated.extend(points)
        return [Instance(p["x"], 1.0) for p in points]

    domain = Domain([Parameter("x", 0.0, 1.0), Parameter("y", 0.0, 1.0)], evaluate)
    found = search(domain, VerifyContext(), seed=0, budget=300.0, clock=lambda: 0.1 * len(evaluated))
    base_population = 4 + int(3 * math.log(2))
    assert 3000 <= found.evaluations < 3000 + base_population and found.restarts >= 1


def test_a_margin_gives_a_probability_search_a_slope_where_no_trial_exceeds():
    """Trials exceed only in the corner x, y > 0.999 (a millionth of the square): the margin leads
    the search there; without it the objective is flat and the search never gets there."""
    def domain(with_margin):
        def evaluate(points, seeds, ctx):
            hits = [int(min(p["x"], p["y"]) > 0.999) for p in points]
            return [Instance(float(h), 0.5, exceedances=h, trials=1,
                             margin=min(p["x"], p["y"]) / 0.999 if with_margin else None) for h, p in zip(hits, points)]

        return Domain([Parameter("x", 0.0, 1.0), Parameter("y", 0.0, 1.0)], evaluate, rule="probability")

    guided, blind = (search(domain(flag), VerifyContext(), seed=0, max_evaluations=400).best for flag in (True, False))
    assert guided.score > 0 and min(guided.point.values()) > 0.999
    assert blind.score < 0


def test_a_violation_only_fresh_seeds_show_is_reported_at_a_fresh_seed_that_replays_it():
    """The best point of a search that saw no violation is confirmed too: here one instance in ten
    violates, the two searched did not, fresh ones did. The counterexample is then the strongest
    fresh instance, evaluated alone, so that a replay (and an emitted test) shows the violation."""
    from cflbounds.falsify import falsify_domain
    from cflbounds.falsify.confirm import confirmation_seeds

    def evaluate(points, seeds, ctx):
        return [Instance(1.5 if np.random.default_rng(seed).random() < 0.1 else 0.5, 1.0) for seed in seeds]

    domain = Domain([Parameter("x", 0.0, 1.0)], evaluate)
    result = falsify_domain(domain, claim_id="TOY.RARE-DRAW", seed=0, budget=None, max_evaluations=2)
    assert result["raw_best"]["ratio"] < 1 and result["outcome"] == "violated"
    example = result["counterexample"]
    assert example["seed"] in confirmation_seeds(0, domain.confirmation) and example["ratio"] == 1.5
    assert domain.evaluate([example["parameters"]], [example["seed"]], VerifyContext())[0].ratio == 1.5
