"""CFL's claims (cflbounds/papers/cfl): the quantities they judge against straightforward
computations, each claim's smoke verdict, and planted wrong constants flagged."""
from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd
import pytest

from cflbounds.bounds import cfl as bounds
from cflbounds.papers.admissible import judged
from cflbounds.papers.cfl import checks, runs
from cflbounds.papers.cfl.domain import C1_CODE_DOMAIN, C1_DOMAIN, FOLLOWS_DOMAIN, SPLIT_DOMAIN, T1_DOMAIN
from cflbounds.verify.context import VerifyContext


@pytest.fixture(scope="module")
def ctx():
    return VerifyContext(scale="smoke", seed=0, device="cpu")


def _brute(alpha, membership, gamma, k):
    """Theorem 1's quantities by loops over pairs and every bipartition."""
    m = len(membership)
    best = min(max(alpha[i, j] for i in range(m) for j in range(m) if (i in part) and (j not in part))
               for size in range(1, m) for part in map(set, combinations(range(m), size)))
    pairs = [(i, j) for i in range(m) for j in range(m) if i != j]
    H = {(i, j): -gamma[i] * gamma[j] + np.sqrt(1 - gamma[i] ** 2) * np.sqrt(1 - gamma[j] ** 2) for i, j in pairs}
    intra = [(i, j) for i, j in pairs if membership[i] == membership[j]]
    cross = min(H[p] for p in pairs if p not in intra)
    angle = np.pi / (k - 1)
    ceiling = 1.0 if cross < np.cos(angle) else np.cos(angle) * cross + np.sin(angle) * np.sqrt(1 - cross**2)
    return {"alpha_cross_max": best, "alpha_intra_min": min(alpha[p] for p in intra),
            "intra_floor": min(H[p] for p in intra), "cross_bound": -cross if k == 2 else ceiling}


@pytest.mark.parametrize("k, per, direction", [(2, 3, "adversarial"), (3, 2, "random"), (4, 2, "adversarial")])
def test_separation_against_loops(k, per, direction):
    problem, = runs.problems([11], k=k, clients=k * per, d=5, mu_over_L=0.2, hessian_spread=0.5, gamma=0.4,
                             gamma_spread=0.5, direction=direction)
    gamma = problem.realised_relative_errors[0]
    values = runs.separation(problem.similarities[0], problem.membership[0], gamma, k, checks.METHODS)
    for name, expected in _brute(problem.similarities[0], problem.membership[0], gamma, k).items():
        assert values[name] == pytest.approx(expected, rel=1e-12, abs=1e-12), name
    assert values["cross_exact"] == pytest.approx(values["alpha_cross_max"], abs=1e-15)


def test_the_gammas_are_set_exactly():
    problem, = runs.problems([5], k=3, clients=6, d=4, mu_over_L=0.5, hessian_spread=0.0, gamma=0.6, gamma_spread=0.5,
                             direction="random")
    np.testing.assert_allclose(problem.realised_relative_errors[0], runs.gammas(5, 6, 0.6, 0.5), rtol=1e-12)
    assert np.all(runs.gammas(5, 6, 0.6, 0.5) <= 0.6) and np.all(runs.gammas(5, 6, 0.6, 0.5) > 0.3)


def test_two_distributions_without_errors_are_antiparallel():
    """k = 2, gamma = 0: the weighted true gradients sum to 0, alpha_cross^max = -1 = Theorem 1's -H."""
    problem, = runs.problems([2], k=2, clients=4, d=3, mu_over_L=0.5, hessian_spread=0.5, gamma=0.0, gamma_spread=0.0,
                             direction="random")
    values = runs.separation(problem.similarities[0], problem.membership[0], np.zeros(4), 2)
    assert values["alpha_cross_max"] == pytest.approx(-1.0, abs=1e-12) and values["cross_bound"] == -1.0


def test_split_count():
    assert runs.split_count([0, 0, 1, 1], [0, 0, 1, 1]) == 0
    assert runs.split_count([0, 1, 1, 1], [0, 0, 1, 1]) == 1
    assert runs.split_count([0, 1, 0, 1], [0, 0, 1, 1]) == 2


@pytest.mark.parametrize("check, expected", [(checks.check_t1, "holds"), (checks.check_c1, "holds"),
                                             (checks.check_c1_code, "violated"), (checks.check_split, "holds"),
                                             (checks.check_c1_follows, "holds")])
def test_each_claims_smoke_verdict(ctx, check, expected):
    """CFL.C1-CODE: complete linkage splits a distribution of one smoke problem (k = 3, gamma 0.7)
    with alpha_intra^min above alpha_cross^max by 0.175."""
    verdict = check(ctx)
    assert verdict.verdict == expected, verdict.summary
    assert verdict.evidence["admissible_instances"] > 0


