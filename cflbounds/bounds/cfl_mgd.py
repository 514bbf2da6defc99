"""CFL-MGD's claims as code (clustered FL with momentum gradient descent; ``seeds/cfl_mgd.txt``).

Notation (Sec. 5): P clusters, m clients, ``l = min_p |C*_p|/m``, ``delta`` = Delta (the
minimum distance between cluster optima), ``sigma^2`` and ``v^2`` the loss and gradient
variance bounds of Assumption 3, ``mu``/``L`` strong convexity and smoothness
(Assumptions 1-2), ``n_prime`` = n' points per batch, ``beta`` the momentum.

Where the proofs make a constant explicit it is the default, with its derivation:
Lemma 1's ``c1 = 128`` (two Chebyshev terms of ``64 sigma^2/(Delta^4 mu^2 n')``, eqs.
29-30), and in Lemma 2's ``rho0`` (A36): ``c1 = c5 = 3 * 128`` (A14's ``3 L eta / m`` times
A15-A16's count ``128 m sigma^2/(mu^2 lambda2 Delta^4 n')``, A17 and A33), ``c2 = c6 =
sqrt(128)`` (the square root of that count, A14, A32), ``c3 = 1/2`` and ``c4 = 1/4`` (A27).
``c4_term`` chooses how the drift term enters ``rho0`` (:data:`C4_TERMS`): ``"printed"``
(default), ``c4 l`` as eq. (31) and (A27) print it; ``"derivation"``, ``beta c4 l`` as (A22)
and (A26) derive it: (A22) splits T31 and writes its last term as ``(eta beta/m) |C1 ∩ C1*|
grad phi_1(chi_1)``; with ``eta = 1/L`` (chosen in the sentence before A26) and
``||grad phi_1(chi_1)|| <= L`` (A26) that term is at most ``beta |C1 ∩ C1*|/m``, which (A27)
replaces by ``l/4 = c4 l`` and prints without its factor beta (so it no longer vanishes for
IFCA, beta = 0). The derivation's reading restores only the beta; (A27)'s ``l/4`` (the count
``|C1 ∩ C1*| >= l m/4`` stated before A26) is kept as printed.
The lambdas are the Markov/Chebyshev failure probabilities; the extracted text loses
radical signs, so ``lambda_power`` chooses ``1/sqrt(lambda)`` (Chebyshev on the squared
norm, as CLAIMS.md reads it) or ``1/lambda`` (Markov on the norm) for lambda0, 1, 3, 4;
lambda2 bounds a count by Markov (power 1) and enters the c2/c6 terms under the root.
"""
from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from scipy import optimize

from .._validation import ArrayLike, Constraint, Interval, Options, require
from ._blas import one_blas_thread
from ._constraints import AT_LEAST_ONE, COUNT, NONNEGATIVE, POSITIVE, PROBABILITY, PROPORTION, bound_params
from ._report import BoundResult, Inequality

__all__ = [
    "lemma1",
    "assumptions",
    "contraction_factor",
    "rho0_terms",
    "failure_probability",
    "optimal_lambdas",
    "lemma2",
    "theorem1",
    "a38_satisfiability",
    "drift_term",
    "C4_TERMS",
    "rate_shape",
    "model_averaging_recursion",
    "model_averaging_bound",
]

C1_LEMMA1 = 128.0
PROOF_CONSTANTS = {"c1": 3 * C1_LEMMA1, "c2": np.sqrt(C1_LEMMA1), "c3": 0.5, "c4": 0.25, "c5": 3 * C1_LEMMA1,
                   "c6": np.sqrt(C1_LEMMA1)}
C4_TERMS = ("printed", "derivation")
_BETA = [Interval(Real, 0, 1, closed="left")]
_PROBLEM = {"v": NONNEGATIVE, "sigma": NONNEGATIVE, "L": POSITIVE, "mu": POSITIVE, "l": PROPORTION, "P": COUNT,
            "delta": POSITIVE, "beta": _BETA}
_LAMBDAS = {f"lambda{i}": PROBABILITY for i in range(5)}
_CONSTANTS = {f"c{i}": NONNEGATIVE for i in range(1, 7)} | {"c": POSITIVE, "lambda_power": [Options((0.5, 1.0))],
                                                        "iteration": COUNT, "c4_term": [Options(C4_TERMS)]}


def _require_mu_at_most_L(mu, L):
    require(mu <= L, f"CFL-MGD's A1-A2 need mu <= L (a mu-strongly convex function is at most L-smooth "
                     f"only then); got mu={float(mu)!r} > L={float(L)!r}.")


