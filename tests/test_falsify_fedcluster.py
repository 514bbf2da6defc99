"""FC.H and FC.T1 searched by `cflbounds falsify` (their domains: cflbounds/verify/fedcluster/domain.py).

Default run: the domains are valid, a point's instance does not depend on its batch, FC.H's
certified ends agree with the closed form of shared Hessians and bracket H at sampled points of
the ball, FC.T1's instance is deterministic gradient descent in closed form when FedCluster has
one cluster and no noise, the search of FC.H ends with no counterexample and best ratio <= 1, a
halved FC.H is falsified, and the counterexample the FC.T1 search ends with violates at a fresh
seed. Slow run: the whole ``falsify_claim`` pipeline on FC.T1 (a confirmed violation from the
search alone) and that counterexample confirmed on 20 fresh seeds.
"""
import math

import numpy as np
import pytest

from cflbounds.bounds import fedcluster as bounds
from cflbounds.falsify import falsify_claim
from cflbounds.falsify import run as falsify_run
from cflbounds.falsify.confirm import confirm
from cflbounds.synthetic.heterogeneity import spread_at
from cflbounds.verify.claim import Claim
from cflbounds.verify.context import VerifyContext
from cflbounds.papers.fedcluster import domain as fc_domain
from cflbounds.verify.registry import get_claim

CTX = VerifyContext(seed=0)
H_POINT = {"devices": 9, "clusters": 3, "groups": 2, "d": 3, "hessians": 0, "partition": 0, "weight_ratio": 5.0,
           "mu_over_L": 0.2, "spread": 0.7, "center_distance": 2.0, "radius": 3.0}
T1_SMALL = {"devices": 4, "clusters": 2, "extra_dimensions": 1, "mass_ratio": 4.0, "L": 0.1, "mu_over_L": 0.5,
            "spread": 0.2, "noise": 0.1, "start_distance": 1.0, "warmup": 2, "E": 2, "T": 5}
# what the FC.T1 search ends with at seed 0 (test_falsify_t1_finds_a_confirmed_violation replays it)
T1_COUNTEREXAMPLE = {"devices": 10, "clusters": 2, "extra_dimensions": 7, "mass_ratio": 48.70684808533486,
                     "L": 0.17545183127816175, "mu_over_L": 0.8729870076510575, "spread": 0.006038265856381317,
                     "noise": 0.026568985428948415, "start_distance": 10.331827629777004, "warmup": 17, "E": 1,
                     "T": 278}


def test_claims_declare_their_domains():
    h, t1 = get_claim("FC.H").validate(), get_claim("FC.T1").validate()
    assert h.domain is fc_domain.H_DOMAIN and h.domain.rule == "deterministic"
    assert t1.domain is fc_domain.T1_DOMAIN and t1.domain.rule == "expectation"
    for claim_id in ("FC.A2", "FC.SPEEDUP", "FC.TRADEOFF"):
        claim = get_claim(claim_id).validate()
        assert claim.domain is None and claim.no_domain and claim.as_dict()["falsify"].startswith("no: ")


@pytest.mark.parametrize("domain", [fc_domain.H_DOMAIN, fc_domain.T1_DOMAIN], ids=["H", "T1"])
def test_parameters_decode_what_they_encode(domain):
    simplest = {p.name: p.simplest for p in domain.parameters}
    domain.check_point(simplest)
    assert domain.decode(domain.encode(simplest)) == pytest.approx(simplest, rel=1e-12)
    assert all(row["holds"] for row in domain.constraint_rows(simplest))
    corners = [domain.decode(np.full(len(domain.parameters), u)) for u in (0.0, 1.0)]
    assert [domain.check_point(c) for c in corners] == [None, None]
    assert {p.name for p in domain.parameters if p.integer} >= {"devices", "clusters"}


