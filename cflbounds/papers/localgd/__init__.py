"""Local GD on heterogeneous data (Khaled, Mishchenko, Richtarik, 2019): its theorem and corollary,
each with its formula (:mod:`cflbounds.bounds.localgd`); their checks and domains are still to
come. ``CLAIMS`` joins the other papers' in :mod:`cflbounds.papers`.
"""
from functools import partial

from cflbounds.bounds import localgd as bounds
from cflbounds.claims import Claim

claim = partial(Claim, paper="LocalGD", reference="Khaled, Mishchenko, Richtarik, First Analysis of Local GD on "
                                                   "Heterogeneous Data, 2019 (arXiv:1909.04715)")

CLAIMS = [
    claim("LOCALGD.T1", "gamma <= 1/(4LH): f(x_bar_T) - f* <= 2 ||x_0 - x*||^2/(gamma T) + 24 gamma^2 sigma^2 H^2 L, "
          "sigma^2 = (1/M) sum_m ||grad f_m(x*)||^2.", bound=bounds.theorem1),
    claim("LOCALGD.C1", "H <= sqrt(T/M), gamma = sqrt(M)/(4 L sqrt(T)): f(x_bar_T) - f* <= 8 L ||x_0 - x*||^2/sqrt(MT) "
          "+ 3 M sigma^2 H^2/(2 L T).", bound=bounds.corollary1),
]
