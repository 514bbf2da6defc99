"""The Domain contract is checked on every evaluation (cflbounds/verify/contract.py): a malformed
evaluation or constraint row, generated here by hypothesis, ends its claim with exactly one clear
``error`` naming the claim and the broken rule, on the call that breaks it, while another claim's
result in the same run is unchanged; legitimate edge cases (an overflowed bound, a diverged run,
an inadmissible instance that measured nothing) pass."""
from __future__ import annotations

import dataclasses
import math
from typing import Callable, NamedTuple

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given
from hypothesis import strategies as st

from cflbounds.claims import Claim, Domain, Inequality, Instance, Parameter, validate_params
from cflbounds.falsify import falsify_claim
from cflbounds.verify.context import VerifyContext
from cflbounds.verify.contract import checked_evaluate
from cflbounds.verify.failure import ContractError
from conftest import FakeEntryPoint, examples
from test_falsify import TOYS

GOOD = "TOY.STEEP"  # violated, shrunk and confirmed: every stage of the other claim runs
TIMING = {"seconds", "search_seconds", "summary", "counterexample_file"}


def without_timing(value):
    """A result without what depends on the clock (or the output directory)."""
    if isinstance(value, dict):
        return {key: without_timing(item) for key, item in value.items() if key not in TIMING}
    return [without_timing(item) for item in value] if isinstance(value, list) else value


@validate_params({})
def _one():
    return 1.0


def _row(x: float) -> dict:
    return Inequality("x <= 1", x, 1.0, "<=", "the toy's assumption").as_dict()


def valid_instance(rule: str, point: dict, seed: int) -> Instance:
    """A well-formed, admissible instance of ``rule`` at ``point``."""
    x = point["x"]
    if rule == "probability":
        hits = int(round(10 * x))
        return Instance(hits / 10, 0.5, [_row(x)], exceedances=hits, trials=10, margin=x)
    if rule == "expectation":
        samples = [x + 0.01 * (seed % 7), x - 0.01 * (seed % 7), x]
        return Instance(float(np.mean(samples)), 1.0, [_row(x)], samples=samples)
    return Instance(x, 1.0, [_row(x)], details={"x": x})


class Breakage(NamedTuple):
    """What ``target`` (``evaluate`` or ``constraints``) returns from call ``call`` on:
    ``mutate(valid result)``; ``words``: what the error must say (the broken rule)."""

    rule: str
    target: str
    mutate: Callable
    words: str
    call: int = 1


class Planted:
    """The breakage in force (one per hypothesis example) and the calls counted so far."""

    breakage: Breakage | None = None
    calls = 0


def _domain(rule: str) -> Domain:
    def evaluate(points, seeds, ctx):
        instances = [valid_instance(rule, p, s) for p, s in zip(points, seeds)]
        return _planted("evaluate", instances)

    def constraints(point):
        return _planted("constraints", [_row(point["x"])])

    return Domain([Parameter("x", 0.0, 1.0)], evaluate, rule=rule, constraints=constraints)


def _planted(target: str, valid):
    breakage = Planted.breakage
    if breakage is None or breakage.target != target:
        return valid
    Planted.calls += 1
    return breakage.mutate(valid) if Planted.calls >= breakage.call else valid


BAD = {rule: f"BAD.{rule.upper()}" for rule in ("deterministic", "expectation", "probability")}


@pytest.fixture
def bad_claims(plugins):
    """BAD.<RULE> claims whose domain breaks as :class:`Planted` says, beside the good claim;
    returns the good claim's result in a run without them."""
    claims = [Claim(claim_id, "a claim whose evaluation breaks the contract", bound=_one, domain=_domain(rule))
              for rule, claim_id in BAD.items()]
    claims.append(Claim(GOOD, "measured 2x against the bound 1", bound=_one, domain=TOYS[GOOD]))
    plugins(FakeEntryPoint("bad-plugin", "bad", claims))
    Planted.breakage = None
    yield falsify_claim(GOOD, seed=0, budget=None, max_evaluations=40)
    Planted.breakage = None


# -- the breakages --------------------------------------------------------------------------------
def _at(position: int, **fields):
    """Replace instance ``position`` (modulo their count) by a copy with ``fields``."""
    def mutate(instances):
        instances = list(instances)
        i = position % len(instances)
        instances[i] = dataclasses.replace(instances[i], **fields)
        return instances
    return mutate


def _put(position: int, value):
    def mutate(instances):
        instances = list(instances)
        instances[position % len(instances)] = value
        return instances
    return mutate


def _recount(change: int):
    """``change`` instances more (or fewer, down to none) than points."""
    return lambda instances: (instances * 8)[:max(len(instances) + change, 0)]


def _shifted(field: str, delta: float):
    return lambda instances: [dataclasses.replace(instances[0], **{field: getattr(instances[0], field) + delta}),
                              *instances[1:]]


