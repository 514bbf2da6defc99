"""CFL-MGD (clustered FL with momentum gradient descent): its claims and how each is measured and
judged: the assumptions, one-step lemma, theorem and model averaging (:mod:`.checks`), the
misassignment lemma (:mod:`.misassignment`), the speed comparison (:mod:`.speed`), on the
problem families of :mod:`.problems`, with the tight factors of :mod:`.tight` and A38 in :mod:`.a38`.

``CLAIMS`` joins the other papers' in :mod:`cflbounds.papers`, which cflbounds' own
``pyproject.toml`` registers in the entry-point group ``cflbounds.claims``, exactly as a plugin
package registers its claims.
"""
from functools import partial

from cflbounds.bounds import cfl_mgd as bounds
from cflbounds.claims import Claim
from . import checks, misassignment, speed
from .domain import l1_domain, l2_domain

claim = partial(Claim, paper="CFL-MGD", reference="CFL-MGD: clustered FL with momentum gradient descent (cfl_mgd.txt)")

T1_NO_DOMAIN = ("Its condition (A38) rho0 <= (l/32)(mu/L)^(3/2) Delta holds on no admissible problem as printed "
                "(rho0 >= c4 l = l/4 needs Delta > 8 (L/mu)^(3/2) >= 8, while max||chi*|| <= 1 allows Delta <= 2: "
                "`cflbounds verify MGD.T1` finds it unsatisfiable), so the domain is empty; its rate O~(1/sqrt(mn') + "
                "1/n' + 1/(n' sqrt m)) has unspecified constants and is judged as a rate.")
MA_NO_DOMAIN = ("Eq. (20) is at least eps_0 on every instance (its term M^(T+3)/(M-1) eps_0 alone exceeds eps_0, as "
                "M > 1), so nothing can exceed it; the O~(1/T) rate has unspecified constants (judged as a rate); the "
                "recursion (16) on measured errors is checked step by step by `cflbounds verify` and has no domain "
                "here yet.")

CLAIMS = [
    claim("MGD.A1-5", "L-smooth, mu-strongly convex, Var loss <= sigma^2, Var grad <= v^2, init <= (1/4) sqrt(mu/L) "
          "Delta, n' >~ P sigma^2/(mu^2 Delta^4), max||chi*|| <~ 1, unbiased gradients.",
          checks.check_a15, bounds.assumptions,
          no_domain="Assumptions 1-5 are hypotheses, not a bound: nothing to exceed (the domains of MGD.L1 and MGD.L2 "
                    "check them as constraint rows)."),
    claim("MGD.L1", "Misclassification P(i assigned to p') <= c1 sigma^2/(Delta^4 mu^2 n') with c1 = 128 from the "
          "proof; union bound over clusters.", misassignment.check_l1, bounds.lemma1, domain=l1_domain()),
    claim("MGD.L2", "One step: ||chi_p^+ - chi*_p|| <= (1 - l mu/(8L)) ||chi_p - chi*_p|| + rho0 w.p. >= 1 - P lambda5.",
          checks.check_l2, bounds.lemma2, domain=l2_domain()),
    claim("MGD.T1", "eta = 1/L: after T = (8L/(l mu)) log(Delta/(2 rho)) iterations the error is <= rho = "
          "(16L/(mu l)) rho0, requiring rho0 <= (l/32)(mu/L)^(3/2) Delta.", checks.check_t1, bounds.theorem1,
          no_domain=T1_NO_DOMAIN),
    claim("MGD.MA", "Model-averaging recursion eps_{t+1} <= (1 + eta L/|C_p|) eps_t + beta(1+beta) eps_{t-1}^2 "
          "eps_{t-2}^2 and its final bound; claimed rate O~(1/T).", checks.check_ma, bounds.model_averaging_bound,
          no_domain=MA_NO_DOMAIN),
    claim("MGD.SPEED", "Momentum reaches a given loss in fewer rounds than IFCA at the same step-size budget.",
          speed.check_speed,
          no_domain="A comparison of two algorithms' rounds to a loss (and the paper's CIFAR-10/MNIST accuracies), "
                    "not a bound one instance can exceed."),
]
