"""SCAFFOLD's rates as code (Karimireddy, Kale, Mohri, Reddi, Stich, Suresh, "SCAFFOLD: Stochastic
Controlled Averaging for Federated Learning", ICML 2020, arXiv:1910.06378).

f = (1/N) sum_i f_i, each beta-smooth (and f mu-strongly convex); S of the N clients sampled
uniformly per round, K local steps, R rounds; (G, B)-bounded gradient dissimilarity
(1/N) sum_i ||grad f_i(x)||^2 <= G^2 + B^2 ||grad f(x)||^2, delta-bounded Hessian dissimilarity
||grad^2 f_i - grad^2 f|| <= delta, within-client gradient variance sigma^2.

Every theorem of the main text states rounds to accuracy epsilon up to O~ (constants and
logarithmic factors hidden), and Theorem 2 a lower bound up to Omega: each is encoded as a rate,
the hidden constant a named parameter ``c`` (default 1, never fitted here), the terms reported
separately for ordering and rate claims. The exact step sizes and constants are in the paper's
appendix, which could not be read from this machine (the stored copies of the paper hold its
abstract and introduction only), so none is encoded. The formulas are CATALOGUE.md's (marked [R]
there). The paper has no official code.
"""
from __future__ import annotations

from numbers import Integral

import numpy as np

from ._constraints import COUNT, NONNEGATIVE, POSITIVE, bound_params, within
from ._docstring import appended, parameters
from ._report import BoundResult, Inequality

__all__ = ["theorem1_rounds", "theorem2_lower", "theorem3_rounds", "theorem4_rounds"]

_RATE = {"sigma_sq": NONNEGATIVE, "mu": POSITIVE, "beta": POSITIVE, "K": COUNT, "N": COUNT, "epsilon": POSITIVE,
         "c": POSITIVE}
_ENTRIES = {
    "sigma_sq": ("float", "sigma^2, the within-client variance of a stochastic gradient"),
    "G": ("float", "the G of the (G, B)-bounded gradient dissimilarity, (1/N) sum_i ||grad f_i(x)||^2 <= G^2 + B^2 "
                   "||grad f(x)||^2"),
    "B": ("float", "the B of the (G, B)-bounded gradient dissimilarity"),
    "mu": ("float", "strong convexity of f (mu <= beta)"),
    "beta": ("float", "smoothness of every f_i"),
    "delta": ("float", "the delta-bounded Hessian dissimilarity, ||grad^2 f_i - grad^2 f|| <= delta"),
    "K": ("int", "local steps per round"),
    "S": ("int", "clients sampled per round (S <= N)"),
    "N": ("int", "number of clients"),
    "epsilon": ("float", "the target accuracy, E f(x^R) - f* <= epsilon"),
    "R": ("int", "rounds"),
    "c": ("float", "the constant hidden in the O~ or Omega (with its logarithmic factors), unspecified by the "
                   "theorem"),
}


def _check(mu, beta, caller, S=None, N=None):
    within("mu", mu, caller, 0, beta, closed="right", rule="mu <= beta: a mu-strongly convex f is at most "
                                                           "beta-smooth")
    if S is not None:
        within("S", S, caller, 1, N, kind=Integral, rule="S <= N")


def _ratio(numerator, denominator):
    """``numerator / denominator``, 0 for a zero numerator (a denominator that underflowed to 0
    would make it NaN; any other numerator over it is inf)."""
    return 0.0 if numerator == 0 else numerator / np.float64(denominator)


def _rounds(claim, doc, c, terms, derived=None, rows=()) -> BoundResult:
    return BoundResult(claim, c * sum(terms.values()), {name: c * value for name, value in terms.items()},
                       derived or {}, tuple(rows), doc)


