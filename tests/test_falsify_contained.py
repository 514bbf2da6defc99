"""A claim's own failure in ``cflbounds falsify`` is that claim's outcome ``error`` (stage, type,
message, the plugin's file:line, traceback): the other claims search on with the results they
get alone, every output is written, and the exit status is 3. ``--raise`` re-raises the first
failure as it is; ``--replay`` of a failing claim is one line and exit 3. One test per failure
mode: a raising evaluation, a wrong instance count, a NaN measured, exceedances > trials."""
from __future__ import annotations

import inspect
import json
import math
import signal
from pathlib import Path

import pytest

from cflbounds.claims import Claim, Domain, Instance, InvalidParameterError, Parameter
from cflbounds.cli import main
from conftest import FakeEntryPoint
from test_falsify import TOYS, _one
from test_falsify_contract import without_timing

GOOD, EVALUATIONS = "TOY.STEEP", "40"  # violated: its counterexample file is written too


def _raising(points, seeds, ctx):
    if any(p["x"] > 0.6 for p in points):
        raise KeyError("mu")
    return [Instance(p["x"], 1.0) for p in points]


def _one_instance(points, seeds, ctx):  # the mistake: one instance, whatever the number of points
    return [Instance(p["x"], 1.0) for p in points][:1]


def _nan_measured(points, seeds, ctx):
    return [Instance(math.nan if p["x"] > 0.5 else p["x"], 1.0) for p in points]


def _excess_exceedances(points, seeds, ctx):
    return [Instance(1.1, 0.5, exceedances=11, trials=10) for p in points]


def _invalid_parameter(points, seeds, ctx):  # a bound's own validation, e.g. validate_params refusing a constant
    raise InvalidParameterError("The 'eta' parameter of my_bound must be > 0. Got -1 instead.")


# claim -> (its evaluation, rule, stage, exception type, words the message must hold)
FAILURES = {
    "BROKEN.RAISES": (_raising, "deterministic", "evaluation", "KeyError", "'mu'"),
    "BROKEN.COUNT": (_one_instance, "deterministic", "contract", "ContractError",
                     "BROKEN.COUNT: evaluate returned 1 instance for 4 points (the Domain contract: one Instance per "
                     "point)"),
    "BROKEN.NAN": (_nan_measured, "deterministic", "contract", "ContractError",
                   "measured is nan at an admissible instance"),
    "BROKEN.EXCESS": (_excess_exceedances, "probability", "contract", "ContractError",
                      "exceedances 11 out of 10 trials (the Domain contract: 0 <= exceedances <= trials)"),
    "BROKEN.INVALID": (_invalid_parameter, "deterministic", "evaluation", "InvalidParameterError", "'eta' parameter"),
}


@pytest.fixture
def broken(plugins):
    claims = [Claim(claim_id, "a claim whose own code fails", bound=_one,
                    domain=Domain([Parameter("x", 0.0, 1.0)], evaluate, rule=rule))
              for claim_id, (evaluate, rule, *_) in FAILURES.items()]
    claims += [Claim(claim_id, "a toy claim with a known answer", bound=_one, domain=TOYS[claim_id])
               for claim_id in (GOOD, "TOY.LINE")]
    plugins(FakeEntryPoint("broken-plugin", "broken", claims))


def falsify(capsys, *argv) -> tuple[int, dict | None, str]:
    """``cflbounds falsify ARGV --json`` in this process: exit status, the printed record, stderr."""
    code = main(["falsify", *map(str, argv), "--json"])
    out, err = capsys.readouterr()
    return code, json.loads(out) if out.strip() else None, err


_ALONE = {}


def alone(capsys, tmp_path, claim_id: str) -> dict:
    """``claim_id``'s result in a run of its own (the same seed and evaluations; computed once)."""
    if claim_id not in _ALONE:
        code, record, _ = falsify(capsys, claim_id, "--evaluations", EVALUATIONS, "--out", tmp_path / f"alone-{claim_id}")
        assert code in (0, 1)
        _ALONE[claim_id] = record["results"][0]
    return _ALONE[claim_id]


@pytest.mark.parametrize("claim_id", list(FAILURES))
def test_a_failing_claim_ends_in_error_and_the_other_claims_result_is_unchanged(broken, tmp_path, capsys, claim_id):
    out = tmp_path / "run"
    code, record, err = falsify(capsys, claim_id, GOOD, "--evaluations", EVALUATIONS, "--out", out)
    assert code == 3
    failed, other = record["results"]
    _, _, stage, kind, words = FAILURES[claim_id]
    assert failed["id"] == claim_id and failed["outcome"] == "error" and failed["counterexample"] is None
    error = failed["error"]
    assert (error["stage"], error["kind"]) == (stage, kind) and words in error["message"]
    assert kind in error["traceback"] and f"falsify {claim_id}: error: {stage}" in err
    # the plugin's file:line, not cflbounds' frames around it: the raise, or the function returning a bad value
    path, line = error["where"].rsplit(":", 1)
    source = Path(__file__).read_text().splitlines()[int(line) - 1]
    assert Path(path).name == Path(__file__).name
    assert ("raise" in source) if stage == "evaluation" else source.startswith(f"def {FAILURES[claim_id][0].__name__}(")
    assert without_timing(other) == without_timing(alone(capsys, tmp_path, GOOD))
    assert json.loads((out / "falsify.json").read_text()) == record
    assert (out / "report.pdf").stat().st_size > 0
    assert [p.name for p in (out / "counterexamples").iterdir()] == [f"{GOOD}.json"]


