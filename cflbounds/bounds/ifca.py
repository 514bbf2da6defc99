"""IFCA's claims as code (Ghosh, Chung, Yin, Ramchandran, NeurIPS 2020; ``seeds/ifca.txt``).

Every function evaluates one theorem or assumption at given constants and returns a
:class:`BoundResult` (value, named terms, every assumption inequality with both sides).
The papers' universal constants (``c1..c6``, ``c``, and the constant hidden in ``>~``)
are parameters, default 1 (``c1`` defaults to 1/2, the step ``gamma = 1/(2p)`` that makes
one population step exact for ``f = (y - <x, theta>)^2``); they are never fitted here.

Notation (Sec. 5.1): ``p`` smallest cluster proportion, ``separation`` = Delta,
``rho = Delta^2 / sigma^2``, ``n_prime`` = n' points per step per batch.
"""
from __future__ import annotations

import numpy as np

from .._validation import Options
from ._constraints import AT_LEAST_ONE, COUNT, NONNEGATIVE, POSITIVE, PROBABILITY, PROPORTION, bound_params
from ._report import BoundResult, Inequality

__all__ = [
    "statistical_term",
    "exponential_term",
    "assumption1",
    "assumption2",
    "theorem1",
    "corollary1",
    "assumption6",
    "theorem2",
    "theorem2_contraction",
]

_LINEAR = {
    "sigma": NONNEGATIVE,
    "p": PROPORTION,
    "d": COUNT,
    "m": COUNT,
    "n_prime": AT_LEAST_ONE,
    "separation": POSITIVE,
}


def _constants(*names):
    """Constraints for universal constants (all positive)."""
    return {name: POSITIVE for name in names}


def _snr_factor(separation, sigma):
    """``rho / (rho + 1)`` with ``rho = Delta^2 / sigma^2`` (1 when sigma = 0)."""
    return 1.0 / (1.0 + (sigma / separation) ** 2)  # = rho / (rho + 1), without inf/inf for a huge Delta


def statistical_term(sigma, p, d, m, n_prime):
    """``(sigma / p) sqrt(d / (m n'))``: the statistical floor of Thm 1 and Cor. 1."""
    return sigma / p * np.sqrt(d / (m * n_prime))


def exponential_term(separation, sigma, n_prime, c4=1.0):
    """``exp(-c4 (rho / (rho + 1))^2 n')``: the misclustering term of Thm 1 and Cor. 1."""
    return np.exp(-c4 * _snr_factor(separation, sigma) ** 2 * n_prime)


@bound_params({"init_distance": NONNEGATIVE, "separation": POSITIVE})
def assumption1(init_distance, separation) -> tuple[Inequality, ...]:
    """Assumption 1: ``||theta_j^(0) - theta*_j|| <= Delta / 4`` (give the largest over j).

    Parameters
    ----------
    init_distance : float
        the largest initial distance, max_j ||theta_j^(0) - theta*_j||
    separation : float
        Delta, the smallest distance between two cluster centers, min_{j != j'} ||theta*_j - theta*_j'||
    """
    return (Inequality("||theta_j^(0) - theta*_j|| <= Delta/4", init_distance, separation / 4, "<=",
                       "IFCA Assumption 1"),)