@appended(parameters(_ENTRIES, "sigma_sq", "G", "B", "mu", "beta", "K", "S", "N", "epsilon", "c"))
@bound_params({**_RATE, "G": NONNEGATIVE, "B": NONNEGATIVE, "S": COUNT})
def theorem1_rounds(*, sigma_sq, G, B, mu, beta, K, S, N, epsilon, c=1.0) -> BoundResult:
    """Theorem 1 (FedAvg, mu-strongly convex, two step sizes eta_l, eta_g): rounds to epsilon

        R = O~(sigma^2/(mu K S eps) + (1 - S/N) G^2/(mu S eps) + sqrt(beta) G/(mu sqrt(eps)) + B^2 beta/mu),

    read as ``c`` times the sum (a rate: the O~ hides constants and log factors). As
    CATALOGUE.md states it ([R]); the appendix's exact constants were not read. ``terms``:
    ``noise``, ``sampling``, ``drift`` (the G terms) and ``dissimilarity``, each times c.
    """
    _check(mu, beta, "theorem1_rounds", S, N)
    terms = {"noise": _ratio(sigma_sq, mu * K * S * epsilon),
             "sampling": _ratio(0.0 if S == N else (1.0 - S / N) * G**2, mu * S * epsilon),
             "drift": _ratio(np.sqrt(beta) * G, mu * np.sqrt(epsilon)),
             "dissimilarity": _ratio(B**2 * beta, mu)}
    return _rounds("SCAFFOLD.T1", theorem1_rounds.__doc__, c, terms)


@appended(parameters(_ENTRIES, "G", "mu", "R", "c"))
@bound_params({"G": NONNEGATIVE, "mu": POSITIVE, "R": COUNT, "c": POSITIVE})
def theorem2_lower(*, G, mu, R, c=1.0) -> float:
    """Theorem 2 (FedAvg lower bound): for any G, mu > 0 there are mu-strongly convex functions
    with (G, B)-bounded dissimilarity on which FedAvg with K >= 2 local steps, sigma = 0 and all
    clients (S = N) has after R rounds

        f(x^R) - f* >= Omega(G^2 / (mu R^2)),   read as  c G^2 / (mu R^2).

    As CATALOGUE.md states it ([R]); ``c`` is the Omega's hidden constant. The statement fixes no
    step sizes: a claim reads it as a bound for every choice of steps (the instance built for the
    given R, G, mu), which is the strongest reading and the one a measured minimum over steps
    can test.
    """
    return c * _ratio(G**2, mu * float(R) ** 2)


@appended(parameters(_ENTRIES, "sigma_sq", "mu", "beta", "K", "S", "N", "epsilon", "c"))
@bound_params({**_RATE, "S": COUNT})
def theorem3_rounds(*, sigma_sq, mu, beta, K, S, N, epsilon, c=1.0) -> BoundResult:
    """Theorem 3 (SCAFFOLD, mu-strongly convex): rounds to epsilon

        R = O~(sigma^2/(mu K S eps) + beta/mu + N/S)   (no G: client drift is corrected),

    read as ``c`` times the sum. As CATALOGUE.md states it ([R]); the appendix's exact
    constants were not read. ``terms``: ``noise``, ``conditioning``, ``sampling``, each times c.
    """
    _check(mu, beta, "theorem3_rounds", S, N)
    terms = {"noise": _ratio(sigma_sq, mu * K * S * epsilon), "conditioning": beta / mu, "sampling": N / S}
    return _rounds("SCAFFOLD.T3", theorem3_rounds.__doc__, c, terms)


@appended(parameters(_ENTRIES, "sigma_sq", "mu", "beta", "delta", "K", "N", "epsilon", "c"))
@bound_params({**_RATE, "delta": NONNEGATIVE})
def theorem4_rounds(*, sigma_sq, mu, beta, delta, K, N, epsilon, c=1.0) -> BoundResult:
    """Theorem 4 (SCAFFOLD on quadratics with delta-bounded Hessian dissimilarity, all clients
    S = N, eta_g = 1): rounds to epsilon

        R = O~(beta sigma^2/(mu K N eps) + (beta + delta K)/(mu K)),

    read as ``c`` times the sum. As CATALOGUE.md states it ([R]); the appendix's exact
    constants were not read. ``terms``: ``noise`` and ``local_steps``, each times c;
    ``derived["delta_K_over_beta"]``: the regime (delta K << beta) where more local steps cut
    the rounds like 1/K. The row ``delta <= 2 beta`` holds for any beta-smooth f_i (a larger
    delta is no constraint).
    """
    _check(mu, beta, "theorem4_rounds")
    terms = {"noise": _ratio(beta * sigma_sq, mu * K * N * epsilon), "local_steps": (beta + delta * K) / (mu * K)}
    rows = (Inequality("delta <= 2 beta", delta, 2.0 * beta, "<=", "SCAFFOLD Theorem 4 (beta-smooth f_i)"),)
    return _rounds("SCAFFOLD.T4", theorem4_rounds.__doc__, c, terms, {"delta_K_over_beta": delta * K / beta}, rows)