def test_theorem_1_is_tight_for_two_distributions_with_adversarial_errors(ctx):
    """The check could see a violation: at k = 2 with errors rotated away from their own
    distribution, 1 + alpha_cross^max comes within 20 % of 1 + Theorem 1's -H (at the default
    scale within 0.5 %)."""
    table = checks.t1_rows(checks.table_of(ctx))
    tight = table[(table["k"] == 2) & (table["direction"] == "adversarial") & (table["inequality"] == "cross")]
    assert (tight["measured"] / tight["bound"]).max() > 0.8


def test_planted_wrong_ceiling_is_flagged(ctx):
    """k = 2's -H used for every k (the sin term and pi/(k - 1) dropped)."""
    assert checks.check_t1(ctx, cross=lambda H, k: -H).verdict == "violated"


def test_planted_wrong_split_threshold_is_flagged(ctx):
    """A threshold that always passes admits problems whose argmin splits a distribution."""
    table = checks.table_of(ctx)
    assert (table["split_exact"] > 0).any()
    assert checks.check_split(ctx, threshold=lambda alpha: 2.0).verdict == "violated"


def test_planted_wrong_corollary_range_is_flagged(ctx):
    """Corollary 1's range stated 1.5 times too wide: Theorem 1 no longer gives its hypothesis."""
    def wide(*, gamma_max, k):
        return bounds.corollary1(gamma_max=min(1.5 * gamma_max, 0.999), k=k)
    assert checks.check_c1_follows(ctx, corollary=wide).verdict == "violated"


def test_a_split_distribution_violates_corollary_1():
    """The judgement of Corollary 1: one admissible problem whose bipartition splits a distribution."""
    row = {"family": "hand-made", "k": 2, "clients": 4, "gamma": 0.1, "gamma_max": 0.1, "problem": 0,
           "gammas": [0.1] * 4, "membership": [0, 0, 1, 1], "alpha_cross_max": -0.5, "alpha_intra_min": 0.9,
           "split_exact": 0, "split_agglomerative": 1}
    table = checks.c1_rows(pd.DataFrame([row]), ("exact", "agglomerative"))
    assert table["admissible"].all() and table["measured"].tolist() == [0.0, 1.0]
    ctx = VerifyContext(scale="smoke", seed=0, device="cpu")
    verdict = judged("CFL.C1-CODE", ctx, table[table["method"] == "agglomerative"], checks.RTOL,
                            "distributions split", {}, lambda r: "here")
    assert verdict.verdict == "violated"


@pytest.mark.parametrize("domain", [T1_DOMAIN, C1_DOMAIN, C1_CODE_DOMAIN, SPLIT_DOMAIN, FOLLOWS_DOMAIN])
def test_each_domain_is_well_formed_and_evaluates_its_simplest_point(ctx, domain):
    assert domain.problems() == []
    point = {p.name: p.simplest for p in domain.parameters}
    instance, = domain.evaluate([point], [7], ctx)
    assert np.isfinite(instance.measured) and np.isfinite(instance.bound)


def test_the_learned_case_uses_the_bootstrap_upper_end(monkeypatch):
    ctx = VerifyContext(scale="smoke", seed=0, device="cpu")
    monkeypatch.setitem(checks.SIZES, "smoke", dict(checks.SIZES["smoke"], digits=1, k=(2,), gamma=(0.2,),
                                                     directions=("random",)))
    table = checks._table(ctx)
    learned = table[table["gamma_source"] != "exact"].iloc[0]
    assert learned["gamma_source"] == "bootstrap 95% upper end" and learned["k"] == 4


def test_the_algorithms_splits_are_judged_at_their_own_model(ctx):
    """Every split the runs made passed the paper's test; those of one distribution's cluster near its
    optimum (true gradients vanishing, gamma_i(theta_c) far above gamma_max) are inadmissible, and
    they are what the check would call violated if the hypothesis row were ignored."""
    table = checks.run_split_rows(ctx)
    assert len(table) and table["admissible"].any()
    passed = [rows[0]["holds"] for rows in table["rows"]]
    assert all(passed)
    pure = table[~table["admissible"]]
    assert (pure["measured"] > 0).any() and (table[table["admissible"]]["measured"] == 0).all()
    everything = table.assign(admissible=True)
    assert judged("CFL.SPLIT", ctx, everything, checks.RTOL, "distributions split", {}, lambda r: "").verdict == \
        "violated"
