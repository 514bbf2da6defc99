"""FedProx (Li, Sahu, Zaheer, Sanjabi, Talwalkar, Smith, MLSys 2020): Theorems 4, 6 and 11 and
Corollary 7 measured on heterogeneous quadratics with exact constants and exact expectations
over the sampling (:mod:`.checks`, :mod:`.domain`), and the corollary as a consequence of
Theorem 4 (FEDPROX.C7-FROM-T4, on formulas). ``CLAIMS`` joins the other papers' in
:mod:`cflbounds.papers`.

Readings (docs/papers.md): the statements are CATALOGUE.md's ([V]; the primary text was not
reachable here, :mod:`cflbounds.bounds.fedprox`); the claims judge the paper's sampling (K slots
i.i.d. from p_k, plain average: the analysis'), the authors' code's (K of N uniformly without
replacement, n_k weights) is reported beside FEDPROX.T4. Constants the hypotheses leave free are
taken as small as they allow: B = B(w^t), gamma the largest realised gamma_k, B_eps exact.
Corollary 7's "1 << B" is read as B >= 3 and its "mu ~ 6 L B^2, rho ~ 1/(24 L B^2)" as
equalities (the claim then promises that decrease).
"""
from functools import partial

from cflbounds.bounds import fedprox as bounds
from cflbounds.claims import Claim
from . import checks
from .domain import C7_DOMAIN, FOLLOWS_DOMAIN, T4_DOMAIN, T6_DOMAIN, T11_DOMAIN

claim = partial(Claim, paper="FedProx", reference="Li, Sahu, Zaheer, Sanjabi, Talwalkar, Smith, Federated "
                                                   "Optimization in Heterogeneous Networks, MLSys 2020 "
                                                   "(arXiv:1812.06127)")

CLAIMS = [
    claim("FEDPROX.T4", "One round with B(w^t) <= B and gamma-inexact local solves: E f(w^(t+1)) <= f(w^t) - rho "
          "||grad f(w^t)||^2, rho = 1/mu - gamma B/mu - sqrt(2) B (1 + gamma)/(mu_bar sqrt(K)) - L B (1 + gamma)/"
          "(mu_bar mu) - L (1 + gamma)^2 B^2/(2 mu_bar^2) - L B^2 (1 + gamma)^2 (2 sqrt(2K) + 2)/(mu_bar^2 K) > 0.",
          checks.check_t4, bounds.theorem4, domain=T4_DOMAIN),
    claim("FEDPROX.C7", "Convex F_k, exact local solves (gamma = 0), 1 << B <= 0.5 sqrt(K): mu ~ 6 L B^2 gives "
          "rho ~ 1/(24 L B^2).", checks.check_c7, bounds.corollary7, domain=C7_DOMAIN),
    claim("FEDPROX.T6", "B(w) <= B_eps wherever ||grad f(w)||^2 > eps: after T = O(Delta/(rho eps)) rounds "
          "(1/T) sum_(t<T) E||grad f(w^t)||^2 <= eps (encoded as T = ceil(Delta/(rho eps)), the telescoping's "
          "constant).", checks.check_t6, bounds.theorem6_rounds, domain=T6_DOMAIN),
    claim("FEDPROX.T11", "Bounded variance E_k||grad F_k(w) - grad f(w)||^2 <= sigma^2: Theorem 4's rho holds with "
          "B = sqrt(1 + sigma^2/eps) whenever ||grad f(w^t)||^2 >= eps.", checks.check_t11, bounds.theorem11,
          domain=T11_DOMAIN),
    claim("FEDPROX.C7-FROM-T4", "Corollary 7 follows from Theorem 4 over its range: for every B >= 3 (1 << B) with "
          "B <= 0.5 sqrt(K), Theorem 4's rho at gamma = 0, L_minus = 0, mu = 6 L B^2 is at least 1/(24 L B^2).",
          checks.check_c7_follows, bounds.corollary7_follows, domain=FOLLOWS_DOMAIN),
]