@bound_params({"sigma": NONNEGATIVE, "delta": POSITIVE, "mu": POSITIVE, "n_prime": AT_LEAST_ONE,
               "P": COUNT, "c1": POSITIVE})
def lemma1(sigma, delta, mu, n_prime, P=2, c1=C1_LEMMA1) -> BoundResult:
    """Lemma 1, eq. (22): a client of cluster p is assigned to a given p' != p with
    probability at most

        c1 sigma^2 / (Delta^4 mu^2 n'),   c1 = 128 (eqs. 24-30: 2 x 64).

    Union bound, eq. (23): ``P`` times that (as printed); over the P - 1 wrong clusters
    only, ``(P - 1)`` times. A value >= 1 is vacuous.

    Parameters
    ----------
    sigma : float
        sigma of Assumption 3: the variance of the loss of one point is at most sigma^2
    delta : float
        Delta, the smallest distance between two cluster optima, min_{p != p'} ||chi*_p - chi*_p'||
    mu : float
        strong-convexity constant of Assumption 2 (mu <= L)
    n_prime : float
        n', the points per client in one batch
    P : int
        number of clusters
    c1 : float
        the lemma's constant; 128 is what its proof gives (eqs. 24-30: two Chebyshev terms of 64)
    """
    per_cluster = c1 * sigma**2 / (delta**4 * mu**2 * n_prime)
    derived = {"union_as_printed": P * per_cluster, "union_wrong_clusters": (P - 1) * per_cluster,
               "chebyshev_term": per_cluster / 2, "vacuous": float(per_cluster >= 1.0),
               "smallest_non_vacuous_n_prime": c1 * sigma**2 / (delta**4 * mu**2)}
    return BoundResult("MGD.L1", per_cluster, {"misassignment_per_cluster": per_cluster}, derived, (),
                       lemma1.__doc__)


@bound_params({"init_distance": NONNEGATIVE, "delta": POSITIVE, "mu": POSITIVE, "L": POSITIVE, "sigma": NONNEGATIVE,
               "n_prime": AT_LEAST_ONE, "P": COUNT, "l": PROPORTION, "m": COUNT,
               "d": COUNT, "max_center_norm": NONNEGATIVE, "C": POSITIVE})
def assumptions(*, init_distance, delta, mu, L, sigma, n_prime, P, l, m, d, max_center_norm=1.0,
                C=1.0) -> tuple[Inequality, ...]:
    """Assumptions 1-5 and Sec. 5's ``l m n' >~ d``, each inequality with both sides
    (``>~``/``<~`` read with the constant ``C``). A1-A2 (``mu <= L``), A4 (the init ball,
    ``n' >~ P sigma^2/(mu^2 Delta^4)``, ``max ||chi*|| <~ 1``; the printed ``p`` read as P);
    A3's sigma^2 and v^2 and A5 (unbiased gradients) are properties of the problem.

    Parameters
    ----------
    init_distance : float
        the largest initial distance, max_p ||chi_p^(0) - chi*_p||
    delta : float
        Delta, the smallest distance between two cluster optima, min_{p != p'} ||chi*_p - chi*_p'||
    mu : float
        strong-convexity constant of Assumption 2 (mu <= L)
    L : float
        smoothness constant of Assumption 1: each population loss is L-smooth
    sigma : float
        sigma of Assumption 3: the variance of the loss of one point is at most sigma^2
    n_prime : float
        n', the points per client in one batch
    P : int
        number of clusters
    l : float
        smallest cluster proportion, l = min_p |C*_p| / m (the share of clients in the smallest cluster)
    m : int
        number of clients
    d : int
        dimension of the models
    max_center_norm : float
        max_p ||chi*_p||, the largest optimum's norm (checked against 1 in "max ||chi*|| <~ 1")
    C : float
        the constant hidden in the paper's ">~" and "<~": x >~ y is checked as x >= C y, x <~ y as x <= C y
    """
    rows = [
        ("mu <= L (A1, A2)", mu, L, "<=", 1.0),
        ("||chi_p^(0) - chi*_p|| <= (1/4) sqrt(mu/L) Delta (A4)", init_distance, 0.25 * np.sqrt(mu / L) * delta, "<=",
         None),
        ("n' >~ P sigma^2 / (mu^2 Delta^4) (A4)", n_prime, C * P * sigma**2 / (mu**2 * delta**4), ">=", C),
        ("max_p ||chi*_p|| <~ 1 (A4)", max_center_norm, C * 1.0, "<=", C),
        ("l m n' >~ d (Sec. 5)", l * m * n_prime, C * d, ">=", C),
    ]
    return tuple(Inequality(name, lhs, rhs, rel, "CFL-MGD Assumptions", constant)
                 for name, lhs, rhs, rel, constant in rows)