@pytest.mark.parametrize("domain, point, other", [
    (fc_domain.H_DOMAIN, H_POINT, {**H_POINT, "hessians": 2, "devices": 5}),
    (fc_domain.T1_DOMAIN, T1_SMALL, {**T1_SMALL, "clusters": 1, "T": 3}),
], ids=["H", "T1"])
def test_an_instance_does_not_depend_on_its_batch(domain, point, other):
    batch = domain.evaluate([other, point], [11, 12], CTX)
    alone = domain.evaluate([point], [12], CTX)[0]
    assert batch[1].measured == alone.measured and batch[1].bound == alone.bound
    assert batch[1].samples == alone.samples and batch[1].details == alone.details
    assert batch[1].assumptions == alone.assumptions
    assert batch[0].measured != alone.measured  # another seed and point: another instance


def test_h_shared_hessians_closed_form():
    """Shared Hessians: every device gradient minus f's is the constant A (b - b_bar), so H is the
    same at every w and both certified ends equal sum_K q_K ||A (b_K - b)||^2 (clusters) and
    sum_k p_k ||A (b_k - b)||^2 (devices), b_K the clusters' p-weighted mean optima."""
    problem, membership, _ = fc_domain.h_problem(H_POINT, 3)
    instance = fc_domain.H_DOMAIN.evaluate([H_POINT], [3], CTX)[0]
    A, optima, p = problem.hessians_exact[0, 0], problem.optima_exact[0], problem.weights
    mean = p @ optima
    q = np.bincount(membership, weights=p)
    cluster_means = np.stack([p[membership == K] @ optima[membership == K] / q[K] for K in range(q.size)])
    H_cluster = sum(q[K] * np.sum((A @ (cluster_means[K] - mean)) ** 2) for K in range(q.size))
    H_device = sum(p[k] * np.sum((A @ (optima[k] - mean)) ** 2) for k in range(p.size))
    d = instance.details
    for end in ("upper", "lower"):
        assert d[f"H_cluster_{end}"] == pytest.approx(H_cluster, rel=1e-10)
        assert d[f"H_device_{end}"] == pytest.approx(H_device, rel=1e-10)
    assert d["rounding_allowance"] == 1e-12 * d["gradient_scale"]
    assert instance.measured == d["H_cluster_upper"]
    assert instance.bound == d["H_device_lower"] + d["rounding_allowance"]
    assert 0 < instance.ratio < 1 and instance.admissible


@pytest.mark.parametrize("hessians", [1, 2], ids=["cluster", "client"])
def test_h_certified_ends_bracket_the_ball(hessians):
    """Unequal Hessians: H_cluster at 2000 points of the ball (on its sphere, where a convex
    quadratic peaks) never exceeds the certified upper end and comes within 5 % of the lower end;
    the same for H_device; the rounding allowance's gradient scale bounds sum_k p_k ||grad f_k||^2."""
    point = {**H_POINT, "hessians": hessians}
    problem, membership, center = fc_domain.h_problem(point, 7)
    instance = fc_domain.H_DOMAIN.evaluate([point], [7], CTX)[0]
    directions = np.random.default_rng(0).standard_normal((2000, problem.d))
    sphere = center + point["radius"] * directions / np.linalg.norm(directions, axis=1, keepdims=True)
    cluster, device = spread_at(problem.client_gradients(sphere[None]), problem.weights, membership)
    d = instance.details
    assert cluster.max() <= d["H_cluster_upper"] * (1 + 1e-12)
    assert device.max() <= d["H_device_upper"] * (1 + 1e-12)
    assert d["H_cluster_lower"] <= d["H_cluster_upper"] <= d["H_cluster_lower"] * (1 + 1e-12)
    assert cluster.max() >= 0.95 * d["H_cluster_lower"] and device.max() >= 0.95 * d["H_device_lower"]
    second_moment = np.einsum("bpnd,n->bp", np.square(problem.client_gradients(sphere[None])), problem.weights)
    assert second_moment.max() <= d["gradient_scale"]
    assert instance.ratio < 1


