"""SCAFFOLD's claims (cflbounds.papers.scaffold): the measured quantities in closed form
(fractional rounds and rounds per e-fold of a geometric sequence; option I on clients that share
one Hessian is gradient descent, K steps a round), the domains' instances within their readings on
the simplest points, and a planted wrong term in each bound the domains use (Theorem 1's G term,
Theorem 4's local-steps term) flagged as a violation. Each claim's verdict at smoke is tests/test_smoke_verdicts.py's."""
from __future__ import annotations

import inspect
import math
from types import SimpleNamespace

import numpy as np
import pytest

from cflbounds.bounds import scaffold as scaffold_bounds
from cflbounds.papers.catalogue_quadratics import quadratic_problems
from cflbounds.papers.scaffold import domain
from cflbounds.papers.scaffold.rounds import best_rounds, crossing, rounds_per_efold, scaffold_gaps, t4_rounds_per_efold

CTX = SimpleNamespace(device="cpu")


def test_crossing_of_a_geometric_sequence_is_exact():
    """gap_r = q^r crosses a at r = ln a / ln q exactly (interpolation in log gap)."""
    q = 0.7
    gaps = q ** np.arange(60.0)
    for accuracy in (0.5, 1e-3, 1e-7):
        assert crossing(gaps[None], accuracy)[0] == pytest.approx(math.log(accuracy) / math.log(q), rel=1e-12)
    assert crossing(gaps[None], 1.0)[0] == 0.0 and np.isinf(crossing(gaps[None], 1e-30)[0])


def test_rounds_per_efold_and_the_best_of_a_grid():
    """Two steps of one problem: rates q = 0.9 and 0.5 per round; the faster is the best, at
    -1/ln(q) rounds per e-fold, and its rounds to 1e-3 are ln(1e-3)/ln(0.5)."""
    gaps = np.stack([0.9 ** np.arange(200.0), 0.5 ** np.arange(200.0)])[None]
    per_efold, best = rounds_per_efold(gaps, 1e-2, 1e-8)
    assert best[0] == 1 and per_efold[0] == pytest.approx(-1.0 / math.log(0.5), rel=1e-12)
    rounds, best = best_rounds(gaps, 1e-3)
    assert best[0] == 1 and rounds[0] == pytest.approx(math.log(1e-3) / math.log(0.5), rel=1e-12)


def test_option_one_on_a_shared_hessian_falls_like_one_over_k():
    """Clients sharing one Hessian, sigma = 0: from its second round option I's corrected gradient
    is grad f (control variates the gradients at x), so a round is K steps of gradient descent.
    With shared optima too (no first-round drift) the gaps at K are those of K = 1 at every K-th
    round, exactly; with distinct optima the rounds per e-fold at K are those at K = 1 over K, up
    to the crossings' linear interpolation in log gap (the gap is a sum of d exponentials: 1.7 %
    at K = 8 here)."""
    shared = quadratic_problems([3, 4], clients=4, d=3, mu_over_L=0.1, heterogeneity=0.0, hessian_spread=0.0)
    grid = np.array([0.5, 1.0])
    one = scaffold_gaps(shared, K=1, grid=grid, rounds=64, distance=1.0, option="I")
    for K in (2, 8):
        many = scaffold_gaps(shared, K=K, grid=grid, rounds=64 // K, distance=1.0, option="I")
        np.testing.assert_allclose(many, one[..., ::K], rtol=1e-10)
    distinct = quadratic_problems([3, 4], clients=4, d=3, mu_over_L=0.1, heterogeneity=2.0, hessian_spread=0.0)
    one, _ = t4_rounds_per_efold(distinct, 1, grid, "I")
    for K in (2, 8):
        many, _ = t4_rounds_per_efold(distinct, K, grid, "I")
        np.testing.assert_allclose(many * K, one, rtol=0.03)


def _simplest(d):
    return {p.name: p.simplest for p in d.parameters}


@pytest.mark.parametrize("make", [domain.t1_domain, domain.t4_domain])
def test_the_simplest_instances_hold_within_their_reading(make):
    d = make()
    instances = d.evaluate([_simplest(d)] * 2, [0, 1], CTX)
    for instance in instances:
        assert instance.admissible and 0 < d.ratio(instance) <= 1, instance


def _planted_bounds(old: str, new: str):
    """cflbounds.bounds.scaffold loaded again with one term changed (``old`` must occur once)."""
    source = inspect.getsource(scaffold_bounds)
    if source.count(old) != 1:  # a planted test must fail, not pass, when it plants nothing
        raise LookupError(f"{old!r} occurs {source.count(old)} times")
    namespace = {"__name__": "cflbounds.bounds.scaffold_planted", "__package__": "cflbounds.bounds"}
    exec(compile(source.replace(old, new), scaffold_bounds.__file__, "exec"), namespace)
    return SimpleNamespace(**namespace)


@pytest.mark.parametrize("make, old, new", [
    # Theorem 1's drift term with sqrt(G) for G: the expression then grows like sqrt(G), FedAvg's rounds like G
    (domain.t1_domain, "_ratio(np.sqrt(beta) * G, mu * np.sqrt(epsilon))",
     "_ratio(np.sqrt(beta) * np.sqrt(G), mu * np.sqrt(epsilon))"),
    # Theorem 4's local-steps term over K^2: the rounds fall like 1/K, not 1/K^2
    (domain.t4_domain, '"local_steps": (beta + delta * K) / (mu * K)}', '"local_steps": (beta + delta * K) / (mu * K * K)}'),
])
def test_a_planted_wrong_term_is_flagged_by_the_domain(monkeypatch, make, old, new):
    d = make()
    point = {**_simplest(d), **({"log2_K": 3} if "log2_K" in _simplest(d) else {"growth": 16.0})}
    honest = d.evaluate([point], [0], CTX)[0]
    monkeypatch.setattr(domain, "bounds", _planted_bounds(old, new))
    wrong = d.evaluate([point], [0], CTX)[0]
    assert honest.admissible and d.ratio(honest) <= 1
    assert wrong.admissible and d.ratio(wrong) > 1, (wrong.measured, wrong.bound)

