"""FedProx (Li, Sahu, Zaheer, Sanjabi, Talwalkar, Smith, MLSys 2020): its theorems and corollary,
each with its formula (:mod:`cflbounds.bounds.fedprox`); their checks and domains are still to
come. ``CLAIMS`` joins the other papers' in :mod:`cflbounds.papers`.
"""
from functools import partial

from cflbounds.bounds import fedprox as bounds
from cflbounds.claims import Claim

claim = partial(Claim, paper="FedProx", reference="Li, Sahu, Zaheer, Sanjabi, Talwalkar, Smith, Federated "
                                                   "Optimization in Heterogeneous Networks, MLSys 2020 "
                                                   "(arXiv:1812.06127)")

CLAIMS = [
    claim("FEDPROX.T4", "One round with B(w^t) <= B and gamma-inexact local solves: E f(w^(t+1)) <= f(w^t) - rho "
          "||grad f(w^t)||^2, rho = 1/mu - gamma B/mu - sqrt(2) B (1 + gamma)/(mu_bar sqrt(K)) - L B (1 + gamma)/"
          "(mu_bar mu) - L (1 + gamma)^2 B^2/(2 mu_bar^2) - L B^2 (1 + gamma)^2 (2 sqrt(2K) + 2)/(mu_bar^2 K) > 0.",
          bound=bounds.theorem4),
    claim("FEDPROX.C7", "Convex F_k, exact local solves (gamma = 0), 1 << B <= 0.5 sqrt(K): mu ~ 6 L B^2 gives "
          "rho ~ 1/(24 L B^2).", bound=bounds.corollary7),
    claim("FEDPROX.T6", "B(w) <= B_eps wherever ||grad f(w)||^2 > eps: after T = O(Delta/(rho eps)) rounds "
          "(1/T) sum_(t<T) E||grad f(w^t)||^2 <= eps (encoded as T = ceil(Delta/(rho eps)), the telescoping's "
          "constant).", bound=bounds.theorem6_rounds),
    claim("FEDPROX.T11", "Bounded variance E_k||grad F_k(w) - grad f(w)||^2 <= sigma^2: Theorem 4's rho holds with "
          "B = sqrt(1 + sigma^2/eps) whenever ||grad f(w^t)||^2 >= eps.", bound=bounds.theorem11),
]
