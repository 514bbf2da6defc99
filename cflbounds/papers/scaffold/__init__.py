"""SCAFFOLD (Karimireddy, Kale, Mohri, Reddi, Stich, Suresh, ICML 2020): its rates as rate and
ordering claims along sweeps (:mod:`.checks`; readings in :mod:`.rounds`), each formula with its
hidden constant named (:mod:`cflbounds.bounds.scaffold`: ``c`` is never assumed, the checks
report the range the runs need). ``CLAIMS`` joins the other papers' in :mod:`cflbounds.papers`.

The main text's statements are O~/Omega rates whose constants (and log factors) are hidden, so no
single run can exceed them: each check judges a rate or an ordering along a sweep, and T1 and T4
declare domains (:mod:`.domain`) whose instances are pairs of runs on one problem, the hidden
constant cancelling in their ratio (FedAvg's rounds' growth with G, SCAFFOLD's rounds at K against
K = 1). T2 (an existential lower bound) and T3 (an ordering of two O~ rates) have none. The paper has no official code:
the readings are the algorithm's text (Alg. 1, both options).
"""
from functools import partial

from cflbounds.bounds import scaffold as bounds
from cflbounds.claims import Claim
from . import checks
from .domain import DOMAINS

claim = partial(Claim, paper="SCAFFOLD", reference="Karimireddy, Kale, Mohri, Reddi, Stich, Suresh, SCAFFOLD: "
                                                    "Stochastic Controlled Averaging for Federated Learning, ICML 2020 "
                                                    "(arXiv:1910.06378)")

CLAIMS = [
    claim("SCAFFOLD.T1", "FedAvg, mu-strongly convex: R = O~(sigma^2/(mu K S eps) + (1 - S/N) G^2/(mu S eps) "
          "+ sqrt(beta) G/(mu sqrt(eps)) + B^2 beta/mu) rounds to eps.", checks.check_t1, bounds.theorem1_rounds,
          domain=DOMAINS["SCAFFOLD.T1"]),
    claim("SCAFFOLD.T2", "FedAvg lower bound: some mu-strongly convex functions with (G, B)-bounded dissimilarity keep "
          "FedAvg (K >= 2, sigma = 0, S = N) at f(x^R) - f* >= Omega(G^2/(mu R^2)).", checks.check_t2,
          bounds.theorem2_lower,
          no_domain="an Omega(G^2/(mu R^2)) lower bound, existential (on functions the paper builds) and with its "
                    "constant hidden: no single instance can refute it; judged as a floor rate in R"),
    claim("SCAFFOLD.T3", "SCAFFOLD, mu-strongly convex: R = O~(sigma^2/(mu K S eps) + beta/mu + N/S) rounds to eps, "
          "independent of G.", checks.check_t3, bounds.theorem3_rounds,
          no_domain="an ordering of two O~ rates (FedAvg's rounds grow with G, SCAFFOLD's only by the log factor its O~ "
                    "hides): one problem's rounds cannot refute it; judged on a sweep of G, paired over problems"),
    claim("SCAFFOLD.T4", "SCAFFOLD on quadratics with delta-bounded Hessian dissimilarity (S = N, eta_g = 1): "
          "R = O~(beta sigma^2/(mu K N eps) + (beta + delta K)/(mu K)) rounds to eps.", checks.check_t4,
          bounds.theorem4_rounds, domain=DOMAINS["SCAFFOLD.T4"]),
]