@bound_params({**_LINEAR, "max_center_norm": NONNEGATIVE, "C": POSITIVE, "c": POSITIVE})
def assumption2(*, sigma, p, d, m, n_prime, separation, max_center_norm=1.0, C=1.0, c=1.0):
    """Assumption 2, each inequality with both sides; ``x >~ y`` is read ``x >= C y``
    and ``x <~ y`` as ``x <= C y``; ``c`` is the exponent's constant.

    Parameters
    ----------
    sigma : float
        noise standard deviation: each response is y = <x, theta*_j> + eps with eps ~ N(0, sigma^2)
    p : float
        smallest cluster proportion, p = min_j |S*_j| / m (the share of machines in the smallest cluster)
    d : int
        dimension of the features x and of the models theta
    m : int
        number of machines
    n_prime : float
        n', the points each machine uses in one step (the theory splits its n points into 2T disjoint batches,
        n' = n/(2T))
    separation : float
        Delta, the smallest distance between two cluster centers, min_{j != j'} ||theta*_j - theta*_j'||; the
        signal-to-noise ratio rho = Delta^2/sigma^2 is computed from it and sigma, never given
    max_center_norm : float
        max_j ||theta*_j||, the largest center norm (checked against 1 in "max ||theta*|| <~ 1")
    C : float
        the constant hidden in the paper's ">~" and "<~": x >~ y is checked as x >= C y, x <~ y as x <= C y
    c : float
        the constant c in the exponent exp(-c (rho/(rho+1))^2 n') of Assumption 2's condition on Delta
    """
    log_m = np.log(m)
    snr = _snr_factor(separation, sigma)
    floor = statistical_term(sigma, p, d, m, n_prime) + np.exp(-c * snr**2 * n_prime)
    rows = [
        ("max_j ||theta*_j|| <~ 1", max_center_norm, C * 1.0, "<="),
        ("sigma <~ 1", sigma, C * 1.0, "<="),
        ("n' >~ ((rho+1)/rho)^2 log m", n_prime, C * log_m / snr**2, ">="),
        ("d >~ log m", d, C * log_m, ">="),
        ("p >~ log m / m", p, C * log_m / m, ">="),
        ("p m n' >~ d", p * m * n_prime, C * d, ">="),
        ("Delta >~ (sigma/p) sqrt(d/(m n')) + exp(-c (rho/(rho+1))^2 n')", separation, C * floor, ">="),
    ]
    return tuple(Inequality(name, lhs, rhs, rel, "IFCA Assumption 2", C) for name, lhs, rhs, rel in rows)


@bound_params({"distance": NONNEGATIVE, **_LINEAR, "max_center_norm": NONNEGATIVE,
               **_constants("c1", "c2", "c3", "c4", "C", "c")})
def theorem1(distance, *, sigma, p, d, m, n_prime, separation, max_center_norm=1.0,
             c1=0.5, c2=1.0, c3=1.0, c4=1.0, C=1.0, c=1.0) -> BoundResult:
    """Theorem 1 (linear model): from ``||theta_j - theta*_j|| = distance <= Delta/4``, one
    step with ``gamma = c1/p`` gives, w.p. at least ``1 - 1/poly(m)``,

        ||theta_j^+ - theta*_j|| <= 1/2 ||theta_j - theta*_j||
                                    + c2 (sigma/p) sqrt(d/(m n')) + c3 exp(-c4 (rho/(rho+1))^2 n').

    Parameters
    ----------
    distance : float
        ||theta_j - theta*_j|| before the step (the theorem needs at most Delta/4)
    sigma : float
        noise standard deviation: each response is y = <x, theta*_j> + eps with eps ~ N(0, sigma^2)
    p : float
        smallest cluster proportion, p = min_j |S*_j| / m (the share of machines in the smallest cluster)
    d : int
        dimension of the features x and of the models theta
    m : int
        number of machines
    n_prime : float
        n', the points each machine uses in one step (the theory splits its n points into 2T disjoint batches,
        n' = n/(2T))
    separation : float
        Delta, the smallest distance between two cluster centers, min_{j != j'} ||theta*_j - theta*_j'||; the
        signal-to-noise ratio rho = Delta^2/sigma^2 is computed from it and sigma, never given
    max_center_norm : float
        max_j ||theta*_j||, the largest center norm (checked against 1 in "max ||theta*|| <~ 1")
    c1 : float
        step-size constant: the step is gamma = c1/p
    c2 : float
        constant in front of the statistical term, c2 (sigma/p) sqrt(d/(m n'))
    c3 : float
        constant in front of the misclustering term, c3 exp(-c4 (rho/(rho+1))^2 n')
    c4 : float
        constant in the misclustering term's exponent, exp(-c4 (rho/(rho+1))^2 n')
    C : float
        the constant hidden in the paper's ">~" and "<~": x >~ y is checked as x >= C y, x <~ y as x <= C y
    c : float
        the constant c in the exponent exp(-c (rho/(rho+1))^2 n') of Assumption 2's condition on Delta
    """
    terms = {
        "contraction": 0.5 * distance,
        "statistical": c2 * statistical_term(sigma, p, d, m, n_prime),
        "exponential": c3 * exponential_term(separation, sigma, n_prime, c4),
    }
    assumptions = (
        Inequality("||theta_j - theta*_j|| <= Delta/4", distance, separation / 4, "<=", "IFCA Theorem 1"),
        *assumption2(sigma=sigma, p=p, d=d, m=m, n_prime=n_prime, separation=separation,
                     max_center_norm=max_center_norm, C=C, c=c),
    )
    return BoundResult("IFCA.T1", sum(terms.values()), terms, {"step_size": c1 / p, "contraction_factor": 0.5},
                       assumptions, theorem1.__doc__)


