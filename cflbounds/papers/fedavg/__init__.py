"""FedAvg on non-iid data (Li, Huang, Yang, Wang, Zhang, ICLR 2020): Theorems 1-3 and the
unbalanced remark measured on heterogeneous quadratics with exact constants and G^2 measured on
the runs (:mod:`.checks`, :mod:`.domain`), Theorem 4 as a floor rate (:mod:`.limit`), and two
reductions between the theorems on formulas (T3-FROM-T1, T3U-FROM-T3). ``CLAIMS`` joins the other
papers' in :mod:`cflbounds.papers`.

Readings (:mod:`.runs` names them; every verdict's details say which it judged): the printed step
``eta_t = 2/(mu (gamma + t))`` from ``t = 1`` (the proof's ``zero-based`` schedule and the
official code's per-round ``lr/(round + 1)`` reported beside it in FEDAVG.T1); ``w_T`` after
``T = R E`` local steps; the code's gradient clipping at 60 inactive on these problems and its
Scheme II ``100/K`` equal to ``N/K`` only at N = 100 (a cell of FEDAVG.T3); for FEDAVG.T3U the
remark's algorithm (Scheme II on ``F~_k = p_k N F_k``) and its printed substitution
(``noise_scaling="printed"``), the ``linear`` one and Scheme II's own weights reported.
"""
from functools import partial

from cflbounds.bounds import fedavg as bounds
from cflbounds.claims import Claim
from . import checks, limit
from .domain import DOMAINS, FOLLOWS_DOMAINS

T4_NO_DOMAIN = ("an Omega((E - 1) eta) whose constant the paper hides and which it shows on one problem it builds "
                "(existential): no single instance can exceed it; checked as a floor rate over a sweep of (E - 1) eta "
                "where it applies (distinct Hessians), with the controls where it does not")

claim = partial(Claim, paper="FedAvg", reference="Li, Huang, Yang, Wang, Zhang, On the Convergence of FedAvg on "
                                                  "Non-IID Data, ICLR 2020 (arXiv:1907.02189)")

CLAIMS = [
    claim("FEDAVG.T1", "Full participation, eta_t = 2/(mu (gamma + t)), gamma = max{8 kappa, E}: E[F(w_T)] - F* <= "
          "kappa/(gamma + T - 1) (2B/mu + (mu gamma/2) E||w_1 - w*||^2), B = sum_k p_k^2 sigma_k^2 + 6 L Gamma "
          "+ 8 (E - 1)^2 G^2.", checks.check_t1, bounds.theorem1, domain=DOMAINS["FEDAVG.T1"]),
    claim("FEDAVG.T2", "Scheme I (K devices drawn with replacement with probabilities p_k, plain average): Theorem 1's "
          "bound with B + C, C = (4/K) E^2 G^2.", checks.check_t2, bounds.theorem2, domain=DOMAINS["FEDAVG.T2"]),
    claim("FEDAVG.T3", "Scheme II (K of N devices drawn without replacement, weights N/K p_k, balanced data): "
          "Theorem 1's bound with B + C, C = ((N - K)/(N - 1)) (4/K) E^2 G^2.", checks.check_t3, bounds.theorem3, domain=DOMAINS["FEDAVG.T3"]),
    claim("FEDAVG.T3U", "Scheme II on unbalanced data: Theorem 3 with L, mu, sigma_k, G replaced by nu L, varsigma mu, "
          "sqrt(nu) sigma_k, sqrt(nu) G (nu = N max_k p_k, varsigma = N min_k p_k).", checks.check_t3u,
          bounds.theorem3_unbalanced, domain=DOMAINS["FEDAVG.T3U"]),
    claim("FEDAVG.T4", "With E > 1 and a constant step eta, FedAvg's limit is Omega((E - 1) eta) away from w* (a rate: "
          "the problem's constants are hidden).", limit.check_t4, bounds.theorem4_rate, no_domain=T4_NO_DOMAIN),
    claim("FEDAVG.T3-FROM-T1", "Theorem 3 with every device sampled (K = N: Scheme II is full participation, C = 0) "
          "gives Theorem 1's bound, over Theorem 1's whole range of constants.", bound=bounds.theorem3,
          domain=FOLLOWS_DOMAINS["FEDAVG.T3-FROM-T1"]),
    claim("FEDAVG.T3U-FROM-T3", "The unbalanced remark at balanced weights (nu = varsigma = 1) gives Theorem 3's bound, "
          "under either substitution (printed sqrt(nu) or linear nu).", bound=bounds.theorem3_unbalanced,
          domain=FOLLOWS_DOMAINS["FEDAVG.T3U-FROM-T3"]),
]