RULES = st.sampled_from(tuple(BAD))
POSITION = st.integers(0, 20)
CALL = st.integers(1, 3)
NOT_A_NUMBER = st.one_of(st.just(math.nan), st.just(-math.inf), st.booleans(), st.none(), st.text(max_size=3),
                         st.just(np.array(0.5)), st.just(torch.tensor(0.5)))
BAD_ROWS = [("rows", "assumptions is"), (["a row"], "assumption row 1 is"),
            ([{"holds": True}], "lacks name, lhs, relation, rhs, slack"),
            ([{**_row(0.5), "holds": "yes"}], "holds is"), ([{**_row(0.5), "relation": "=<"}], "relation '=<'"),
            ([{**_row(0.5), "lhs": "0.5"}], "lhs is"), ([{**_row(0.5), "name": 3}], "its name is")]


def _exceedance_words(value) -> str:
    return "0 <= exceedances <= trials" if isinstance(value, int) else "exceedances is"


BREAKAGES = st.one_of(
    st.builds(lambda rule, change, call: Breakage(rule, "evaluate", _recount(change),
                                                  "(the Domain contract: one Instance per point)", call),
              RULES, st.integers(-6, 6).filter(bool), CALL),
    st.builds(lambda rule, wrap, call: Breakage(rule, "evaluate", wrap, "expected a list of Instance", call),
              RULES, st.sampled_from([lambda xs: (x for x in xs), lambda xs: None, lambda xs: dict(enumerate(xs))]),
              CALL),
    st.builds(lambda rule, i, value, call: Breakage(rule, "evaluate", _put(i, value),
                                                    "expected a cflbounds.claims.Instance", call),
              RULES, POSITION, st.one_of(st.none(), st.floats(), st.just({"measured": 0.5, "bound": 1.0})), CALL),
    st.builds(lambda field, i, value, call: Breakage("deterministic", "evaluate", _at(i, **{field: value}),
                                                     f"{field} is", call),
              st.sampled_from(["measured", "bound"]), POSITION, NOT_A_NUMBER, CALL),
    st.builds(lambda rule, i, value, call: Breakage(rule, "evaluate", _at(i, details=value), "details is", call),
              RULES, POSITION, st.one_of(st.none(), st.lists(st.integers(), max_size=2), st.text(max_size=3)), CALL),
    st.builds(lambda rule, i, value, call: Breakage(rule, "evaluate", _at(i, margin=value), "margin is", call),
              RULES, POSITION, st.one_of(st.text(max_size=3), st.just([1.0]), st.booleans()), CALL),
    st.builds(lambda rule, i, bad, call: Breakage(rule, "evaluate", _at(i, assumptions=bad[0]), bad[1], call),
              RULES, POSITION, st.sampled_from(BAD_ROWS), CALL),
    st.builds(lambda rule, bad, call: Breakage(rule, "constraints", lambda rows: bad[0], bad[1], call),
              RULES, st.sampled_from([("rows", "returned a str ('rows'), expected a list of assumption rows"),
                                      (None, "returned None, expected a list of assumption rows"), *BAD_ROWS[1:]]),
              CALL),
    # probability: counts, the allowed probability, the frequency
    st.builds(lambda i, value, call: Breakage("probability", "evaluate", _at(i, exceedances=value),
                                              _exceedance_words(value), call),
              POSITION, st.one_of(st.integers(-5, -1), st.integers(11, 60), st.floats(0.5, 5), st.none()), CALL),
    st.builds(lambda i, call: Breakage("probability", "evaluate", _at(i, exceedances=0, trials=0, measured=0.0),
                                       "0 trials at an admissible instance", call), POSITION, CALL),
    st.builds(lambda i, value, call: Breakage("probability", "evaluate", _at(i, bound=value),
                                              "an allowed probability is >= 0", call),
              POSITION, st.floats(-10, -1e-9), CALL),
    st.builds(lambda delta, call: Breakage("probability", "evaluate", _shifted("measured", delta),
                                           "is not the frequency", call), st.floats(0.01, 0.5), CALL),
    # expectation: the samples and their mean
    st.builds(lambda i, call: Breakage("expectation", "evaluate", _at(i, samples=None), "no samples", call),
              POSITION, CALL),
    st.builds(lambda i, bad, call: Breakage("expectation", "evaluate", _at(i, samples=bad[0]), bad[1], call),
              POSITION, st.sampled_from([([], "empty samples"), ([0.5, math.nan], "sample 2 of 2 is nan"),
                                         ([-math.inf], "sample 1 of 1 is -inf"), (["0.5"], "samples is"),
                                         ("0.5", "samples is")]), CALL),
    st.builds(lambda delta, call: Breakage("expectation", "evaluate", _shifted("measured", delta),
                                           "is not the mean of its 3 samples", call), st.floats(0.01, 0.5), CALL),
)


