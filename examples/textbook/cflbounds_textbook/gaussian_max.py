"""TEXTBOOK.GAUSSIAN-MAX, an expectation claim in the short form: a bound and a domain, no check.

For ``n`` standard Gaussian variables, however dependent, ``E[max_i X_i] <= sqrt(2 log n)``
(the maximal inequality for sub-Gaussian variables: Boucheron, Lugosi & Massart, *Concentration
Inequalities*, 2013, Ch. 2), the step behind every union bound over clusters, clients or rounds.
The domain draws equicorrelated variables ``X_i = sqrt(rho) Z + sqrt(1 - rho) Z_i``: independent
at ``rho = 0`` (where the bound is nearly reached for large ``n``: about 0.9 of it at ``n = 10^4``),
all equal at ``rho = 1``. Each instance is 200 independent draws; their maxima are its
``samples``, judged by the expectation rule (a Student-t interval of the mean excess).

TEXTBOOK.GAUSSIAN-MAX-PLANTED claims ``sqrt(log n)``, the 2 forgotten: false for nearly
independent variables from about ``n = 20`` on.
"""
from numbers import Integral

import numpy as np

from cflbounds.claims import Claim, Domain, Instance, Interval, Parameter, validate_params


@validate_params({"n": [Interval(Integral, 1, None, closed="left")]})
def gaussian_max_bound(n):
    """sqrt(2 log n): the expected maximum of n standard Gaussian variables, however dependent.

    Parameters
    ----------
    n : int
        the number of variables, each of mean 0 and variance 1
    """
    return float(np.sqrt(2 * np.log(n)))


def gaussian_max_domain(bound):
    def instance(point, seed):  # 200 draws of n standard Gaussians, every pair correlated rho
        rng, n, rho = np.random.default_rng(seed), point["n"], point["rho"]
        x = np.sqrt(rho) * rng.standard_normal((200, 1)) + np.sqrt(1 - rho) * rng.standard_normal((200, n))
        maxima = x.max(axis=1)
        return Instance(float(maxima.mean()), bound(n), samples=maxima.tolist())
    return Domain([Parameter("n", 2, 10_000, integer=True, log=True, description="how many variables"),
                   Parameter("rho", 0.0, 1.0, description="the correlation of every pair")],
                  lambda points, seeds, ctx: [instance(p, s) for p, s in zip(points, seeds)], rule="expectation")


GAUSSIAN_MAX = Claim("TEXTBOOK.GAUSSIAN-MAX", "For n standard Gaussian variables, however dependent: "
                     "E[max_i X_i] <= sqrt(2 log n).", bound=gaussian_max_bound,
                     domain=gaussian_max_domain(gaussian_max_bound),
                     reference="Boucheron, Lugosi & Massart, Concentration Inequalities (2013), Ch. 2")


@validate_params({"n": [Interval(Integral, 1, None, closed="left")]})
def planted_gaussian_max_bound(n):
    return float(np.sqrt(np.log(n)))


planted_gaussian_max_bound.__doc__ = (  # the claim's Parameters section: the same constant
    "A planted error: sqrt(log n), the 2 forgotten.\n" + gaussian_max_bound.__doc__.split("\n", 1)[1])

GAUSSIAN_MAX_PLANTED = Claim("TEXTBOOK.GAUSSIAN-MAX-PLANTED", "A planted error: the same with sqrt(log n).",
                             bound=planted_gaussian_max_bound, domain=gaussian_max_domain(planted_gaussian_max_bound),
                             reference="planted (false) twin of TEXTBOOK.GAUSSIAN-MAX")