@bound_params({"l": PROPORTION, "mu": POSITIVE, "L": POSITIVE})
def contraction_factor(l, mu, L) -> float:
    """Lemma 2's per-step factor ``1 - l mu / (8 L)`` (eq. 31, from A2 and A7)."""
    _require_mu_at_most_L(mu, L)
    return 1.0 - l * mu / (8.0 * L)


def drift_term(l, beta, c4=PROOF_CONSTANTS["c4"], c4_term="printed"):
    """The term of ``rho0`` no n', m or lambda shrinks: ``c4 l`` as printed (eq. 31, A27),
    ``beta c4 l`` in the derivation's reading (A22, A26; module docstring)."""
    return c4 * l * (beta if c4_term == "derivation" else 1.0)


def rho0_terms(*, v, sigma, L, mu, l, m, n_prime, P, delta, beta, lambdas, c1=PROOF_CONSTANTS["c1"],
               c2=PROOF_CONSTANTS["c2"], c3=PROOF_CONSTANTS["c3"], c4=PROOF_CONSTANTS["c4"],
               c5=PROOF_CONSTANTS["c5"], c6=PROOF_CONSTANTS["c6"], lambda_power=0.5, iteration=1,
               c4_term="printed") -> dict:
    """The seven terms of ``rho0`` (eq. 31 / A36) for ``lambdas = (lambda0, ..., lambda4)``
    (arrays broadcast); ``iteration`` is the appendix's t in the c3 and c6 terms (the
    statement has none: t = 1); ``c4_term`` the reading of the drift term (module
    docstring). Unchecked kernel of :func:`lemma2`."""
    lam0, lam1, lam2, lam3, lam4 = (np.asarray(x, dtype=float) for x in lambdas)
    v, sigma, L, mu, l, m, n_prime, P, delta, beta = map(np.float64, (v, sigma, L, mu, l, m, n_prime, P, delta, beta))
    q, t = lambda_power, float(iteration)
    misclustered = sigma**2 / (mu**2 * lam2 * delta**4 * n_prime)
    cross = v * sigma * np.sqrt(P) / (mu * L * delta**2 * n_prime * np.sqrt(m * lam2))
    return {
        "gradient_noise": 2 * v / (lam0**q * L * np.sqrt(l * m * n_prime)),
        "misclustered_gradients": c1 * misclustered,
        "misclustered_noise": c2 * cross / lam1**q,
        "momentum_noise": c3 * beta * v * np.sqrt(l * t) / (lam3**q * (1 - beta) * L * np.sqrt(m * n_prime)),
        "momentum_drift": np.full_like(lam0, drift_term(l, beta, c4, c4_term)),
        "momentum_misclustered": c5 * beta * misclustered,
        "momentum_misclustered_noise": c6 * beta * np.sqrt(t) * cross / (lam4**q * (1 - beta)),
    }


def failure_probability(lambdas, *, P, l, m, c=1.0):
    """Lemma 2's ``P lambda5`` with ``lambda5 = lambda0 + P lambda1 + 2 lambda2 + lambda3 + P lambda4
    + 4 exp(-c l m)`` (A35-A37)."""
    lam0, lam1, lam2, lam3, lam4 = lambdas
    return P * (lam0 + P * lam1 + 2 * lam2 + lam3 + P * lam4 + 4 * np.exp(-c * l * m))


_WEIGHTS = lambda P: np.array([1.0, P, 2.0, 1.0, P])  # lambda5's weights on lambda0..lambda4


