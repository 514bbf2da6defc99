"""The textbook plugin's own tests: its claims are registered through the entry point, the
true claims hold and the planted ones are found violated at the smoke scale, and the bounds
are validated functions of their constants. Needs the package installed
(``pip install -e examples/textbook``); cflbounds' CI does that and runs this file."""
import math

import pytest

from cflbounds import InvalidParameterError
from cflbounds.verify import get_claim, verify
from cflbounds_textbook.gradient_descent import gd_bound, planted_gd_bound
from cflbounds_textbook.hoeffding import hoeffding_bound

IDS = ("TEXTBOOK.GD", "TEXTBOOK.GD-PLANTED", "TEXTBOOK.HOEFFDING", "TEXTBOOK.HOEFFDING-PLANTED")


def test_the_claims_come_from_this_package():
    for claim_id in IDS:
        assert get_claim(claim_id).package == "cflbounds-textbook"


@pytest.mark.parametrize("claim_id, expected", [("TEXTBOOK.GD", "holds"), ("TEXTBOOK.GD-PLANTED", "violated"),
                                                ("TEXTBOOK.HOEFFDING", "holds"),
                                                ("TEXTBOOK.HOEFFDING-PLANTED", "violated")])
def test_smoke_verdicts(claim_id, expected):
    verdict = verify(claim_id, scale="smoke", seed=0)
    assert verdict.verdict == expected, verdict.summary
    assert verdict.evidence and verdict.plot


def test_gd_bound_is_exact_along_an_eigenvector():
    # mu = 1, L = 3, eta = 1/2 = 2/(mu + L): both extreme directions contract by exactly 1/2 a step
    assert gd_bound(1.0, 3.0, 0.5, 4, 2.0) == 2.0 * 0.5**4
    assert planted_gd_bound(1.0, 3.0, 0.5, 4, 2.0) == 0.0  # (1 - 2 eta mu) = 0: wrong for every T >= 1
    assert hoeffding_bound(1, 0.5) == math.exp(-0.5)


@pytest.mark.parametrize("kwargs, name", [(dict(mu=-1.0), "mu"), (dict(eta=3.0), "eta"), (dict(mu=4.0), "mu"),
                                          (dict(T=1.5), "T")])
def test_invalid_constants_are_named(kwargs, name):
    with pytest.raises(InvalidParameterError, match=f"'{name}'"):
        gd_bound(**{"mu": 1.0, "L": 3.0, "eta": 0.5, "T": 2, **kwargs})


def test_the_falsify_instance_is_exact_where_distances_underflow_a_naive_norm():
    """At eta mu near 1 and T = 98 the distance is 9e-160: sqrt(sum of squares) would go through
    subnormals (a relative 6e-6, which falsify once took for a violation); the instance stays
    within 1e-11 of the tight bound (the start lies along the slowest direction)."""
    from cflbounds_textbook.gradient_descent import _instance, gd_bound

    point = {"L": 1.0, "mu_over_L": 0.99, "eta_fraction": 0.9811028771079892, "T": 98, "d": 9, "alignment": 1.0}
    for seed in range(5):
        instance = _instance(point, seed, gd_bound)
        assert instance.bound < 1e-150 and abs(instance.ratio - 1) < 1e-11