@bound_params({**_LINEAR, "max_center_norm": NONNEGATIVE, **_constants("c1", "c4", "c5", "c6", "C", "c"),
               "log_base": [Options(("e", "2"))]})
def corollary1(*, sigma, p, d, m, n_prime, separation, max_center_norm=1.0, c1=0.5, c4=1.0, c5=1.0,
               c6=1.0, C=1.0, c=1.0, log_base="e") -> BoundResult:
    """Corollary 1: with ``gamma = c1/p``, after ``T = log(Delta/(4 eps))`` iterations,
    w.p. at least ``1 - log(Delta/(4 eps))/poly(m)``, ``||theta_j - theta*_j|| <= eps`` for all j,

        eps = c5 (sigma/p) sqrt(d/(m n')) + c6 exp(-c4 (rho/(rho+1))^2 n').

    The paper's ``log`` is read as the natural log; a contraction of 1/2 per step needs
    ``log_2`` (``log_base="2"``), 1.44 times more iterations. When ``eps >= Delta/4`` the
    bound is vacuous (Assumption 1's initialisation already meets it): ``derived["iterations"]``
    is 0 and ``derived["vacuous"]`` 1.

    Parameters
    ----------
    sigma : float
        noise standard deviation: each response is y = <x, theta*_j> + eps with eps ~ N(0, sigma^2)
    p : float
        smallest cluster proportion, p = min_j |S*_j| / m (the share of machines in the smallest cluster)
    d : int
        dimension of the features x and of the models theta
    m : int
        number of machines
    n_prime : float
        n', the points each machine uses in one step (the theory splits its n points into 2T disjoint batches,
        n' = n/(2T))
    separation : float
        Delta, the smallest distance between two cluster centers, min_{j != j'} ||theta*_j - theta*_j'||; the
        signal-to-noise ratio rho = Delta^2/sigma^2 is computed from it and sigma, never given
    max_center_norm : float
        max_j ||theta*_j||, the largest center norm (checked against 1 in "max ||theta*|| <~ 1")
    c1 : float
        step-size constant: the step is gamma = c1/p
    c4 : float
        constant in the misclustering term's exponent, exp(-c4 (rho/(rho+1))^2 n')
    c5 : float
        constant in front of eps's statistical term, c5 (sigma/p) sqrt(d/(m n'))
    c6 : float
        constant in front of eps's misclustering term, c6 exp(-c4 (rho/(rho+1))^2 n')
    C : float
        the constant hidden in the paper's ">~" and "<~": x >~ y is checked as x >= C y, x <~ y as x <= C y
    c : float
        the constant c in the exponent exp(-c (rho/(rho+1))^2 n') of Assumption 2's condition on Delta
    log_base : str
        base of the log in T = log(Delta/(4 eps)): "e" (natural log) or "2" (halving the error each step needs
        log_2)
    """
    terms = {
        "statistical": c5 * statistical_term(sigma, p, d, m, n_prime),
        "exponential": c6 * exponential_term(separation, sigma, n_prime, c4),
    }
    error = sum(terms.values())
    ratio = separation / (4 * error)
    iterations = max(0.0, np.log(ratio) if log_base == "e" else np.log2(ratio))
    assumptions = assumption2(sigma=sigma, p=p, d=d, m=m, n_prime=n_prime, separation=separation,
                              max_center_norm=max_center_norm, C=C, c=c)
    derived = {"iterations": iterations, "vacuous": float(error >= separation / 4), "step_size": c1 / p,
               "samples_per_machine": 2 * n_prime * np.ceil(iterations)}
    return BoundResult("IFCA.C1", error, terms, derived, assumptions, corollary1.__doc__)


