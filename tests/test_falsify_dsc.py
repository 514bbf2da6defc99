"""DSC.T1 and DSC.E14 searched by `cflbounds falsify` (their domains: cflbounds/verify/dsc/domain.py).

Default run: the domains are valid, a point's instance does not depend on its batch, an instance
agrees with the closed form of identical clients (where DSC is gradient descent with factor
``1 - lambda L`` and Theorem 1's A falls below it), the search finds T1's violation in its first
generation, the counterexamples the search ends with violate at a fresh seed, and a halved bound
fails where the true one holds. Slow run: the whole ``falsify_claim`` pipeline on both claims, their
counterexamples confirmed on 20 fresh seeds, and the planted error searched on a sub-domain where T1 holds.
"""
import dataclasses
import math

import numpy as np
import pytest

from cflbounds.bounds import dsc as bounds
from cflbounds.falsify import falsify_claim
from cflbounds.falsify import run as falsify_run
from cflbounds.falsify.confirm import confirm
from cflbounds.falsify.search import search
from cflbounds.verify.claim import Claim
from cflbounds.verify.context import VerifyContext
from cflbounds.papers.dsc import domain as dsc_domain
from cflbounds.verify.registry import get_claim

CTX = VerifyContext(seed=0)
SMALL = {"clients": 3, "d": 2, "labels": 2, "L": 1.0, "mu_over_L": 0.2, "step_fraction": 0.3, "T": 3}
# all Hessians L I: every client's gradient is L (w - w*), so the aggregate is too (the weights sum to 1)
IDENTICAL = {"clients": 4, "d": 3, "labels": 1, "L": 2.0, "mu_over_L": 1.0, "step_fraction": 0.05, "T": 4}
# what the search ends with at seed 0 (tests/test_falsify_dsc.py::test_falsify_* replays the search)
T1_COUNTEREXAMPLE = {"clients": 2, "d": 2, "labels": 1, "L": 1.0, "mu_over_L": 0.1, "step_fraction": 0.5,
                     "noise_scale": 0.01, "T": 1}
E14_COUNTEREXAMPLE = {"clients": 3, "d": 2, "labels": 1, "L": 1.0, "mu_over_L": 0.1, "step_fraction": 0.5, "T": 20}


def test_claims_declare_their_domains():
    t1, e14 = get_claim("DSC.T1").validate(), get_claim("DSC.E14").validate()
    assert t1.domain is dsc_domain.T1_DOMAIN and t1.domain.rule == "expectation"
    assert e14.domain is dsc_domain.E14_DOMAIN and e14.domain.rule == "deterministic"
    for claim_id in ("DSC.A1-4", "DSC.ACC"):
        claim = get_claim(claim_id).validate()
        assert claim.domain is None and claim.no_domain and claim.as_dict()["falsify"].startswith("no: ")


@pytest.mark.parametrize("domain", [dsc_domain.T1_DOMAIN, dsc_domain.E14_DOMAIN], ids=["T1", "E14"])
def test_parameters_decode_what_they_encode(domain):
    simplest = {p.name: p.simplest for p in domain.parameters}
    domain.check_point(simplest)
    assert domain.decode(domain.encode(simplest)) == pytest.approx(simplest, rel=1e-12)
    corners = [domain.decode(np.full(len(domain.parameters), u)) for u in (0.0, 1.0)]
    assert [domain.check_point(c) for c in corners] == [None, None]
    assert all(row["holds"] for c in corners for row in domain.constraint_rows(c))
    assert [p.integer for p in domain.parameters if p.name in ("clients", "d", "labels", "T")] == [True] * 4


