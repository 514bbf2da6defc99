"""FedAvg on non-iid data (Li, Huang, Yang, Wang, Zhang, ICLR 2020): its theorems, each with its
formula (:mod:`cflbounds.bounds.fedavg`); their checks and domains are still to come. ``CLAIMS``
joins the other papers' in :mod:`cflbounds.papers`.
"""
from functools import partial

from cflbounds.bounds import fedavg as bounds
from cflbounds.claims import Claim

claim = partial(Claim, paper="FedAvg", reference="Li, Huang, Yang, Wang, Zhang, On the Convergence of FedAvg on "
                                                  "Non-IID Data, ICLR 2020 (arXiv:1907.02189)")

CLAIMS = [
    claim("FEDAVG.T1", "Full participation, eta_t = 2/(mu (gamma + t)), gamma = max{8 kappa, E}: E[F(w_T)] - F* <= "
          "kappa/(gamma + T - 1) (2B/mu + (mu gamma/2) E||w_1 - w*||^2), B = sum_k p_k^2 sigma_k^2 + 6 L Gamma "
          "+ 8 (E - 1)^2 G^2.", bound=bounds.theorem1),
    claim("FEDAVG.T2", "Scheme I (K devices drawn with replacement with probabilities p_k, plain average): Theorem 1's "
          "bound with B + C, C = (4/K) E^2 G^2.", bound=bounds.theorem2),
    claim("FEDAVG.T3", "Scheme II (K of N devices drawn without replacement, weights N/K p_k, balanced data): "
          "Theorem 1's bound with B + C, C = ((N - K)/(N - 1)) (4/K) E^2 G^2.", bound=bounds.theorem3),
    claim("FEDAVG.T3U", "Scheme II on unbalanced data: Theorem 3 with L, mu, sigma_k, G replaced by nu L, varsigma mu, "
          "sqrt(nu) sigma_k, sqrt(nu) G (nu = N max_k p_k, varsigma = N min_k p_k).", bound=bounds.theorem3_unbalanced),
    claim("FEDAVG.T4", "With E > 1 and a constant step eta, FedAvg's limit is Omega((E - 1) eta) away from w* (a rate: "
          "the problem's constants are hidden).", bound=bounds.theorem4_rate),
]
