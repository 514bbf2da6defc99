"""Local GD on heterogeneous data (Khaled, Mishchenko, Richtarik, 2019): its theorem and corollary,
measured on heterogeneous quadratics with exact constants (:mod:`.checks`, :mod:`.domain`), and
the corollary as a consequence of the theorem (LOCALGD.C1-FROM-T1, on formulas). ``CLAIMS`` joins
the other papers' in :mod:`cflbounds.papers`.

Reading: CATALOGUE.md's statements ([V]; the primary text was not reachable here, and the paper
has no official code, so there is no text/code disagreement to name). ``x_bar_T`` averages
``x_hat_0 .. x_hat_(T-1)``, the clients' mean iterates; the synchronisation gap is every H steps.
"""
from functools import partial

from cflbounds.bounds import localgd as bounds
from cflbounds.claims import Claim
from . import checks
from .domain import C1_DOMAIN, FOLLOWS_DOMAIN, T1_DOMAIN

claim = partial(Claim, paper="LocalGD", reference="Khaled, Mishchenko, Richtarik, First Analysis of Local GD on "
                                                   "Heterogeneous Data, 2019 (arXiv:1909.04715)")

CLAIMS = [
    claim("LOCALGD.T1", "gamma <= 1/(4LH): f(x_bar_T) - f* <= 2 ||x_0 - x*||^2/(gamma T) + 24 gamma^2 sigma^2 H^2 L, "
          "sigma^2 = (1/M) sum_m ||grad f_m(x*)||^2.", checks.check_t1, bounds.theorem1, domain=T1_DOMAIN),
    claim("LOCALGD.C1", "H <= sqrt(T/M), gamma = sqrt(M)/(4 L sqrt(T)): f(x_bar_T) - f* <= 8 L ||x_0 - x*||^2/sqrt(MT) "
          "+ 3 M sigma^2 H^2/(2 L T).", checks.check_c1, bounds.corollary1, domain=C1_DOMAIN),
    claim("LOCALGD.C1-FROM-T1", "Corollary 1 follows from Theorem 1 over its range: for every H <= sqrt(T/M), "
          "Theorem 1's bound at gamma = sqrt(M)/(4 L sqrt(T)) is at most Corollary 1's bound (and that step is within "
          "gamma <= 1/(4LH)).", bound=bounds.corollary1_follows, domain=FOLLOWS_DOMAIN),
]
