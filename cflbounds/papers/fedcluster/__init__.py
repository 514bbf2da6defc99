"""FedCluster (cluster-cycling federated learning): its claims and how each is measured and judged:
the assumptions, heterogeneity and Theorem 1 (:mod:`.checks`), the speed-up and the trade-off
in M (:mod:`.rates`), on the run sets of :mod:`.runs`.

``CLAIMS`` joins the other papers' in :mod:`cflbounds.papers`, which cflbounds' own
``pyproject.toml`` registers in the entry-point group ``cflbounds.claims``, exactly as a plugin
package registers its claims.
"""
from functools import partial

from cflbounds.bounds import fedcluster as bounds
from cflbounds.claims import Claim
from . import checks, rates
from .domain import H_DOMAIN, T1_DOMAIN

claim = partial(Claim, paper="FedCluster", reference="FedCluster: cluster-cycling federated learning (fedcluster.txt)")

CLAIMS = [
    claim("FC.A2", "f(.;xi) L-smooth and bounded below; local gradient variance <= s_k^2; E||grad f||^2 <= G^2.",
          checks.check_a2,
          no_domain="Assumption 2 is a hypothesis, not a bound: on the toolkit's problems its constants are exact by "
                    "construction (per-sample L, s_k^2 = tau^2 ||A_k||_F^2, G^2 the max along the iterates), and "
                    "FC.T1's domain evaluates them at every instance it searches."),
    claim("FC.H", "H_cluster = sup_w sum_K q_K ||grad f(w; D^(S_K)) - grad f(w)||^2 <= H_device.",
          checks.check_h, domain=H_DOMAIN),
    claim("FC.T1", "eta = (TME)^(-1/2), ME <= C/(8LG^2), T >= L^2 max(1, 16/(EM)): (1/T) sum E||grad f(W_jM)||^2 "
          "<= 2C/sqrt(TME).", checks.check_t1, bounds.theorem1, domain=T1_DOMAIN),
    claim("FC.SPEEDUP", "O(1/sqrt(TME)) vs FedAvg's O(1/sqrt(TE)): a sqrt(M) speed-up in rounds.",
          rates.check_speedup, bounds.speedup,
          no_domain="An O(.) comparison of two rates without explicit constants (O(1/sqrt(TME)) vs O(1/sqrt(TE))), "
                    "checked as a rate over a sweep of M, not at one instance; its explicit part, the bound "
                    "2C/sqrt(TME), is searched through FC.T1."),
    claim("FC.TRADEOFF", "Larger M raises H_cluster and the variance term; C/sqrt(M) has a best M.",
          rates.check_tradeoff, bounds.tradeoff,
          no_domain="A qualitative trade-off (C/sqrt(M) has a best M; lower cluster-level heterogeneity converges "
                    "faster) that compares runs across M and partitions: no measured <= bound at one instance to "
                    "maximise."),
]