def optimal_lambdas(failure, *, v, sigma, L, mu, l, m, n_prime, P, delta, beta, c=1.0, **constants):
    """The lambdas minimising ``rho0`` subject to ``P lambda5 <= failure`` (a convex problem in
    log lambda; SLSQP), or None when ``4 P exp(-c l m) >= failure`` leaves no budget
    (``c = inf`` leaves that term out of the budget). SLSQP runs on one BLAS thread: on two its
    result moved in the ninth digit (:mod:`cflbounds.bounds._blas`)."""
    budget = failure / P - 4 * np.exp(-c * l * m)
    if budget <= 0:
        return None
    weights = _WEIGHTS(P)
    problem = dict(v=v, sigma=sigma, L=L, mu=mu, l=l, m=m, n_prime=n_prime, P=P, delta=delta, beta=beta, **constants)
    start = np.log(np.full(5, budget / weights.sum()))
    scale = sum(rho0_terms(lambdas=np.exp(start), **problem).values())  # SLSQP's tolerance is absolute
    objective = lambda logs: sum(rho0_terms(lambdas=np.exp(logs), **problem).values()) / scale
    with one_blas_thread():
        result = optimize.minimize(objective, start, method="SLSQP", options={"ftol": 1e-12, "maxiter": 500},
                                   bounds=[(np.log(budget) - 60.0, np.log(budget))] * 5,
                                   constraints=[{"type": "ineq",
                                                 "fun": lambda logs: 1.0 - weights @ np.exp(logs) / budget}])
    lambdas = np.exp(result.x)
    return lambdas * min(1.0, budget / (weights @ lambdas))  # exactly feasible after the solver's tolerance


_LEMMA2 = {"distance": NONNEGATIVE, **_PROBLEM, "m": COUNT, "n_prime": AT_LEAST_ONE, **_LAMBDAS,
           **_CONSTANTS}


@bound_params(_LEMMA2)
def lemma2(distance, *, v, sigma, L, mu, l, m, n_prime, P, delta, beta, lambda0=0.01, lambda1=0.01, lambda2=0.01,
               lambda3=0.01, lambda4=0.01, c1=PROOF_CONSTANTS["c1"], c2=PROOF_CONSTANTS["c2"], c3=PROOF_CONSTANTS["c3"],
               c4=PROOF_CONSTANTS["c4"], c5=PROOF_CONSTANTS["c5"], c6=PROOF_CONSTANTS["c6"], c=1.0, lambda_power=0.5,
               iteration=1, c4_term="printed") -> BoundResult:
    """Lemma 2, eq. (31): with ``eta = 1/L``, w.p. at least ``1 - P lambda5``, for all p,

        ||chi_p^(t+1) - chi*_p|| <= (1 - l mu/(8L)) ||chi_p^(t) - chi*_p|| + rho0.

    ``rho0`` is eq. (31)/(A36) with all seven terms (``derived["rho0"]``), its drift term
    ``c4 l`` as printed or ``beta c4 l`` (``c4_term="derivation"``, module docstring).
    ``distance`` is ``||chi_p^(t) - chi*_p||``. The bound is vacuous (no decrease promised)
    when it is at least ``distance``: ``derived["vacuous"]``.

    Parameters
    ----------
    distance : float
        ||chi_p^(t) - chi*_p||, the distance before the step
    v : float
        v of Assumption 3: the variance of a client's stochastic gradient is at most v^2
    sigma : float
        sigma of Assumption 3: the variance of the loss of one point is at most sigma^2
    L : float
        smoothness constant of Assumption 1: each population loss is L-smooth
    mu : float
        strong-convexity constant of Assumption 2 (mu <= L)
    l : float
        smallest cluster proportion, l = min_p |C*_p| / m (the share of clients in the smallest cluster)
    m : int
        number of clients
    n_prime : float
        n', the points per client in one batch
    P : int
        number of clusters
    delta : float
        Delta, the smallest distance between two cluster optima, min_{p != p'} ||chi*_p - chi*_p'||
    beta : float
        heavy-ball momentum, 0 <= beta < 1 (beta = 0 is IFCA)
    lambda0, lambda1, lambda2, lambda3, lambda4 : float
        failure probabilities of the five Markov/Chebyshev steps of the proof; the lemma holds with probability at
        least 1 - P lambda5, lambda5 = lambda0 + P lambda1 + 2 lambda2 + lambda3 + P lambda4 + 4 exp(-c l m)
    c1, c2, c3, c4, c5, c6 : float
        constants of rho0's terms (eq. 31/A36); the defaults are the ones the proof makes explicit (module
        docstring)
    c : float
        constant in lambda5's term 4 exp(-c l m)
    lambda_power : float
        how a lambda enters rho0, lost with the radical signs of the extracted text: 0.5 for 1/sqrt(lambda)
        (Chebyshev on the squared norm), 1.0 for 1/lambda (Markov on the norm)
    iteration : int
        the appendix's t in the c3 and c6 terms (the statement has none: t = 1)
    c4_term : str
        the reading of rho0's drift term: "printed" (c4 l, eq. 31 and A27) or "derivation" (beta c4 l, A22 and
        A26)
    """
    _require_mu_at_most_L(mu, L)
    lambdas = (lambda0, lambda1, lambda2, lambda3, lambda4)
    terms = rho0_terms(v=v, sigma=sigma, L=L, mu=mu, l=l, m=m, n_prime=n_prime, P=P, delta=delta, beta=beta,
                       lambdas=lambdas, c1=c1, c2=c2, c3=c3, c4=c4, c5=c5, c6=c6, lambda_power=lambda_power,
                       iteration=iteration, c4_term=c4_term)
    rho0 = sum(terms.values())
    factor = contraction_factor(l, mu, L)
    value = factor * distance + rho0
    derived = {"rho0": rho0, "contraction_factor": factor, "step_size": 1.0 / L,
               "failure_probability": failure_probability(lambdas, P=P, l=l, m=m, c=c),
               "vacuous": float(value >= distance), "drift_share_of_rho0": terms["momentum_drift"] / rho0}
    rows = (Inequality("||chi_p - chi*_p|| <= (1/4) sqrt(mu/L) Delta (A4)", distance, 0.25 * np.sqrt(mu / L) * delta,
                       "<=", "CFL-MGD Assumption 4"),
            Inequality("P lambda5 < 1", derived["failure_probability"], 1.0, "<=", "CFL-MGD Lemma 2"))
    return BoundResult("MGD.L2", value, {"contraction": factor * distance, **terms}, derived, rows, lemma2.__doc__)