_STRONGLY_CONVEX = {
    "p": PROPORTION,
    "m": COUNT,
    "k": COUNT,
    "n_prime": AT_LEAST_ONE,
    "separation": POSITIVE,
    "strong_convexity": POSITIVE,
    "smoothness": POSITIVE,
    "loss_variance": NONNEGATIVE,
}


@bound_params({"init_distance": NONNEGATIVE, **_STRONGLY_CONVEX, "max_center_norm": NONNEGATIVE, "C": POSITIVE})
def assumption6(*, init_distance, p, m, k, n_prime, separation, strong_convexity, smoothness, loss_variance,
               max_center_norm=1.0, C=1.0) -> tuple[Inequality, ...]:
    """Assumption 6 (strongly convex case); the ``O~`` condition on Delta is checked with
    its logarithmic and problem-dependent factors set to the constant ``C``.

    Parameters
    ----------
    init_distance : float
        the largest initial distance, max_j ||theta_j^(0) - theta*_j||
    p : float
        smallest cluster proportion, p = min_j |S*_j| / m (the share of machines in the smallest cluster)
    m : int
        number of machines
    n_prime : float
        n', the points each machine uses in one step (the theory splits its n points into 2T disjoint batches,
        n' = n/(2T))
    separation : float
        Delta, the smallest distance between two cluster centers, min_{j != j'} ||theta*_j - theta*_j'||; the
        signal-to-noise ratio rho = Delta^2/sigma^2 is computed from it and sigma, never given
    k : int
        number of clusters
    strong_convexity : float
        lambda of Assumption 3: each population loss F^j is lambda-strongly convex
    smoothness : float
        L of Assumption 3: each F^j is L-smooth
    loss_variance : float
        eta^2 of Assumption 4, a bound on the variance of the loss of one point, Var f(theta; z)
    max_center_norm : float
        max_j ||theta*_j||, the largest center norm (checked against 1 in "max ||theta*|| <~ 1")
    C : float
        the constant hidden in the paper's ">~" and "<~" (x >~ y is checked as x >= C y, x <~ y as x <= C y),
        also standing for the logarithmic and problem-dependent factors of the O~ condition on Delta
    """
    lam, L = strong_convexity, smoothness
    rows = [
        ("max_j ||theta*_j|| <~ 1", max_center_norm, C * 1.0, "<="),
        ("||theta_j^(0) - theta*_j|| <= (1/4) sqrt(lambda/L) Delta", init_distance,
         0.25 * np.sqrt(lam / L) * separation, "<="),
        ("n' >~ k eta^2 / (lambda^2 Delta^4)", n_prime, C * k * loss_variance / (lam**2 * separation**4), ">="),
        ("p >~ log(m n') / m", p, C * (np.log(m) + np.log(n_prime)) / m, ">="),
        ("Delta >= O~(max{n'^(-1/5), m^(-1/6) n'^(-1/3)})", separation,
         C * max(n_prime ** (-1 / 5), m ** (-1 / 6) * n_prime ** (-1 / 3)), ">="),
    ]
    return tuple(Inequality(name, lhs, rhs, rel, "IFCA Assumption 6", C) for name, lhs, rhs, rel in rows)


@bound_params({"p": PROPORTION, "strong_convexity": POSITIVE, "smoothness": POSITIVE})
def theorem2_contraction(p, strong_convexity, smoothness) -> float:
    """The per-iteration contraction factor of Thm 2's proof: ``1 - p lambda / (8 L)``.

    Parameters
    ----------
    p : float
        smallest cluster proportion, p = min_j |S*_j| / m (the share of machines in the smallest cluster)
    strong_convexity : float
        lambda of Assumption 3: each population loss F^j is lambda-strongly convex
    smoothness : float
        L of Assumption 3: each F^j is L-smooth
    """
    return 1.0 - p * strong_convexity / (8.0 * smoothness)


@bound_params({**_STRONGLY_CONVEX, "gradient_variance": NONNEGATIVE, "delta": PROBABILITY,
               "init_distance": NONNEGATIVE, "max_center_norm": NONNEGATIVE, "c": POSITIVE, "C": POSITIVE})