def test_h_equality_when_every_device_is_its_own_cluster():
    """M = n: H_cluster is H_device, the worst case of FC.H; the two certified ends of the same sup
    agree to a few ulps, inside the domain's tolerance."""
    point = {**H_POINT, "clusters": H_POINT["devices"], "hessians": 2}
    instance = fc_domain.H_DOMAIN.evaluate([point], [5], CTX)[0]
    d = instance.details
    assert d["H_cluster_upper"] == pytest.approx(d["H_device_lower"], rel=1e-14)
    assert 1 - 1e-11 < fc_domain.H_DOMAIN.ratio(instance) <= 1


def test_h_rounding_where_h_is_zero_is_not_a_violation():
    """One cluster (H_cluster = 0) of two devices in d = 1: where both optima fall on the same side
    of the center, H_device is 0 too, and both certified ends come out as rounding (~1e-32): the
    default-budget search at seed 0 reported that as a violation before the rounding allowance."""
    point = {"devices": 2, "clusters": 1, "groups": 1, "d": 1, "hessians": 0, "partition": 0, "weight_ratio": 270.0,
             "mu_over_L": 1.0, "spread": 1.0, "center_distance": 1.0, "radius": 1.0}
    instances = fc_domain.H_DOMAIN.evaluate([point] * 20, list(range(20)), CTX)
    rounding = [i for i in instances if i.measured > i.details["H_device_lower"]]
    assert rounding and all(i.measured < 1e-20 for i in rounding)  # the artefact is there, at rounding size
    assert all(fc_domain.H_DOMAIN.ratio(i) < 1e-3 for i in instances)


def test_h_search_finds_no_counterexample():
    result = falsify_claim("FC.H", seed=0, budget=None, max_evaluations=300)
    assert result["outcome"] == "no counterexample found" and not result["confirmation"]["violated"]
    assert 0.99 < result["best_ratio"] <= 1  # the search reaches the equality M = n, never beyond
    best = result["search"]["best"]["parameters"]
    assert best["clusters"] == best["devices"]


def test_planted_halved_h_is_falsified(monkeypatch):
    planted = fc_domain.h_domain(0.5)
    monkeypatch.setattr(falsify_run, "get_claim", lambda claim_id: Claim(claim_id, "planted", domain=planted))
    result = falsify_claim("FC.H-PLANTED", seed=0, budget=None, max_evaluations=12)
    assert result["outcome"] == "violated" and result["confirmation"]["violated"]
    example = result["counterexample"]
    assert example["ratio"] > 1 and example["parameters"]["clusters"] > 1


def test_t1_one_cluster_without_noise_is_gradient_descent():
    """M = 1, E = 1, tau = 0: every run is W <- W - eta A (W - w*) with eta = 1/sqrt(T), so
    measured = (1/T) sum_{j<T} ||A (I - eta A)^j (W_0 - w*)||^2 on every run, and the bound is
    2 C/sqrt(T) with C = 2 (f(W_0) - f*) (H_cluster = 0, no variance); G^2 = the largest
    ||A (W_j - b_k)||^2 over the rounds j < T and devices k."""
    point = {**T1_SMALL, "clusters": 1, "E": 1, "noise": 0.0, "T": 40, "warmup": 0}
    instance = fc_domain.T1_DOMAIN.evaluate([point], [9], CTX)[0]
    problems = fc_domain.t1_problem(point, 9, count=fc_domain.PROBLEMS)
    w0 = fc_domain.initial_models(problems, point, 9)
    eta, T = 1 / math.sqrt(point["T"]), point["T"]
    measured, bounds_by_hand, largest_me = [], [], []
    for b in range(fc_domain.PROBLEMS):
        A, w_star, optima = problems.hessians_exact[b, 0], problems.global_minimizer[b], problems.optima_exact[b]
        error, norms, g2 = w0[b] - w_star, [], 0.0
        for _ in range(T):
            norms.append(np.sum((A @ error) ** 2))
            g2 = max(g2, max(np.sum((A @ (error + w_star - optimum)) ** 2) for optimum in optima))
            error = error - eta * A @ error
        gap = 0.5 * (w0[b] - w_star) @ A @ (w0[b] - w_star)
        measured.append(np.mean(norms))
        bounds_by_hand.append(4 * gap / math.sqrt(T))
        largest_me.append(2 * gap / (8 * point["L"] * g2))
    d = instance.details
    assert d["measured_per_problem"] == pytest.approx(measured, rel=1e-9)
    assert d["bound_per_problem"] == pytest.approx(bounds_by_hand, rel=1e-9)
    assert d["largest_ME_per_problem"] == pytest.approx(largest_me, rel=1e-9)
    assert d["H_cluster_per_problem"] == pytest.approx([0.0] * fc_domain.PROBLEMS, abs=1e-15)
    assert all(np.ptp(instance.samples[i:i + fc_domain.REPLICAS]) < 1e-12 * max(instance.samples)
               for i in range(0, len(instance.samples), fc_domain.REPLICAS))


