"""Clustered federated learning by cosine splits (Sattler, Mueller, Samek, IEEE TNNLS 2021): its
separation theorem (both inequalities), its corollary on the paper's argmin bipartition and on
the authors' code's complete linkage, the split test's guarantee, each measured on quadratic
true risks with exact theta*, gamma_i and alpha (and on rotated digits with gamma_i estimated),
and the corollary as a consequence of the theorem on formulas (:mod:`.checks`, :mod:`.domain`).
``CLAIMS`` joins the other papers' in :mod:`cflbounds.papers`.

Readings (docs/papers.md): the statements are CATALOGUE.md's ([S]; the primary text was not
reachable here, :mod:`cflbounds.bounds.cfl`). Theorem 1's H_(i,j) is read per pair (the cross
ceiling at the smallest H of two distributions' clients, the intra floor at the smallest H of
one distribution's); theta* is the population mixture's stationary point (the true risks'
gradients sum to 0 there, as the separation argument needs); the split test is the paper's
(the code has no gamma_max test).
"""
from functools import partial

from cflbounds.bounds import cfl as bounds
from cflbounds.claims import Claim
from . import checks
from .domain import C1_CODE_DOMAIN, C1_DOMAIN, FOLLOWS_DOMAIN, SPLIT_DOMAIN, T1_DOMAIN

claim = partial(Claim, paper="CFL", reference="Sattler, Mueller, Samek, Clustered Federated Learning: Model-Agnostic "
                                               "Distributed Multitask Optimization Under Privacy Constraints, IEEE "
                                               "TNNLS 2021 (arXiv:1910.01991)")

CLAIMS = [
    claim("CFL.T1", "Some bipartition has alpha_cross^max <= cos(pi/(k-1)) H_ij + sin(pi/(k-1)) sqrt(1 - H_ij^2) if "
          "H_ij >= cos(pi/(k-1)) (else 1), and alpha_intra^min >= min_(I(i)=I(j)) H_ij, H_ij = -gamma_i gamma_j "
          "+ sqrt(1 - gamma_i^2) sqrt(1 - gamma_j^2); for k = 2, alpha_cross^max <= max(-H_ij).",
          checks.check_t1, bounds.theorem1, domain=T1_DOMAIN),
    claim("CFL.C1", "If alpha_intra^min > alpha_cross^max, the bipartition minimising the largest cross similarity "
          "splits no distribution.", checks.check_c1, bounds.corollary1, domain=C1_DOMAIN),
    claim("CFL.C1-CODE", "Corollary 1 on the authors' code's bipartition: if alpha_intra^min > "
          "alpha_cross^max, complete linkage on -alpha into two clusters splits no distribution.",
          checks.check_c1_code, bounds.corollary1, domain=C1_CODE_DOMAIN),
    claim("CFL.SPLIT", "The split test's guarantee: if every gamma_i <= gamma_max and sqrt((1 - alpha_cross^max)/2) > "
          "gamma_max, the argmin bipartition splits no distribution.", checks.check_split, bounds.split_criterion,
          domain=SPLIT_DOMAIN),
    claim("CFL.C1-FROM-T1", "Corollary 1 follows from Theorem 1 over its range: for every k and gamma_max < "
          "sin(pi/(4(k-1))), Theorem 1's cross ceiling at H = 1 - 2 gamma_max^2 is below its intra floor "
          "1 - 2 gamma_max^2 (so alpha_intra^min > alpha_cross^max).", checks.check_c1_follows, bounds.corollary1,
          domain=FOLLOWS_DOMAIN),
]
