"""DSC (dual-segment clustering for wireless hierarchical FL): its claims and how each is measured
and judged: the assumptions, Theorem 1 and eq. (14) (:mod:`.checks`, on the experiment of
:mod:`.experiment`) and the accuracy comparison (:mod:`.accuracy`).

``CLAIMS`` joins the other papers' in :mod:`cflbounds.papers`, which cflbounds' own
``pyproject.toml`` registers in the entry-point group ``cflbounds.claims``, exactly as a plugin
package registers its claims.
"""
from functools import partial

from cflbounds.bounds import dsc as bounds
from cflbounds.claims import Claim
from . import accuracy, checks
from .domain import E14_DOMAIN, T1_DOMAIN

claim = partial(Claim, paper="DSC", reference="DSC: dual-segment clustering for wireless hierarchical FL (dsc.txt)")

CLAIMS = [
    claim("DSC.A1-4", "L-smooth, mu-strongly convex, C^2, delta-local dissimilarity E||grad F_k||^2 <= delta^2 "
          "||grad F||^2.", checks.check_a14, bounds.assumptions,
          no_domain="assumptions, not a bound: A1-A3 hold by construction on the quadratic problems and A4 holds "
                    "exactly when every client shares the optimum, so there is no measured side to maximise; they "
                    "enter the domains of DSC.T1 and DSC.E14 as those claims' admissibility rows"),
    claim("DSC.T1", "E[F(w^T) - F*] <= A^T E[F(w^0) - F*] + (L lambda^2/2)(sum G_l^2 s_l^2 + sum sum G_k^2 s_k^2)"
          "(1 - A^T)/(1 - A).", checks.check_t1, bounds.theorem1, domain=T1_DOMAIN),
    claim("DSC.E14", "FL surely converges when A < 1, i.e. lambda < 2/(L d_inter^2 sum G_l^2 (sum G_k^2) d_intra^2) "
          "(a sufficient condition; A >= 1 with convergence is reported, not counted against it).",
          checks.check_e14, bounds.equation14, domain=E14_DOMAIN),
    claim("DSC.ACC", "DSC beats FedAvg under a noisy channel; its data stage alone beats FedAvg in an ideal channel.",
          accuracy.check_acc,
          no_domain="a comparison of two methods' accuracies on real data sets (MNIST, Fashion-MNIST with a CNN; here "
                    "digits), not a bound: there is no stated family of problems to generate from parameters and no "
                    "measured-against-bound quantity to maximise"),
]