def test_t1_instance_is_theorem1_at_its_constants():
    """Each problem's bound is the toolkit's Theorem 1 at the constants the instance reports; the
    instance's bound is the mean over the problems meeting the conditions, its measured the mean of
    their runs."""
    instance = fc_domain.T1_DOMAIN.evaluate([T1_SMALL], [4], CTX)[0]
    d = instance.details
    kept = [i for i, ok in enumerate(d["meets_conditions_per_problem"]) if ok]
    for i in range(fc_domain.PROBLEMS):
        result = bounds.theorem1(L=d["L_per_problem"][i], E=T1_SMALL["E"], M=T1_SMALL["clusters"], T=T1_SMALL["T"],
                                 initial_gap=d["initial_gap_per_problem"][i], H_cluster=d["H_cluster_per_problem"][i],
                                 variance=d["variance_per_problem"][i], G=math.sqrt(d["G2_per_problem"][i]))
        assert d["bound_per_problem"][i] == result.value
        assert d["largest_ME_per_problem"][i] == result.derived["largest_ME"]
        assert d["meets_conditions_per_problem"][i] == result.assumptions_hold
    assert d["L_per_problem"] == pytest.approx([T1_SMALL["L"]] * fc_domain.PROBLEMS, rel=1e-12)
    assert instance.admissible == bool(kept) and d["problems_kept"] == len(kept)
    if kept:
        assert instance.bound == pytest.approx(np.mean([d["bound_per_problem"][i] for i in kept]), rel=1e-15)
        assert len(instance.samples) == fc_domain.REPLICAS * len(kept)
        assert instance.measured == pytest.approx(np.mean(instance.samples), rel=1e-15)


def test_t1_counterexample_violates_at_a_fresh_seed():
    """The counterexample of the seed-0 search (cheap: one instance; the slow tests confirm it on
    20 fresh seeds): unequal cluster masses, one local step, a start pre-trained by FedCluster."""
    instance = fc_domain.T1_DOMAIN.evaluate([T1_COUNTEREXAMPLE], [2024], CTX)[0]
    assert instance.admissible and instance.ratio > 1.3, instance.details
    assert instance.details["problems_kept"] >= 2


@pytest.mark.slow
def test_t1_counterexample_confirms_on_fresh_seeds():
    confirmation = confirm(fc_domain.T1_DOMAIN, CTX, T1_COUNTEREXAMPLE, seed=0)
    assert confirmation.violated, confirmation.summary


@pytest.mark.slow
def test_falsify_t1_finds_a_confirmed_violation():
    """The search alone, 220 evaluations at seed 0 (its first violating point is evaluation 207)."""
    result = falsify_claim("FC.T1", seed=0, budget=None, max_evaluations=220)
    assert result["outcome"] == "violated" and result["confirmation"]["violated"], result["summary"]
    example = result["counterexample"]
    assert example["parameters"] == T1_COUNTEREXAMPLE
    replayed = fc_domain.T1_DOMAIN.evaluate([example["parameters"]], [example["seed"]], CTX)[0]
    assert replayed.ratio == example["ratio"] and replayed.ratio > 1
