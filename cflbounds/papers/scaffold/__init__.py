"""SCAFFOLD (Karimireddy, Kale, Mohri, Reddi, Stich, Suresh, ICML 2020): its rates, each with its
formula and the hidden constant named (:mod:`cflbounds.bounds.scaffold`); their checks and
domains are still to come. ``CLAIMS`` joins the other papers' in :mod:`cflbounds.papers`.
"""
from functools import partial

from cflbounds.bounds import scaffold as bounds
from cflbounds.claims import Claim

claim = partial(Claim, paper="SCAFFOLD", reference="Karimireddy, Kale, Mohri, Reddi, Stich, Suresh, SCAFFOLD: "
                                                    "Stochastic Controlled Averaging for Federated Learning, ICML 2020 "
                                                    "(arXiv:1910.06378)")

CLAIMS = [
    claim("SCAFFOLD.T1", "FedAvg, mu-strongly convex: R = O~(sigma^2/(mu K S eps) + (1 - S/N) G^2/(mu S eps) "
          "+ sqrt(beta) G/(mu sqrt(eps)) + B^2 beta/mu) rounds to eps.", bound=bounds.theorem1_rounds),
    claim("SCAFFOLD.T2", "FedAvg lower bound: some mu-strongly convex functions with (G, B)-bounded dissimilarity keep "
          "FedAvg (K >= 2, sigma = 0, S = N) at f(x^R) - f* >= Omega(G^2/(mu R^2)).", bound=bounds.theorem2_lower),
    claim("SCAFFOLD.T3", "SCAFFOLD, mu-strongly convex: R = O~(sigma^2/(mu K S eps) + beta/mu + N/S) rounds to eps, "
          "independent of G.", bound=bounds.theorem3_rounds),
    claim("SCAFFOLD.T4", "SCAFFOLD on quadratics with delta-bounded Hessian dissimilarity (S = N, eta_g = 1): "
          "R = O~(beta sigma^2/(mu K N eps) + (beta + delta K)/(mu K)) rounds to eps.", bound=bounds.theorem4_rounds),
]