@bound_params({"m": COUNT, "n_prime": AT_LEAST_ONE})
def rate_shape(m, n_prime) -> float:
    """Theorem 1's claimed order ``1/sqrt(m n') + 1/n' + 1/(n' sqrt(m))`` (constants dropped)."""
    m, n_prime = np.float64(m), np.float64(n_prime)
    return 1 / np.sqrt(m * n_prime) + 1 / n_prime + 1 / (n_prime * np.sqrt(m))


@bound_params({**_LEMMA2, "rho_constant": [Options(("l", "P"))]})
def theorem1(*, v, sigma, L, mu, l, m, n_prime, P, delta, beta, lambda0=0.01, lambda1=0.01, lambda2=0.01,
               lambda3=0.01, lambda4=0.01, c1=PROOF_CONSTANTS["c1"], c2=PROOF_CONSTANTS["c2"], c3=PROOF_CONSTANTS["c3"],
               c4=PROOF_CONSTANTS["c4"], c5=PROOF_CONSTANTS["c5"], c6=PROOF_CONSTANTS["c6"], c=1.0, lambda_power=0.5,
               iteration=1, c4_term="printed", distance=0.0, rho_constant="l") -> BoundResult:
    """Theorem 1, eq. (11): with ``eta = 1/L``, after ``T = (8L/(l mu)) log(Delta/(2 rho))``
    iterations, ``||chi_p^(T) - chi*_p|| <= rho = (16 L/(mu l)) rho0`` for all p, given

        (A38)  rho0 <= (l/32) (mu/L)^(3/2) Delta.

    The statement prints ``16L/(mu p) rho0``; (A42) prints ``16L/(mu l)``: ``rho_constant``
    chooses l (default) or P; ``c4_term`` the reading of rho0's drift term (``c4 l`` as
    printed, ``beta c4 l`` as derived: module docstring). ``derived["vacuous"]`` when rho is
    not below the initial radius ``(1/4) sqrt(mu/L) Delta`` of Assumption 4; ``iterations``
    is 0 when ``Delta/(2 rho) <= 1``; ``a38_satisfiable`` whether large enough n', m could
    make A38 hold (the drift term below its threshold: :func:`a38_satisfiability`).
    ``distance`` is the initial ``||chi_p^(0) - chi*_p||``.

    Parameters
    ----------
    v : float
        v of Assumption 3: the variance of a client's stochastic gradient is at most v^2
    sigma : float
        sigma of Assumption 3: the variance of the loss of one point is at most sigma^2
    L : float
        smoothness constant of Assumption 1: each population loss is L-smooth
    mu : float
        strong-convexity constant of Assumption 2 (mu <= L)
    l : float
        smallest cluster proportion, l = min_p |C*_p| / m (the share of clients in the smallest cluster)
    m : int
        number of clients
    n_prime : float
        n', the points per client in one batch
    P : int
        number of clusters
    delta : float
        Delta, the smallest distance between two cluster optima, min_{p != p'} ||chi*_p - chi*_p'||
    beta : float
        heavy-ball momentum, 0 <= beta < 1 (beta = 0 is IFCA)
    lambda0, lambda1, lambda2, lambda3, lambda4 : float
        failure probabilities of the five Markov/Chebyshev steps of the proof; the lemma holds with probability at
        least 1 - P lambda5, lambda5 = lambda0 + P lambda1 + 2 lambda2 + lambda3 + P lambda4 + 4 exp(-c l m)
    c1, c2, c3, c4, c5, c6 : float
        constants of rho0's terms (eq. 31/A36); the defaults are the ones the proof makes explicit (module
        docstring)
    c : float
        constant in lambda5's term 4 exp(-c l m)
    lambda_power : float
        how a lambda enters rho0, lost with the radical signs of the extracted text: 0.5 for 1/sqrt(lambda)
        (Chebyshev on the squared norm), 1.0 for 1/lambda (Markov on the norm)
    iteration : int
        the appendix's t in the c3 and c6 terms (the statement has none: t = 1)
    c4_term : str
        the reading of rho0's drift term: "printed" (c4 l, eq. 31 and A27) or "derivation" (beta c4 l, A22 and
        A26)
    distance : float
        the initial distance ||chi_p^(0) - chi*_p|| (for Assumption 4's init condition)
    rho_constant : str
        the proportion in rho = (16 L/(mu X)) rho0: "l" as (A42) prints it, or "P" as the statement prints it
    """
    _require_mu_at_most_L(mu, L)
    lemma = lemma2(0.0, v=v, sigma=sigma, L=L, mu=mu, l=l, m=m, n_prime=n_prime, P=P, delta=delta, beta=beta,
                   lambda0=lambda0, lambda1=lambda1, lambda2=lambda2, lambda3=lambda3, lambda4=lambda4, c1=c1, c2=c2,
                   c3=c3, c4=c4, c5=c5, c6=c6, c=c, lambda_power=lambda_power, iteration=iteration, c4_term=c4_term)
    rho0 = lemma.derived["rho0"]
    rho = 16 * L / (mu * (l if rho_constant == "l" else P)) * rho0
    threshold = l / 32 * (mu / L) ** 1.5 * delta
    radius = 0.25 * np.sqrt(mu / L) * delta
    iterations = 8 * L / (l * mu) * np.log(delta / (2 * rho))
    derived = {"rho0": rho0, "a38_threshold": threshold, "a38_holds": float(rho0 <= threshold),
               "a38_satisfiable": float(drift_term(l, beta, c4, c4_term) < threshold),
               "iterations": max(0.0, iterations), "initial_radius": radius, "vacuous": float(rho >= radius),
               "failure_probability_per_step": lemma.derived["failure_probability"],
               "failure_probability_over_T": max(1.0, iterations) * lemma.derived["failure_probability"],
               "rate_shape": rate_shape(m, n_prime), "contraction_factor": contraction_factor(l, mu, L)}
    rows = (Inequality("rho0 <= (l/32) (mu/L)^(3/2) Delta (A38)", rho0, threshold, "<=", "CFL-MGD Theorem 1"),
            *assumptions(init_distance=distance, delta=delta, mu=mu, L=L, sigma=sigma, n_prime=n_prime, P=P, l=l,
                         m=m, d=1)[:2])
    return BoundResult("MGD.T1", rho, {"rho": rho}, derived, rows, theorem1.__doc__)