@given(breakage=BREAKAGES)
@examples(150, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_a_malformed_evaluation_is_one_clear_error_and_the_other_claim_is_unchanged(bad_claims, breakage):
    claim_id = BAD[breakage.rule]
    Planted.breakage, Planted.calls = breakage, 0
    broken = falsify_claim(claim_id, seed=0, budget=None, max_evaluations=12)
    Planted.breakage = None
    other = falsify_claim(GOOD, seed=0, budget=None, max_evaluations=40)
    error = broken["error"]
    assert broken["outcome"] == "error" and broken["counterexample"] is None
    assert (error["stage"], error["kind"]) == ("contract", "ContractError")
    message = error["message"]
    assert message.startswith(f"{claim_id}: ") and breakage.words in message and "\n" not in message
    assert broken["summary"].startswith("error: contract broken: " + claim_id)
    assert broken["evaluations"] < 12  # it ended at the call that broke the contract
    assert without_timing(other) == without_timing(bad_claims)


# -- what passes ----------------------------------------------------------------------------------
def _check(rule: str, instance: Instance) -> Instance:
    domain = Domain([Parameter("x", 0.0, 1.0)], lambda points, seeds, ctx: [instance], rule=rule)
    return checked_evaluate(domain, [{"x": 0.5}], [0], VerifyContext(), "TOY.EDGE")[0]


@pytest.mark.parametrize("rule, instance", [
    ("deterministic", Instance(0.5, math.inf, [_row(0.5)])),  # an overflowed bound: promises nothing
    ("deterministic", Instance(math.inf, 1.0, [_row(0.5)])),  # a diverged run: exceeds every finite bound
    ("deterministic", Instance(np.float32(0.5), np.int64(1), [_row(0.5)], margin=math.nan)),
    ("deterministic", Instance(math.nan, math.nan, [_row(2.0)])),  # inadmissible: nothing was measured
    ("probability", Instance(math.nan, 0.5, [_row(2.0)], exceedances=0, trials=0)),  # inadmissible, nothing run
    ("probability", Instance(3 / 7, 1.5, [_row(0.5)], exceedances=np.int64(3), trials=7)),  # allowed > 1: vacuous
    ("probability", Instance(np.float32(1 / 3), 0.5, [_row(0.5)], exceedances=1, trials=3)),  # a float32 frequency
    ("expectation", Instance(math.inf, 1.0, [_row(0.5)], samples=[1.0, math.inf])),  # a diverged trial
    ("expectation", Instance(0.5, 1.0, [_row(0.5)], samples=np.array([0.25, 0.75]))),
    ("expectation", Instance(0.5, 1.0, [Inequality("x <= 1", [0.2, 0.5], [1.0, 1.0], "<=", "rows of arrays").as_dict()],
                             samples=[0.5])),
])
def test_legitimate_edge_cases_keep_the_contract(rule, instance):
    assert _check(rule, instance) is instance


def test_a_ratio_against_an_overflowed_bound_is_zero_even_for_a_diverged_run():
    domain = Domain([Parameter("x", 0.0, 1.0)], lambda *a: [])
    assert domain.ratio(Instance(math.inf, math.inf)) == 0.0 == domain.ratio(Instance(5.0, math.inf))
    assert domain.score(Instance(math.inf, math.inf)) == -math.inf  # never a violation
    assert domain.ratio(Instance(math.inf, 2.0)) == math.inf


def test_the_contract_error_names_the_claim_the_counts_and_the_rule():
    domain = Domain([Parameter("x", 0.0, 1.0)], lambda points, seeds, ctx: [Instance(0.5, 1.0)])
    with pytest.raises(ContractError) as caught:
        checked_evaluate(domain, [{"x": 0.1 * i} for i in range(6)], list(range(6)), VerifyContext(), "FOO.BAR")
    assert str(caught.value) == ("FOO.BAR: evaluate returned 1 instance for 6 points (the Domain contract: one "
                                 "Instance per point)")


def test_the_plugin_api_offers_the_searchs_checked_evaluation_with_a_default_context():
    """``cflbounds.claims.checked_evaluate`` (docs/own-theorem.md) is the engine's function, and
    without a context it evaluates at the default scale, seed 0, on the CPU."""
    import cflbounds.claims

    seen = []
    good = Instance(0.5, 1.0, [_row(0.5)])
    domain = Domain([Parameter("x", 0.0, 1.0)], lambda points, seeds, ctx: seen.append(ctx) or [good] * len(points))
    assert cflbounds.claims.checked_evaluate is checked_evaluate
    assert cflbounds.claims.checked_evaluate(domain, [{"x": 0.5}, {"x": 0.25}], seeds=[0, 1]) == [good, good]
    assert (seen[0].scale, seen[0].seed, seen[0].device) == (VerifyContext().scale, 0, "cpu")
