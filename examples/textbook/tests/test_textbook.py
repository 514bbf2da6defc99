"""The textbook plugin's own tests: its claims are registered through the entry point, the
true claims hold and the planted ones are found violated at the smoke scale (the final verdict,
as ``cflbounds verify`` gives it: the designed experiment and the search of the domain), the
domains measure what they say, and the bounds are validated functions of their constants.
Needs the package installed (``pip install -e examples/textbook``); cflbounds' CI does that and
runs this file."""
import math

import numpy as np
import pytest

from cflbounds import InvalidParameterError
from cflbounds.claims import checked_evaluate
from cflbounds.falsify import judge
from cflbounds.verify import get_claim
from cflbounds_textbook.gaussian_max import GAUSSIAN_MAX, GAUSSIAN_MAX_PLANTED
from cflbounds_textbook.gd_convex import GD_CONVEX, GD_CONVEX_PLANTED, gd_convex_bound
from cflbounds_textbook.gradient_descent import gd_bound, planted_gd_bound
from cflbounds_textbook.hoeffding import hoeffding_bound

SMOKE = {"TEXTBOOK.GD-CONVEX": "holds", "TEXTBOOK.GD-CONVEX-PLANTED": "violated",
         "TEXTBOOK.GAUSSIAN-MAX": "holds", "TEXTBOOK.GAUSSIAN-MAX-PLANTED": "violated",
         "TEXTBOOK.GD": "holds", "TEXTBOOK.GD-PLANTED": "violated",
         "TEXTBOOK.HOEFFDING": "holds", "TEXTBOOK.HOEFFDING-PLANTED": "violated"}
IDS = tuple(SMOKE)
SHORT_FORM = ("TEXTBOOK.GD-CONVEX", "TEXTBOOK.GD-CONVEX-PLANTED", "TEXTBOOK.GAUSSIAN-MAX",
              "TEXTBOOK.GAUSSIAN-MAX-PLANTED")


def test_the_claims_come_from_this_package():
    for claim_id in IDS:
        assert get_claim(claim_id).package == "cflbounds-textbook"


def test_the_short_form_claims_are_a_bound_and_a_domain():
    for claim_id in SHORT_FORM:
        claim = get_claim(claim_id)
        assert claim.check is None and claim.bound is not None and claim.domain is not None
        assert claim.status == "implemented"


@pytest.mark.parametrize("claim_id", IDS)
def test_smoke_verdicts(claim_id):
    verdict = judge(claim_id, scale="smoke", seed=0)
    assert verdict.verdict == SMOKE[claim_id], verdict.summary
    assert verdict.evidence and verdict.plot
    if claim_id in SHORT_FORM and verdict.verdict == "holds":
        assert "of the admissible volume" in verdict.summary  # holds only with what the search ruled out


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("claim_id", SHORT_FORM)
def test_short_form_verdicts_at_other_seeds(claim_id, seed):
    assert judge(claim_id, scale="smoke", seed=seed).verdict == SMOKE[claim_id]


@pytest.mark.parametrize("h, step, T", [(1.0, 1.0, 1), (0.01, 1.0, 50), (1e-4, 1e-3, 1000), (0.3, 0.5, 7)])
def test_the_gd_convex_instance_is_gradient_descent_on_h_x2_over_2(h, step, T):
    """T steps x <- x - step h x from x_0 = 1 give x_T = (1 - step h)^T exactly enough (1e-12)."""
    instance, = checked_evaluate(GD_CONVEX.domain, [{"h": h, "step": step, "T": T}], seeds=[0])
    assert instance.measured == pytest.approx(h * (1 - step * h) ** (2 * T) / 2, rel=1e-12, abs=1e-300)
    assert instance.bound == 1 / (2 * step * T)