@bound_params({**_PROBLEM, "failure": PROBABILITY, "max_center_norm": NONNEGATIVE, "C": POSITIVE,
               "m_max": [Interval(Integral, 2, None, closed="left")], "points": [Interval(Integral, 2, 200)],
               **{k: v for k, v in _CONSTANTS.items() if k != "iteration"}})
def a38_satisfiability(*, v, sigma, L, mu, l, P, delta, beta, failure=0.1, max_center_norm=1.0, C=1.0,
                       m_max=10**7, points=13, c1=PROOF_CONSTANTS["c1"], c2=PROOF_CONSTANTS["c2"],
                       c3=PROOF_CONSTANTS["c3"], c4=PROOF_CONSTANTS["c4"], c5=PROOF_CONSTANTS["c5"],
                       c6=PROOF_CONSTANTS["c6"], c=1.0, lambda_power=0.5, c4_term="printed") -> BoundResult:
    """Theorem 1's condition (A38) ``rho0 <= (l/32)(mu/L)^(3/2) Delta``: can any n', m (and
    lambdas with ``P lambda5 <= failure``) make it hold for these problem constants?

    Every term of ``rho0`` vanishes as ``n', m -> inf`` except the drift term D (``c4 l`` as
    printed; ``beta c4 l`` with ``c4_term="derivation"``, module docstring), so A38 is
    satisfiable iff ``D < (l/32)(mu/L)^(3/2) Delta``. As printed: ``Delta > 32 c4
    (L/mu)^(3/2)`` (8 (L/mu)^(3/2) with the proof's c4 = 1/4); in the derivation's reading
    ``Delta > 32 beta c4 (L/mu)^(3/2)``, i.e. ``beta < (mu/L)^(3/2) Delta/(32 c4)``
    (``derived["beta_limit"]``; IFCA's beta = 0 always qualifies). Assumption 4's ``max
    ||chi*|| <~ 1`` (read ``<= C``) allows ``Delta <= 2 C max ||chi*||``: the second row.
    When satisfiable, the smallest n' is found for each m of a geometric grid up to
    ``m_max`` (lambdas optimised). ``value``: the smallest ``m n'`` found (inf if none).
    """
    _require_mu_at_most_L(mu, L)
    constants = dict(c1=c1, c2=c2, c3=c3, c4=c4, c5=c5, c6=c6, lambda_power=lambda_power, c4_term=c4_term)
    threshold = l / 32 * (mu / L) ** 1.5 * delta
    drift = drift_term(l, beta, c4, c4_term)
    needed = 32 * drift / l * (L / mu) ** 1.5
    problem = dict(v=v, sigma=sigma, L=L, mu=mu, l=l, P=P, delta=delta, beta=beta)
    m_min = max(1.0 / l, np.log(4 * P / failure) / (c * l))
    grid = np.unique(np.ceil(np.geomspace(m_min, max(m_max, 2 * m_min), points)).astype(np.int64))
    smallest = np.full(grid.size, np.inf)
    if drift < threshold:
        for i, m in enumerate(grid):
            smallest[i] = _smallest_n_prime(threshold, failure, c, dict(problem, m=int(m)), constants)
    samples = grid * smallest
    best = int(np.argmin(samples)) if np.isfinite(samples).any() else None
    derived = {"satisfiable": float(drift < threshold), "a38_threshold": threshold, "rho0_limit": drift,
               "separation_needed": needed, "separation_allowed_by_A4": 2 * C * max_center_norm,
               "beta_limit": threshold / (c4 * l), "m_grid": grid, "smallest_n_prime": smallest,
               "best_m": grid[best] if best is not None else np.inf,
               "best_n_prime": smallest[best] if best is not None else np.inf}
    factor = "32 beta c4" if c4_term == "derivation" else "32 c4"
    rows = (Inequality(f"Delta > {factor} (L/mu)^(3/2) (A38 as n', m -> inf)", delta, needed, ">", "CFL-MGD (A38)"),
            Inequality(f"{factor} (L/mu)^(3/2) < 2 C max||chi*|| (A38 and A4 together)", needed,
                       2 * C * max_center_norm, "<", "CFL-MGD (A38), Assumption 4", C))
    value = samples[best] if best is not None else np.inf
    return BoundResult("MGD.T1", value, {"smallest_m_n_prime": value}, derived, rows, a38_satisfiability.__doc__)


