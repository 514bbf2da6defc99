"""LCFL (loss-discrepancy clustered federated learning): its claims and how each is measured and
judged: eq. (8) and (9) (:mod:`.checks`), Theorem 1 and eq. (4) on exact populations
(:mod:`.discrepancy`, Rademacher complexities in :mod:`.rademacher`), and the accuracy orderings
on rotated digits (:mod:`.accuracy`); the admissible domains that ``cflbounds falsify`` searches
for E4, T1 and E8 (:mod:`.domain`).

``CLAIMS`` joins the other papers' in :mod:`cflbounds.papers`, which cflbounds' own
``pyproject.toml`` registers in the entry-point group ``cflbounds.claims``, exactly as a plugin
package registers its claims.
"""
from functools import partial

from cflbounds.bounds import lcfl as bounds
from cflbounds.claims import Claim
from . import checks, domain

claim = partial(Claim, paper="LCFL", reference="LCFL: loss-discrepancy clustered federated learning (lcfl.txt)")

CLAIMS = [
    claim("LCFL.E4", "Population d^(i,j) <= 2 disc_W(D_i, D_j).", checks.check_e4, bounds.discrepancy_bound,
          domain=domain.e4_domain()),
    claim("LCFL.T1", "W.p. >= (1 - delta)^4: |d(i,j) - d^(i,j)| <= 2 sqrt(log(2/delta)/(2 m_i)) + 2 sqrt(log(2/delta)/"
          "(2 m_j)) + R_{m_i}(W) + R_{m_j}(W).", checks.check_t1, bounds.theorem1, domain=domain.t1_domain()),
    claim("LCFL.E8", "Linear model: L(w^) - L(w*) = (S^_Xy - S_Xy)^T S_XX^-1 (S^_Xy - S_Xy), sandwiched by the "
          "extreme eigenvalues.", checks.check_e8, bounds.excess_loss_sandwich, domain=domain.e8_domain()),
    claim("LCFL.E9", "Softmax shift invariance: DiffNorm can split clients with identical data; the loss metric "
          "cannot.", checks.check_e9,
          no_domain="a demonstration by construction (a common shift of the class weights that DiffNorm sees and the "
                    "loss metric cannot), not a bound: there is no measured quantity against a bound to maximise"),
    claim("LCFL.ACC", "Loss-metric clustering recovers clusters at least as well as DiffNorm and GradCos; LCFL >= IFCA "
          ">= FedAvg >= Local in accuracy.", checks.check_acc,
          no_domain="orderings of clustering metrics and algorithms by accuracy on one data set (Tables II-III), not a "
                    "bound with a formula evaluated on one instance: there is no admissible domain of problems to "
                    "search, only the experiment's configuration"),
]
