"""Clustered federated learning by cosine splits (Sattler, Mueller, Samek, IEEE TNNLS 2021): its
separation theorem and corollary, each with its formula (:mod:`cflbounds.bounds.cfl`); their
checks and domains are still to come. ``CLAIMS`` joins the other papers' in
:mod:`cflbounds.papers`.
"""
from functools import partial

from cflbounds.bounds import cfl as bounds
from cflbounds.claims import Claim

claim = partial(Claim, paper="CFL", reference="Sattler, Mueller, Samek, Clustered Federated Learning: Model-Agnostic "
                                               "Distributed Multitask Optimization Under Privacy Constraints, IEEE "
                                               "TNNLS 2021 (arXiv:1910.01991)")

CLAIMS = [
    claim("CFL.T1", "Some bipartition has alpha_cross^max <= cos(pi/(k-1)) H_ij + sin(pi/(k-1)) sqrt(1 - H_ij^2) if "
          "H_ij >= cos(pi/(k-1)) (else 1), and alpha_intra^min >= min_(I(i)=I(j)) H_ij, H_ij = -gamma_i gamma_j "
          "+ sqrt(1 - gamma_i^2) sqrt(1 - gamma_j^2); for k = 2, alpha_cross^max <= max(-H_ij).",
          bound=bounds.theorem1),
    claim("CFL.C1", "If alpha_intra^min > alpha_cross^max, the bipartition minimising the largest cross similarity "
          "splits no distribution.", bound=bounds.corollary1),
]