def _smallest_n_prime(threshold, failure, c, problem, constants, rounds=50):
    """Smallest n' with ``min_lambda rho0(n') <= threshold``. For fixed lambdas ``rho0 = D + A x
    + B x^2`` with ``x = n'^(-1/2)`` (D the drift term), solved in closed form; alternating
    that with the lambdas' optimisation at the new n' decreases n' monotonically to the
    smallest one (the problem in lambda is convex)."""
    n_prime, lambdas = np.inf, optimal_lambdas(failure, n_prime=1.0, c=c, **problem, **constants)
    if lambdas is None:
        return np.inf
    for _ in range(rounds):
        terms = rho0_terms(lambdas=lambdas, n_prime=1.0, **problem, **constants)
        A = terms["gradient_noise"] + terms["momentum_noise"]
        B = sum(terms.values()) - A - terms["momentum_drift"]
        room = threshold - terms["momentum_drift"]
        x = room / A if B == 0 else (np.sqrt(A**2 + 4 * B * room) - A) / (2 * B)
        updated = max(1.0, float(1.0 / x**2))
        if updated >= n_prime * (1 - 1e-4):
            return min(n_prime, updated)
        n_prime = updated
        lambdas = optimal_lambdas(failure, n_prime=n_prime, c=c, **problem, **constants)
    return n_prime