def test_an_instance_does_not_depend_on_its_batch():
    domain = dsc_domain.T1_DOMAIN
    other = {**SMALL, "noise_scale": 0.1, "clients": 5}
    point = {**SMALL, "noise_scale": 0.01}
    batch = domain.evaluate([other, point], [11, 12], CTX)
    alone = domain.evaluate([point], [12], CTX)[0]
    assert batch[1].samples == alone.samples and batch[1].bound == alone.bound
    assert batch[1].details == alone.details and batch[1].assumptions == alone.assumptions
    assert batch[0].samples != alone.samples  # another seed and point: another instance


def test_identical_clients_closed_form():
    """Identical clients (labels = 1, mu = L): delta = 1 and, in the ideal channel, w - w* shrinks by
    exactly 1 - lambda L a round, so E14's rate is (1 - lambda L)^2, while Theorem 1's
    A = 1 - 2 lambda L + (lambda L)^2 W lies below it whenever W < 1: T1 fails at any step size."""
    e14 = dsc_domain.E14_DOMAIN.evaluate([IDENTICAL], [5], CTX)[0]
    d = e14.details
    assert e14.admissible and d["delta_intra2"] == pytest.approx(1.0) and d["delta_inter2"] == pytest.approx(1.0)
    assert d["mu"] == pytest.approx(d["L"]) and d["L"] == pytest.approx(IDENTICAL["L"])
    lam_L = d["lambda_L"]
    assert e14.measured == pytest.approx((1 - lam_L) ** 2, rel=1e-9)
    assert d["A"] == pytest.approx(1 - 2 * lam_L + lam_L**2 * d["W"], rel=1e-12)
    assert d["threshold"] == pytest.approx(2 / (d["L"] * d["W"]), rel=1e-6)  # delta = 1, up to the 8 digits kept
    assert 0 < d["W"] < 1 and d["A"] < e14.measured  # the flaw, in closed form

    t1 = dsc_domain.T1_DOMAIN.evaluate([{**IDENTICAL, "noise_scale": 1e-4}], [5], CTX)[0]
    d, T = t1.details, IDENTICAL["T"]
    A = 1 - 2 * d["lambda_L"] + d["lambda_L"] ** 2 * d["W"]
    by_hand = A**T * d["initial_gap"] + d["L"] * d["lambda"] ** 2 / 2 * d["N"] * (1 - A**T) / (1 - A)
    assert t1.bound == pytest.approx(by_hand, rel=1e-9)
    noise_free = (1 - d["lambda_L"]) ** (2 * T) * d["initial_gap"]
    assert t1.measured == pytest.approx(noise_free, rel=1e-2)  # the noise at scale 1e-4 is a small addition
    assert t1.admissible and t1.ratio > 1


def test_instance_is_theorem1_at_its_constants():
    """The bound is the toolkit's Theorem 1 at the constants the instance reports; the rows hold."""
    instance = dsc_domain.T1_DOMAIN.evaluate([{**SMALL, "noise_scale": 0.05}], [3], CTX)[0]
    d = instance.details
    result = bounds.theorem1(initial_gap=d["initial_gap"], L=d["L"], mu=d["mu"], learning_rate=d["lambda"],
                             delta_inter=math.sqrt(d["delta_inter2"]), delta_intra=math.sqrt(d["delta_intra2"]),
                             weight_factor=d["W"], noise_factor=d["N"], iterations=SMALL["T"])
    assert instance.bound == result.value and d["A"] == result.derived["A"]
    assert instance.measured == pytest.approx(np.mean(instance.samples)) and len(instance.samples) == 16
    assert {row["source"] for row in instance.assumptions} >= {"DSC A1-A2", "DSC A4", "DSC Theorem 1"}
    assert instance.admissible


def test_search_finds_t1_violated_in_its_first_generation():
    found = search(dsc_domain.T1_DOMAIN, CTX, seed=0, max_evaluations=6)
    assert found.evaluations == 6 and found.best is not None and found.best.score > 0