def theorem2(*, p, m, k, n_prime, separation, strong_convexity, smoothness, loss_variance, gradient_variance,
             delta=0.1, init_distance=0.0, max_center_norm=1.0, c=1.0, C=1.0) -> BoundResult:
    """Theorem 2 (strongly convex losses): with ``gamma = 1/L``, w.p. at least ``1 - delta``,
    after ``T = (8L/(p lambda)) log(Delta/(2 eps))`` iterations, ``||theta_j - theta*_j|| <= eps``,

        eps <~ v k L log(mn') / (p^(5/2) lambda^2 delta sqrt(mn'))
               + eta^2 L^2 k log(mn') / (p^2 lambda^4 delta Delta^4 n') + O~(1/(n' sqrt(m))),

    here ``eps = c * (sum of the three terms)``, the ``O~`` term taken as ``1/(n' sqrt(m))``.
    When ``eps >= Delta/2`` the bound is vacuous (the initialisation already meets it) and
    ``derived["iterations"]`` is reported as 0, with ``derived["vacuous"] = 1``.
    The per-iteration form (T2c) is ``(1 - p lambda/(8L)) ||theta - theta*|| + O~(1/sqrt(mn')
    + 1/n' + 1/(n' sqrt(m)))``.

    Parameters
    ----------
    p : float
        smallest cluster proportion, p = min_j |S*_j| / m (the share of machines in the smallest cluster)
    m : int
        number of machines
    n_prime : float
        n', the points each machine uses in one step (the theory splits its n points into 2T disjoint batches,
        n' = n/(2T))
    separation : float
        Delta, the smallest distance between two cluster centers, min_{j != j'} ||theta*_j - theta*_j'||; the
        signal-to-noise ratio rho = Delta^2/sigma^2 is computed from it and sigma, never given
    k : int
        number of clusters
    strong_convexity : float
        lambda of Assumption 3: each population loss F^j is lambda-strongly convex
    smoothness : float
        L of Assumption 3: each F^j is L-smooth
    loss_variance : float
        eta^2 of Assumption 4, a bound on the variance of the loss of one point, Var f(theta; z)
    gradient_variance : float
        v^2 of Assumption 5, a bound on E||grad f(theta; z) - grad F^j(theta)||^2 (the bound uses v = its
        square root)
    delta : float
        failure probability: the bound holds with probability at least 1 - delta
    init_distance : float
        the largest initial distance (for Assumption 6's init condition), max_j ||theta_j^(0) - theta*_j||
    max_center_norm : float
        max_j ||theta*_j||, the largest center norm (checked against 1 in "max ||theta*|| <~ 1")
    c : float
        the constant of the paper's "<~" in eps: eps = c (sum of the three terms)
    C : float
        the constant hidden in Assumption 6's ">~" and "<~": x >~ y is checked as x >= C y, x <~ y as x <= C y
    """
    lam, L, v = strong_convexity, smoothness, np.sqrt(gradient_variance)
    log_mn, sqrt_mn = np.log(m) + np.log(n_prime), np.sqrt(m) * np.sqrt(n_prime)  # m n' itself may overflow
    terms = {
        "gradient_noise": c * v * k * L * log_mn / (p**2.5 * lam**2 * delta * sqrt_mn),
        "misclustering": c * loss_variance * L**2 * k * log_mn / (p**2 * lam**4 * delta * separation**4 * n_prime),
        "remainder": c / (n_prime * np.sqrt(m)),
    }
    error = sum(terms.values())
    derived = {
        "step_size": 1.0 / L,
        "iterations": max(0.0, 8 * L / (p * lam) * np.log(separation / (2 * error))),
        "vacuous": float(error >= separation / 2),
        "contraction_factor": theorem2_contraction(p, lam, L),
        "floor_shape": 1 / sqrt_mn + 1 / n_prime + 1 / (n_prime * np.sqrt(m)),
    }
    assumptions = assumption6(init_distance=init_distance, p=p, m=m, k=k, n_prime=n_prime, separation=separation,
                              strong_convexity=lam, smoothness=L, loss_variance=loss_variance,
                              max_center_norm=max_center_norm, C=C)
    return BoundResult("IFCA.T2", error, terms, derived, assumptions, theorem2.__doc__)