_MA = {"step": POSITIVE, "L": POSITIVE, "cluster_size": AT_LEAST_ONE, "beta": _BETA}


def _three_errors(errors) -> bool:
    """Three non-negative finite arrays that broadcast together (eq. 16's eps_0, eps_1, eps_2)."""
    if isinstance(errors, (str, bytes, dict)) or len(errors) != 3 or not all(ArrayLike.is_satisfied_by(e)
                                                                               for e in errors):
        return False
    arrays = [np.asarray(e, dtype=float) for e in errors]
    np.broadcast_shapes(*(a.shape for a in arrays))  # raises (rejects) when they do not broadcast
    return all(np.all(a >= 0) for a in arrays)


_ERRORS = [Constraint(_three_errors, "three measured errors (eps_0, eps_1, eps_2): non-negative finite numbers or "
                                     "arrays that broadcast together")]


@bound_params({"errors": _ERRORS, **_MA, "iterations": [Interval(Integral, 2, 10**6)]})
def model_averaging_recursion(errors, *, step, L, cluster_size, beta, iterations) -> np.ndarray:
    """Eq. (16) iterated from measured ``errors = (eps_0, eps_1, eps_2)`` (arrays broadcast):

        eps_(t+1) <= (1 + eta L/|C_p|) eps_t + beta (1 + beta) eps_(t-1)^2 eps_(t-2)^2,

    returns the bounds ``(..., iterations + 1)`` for t = 0..iterations (the first three are
    the measured values). Errors are distances: NaN, infinite or negative ones are rejected."""
    errors = [np.asarray(e, dtype=float) for e in errors]
    growth = 1 + step * L / cluster_size
    bounds = list(np.broadcast_arrays(*errors))
    for _ in range(iterations - 2):
        with np.errstate(invalid="ignore"):  # an exact 0 times an overflowed (inf) bound is 0, not NaN
            pair = np.where((bounds[-2] == 0) | (bounds[-3] == 0), 0.0, bounds[-2] * bounds[-3])
        bounds.append(growth * bounds[-1] + (beta * (1 + beta) * pair**2 if beta > 0 else 0.0))
    return np.stack(bounds, axis=-1)


@bound_params({"eps0": PROBABILITY, **_MA, "beta": PROBABILITY,
               "T": [Interval(Integral, 0, 10**6)]})
def model_averaging_bound(eps0, *, step, L, cluster_size, beta, T) -> BoundResult:
    """Model averaging's final bound, eq. (20), as the paper writes it:

        eps_0 <= (2 M^3/beta) (1/(T+2)) (eta L/|C_p| + beta (1+beta)) log2(1/eps_0) + (M^(T+3)/(M-1)) eps_0,
        M = max{1 + eta L/|C_p|, beta (1 + beta)}.

    The first term is the claimed O~(1/T).
    ``value`` is the right-hand side; ``derived["vacuous"]`` when it is not below
    ``eps_0`` (it bounds nothing smaller than the initial error).

    Parameters
    ----------
    eps0 : float
        eps_0, the initial error (0 < eps_0 < 1, so that log2(1/eps_0) is positive)
    step : float
        eta, the step size of the local steps
    L : float
        smoothness constant of Assumption 1
    cluster_size : float
        |C_p|, the number of clients in the cluster
    beta : float
        heavy-ball momentum, 0 < beta < 1 (the bound divides by beta)
    T : int
        number of rounds
    """
    ratio = step * L / cluster_size
    excess = max(ratio, beta * (1 + beta) - 1)  # M - 1, without the cancellation of 1 + ratio - 1
    M = 1 + excess
    # M^(T+3)/(M-1) as M^(T+2) (1 + 1/(M-1)): exact, and inf (not inf/inf) when M overflows
    terms = {"rate_term": 2 * M**3 / beta / (T + 2) * (ratio + beta * (1 + beta)) * np.log2(1 / eps0),
             "growth_term": M ** (T + 2) * (1 + 1 / excess) * eps0}
    value = sum(terms.values())
    derived = {"M": M, "recursion_factor": 1 + ratio, "vacuous": float(value >= eps0)}
    return BoundResult("MGD.MA", value, terms, derived, (), model_averaging_bound.__doc__)