@pytest.mark.parametrize("claim_id, point", [("DSC.T1", T1_COUNTEREXAMPLE), ("DSC.E14", E14_COUNTEREXAMPLE)])
def test_counterexamples_violate_at_a_fresh_seed(claim_id, point):
    """The shrunk points of the seed-0 searches (cheap: one instance; the slow test confirms them on
    20 fresh seeds): T1 with lambda L < 2, E14 with the gap growing where eq. (14) admits the step."""
    instance = get_claim(claim_id).domain.evaluate([point], [2024], CTX)[0]
    assert instance.admissible and instance.ratio > 1, instance.details
    if claim_id == "DSC.T1":
        assert instance.details["lambda_L"] < 2 and 0 <= instance.details["A"] < 1


@pytest.mark.slow
@pytest.mark.parametrize("claim_id, point", [("DSC.T1", T1_COUNTEREXAMPLE), ("DSC.E14", E14_COUNTEREXAMPLE)])
def test_counterexamples_confirm_on_fresh_seeds(claim_id, point):
    confirmation = confirm(get_claim(claim_id).domain, CTX, point, seed=0)
    assert confirmation.violated and confirmation.inadmissible == 0, confirmation.summary


def _narrowed(parameters, **ranges):
    return [dataclasses.replace(p, **ranges[p.name]) if p.name in ranges else p for p in parameters]


# a sub-domain where Theorem 1 holds (W >= 1/4 > mu/L and lambda L <= 0.8): measured 80 evaluations, best
# ratio 0.999; with the bound halved the search falsifies it at once
HOLDS = _narrowed(dsc_domain.T1_PARAMETERS, clients={"high": 4}, mu_over_L={"high": 0.1, "simple": 0.1},
                  step_fraction={"high": 0.1, "simple": 0.05}, d={"high": 4}, T={"high": 20})


def _falsify_with(monkeypatch, domain, evaluations):
    monkeypatch.setattr(falsify_run, "get_claim", lambda claim_id: Claim(claim_id, "planted", domain=domain))
    return falsify_claim("DSC.T1-SUBDOMAIN", seed=0, budget=None, max_evaluations=evaluations)


@pytest.mark.slow
def test_planted_halved_bound_is_falsified(monkeypatch):
    holds = _falsify_with(monkeypatch, dsc_domain.t1_domain(parameters=HOLDS), 20)
    assert holds["outcome"] == "no counterexample found"
    planted = _falsify_with(monkeypatch, dsc_domain.t1_domain(0.5, parameters=HOLDS), 6)
    assert planted["outcome"] == "violated" and planted["confirmation"]["violated"]


def test_planted_halved_bound_fails_where_the_bound_holds():
    """The cheap half of the planted test: at the sub-domain's simplest point the true bound holds
    and the halved one does not, on three seeds."""
    point = {p.name: p.simplest for p in HOLDS}
    true = dsc_domain.t1_domain(parameters=HOLDS).evaluate([point] * 3, [1, 2, 3], CTX)
    planted = dsc_domain.t1_domain(0.5, parameters=HOLDS).evaluate([point] * 3, [1, 2, 3], CTX)
    assert all(i.admissible and i.ratio < 1 for i in true), [i.ratio for i in true]
    assert all(p.bound == 0.5 * t.bound and p.samples == t.samples and p.ratio > 1 for p, t in zip(planted, true))


@pytest.mark.slow
@pytest.mark.parametrize("claim_id, shrunk", [("DSC.T1", T1_COUNTEREXAMPLE), ("DSC.E14", E14_COUNTEREXAMPLE)])
def test_falsify_finds_a_confirmed_violation(claim_id, shrunk):
    result = falsify_claim(claim_id, seed=0, budget=None, max_evaluations=6)
    assert result["outcome"] == "violated" and result["confirmation"]["violated"]
    assert result["counterexample"]["parameters"] == shrunk
    replayed = get_claim(claim_id).domain.evaluate([shrunk], [result["counterexample"]["seed"]], CTX)[0]
    assert replayed.ratio == result["counterexample"]["ratio"]