def test_a_raising_evaluation_keeps_what_the_search_found_before_it(plugins, capsys, tmp_path):
    calls = []

    def raising_at_the_third_call(points, seeds, ctx):
        calls.append(len(points))
        if len(calls) == 3:
            raise KeyError("mu")
        return [Instance(p["x"], 1.0) for p in points]

    plugins(FakeEntryPoint("p", "p", [Claim("BROKEN.LATE", "raises at its third evaluation call", bound=_one,
                                            domain=Domain([Parameter("x", 0.0, 1.0)], raising_at_the_third_call))]))
    code, record, _ = falsify(capsys, "BROKEN.LATE", "--evaluations", "200", "--out", tmp_path)
    result, = record["results"]
    assert code == 3 and result["outcome"] == "error"
    assert result["evaluations"] == sum(calls[:2]) > 0 and result["search"]["admissible"] == sum(calls[:2])
    best = result["search"]["best"]
    assert 0 < result["best_ratio"] <= 1 and best["measured"] == best["parameters"]["x"]
    assert result["summary"].startswith("error: evaluation raised: KeyError: 'mu' (at ")
    assert result["summary"].endswith(f"(after {sum(calls[:2])} evaluations)")


def test_an_error_outranks_a_violation_under_strict_and_a_violation_alone_is_still_1(broken, capsys, tmp_path):
    assert falsify(capsys, "BROKEN.NAN", GOOD, "--evaluations", EVALUATIONS, "--out", tmp_path / "a", "--strict")[0] == 3
    assert falsify(capsys, GOOD, "--evaluations", EVALUATIONS, "--out", tmp_path / "b", "--strict")[0] == 1


@pytest.mark.parametrize("claim_id, kind", [("BROKEN.RAISES", KeyError), ("BROKEN.INVALID", InvalidParameterError),
                                            ("BROKEN.COUNT", ValueError)])
def test_raise_re_raises_the_first_failure_as_it_is_after_the_claims_before_it(broken, capsys, tmp_path,
                                                                               claim_id, kind):
    with pytest.raises(kind) as raised:
        main(["falsify", GOOD, claim_id, "TOY.LINE", "--evaluations", EVALUATIONS, "--out", str(tmp_path), "--raise"])
    assert getattr(raised.value, "cflbounds_claim") == claim_id
    written = json.loads((tmp_path / "falsify.json").read_text())
    assert [result["id"] for result in written["results"]] == [GOOD]  # the claim before it; none after


def test_the_users_interrupt_is_never_contained_and_a_claims_own_is(plugins, capsys, tmp_path):
    """A SIGINT (the user's Ctrl-C) during an evaluation stops the run (130); a KeyboardInterrupt
    the evaluation raises itself is that claim's error (3), never taken for the user's key."""
    def interrupted(points, seeds, ctx):
        signal.raise_signal(signal.SIGINT)

    def raises_it(points, seeds, ctx):
        raise KeyboardInterrupt

    plugins(FakeEntryPoint("p", "p", [Claim(f"BROKEN.{name}", "stopped", bound=_one,
                                            domain=Domain([Parameter("x", 0.0, 1.0)], evaluate))
                                      for name, evaluate in (("STOP", interrupted), ("RAISES-KI", raises_it))]))
    assert main(["falsify", "BROKEN.STOP", "--evaluations", "10", "--out", str(tmp_path / "user")]) == 130
    assert main(["falsify", "BROKEN.RAISES-KI", "--evaluations", "10", "--out", str(tmp_path / "own"), "--json"]) == 3
    (result,) = json.loads(capsys.readouterr().out)["results"]
    assert result["outcome"] == "error" and "KeyboardInterrupt" in result["summary"]


@pytest.mark.parametrize("claim_id, words", [
    ("BROKEN.RAISES", "the replay's evaluation raised: KeyError: 'mu' (at "),
    ("BROKEN.NAN", "the replay's contract broken: BROKEN.NAN: evaluate's instance 1 of 1"),
])
def test_replaying_a_failing_claim_is_one_line_and_exit_3(broken, capsys, tmp_path, claim_id, words):
    path = tmp_path / "counterexample.json"
    path.write_text(json.dumps({"id": claim_id, "parameters": {"x": 0.9}, "seed": 1, "ratio": 0.9}))
    assert main(["falsify", "--replay", str(path)]) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"cflbounds falsify: error: {claim_id}: ") and words in err[0], err
    with pytest.raises((KeyError, ValueError)):
        main(["falsify", "--replay", str(path), "--raise"])


@pytest.mark.parametrize("fields, words", [
    ({"parameters": {"x": 2.0, "n": 1}}, "is not a point of its domain"),
    ({"parameters": [0.5, 1]}, "parameters: an array of 2 items is not an object of parameter values"),
    ({"seed": "1"}, "seed: '1' is not a seed (an int in [0, 2**63 - 1])"),
    ({"search_seed": -1}, "search_seed: -1 is not a seed"),
])
def test_replaying_a_damaged_file_is_bad_input_not_the_claims_error(broken, capsys, tmp_path, fields, words):
    path = tmp_path / "counterexample.json"
    path.write_text(json.dumps({"id": GOOD, "parameters": {"x": 0.9, "n": 1}, "seed": 1, "ratio": 1.8, **fields}))
    assert main(["falsify", "--replay", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0], err


def test_the_help_says_what_the_new_options_and_the_exit_statuses_mean(capsys):
    assert main(["falsify", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    for words in ("--resume", "--overwrite", "--raise", "3 a claim's own code failed",
                  "re-raise the first exception of a claim's own code, with its traceback",
                  "replace an earlier run's outputs in --out DIR", "docs/falsify.md"):
        assert words in text, words