def test_the_gd_convex_bound_reaches_about_a_fifth_of_itself_and_the_planted_one_is_passed():
    """On a grid of u = step h (with T, all the ratio depends on: u T (1 - u)^(2T)), the true bound
    is never passed: at most T/(2T + 1) (2T/(2T + 1))^(2T), below 1/(2e) = 0.184; the planted
    1/T^2 bound is passed by a factor of about T/(2e) at u = 1/(2T + 1)."""
    worst = 0.0
    for T in (1, 2, 5, 50, 1000):
        for u in np.geomspace(1e-7, 1.0, 400):
            instance, = checked_evaluate(GD_CONVEX.domain, [{"h": float(u), "step": 1.0, "T": T}], seeds=[0])
            worst = max(worst, instance.ratio)
    assert 0.17 < worst < 0.19
    T = 200
    planted, = checked_evaluate(GD_CONVEX_PLANTED.domain, [{"h": 1 / (2 * T + 1), "step": 1.0, "T": T}], seeds=[0])
    assert planted.ratio == pytest.approx(T / (2 * math.e), rel=0.01)


def test_the_gaussian_max_domain_draws_what_it_says():
    """All equal (rho = 1): the maximum is one standard Gaussian, of mean 0; two independent ones
    (rho = 0): E max = 1/sqrt(pi). Each within four standard errors of its 200 samples (fixed seeds)."""
    for seed in range(5):
        equal, two = checked_evaluate(GAUSSIAN_MAX.domain, [{"n": 50, "rho": 1.0}, {"n": 2, "rho": 0.0}],
                                      seeds=[seed, seed + 100])
        for instance, mean in ((equal, 0.0), (two, 1 / math.sqrt(math.pi))):
            samples = np.array(instance.samples)
            assert len(samples) == 200 and instance.measured == pytest.approx(samples.mean())
            assert abs(samples.mean() - mean) < 4 * samples.std(ddof=1) / math.sqrt(len(samples))
    independent, = checked_evaluate(GAUSSIAN_MAX_PLANTED.domain, [{"n": 1000, "rho": 0.0}], seeds=[0])
    assert independent.bound == pytest.approx(math.sqrt(math.log(1000)))
    assert independent.measured > 1.1 * independent.bound  # E max of 1000 independent ones is about 3.24


def test_gd_bound_is_exact_along_an_eigenvector():
    # mu = 1, L = 3, eta = 1/2 = 2/(mu + L): both extreme directions contract by exactly 1/2 a step
    assert gd_bound(1.0, 3.0, 0.5, 4, 2.0) == 2.0 * 0.5**4
    assert planted_gd_bound(1.0, 3.0, 0.5, 4, 2.0) == 0.0  # (1 - 2 eta mu) = 0: wrong for every T >= 1
    assert hoeffding_bound(1, 0.5) == math.exp(-0.5)
    assert gd_convex_bound(0.5, 10, 1.0) == 0.1


@pytest.mark.parametrize("kwargs, name", [(dict(mu=-1.0), "mu"), (dict(eta=3.0), "eta"), (dict(mu=4.0), "mu"),
                                          (dict(T=1.5), "T")])
def test_invalid_constants_are_named(kwargs, name):
    with pytest.raises(InvalidParameterError, match=f"'{name}'"):
        gd_bound(**{"mu": 1.0, "L": 3.0, "eta": 0.5, "T": 2, **kwargs})


@pytest.mark.parametrize("kwargs, name", [(dict(step=0.0), "step"), (dict(T=0), "T"), (dict(distance=-1.0), "distance")])
def test_invalid_short_form_constants_are_named(kwargs, name):
    with pytest.raises(InvalidParameterError, match=f"'{name}'"):
        gd_convex_bound(**{"step": 0.5, "T": 10, "distance": 1.0, **kwargs})


def test_the_falsify_instance_is_exact_where_distances_underflow_a_naive_norm():
    """At eta mu near 1 and T = 98 the distance is 9e-160: sqrt(sum of squares) would go through
    subnormals (a relative 6e-6, which falsify once took for a violation); the instance stays
    within 1e-11 of the tight bound (the start lies along the slowest direction)."""
    from cflbounds_textbook.gradient_descent import _instance, gd_bound

    point = {"L": 1.0, "mu_over_L": 0.99, "eta_fraction": 0.9811028771079892, "T": 98, "d": 9, "alignment": 1.0}
    for seed in range(5):
        instance = _instance(point, seed, gd_bound)
        assert instance.bound < 1e-150 and abs(instance.ratio - 1) < 1e-11
